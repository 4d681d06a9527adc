package dev.tandem.session;

import dev.tandem.AdmissionRejectedException;
import dev.tandem.AdmissionRejectedException.Reason;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongPredicate;
import java.util.function.LongConsumer;

/**
 * A session's admission and termination state machine, over opaque requests. Thread-safe.
 *
 * <p>Implementation Overview. One lock guards everything: the FIFO {@code queue} of admitted
 * requests waiting to start, the {@code running} set (each holding a slot and
 * {@code memoryPerRequest} bytes of the device budget), the live ids, {@code unfinished}
 * (admitted requests whose end has not been fully reported) and {@code closed}. It is taken
 * per submission, per request end and per admission attempt — never on the task dispatch
 * path; callers start and cancel requests outside it.
 *
 * <p>Invariants (under the lock):
 * <ul>
 *   <li>{@code running.size() ≤ maxActive} and {@code queue.size() ≤ maxQueued} (a request
 *       that starts at once never counts against the queue bound);
 *   <li>a request is in at most one of queue and running, and {@code unfinished ≥
 *       queue.size() + running.size()};
 *   <li>each running request holds exactly one memory reservation, taken when it left the
 *       queue and given back exactly once, when it is released;
 *   <li>requests leave the queue to run in arrival order: only the head starts, when a slot
 *       and its memory are free;
 *   <li>live ids are unique; an id is free again once its request is released;
 *   <li>once closed, nothing is admitted, and the session is drained exactly when
 *       {@code unfinished} reaches 0.
 * </ul>
 *
 * @param <R> the request type
 */
final class Admission<R> {
    private final int maxActive;
    private final int maxQueued;
    private final long memoryPerRequest;
    private final LongPredicate reserve;
    private final LongConsumer release;

    private final ReentrantLock lock = new ReentrantLock();
    private final ArrayDeque<R> queue = new ArrayDeque<>();
    private final Set<R> running = new HashSet<>();
    private final Set<String> liveIds = new HashSet<>();
    private int unfinished;
    private boolean closed;
    private boolean drained;

    /**
     * @param reserve tries to reserve bytes of the device budget, without blocking
     * @param release gives reserved bytes back
     */
    Admission(int maxActive, int maxQueued, long memoryPerRequest, LongPredicate reserve, LongConsumer release) {
        this.maxActive = maxActive;
        this.maxQueued = maxQueued;
        this.memoryPerRequest = memoryPerRequest;
        this.reserve = reserve;
        this.release = release;
    }

    /**
     * Admits {@code request} into the queue, or says why not. On success the caller must
     * later call {@link #released} and then {@link #finished} for it, exactly once each.
     *
     * @throws AdmissionRejectedException with the reason; nothing changed then
     */
    void offer(R request, String id) {
        lock.lock();
        try {
            if (closed) {
                throw new AdmissionRejectedException(Reason.CLOSED, "the session is closed");
            }
            if (id != null && liveIds.contains(id)) {
                throw new AdmissionRejectedException(Reason.DUPLICATE_ID, "a request with id '" + id
                        + "' is still live in this session");
            }
            boolean startsNow = queue.isEmpty() && running.size() < maxActive;
            if (!startsNow && queue.size() >= maxQueued) {
                throw new AdmissionRejectedException(Reason.QUEUE_FULL, queue.size() + " requests are queued (maxQueued "
                        + maxQueued + ") and " + running.size() + " running (maxActive " + maxActive + ")");
            }
            if (id != null) {
                liveIds.add(id);
            }
            queue.addLast(request);
            unfinished++;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Moves requests from the head of the queue to running while a slot and memory are free.
     *
     * @return the requests the caller must now start, in order
     */
    List<R> admitReady() {
        List<R> toStart = new ArrayList<>();
        lock.lock();
        try {
            while (!queue.isEmpty() && running.size() < maxActive) {
                if (!reserve.test(memoryPerRequest)) {
                    break; // FIFO: the head waits for memory, and so does everyone behind it
                }
                R next = queue.pollFirst();
                running.add(next);
                toStart.add(next);
            }
        } finally {
            lock.unlock();
        }
        return toStart;
    }

    /**
     * The request's tasks are done and its memory is free: its slot, its reservation and its
     * id are given back (or it leaves the queue if it never ran).
     */
    void released(R request, String id) {
        lock.lock();
        try {
            if (running.remove(request)) {
                release.accept(memoryPerRequest);
            } else if (!queue.remove(request)) {
                throw new IllegalStateException(request + " released twice or never admitted");
            }
            if (id != null) {
                liveIds.remove(id);
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * The request's end has been reported to its caller.
     *
     * @return true exactly once: for the call that leaves a closed session with nothing left
     */
    boolean finished() {
        lock.lock();
        try {
            unfinished--;
            return drainedNow();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Closes admission.
     *
     * @return the requests still queued or running, for the caller to cancel
     */
    List<R> close() {
        lock.lock();
        try {
            closed = true;
            List<R> live = new ArrayList<>(queue);
            live.addAll(running);
            return live;
        } finally {
            lock.unlock();
        }
    }

    /** After {@link #close()}: true exactly once, if nothing was left to drain. */
    boolean drainedAtClose() {
        lock.lock();
        try {
            return drainedNow();
        } finally {
            lock.unlock();
        }
    }

    private boolean drainedNow() {
        if (closed && unfinished == 0 && !drained) {
            drained = true;
            return true;
        }
        return false;
    }

    int queued() {
        lock.lock();
        try {
            return queue.size();
        } finally {
            lock.unlock();
        }
    }

    /** A snapshot of the running requests. */
    List<R> running() {
        lock.lock();
        try {
            return new ArrayList<>(running);
        } finally {
            lock.unlock();
        }
    }

    /** Whether {@code request} is queued or running: admitted and not yet released. */
    boolean isLive(R request) {
        lock.lock();
        try {
            return running.contains(request) || queue.contains(request);
        } finally {
            lock.unlock();
        }
    }

    int unfinished() {
        lock.lock();
        try {
            return unfinished;
        } finally {
            lock.unlock();
        }
    }
}
