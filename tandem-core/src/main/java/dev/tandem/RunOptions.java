package dev.tandem;

/**
 * How one request is pipelined. Immutable; each {@code withX} returns a copy.
 *
 * @param runAhead     built-but-unfinished steps the program may have (1 = no overlap)
 * @param publishBatch tasks submitted between publications ({@link Integer#MAX_VALUE} = whole
 *                     steps only); every {@code endStep} publishes too
 * @param streamBuffer tokens delivered but not taken, at most: the program waits in {@code endStep}
 *                     while its built steps not taken by its caller reach it
 * @param maxTokens    tokens after which the request completes and later steps are skipped
 * @param maxTasksInFlight tasks of the step being built that may be submitted and not yet
 *                     finished; at the bound {@code submit} parks (like {@code endStep} does)
 *                     until a task finishes or the request ends, so a step that never ends
 *                     cannot build an unbounded backlog
 */
public record RunOptions(int runAhead, int publishBatch, int streamBuffer, long maxTokens, int maxTasksInFlight) {

    public static final int DEFAULT_RUN_AHEAD = 2;
    public static final int DEFAULT_PUBLISH_BATCH = 64;
    public static final int DEFAULT_STREAM_BUFFER = 64;
    /** Far above a decode step (a few hundred tasks) or a long prompt's prefill step. */
    public static final int DEFAULT_MAX_TASKS_IN_FLIGHT = 65_536;

    public RunOptions {
        requirePositive("runAhead", runAhead);
        requirePositive("publishBatch", publishBatch);
        requirePositive("streamBuffer", streamBuffer);
        requirePositive("maxTasksInFlight", maxTasksInFlight);
        if (maxTokens <= 0) {
            throw new IllegalArgumentException("maxTokens must be > 0, was " + maxTokens);
        }
    }

    public static RunOptions defaults() {
        return new RunOptions(DEFAULT_RUN_AHEAD, DEFAULT_PUBLISH_BATCH, DEFAULT_STREAM_BUFFER, Long.MAX_VALUE,
                DEFAULT_MAX_TASKS_IN_FLIGHT);
    }

    /** The strictly serial baseline: build a whole step, then run it, then build the next. */
    public static RunOptions serial() {
        return defaults().withRunAhead(1).withPublishBatch(Integer.MAX_VALUE);
    }

    public RunOptions withRunAhead(int value) {
        return new RunOptions(value, publishBatch, streamBuffer, maxTokens, maxTasksInFlight);
    }

    public RunOptions withPublishBatch(int value) {
        return new RunOptions(runAhead, value, streamBuffer, maxTokens, maxTasksInFlight);
    }

    public RunOptions withStreamBuffer(int value) {
        return new RunOptions(runAhead, publishBatch, value, maxTokens, maxTasksInFlight);
    }

    public RunOptions withMaxTokens(long value) {
        return new RunOptions(runAhead, publishBatch, streamBuffer, value, maxTasksInFlight);
    }

    public RunOptions withMaxTasksInFlight(int value) {
        return new RunOptions(runAhead, publishBatch, streamBuffer, maxTokens, value);
    }

    private static void requirePositive(String name, int value) {
        if (value <= 0) {
            throw new IllegalArgumentException(name + " must be > 0, was " + value);
        }
    }
}
