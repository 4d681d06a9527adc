package dev.tandem.cluster;

import dev.tandem.llm.BatcherConfig;
import dev.tandem.llm.EmbeddedModel;
import dev.tandem.llm.model.KvType;
import dev.tandem.server.ServerConfig;
import java.io.PrintStream;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine;

/**
 * {@code tandem cluster}: one node of a tandem cluster. Its own entry point (and class path,
 * {@code tandem-cluster/target/classpath.txt}), so that Pekko is on a JVM's class path only when a
 * cluster node runs: a plain {@code tandem serve} never loads it.
 */
@Command(
        name = "cluster",
        mixinStandardHelpOptions = true,
        description = {"Run one node of a tandem cluster (Apache Pekko): a worker generates, a gateway serves the",
                "OpenAI HTTP API and forwards each request to a worker; a stream whose worker dies resumes on another."})
public final class ClusterMain implements Callable<Integer> {

    @Option(names = "--role", required = true, paramLabel = "worker|gateway|both",
            description = "What this node does.", converter = RoleConverter.class)
    ClusterNode.Role role;

    @Option(names = "--cluster-port", required = true, description = "Port of the cluster transport.")
    int clusterPort;

    @Option(names = "--cluster-host", defaultValue = "127.0.0.1",
            description = "Address of the cluster transport (default: ${DEFAULT-VALUE}).")
    String clusterHost;

    @Option(names = "--join", split = ",", paramLabel = "HOST:PORT",
            description = "Seed nodes to join (default: this node, which starts a cluster).")
    List<String> join = List.of();

    @Option(names = "--model", paramLabel = "PATH|" + EmbeddedModel.NAME, defaultValue = EmbeddedModel.NAME,
            description = {"A GGUF file or Hugging Face directory, or " + EmbeddedModel.NAME + " (default). Worker: the"
                    + " model it serves. Gateway: the model of a request that names none; a request naming another"
                    + " model goes to that model's workers (the gateway reads its text from the path they announce)."})
    String model;

    @Option(names = "--host", defaultValue = "127.0.0.1", description = "Gateway: HTTP address (default: ${DEFAULT-VALUE}).")
    String host;

    @Option(names = "--port", defaultValue = "8080", description = "Gateway: HTTP port; 0 for any free one (default: ${DEFAULT-VALUE}).")
    int port;

    @Option(names = "--max-tokens", defaultValue = "4096", description = "Gateway: largest max_tokens (default: ${DEFAULT-VALUE}).")
    int maxTokens;

    @Option(names = "--max-waiting", defaultValue = "64",
            description = "Gateway: requests that may wait for a worker while every worker is full; beyond them 429 (default: ${DEFAULT-VALUE}).")
    int maxWaiting;

    @Option(names = "--max-batch", defaultValue = "8", description = "Worker: requests decoding together (default: ${DEFAULT-VALUE}).")
    int maxBatch;

    @Option(names = "--max-queued", defaultValue = "64", description = "Worker: requests that may wait (default: ${DEFAULT-VALUE}).")
    int maxQueued;

    @Option(names = {"-b", "--batch-size"}, paramLabel = "ROWS", defaultValue = "256",
            description = "Worker: rows of one step at most, as llama-server's -b counts them: one per decoding"
                    + " request, the rest for prompts; more than --max-batch (default: ${DEFAULT-VALUE}).")
    int batchSize;

    @Option(names = "--prompt-rows", paramLabel = "ROWS", defaultValue = "64",
            description = "Worker: prompt rows of a step in which requests decode, at most, as tandem serve's; 0: all"
                    + " that --batch-size leaves them (default: ${DEFAULT-VALUE}).")
    int promptRows;

    @Option(names = "--cores", defaultValue = "0", description = "Worker: device cores (default: available processors).")
    int cores;

    @Option(names = {"-c", "--ctx-size"}, paramLabel = "TOKENS", defaultValue = "0",
            description = "Context length of every request, at most the model's (default: the model's). Worker: its"
                    + " model's; gateway: the limits it admits requests for its own model by.")
    int contextSize;

    @Option(names = "--kv-cells", paramLabel = "POSITIONS", defaultValue = "0",
            description = "Worker: KV cache positions of the pool, all sequences together, as llama-server's -c counts"
                    + " them (default 0: --max-batch full contexts, at most 1 GiB of cache).")
    int kvCells;

