package dev.tandem.session;

import dev.tandem.Buffer;
import dev.tandem.CpuDeviceConfig;
import dev.tandem.Program;
import dev.tandem.RunOptions;
import dev.tandem.SchedulingPolicy;
import dev.tandem.Session;
import dev.tandem.SessionConfig;
import dev.tandem.Status;
import dev.tandem.TokenStream;
import dev.tandem.TraceConfig;
import dev.tandem.TraceEvent;
import dev.tandem.device.Device;
import dev.tandem.device.DeviceBuffer;
import dev.tandem.device.DeviceMemory;
import dev.tandem.trace.DeviceProbe;
import dev.tandem.trace.PerfettoTraceWriter;
import dev.tandem.trace.TraceRecorder;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The runtime behind one {@code dev.tandem.Worker}: it owns the device, the worker-scoped
 * buffers, the live requests, sessions and feeds, and shuts them down in order. The public
 * face, its contract and its threads' rules are {@code Worker}'s; this class is what runs them.
 *
 * <p>Implementation Overview.
 *
 * <p><b>Parts.</b> The constructor opens the trace file (if any) before the cores start, so a
 * file that cannot be opened leaves nothing running; then it starts the cores
 * ({@link Device#cpu}), the registry of the worker's virtual threads ({@link RuntimeThreads})
 * and the trace writer. The deadline timer is made on first use. Sessions reach the runtime
 * through the package-private methods below (ids, timer, request registration), requests and
 * feeds through the completion callbacks they were made with.
 *
 * <p><b>Shutdown.</b> {@code closed} flips once ({@link #beginClose}): admission stops, every
 * session shuts down, every live request and feed is cancelled. Whoever sees
 * {@code closed && live.isEmpty()} last — the closer, or the last request to finish — runs
 * {@link #shutDown} exactly once ({@code shutDown} CAS): cores stop, the timer stops, shared
 * buffers are freed, the trace is flushed, {@link #terminated()} completes. A closer on one
 * of the worker's own threads never waits (it would wait on itself).
 *
 * <p>Declaration order: construction, the request paths ({@code run}, sessions, feeds, what
 * sessions call back), the gauges, then close and shutdown.
 */
public final class WorkerRuntime {
    /** The category {@code dev.tandem.Worker} logged in before the runtime moved here, so configurations still apply. */
    private static final Logger log = LoggerFactory.getLogger("dev.tandem.Worker");
    private static final AtomicInteger WORKER_IDS = new AtomicInteger();

    private final String name;
    private final CpuDeviceConfig deviceConfig;
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
    private final Object timerLock = new Object();
    private volatile ScheduledThreadPoolExecutor timer;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final AtomicBoolean shutDown = new AtomicBoolean();
    private final CompletableFuture<Void> terminated = new CompletableFuture<>();

    /** Starts a worker's runtime on {@code device}; {@code traceConfig} null turns tracing off. */
    public WorkerRuntime(CpuDeviceConfig device, SchedulingPolicy policy, TraceConfig traceConfig) {
        int number = WORKER_IDS.incrementAndGet();
        this.name = "tandem-" + number;
        this.deviceConfig = device;
        this.policy = policy;
        this.trace = traceConfig == null ? null : new TraceRecorder(traceConfig.retainEvents(), traceConfig.jfr());
        // Opened before the cores start, so a file that cannot be opened leaves nothing running.
        this.traceWriter = traceConfig == null || traceConfig.file() == null ? null : new PerfettoTraceWriter(
                trace, new Probe(), traceConfig.file(), name, (number - 1) % 0xFFFF + 1,
                traceConfig.flushInterval().toNanos());
        this.cores = Device.cpu(deviceConfig, trace, name);
        this.memory = cores.memory();
        this.threads = new RuntimeThreads(name);
        this.parts = new DeviceParts(cores, trace, threads, new LongAdder());
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

    public CpuDeviceConfig device() {
        return deviceConfig;
    }

    public String name() {
        return name;
    }

    /** Worker-scoped device memory, freed at shutdown; see {@code Worker.allocate}. */
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

    /** One request outside any session, started at once on its own virtual thread. */
    public <I> TokenStream run(Program<I> program, I input, RunOptions options) {
        ensureOpen();
        RequestRun request = new RequestRun(nextRequestId(), program, input, RequestSpec.of(options, policy), parts,
                released -> {}, this::finished);
        live.add(request);
        if (closed.get()) {
            // Lost a race with close(): end it before it starts.
            request.terminate(Status.CANCELLED, null);
        }
        request.start();
        return request.stream();
    }

    public <I> Session<I> openSession(Program<I> program, SessionConfig config) {
        ensureOpen();
        SessionImpl<I> session = new SessionImpl<>(this, program, config);
        sessions.add(session);
        if (closed.get()) {
            session.shutdown();
        }
        return session;
    }

    /** A feed of this worker; a {@code deadline} of null means none. */
    public FeedRun openFeed(String feedName, Duration deadline, Runnable onChange) {
        ensureOpen();
        FeedRun feed = new FeedRun(nextRequestId(), feedName, threads, onChange, feeds::remove);
        feeds.add(feed);
        if (deadline != null) {
            feed.armDeadline(timer(), deadline);
        }
        if (closed.get()) {
            feed.terminate(Status.CANCELLED, null);
        }
        return feed;
    }

    /** What every request of this worker shares. */
    DeviceParts parts() {
        return parts;
    }

    /** A fresh id, unique in the worker, for a request or a feed. */
    long nextRequestId() {
        return requestIds.incrementAndGet();
    }

    /** The worker's deadline timer, made on first use. */
    ScheduledExecutorService timer() {
        ScheduledThreadPoolExecutor t = timer;
        if (t == null) {
            synchronized (timerLock) {
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

    /** A session created {@code request}; the worker tracks it until it finishes. */
    void register(RequestRun request) {
        live.add(request);
    }

    /** {@code request} finished: its memory is free, so a queued request may fit now. */
    void finished(RequestRun request) {
        live.remove(request);
        for (SessionImpl<?> session : sessions) {
            session.admit();
        }
        if (closed.get() && live.isEmpty()) {
            shutDown();
        }
    }

    /** {@code session} closed and drained. */
    void sessionClosed(SessionImpl<?> session) {
        sessions.remove(session);
    }

    public int liveFeeds() {
        return feeds.size();
    }

    public long memoryInUse() {
        return memory.inUse();
    }

    public int liveRequests() {
        return live.size();
    }

    public Set<Thread> runtimeThreads() {
        return threads.live();
    }

    public long deviceBusyNanos() {
        return cores.busyNanos();
    }

    public long hostBuildNanos() {
        return parts.buildNanos().sum();
    }

    public List<TraceEvent> traceEvents() {
        return trace == null ? List.of() : trace.events();
    }

    public boolean isTracing() {
        return trace != null;
    }

    public CompletableFuture<Void> terminated() {
        return terminated.copy();
    }

    private void ensureOpen() {
        if (closed.get()) {
            throw new IllegalStateException(name + " is closed");
        }
    }

    /** Cancels what runs and waits for the shutdown, unless called on one of the worker's own threads. */
    public void close() {
        beginClose();
        if (parts.isOwnThread()) {
            return; // never wait on ourselves; the last request to drain shuts down
        }
        terminated.join();
    }

    /**
     * Closes as {@link #close()} does, waiting at most {@code timeout}.
     *
     * @return the ids of the requests that had not drained, ascending; empty once terminated
     */
    public List<Long> close(Duration timeout) {
        beginClose();
        if (!parts.isOwnThread()) {
            try {
                SessionImpl.awaitBounded(terminated, timeout);
            } catch (IllegalStateException e) {
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
