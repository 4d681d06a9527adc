package dev.tandem;

/**
 * How one request is pipelined. Immutable; each {@code withX} returns a copy.
 *
 * @param runAhead     built-but-unfinished steps the program may have (1 = no overlap)
 * @param publishBatch tasks submitted before a step's first publication ({@link Integer#MAX_VALUE}
 *                     = whole steps only); every {@code endStep} publishes too
 * @param streamBuffer tokens delivered but not taken, at most: the program waits in {@code endStep}
 *                     while its built steps not taken by its caller reach it
 * @param maxTokens    tokens after which the request completes and later steps are skipped
 * @param maxTasksInFlight tasks of the step being built that may be submitted and not yet
 *                     finished; at the bound {@code submit} parks (like {@code endStep} does)
 *                     until a task finishes or the request ends, so a step that never ends
 *                     cannot build an unbounded backlog
 * @param maxPublishBatch each later publication of the same step waits for twice as many tasks
 *                     as the one before, up to this many (at least {@code publishBatch}; equal
 *                     to it for a fixed batch). A short step (a decode step is a few hundred
 *                     tasks) is published as early as with a fixed batch; a long one in fewer,
 *                     larger batches, so the cores do not run right behind the program that is
 *                     still wiring to the tasks they finish, which doubled the host's cost per
 *                     task (a chain of 100,000 empty tasks on one core, as in {@code ./tandem
 *                     bench overhead}: the program took 98 ns a task with batches of 64, 62 with
 *                     batches of 4096 and 47 with nothing running)
 */
public record RunOptions(int runAhead, int publishBatch, int streamBuffer, long maxTokens, int maxTasksInFlight,
        int maxPublishBatch) {

    public static final int DEFAULT_RUN_AHEAD = 2;
    public static final int DEFAULT_PUBLISH_BATCH = 64;
    /** Where doubling stops by default: 64 times the default first batch (see {@code maxPublishBatch}). */
    public static final int DEFAULT_MAX_PUBLISH_BATCH = 4096;
    public static final int DEFAULT_STREAM_BUFFER = 64;
    /** Far above a decode step (a few hundred tasks) or a long prompt's prefill step. */
    public static final int DEFAULT_MAX_TASKS_IN_FLIGHT = 65_536;

    public RunOptions {
        requirePositive("runAhead", runAhead);
        requirePositive("publishBatch", publishBatch);
        requirePositive("streamBuffer", streamBuffer);
        requirePositive("maxTasksInFlight", maxTasksInFlight);
        requirePublishBatches(publishBatch, maxPublishBatch);
        if (maxTokens <= 0) {
            throw new IllegalArgumentException("maxTokens must be > 0, was " + maxTokens);
        }
    }

    public static RunOptions defaults() {
        return new RunOptions(DEFAULT_RUN_AHEAD, DEFAULT_PUBLISH_BATCH, DEFAULT_STREAM_BUFFER, Long.MAX_VALUE,
                DEFAULT_MAX_TASKS_IN_FLIGHT, DEFAULT_MAX_PUBLISH_BATCH);
    }

    /** The strictly serial baseline: build a whole step, then run it, then build the next. */
    public static RunOptions serial() {
        return defaults().withRunAhead(1).withPublishBatch(Integer.MAX_VALUE);
    }

    public RunOptions withRunAhead(int value) {
        return new RunOptions(value, publishBatch, streamBuffer, maxTokens, maxTasksInFlight, maxPublishBatch);
    }

    /** A fixed batch: every publication after {@code value} tasks (sets {@code maxPublishBatch} too). */
    public RunOptions withPublishBatch(int value) {
        return new RunOptions(runAhead, value, streamBuffer, maxTokens, maxTasksInFlight, value);
    }

    /** Later publications of a step grow from {@code publishBatch} up to {@code value} tasks. */
    public RunOptions withMaxPublishBatch(int value) {
        return new RunOptions(runAhead, publishBatch, streamBuffer, maxTokens, maxTasksInFlight, value);
    }

    public RunOptions withStreamBuffer(int value) {
        return new RunOptions(runAhead, publishBatch, value, maxTokens, maxTasksInFlight, maxPublishBatch);
    }

    public RunOptions withMaxTokens(long value) {
        return new RunOptions(runAhead, publishBatch, streamBuffer, value, maxTasksInFlight, maxPublishBatch);
    }

    public RunOptions withMaxTasksInFlight(int value) {
        return new RunOptions(runAhead, publishBatch, streamBuffer, maxTokens, value, maxPublishBatch);
    }

    /** The growth bound must admit the first batch; {@link SessionConfig} checks the same. */
    static void requirePublishBatches(int publishBatch, int maxPublishBatch) {
        if (maxPublishBatch < publishBatch) {
            throw new IllegalArgumentException("maxPublishBatch must be >= publishBatch (" + publishBatch + "), was "
                    + maxPublishBatch);
        }
    }

    private static void requirePositive(String name, int value) {
        if (value <= 0) {
            throw new IllegalArgumentException(name + " must be > 0, was " + value);
        }
    }
}
