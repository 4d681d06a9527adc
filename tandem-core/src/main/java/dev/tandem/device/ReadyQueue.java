package dev.tandem.device;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The ready tasks of all requests, in lanes. Multi-producer, multi-consumer: any thread
 * pushes (the host publishing, a core finishing), any core pops.
 *
 * <p>Implementation Overview. Each lane is a Michael–Scott linked queue whose nodes are the
 * tasks themselves (linked through {@code TaskNode.queueNext}), so a push allocates nothing.
 * That is safe because a task enters a queue exactly once in its life and nodes are never
 * recycled (the garbage collector rules out ABA). As in the classic algorithm the head is a
 * dummy: popping returns the node after it, which becomes the new dummy; its task has been
 * handed to exactly one core, the winner of the head CAS. The tail may lag behind the head;
 * pushers help it forward.
 *
 * <p>A run of tasks of one lane ({@link #pushAll}, what a publication batch is) is linked
 * first, with plain writes while no other thread can reach it, and appended with one CAS, so
 * a batch costs the publisher one contended update instead of one per task.
 *
 * <p>Invariants: a run (one task or more) is linked into a lane by exactly one successful
 * CAS of a {@code queueNext} from null, which makes the whole run visible at once; a task is
 * returned by exactly one successful CAS of a head. Non-invariants: the tail is
 * not always the last node; {@link #isEmpty()} is a snapshot; {@link #poll()} is FIFO within
 * a lane but orders lanes only by a non-atomic scan.
 */
final class ReadyQueue {
    private final Lane[] lanes;

    public ReadyQueue(int laneCount) {
        if (laneCount < 1) {
            throw new IllegalArgumentException("a ready queue needs at least one lane, was " + laneCount);
        }
        lanes = new Lane[laneCount];
        for (int i = 0; i < laneCount; i++) {
            lanes[i] = new Lane();
        }
    }

    public int laneCount() {
        return lanes.length;
    }

    /** Appends a task to its lane ({@code task.lane}). */
    public void push(TaskNode task) {
        lanes[task.lane].push(task);
    }

    /**
     * Appends {@code tasks[from, to)}, in that order, to lane {@code lane} (which their
     * {@code lane} fields must name) with one CAS: they are linked to each other with plain
     * writes first, while no other thread can reach them, and the CAS that links the first
     * publishes the whole chain.
     */
    public void pushAll(TaskNode[] tasks, int from, int to, int lane) {
        if (from >= to) {
            return;
        }
        for (int i = from; i < to - 1; i++) {
            Lane.NEXT.set(tasks[i], tasks[i + 1]);
        }
        lanes[lane].pushChain(tasks[from], tasks[to - 1]);
    }

    /**
     * Takes the oldest task of the lowest lane found non-empty in one scan, or null. The scan
     * is not atomic across lanes: a task pushed to a lower lane while it runs may be passed
     * over this once (it is taken by the next poll), which is fine for a scheduling order.
     */
    public TaskNode poll() {
        for (Lane lane : lanes) {
            TaskNode task = lane.poll();
            if (task != null) {
                return task;
            }
        }
        return null;
    }

    public boolean isEmpty() {
        for (Lane lane : lanes) {
            if (!lane.isEmpty()) {
                return false;
            }
        }
        return true;
    }

    /** One Michael–Scott queue over intrusive nodes. */
    static final class Lane {
        private volatile TaskNode head;
        private volatile TaskNode tail;

        Lane() {
            TaskNode dummy = new TaskNode(null, null, null, null, -1, null);
            head = dummy;
            tail = dummy;
        }

        void push(TaskNode task) {
            pushChain(task, task);
        }

        /** Appends the chain first → … → last, already linked through {@code queueNext}. */
        void pushChain(TaskNode first, TaskNode last) {
            // Plain write: the chain is not reachable by any other thread before the CAS below.
            NEXT.set(last, null);
            while (true) {
                TaskNode t = tail;
                TaskNode next = (TaskNode) NEXT.getAcquire(t);
                if (next == null) {
                    if (NEXT.compareAndSet(t, null, first)) {
                        TAIL.compareAndSet(this, t, last); // may fail: someone helped (one node at a time)
                        return;
                    }
                } else {
                    TAIL.compareAndSet(this, t, next); // help a lagging tail
                }
            }
        }

        TaskNode poll() {
            while (true) {
                TaskNode h = head;
                TaskNode next = (TaskNode) NEXT.getAcquire(h);
                if (next == null) {
                    return null;
                }
                if (HEAD.compareAndSet(this, h, next)) {
                    return next;
                }
            }
        }

        boolean isEmpty() {
            return NEXT.getAcquire(head) == null;
        }

        private static final VarHandle HEAD;
        private static final VarHandle TAIL;
        static final VarHandle NEXT;

        static {
            try {
                MethodHandles.Lookup lookup = MethodHandles.lookup();
                HEAD = lookup.findVarHandle(Lane.class, "head", TaskNode.class);
                TAIL = lookup.findVarHandle(Lane.class, "tail", TaskNode.class);
                NEXT = MethodHandles.privateLookupIn(TaskNode.class, lookup)
                        .findVarHandle(TaskNode.class, "queueNext", TaskNode.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }
    }
}
