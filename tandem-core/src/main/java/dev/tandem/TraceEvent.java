package dev.tandem;

/**
 * One recorded event of a traced worker. Spans carry their start and end; instants have
 * {@code end == start}. Times are {@link System#nanoTime()} values.
 *
 * @param kind      what happened
 * @param start     start time (ns)
 * @param end       end time (ns)
 * @param thread    the core index for core events, {@link #HOST} for a request's program
 *                  thread, {@link #OTHER} for callers
 * @param requestId the request, or -1
 * @param step      the step within the request, or -1
 * @param task      the task's index within the request, or -1
 * @param name      the kernel name for tasks, else null
 * @param count     kind-specific: tasks built or published, status ordinal of an ended request
 */
public record TraceEvent(
        Kind kind, long start, long end, int thread, long requestId, long step, long task, String name, long count) {

    /** Thread id of a request's program (host) thread. */
    public static final int HOST = -1;

    /** Thread id of any other thread (callers taking tokens, the worker itself). */
    public static final int OTHER = -2;

    public enum Kind {
        /** Span on a core: one task ran (or was skipped, with count 1). */
        TASK,
        /** Span on the host: one step was built; count = its tasks. */
        STEP_BUILD,
        /** Instant on the host: tasks made visible to the device; count = how many. */
        PUBLISH,
        /** Instant: every task of a step is done. */
        STEP_DONE,
        /** Instant: a token was handed to its stream. */
        TOKEN_DELIVERED,
        /** Instant: the caller took a token from its stream. */
        TOKEN_TAKEN,
        /** Instant: a request's program started. */
        REQUEST_STARTED,
        /** Span: a request from submission to its end; count = {@link Status} ordinal. */
        REQUEST
    }

    public long duration() {
        return end - start;
    }
}
