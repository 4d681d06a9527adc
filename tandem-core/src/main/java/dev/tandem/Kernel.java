package dev.tandem;

import java.util.Objects;
import java.util.function.ToIntFunction;

/**
 * A named function that runs one task on one core, reading and writing the task's regions.
 *
 * <p>A kernel may throw: the exception fails the task's request only, and the core goes on.
 */
public interface Kernel {

    /** The name shown in errors and traces. */
    String name();

    void run(TaskContext context) throws Exception;

    /** The most parts a task can split into ({@link #parts}). */
    int MAX_PARTS = 0xffff;

    /**
     * How many parts the task splits into, 1 to {@link #MAX_PARTS}; asked once per task, with its
     * context bound, before any part runs. The device then calls {@link #run} once per part, with
     * {@link TaskContext#part()} saying which, and may run different parts at once on different
     * units (cores): a task that is one phase of a step (a matmul's rows, say) then keeps every
     * unit busy and finishes when the slowest unit's last part does, not its last whole task.
     * The task finishes, and its successors may run, once every part has returned. Parts of one
     * task must write disjoint bytes of its regions. A part that throws fails the task's request;
     * parts not yet started are then skipped, as every task of an ended request is.
     *
     * <p>The default is 1: the task runs whole, once, on one unit.
     */
    default int parts(TaskContext context) {
        return 1;
    }

    /** The body of a kernel made with {@link #of} or {@link #ofParts}. */
    @FunctionalInterface
    interface Body {
        void run(TaskContext context) throws Exception;
    }

    /**
     * A kernel whose tasks split into {@code parts.applyAsInt(context)} parts (see
     * {@link #parts}); {@code body} runs once per part and reads its index from
     * {@link TaskContext#part()}.
     */
    static Kernel ofParts(String name, ToIntFunction<TaskContext> parts, Body body) {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(parts, "parts");
        Objects.requireNonNull(body, "body");
        return new Kernel() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public void run(TaskContext context) throws Exception {
                body.run(context);
            }

            @Override
            public int parts(TaskContext context) {
                return parts.applyAsInt(context);
            }

            @Override
            public String toString() {
                return name;
            }
        };
    }

    /** A kernel from a name and a body: a task of one part. */
    static Kernel of(String name, Body body) {
        return ofParts(name, context -> 1, body);
    }
}
