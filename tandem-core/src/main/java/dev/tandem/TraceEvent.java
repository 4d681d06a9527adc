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
 * @param task      the task's index within the request; for a step build, its first task
 *                  (its tasks are {@code task .. task + count - 1}); else -1
 * @param name      the kernel name for tasks, else null
 * @param count     kind-specific: 1 for a skipped task, tasks built or published, the token's
 *                  sequence number (1, 2, ...) when delivered or taken, status ordinal of an
 *                  ended request
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
        /** Span on the host: one step was built; count = its tasks, task = its first task. */
        STEP_BUILD,
        /** Instant on the host: tasks made visible to the device; count = how many. */
        PUBLISH,
        /** Instant: every task of a step is done. */
        STEP_DONE,
        /** Instant: a token was handed to its stream; count = how many so far, this one included. */
        TOKEN_DELIVERED,
        /** Instant: the caller took the token of {@code step}; count = how many so far, this one included. */
        TOKEN_TAKEN,
        /** Span: a request from submission until its program started. */
        REQUEST_STARTED,
        /** Span: a request from submission to its end; count = {@link Status} ordinal. */
        REQUEST
    }

    public long duration() {
        return end - start;
    }
}
