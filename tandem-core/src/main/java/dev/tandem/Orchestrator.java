package dev.tandem;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;

/**
 * The per-request builder a {@link Program} talks to: it allocates device memory, submits
 * tasks and ends steps. Dependencies between tasks are inferred from the regions they access.
 *
 * <p>Single-threaded: only the request's program thread may call it. Every call throws
 * {@link RequestTerminatedException} once the request has ended (cancelled, failed, past its
 * deadline or its token limit), which unwinds the program.
 *
 * <p>One rule for errors: every exception a call throws for a bad argument or a lack of
 * memory ({@link InvalidTaskException}, {@link DeviceOutOfMemoryException},
 * {@link IllegalArgumentException}) has failed the request already — catching it does not
 * undo that; the next call throws {@link RequestTerminatedException}.
 */
public interface Orchestrator {

    /** Id of the request being built. */
    long requestId();

    /** Index of the step being built: the number of steps ended so far. */
    long step();

    /** Allocates request-scoped device memory, freed when the request ends. Zero-filled. */
    Buffer allocate(long bytes);

    /**
     * Allocates {@code count} elements of {@code element} as request-scoped memory.
     *
     * @throws IllegalArgumentException for a negative count or a size that overflows a long
     */
    default Buffer allocate(MemoryLayout element, long count) {
        if (count < 0) {
            throw new IllegalArgumentException("allocate: count must be >= 0, was " + count);
        }
        return allocate(Math.multiplyExact(element.byteSize(), count));
    }

    /**
     * Allocates step-scoped scratch memory, usable by the current step only. Its bytes are
     * reused by later steps once this step is done; contents are unspecified.
     */
    Buffer allocateStep(long bytes);

    /** Submits one task of {@code kernel} that accesses the given regions. */
    default void submit(Kernel kernel, Access... accesses) {
        submit(kernel, NO_SCALARS, accesses);
    }

    /**
     * Submits one task of {@code kernel} with scalar arguments that accesses the given regions.
     * Parks (like {@link #endStep}) while the step being built has {@code maxTasksInFlight}
     * tasks submitted and not yet finished. Both arrays are copied: the caller may fill and
     * reuse one array for every task.
     */
    void submit(Kernel kernel, long[] scalars, Access... accesses);

    /** Copies host bytes into a region, in order with the tasks around it (a write task). */
    void upload(Region target, MemorySegment data);

    /**
     * Ends the current step: its token is the bytes of {@code tokenRegion} once every task of
     * the step is done. Publishes what is unpublished, then waits while the request is far
     * enough ahead of the device ({@code runAhead}) or of its caller ({@code streamBuffer}).
     */
    void endStep(Region tokenRegion);

    /** Scalar arguments for {@link #submit(Kernel, long[], Access...)}. */
    static long[] scalars(long... values) {
        return values;
    }

    /** Scalar arguments that are doubles, stored with {@link Double#doubleToRawLongBits}. */
    static long[] doubles(double... values) {
        long[] bits = new long[values.length];
        for (int i = 0; i < values.length; i++) {
            bits[i] = Double.doubleToRawLongBits(values[i]);
        }
        return bits;
    }

    long[] NO_SCALARS = new long[0];
}