    @Option(names = "--kv-type", paramLabel = "f16|f32", defaultValue = "f16", converter = KvTypeConverter.class,
            description = "Worker: element type of the KV cache: f16 (half the memory, llama.cpp's default) or f32"
                    + " (default: ${DEFAULT-VALUE}).")
    KvType kvType;

    @Option(names = "--no-prefix-cache",
            description = "Worker: compute every prompt from its first token instead of taking the KV blocks of a"
                    + " prefix seen before.")
    boolean noPrefixCache;

    @Option(names = "--drain-seconds", defaultValue = "30",
            description = "On SIGTERM, how long streams in flight may finish (default: ${DEFAULT-VALUE}).")
    int drainSeconds;

    @Option(names = "--heartbeat-interval-ms", defaultValue = "1000",
            description = "Failure detector: heartbeat interval (default: ${DEFAULT-VALUE}).")
    long heartbeatIntervalMs;

    @Option(names = "--heartbeat-pause-ms", defaultValue = "3000",
            description = "Failure detector: silence accepted before a node is unreachable (default: ${DEFAULT-VALUE}).")
    long heartbeatPauseMs;

    @Option(names = "--load-interval-ms", defaultValue = "250",
            description = "Worker: how often it reports its load (default: ${DEFAULT-VALUE}).")
    long loadIntervalMs;

    static final class RoleConverter implements CommandLine.ITypeConverter<ClusterNode.Role> {
        @Override
        public ClusterNode.Role convert(String value) {
            return switch (value) {
                case "worker" -> ClusterNode.Role.WORKER;
                case "gateway" -> ClusterNode.Role.GATEWAY;
                case "both" -> ClusterNode.Role.BOTH;
                default -> throw new CommandLine.TypeConversionException(
                        "'" + value + "' is not a role: worker, gateway or both");
            };
        }
    }

    /** {@code --kv-type}: {@link KvType#parse}, its message the usage error. */
    static final class KvTypeConverter implements CommandLine.ITypeConverter<KvType> {
        @Override
        public KvType convert(String value) {
            try {
                return KvType.parse(value);
            } catch (IllegalArgumentException e) {
                throw new CommandLine.TypeConversionException(e.getMessage());
            }
        }
    }

    /** The node's options from the command line; throws {@link IllegalArgumentException} naming a bad one. */
    ClusterNode.Options options() {
        if (drainSeconds < 0) {
            throw new IllegalArgumentException("--drain-seconds must be >= 0, was " + drainSeconds);
        }
        if (cores < 0) {
            throw new IllegalArgumentException("--cores must be >= 0, was " + cores);
        }
        ServerConfig server = ServerConfig.builder().host(host).port(port).maxTokens(maxTokens)
                .drainTimeout(Duration.ofSeconds(drainSeconds)).build();
        if (contextSize < 0 || kvCells < 0) {
            throw new IllegalArgumentException("--ctx-size and --kv-cells must be >= 0, were " + contextSize + " and "
                    + kvCells);
        }
        BatcherConfig batcher;
        try {
            batcher = BatcherConfig.builder().maxBatch(maxBatch).maxQueued(maxQueued).tokenBudget(batchSize)
                    .promptRows(promptRows).prefixCache(!noPrefixCache).build();
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--batch-size " + batchSize + ", --max-batch " + maxBatch
                    + " and --prompt-rows " + promptRows + ": " + e.getMessage(), e);
        }
        return new ClusterNode.Options(role, clusterHost, clusterPort, join, EmbeddedModel.resolve(model), server, batcher,
                cores == 0 ? Runtime.getRuntime().availableProcessors() : cores, Duration.ofMillis(heartbeatIntervalMs),
                Duration.ofMillis(heartbeatPauseMs), Duration.ofMillis(loadIntervalMs), Duration.ofSeconds(drainSeconds),
                maxWaiting, new ClusterNode.ModelSizing(contextSize, kvCells, kvType));
    }

    @Override
    public Integer call() {
        PrintStream out = System.out;
        ClusterNode node = ClusterNode.start(options());
        out.println(role.name().toLowerCase(java.util.Locale.ROOT) + " node " + node.address()
                + (node.httpPort() >= 0 ? ", listening on http://" + host + ":" + node.httpPort() : ""));
        out.flush();
        node.terminated().join();
        return 0;
    }

    public static void main(String[] args) {
        CommandLine cli = new CommandLine(new ClusterMain());
        cli.setExecutionExceptionHandler((e, line, parsed) -> {
            line.getErr().println("tandem cluster: " + e.getMessage());
            return 2;
        });
        System.exit(cli.execute(args));
    }
}
