package dev.tandem.device;

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
 *   <li>Before publication, {@code pending} = {@link #GUARD} − (wired predecessors that have
 *       finished since they were wired). {@link #publish} adds {@code wired − GUARD}, where
 *       {@code wired} (host-only) counts the edges pushed; from then on {@code pending} = the
 *       wired predecessors that have not finished. The task is ready exactly when an update
 *       brings {@code pending} to 0, and exactly one thread performs that update.
 *   <li>{@code successors} is a Treiber stack of {@link Edge}s (a successor's first wiring
 *       pushes the successor itself, later ones a fresh edge), or {@link #CLOSED} once the
 *       task has finished. It is closed exactly once, by {@link #finish}, with an atomic
 *       swap; after that no edge can be pushed.
 *   <li>Every successor pushed before the swap is released (decremented) by the finishing
 *       thread; a push that loses to the swap is not counted in {@code wired}. So each
 *       counted edge is released exactly once.
 * </ul>
 *
 * <p>Wiring p→t ({@link #wireTo}): the host pushes t onto p's stack with a CAS and, if it
 * succeeded, counts the edge in {@code t.wired}; a CAS that finds CLOSED means p has finished
 * and will never release t, so nothing is counted. The guard is far larger than any number
 * of predecessors, so releases that arrive before publication cannot bring {@code pending}
 * to 0; and since the count of wired edges is added in one atomic step at publication,
 * wiring costs no atomic update of {@code t.pending} at all.
 *
 * <p>Only the request's host thread pushes edges, so a push CAS fails only because the
 * stack was closed: the loop in {@link #wireTo} runs at most twice. Onto a p not yet published
 * the push is a plain write: no thread can run p before its publication, so none closes its
 * stack meanwhile, and the thread that finishes p took it (or a predecessor that released it)
 * through a volatile update the host made after the push (the ready queue's CAS, or a guard's
 * atomic drop), so its swap sees the pushed edges. That took a chain's cost per task from 57.7
 * to 53.2 ns and a 64-wide fan-out's from 169.3 to 162.0 (in-JVM A/B, 1 core).
 *
 * <p>Publication without an atomic. The host publishes tasks in batches, and a batch's
 * tasks last first. A task t that no published task was wired to ({@code wiredToPublished},
 * host-only, set by {@link #wireTo} when the predecessor was published) has only
 * predecessors of its own batch, submitted before it and so published after it: when t's
 * guard is dropped none of them has run, so nothing has released t and nothing touches
 * {@code t.pending}, and a plain write of {@code wired} replaces the atomic addition. Every
 * later release of t comes from a task that becomes runnable after that write in the host's
 * program order, through a volatile read-modify-write that the releasing thread reads (the
 * ready queue's CAS, or the atomic guard drop of a task that was wired to a published one),
 * so the release sees the write. Publishing such a batch first task first would be wrong: a
 * predecessor released by an earlier batch's task could run and release t before t's plain
 * write, which would then overwrite the release. {@code TaskNodeLincheckTest} and
 * {@code TaskNodeStressTest} check both orders' consequences.
 *
 * <p>Memory ordering: every counter and stack update is a volatile read-modify-write, so the
 * finishing thread's writes to device memory happen-before a successor's run (the successor
 * observes its pending count reaching zero through a chain of RMWs on the same variable).
 * The host-only field {@code wired} is plain.
 *
 * <p>Finishing is a loop, never a recursion: {@link #finish} returns at most one ready
 * successor for the caller to run next and hands the others to a {@link ReadySink}, so a
 * chain of a million tasks runs in constant stack.
 */
public final class TaskNode extends Edge {

    /** Marks a finished task's stack. */
    static final Edge CLOSED = new Edge();

    /** Where a finishing task puts successors that became ready, beyond the first. */
    public interface ReadySink {
        void ready(TaskNode task);
    }

    private final Kernel kernel;
    private final Access[] accesses;
    private final long[] scalars;
    private final TaskGroup group;
    private final long index;
    private final Object payload;

    /** The publication guard: larger than any number of predecessors a task can have. */
    static final int GUARD = 1 << 30;

    private volatile int pending = GUARD;

    /** Host only: edges pushed onto predecessors' stacks. */
    private int wired;

    /** Host only: {@link #publish} ran, so the task may run and release its successors. */
    private boolean published;

    /**
     * Host only: an edge from a published task was pushed, so a thread may release this task
     * before its own publication.
     */
    private boolean wiredToPublished;
    private volatile Edge successors;

    /** Ready-queue link; written by the queue only. */
    volatile TaskNode queueNext;

    /** Scheduling lane, chosen by the device when the task becomes ready ({@link TaskGroup#lane()}). */
    public int lane;

    // A task split into parts (Kernel#parts): the unclaimed parts as two ranges, the opener's
    // {first, end} in the high 32 bits and the helpers' in the low 32 (16 bits each), and how
    // many parts have not returned. Written by the unit that opens the task before it shares it;
    // claimed and counted down by every unit that runs parts.
    private volatile long unclaimed;
    private volatile int partsLeft;

    /** A {@link TaskKind#KERNEL} task; {@code payload} is free for the caller (tests tag tasks with it). */
    public TaskNode(Kernel kernel, Access[] accesses, long[] scalars, TaskGroup group, long index, Object payload) {
        this.kernel = kernel;
        this.accesses = accesses;
        this.scalars = scalars;
        this.group = group;
        this.index = index;
        this.payload = payload;
    }

    private static final long[] NO_SCALARS = new long[0];

    /** The kernel field of the built-in kinds (never run): the kind costs the node no field of its own. */
    private static final Kernel UPLOAD_MARK = Kernel.of(TaskKind.UPLOAD.taskName(), context -> {
        throw new IllegalStateException("the upload is run by the device, not as a kernel");
    });
    private static final Kernel READBACK_MARK = Kernel.of(TaskKind.READBACK.taskName(), context -> {
        throw new IllegalStateException("the readback is run by the device, not as a kernel");
    });

    /** An {@link TaskKind#UPLOAD} of {@code bytes} (owned by the task from now on) into {@code target}, a WRITE. */
    public static TaskNode upload(Access target, byte[] bytes, TaskGroup group, long index) {
        return new TaskNode(UPLOAD_MARK, new Access[] {target}, NO_SCALARS, group, index, bytes);
    }

    /** A {@link TaskKind#READBACK} of {@code token}, a READ, into {@link TaskGroup#tokenRead}. */
    public static TaskNode readback(Access token, TaskGroup group, long index) {
        return new TaskNode(READBACK_MARK, new Access[] {token}, NO_SCALARS, group, index, null);
    }

    public TaskKind kind() {
        Kernel k = kernel;
        return k == UPLOAD_MARK ? TaskKind.UPLOAD : k == READBACK_MARK ? TaskKind.READBACK : TaskKind.KERNEL;
    }

    /** The kernel of a {@link TaskKind#KERNEL} task; null for the built-in kinds. */
    public Kernel kernel() {
        Kernel k = kernel;
        return k == UPLOAD_MARK || k == READBACK_MARK ? null : k;
    }

    /** The kernel's name, or the built-in kind's. */
    public String name() {
        return kernel.name();
    }

    public Access[] accesses() {
        return accesses;
    }

    public long[] scalars() {
        return scalars;
    }

    /** The task's step, which its completion is counted in. */
    public TaskGroup group() {
        return group;
    }

    /** Index of this task within its request, in submission order. */
    public long index() {
        return index;
    }

    /** The caller's tag of a kernel task; null unless given. */
    public Object payload() {
        return payload;
    }

    /** The bytes an {@link TaskKind#UPLOAD} writes. */
    public byte[] uploadBytes() {
        return (byte[]) payload;
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
    public boolean wireTo(TaskNode successor) {
        // Its own link for its first wiring (the first that succeeds is the one counted first).
        Edge edge = successor.wired > 0 ? new Edge.To(successor) : successor;
        while (true) {
            Edge head = successors;
            if (head == CLOSED) {
                return false; // the successor's own link stays free: it is in no stack
            }
            edge.edgeNext = head;
            if (!published) {
                // No thread runs this task before its publication, so none closes its stack
                // meanwhile: a plain push (see the class comment).
                SUCCESSORS.set(this, edge);
                break;
            }
            if (SUCCESSORS.compareAndSet(this, head, edge)) {
                successor.wiredToPublished = true;
                break;
            }
        }
        successor.wired++;
        return true;
    }

    /**
     * Whether {@code task} is on this task's successor stack (for tests and assertions: it
     * walks the stack, so only while no thread finishes this task).
     */
    public boolean hasSuccessor(TaskNode task) {
        Edge edge = successors;
        if (edge == CLOSED) {
            return false;
        }
        for (; edge != null; edge = edge.edgeNext) {
            TaskNode successor = edge instanceof TaskNode self ? self : ((Edge.To) edge).task;
            if (successor == task) {
                return true;
            }
        }
        return false;
    }

    /**
     * Host: replaces the publication guard by the number of wired predecessors.
     *
     * @return true if the task is ready now (every wired predecessor has finished)
     */
    public boolean publish() {
        published = true;
        int w = wired;
        if (!wiredToPublished) {
            // No published task was wired to this one, so no thread has released it or can
            // until a predecessor is published: none if nothing was wired (the queue's CAS then
            // publishes it), and otherwise all of them are unpublished tasks of this one's own
            // batch, which publishes last task first (see the class comment). Nothing else
            // touches pending, and a plain write replaces the atomic.
            PENDING.set(this, w);
            return w == 0;
        }
        int delta = w - GUARD;
        return (int) PENDING.getAndAdd(this, delta) == -delta;
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
            TaskNode successor = edge instanceof TaskNode self ? self : ((Edge.To) edge).task;
            Edge below = edge.edgeNext;
            edge.edgeNext = null; // a successor that is its own link must not pin its siblings
            if (release(successor)) {
                if (runNext == null) {
                    runNext = successor;
                } else {
                    sink.ready(successor);
                }
            }
            edge = below;
        }
        return runNext;
    }

    /**
     * Releases {@code successor} from one finished predecessor; true if that made it ready.
     * After publication {@code pending} only falls, and it is 1 exactly when this predecessor is
     * the only one left (its own release is still to come): then no other thread can touch it,
     * and a read and a plain write replace the atomic decrement. The read acquires: it reads the
     * value the other predecessors' decrements left (or the host's publication), so their writes
     * happen-before the successor's run. A chain's tasks each have one predecessor, and the
     * atomic was most of a core's samples there (its line comes from the host, which wrote it).
     */
    private static boolean release(TaskNode successor) {
        if ((int) PENDING.getAcquire(successor) == 1) {
            PENDING.set(successor, 0);
            return true;
        }
        return (int) PENDING.getAndAdd(successor, -1) == 1;
    }

    /**
     * Completes the task: {@link #finish releases its successors}, then counts it done in its
     * group. What a device calls, once, after running or skipping the task (or it calls
     * {@link #finish} and counts the task in a batch, see {@link Device}).
     *
     * @return a successor that became ready, for the caller to run next, or null
     */
    public TaskNode complete(ReadySink sink) {
        TaskNode next = finish(sink);
        group.tasksDone(1);
        return next;
    }

    /**
     * Device: opens a task of {@code count} parts (2 to {@link Kernel#MAX_PARTS}, so that a
     * range's bounds fit 16 bits) for {@code units} units, before any unit claims one: the
     * opener's share is the first {@code ceil(count / units)} parts, the helpers' the rest. The
     * caller then publishes the task to the other units through a volatile write or a CAS.
     */
    public void openParts(int count, int units) {
        if (count < 2 || count > Kernel.MAX_PARTS || units < 1) {
            throw new IllegalArgumentException("parts: count = " + count + " must be in [2, " + Kernel.MAX_PARTS
                    + "] and units = " + units + " >= 1");
        }
        int opener = Math.ceilDiv(count, units);
        unclaimed = ((long) opener << 32) | ((long) opener << 16) | count; // {0, opener}, {opener, count}
        partsLeft = count;
    }

    /**
     * Device: claims a part of an opened task; -1 once every part has been claimed. The unit that
     * opened it ({@code opener}) claims its share from the front, then the helpers' from the back;
     * helpers claim theirs from the front, then the opener's from the back. So each unit walks
     * adjacent rows in ascending order, which its prefetcher has fetched ahead, and the units
     * meet only at the end. With one shared range claimed from both ends, a helper walked
     * backwards a part at a time: the matmul phases of a large-shape decode step, emulated on
     * two cores with the q8_0_x16 kernel, read 28-31 GB/s that way and 30-33 with two ascending
     * shares. With more than two units the helpers share one range, claimed from its front.
     */
    public int claimPart(boolean opener) {
        while (true) {
            long range = unclaimed;
            int openerFirst = (int) (range >>> 48);
            int openerEnd = (int) (range >>> 32) & 0xffff;
            int helperFirst = (int) (range >>> 16) & 0xffff;
            int helperEnd = (int) range & 0xffff;
            int part;
            long rest;
            if (opener ? openerFirst < openerEnd : helperFirst < helperEnd) {
                part = opener ? openerFirst : helperFirst; // the front of its own share
                rest = range + (opener ? 1L << 48 : 1L << 16);
            } else if (opener ? helperFirst < helperEnd : openerFirst < openerEnd) {
                part = (opener ? helperEnd : openerEnd) - 1; // the back of the other share
                rest = range - (opener ? 1L : 1L << 32);
            } else {
                return -1;
            }
            if (UNCLAIMED.compareAndSet(this, range, rest)) {
                return part;
            }
        }
    }

    /**
     * Device: a claimed part has returned. True for exactly one call per task, the last part's:
     * that unit completes the task, and every other part's writes happen-before it (each part's
     * unit counts down after its writes, and the counter is one chain of atomic updates).
     */
    public boolean partDone() {
        return (int) PARTS_LEFT.getAndAdd(this, -1) == 1;
    }

    /** Current pending count (including the guard before publication); for tests and assertions. */
    public int pendingCount() {
        return pending;
    }

    @Override
    public String toString() {
        return "task " + index + " (" + (kernel == null ? "?" : name()) + ") of " + group;
    }

    private static final VarHandle PENDING;
    private static final VarHandle SUCCESSORS;
    private static final VarHandle UNCLAIMED;
    private static final VarHandle PARTS_LEFT;

    static {
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            PENDING = lookup.findVarHandle(TaskNode.class, "pending", int.class);
            SUCCESSORS = lookup.findVarHandle(TaskNode.class, "successors", Edge.class);
            UNCLAIMED = lookup.findVarHandle(TaskNode.class, "unclaimed", long.class);
            PARTS_LEFT = lookup.findVarHandle(TaskNode.class, "partsLeft", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
}
