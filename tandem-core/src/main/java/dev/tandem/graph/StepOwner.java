package dev.tandem.graph;

import dev.tandem.device.TaskNode;

/**
 * What a step and its tasks report to: the request they belong to. Implemented by the
 * request; kept as an interface so the graph package does not depend on sessions.
 */
public interface StepOwner {

    long requestId();

    /** False once the request has ended: its unstarted tasks are then skipped. */
    boolean isRunning();

    /** The scheduling lane of a task of {@code step} that became ready. Any thread; cheap. */
    int laneOf(Step step);

    /** A kernel of this request threw. Called on the core thread, once per failing task. */
    void taskFailed(TaskNode task, Throwable cause);

    /**
     * {@code step}'s tasks in flight fell below its bound: a host waiting for room may go on.
     * Called on the core that finished a task; must be cheap.
     */
    void roomInStep(Step step);

    /** Every task of {@code step} is done. Called once per step, on the thread that finished it. */
    void stepDone(Step step);
}
