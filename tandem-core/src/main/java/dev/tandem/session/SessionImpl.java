package dev.tandem.session;

import dev.tandem.AdmissionRejectedException;
import dev.tandem.AdmissionRejectedException.Reason;
import dev.tandem.Program;
import dev.tandem.RequestOptions;
import dev.tandem.RunOptions;
import dev.tandem.Session;
import dev.tandem.SessionConfig;
import dev.tandem.SessionStats;
import dev.tandem.Status;
import dev.tandem.TokenStream;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A session: bounded FIFO admission of requests of one program, a limit on how many run at
 * once, and a memory reservation per running request.
 *
 * <p>Implementation Overview. One lock guards the admission state: the FIFO {@code queue}
 * of admitted requests waiting to start, the {@code running} set (each holding a slot and
 * {@code memoryPerRequest} bytes of the device budget), the live ids, the counters and
 * {@code closed}. It is taken per submission, per request end and per admission attempt —
 * never on the task dispatch path. Requests are started outside the lock.
 *
 * <p>Invariants (under the lock): {@code running.size() ≤ maxActive}; {@code queue.size() ≤
 * maxQueued}; a request is in at most one of queue and running; each running request holds
 * exactly one memory reservation, released exactly once when it leaves running; a queued
 * request is started only from the head of the queue (FIFO), when a slot and its memory are
 * free; once closed, nothing is added.
 *
 * <p>A request ends exactly once (its own CAS); its end reaches {@link #requestFinished},
 * which removes it from wherever it is. A request cancelled while queued finishes without
 * ever starting, and a request admitted at the moment it is cancelled has its
 * {@link RequestRun#start} refused, finishes, and gives its slot back the same way.
 */
public final class SessionImpl<I> implements Session<I> {
    private final RequestHost host;
    private final Program<I> program;
    private final SessionConfig config;
    private final RunOptions runOptions;

    private final ReentrantLock lock = new ReentrantLock();
    private final ArrayDeque<RequestRun> queue = new ArrayDeque<>();
    private final Set<RequestRun> running = new HashSet<>();
    private final Set<String> liveIds = new HashSet<>();
    private final Map<Status, Long> finishedByStatus = new EnumMap<>(Status.class);
    private long tokensDelivered;
    private boolean closed;
    private final CompletableFuture<Void> drained = new CompletableFuture<>();

    public SessionImpl(RequestHost host, Program<I> program, SessionConfig config) {
        this.host = Objects.requireNonNull(host, "host");
        this.program = Objects.requireNonNull(program, "program");
        this.config = Objects.requireNonNull(config, "config");
        this.runOptions = RunOptions.defaults()
                .withRunAhead(config.runAhead())
                .withPublishBatch(config.publishBatch())
                .withStreamBuffer(config.streamBuffer());
    }

    @Override
    public TokenStream submit(I input, RequestOptions options) {
        Objects.requireNonNull(input, "input");
        Objects.requireNonNull(options, "options");
        long budget = host.device().memory().budget();
        if (config.memoryPerRequest() > budget) {
            throw new AdmissionRejectedException(Reason.TOO_LARGE, "a request needs " + config.memoryPerRequest()
                    + " bytes (memoryPerRequest) but the device budget is " + budget + " bytes");
        }
        RequestSpec spec = new RequestSpec(options.id(), runOptions.withMaxTokens(options.maxTokens()),
                options.stopWhen(), options.deadline(), options.priority(), config.policy(), config.memoryPerRequest());
        RequestRun request = new RequestRun(host.nextRequestId(), program, input, spec, host.device(), this::requestFinished);
        lock.lock();
        try {
            if (closed) {
                throw new AdmissionRejectedException(Reason.CLOSED, "the session is closed");
            }
            if (options.id() != null && liveIds.contains(options.id())) {
                throw new AdmissionRejectedException(Reason.DUPLICATE_ID, "a request with id '" + options.id()
                        + "' is still live in this session");
            }
            boolean startsNow = queue.isEmpty() && running.size() < config.maxActive();
            if (!startsNow && queue.size() >= config.maxQueued()) {
                throw new AdmissionRejectedException(Reason.QUEUE_FULL, queue.size() + " requests are queued (maxQueued "
                        + config.maxQueued() + ") and " + running.size() + " running (maxActive " + config.maxActive() + ")");
            }
            if (options.id() != null) {
                liveIds.add(options.id());
            }
            queue.addLast(request);
            host.register(request); // registered before anything can start or end it
        } finally {
            lock.unlock();
        }
        request.armDeadline(host.timer());
        admit();
        return request.stream();
    }

    /** Starts queued requests, head first, while slots and memory are free. Any thread. */
    public void admit() {
        List<RequestRun> toStart = new ArrayList<>();
        lock.lock();
        try {
            while (!queue.isEmpty() && running.size() < config.maxActive()) {
                if (!host.device().memory().tryReserve(config.memoryPerRequest())) {
                    break; // FIFO: the head waits for memory, and so does everyone behind it
                }
                RequestRun next = queue.pollFirst();
                running.add(next);
                toStart.add(next);
            }
        } finally {
            lock.unlock();
        }
        for (RequestRun request : toStart) {
            request.start(host.threadName(request.id())); // refused if it ended meanwhile; it then finishes
        }
    }

    private void requestFinished(RequestRun request) {
        boolean nowDrained;
        lock.lock();
        try {
            if (running.remove(request)) {
                host.device().memory().release(config.memoryPerRequest());
            } else {
                queue.remove(request);
            }
            if (request.name() != null) {
                liveIds.remove(request.name());
            }
            finishedByStatus.merge(request.status(), 1L, Long::sum);
            tokensDelivered += request.tokensDelivered();
            nowDrained = closed && queue.isEmpty() && running.isEmpty();
        } finally {
            lock.unlock();
        }
        host.finished(request);
        if (nowDrained && drained.complete(null)) {
            host.sessionClosed(this);
        }
    }

    @Override
    public SessionStats stats() {
        lock.lock();
        try {
            long live = 0;
            for (RequestRun request : running) {
                live += request.tokensDelivered();
            }
            var cores = host.device().cores();
            return new SessionStats(queue.size(), running.size(), Map.copyOf(finishedByStatus), tokensDelivered + live,
                    cores.busyFraction(), (long) running.size() * config.memoryPerRequest());
        } finally {
            lock.unlock();
        }
    }

    /** Stops admission and cancels everything live; returns without waiting. */
    public void shutdown() {
        List<RequestRun> live;
        lock.lock();
        try {
            closed = true;
            live = new ArrayList<>(queue);
            live.addAll(running);
            if (live.isEmpty() && drained.complete(null)) {
                host.sessionClosed(this);
            }
        } finally {
            lock.unlock();
        }
        for (RequestRun request : live) {
            request.terminate(Status.CANCELLED, null);
        }
    }

    @Override
    public void close() {
        shutdown();
        if (RuntimeThreads.inCallback() || host.device().cores().isCoreThread() || isProgramThreadOfThisSession()) {
            return; // never wait on ourselves: the last request to drain completes the close
        }
        drained.join();
    }

    /** Completes when the session is closed and every request of it has drained. */
    public CompletableFuture<Void> drained() {
        return drained.copy();
    }

    private boolean isProgramThreadOfThisSession() {
        lock.lock();
        try {
            for (RequestRun request : running) {
                if (request.isProgramThread()) {
                    return true;
                }
            }
            return false;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public String toString() {
        return "Session[" + config + "]";
    }
}
