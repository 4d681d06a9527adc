package dev.tandem;

/**
 * Orders ready tasks of all requests on the shared cores. A policy sorts each ready task
 * into one of a fixed number of lanes; cores take from the lowest non-empty lane, first in
 * first out within a lane. Lanes are lock-free queues, so a policy adds no lock to dispatch.
 *
 * <p>A core that finishes a task runs one of the successors it made ready itself, whatever
 * the policy: that keeps chains on one core and their data in its cache.
 */
public interface SchedulingPolicy {

    /** Number of lanes, at least 1. */
    int lanes();

    /**
     * The lane of a task that became ready.
     *
     * @param awaitingFirstToken whether the task's request has not delivered a token yet
     * @param step               the task's step within its request
     */
    int lane(boolean awaitingFirstToken, long step);

    /** One lane: tasks run in the order they became ready. */
    SchedulingPolicy FIFO = new SchedulingPolicy() {
        @Override
        public int lanes() {
            return 1;
        }

        @Override
        public int lane(boolean awaitingFirstToken, long step) {
            return 0;
        }

        @Override
        public String toString() {
            return "FIFO";
        }
    };

    /**
     * Tasks of requests still waiting for their first token go first, so that running other
     * requests alongside costs a new request no time to first token.
     */
    SchedulingPolicy FIRST_TOKEN_FIRST = new SchedulingPolicy() {
        @Override
        public int lanes() {
            return 2;
        }

        @Override
        public int lane(boolean awaitingFirstToken, long step) {
            return awaitingFirstToken ? 0 : 1;
        }

        @Override
        public String toString() {
            return "FIRST_TOKEN_FIRST";
        }
    };
}
