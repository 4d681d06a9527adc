package dev.tandem;

import java.util.Objects;

/**
 * Bounds and pipelining of a {@link Session}. Immutable; each method returns a copy.
 *
 * @param maxActive        requests building or running at once
 * @param maxQueued        admitted requests waiting for a slot or memory
 * @param memoryPerRequest device bytes reserved for each request while it runs; its
 *                         allocations must fit in them
 * @param policy           how its requests' ready tasks are ordered on the shared cores
 * @param runAhead         built-but-unfinished steps a request may have
 * @param publishBatch     tasks before a step's first publication
 * @param streamBuffer     tokens delivered but not taken before a request waits for its caller
 * @param maxTasksInFlight tasks of a request's step being built that may be submitted and not
 *                         yet finished before its {@code submit} parks
 * @param maxPublishBatch  how far later publications of a step grow ({@link RunOptions#maxPublishBatch})
 */
public record SessionConfig(
        int maxActive, int maxQueued, long memoryPerRequest, SchedulingPolicy policy, int runAhead, int publishBatch,
        int streamBuffer, int maxTasksInFlight, int maxPublishBatch) {

    public static final long DEFAULT_MEMORY_PER_REQUEST = 64L << 20;

    public SessionConfig {
        positive("maxActive", maxActive);
        if (maxQueued < 0) {
            throw new IllegalArgumentException("maxQueued must be >= 0, was " + maxQueued);
        }
        if (memoryPerRequest < 0) {
            throw new IllegalArgumentException("memoryPerRequest must be >= 0, was " + memoryPerRequest);
        }
        Objects.requireNonNull(policy, "policy");
        positive("runAhead", runAhead);
        positive("publishBatch", publishBatch);
        positive("streamBuffer", streamBuffer);
        positive("maxTasksInFlight", maxTasksInFlight);
        RunOptions.requirePublishBatches(publishBatch, maxPublishBatch);
    }

    public static SessionConfig defaults() {
        return new SessionConfig(8, 64, DEFAULT_MEMORY_PER_REQUEST, SchedulingPolicy.FIRST_TOKEN_FIRST,
                RunOptions.DEFAULT_RUN_AHEAD, RunOptions.DEFAULT_PUBLISH_BATCH, RunOptions.DEFAULT_STREAM_BUFFER,
                RunOptions.DEFAULT_MAX_TASKS_IN_FLIGHT, RunOptions.DEFAULT_MAX_PUBLISH_BATCH);
    }

    public SessionConfig maxActive(int value) {
        return new SessionConfig(value, maxQueued, memoryPerRequest, policy, runAhead, publishBatch, streamBuffer, maxTasksInFlight,
                maxPublishBatch);
    }

    public SessionConfig maxQueued(int value) {
        return new SessionConfig(maxActive, value, memoryPerRequest, policy, runAhead, publishBatch, streamBuffer, maxTasksInFlight,
                maxPublishBatch);
    }

    public SessionConfig memoryPerRequest(long value) {
        return new SessionConfig(maxActive, maxQueued, value, policy, runAhead, publishBatch, streamBuffer, maxTasksInFlight,
                maxPublishBatch);
    }

    public SessionConfig policy(SchedulingPolicy value) {
        return new SessionConfig(maxActive, maxQueued, memoryPerRequest, value, runAhead, publishBatch, streamBuffer, maxTasksInFlight,
                maxPublishBatch);
    }

    public SessionConfig runAhead(int value) {
        return new SessionConfig(maxActive, maxQueued, memoryPerRequest, policy, value, publishBatch, streamBuffer, maxTasksInFlight,
                maxPublishBatch);
    }

    /** A fixed batch: every publication after {@code value} tasks (sets {@code maxPublishBatch} too). */
    public SessionConfig publishBatch(int value) {
        return new SessionConfig(maxActive, maxQueued, memoryPerRequest, policy, runAhead, value, streamBuffer, maxTasksInFlight,
                value);
    }

    /** Later publications of a step grow from {@code publishBatch} up to {@code value} tasks. */
    public SessionConfig maxPublishBatch(int value) {
        return new SessionConfig(maxActive, maxQueued, memoryPerRequest, policy, runAhead, publishBatch, streamBuffer,
                maxTasksInFlight, value);
    }

    public SessionConfig streamBuffer(int value) {
        return new SessionConfig(maxActive, maxQueued, memoryPerRequest, policy, runAhead, publishBatch, value, maxTasksInFlight,
                maxPublishBatch);
    }

    public SessionConfig maxTasksInFlight(int value) {
        return new SessionConfig(maxActive, maxQueued, memoryPerRequest, policy, runAhead, publishBatch, streamBuffer,
                value, maxPublishBatch);
    }

    private static void positive(String name, int value) {
        if (value <= 0) {
            throw new IllegalArgumentException(name + " must be > 0, was " + value);
        }
    }
}
