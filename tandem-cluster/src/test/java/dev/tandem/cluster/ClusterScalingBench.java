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
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * Throughput of a gateway over one worker of one core against two such workers, each node a JVM
 * of its own on loopback: 16 concurrent greedy streams of 128 tokens, after a warm-up round; the
 * best of three rounds per configuration. A measurement, not a check, outside the suite (its name
 * is not a test's): {@code ./mvnw -pl tandem-cluster verify -Dtest=ClusterScalingBench
 * -Dtandem.cluster.bench=true}, on a machine with a core free per worker and one for the gateway
 * and the clients.
 */
@EnabledIfSystemProperty(named = "tandem.cluster.bench", matches = "true")
@Timeout(600)
class ClusterScalingBench {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int CLIENTS = 16;
    private static final int TOKENS = 128;

    @Test
    void twoWorkersOfOneCoreAgainstOne() throws Exception {
        double one = throughput(1);
        double two = throughput(2);
        System.out.printf("cluster scaling: 1 worker %.0f tok/s, 2 workers %.0f tok/s, ratio %.2f (%d cpus here)%n", one,
                two, two / one, Runtime.getRuntime().availableProcessors());
    }

    private static double throughput(int workers) throws Exception {
        List<NodeProcess> nodes = new ArrayList<>();
        try {
            int clusterPort = NodeProcess.freePort();
            List<String> common = List.of("--heartbeat-interval-ms", "200", "--heartbeat-pause-ms", "3000",
                    "--load-interval-ms", "100");
            List<String> args = new ArrayList<>(List.of("--role", "gateway", "--cluster-port", "" + clusterPort,
                    "--port", "0"));
            args.addAll(common);
            NodeProcess gateway = NodeProcess.start("gateway", List.of(), args);
            nodes.add(gateway);
            String listening = gateway.await(l -> l.contains("listening on http://"), 1, Duration.ofSeconds(120),
                    "the gateway").getFirst();
            int port = Integer.parseInt(listening.replaceAll(".*:(\\d+)$", "$1"));
            for (int i = 0; i < workers; i++) {
                List<String> w = new ArrayList<>(List.of("--role", "worker", "--cluster-port",
                        "" + NodeProcess.freePort(), "--join", "127.0.0.1:" + clusterPort, "--cores", "1",
                        "--max-batch", "16"));
                w.addAll(common);
                nodes.add(NodeProcess.start("worker-" + i, List.of("-XX:ActiveProcessorCount=1"), w));
            }
            gateway.await(l -> l.contains(" serves " + EmbeddedModel.NAME), workers, Duration.ofSeconds(120),
                    "the workers");
            HttpClient http = HttpClient.newHttpClient();
            round(http, port); // warm-up
            double best = 0;
            for (int r = 0; r < 3; r++) {
                best = Math.max(best, round(http, port));
            }
            return best;
        } finally {
            for (NodeProcess n : nodes.reversed()) {
                n.close();
            }
        }
    }

    /** Tokens per second of {@link #CLIENTS} concurrent streams. */
    private static double round(HttpClient http, int port) throws Exception {
        long start = System.nanoTime();
        List<CompletableFuture<Integer>> clients = new ArrayList<>();
        for (int i = 0; i < CLIENTS; i++) {
            String body = JSON.createObjectNode().put("prompt", "Once upon a time " + i).put("max_tokens", TOKENS)
                    .put("temperature", 0).put("ignore_eos", true).toString();
            HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/completions"))
                    .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build();
            clients.add(http.sendAsync(request, HttpResponse.BodyHandlers.ofString()).thenApply(r -> {
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
}
