package dev.tandem;

/**
 * Orders ready tasks of all requests on the shared cores. A policy sorts each task that
 * becomes ready into one of {@link #LANES} lanes; cores take from the lowest non-empty lane,
 * first in first out within a lane. Lanes are lock-free queues, so a policy adds no lock to
 * dispatch. All requests of a worker share the lanes, so requests of sessions with different
 * policies interleave by lane number.
 *
 * <p>A core that finishes a task runs one of the successors it made ready itself, whatever
 * the policy: that keeps chains on one core and their data in its cache.
 */
@FunctionalInterface
public interface SchedulingPolicy {

    /** Number of lanes every policy maps into. */
    int LANES = 8;

    /** The lane FIFO uses for everything, and the other built-in policies for ordinary work. */
    int NORMAL_LANE = 4;

    /** What a policy may look at: the request of the task that became ready. */
    interface RequestView {
        /** True while the request has not delivered a token. */
        boolean awaitingFirstToken();

        /** {@link System#nanoTime()} value of the request's deadline, or {@link Long#MAX_VALUE}. */
        long deadlineNanos();

        /** The request's priority (higher is more urgent); built-in policies ignore it. */
        int priority();
    }

    /**
     * The lane, in {@code [0, LANES)}, of a task of {@code request}'s step {@code step} that
     * became ready. Called on the hot path by any thread: keep it to a few field reads. The ready
     * tasks of one publication batch (one step's) take one call.
     */
    int lane(RequestView request, long step);

    /** One lane: tasks run in the order they became ready. */
    SchedulingPolicy FIFO = new SchedulingPolicy() {
        @Override
        public int lane(RequestView request, long step) {
            return NORMAL_LANE;
        }

        @Override
        public String toString() {
            return "FIFO";
        }
    };

    /**
     * Tasks of requests still waiting for their first token go first, so that running other
     * requests alongside costs a new request little time to first token.
     */
    SchedulingPolicy FIRST_TOKEN_FIRST = new SchedulingPolicy() {
        @Override
        public int lane(RequestView request, long step) {
            return request.awaitingFirstToken() ? NORMAL_LANE - 2 : NORMAL_LANE;
        }

        @Override
        public String toString() {
            return "FIRST_TOKEN_FIRST";
        }
    };

    /**
     * Tasks of requests whose deadline is nearer go first. Deadlines are bucketed by the
     * binary order of magnitude of the time left (under 1 ms, under 2 ms, under 4 ms, ... up
     * to 32 ms and beyond), FIFO within a bucket; requests without a deadline go last.
     */
    SchedulingPolicy EARLIEST_DEADLINE = new SchedulingPolicy() {
        @Override
        public int lane(RequestView request, long step) {
            long deadline = request.deadlineNanos();
            if (deadline == Long.MAX_VALUE) {
                return LANES - 1;
            }
            long leftMillis = Math.max(0, (deadline - System.nanoTime()) / 1_000_000);
            int magnitude = 64 - Long.numberOfLeadingZeros(leftMillis); // 0 for < 1 ms, 1 for 1 ms, 2 for 2-3 ms, ...
            return Math.min(LANES - 2, magnitude);
        }

        @Override
        public String toString() {
            return "EARLIEST_DEADLINE";
        }
    };
}
