package dev.tandem;

import dev.tandem.device.Device;
import dev.tandem.device.DeviceBuffer;
import dev.tandem.device.DeviceMemory;
import dev.tandem.session.DeviceParts;
import dev.tandem.session.FeedRun;
import dev.tandem.session.RequestHost;
import dev.tandem.session.RequestRun;
import dev.tandem.session.RequestSpec;
import dev.tandem.session.RuntimeThreads;
import dev.tandem.session.SessionImpl;
import dev.tandem.trace.DeviceProbe;
import dev.tandem.trace.PerfettoTraceWriter;
import dev.tandem.trace.TraceRecorder;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Owns one device and the buffers shared by its requests, and runs requests on it.
 *
 * <pre>{@code
 * try (Worker worker = Worker.create(CpuDevice.withCores(2))) {
 *     TokenStream stream = worker.run(program, input, RunOptions.defaults());
 *     for (Token token : stream) { ... }
 * }
 * }</pre>
 *
 * <p>Thread-safe. {@link #close()} cancels what still runs and waits until every request has
 * drained, except when called from one of the worker's own threads (a core running a kernel,
 * a request's program, a delivery thread running {@code stopWhen}, a subscriber, a teardown
 * running {@code completion()} dependents), where it never waits on itself: the last request
 * to drain then finishes the shutdown. {@link #close(Duration)} waits at most its timeout and
 * says what had not drained. User code never runs on a core except kernels and the
 * scheduling policy's {@code lane}.
 */
public final class Worker implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Worker.class);
    private static final AtomicInteger WORKER_IDS = new AtomicInteger();

    private final String name;
    private final CpuDevice deviceConfig;
    private final SchedulingPolicy policy;
    private final DeviceMemory memory;
    private final TraceRecorder trace;
    private final PerfettoTraceWriter traceWriter;
    private final Device cores;
    private final DeviceParts parts;
    private final RuntimeThreads threads;
    private final Arena sharedArena = Arena.ofShared();
    private final List<DeviceBuffer> sharedBuffers = new ArrayList<>();
    private long sharedBytes;
    private final AtomicLong requestIds = new AtomicLong();
    private final Set<RequestRun> live = ConcurrentHashMap.newKeySet();
    private final Set<SessionImpl<?>> sessions = ConcurrentHashMap.newKeySet();
    private final Set<FeedRun> feeds = ConcurrentHashMap.newKeySet();
    private final Host host = new Host();
    private volatile ScheduledThreadPoolExecutor timer;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final AtomicBoolean shutDown = new AtomicBoolean();
    private final CompletableFuture<Void> terminated = new CompletableFuture<>();

    private Worker(Builder builder) {
        int number = WORKER_IDS.incrementAndGet();
        this.name = "tandem-" + number;
        this.deviceConfig = builder.device;
        this.policy = builder.policy;
        TraceConfig traceConfig = builder.trace;
        this.trace = traceConfig == null ? null : new TraceRecorder(traceConfig.retainEvents(), traceConfig.jfr());
        // Opened before the cores start, so a file that cannot be opened leaves nothing running.
        this.traceWriter = traceConfig == null || traceConfig.file() == null ? null : new PerfettoTraceWriter(
                trace, new Probe(), traceConfig.file(), name, (number - 1) % 0xFFFF + 1,
                traceConfig.flushInterval().toNanos());
        this.cores = Device.cpu(deviceConfig, trace, name);
        this.memory = cores.memory();
        this.threads = new RuntimeThreads(name);
        this.parts = new DeviceParts(cores, trace, threads);
        if (traceWriter != null) {
            traceWriter.start();
        }
        log.debug("{} started: {} cores, {} bytes of device memory, policy {}, trace {}", name,
                deviceConfig.cores(), deviceConfig.memoryBudget(), policy, traceConfig);
    }

    /** What the trace writer samples; its thread starts after the cores exist. */
    private final class Probe implements DeviceProbe {
        @Override
        public int coreCount() {
            return deviceConfig.cores();
        }

        @Override
        public boolean coreParked(int index) {
            return cores.isIdle(index);
        }

        @Override
        public long readyTasks() {
            return cores.queuedTasks();
        }

        @Override
        public long bytesInUse() {
            return memory.inUse();
        }
    }

    /** A worker on {@code device} with the default policy and tracing off. */
    public static Worker create(CpuDevice device) {
        return builder().device(device).build();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Configuration of a {@link Worker}. */
    public static final class Builder {
        private CpuDevice device = CpuDevice.defaults();
        private SchedulingPolicy policy = SchedulingPolicy.FIRST_TOKEN_FIRST;
        private TraceConfig trace;

        private Builder() {}

        public Builder device(CpuDevice device) {
            this.device = Objects.requireNonNull(device, "device");
            return this;
        }

        public Builder policy(SchedulingPolicy policy) {
            this.policy = Objects.requireNonNull(policy, "policy");
            return this;
        }

        /** Records a trace of everything the worker does, in memory (off by default). */
        public Builder tracing(boolean on) {
            this.trace = on ? TraceConfig.inMemory() : null;
            return this;
        }

        /** Records a trace as {@code config} says; null turns tracing off. */
        public Builder trace(TraceConfig config) {
            this.trace = config;
            return this;
        }

        public Worker build() {
            return new Worker(this);
        }
    }

    public CpuDevice device() {
        return deviceConfig;
    }

    /** The worker's name, the prefix of its threads' names (e.g. {@code tandem-3}). */
    public String name() {
        return name;
    }

    /**
     * Allocates worker-scoped device memory for the host to fill through
     * {@link Buffer#hostSegment()}; {@link Buffer#freeze() freeze} it before requests read it.
     */
    public synchronized Buffer allocate(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("allocate of a negative size " + bytes);
        }
        ensureOpen();
        memory.reserve(bytes, name + " worker buffer");
        sharedBytes += bytes;
        MemorySegment segment = cores.allocateLongLived(sharedArena, bytes, 64);
        DeviceBuffer buffer = new DeviceBuffer("w/b" + sharedBuffers.size(), segment, Buffer.Scope.WORKER, null, null);
        sharedBuffers.add(buffer);
        return buffer;
    }

    /**
     * Runs one request of {@code program} on its own virtual thread.
     *
     * @return the request's stream, at once
     * @throws IllegalStateException if the worker is closed
     */
    public <I> TokenStream run(Program<I> program, I input, RunOptions options) {
        Objects.requireNonNull(program, "program");
        Objects.requireNonNull(options, "options");
        ensureOpen();
        long id = requestIds.incrementAndGet();
        RequestRun request = new RequestRun(id, program, input, RequestSpec.of(options, policy), parts,
                released -> {}, this::requestFinished);
        live.add(request);
        if (closed.get()) {
            // Lost a race with close(): end it before it starts.
            request.terminate(Status.CANCELLED, null);
        }
        request.start();
        return request.stream();
    }

    /**
     * Opens a session of {@code program}: bounded admission, a concurrency limit and streams.
     * Several sessions may share this worker and its device.
     */
    public <I> Session<I> openSession(Program<I> program, SessionConfig config) {
        Objects.requireNonNull(program, "program");
        Objects.requireNonNull(config, "config");
        ensureOpen();
        SessionImpl<I> session = new SessionImpl<>(host, program, config);
        sessions.add(session);
        if (closed.get()) {
            session.shutdown();
        }
        return session;
    }

    /** A feed of this worker, for {@link TokenFeed.Builder#build()}. */
    FeedRun openFeed(String feedName, Duration deadline, Runnable onChange) {
        ensureOpen();
        FeedRun feed = new FeedRun(requestIds.incrementAndGet(), feedName,
                threads, onChange, feeds::remove);
        feeds.add(feed);
        if (deadline != null) {
            feed.armDeadline(host.timer(), deadline);
        }
        if (closed.get()) {
            feed.terminate(Status.CANCELLED, null);
        }
        return feed;
    }

    /** Feeds whose producer has not released them. */
    public int liveFeeds() {
        return feeds.size();
    }

    /** Runs one request with the default options. */
    public <I> TokenStream run(Program<I> program, I input) {
        return run(program, input, RunOptions.defaults());
    }

    private void requestFinished(RequestRun request) {
        live.remove(request);
        for (SessionImpl<?> session : sessions) {
            session.admit(); // its memory is free: a queued request may fit now
        }
        if (closed.get() && live.isEmpty()) {
            shutDown();
        }
    }

    /** The worker as the sessions see it. */
    private final class Host implements RequestHost {
        @Override
        public DeviceParts device() {
            return parts;
        }

        @Override
        public long nextRequestId() {
            return requestIds.incrementAndGet();
        }

        @Override
        public ScheduledExecutorService timer() {
            ScheduledThreadPoolExecutor t = timer;
            if (t == null) {
                synchronized (this) {
                    t = timer;
                    if (t == null) {
                        t = new ScheduledThreadPoolExecutor(1, runnable -> Thread.ofPlatform()
                                .name(name + "-deadlines").daemon(true).unstarted(runnable));
                        t.setRemoveOnCancelPolicy(true);
                        timer = t;
                    }
                }
            }
            return t;
        }

        @Override
        public void register(RequestRun request) {
            live.add(request);
        }

        @Override
        public void finished(RequestRun request) {
            requestFinished(request);
        }

        @Override
        public void sessionClosed(SessionImpl<?> session) {
            sessions.remove(session);
        }
    }

    /** Bytes of device memory in use by worker, request and step buffers. */
    public long memoryInUse() {
        return memory.inUse();
    }

    /** Requests that have not finished draining. */
    public int liveRequests() {
        return live.size();
    }

    /**
     * The worker's virtual threads that have not ended: request programs, step delivery,
     * stream subscribers and request teardown (not its cores, timer or trace writer). Empty
     * once the worker has terminated and they have returned; a leak check.
     */
    public Set<Thread> runtimeThreads() {
        return threads.live();
    }

    /** Total time the cores spent running tasks, in nanoseconds. */
    public long deviceBusyNanos() {
        return cores.busyNanos();
    }

    /**
     * Everything traced so far, by start time; empty when tracing is off or when the trace
     * streams to a file without retaining its events ({@link TraceConfig#retainEvents()}).
     */
    public List<TraceEvent> traceEvents() {
        return trace == null ? List.of() : trace.events();
    }

    public boolean isTracing() {
        return trace != null;
    }

    /** Completes when the worker has shut down: every request drained, cores stopped, memory freed. */
    public CompletableFuture<Void> terminated() {
        return terminated.copy();
    }

    private void ensureOpen() {
        if (closed.get()) {
            throw new IllegalStateException(name + " is closed");
        }
    }

    @Override
    public void close() {
        beginClose();
        if (parts.isOwnThread()) {
            return; // never wait on ourselves; the last request to drain shuts down
        }
        terminated.join();
    }

    /**
     * Closes as {@link #close()} does, but waits at most {@code timeout} (not at all on one of
     * the worker's own threads). A program that ignores its interrupt keeps its request, and
     * the cores, alive until it returns; the worker shuts down then.
     *
     * @return the ids of the requests that had not drained when it returned, ascending; empty
     *         when the worker has terminated
     */
    public List<Long> close(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        beginClose();
        if (!parts.isOwnThread()) {
            try {
                terminated.get(Math.max(0, timeout.toNanos()), java.util.concurrent.TimeUnit.NANOSECONDS);
            } catch (java.util.concurrent.TimeoutException e) {
                // reported below
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (java.util.concurrent.ExecutionException e) {
                throw new IllegalStateException(name + ": shutdown failed", e.getCause());
            }
        }
        if (terminated.isDone()) {
            return List.of();
        }
        return live.stream().map(RequestRun::id).sorted().toList();
    }

    private void beginClose() {
        if (closed.compareAndSet(false, true)) {
            for (SessionImpl<?> session : sessions) {
                session.shutdown();
            }
            for (RequestRun request : live) {
                request.terminate(Status.CANCELLED, null);
            }
            for (FeedRun feed : feeds) {
                feed.terminate(Status.CANCELLED, null);
            }
            if (live.isEmpty()) {
                shutDown();
            }
        }
    }

    private void shutDown() {
        if (!shutDown.compareAndSet(false, true)) {
            return;
        }
        cores.close();
        ScheduledThreadPoolExecutor t = timer;
        if (t != null) {
            t.shutdownNow();
        }
        synchronized (this) {
            for (DeviceBuffer buffer : sharedBuffers) {
                buffer.markFreed();
            }
            sharedArena.close();
            memory.release(sharedBytes);
            sharedBytes = 0;
        }
        if (traceWriter != null) {
            traceWriter.close(); // every request has drained: the trace is complete
        }
        log.debug("{} shut down", name);
        terminated.complete(null);
    }
}
