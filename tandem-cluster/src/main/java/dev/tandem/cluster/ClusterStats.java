package dev.tandem.cluster;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * A gateway's routing and failover counters, written by the readers of its requests' streams
 * and read by {@code /metrics} (once {@link #bindTo bound} to the server's registry) and by tests.
 *
 * <p>In Prometheus names (the registry adds {@code _total} and {@code _seconds}):
 * <ul>
 *   <li>{@code tandem_cluster_requests_routed_total{model,worker}}: admissions a worker accepted
 *       for a model (a request resumed there counts again, on its new worker; a gateway's requests
 *       of one model are the sum over its workers);</li>
 *   <li>{@code tandem_cluster_failovers_total{model,worker}}: streams of a model that lost that
 *       worker mid-stream;</li>
 *   <li>{@code tandem_cluster_streams_resumed_total{model}}: streams of a model whose next token
 *       came from another worker after a loss, and {@code tandem_cluster_resume_latency_seconds{model}}:
 *       the time from the loss (the failure detector's verdict, or the stream's failure) to that
 *       token;</li>
 *   <li>{@code tandem_cluster_affinity_total{placed="affine"|"other"}}: first admissions that went
 *       to the prompt's affine worker ({@link Routing}: the one whose prefix cache most likely
 *       holds the prompt's first block) or, it being saturated or refusing, to another; the
 *       affinity hit rate is {@code affine / (affine + other)}.</li>
 * </ul>
 * A worker is named by its cluster address ({@code pekko://tandem@host:port}); its counters stay
 * after it leaves. A model is named as requests name it; every counter of a stream carries its
 * model, so that a gateway serving several models says whose streams were routed, lost and
 * resumed (a model's failovers are the sum over its workers).
 */
public final class ClusterStats {
    /** By model and worker: {@link #key}. */
    private final Map<String, LongAdder> routed = new ConcurrentHashMap<>();
    /** By model and worker: {@link #key}. */
    private final Map<String, LongAdder> failovers = new ConcurrentHashMap<>();
    /** By model. */
    private final Map<String, LongAdder> resumed = new ConcurrentHashMap<>();
    private final AtomicLong forwarded = new AtomicLong();
    private final LongAdder affine = new LongAdder();
    private final LongAdder other = new LongAdder();
    private final List<Long> resumeNanos = new ArrayList<>();
    /** Resume latencies not yet recorded in a timer (no registry bound), by model. */
    private final Map<String, List<Long>> unrecorded = new java.util.HashMap<>();
    /** The registry bound, or null; its meters are registered under this object's lock. */
    private MeterRegistry registry;
    /** By model, once a registry is bound. */
    private final Map<String, Timer> resumeTimers = new java.util.HashMap<>();

    /** An admission was sent to a worker (whatever its answer). */
    void forwarded() {
        forwarded.incrementAndGet();
    }

    /**
     * {@code worker} accepted a request for {@code model}; {@code affinity}: a first admission, on
     * its affine worker or not (null: a resumption).
     */
    void routed(String model, String worker, Boolean affinity) {
        counter(routed, key(model, worker), "tandem.cluster.requests.routed", "Admissions a worker accepted")
                .increment();
        if (affinity != null) {
            (affinity ? affine : other).increment();
        }
    }

    /** A stream of {@code model} lost {@code worker} mid-stream. */
    void failover(String model, String worker) {
        counter(failovers, key(model, worker), "tandem.cluster.failovers", "Streams that lost their worker")
                .increment();
    }

    /** A stream of {@code model}'s next token arrived {@code nanos} after its worker was found lost. */
    void resumed(String model, long nanos) {
        counter(resumed, model, "tandem.cluster.streams.resumed", "Streams that went on on another worker after a loss")
                .increment();
        Timer timer;
        synchronized (this) {
            resumeNanos.add(nanos);
            timer = registry == null ? null : resumeTimers.computeIfAbsent(model, m -> resumeTimer(registry, m));
            if (timer == null) {
                unrecorded.computeIfAbsent(model, m -> new ArrayList<>()).add(nanos);
            }
        }
        if (timer != null) {
            timer.record(Duration.ofNanos(nanos));
        }
    }

    /** A counter's key by model and worker, as {@link #register} reads it (a key without a line break is a model alone). */
    private static String key(String model, String worker) {
        return model + "\n" + worker;
    }

    private LongAdder counter(Map<String, LongAdder> counters, String key, String name, String description) {
        LongAdder counter = counters.get(key);
        if (counter != null) {
            return counter;
        }
        synchronized (this) {
            return counters.computeIfAbsent(key, w -> {
                LongAdder created = new LongAdder();
                if (registry != null) {
                    register(registry, name, description, w, created);
                }
                return created;
            });
        }
    }

    private static void register(MeterRegistry registry, String name, String description, String key,
            LongAdder counter) {
        FunctionCounter.Builder<LongAdder> builder = FunctionCounter.builder(name, counter, LongAdder::sum)
                .description(description);
        int split = key.indexOf('\n');
        if (split < 0) {
            builder.tag("model", key);
        } else {
            builder.tag("model", key.substring(0, split)).tag("worker", key.substring(split + 1));
        }
        builder.register(registry);
    }

    private static Timer resumeTimer(MeterRegistry registry, String model) {
        return Timer.builder("tandem.cluster.resume.latency").tag("model", model)
                .description("From a worker's loss to the resumed stream's next token")
                .serviceLevelObjectives(Duration.ofMillis(100), Duration.ofMillis(250), Duration.ofMillis(500),
                        Duration.ofSeconds(1), Duration.ofSeconds(2), Duration.ofSeconds(3), Duration.ofSeconds(5),
                        Duration.ofSeconds(10))
                .register(registry);
    }

    /**
     * Publishes these counters in {@code registry} (the gateway server's, so that {@code /metrics}
     * shows them); workers seen later are added as they come. Once only.
     */
    synchronized void bindTo(MeterRegistry registry) {
        if (this.registry != null) {
            throw new IllegalStateException("already bound");
        }
        this.registry = registry;
        routed.forEach((w, c) -> register(registry, "tandem.cluster.requests.routed", "Admissions a worker accepted", w, c));
        failovers.forEach((w, c) -> register(registry, "tandem.cluster.failovers", "Streams that lost their worker", w, c));
        resumed.forEach((m, c) -> register(registry, "tandem.cluster.streams.resumed",
                "Streams that went on on another worker after a loss", m, c));
        FunctionCounter.builder("tandem.cluster.affinity", affine, LongAdder::sum).tag("placed", "affine")
                .description("First admissions on the prompt's affine worker, or on another").register(registry);
        FunctionCounter.builder("tandem.cluster.affinity", other, LongAdder::sum).tag("placed", "other")
                .description("First admissions on the prompt's affine worker, or on another").register(registry);
        unrecorded.forEach((model, latencies) -> {
            Timer timer = resumeTimers.computeIfAbsent(model, m -> resumeTimer(registry, m));
            latencies.forEach(nanos -> timer.record(Duration.ofNanos(nanos)));
        });
        unrecorded.clear();
    }

    /** Admissions sent to workers (a resumed request counts again). */
    public long forwardedCount() {
        return forwarded.get();
    }

    /** Streams that went on after their worker was lost. */
    public long resumedCount() {
        return resumed.values().stream().mapToLong(LongAdder::sum).sum();
    }

    /** Streams that went on after their worker was lost, by model. */
    public Map<String, Long> resumedByModel() {
        return snapshot(resumed);
    }

    /** For each resumed stream, nanoseconds from the loss of its worker to its next token. */
    public synchronized List<Long> resumeNanos() {
        return new ArrayList<>(resumeNanos);
    }

    /** Accepted admissions by worker address. */
    public Map<String, Long> routedByWorker() {
        return sums(routed, key -> key.substring(key.indexOf('\n') + 1));
    }

    /** Accepted admissions by model. */
    public Map<String, Long> routedByModel() {
        return sums(routed, key -> key.substring(0, key.indexOf('\n')));
    }

    /** Streams lost mid-stream, by the address of the worker they lost. */
    public Map<String, Long> failoversByWorker() {
        return sums(failovers, key -> key.substring(key.indexOf('\n') + 1));
    }

    /** Streams lost mid-stream, by their model. */
    public Map<String, Long> failoversByModel() {
        return sums(failovers, key -> key.substring(0, key.indexOf('\n')));
    }

    /** First admissions placed on the prompt's affine worker. */
    public long affinityHits() {
        return affine.sum();
    }

    /** First admissions placed on another worker than the prompt's affine one. */
    public long affinityMisses() {
        return other.sum();
    }

    private static Map<String, Long> snapshot(Map<String, LongAdder> counters) {
        return sums(counters, key -> key);
    }

    /** The counters summed by a part of their keys. */
    private static Map<String, Long> sums(Map<String, LongAdder> counters,
            java.util.function.UnaryOperator<String> part) {
        Map<String, Long> out = new java.util.TreeMap<>();
        counters.forEach((k, c) -> out.merge(part.apply(k), c.sum(), Long::sum));
        return out;
    }
}
