package dev.tandem;

import java.lang.foreign.MemorySegment;

/**
 * What a kernel sees while it runs one task. Valid only during {@link Kernel#run}; a core
 * reuses one context for all the tasks it runs.
 */
public interface TaskContext {

    /** Number of regions the task accesses, in submission order. */
    int regionCount();

    /**
     * The memory of the task's i-th region. READ regions are read-only segments, so a kernel
     * that writes its input fails loudly instead of corrupting it.
     */
    MemorySegment region(int i);

    /** Number of scalar arguments. */
    int scalarCount();

    /** The i-th scalar argument. */
    long scalar(int i);

    /** The i-th scalar argument read as a double (stored with {@link Double#doubleToRawLongBits}). */
    default double scalarDouble(int i) {
        return Double.longBitsToDouble(scalar(i));
    }

    /**
     * Which part of its task this call runs, in {@code [0, kernel.parts(context))}: 0 for a task
     * of one part (see {@link Kernel#parts}).
     */
    default int part() {
        return 0;
    }

    /** Index of the core running the task. */
    int core();

    /** Id of the request the task belongs to. */
    long requestId();

    /** Index of the task's step within its request. */
    long step();

    /**
     * Whether the task's request has ended (cancelled, failed, past its deadline or its token
     * limit) while the task runs. A long kernel may poll it and return early: its results are
     * never delivered then, and the request's {@code completion()} waits for it to return.
     * A volatile read; false for a context outside the runtime.
     */
    default boolean cancelled() {
        return false;
    }
}
