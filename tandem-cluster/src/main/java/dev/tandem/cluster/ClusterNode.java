package dev.tandem.cluster;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.tandem.CpuDeviceConfig;
import dev.tandem.Worker;
import dev.tandem.llm.BatcherConfig;
import dev.tandem.llm.LanguageModel;
import dev.tandem.llm.ModelFingerprint;
import dev.tandem.llm.model.KvType;
import dev.tandem.server.BatcherEngine;
import dev.tandem.server.ServerConfig;
import dev.tandem.server.TandemServer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import org.apache.pekko.Done;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One node of a tandem cluster: an actor system named {@code tandem} that joins the seed nodes,
 * and, by role, a worker (a model in a continuous batcher, offered to the cluster) and a gateway
 * (the OpenAI HTTP API of {@link TandemServer} over a {@link ClusterEngine}).
 *
 * <p>Shutdown (SIGTERM, or {@link #close()}) runs Pekko's coordinated shutdown, whose first phase
 * drains this node: the gateway stops accepting (503) and lets its streams finish; the worker
 * says it is draining in its load (gateways route nothing more to it), refuses new admissions
 * and lets its running requests finish within the drain. Then the node leaves the cluster and
 * its actor system stops.
 */
public final class ClusterNode implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ClusterNode.class);

    /** What a node is. */
    public enum Role {
        WORKER, GATEWAY, BOTH;

        boolean worker() {
            return this != GATEWAY;
        }

        boolean gateway() {
            return this != WORKER;
        }
    }

    /**
     * How a node sizes its model, as {@code tandem serve} does: the context of every request and, on
     * a worker, its KV cache.
     *
     * @param contextSize the context length, at most the model's (0: the model's); a gateway admits
     *                    requests for its own model by it
     * @param kvCells     a worker's KV cache positions, all sequences together (0: {@code maxBatch}
     *                    full contexts, at most {@link BatcherConfig}'s byte cap)
     * @param kvType      a worker's KV cache element type
     */
    public record ModelSizing(int contextSize, int kvCells, KvType kvType) {

        /** The model's context, the batcher's default pool, an f16 cache. */
        public static final ModelSizing DEFAULTS = new ModelSizing(0, 0, KvType.F16);

        public ModelSizing {
            if (contextSize < 0 || kvCells < 0) {
                throw new IllegalArgumentException("context size and KV cells must be >= 0, were " + contextSize + " and "
                        + kvCells);
            }
            Objects.requireNonNull(kvType, "kvType");
        }

        /** {@code batcher} with its pool of {@link #kvCells} positions, where they are given, in blocks of {@code model}'s. */
        BatcherConfig pool(BatcherConfig batcher, LanguageModel model) {
            return kvCells == 0 ? batcher
                    : batcher.toBuilder().kvBlocks(Math.ceilDiv(kvCells, model.model().options().kvBlockSize())).build();
        }
    }

    /**
     * How to start a node.
     *
     * @param role             worker, gateway or both
     * @param clusterHost      the address the cluster transport binds and is reached at
     * @param clusterPort      its port (0 for any free one)
     * @param seeds            seed nodes as {@code host:port}; empty: this node alone (it joins itself)
     * @param model            the checkpoint (workers generate with it; a gateway uses its tokenizer for the
     *                         requests that name no model, and reads other models' from the paths their
     *                         workers announce)
     * @param server           the gateway's HTTP server configuration (unused by a worker)
     * @param batcher          the worker's batcher
     * @param cores            the worker's device cores
     * @param heartbeatInterval the failure detector's heartbeat interval
     * @param heartbeatPause   the silence the failure detector accepts before it calls a node unreachable
     * @param loadInterval     how often a worker reports its load
     * @param drain            how long a leaving node lets its streams finish
     * @param maxWaiting       gateway: requests that may wait for a worker while every worker is full
     * @param sizing           the node's model's context and a worker's KV cache
     */
    public record Options(Role role, String clusterHost, int clusterPort, List<String> seeds, Path model,
            ServerConfig server, BatcherConfig batcher, int cores, Duration heartbeatInterval, Duration heartbeatPause,
            Duration loadInterval, Duration drain, int maxWaiting, ModelSizing sizing) {

        /** With {@link ModelSizing#DEFAULTS}. */
        public Options(Role role, String clusterHost, int clusterPort, List<String> seeds, Path model,
                ServerConfig server, BatcherConfig batcher, int cores, Duration heartbeatInterval,
                Duration heartbeatPause, Duration loadInterval, Duration drain, int maxWaiting) {
            this(role, clusterHost, clusterPort, seeds, model, server, batcher, cores, heartbeatInterval, heartbeatPause,
                    loadInterval, drain, maxWaiting, ModelSizing.DEFAULTS);
        }

        public Options {
            Objects.requireNonNull(sizing, "sizing");
            Objects.requireNonNull(role, "role");
            Objects.requireNonNull(clusterHost, "clusterHost");
            if (clusterPort < 0 || clusterPort > 65535) {
                throw new IllegalArgumentException("the cluster port must be in [0, 65535], was " + clusterPort);
            }
            seeds = List.copyOf(seeds);
            for (String seed : seeds) {
                hostAndPort(seed);
            }
            Objects.requireNonNull(model, "model");
            if (cores < 1) {
                throw new IllegalArgumentException("cores must be >= 1, was " + cores);
            }
            if (!heartbeatInterval.isPositive() || !heartbeatPause.isPositive() || !loadInterval.isPositive()) {
                throw new IllegalArgumentException("heartbeat interval, heartbeat pause and load interval must be positive");
            }
            if (drain.isNegative()) {
                throw new IllegalArgumentException("the drain must not be negative, was " + drain);
            }
            if (maxWaiting < 0) {
                throw new IllegalArgumentException("max waiting must be >= 0, was " + maxWaiting);
            }
        }
    }

    private final ActorSystem<Void> system;
    private final Worker device;
    private final BatcherEngine engine;
    private final ClusterEngine gatewayEngine;
    private final TandemServer server;
    private final AtomicBoolean draining = new AtomicBoolean();
    private final Set<CompletableFuture<Void>> workerStreams = ConcurrentHashMap.newKeySet();

    private ClusterNode(Options options) {
        Worker device = null;
        BatcherEngine engine = null;
        ActorSystem<Void> system = null;
        try {
            // A gateway's HTTP server prepared beside the model's load and the actor system's start.
            CompletableFuture<Void> prepared = options.role().gateway() ? TandemServer.prepareAsync() : null;
            LanguageModel model = null;
            if (options.role().worker()) {
                device = Worker.create(CpuDeviceConfig.withCores(options.cores()));
                ModelSizing sizing = options.sizing();
                model = LanguageModel.load(device, options.model(), sizing.contextSize(), sizing.kvType());
                engine = BatcherEngine.start(device, model, sizing.pool(options.batcher(), model));
            }
            if (options.role().gateway() && model == null) {
                // its tokenizer, template and limits; no weights
                model = LanguageModel.loadText(options.model(), options.sizing().contextSize());
            }
            // With its name, the model's identity: two files of one name are two models (WorkerDirectory).
            String fingerprint = ModelFingerprint.of(options.model());
            WorkerDirectory directory = new WorkerDirectory(model.name(), fingerprint);
            BatcherEngine workerEngine = engine;
            String modelName = model.name();
            system = ActorSystem.create(Behaviors.setup(ctx -> {
                if (options.role().worker()) {
                    ctx.spawn(WorkerActor.create(workerEngine, modelName, options.model().toAbsolutePath().toString(),
                            fingerprint, options.batcher().maxQueued(), options.loadInterval(), draining, workerStreams),
                            "worker");
                }
                if (options.role().gateway()) {
                    ctx.spawn(GatewayActor.create(directory), "gateway");
                }
                return Behaviors.empty();
            }), "tandem", config(options));
            this.system = system;
            this.device = device;
            this.engine = engine;
            if (options.role().gateway()) {
                gatewayEngine = new ClusterEngine(model, fingerprint, directory, system,
                        ClusterEngine.Settings.defaults().withMaxWaiting(options.maxWaiting()));
                // /metrics shows the cluster's counters: ClusterEngine.bindMeters
                prepared.join();
                server = TandemServer.start(gatewayEngine, options.server());
            } else {
                gatewayEngine = null;
                server = null;
            }
        } catch (RuntimeException | Error e) {
            if (system != null) {
                system.terminate();
            }
            if (engine != null) {
                engine.close();
            }
            if (device != null) {
                device.close();
            }
            throw e;
        }
        CoordinatedShutdown.get(Adapter.toClassic(system)).addTask(CoordinatedShutdown.PhaseBeforeServiceUnbind(),
                "tandem-drain", () -> CompletableFuture.supplyAsync(() -> {
                    drain(options.drain());
                    return Done.getInstance();
                }, task -> Thread.ofVirtual().name("tandem-drain").start(task)));
        log.info("{} node at {} ({})", options.role().name().toLowerCase(java.util.Locale.ROOT), address(), String.join(",",
                options.seeds()));
    }

    /** Starts a node; it has joined (or is joining) the cluster when this returns. */
    public static ClusterNode start(Options options) {
        return new ClusterNode(options);
    }

    /** The node's cluster address, {@code pekko://tandem@host:port}. */
    public String address() {
        return system.address().toString();
    }

    /** The gateway's HTTP port, or -1 on a worker. */
    public int httpPort() {
        return server == null ? -1 : server.port();
    }

    /** The gateway's engine, or null on a worker. */
    ClusterEngine gatewayEngine() {
        return gatewayEngine;
    }

    /** The gateway's counters, or null on a worker. */
    /** A worker's engine (its model and batcher), null on a gateway. */
    BatcherEngine workerEngine() {
        return engine;
    }

    public ClusterStats stats() {
        return gatewayEngine == null ? null : gatewayEngine.clusterStats();
    }

    /** Completes when the node's actor system has stopped (after a shutdown, or when the node was downed). */
    public CompletableFuture<Void> terminated() {
        return system.getWhenTerminated().toCompletableFuture().thenApply(done -> null);
    }

    private void drain(Duration drain) {
        draining.set(true);
        if (server != null) {
            server.close(); // 503 to new requests; streams in flight finish within the server's drain
            gatewayEngine.close(Duration.ZERO);
        }
        if (engine != null) {
            long end = System.nanoTime() + drain.toNanos();
            List<Long> left = engine.close(drain);
            if (!left.isEmpty()) {
                log.info("{} requests still ran after the drain of {}; cancelled (their gateways resume them)",
                        left.size(), drain);
            }
            // The requests have ended; their last tokens leave through the streams before the node does.
            try {
                CompletableFuture.allOf(workerStreams.toArray(CompletableFuture[]::new))
                        .get(Math.max(1, end - System.nanoTime()), java.util.concurrent.TimeUnit.NANOSECONDS);
            } catch (Exception e) {
                log.info("{} token streams still open after the drain; the node leaves anyway", workerStreams.size());
            }
        }
    }

    /** Drains, leaves the cluster and stops; returns once stopped. */
    @Override
    public void close() {
        CoordinatedShutdown.get(Adapter.toClassic(system)).runAll(CoordinatedShutdown.unknownReason())
                .toCompletableFuture().join();
        system.getWhenTerminated().toCompletableFuture().join();
        if (engine != null) {
            engine.close();
        }
        if (device != null) {
            device.close();
        }
    }

    /** The actor system's configuration: cluster provider, Artery on the given address, failure detector, downing. */
    static Config config(Options o) {
        String self = o.clusterHost() + ":" + o.clusterPort();
        List<String> seeds = o.seeds().isEmpty() ? List.of(self) : o.seeds();
        String seedList = seeds.stream().map(s -> "\"pekko://tandem@" + s + "\"").collect(Collectors.joining(","));
        String roles = switch (o.role()) {
            case WORKER -> "\"worker\"";
            case GATEWAY -> "\"gateway\"";
            case BOTH -> "\"worker\",\"gateway\"";
        };
        long interval = o.heartbeatInterval().toMillis();
        long pause = o.heartbeatPause().toMillis();
        long drainPhase = o.drain().toMillis() + 10_000;
        String text = """
                pekko {
                  loggers = ["org.apache.pekko.event.slf4j.Slf4jLogger"]
                  logging-filter = "org.apache.pekko.event.slf4j.Slf4jLoggingFilter"
                  loglevel = "WARNING"
                  actor {
                    provider = cluster
                    serializers { tandem = "dev.tandem.cluster.ClusterSerializer" }
                    serialization-bindings { "dev.tandem.cluster.ClusterMessage" = tandem }
                  }
                  remote.artery {
                    canonical.hostname = "%s"
                    canonical.port = %d
                  }
                  cluster {
                    seed-nodes = [%s]
                    roles = [%s]
                    # Membership and the receptionist's registry (distributed data) spread at the
                    # heartbeat's pace, so that a worker is offered requests soon after it joins.
                    gossip-interval = %dms
                    leader-actions-interval = %dms
                    distributed-data.gossip-interval = %dms
                    distributed-data.notify-subscribers-interval = %dms
                    failure-detector {
                      heartbeat-interval = %dms
                      acceptable-heartbeat-pause = %dms
                    }
                    unreachable-nodes-reaper-interval = %dms
                    downing-provider-class = "org.apache.pekko.cluster.sbr.SplitBrainResolverProvider"
                    # The side of the oldest node stays up (the seed, usually the gateway), unless that
                    # node is alone: a lost worker is downed, and so is a lost gateway, whose workers
                    # then stay up for the next gateway.
                    split-brain-resolver {
                      active-strategy = keep-oldest
                      keep-oldest.down-if-alone = on
                      stable-after = %dms
                    }
                  }
                  coordinated-shutdown {
                    exit-jvm = on
                    phases.before-service-unbind.timeout = %dms
                  }
                }
                """.formatted(o.clusterHost(), o.clusterPort(), seedList, roles, interval, interval, 2 * interval,
                Math.min(500, interval), interval, pause,
                Math.max(100, interval), Math.max(1000, 2 * pause), drainPhase);
        return ConfigFactory.systemProperties().withFallback(ConfigFactory.parseString(text))
                .withFallback(ConfigFactory.load()).resolve();
    }

    /** Checks {@code host:port}. */
    static String[] hostAndPort(String seed) {
        int colon = seed.lastIndexOf(':');
        if (colon <= 0 || colon == seed.length() - 1) {
            throw new IllegalArgumentException("a seed node is HOST:PORT, was '" + seed + "'");
        }
        String port = seed.substring(colon + 1);
        int p;
        try {
            p = Integer.parseInt(port);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("a seed node is HOST:PORT, was '" + seed + "' (port not a number)");
        }
        if (p < 1 || p > 65535) {
            throw new IllegalArgumentException("the seed node '" + seed + "' has a port outside [1, 65535]");
        }
        return new String[] {seed.substring(0, colon), port};
    }
}
