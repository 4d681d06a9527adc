package dev.tandem.graph;

import dev.tandem.Access;
import dev.tandem.Kernel;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * One submitted task: a kernel call with its regions and scalars, a node of its request's
 * dependency graph, and a link of the ready queue.
 *
 * <p>Implementation Overview — the readiness protocol (host wires, device completes, no
 * locks).
 *
 * <p>The fundamental invariants are:
 * <ul>
 *   <li>{@code pending} = 1 (the publication guard, until {@link #publish}) + the number of
 *       wired predecessors that have not finished yet. The task is ready exactly when a
 *       decrement brings it to 0, and exactly one thread performs that decrement.
 *   <li>{@code successors} is a Treiber stack of {@link Edge}s, or {@link #CLOSED} once the
 *       task has finished. It is closed exactly once, by {@link #finish}, with an atomic
 *       swap; after that no edge can be pushed.
 *   <li>Every successor pushed before the swap is released (decremented) by the finishing
 *       thread; a push that loses to the swap is undone by the host. So each wired edge is
 *       released exactly once.
 * </ul>
 *
 * <p>Wiring p→t ({@link #wireTo}): the host increments {@code t.pending} first, then pushes t
 * onto p's stack with a CAS. If the CAS finds CLOSED, p has finished and will never release
 * t, so the host decrements {@code t.pending} again; this cannot bring it to 0 because the
 * publication guard is still held (wiring happens before publication). The increment must
 * precede the push: otherwise p could finish and release t between the push and the
 * increment, and t could become ready while a predecessor is still counted.
 *
 * <p>Only the request's host thread pushes edges, so a push CAS fails only because the
 * stack was closed: the loop in {@link #wireTo} runs at most twice.
 *
 * <p>Memory ordering: every counter and stack update is a volatile read-modify-write, so the
 * finishing thread's writes to device memory happen-before a successor's run (the successor
 * observes its pending count reaching zero through a chain of RMWs on the same variable).
 * The host-only fields ({@code lastWiredTo}) are plain.
 *
 * <p>Finishing is a loop, never a recursion: {@link #finish} returns at most one ready
 * successor for the caller to run next and hands the others to a {@link ReadySink}, so a
 * chain of a million tasks runs in constant stack.
 */
public final class TaskNode {

    /** A link of a successor stack. */
    static final class Edge {
        final TaskNode task;
        Edge next;

        Edge(TaskNode task) {
            this.task = task;
        }
    }

    /** Marks a finished task's stack. */
    static final Edge CLOSED = new Edge(null);

    /** Where a finishing task puts successors that became ready, beyond the first. */
    public interface ReadySink {
        void ready(TaskNode task);
    }

    private final Kernel kernel;
    private final Access[] accesses;
    private final long[] scalars;
    private final Step step;
    private final long index;
    private final Object payload;

    private volatile int pending = 1;
    private volatile Edge successors;

    /** Ready-queue link; written by the queue only. */
    volatile TaskNode queueNext;

    /** Host only: index of the last task an edge from this one was wired to (dedup). */
    long lastWiredTo = -1;

    /** Scheduling lane, chosen when the task becomes ready. */
    public int lane;

    public TaskNode(Kernel kernel, Access[] accesses, long[] scalars, Step step, long index, Object payload) {
        this.kernel = kernel;
        this.accesses = accesses;
        this.scalars = scalars;
        this.step = step;
        this.index = index;
        this.payload = payload;
    }

    public Kernel kernel() {
        return kernel;
    }

    public Access[] accesses() {
        return accesses;
    }

    public long[] scalars() {
        return scalars;
    }

    public Step step() {
        return step;
    }

    /** Index of this task within its request, in submission order. */
    public long index() {
        return index;
    }

    /** Runtime data for built-in tasks (readback, upload); null for user kernels. */
    public Object payload() {
        return payload;
    }

    /** Whether the task has finished (its successor stack is closed). */
    public boolean isFinished() {
        return successors == CLOSED;
    }

    /**
     * Host: wires the edge this→successor unless this task has already finished.
     *
     * @return whether the edge was wired (false: this task finished, no dependency remains)
     */
    boolean wireTo(TaskNode successor) {
        PENDING.getAndAdd(successor, 1);
        Edge edge = new Edge(successor);
        while (true) {
            Edge head = successors;
            if (head == CLOSED) {
                PENDING.getAndAdd(successor, -1);
                return false;
            }
            edge.next = head;
            if (SUCCESSORS.compareAndSet(this, head, edge)) {
                return true;
            }
        }
    }

    /**
     * Host: drops the publication guard.
     *
     * @return true if the task is ready now (no unfinished predecessor)
     */
    public boolean publish() {
        return (int) PENDING.getAndAdd(this, -1) == 1;
    }

    /**
     * Closes the successor stack and releases every successor. Called once, by the thread
     * that ran (or skipped) the task.
     *
     * @return one successor that became ready, for the caller to run next, or null; the
     *     others that became ready go to {@code sink}
     */
    public TaskNode finish(ReadySink sink) {
        Edge edge = (Edge) SUCCESSORS.getAndSet(this, CLOSED);
        TaskNode runNext = null;
        while (edge != null) {
            TaskNode successor = edge.task;
            if ((int) PENDING.getAndAdd(successor, -1) == 1) {
                if (runNext == null) {
                    runNext = successor;
                } else {
                    sink.ready(successor);
                }
            }
            edge = edge.next;
        }
        return runNext;
    }

    /** Current pending count; for tests and assertions. */
    public int pendingCount() {
        return pending;
    }

    @Override
    public String toString() {
        return "task " + index + " (" + kernel.name() + ") of " + step;
    }

    private static final VarHandle PENDING;
    private static final VarHandle SUCCESSORS;

    static {
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            PENDING = lookup.findVarHandle(TaskNode.class, "pending", int.class);
            SUCCESSORS = lookup.findVarHandle(TaskNode.class, "successors", Edge.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
}
