package dev.tandem.device;

/**
 * What a task reports to while a device runs it: its step. Implemented above the device (by
 * the graph's {@code Step}), so the device package depends on nothing of graphs, requests or
 * sessions. Every method is called on a device thread and must be bounded and non-blocking.
 */
public interface TaskGroup {

    /** Id of the request the task belongs to. */
    long requestId();

    /** Index of the step within its request. */
    long index();

    /** False once the request has ended: a task taken then is skipped (but still completed). */
    boolean isLive();

    /**
     * The scheduling lane, in {@code [0, SchedulingPolicy.LANES)}, of a task of this group
     * that became ready. Evaluates the request's policy; never throws (a bad policy fails the
     * request and yields the normal lane).
     */
    int lane();

    /** The kernel of {@code task} threw {@code cause}. Once per failing task. */
    void taskFailed(TaskNode task, Throwable cause);

    /** A READBACK task of this group read {@code token}; called before that task completes. */
    void tokenRead(byte[] token);

    /**
     * {@code n ≥ 1} tasks of this group completed (ran, failed or were skipped): the last step
     * of {@link TaskNode#complete} (n = 1), or a device's batched count of several
     * {@link TaskNode#finish released} tasks (see {@link Device}, "Completion").
     */
    void tasksDone(int n);
}
