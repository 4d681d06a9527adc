package dev.tandem.graph;

/**
 * What a step and its tasks report to: the request they belong to. Implemented by the
 * request; kept as an interface so the graph package does not depend on sessions.
 */
public interface StepOwner {

    long requestId();

    /** False once the request has ended: its unstarted tasks are then skipped. */
    boolean isRunning();

    /** True while the request has not delivered its first token (scheduling uses it). */
    boolean awaitingFirstToken();

    /** A kernel of this request threw. Called on the core thread, once per failing task. */
    void taskFailed(TaskNode task, Throwable cause);

    /** Every task of {@code step} is done. Called once per step, on the thread that finished it. */
    void stepDone(Step step);
}
