package dev.tandem;

import dev.tandem.session.FeedRun;
import dev.tandem.session.WorkerRuntime;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * Owns one device and the buffers shared by its requests, and runs requests on it.
 *
 * <pre>{@code
 * try (Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
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
    // The lifecycle (device, shared buffers, live requests, sessions, feeds, shutdown) is the
    // runtime's, in dev.tandem.session; this class is the API's face of it and checks arguments.
    private final WorkerRuntime runtime;

    private Worker(Builder builder) {
        this.runtime = new WorkerRuntime(builder.device, builder.policy, builder.trace);
    }

    /** A worker on {@code device} with the default policy and tracing off. */
    public static Worker create(CpuDeviceConfig device) {
        return builder().device(device).build();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Configuration of a {@link Worker}. */
    public static final class Builder {
        private CpuDeviceConfig device = CpuDeviceConfig.defaults();
        private SchedulingPolicy policy = SchedulingPolicy.FIRST_TOKEN_FIRST;
        private TraceConfig trace;

        private Builder() {}

        public Builder device(CpuDeviceConfig device) {
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

    public CpuDeviceConfig device() {
        return runtime.device();
    }

    /** The worker's name, the prefix of its threads' names (e.g. {@code tandem-3}). */
    public String name() {
        return runtime.name();
    }

    /**
     * Allocates worker-scoped device memory for the host to fill through
     * {@link Buffer#hostSegment()}; {@link Buffer#freeze() freeze} it before requests read it.
     */
    public Buffer allocate(long bytes) {
        return runtime.allocate(bytes);
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
        return runtime.run(program, input, options);
    }

    /** Runs one request with the default options. */
    public <I> TokenStream run(Program<I> program, I input) {
        return run(program, input, RunOptions.defaults());
    }

    /**
     * Opens a session of {@code program}: bounded admission, a concurrency limit and streams.
     * Several sessions may share this worker and its device.
     */
    public <I> Session<I> openSession(Program<I> program, SessionConfig config) {
        Objects.requireNonNull(program, "program");
        Objects.requireNonNull(config, "config");
        return runtime.openSession(program, config);
    }

    /** A feed of this worker, for {@link TokenFeed.Builder#build()}. */
    FeedRun openFeed(String feedName, Duration deadline, Runnable onChange) {
        return runtime.openFeed(feedName, deadline, onChange);
    }

    /** Feeds whose producer has not released them. */
    public int liveFeeds() {
        return runtime.liveFeeds();
    }

    /** Bytes of device memory in use by worker, request and step buffers. */
    public long memoryInUse() {
        return runtime.memoryInUse();
    }

    /** Requests that have not finished draining. */
    public int liveRequests() {
        return runtime.liveRequests();
    }

    /**
     * The worker's virtual threads that have not ended: request programs, step delivery,
     * stream subscribers and request teardown (not its cores, timer or trace writer). Empty
     * once the worker has terminated and they have returned; a leak check.
     */
    public Set<Thread> runtimeThreads() {
        return runtime.runtimeThreads();
    }

    /** Total time the cores spent running tasks, in nanoseconds. */
    public long deviceBusyNanos() {
        return runtime.deviceBusyNanos();
    }

    /**
     * Total time request programs spent building steps, in nanoseconds: per step, from its
     * first call to the orchestrator ({@code allocateStep}, {@code submit}, {@code upload}) to its
     * {@code endStep}, waits at the step's bound on tasks in flight included, the run-ahead and
     * stream-buffer waits after it not. Over the steps built, the host's cost per step, which
     * the device overlaps with its own work only while the host stays ahead of it.
     */
    public long hostBuildNanos() {
        return runtime.hostBuildNanos();
    }

    /**
     * Everything traced so far, by start time; empty when tracing is off or when the trace
     * streams to a file without retaining its events ({@link TraceConfig#retainEvents()}).
     */
    public List<TraceEvent> traceEvents() {
        return runtime.traceEvents();
    }

    public boolean isTracing() {
        return runtime.isTracing();
    }

    /** Completes when the worker has shut down: every request drained, cores stopped, memory freed. */
    public CompletableFuture<Void> terminated() {
        return runtime.terminated();
    }

    @Override
    public void close() {
        runtime.close();
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
        return runtime.close(timeout);
    }
}
