package dev.tandem.cluster;

import dev.tandem.AdmissionRejectedException;
import dev.tandem.cluster.WorkerProtocol.Load;
import dev.tandem.llm.Completion;
import dev.tandem.llm.GenerateOptions;
import dev.tandem.llm.LanguageModel;
import dev.tandem.llm.ModelFingerprint;
import dev.tandem.server.Engine;
import dev.tandem.server.EngineStats;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.stream.Materializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link Engine} of a gateway: each request runs on a worker of the cluster, and its
 * {@link Completion} reads a {@link RemoteTokenStream} that resumes it on another worker when
 * its worker is lost. The model is the gateway's own copy, used for its tokenizer, chat template
 * and context only; nothing is generated here.
 *
 * <p>{@link #submit} never blocks (the server calls it under its drain monitor): it decides from
 * the workers' last load reports and returns at once; the request is offered to the workers, in
 * {@link Routing}'s order, by the completion's reader on its first read. With no eligible worker
 * it is {@code CLOSED} (503). When every eligible worker reports itself full, the request waits
 * at the gateway for one to take it, at most {@code maxWaiting} requests at a time and each for
 * at most {@code admissionTimeout}; beyond that bound it is {@code QUEUE_FULL} (429).
 *
 * <p><b>Several models.</b> The engine the server is given is the gateway's own model's (the
 * one a request without {@code model} gets). Each other model the cluster's workers serve has an
 * engine of its own, made by {@link #models()} once the model's text is read: from the path its
 * first worker announced in its {@link Load} (the nodes share one machine or filesystem), on a
 * virtual thread as that worker arrives. A model is a name and a file ({@link WorkerDirectory}:
 * a name stands for one file at a time); each engine is one file's, and routes only among the
 * workers of that file (admission, affinity, failover), so that a stream never goes on from
 * another file's weights. All share the gateway's directory, counters, waiting places and
 * requests in flight, so closing one closes them all.
 *
 * <p><b>While a model's text is read</b> (from its first worker's arrival until the read is
 * done: a tokenizer of a large vocabulary takes a moment), {@link #models()} leaves the model
 * out and {@link #pendingModel} gives the read's future: the server waits for it a few seconds,
 * then answers 503 with {@code Retry-After}, never 404, for a model a worker serves.
 */
public final class ClusterEngine implements Engine {
    private static final Logger log = LoggerFactory.getLogger(ClusterEngine.class);

    private final LanguageModel model;
    /** The {@link ModelFingerprint} of the file this engine's workers serve. */
    private final String fingerprint;
    private final WorkerDirectory directory;
    private final ActorSystem<?> system;
    private final Materializer materializer;
    private final Settings settings;
    private final AtomicLong ids;
    private final AtomicBoolean closed;
    private final Set<RemoteTokenStream> inFlight;
    final ClusterStats stats;
    private final AtomicInteger waiting;
    /** The gateway's own model's engine (this one, or the one that made it). */
    private final ClusterEngine own;
    /** The other models' engines by {@link #key}, each complete once its text is read; shared by all. */
    private final Map<String, CompletableFuture<ClusterEngine>> others;

    /**
     * How a gateway forwards and resumes.
     *
     * @param askTimeout       how long a worker may take to answer an admission
     * @param admissionTimeout how long a new request may wait at the gateway for a worker
     * @param maxWaiting       how many requests may wait at the gateway while every worker is full
     * @param resumeTimeout    how long a lost request may look for a worker that takes it
     * @param maxResumes       how many times one request may be resumed
     */
    record Settings(Duration askTimeout, Duration admissionTimeout, int maxWaiting, Duration resumeTimeout,
            int maxResumes) {
        static Settings defaults() {
            return new Settings(Duration.ofSeconds(5), Duration.ofSeconds(30), 64, Duration.ofSeconds(30), 4);
        }

        Settings withMaxWaiting(int value) {
            return new Settings(askTimeout, admissionTimeout, value, resumeTimeout, maxResumes);
        }
    }

    /**
     * The gateway's own engine.
     *
     * @param model       the gateway's own model (its text)
     * @param fingerprint the {@link ModelFingerprint} of the file it was read from: this engine
     *                    routes to the workers of that file only
     */
    ClusterEngine(LanguageModel model, String fingerprint, WorkerDirectory directory, ActorSystem<?> system,
            Settings settings) {
        this.model = model;
        this.fingerprint = java.util.Objects.requireNonNull(fingerprint, "fingerprint");
        this.directory = directory;
        this.system = system;
        this.materializer = Materializer.createMaterializer(system);
        this.settings = settings;
        this.ids = new AtomicLong();
        this.closed = new AtomicBoolean();
        this.inFlight = ConcurrentHashMap.newKeySet();
        this.stats = new ClusterStats();
        this.waiting = new AtomicInteger();
        this.own = this;
        this.others = new ConcurrentHashMap<>();
        // A model's text is read as its first worker arrives (again after a failed read).
        directory.onArrival(load -> {
            if (!isOwn(load)) {
                others.compute(key(load), (k, f) -> f == null || f.isCompletedExceptionally() ? readText(load) : f);
            }
        });
    }

    /** The engine of another model, {@code model} of file {@code fingerprint}, sharing everything else with {@code own}. */
    private ClusterEngine(LanguageModel model, String fingerprint, ClusterEngine own) {
        this.model = model;
        this.fingerprint = fingerprint;
        this.directory = own.directory;
        this.system = own.system;
        this.materializer = own.materializer;
        this.settings = own.settings;
        this.ids = own.ids;
        this.closed = own.closed;
        this.inFlight = own.inFlight;
        this.stats = own.stats;
        this.waiting = own.waiting;
        this.own = own;
        this.others = own.others;
    }

    @Override
    public LanguageModel model() {
        return model;
    }

    /** The {@link ModelFingerprint} of the file this engine's workers serve. */
    String fingerprint() {
        return fingerprint;
    }

    /**
     * The models the cluster's workers serve now, each with its engine: the gateway's own model
     * while a worker serves it, and every other model whose text has been read (a model whose
     * text is still being read, or could not be, is left out: {@link #pendingModel}). A name
     * gives the engine of the file it stands for ({@link WorkerDirectory}).
     */
    @Override
    public Map<String, ClusterEngine> models() {
        Map<String, ClusterEngine> out = new TreeMap<>();
        directory.models().forEach((name, load) -> {
            CompletableFuture<ClusterEngine> engine = engine(load);
            if (engine.isDone() && !engine.isCompletedExceptionally()) {
                out.put(name, engine.join());
            }
        });
        return out;
    }

    /**
     * The engine of a model a worker serves now whose text is still being read (or could not be
     * read): the read's future, which the server waits on a while rather than answer 404; null
     * when no eligible worker serves a model of that name.
     */
    @Override
    public CompletableFuture<ClusterEngine> pendingModel(String name) {
        Load load = directory.models().get(name);
        return load == null ? null : engine(load);
    }

    /** The engine of another model by name, complete once its text is read; null before a worker of it was seen. */
    CompletableFuture<ClusterEngine> otherModel(String name) {
        String file = directory.standsFor(name);
        return file == null ? null : others.get(key(name, file));
    }

    /** The engine of the model {@code load} reports: the own one, or another's, its text read once. */
    private CompletableFuture<ClusterEngine> engine(Load load) {
        return isOwn(load) ? CompletableFuture.completedFuture(own)
                : others.computeIfAbsent(key(load), k -> readText(load));
    }

    private boolean isOwn(Load load) {
        return load.model().equals(own.model.name()) && load.fingerprint().equals(own.fingerprint);
    }

    private static String key(Load load) {
        return key(load.model(), load.fingerprint());
    }

    /** A model's key among the others: its name and its file's fingerprint. */
    private static String key(String name, String fingerprint) {
        return name + "@" + fingerprint;
    }

    /**
     * Reads the text of the model {@code load} reports from the path it names, on a virtual
     * thread: its engine, once read, if the file there has the worker's name and fingerprint
     * (a gateway on another filesystem might find another file at that path).
     */
    private CompletableFuture<ClusterEngine> readText(Load load) {
        String name = load.model();
        String path = load.modelPath();
        return CompletableFuture.supplyAsync(() -> {
            LanguageModel text = LanguageModel.loadText(Path.of(path));
            if (!text.name().equals(name)) {
                throw new IllegalStateException("the file names its model '" + text.name() + "'");
            }
            String file = ModelFingerprint.of(Path.of(path));
            if (!file.equals(load.fingerprint())) {
                throw new IllegalStateException("the file there is another one than the worker's (fingerprint " + file
                        + ", the worker's " + load.fingerprint() + ")");
            }
            log.info("model {} ready: its tokenizer and template read from {} (fingerprint {})", name, path, file);
            return new ClusterEngine(text, file, own);
        }, task -> Thread.ofVirtual().name("tandem-model-text").start(task)).whenComplete((engine, failure) -> {
            if (failure != null) {
                log.warn("model {} is not served here: its text cannot be read from {}: {}", name, path,
                        failure instanceof java.util.concurrent.CompletionException c ? c.getCause() : failure);
            }
        });
    }

    @Override
    public Completion submit(int[] prompt, GenerateOptions options, Duration deadline) {
        if (closed.get()) {
            throw new AdmissionRejectedException(AdmissionRejectedException.Reason.CLOSED, "the gateway is closing");
        }
        // What a worker could not be told, or a resumed stream could not continue exactly, is refused
        // here rather than dropped on the way.
        if (options.grammar() != null || options.logprobs() >= 0 || !options.sampler().logitBias().isEmpty()) {
            throw new UnsupportedOperationException("response_format, forced tool calls, logprobs and logit_bias are"
                    + " not served through the cluster yet");
        }
        if (prompt.length >= model.config().contextLength()) {
            throw new IllegalArgumentException("prompt of " + prompt.length + " tokens leaves no room in the context of "
                    + model.config().contextLength());
        }
        List<WorkerDirectory.Worker> eligible = directory.eligible(model.name(), fingerprint);
        if (eligible.isEmpty()) {
            throw new AdmissionRejectedException(AdmissionRejectedException.Reason.CLOSED,
                    "no reachable worker serves the model '" + model.name() + "'");
        }
        boolean reserved = false;
        if (eligible.stream().allMatch(w -> w.load().full())) {
            if (!reserveWaiting()) {
                throw new AdmissionRejectedException(AdmissionRejectedException.Reason.QUEUE_FULL, "every worker is full and "
                        + settings.maxWaiting() + " requests already wait at the gateway");
            }
            reserved = true;
        }
        RemoteTokenStream stream = new RemoteTokenStream(ids.incrementAndGet(), prompt, options, deadline, this,
                reserved);
        inFlight.add(stream);
        stream.completion().whenComplete((o, e) -> inFlight.remove(stream));
        return model.start(stream, prompt, options);
    }

    /**
     * The cluster's load as its workers last reported it (memory and cached blocks are not
     * reported: 0). The prompt-token counters are the sums over the workers reporting now, so
     * they drop when a worker leaves (a counter reset, to Prometheus).
     */
    @Override
    public EngineStats stats() {
        int active = 0;
        int queued = 0;
        int capacity = 0;
        long kvInUse = 0;
        long kvTotal = 0;
        long cached = 0;
        long computed = 0;
        for (Load load : directory.reports()) {
            cached += load.cachedPromptTokens();
            computed += load.computedPromptTokens();
            active += load.active();
            queued += load.queued();
            capacity += load.maxActive();
            kvInUse += load.kvInUse();
            kvTotal += load.kvTotal();
        }
        return new EngineStats(active, queued, capacity, kvInUse, kvTotal, 0, 0, cached, computed);
    }

    /** The gateway's routing, affinity and failover counters, on the server's {@code /metrics}. */
    @Override
    public void bindMeters(io.micrometer.core.instrument.MeterRegistry registry) {
        clusterStats().bindTo(registry);
    }

    /** Requests forwarded, resumed, and the time from a worker's loss to each resumed stream's next token. */
    public ClusterStats clusterStats() {
        return stats;
    }

    @Override
    public void close() {
        close(Duration.ZERO);
    }

    @Override
    public List<Long> close(Duration drain) {
        closed.set(true);
        long end = System.nanoTime() + drain.toNanos();
        for (RemoteTokenStream s : List.copyOf(inFlight)) {
            long left = end - System.nanoTime();
            if (left > 0) {
                try {
                    s.completion().get(left, java.util.concurrent.TimeUnit.NANOSECONDS);
                } catch (Exception e) {
                    // not drained in time: cancelled below
                }
            }
        }
        List<Long> left = new ArrayList<>();
        for (RemoteTokenStream s : List.copyOf(inFlight)) {
            if (!s.isDone()) {
                left.add(s.requestId());
                s.cancel();
            }
        }
        return left;
    }

    private boolean reserveWaiting() {
        while (true) {
            int n = waiting.get();
            if (n >= settings.maxWaiting()) {
                return false;
            }
            if (waiting.compareAndSet(n, n + 1)) {
                return true;
            }
        }
    }

    /** A request that waited at the gateway has been placed on a worker, or has ended. */
    void releaseWaiting() {
        waiting.decrementAndGet();
    }

    WorkerDirectory directory() {
        return directory;
    }

    ActorSystem<?> system() {
        return system;
    }

    Materializer materializer() {
        return materializer;
    }

    Settings settings() {
        return settings;
    }
}
