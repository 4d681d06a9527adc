package dev.tandem.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.llm.EmbeddedModel;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * The cluster's scaling figure and the gateway's added latency per token, each node a JVM of its
 * own on loopback, pinned to a CPU with {@code taskset} where there is one:
 *
 * <ul>
 *   <li><b>throughput</b>: 16 concurrent greedy requests of 128 tokens (best of three rounds after
 *       a warm-up), through a gateway over one worker of one core, then over two such workers;
 *       the direct server (one JVM, {@link DirectServer}, the worker's core) for reference;</li>
 *   <li><b>latency per token</b>: one streamed request of 256 tokens alone (median of five), its
 *       time per output token after the first through the gateway and one worker, against the
 *       direct server on the same core: the difference is what the gateway's hop adds.</li>
 * </ul>
 *
 * CPUs: with {@code N = -Dtandem.cluster.bench.cpus} (the machine's count; {@code bin/cluster-bench}
 * passes it and pins this JVM, the clients', to CPU 0), the gateway gets CPU 0 and the workers CPUs
 * 1 and 2. With only 2 CPUs the second worker shares CPU 0 with the gateway and the clients, so the
 * two-worker figure is a lower bound of what two free cores give (said in the output).
 *
 * <p>The model is {@code -Dtandem.cluster.bench.model} (a GGUF path; default the embedded
 * stories260K, whose steps are so short that the gateway's per-token work, not the workers',
 * bounds the cluster: a larger model, e.g. tandem-bench's random {@code small} shape, shows the
 * workers' scaling).
 *
 * <p>A measurement, not a check: outside the suite ({@code bin/cluster-bench}, or
 * {@code -Dtest=ClusterScalingBench -Dtandem.cluster.bench=true}).
 */
@EnabledIfSystemProperty(named = "tandem.cluster.bench", matches = "true")
@Timeout(900)
class ClusterScalingBench {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int CLIENTS = 16;
    private static final int TOKENS = 128;
    private static final int LATENCY_TOKENS = 256;
    private static final int CPUS = Integer.getInteger("tandem.cluster.bench.cpus", 0);
    private static final String MODEL = System.getProperty("tandem.cluster.bench.model", EmbeddedModel.NAME);
    private static final boolean PIN = CPUS >= 2 && new java.io.File("/usr/bin/taskset").canExecute();
    private static final List<String> FAST_DETECTOR = List.of("--heartbeat-interval-ms", "200",
            "--heartbeat-pause-ms", "3000", "--load-interval-ms", "100");

    @Test
    void twoWorkersOfOneCoreAgainstOneAndTheGatewaysLatencyPerToken() throws Exception {
        String gatewayCpu = PIN ? "0" : null;
        String workerCpu = PIN ? "1" : null;
        String secondWorkerCpu = PIN ? (CPUS >= 3 ? "2" : "0") : null;

        Figures direct = direct(workerCpu);
        Figures one = cluster(gatewayCpu, workerCpu, null);
        Figures two = cluster(gatewayCpu, workerCpu, secondWorkerCpu);

        String pinning = !PIN ? "not pinned (no taskset, or -Dtandem.cluster.bench.cpus unset)"
                : CPUS >= 3 ? "gateway and clients on CPU 0, workers on CPUs 1 and 2"
                : "gateway and clients on CPU 0, worker 1 on CPU 1, worker 2 on CPU 0 with the gateway"
                        + " (2 CPUs: the two-worker figure is a lower bound)";
        System.out.printf("cluster scaling, model %s (%s): direct server, 1 core: %.0f tok/s; gateway + 1 worker: %.0f tok/s;"
                + " gateway + 2 workers: %.0f tok/s; ratio 2/1: %.2f%n", MODEL, pinning, direct.throughput, one.throughput,
                two.throughput, two.throughput / one.throughput);
        System.out.printf("gateway latency per token (one stream of %d tokens, median of 5): direct %.3f ms,"
                + " through the gateway %.3f ms, added %.3f ms%n", LATENCY_TOKENS, direct.msPerToken, one.msPerToken,
                one.msPerToken - direct.msPerToken);
        // What the CPU each process got yields, which the machine's other load does not skew: with a
        // core per worker, two workers make 2 x (their tokens per worker CPU second) / (one's) of
        // one's throughput, as long as the gateway's core keeps up.
        System.out.printf("cluster CPU accounting: tokens per worker CPU second: direct %.0f, 1 worker %.0f,"
                + " 2 workers %.0f; projected ratio with a free core per worker: %.2f; gateway CPU per token:"
                + " %.0f us (1 worker), %.0f us (2 workers), so one gateway core carries up to ~%.0f tok/s%n",
                direct.tokensPerWorkerCpuSecond, one.tokensPerWorkerCpuSecond, two.tokensPerWorkerCpuSecond,
                2 * two.tokensPerWorkerCpuSecond / one.tokensPerWorkerCpuSecond, one.gatewayCpuMicrosPerToken,
                two.gatewayCpuMicrosPerToken, 1e6 / Math.max(one.gatewayCpuMicrosPerToken,
                        two.gatewayCpuMicrosPerToken));
    }

    /**
     * One configuration's figures.
     *
     * @param throughput        tokens per second, best round
     * @param msPerToken        one stream's time per output token, median
     * @param tokensPerWorkerCpuSecond tokens per CPU second the worker processes spent over the
     *                          three rounds (user + system, from /proc): what a worker makes of the
     *                          CPU it gets, whatever else runs on the machine
     * @param gatewayCpuMicrosPerToken the gateway process's CPU per token over the rounds (0 for the
     *                          direct server)
     */
    private record Figures(double throughput, double msPerToken, double tokensPerWorkerCpuSecond,
            double gatewayCpuMicrosPerToken) {}

    private static Figures direct(String cpu) throws Exception {
        try (NodeProcess server = NodeProcess.start("direct", cpu, DirectServer.class, List.of(),
                List.of("1", "16", MODEL))) {
            int port = port(server.await(l -> l.contains("listening on http://"), 1, Duration.ofSeconds(120),
                    "the direct server").getFirst());
            return measure(port, List.of(server.process), null);
        }
    }

    private static Figures cluster(String gatewayCpu, String workerCpu, String secondWorkerCpu) throws Exception {
        List<NodeProcess> nodes = new ArrayList<>();
        try {
            int clusterPort = NodeProcess.freePort();
            List<String> args = new ArrayList<>(List.of("--role", "gateway", "--cluster-port", "" + clusterPort,
                    "--port", "0", "--model", MODEL));
            args.addAll(FAST_DETECTOR);
            NodeProcess gateway = NodeProcess.start("gateway", gatewayCpu, ClusterMain.class, List.of(), args);
            nodes.add(gateway);
            int port = port(gateway.await(l -> l.contains("listening on http://"), 1, Duration.ofSeconds(120),
                    "the gateway").getFirst());
            List<String> cpus = secondWorkerCpu == null ? Arrays.asList(workerCpu)
                    : Arrays.asList(workerCpu, secondWorkerCpu);
            for (int i = 0; i < cpus.size(); i++) {
                List<String> w = new ArrayList<>(List.of("--role", "worker", "--cluster-port",
                        "" + NodeProcess.freePort(), "--join", "127.0.0.1:" + clusterPort, "--cores", "1",
                        "--max-batch", "16", "--model", MODEL));
                w.addAll(FAST_DETECTOR);
                nodes.add(NodeProcess.start("worker-" + i, cpus.get(i), ClusterMain.class,
                        List.of("-XX:ActiveProcessorCount=1"), w));
            }
            gateway.await(l -> l.contains(" serves "), cpus.size(), Duration.ofSeconds(120),
                    "the workers");
            return measure(port, nodes.subList(1, nodes.size()).stream().map(n -> n.process).toList(), gateway.process);
        } finally {
            for (NodeProcess n : nodes.reversed()) {
                n.close();
            }
        }
    }

    private static int port(String listening) {
        return Integer.parseInt(listening.replaceAll(".*:(\\d+)$", "$1"));
    }

    private static Figures measure(int port, List<Process> workers, Process gateway) throws Exception {
        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        round(http, port); // warm-up
        double best = 0;
        long workerTicks = -cpuTicks(workers);
        long gatewayTicks = gateway == null ? 0 : -cpuTicks(List.of(gateway));
        long start = System.nanoTime();
        for (int r = 0; r < 3; r++) {
            best = Math.max(best, round(http, port));
        }
        workerTicks += cpuTicks(workers);
        gatewayTicks += gateway == null ? 0 : cpuTicks(List.of(gateway));
        int tokens = 3 * CLIENTS * TOKENS;
        msPerToken(http, port); // warm-up
        double[] ms = new double[5];
        for (int r = 0; r < ms.length; r++) {
            ms[r] = msPerToken(http, port);
        }
        Arrays.sort(ms);
        return new Figures(best, ms[ms.length / 2], tokens / (workerTicks / (double) TICKS),
                gatewayTicks * 1e6 / TICKS / tokens);
    }

    /** Clock ticks per second of /proc's CPU times (USER_HZ, 100 on Linux). */
    private static final int TICKS = 100;

    /** User and system CPU time of the processes so far, in clock ticks ({@code /proc/PID/stat} fields 14 and 15). */
    private static long cpuTicks(List<Process> processes) throws java.io.IOException {
        long ticks = 0;
        for (Process p : processes) {
            String stat = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/" + p.pid() + "/stat"));
            String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" "); // fields from the 3rd on
            ticks += Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
        }
        return ticks;
    }

    /** Tokens per second of {@link #CLIENTS} concurrent requests. */
    private static double round(HttpClient http, int port) throws Exception {
        long start = System.nanoTime();
        List<CompletableFuture<Integer>> clients = new ArrayList<>();
        for (int i = 0; i < CLIENTS; i++) {
            String body = JSON.createObjectNode().put("prompt", "Once upon a time " + i).put("max_tokens", TOKENS)
                    .put("temperature", 0).put("ignore_eos", true).toString();
            clients.add(http.sendAsync(request(port, body), HttpResponse.BodyHandlers.ofString()).thenApply(r -> {
                assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
                try {
                    JsonNode json = JSON.readTree(r.body());
                    return json.get("usage").get("completion_tokens").asInt();
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            }));
        }
        int tokens = 0;
        for (CompletableFuture<Integer> c : clients) {
            tokens += c.get();
        }
        return tokens / ((System.nanoTime() - start) / 1e9);
    }

    /** One stream alone: milliseconds per output token after the first, as its client sees them arrive. */
    private static double msPerToken(HttpClient http, int port) throws Exception {
        String body = JSON.createObjectNode().put("prompt", "Once upon a time").put("max_tokens", LATENCY_TOKENS)
                .put("temperature", 0).put("ignore_eos", true).put("stream", true).toString();
        HttpResponse<java.util.stream.Stream<String>> r = http.send(request(port, body),
                HttpResponse.BodyHandlers.ofLines());
        assertThat(r.statusCode()).isEqualTo(200);
        long first = 0;
        long last = 0;
        int chunks = 0;
        for (String line : (Iterable<String>) r.body()::iterator) {
            if (line.startsWith("data: {") && line.contains("\"text\"")) {
                long now = System.nanoTime();
                if (chunks == 0) {
                    first = now;
                }
                last = now;
                chunks++;
            }
        }
        assertThat(chunks).as("chunks of one stream").isGreaterThan(LATENCY_TOKENS / 2);
        return (last - first) / 1e6 / (chunks - 1);
    }

    private static HttpRequest request(int port, String body) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/completions"))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build();
    }
}
