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
import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A session: bounded FIFO admission of requests of one program, a limit on how many run at
 * once, and a memory reservation per running request. The state machine is {@link Admission};
 * this class creates, starts and cancels the requests it admits, outside its lock.
 *
 * <p>A request ends exactly once (its own CAS). Its end reaches {@link #requestReleased}
 * once its tasks are done and its memory freed (slot and reservation go back, queued
 * requests may start), then {@link #requestFinished} once its caller can see the outcome
 * (the session may then report itself drained). A request cancelled while queued finishes
 * without ever starting; one admitted at the moment it is cancelled has its
 * {@link RequestRun#start} refused and finishes the same way.
 *
 * <p>Close rules: {@link #close()} and {@link #close(Duration)} may be called from any thread,
 * any number of times, concurrently. Each stops admission and cancels what is live; a caller
 * that is one of the worker's own threads (a core running a kernel, a program, a delivery
 * thread running {@code stopWhen}, a subscriber, a teardown running completion dependents)
 * never waits — the last request to drain completes the close — and every other caller waits
 * for the drain, without bound or up to its timeout.
 */
final class SessionImpl<I> implements Session<I> {
    /** The default predicate, which never matches: such a request has no stopWhen to run. */
    private static final Object NO_STOP = RequestOptions.defaults().stopWhen();

    private final WorkerRuntime host;
    private final Program<I> program;
    private final SessionConfig config;
    private final RunOptions runOptions;
    private final Admission<RequestRun> admission;
    private final CompletableFuture<Void> drained = new CompletableFuture<>();
    private final Map<Status, AtomicLong> finishedByStatus = new EnumMap<>(Status.class);
    private final AtomicLong tokensDelivered = new AtomicLong();
    private final Set<RequestRun> unfinished = ConcurrentHashMap.newKeySet();

    SessionImpl(WorkerRuntime host, Program<I> program, SessionConfig config) {
        this.host = Objects.requireNonNull(host, "host");
        this.program = Objects.requireNonNull(program, "program");
        this.config = Objects.requireNonNull(config, "config");
        this.runOptions = RunOptions.defaults()
                .withRunAhead(config.runAhead())
                .withPublishBatch(config.publishBatch())
                .withMaxPublishBatch(config.maxPublishBatch())
                .withStreamBuffer(config.streamBuffer())
                .withMaxTasksInFlight(config.maxTasksInFlight());
        var memory = host.parts().device().memory();
        this.admission = new Admission<>(config.maxActive(), config.maxQueued(), config.memoryPerRequest(),
                memory::tryReserve, memory::release);
        for (Status status : Status.values()) {
            finishedByStatus.put(status, new AtomicLong());
        }
    }

    @Override
    public TokenStream submit(I input, RequestOptions options) {
        Objects.requireNonNull(input, "input");
        Objects.requireNonNull(options, "options");
        long budget = host.parts().device().memory().budget();
        if (config.memoryPerRequest() > budget) {
            throw new AdmissionRejectedException(Reason.TOO_LARGE, "a request needs " + config.memoryPerRequest()
                    + " bytes (memoryPerRequest) but the device budget is " + budget + " bytes");
        }
        RequestSpec spec = new RequestSpec(options.id(), runOptions.withMaxTokens(options.maxTokens()),
                options.stopWhen() == NO_STOP ? null : options.stopWhen(), options.deadline(), options.priority(), config.policy(), config.memoryPerRequest());
        RequestRun request = new RequestRun(host.nextRequestId(), program, input, spec, host.parts(),
                this::requestReleased, this::requestFinished);
        admission.offer(request, options.id()); // throws with the reason; nothing was started
        unfinished.add(request);
        host.register(request); // registered before anything can start or end it
        request.armDeadline(host.timer());
        admit();
        return request.stream();
    }

    /** Starts queued requests, head first, while slots and memory are free. Any thread. */
    void admit() {
        for (RequestRun request : admission.admitReady()) {
            request.start(); // refused if it ended meanwhile; it then finishes
        }
    }

    private void requestReleased(RequestRun request) {
        admission.released(request, request.name());
        finishedByStatus.get(request.status()).incrementAndGet();
        tokensDelivered.addAndGet(request.tokensDelivered());
        admit();
    }

    private void requestFinished(RequestRun request) {
        unfinished.remove(request);
        host.finished(request);
        if (admission.finished()) {
            completeDrain();
        }
    }

    private void completeDrain() {
        drained.complete(null);
        host.sessionClosed(this);
    }

    @Override
    public SessionStats stats() {
        List<RequestRun> running = admission.running();
        long live = 0;
        for (RequestRun request : running) {
            live += request.tokensDelivered();
        }
        Map<Status, Long> finished = new EnumMap<>(Status.class);
        finishedByStatus.forEach((status, count) -> {
            if (count.get() > 0) {
                finished.put(status, count.get());
            }
        });
        return new SessionStats(admission.queued(), running.size(), Map.copyOf(finished), tokensDelivered.get() + live,
                host.parts().device().busyFraction(), (long) running.size() * config.memoryPerRequest());
    }

    /** Stops admission and cancels everything live; returns without waiting. */
    void shutdown() {
        List<RequestRun> live = admission.close();
        for (RequestRun request : live) {
            request.terminate(Status.CANCELLED, null);
        }
        if (admission.drainedAtClose()) {
            completeDrain();
        }
    }

    @Override
    public void close() {
        shutdown();
        if (host.parts().isOwnThread()) {
            return; // never wait on ourselves: the last request to drain completes the close
        }
        drained.join();
    }

    @Override
    public List<Long> close(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        shutdown();
        if (!host.parts().isOwnThread()) {
            awaitBounded(drained, timeout);
        }
        return drained.isDone() ? List.of() : unfinished.stream().map(RequestRun::id).sorted().toList();
    }

    /** Waits for {@code future} at most {@code timeout}; keeps an interrupt for the caller. */
    static void awaitBounded(CompletableFuture<?> future, Duration timeout) {
        try {
            future.get(Math.max(0, timeout.toNanos()), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            // reported by the caller as what is still running
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException e) {
            throw new IllegalStateException("the drain failed", e.getCause());
        }
    }

    @Override
    public String toString() {
        return "Session[" + config + "]";
    }
}
