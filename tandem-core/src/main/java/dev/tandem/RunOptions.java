package dev.tandem;

/**
 * How one request is pipelined. Immutable; each {@code withX} returns a copy.
 *
 * @param runAhead     built-but-unfinished steps the program may have (1 = no overlap)
 * @param publishBatch tasks submitted between publications ({@link Integer#MAX_VALUE} = whole
 *                     steps only); every {@code endStep} publishes too
 * @param streamBuffer tokens delivered but not taken before the program waits for its caller
 * @param maxTokens    tokens after which the request completes and later steps are skipped
 */
public record RunOptions(int runAhead, int publishBatch, int streamBuffer, long maxTokens) {

    public static final int DEFAULT_RUN_AHEAD = 2;
    public static final int DEFAULT_PUBLISH_BATCH = 64;
    public static final int DEFAULT_STREAM_BUFFER = 64;

    public RunOptions {
        requirePositive("runAhead", runAhead);
        requirePositive("publishBatch", publishBatch);
        requirePositive("streamBuffer", streamBuffer);
        if (maxTokens <= 0) {
            throw new IllegalArgumentException("maxTokens must be > 0, was " + maxTokens);
        }
    }

    public static RunOptions defaults() {
        return new RunOptions(DEFAULT_RUN_AHEAD, DEFAULT_PUBLISH_BATCH, DEFAULT_STREAM_BUFFER, Long.MAX_VALUE);
    }

    /** The strictly serial baseline: build a whole step, then run it, then build the next. */
    public static RunOptions serial() {
        return defaults().withRunAhead(1).withPublishBatch(Integer.MAX_VALUE);
    }

    public RunOptions withRunAhead(int value) {
        return new RunOptions(value, publishBatch, streamBuffer, maxTokens);
    }

    public RunOptions withPublishBatch(int value) {
        return new RunOptions(runAhead, value, streamBuffer, maxTokens);
    }

    public RunOptions withStreamBuffer(int value) {
        return new RunOptions(runAhead, publishBatch, value, maxTokens);
    }

    public RunOptions withMaxTokens(long value) {
        return new RunOptions(runAhead, publishBatch, streamBuffer, value);
    }

    private static void requirePositive(String name, int value) {
        if (value <= 0) {
            throw new IllegalArgumentException(name + " must be > 0, was " + value);
        }
    }
}
