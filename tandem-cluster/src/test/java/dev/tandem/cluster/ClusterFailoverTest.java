package dev.tandem.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.CpuDeviceConfig;
import dev.tandem.Worker;
import dev.tandem.bench.RandomGguf;
import dev.tandem.llm.BatcherConfig;
import dev.tandem.llm.EmbeddedModel;
import dev.tandem.llm.GenerateOptions;
import dev.tandem.llm.LanguageModel;
import dev.tandem.llm.gguf.GgmlType;
import dev.tandem.server.BatcherEngine;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.extension.TestWatcher;

/**
 * A gateway and three workers of the embedded model, and a worker of a second (random) model,
 * each a JVM of its own on loopback. A client that goes away
 * cancels its request on its worker; a worker sent SIGTERM finishes its streams before it leaves
 * (none resumed); then, with concurrent streaming clients on the two left, one worker is killed
 * with {@code kill -9} while they stream. Every stream must complete with the
 * text a single node generates greedily for its prompt: the killed worker's streams resume on
 * the other worker of its model (never on the other model's), with no token lost and none
 * repeated. Requests go to the workers of the model they name, {@code /v1/models} lists the
 * models the workers serve, and a model leaves the list with its last worker; a worker of another
 * file under a model's name gets nothing until the workers of the file the name stands for are
 * gone, and then serves that file's text.
 *
 * <p>The short form (12 streams of 400 tokens: longer than what the stream buffers between a
 * worker's batcher and a client hold, so that the killed worker still had tokens to make) runs in
 * every build; {@code -Dtandem.cluster.soak=true} runs 32 streams.
 */
@Timeout(value = 300, threadMode = Timeout.ThreadMode.SEPARATE_THREAD) // a hang fails the test, never the build
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ClusterFailoverTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final boolean SOAK = Boolean.getBoolean("tandem.cluster.soak");
    private static final int CLIENTS = SOAK ? 32 : 12;
    private static final int MAX_TOKENS = 400;
    private static final String[] OPENINGS = {"Once upon a time", "Lily and Ben went to the park.", "The cat",
        "Tom had a dog.", "There was a big tree in the garden.", "Mia wanted to fly like a bird.",
        "The sun was shining and", "Sam had a red ball."};
    private static final Pattern RESUMED = Pattern.compile("request (\\d+) resumed: token (\\d+) arrived (\\d+) ms");
    private static final Pattern RUNS_ON = Pattern.compile("request (\\d+) runs on (\\S+)");

    private static final List<NodeProcess> nodes = new ArrayList<>();
    private static NodeProcess gateway;
    /** The workers still up, by cluster address. */
    private static final Map<String, NodeProcess> workers = new java.util.LinkedHashMap<>();
    private static int httpPort;
    private static int gatewayClusterPort;
    /** The second model's file, its name, and its one worker. */
    private static Path modelB;
    private static String nameB;
    private static NodeProcess workerB;
    private static String workerBAddress;

    /**
     * On a failure, what each node printed last: a failure under load (a node downed by the
     * failure detector and gone, say) is otherwise visible only as the next test's refused
     * connection.
     */
    @RegisterExtension
    static final TestWatcher NODE_OUTPUT_ON_FAILURE = new TestWatcher() {
        @Override
        public void testFailed(ExtensionContext context, Throwable cause) {
            for (NodeProcess n : nodes) {
                List<String> lines = n.output().lines().toList();
                System.out.printf("--- %s (%s), its last lines:%n%s%n", n.name,
                        n.process.isAlive() ? "running" : "exited " + n.process.exitValue(),
                        String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size())));
            }
        }
    };

    @AfterAll
    static void stopNodes() throws InterruptedException {
        long t = System.nanoTime();
        for (NodeProcess n : nodes.reversed()) {
            long t1 = System.nanoTime();
            n.close();
            System.out.printf("%s stopped in %d ms%n", n.name, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t1));
        }
        System.out.printf("nodes stopped in %d ms%n", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t));
    }

    /** The failure detector's settings for a quick verdict on loopback (a pause that a loaded 2-core CI machine's hiccups stay under). */
    private static List<String> clusterArgs(String role, int clusterPort, List<String> more) {
        List<String> args = new ArrayList<>(List.of("--role", role, "--cluster-port", Integer.toString(clusterPort),
                "--heartbeat-interval-ms", "200", "--heartbeat-pause-ms", "1500", "--load-interval-ms", "100"));
        args.addAll(more);
        return args;
    }

    private static NodeProcess start(String name, List<String> flags, List<String> args) {
        NodeProcess node = NodeProcess.start(name, flags, args);
        nodes.add(node);
        return node;
    }

    @BeforeAll
    static void startCluster() {
        long started = System.nanoTime();
        int gatewayPort = NodeProcess.freePort();
        gatewayClusterPort = gatewayPort;
        gateway = start("gateway", List.of("-Dorg.slf4j.simpleLogger.log.dev.tandem.cluster.RemoteTokenStream=debug"),
                clusterArgs("gateway", gatewayPort, List.of("--port", "0")));
        String listening = gateway.await(l -> l.contains("listening on http://"), 1, Duration.ofSeconds(90),
                "the gateway's HTTP listener").getFirst();
        httpPort = Integer.parseInt(listening.replaceAll(".*:(\\d+)$", "$1"));
        String seed = "127.0.0.1:" + gatewayPort;
        List<String> workerArgs = List.of("--join", seed, "--cores", "1", "--max-batch", Integer.toString(Math.max(16, CLIENTS)));
        List<String> debug = List.of("-Dorg.slf4j.simpleLogger.log.dev.tandem.cluster.WorkerActor=debug");
        List<NodeProcess> started3 = new ArrayList<>();
        for (int i = 1; i <= 3; i++) {
            started3.add(start("worker-" + i, debug, clusterArgs("worker", NodeProcess.freePort(), workerArgs)));
        }
        modelB = RandomGguf.cached(Path.of("target", "cluster-test-models", "random-64x2.gguf").toAbsolutePath(),
                RandomGguf.shape(64, 2, 4, 4, 192), GgmlType.F32, 48, true);
        nameB = LanguageModel.loadText(modelB).name();
        workerB = start("worker-b", debug, clusterArgs("worker", NodeProcess.freePort(), List.of("--join", seed,
                "--cores", "1", "--max-batch", "4", "--model", modelB.toString())));
        for (NodeProcess w : started3) {
            workers.put(address(w), w);
        }
        workerBAddress = address(workerB);
        try {
            gateway.await(l -> l.contains(" serves " + EmbeddedModel.NAME), 3, Duration.ofSeconds(90),
                    "the workers' load reports");
            gateway.await(l -> l.contains("model " + nameB + " ready"), 1, Duration.ofSeconds(90),
                    "the second model's text read at the gateway");
        } catch (AssertionError e) {
            started3.add(workerB);
            throw new AssertionError(e.getMessage() + started3.stream().map(w -> "\n--- " + w.name + ":\n" + w.output())
                    .collect(Collectors.joining()), e);
        }
        System.out.printf("cluster up in %d ms%n", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
    }

    /** A worker's cluster address, from the line it prints once up. */
    private static String address(NodeProcess worker) {
        return worker.await(l -> l.startsWith("worker node "), 1, Duration.ofSeconds(90), worker.name + " up")
                .getFirst().replaceAll("worker node (\\S+).*", "$1");
    }

    @Test
    @Order(0) // first: it names request 1
    void aClientThatGoesAwayCancelsItsRequestOnItsWorker() throws Exception {
        NodeProcess worker;
        String body = JSON.createObjectNode().put("prompt", "Once upon a time").put("max_tokens", 400)
                .put("temperature", 0).put("stream", true).put("ignore_eos", true).toString();
        try (Socket socket = new Socket()) {
            socket.setReceiveBufferSize(2048); // little room in flight: the stream waits for this client
            socket.connect(new java.net.InetSocketAddress("127.0.0.1", httpPort));
            OutputStream out = socket.getOutputStream();
            out.write(("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    + "Content-Length: " + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body)
                    .getBytes(StandardCharsets.UTF_8));
            out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
            int events = 0;
            while (events < 3) {
                String line = in.readLine();
                assertThat(line).as("the stream's first events").isNotNull();
                if (line.startsWith("data:")) {
                    events++;
                }
            }
            // The client reads no more: back-pressure holds the request on its worker, which runs on.
            String runsOn = matcher(RUNS_ON, gateway.await(l -> l.contains("request 1 runs on"), 1,
                    Duration.ofSeconds(10), "the request's worker").getFirst()).group(2);
            worker = workers.get(runsOn);
            assertThat(worker.lines(l -> l.contains("request 1 ended"))).as("ended while its client is there").isEmpty();
        }
        String ended = worker.await(l -> l.contains("request 1 ended"), 1, Duration.ofSeconds(20),
                "the request's end on its worker after its client went away").getFirst();
        assertThat(ended).contains("CANCELLED");
    }

    @Test
    @Order(2)
    void aWorkerLeavingOnSigtermFinishesItsStreamsAndResumesNone() throws Exception {
        String[] prompts = {"The cat", "Tom had a dog.", "Sam had a red ball.", "Mia wanted to fly like a bird."};
        int tokens = 300;
        Map<String, String> expected = singleNodeTexts(prompts, tokens);
        int earlier = gateway.lines(l -> RUNS_ON.matcher(l).find()).size();
        int lostBefore = gateway.lines(l -> l.contains(" lost worker ")).size();
        List<SseClient> clients = new ArrayList<>();
        for (String p : prompts) {
            SseClient c = SseClient.post(httpPort, JSON.createObjectNode().put("prompt", p).put("max_tokens", tokens)
                    .put("temperature", 0).put("stream", true).put("ignore_eos", true).toString());
            assertThat(c.status()).isEqualTo(200);
            c.readEvents(2); // streaming; from now on this client holds its stream back
            clients.add(c);
        }
        Map<String, Long> perWorker = gateway.lines(l -> RUNS_ON.matcher(l).find()).stream().skip(earlier)
                .map(l -> matcher(RUNS_ON, l).group(2)).collect(Collectors.groupingBy(a -> a, Collectors.counting()));
        String leaving = workers.keySet().stream().max(Comparator.comparingLong(a -> perWorker.getOrDefault(a, 0L)))
                .orElseThrow();
        assertThat(perWorker.get(leaving)).as("streams on the leaving worker").isPositive();
        NodeProcess worker = workers.remove(leaving);
        long term = System.nanoTime();
        worker.process.destroy(); // SIGTERM
        CompletableFuture<Long> exitedAt = worker.process.onExit().thenApply(p -> System.nanoTime());
        for (int i = 0; i < prompts.length; i++) {
            SseClient c = clients.get(i);
            c.readAll();
            assertThat(c.text.toString()).as("text of '%s'", prompts[i]).isEqualTo(expected.get(prompts[i]));
            assertThat(c.done).as("[DONE] of '%s'", prompts[i]).isTrue();
        }
        long streamsDone = System.nanoTime();
        assertThat(worker.process.waitFor(60, TimeUnit.SECONDS)).as("the leaving worker exits").isTrue();
        long exited = exitedAt.get(10, TimeUnit.SECONDS);
        assertThat(gateway.lines(l -> l.contains(" lost worker ")).size()).as("streams that had to resume")
                .isEqualTo(lostBefore);
        System.out.printf("graceful leave: %d streams of %d tokens, %d on the worker sent SIGTERM, every text exact and"
                + " none resumed; the clients' streams done %d ms and the worker exited %d ms after the SIGTERM%n",
                prompts.length, tokens, perWorker.get(leaving), TimeUnit.NANOSECONDS.toMillis(streamsDone - term),
                TimeUnit.NANOSECONDS.toMillis(exited - term));
    }

    @Test
    @Order(3)
    void killedWorkersStreamsResumeOnTheOtherWithNoTokenLostOrRepeated() throws Exception {
        String[] prompts = new String[CLIENTS];
        for (int i = 0; i < CLIENTS; i++) {
            prompts[i] = OPENINGS[i % OPENINGS.length] + (i < OPENINGS.length ? "" : " " + (i / OPENINGS.length));
        }
        long t0 = System.nanoTime();
        Map<String, String> expected = singleNodeTexts(prompts, MAX_TOKENS);
        System.out.printf("single-node texts in %d ms%n", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));

        int earlier = gateway.lines(l -> RUNS_ON.matcher(l).find()).size(); // the other tests' requests
        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        CountDownLatch streaming = new CountDownLatch(CLIENTS);
        List<CompletableFuture<Stream>> clients = new ArrayList<>();
        for (String prompt : prompts) {
            clients.add(CompletableFuture.supplyAsync(() -> stream(http, httpPort, prompt, streaming),
                    r -> Thread.ofVirtual().start(r)));
        }
        assertThat(streaming.await(60, TimeUnit.SECONDS)).as("every client streaming").isTrue();

        // Kill the worker that carries more streams now.
        Map<String, Long> perWorker = gateway.lines(l -> RUNS_ON.matcher(l).find()).stream().skip(earlier)
                .map(l -> matcher(RUNS_ON, l).group(2)).collect(Collectors.groupingBy(a -> a, Collectors.counting()));
        String victimAddress = workers.keySet().stream()
                .max(Comparator.comparingLong(a -> perWorker.getOrDefault(a, 0L))).orElseThrow();
        NodeProcess victim = workers.remove(victimAddress);
        long onVictim = perWorker.getOrDefault(victimAddress, 0L);
        Map<String, Double> before = scrape(httpPort);
        int lostBefore = lostLines(victimAddress);
        long killed = System.nanoTime();
        victim.kill();

        List<Stream> streams = new ArrayList<>();
        for (CompletableFuture<Stream> c : clients) {
            streams.add(c.get(120, TimeUnit.SECONDS));
        }
        System.out.printf("streams done %d ms after the kill%n", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killed));
        long tokens = 0;
        for (Stream s : streams) {
            assertThat(s.error).as("stream of '%s' ended with an error", s.prompt).isNull();
            assertThat(s.done).as("stream of '%s' got [DONE]", s.prompt).isTrue();
            assertThat(s.finish).as("finish_reason of '%s'", s.prompt).isEqualTo("length");
            assertThat(s.completionTokens).as("tokens of '%s'", s.prompt).isEqualTo(MAX_TOKENS);
            assertThat(s.text.toString()).as("text of '%s' against a single node's", s.prompt)
                    .isEqualTo(expected.get(s.prompt));
            tokens += s.completionTokens;
        }
        List<String> resumedLines = gateway.lines(l -> RESUMED.matcher(l).find());
        List<Long> resumeMs = resumedLines.stream().map(l -> Long.parseLong(matcher(RESUMED, l).group(3))).sorted()
                .toList();
        long lost = midStream(victimAddress, lostBefore, onVictim);
        assertThat(resumeMs).as("streams resumed after the kill: every one that lost the victim").hasSize((int) lost);
        long maxGapMs = streams.stream().mapToLong(s -> s.stallAfter(killed)).max().orElse(0);
        System.out.printf("cluster failover: %d streams, %d tokens, %d ran on the killed worker, %d of them mid-stream"
                + " at the kill, %d resumed, every text exact; loss verdict to next token: median %d ms, max %d ms;"
                + " longest stall of a client after the kill: %d ms%n", streams.size(), tokens, onVictim, lost,
                resumeMs.size(), resumeMs.get(resumeMs.size() / 2), resumeMs.getLast(), maxGapMs);
        assertThat(resumeMs.getLast()).as("resumption after the failure detector's verdict, ms").isLessThan(3000);
        Map<String, Double> after = scrape(httpPort);
        assertThat(delta(before, after, failovers(EmbeddedModel.NAME, victimAddress)))
                .as("/metrics: failovers from the killed worker").isEqualTo(lost);
        assertThat(delta(before, after, "tandem_cluster_streams_resumed_total{model=\"" + EmbeddedModel.NAME + "\"}"))
                .as("/metrics: streams resumed").isEqualTo(lost);
        assertThat(delta(before, after, "tandem_cluster_resume_latency_seconds_count{model=\"" + EmbeddedModel.NAME
                + "\"}")).as("/metrics: resume latencies recorded").isEqualTo(lost);
        assertThat(after.keySet()).as("/metrics: no failover of the other model's streams")
                .noneMatch(sample -> sample.startsWith("tandem_cluster_failovers_total{model=\"" + nameB + "\""));
        String survivor = workers.keySet().iterator().next();
        assertThat(delta(before, after, routed(EmbeddedModel.NAME, survivor)))
                .as("/metrics: resumptions routed to the survivor").isEqualTo(lost);
        assertThat(delta(before, after, routed(nameB, workerBAddress)))
                .as("/metrics: resumptions routed to the other model's worker").isZero();
    }

    @Test
    @Order(4) // after the kill: one worker of each model is left
    void requestsGoToTheWorkersOfTheirModelAndAModelLeavesTheListWithItsLastWorker() throws Exception {
        assertThat(models(httpPort)).as("/v1/models").containsExactly(EmbeddedModel.NAME, nameB);
        String[] prompts = {"Once upon a time", "Tom had a dog."};
        int tokens = 24;
        Map<String, String> expected = singleNodeTexts(prompts, tokens);
        Map<String, String> expectedB = singleNodeTexts(modelB, prompts, tokens);
        String workerA = workers.keySet().iterator().next();
        Map<String, Double> before = scrape(httpPort);
        HttpClient http = HttpClient.newHttpClient();
        for (String p : prompts) {
            for (String model : new String[] {null, EmbeddedModel.NAME, nameB}) {
                HttpResponse<String> r = complete(http, model, p, tokens);
                assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
                JsonNode answer = JSON.readTree(r.body());
                String served = model == null ? EmbeddedModel.NAME : model;
                assertThat(answer.get("model").asText()).isEqualTo(served);
                assertThat(answer.at("/choices/0/text").asText()).as("text of '%s' on %s", p, served)
                        .isEqualTo((served.equals(nameB) ? expectedB : expected).get(p));
            }
        }
        Map<String, Double> after = scrape(httpPort);
        assertThat(delta(before, after, routed(EmbeddedModel.NAME, workerA))).as("/metrics: routed to %s", workerA)
                .isEqualTo(2L * prompts.length);
        assertThat(delta(before, after, routed(nameB, workerBAddress))).as("/metrics: routed to %s", workerBAddress)
                .isEqualTo(prompts.length);

        // A model no worker serves: OpenAI's error, as tandem serve --strict-model-name answers it.
        HttpResponse<String> unknown = complete(http, "gpt-4o", prompts[0], tokens);
        assertThat(unknown.statusCode()).as(unknown.body()).isEqualTo(404);
        JsonNode error = JSON.readTree(unknown.body()).get("error");
        assertThat(error.get("code").asText()).isEqualTo("model_not_found");
        assertThat(error.get("param").asText()).isEqualTo("model");
        assertThat(error.get("type").asText()).isEqualTo("invalid_request_error");

        // Another file under the second model's name (same name, header and size; other weights) joins:
        // the gateway refuses it while the name stands for the first file, whose worker serves on alone.
        Path modelB2 = RandomGguf.cached(modelB.resolveSibling("random-64x2-seed49.gguf"),
                RandomGguf.shape(64, 2, 4, 4, 192), GgmlType.F32, 49, true);
        NodeProcess workerB2 = start("worker-b2", List.of(), clusterArgs("worker", NodeProcess.freePort(), List.of(
                "--join", "127.0.0.1:" + gatewayClusterPort, "--cores", "1", "--max-batch", "4", "--model",
                modelB2.toString())));
        String workerB2Address = address(workerB2);
        gateway.await(l -> l.contains("worker " + workerB2Address + " serves '" + nameB + "' from another file"), 1,
                Duration.ofSeconds(90), "the gateway refusing a second file under the name " + nameB);
        Map<String, Double> beforeB2 = scrape(httpPort);
        for (String p : prompts) {
            HttpResponse<String> r = complete(http, nameB, p, tokens);
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            assertThat(JSON.readTree(r.body()).at("/choices/0/text").asText()).as("text of '%s', the first file's", p)
                    .isEqualTo(expectedB.get(p));
        }
        Map<String, Double> afterB2 = scrape(httpPort);
        assertThat(delta(beforeB2, afterB2, routed(nameB, workerB2Address))).as("/metrics: routed to the refused file")
                .isZero();

        // The first file's only worker leaves: the name passes to the other file, whose text it serves now.
        Map<String, String> expectedB2 = singleNodeTexts(modelB2, prompts, tokens);
        assertThat(expectedB2.get(prompts[0])).as("the two files generate differently").isNotEqualTo(
                expectedB.get(prompts[0]));
        signal("TERM", workerB);
        gateway.await(l -> l.contains("node " + workerBAddress + " is out of the cluster"), 1, Duration.ofSeconds(60),
                "the second model's worker gone");
        gateway.await(l -> l.contains("model " + nameB + " stands for the file of fingerprint"), 1,
                Duration.ofSeconds(10), "the name passing to the other file");
        HttpResponse<String> passed = complete(http, nameB, prompts[0], tokens); // may wait while its text is read
        assertThat(passed.statusCode()).as(passed.body()).isEqualTo(200);
        assertThat(JSON.readTree(passed.body()).at("/choices/0/text").asText()).as("text of the other file")
                .isEqualTo(expectedB2.get(prompts[0]));

        // The name's last worker leaves: the model leaves the list, and a request for it is refused.
        signal("TERM", workerB2);
        gateway.await(l -> l.contains("node " + workerB2Address + " is out of the cluster"), 1, Duration.ofSeconds(60),
                "the other file's worker gone");
        assertThat(models(httpPort)).as("/v1/models").containsExactly(EmbeddedModel.NAME);
        assertThat(complete(http, nameB, prompts[0], tokens).statusCode()).isEqualTo(404);
    }

    /** The ids {@code /v1/models} lists. */
    private static List<String> models(int port) throws Exception {
        HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + port + "/v1/models")).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        List<String> ids = new ArrayList<>();
        JSON.readTree(r.body()).get("data").forEach(m -> ids.add(m.get("id").asText()));
        return ids;
    }

    /** A greedy completion of {@code prompt} by {@code model} (null: none named), whole. */
    private static HttpResponse<String> complete(HttpClient http, String model, String prompt, int maxTokens)
            throws Exception {
        com.fasterxml.jackson.databind.node.ObjectNode body = JSON.createObjectNode().put("prompt", prompt)
                .put("max_tokens", maxTokens).put("temperature", 0).put("ignore_eos", true);
        if (model != null) {
            body.put("model", model);
        }
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + "/v1/completions"))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body.toString()))
                .build(), HttpResponse.BodyHandlers.ofString());
    }

    /** The gateway's sample of the streams of {@code model} that lost {@code worker}. */
    private static String failovers(String model, String worker) {
        return "tandem_cluster_failovers_total{model=\"" + model + "\",worker=\"" + worker + "\"}";
    }

    /** The gateway's sample of the requests {@code worker} accepted for {@code model}. */
    private static String routed(String model, String worker) {
        return "tandem_cluster_requests_routed_total{model=\"" + model + "\",worker=\"" + worker + "\"}";
    }

    @Test
    @Order(5)
    void aWorkerJoiningUnderLoadStartsTakingRequests() throws Exception {
        assertThat(workers).as("the worker left by the earlier tests").hasSize(1);
        String old = workers.keySet().iterator().next();
        String[] load = {"The cat", "Tom had a dog.", "Sam had a red ball.", "Once upon a time"};
        int loadTokens = 300;
        Map<String, String> expectedLoad = singleNodeTexts(load, loadTokens);
        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        CountDownLatch streaming = new CountDownLatch(load.length);
        List<CompletableFuture<Stream>> loadClients = new ArrayList<>();
        for (String prompt : load) {
            loadClients.add(CompletableFuture.supplyAsync(() -> stream(http, httpPort, prompt, loadTokens, streaming),
                    r -> Thread.ofVirtual().start(r)));
        }
        assertThat(streaming.await(60, TimeUnit.SECONDS)).as("the load streaming").isTrue();

        int serving = gateway.lines(l -> l.contains(" serves " + EmbeddedModel.NAME)).size();
        int clusterPort = NodeProcess.freePort();
        NodeProcess joined = start("worker-4", List.of("-Dorg.slf4j.simpleLogger.log.dev.tandem.cluster.WorkerActor=debug"),
                clusterArgs("worker", clusterPort, List.of("--join", "127.0.0.1:" + gatewayClusterPort, "--cores", "1",
                        "--max-batch", "16")));
        String address = "pekko://tandem@127.0.0.1:" + clusterPort;
        gateway.await(l -> l.contains(" serves " + EmbeddedModel.NAME), serving + 1, Duration.ofSeconds(90),
                "the joining worker's first load report");
        assertThat(gateway.lines(l -> l.contains("worker " + address + " serves"))).as("the one that joined").hasSize(1);
        workers.put(address, joined);

        // Prompts whose prefix key the new worker wins (rendezvous hashing: it takes those keys, and only
        // those, from the old one), and prompts the old one keeps; sent while the load streams.
        List<String> toNew = new ArrayList<>();
        List<String> toOld = new ArrayList<>();
        try (Worker w = Worker.create(CpuDeviceConfig.withCores(1))) {
            LanguageModel model = LanguageModel.load(w, EmbeddedModel.path());
            for (int i = 0; toNew.size() < 3 || toOld.size() < 1; i++) {
                String p = "Lily found a shell number " + i + ".";
                String affine = Routing.affine(Routing.prefixKey(model.encode(p)), List.of(old, address),
                        ClusterFailoverTest::identity);
                (affine.equals(address) ? toNew : toOld).add(p);
            }
        }
        List<String> prompts = new ArrayList<>(toNew.subList(0, 3));
        prompts.add(toOld.getFirst());
        int earlier = gateway.lines(l -> RUNS_ON.matcher(l).find()).size();
        int shortTokens = 24;
        Map<String, String> expected = singleNodeTexts(prompts.toArray(String[]::new), shortTokens);
        List<CompletableFuture<Stream>> clients = new ArrayList<>();
        CountDownLatch started = new CountDownLatch(prompts.size());
        for (String prompt : prompts) {
            clients.add(CompletableFuture.supplyAsync(() -> stream(http, httpPort, prompt, shortTokens, started),
                    r -> Thread.ofVirtual().start(r)));
        }
        for (CompletableFuture<Stream> c : clients) {
            Stream s = c.get(60, TimeUnit.SECONDS);
            assertThat(s.error).as("stream of '%s'", s.prompt).isNull();
            assertThat(s.text.toString()).as("text of '%s'", s.prompt).isEqualTo(expected.get(s.prompt));
        }
        Map<String, Long> perWorker = gateway.lines(l -> RUNS_ON.matcher(l).find()).stream().skip(earlier)
                .map(l -> matcher(RUNS_ON, l).group(2)).collect(Collectors.groupingBy(a -> a, Collectors.counting()));
        assertThat(perWorker).as("where the requests sent after the join ran").containsEntry(address, 3L)
                .containsEntry(old, 1L);
        assertThat(joined.lines(l -> l.contains(" admitted: "))).as("admissions on the joined worker").hasSize(3);
        for (CompletableFuture<Stream> c : loadClients) {
            Stream s = c.get(120, TimeUnit.SECONDS);
            assertThat(s.error).as("load stream of '%s'", s.prompt).isNull();
            assertThat(s.text.toString()).as("load text of '%s'", s.prompt).isEqualTo(expectedLoad.get(s.prompt));
        }
    }

    @Test
    @Order(6)
    void aWorkerStoppedPastTheFailureDetectorIsReplacedDownedAndDeliversNothingAfterItsCont() throws Exception {
        assertThat(workers).as("two workers").hasSize(2);
        // The clients hold their streams back (SseClient: a small receive buffer, nothing read) from
        // their second event until the SIGSTOP, so that the stopped worker is mid-stream in most of its
        // streams: reading on, a loaded machine's slowest client was seen to reach its eighth token
        // after the victim had finished all of its six (nothing left to resume). Held back, a stream's
        // rest can still fit in the buffers on the way (a 2-CPU machine at load 10 had 2 of 6 end):
        // midStream counts the streams the stop caught.
        String[] prompts = {"Lily and Ben went to the park. 5", "The cat 5", "Tom had a dog. 5",
            "Mia wanted to fly like a bird. 5", "The sun was shining and 5", "Sam had a red ball. 5",
            "Once upon a time 5", "The dog ran 5", "Ben found a box 5", "A little girl named Sue 5",
            "The bird sang 5", "Max liked to play 5"};
        Map<String, String> expected = singleNodeTexts(prompts, MAX_TOKENS);
        Map<String, Double> before = scrape(httpPort);
        int earlier = gateway.lines(l -> RUNS_ON.matcher(l).find()).size();
        int resumedBefore = gateway.lines(l -> RESUMED.matcher(l).find()).size();
        List<SseClient> clients = new ArrayList<>();
        for (String p : prompts) {
            SseClient c = SseClient.post(httpPort, JSON.createObjectNode().put("prompt", p).put("max_tokens", MAX_TOKENS)
                    .put("temperature", 0).put("stream", true).put("ignore_eos", true).toString());
            assertThat(c.status()).isEqualTo(200);
            c.readEvents(2); // streaming, and held back from here until the SIGSTOP
            clients.add(c);
        }
        Map<String, Long> perWorker = gateway.lines(l -> RUNS_ON.matcher(l).find()).stream().skip(earlier)
                .map(l -> matcher(RUNS_ON, l).group(2)).collect(Collectors.groupingBy(a -> a, Collectors.counting()));
        String victimAddress = workers.keySet().stream()
                .max(Comparator.comparingLong(a -> perWorker.getOrDefault(a, 0L))).orElseThrow();
        long onVictim = perWorker.getOrDefault(victimAddress, 0L);
        NodeProcess victim = workers.remove(victimAddress);
        // A loaded machine's hiccup may have had the victim unreachable for a moment before: the verdict
        // awaited is the next one.
        int verdictsBefore = gateway.lines(l -> l.contains("node " + victimAddress + " is unreachable")).size();
        int lostBefore = lostLines(victimAddress);

        signal("STOP", victim);
        long stopped = System.nanoTime();
        List<CompletableFuture<Void>> reading = new ArrayList<>();
        for (SseClient c : clients) {
            reading.add(CompletableFuture.runAsync(() -> {
                try {
                    c.readAll();
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }, r -> Thread.ofVirtual().start(r)));
        }
        gateway.await(l -> l.contains("node " + victimAddress + " is unreachable"), verdictsBefore + 1,
                Duration.ofSeconds(30), "the failure detector's verdict on the stopped worker");
        long verdict = System.nanoTime();
        gateway.await(l -> l.contains("node " + victimAddress + " is out of the cluster"), 1, Duration.ofSeconds(30),
                "the split-brain resolver downing the stopped worker");
        long downed = System.nanoTime();
        signal("CONT", victim);
        assertThat(victim.process.waitFor(60, TimeUnit.SECONDS)).as("the stopped worker, downed, exits once it runs again")
                .isTrue();

        for (int i = 0; i < prompts.length; i++) {
            reading.get(i).get(120, TimeUnit.SECONDS);
            SseClient c = clients.get(i);
            assertThat(c.error).as("stream of '%s'", prompts[i]).isNull();
            assertThat(c.done).as("[DONE] of '%s'", prompts[i]).isTrue();
            assertThat(c.finish).as("finish_reason of '%s'", prompts[i]).isEqualTo("length");
            assertThat(c.text.toString()).as("text of '%s' against a single node's", prompts[i])
                    .isEqualTo(expected.get(prompts[i]));
        }
        List<String> resumed = gateway.lines(l -> RESUMED.matcher(l).find()).stream().skip(resumedBefore).toList();
        long lost = midStream(victimAddress, lostBefore, onVictim);
        assertThat(resumed).as("streams of the stopped worker resumed: every one that lost it").hasSize((int) lost);
        long slowest = resumed.stream().mapToLong(l -> Long.parseLong(matcher(RESUMED, l).group(3))).max().orElseThrow();
        assertThat(slowest).as("resumption after the failure detector's verdict, ms").isLessThan(3000);
        Map<String, Double> after = scrape(httpPort);
        assertThat(delta(before, after, failovers(EmbeddedModel.NAME, victimAddress)))
                .as("/metrics: failovers from the stopped worker").isEqualTo(lost);
        System.out.printf("partition: %d streams, %d on the stopped worker, %d of them mid-stream at the stop, all"
                + " resumed, every text exact; verdict %d ms after SIGSTOP, slowest resumption %d ms after the verdict;"
                + " downed %d ms after the verdict; the worker exited after SIGCONT (%d earlier verdicts on it, healed)%n",
                prompts.length, onVictim, lost, TimeUnit.NANOSECONDS.toMillis(verdict - stopped), slowest,
                TimeUnit.NANOSECONDS.toMillis(downed - verdict), verdictsBefore);
    }

    @Test
    @Order(7)
    void aGatewaysDeathEndsOnlyItsOwnClientsStreamsAndAnotherGatewayServes() throws Exception {
        assertThat(workers).as("one worker").hasSize(1);
        String worker = workers.keySet().iterator().next();
        NodeProcess workerNode = workers.get(worker);
        // A second gateway joins through the worker (not the first gateway, the seed that is about to die).
        NodeProcess second = start("gateway-2", List.of(), clusterArgs("gateway", NodeProcess.freePort(),
                List.of("--port", "0", "--join", worker.substring(worker.indexOf('@') + 1))));
        int secondPort = Integer.parseInt(second.await(l -> l.contains("listening on http://"), 1,
                Duration.ofSeconds(90), "the second gateway's HTTP listener").getFirst().replaceAll(".*:(\\d+)$", "$1"));
        second.await(l -> l.contains(" serves " + EmbeddedModel.NAME), 1, Duration.ofSeconds(90),
                "the worker's load report at the second gateway");

        // Clients of both gateways stream from the one worker; the first gateway dies mid-stream.
        String[] onFirst = {"Tom had a dog. 6", "The cat 6", "Sam had a red ball. 6", "Once upon a time 6"};
        String[] onSecond = {"Lily and Ben went to the park. 6", "Mia wanted to fly like a bird. 6"};
        Map<String, String> expected = singleNodeTexts(onSecond, MAX_TOKENS);
        int cancelledBefore = workerNode.lines(l -> l.contains(" ended: CANCELLED")).size();
        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        // The second gateway's clients start first: the first gateway's streams have only begun when it
        // dies (started together, a stream of the first could finish before the last client began).
        CountDownLatch secondStreaming = new CountDownLatch(onSecond.length);
        List<CompletableFuture<Stream>> secondClients = new ArrayList<>();
        for (String p : onSecond) {
            secondClients.add(CompletableFuture.supplyAsync(() -> stream(http, secondPort, p, secondStreaming),
                    r -> Thread.ofVirtual().start(r)));
        }
        assertThat(secondStreaming.await(60, TimeUnit.SECONDS)).as("the second gateway's clients streaming").isTrue();
        CountDownLatch firstStreaming = new CountDownLatch(onFirst.length);
        List<CompletableFuture<Stream>> firstClients = new ArrayList<>();
        for (String p : onFirst) {
            firstClients.add(CompletableFuture.supplyAsync(() -> stream(http, httpPort, p, firstStreaming),
                    r -> Thread.ofVirtual().start(r)));
        }
        assertThat(firstStreaming.await(60, TimeUnit.SECONDS)).as("the first gateway's clients streaming").isTrue();

        gateway.kill();
        for (CompletableFuture<Stream> c : firstClients) {
            Stream s = c.get(60, TimeUnit.SECONDS);
            assertThat(s.done).as("the dead gateway's client of '%s' got no [DONE]", s.prompt).isFalse();
            assertThat(s.error).as("the dead gateway's client of '%s' lost its connection", s.prompt).isNotNull();
        }
        for (CompletableFuture<Stream> c : secondClients) {
            Stream s = c.get(120, TimeUnit.SECONDS);
            assertThat(s.error).as("the other gateway's client of '%s'", s.prompt).isNull();
            assertThat(s.done).as("[DONE] of '%s'", s.prompt).isTrue();
            assertThat(s.text.toString()).as("text of '%s'", s.prompt).isEqualTo(expected.get(s.prompt));
        }
        workerNode.await(l -> l.contains(" ended: CANCELLED"), cancelledBefore + onFirst.length, Duration.ofSeconds(30),
                "the dead gateway's requests cancelled on the worker");
        second.await(l -> l.contains(" is out of the cluster"), 1, Duration.ofSeconds(30),
                "the dead gateway downed");

        // The second gateway serves new requests after the first one (the seed, the oldest node) is gone.
        String prompt = onSecond[0];
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + secondPort + "/v1/completions")).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(JSON.createObjectNode().put("prompt", prompt)
                        .put("max_tokens", 16).put("temperature", 0).put("ignore_eos", true).toString())).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(expected.get(prompt)).startsWith(JSON.readTree(r.body()).at("/choices/0/text").asText());
    }

    @Test
    @Order(1) // while the three workers are up
    void repeatedPromptsOfOneSystemPrefixLandOnOneWorker() throws Exception {
        String system = "You are a kind teacher who tells short and happy stories to little children at bedtime. ";
        String[] questions = {"Tell me about a cat.", "Tell me about a dog.", "What did the bird say?",
            "Where did the fish go?", "Who lives in the tree?", "Why is the sun warm?"};
        Map<String, Double> before = scrape(httpPort);
        HttpClient http = HttpClient.newHttpClient();
        for (String q : questions) {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort
                    + "/v1/completions")).header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(JSON.createObjectNode().put("prompt", system + q)
                            .put("max_tokens", 8).put("temperature", 0).toString())).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        }
        Map<String, Double> after = scrape(httpPort);
        Map<String, Long> routed = new java.util.TreeMap<>();
        for (String w : workers.keySet()) {
            routed.put(w, delta(before, after, routed(EmbeddedModel.NAME, w)));
        }
        System.out.printf("prefix affinity: %s; affinity hits %d of %d%n", routed,
                delta(before, after, "tandem_cluster_affinity_total{placed=\"affine\"}"), questions.length);
        assertThat(routed.values()).as("requests per worker, from /metrics").containsExactlyInAnyOrder(
                (long) questions.length, 0L, 0L);
        assertThat(delta(before, after, "tandem_cluster_affinity_total{placed=\"affine\"}"))
                .as("/metrics: on their affine worker").isEqualTo(questions.length);
        assertThat(delta(before, after, "tandem_cluster_affinity_total{placed=\"other\"}")).isZero();
    }

    /** The gateway's lines so far that say a stream lost {@code worker}. */
    private static int lostLines(String worker) {
        return gateway.lines(l -> l.contains(" lost worker " + worker + " ")).size();
    }

    /**
     * The streams that lost {@code worker} since {@code before} of its loss lines: at least one (else
     * the scenario did not happen) and at most the {@code on} streams that ran on it. Those of its
     * streams that are not among them had ended before it went (its buffers and the client's can
     * hold a stream's whole rest on a loaded machine), and their exact texts are checked all the same.
     */
    private static long midStream(String worker, int before, long on) {
        long lost = lostLines(worker) - before;
        assertThat(lost).as("streams that lost %s mid-stream, of the %d that ran on it", worker, on).isPositive()
                .isLessThanOrEqualTo(on);
        return lost;
    }

    /** A worker's routing identity as the gateway computes it ({@link WorkerDirectory.Worker#identity()}). */
    private static long identity(String address) {
        return WorkerDirectory.Worker.identity(address + "/user/worker");
    }

    private static void signal(String signal, NodeProcess node) throws Exception {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(node.process.pid())).inheritIO().start();
        assertThat(kill.waitFor()).as("kill -%s", signal).isZero();
    }

    /** The gateway's {@code /metrics}, sample by sample ({@code name{labels}} to value). */
    private static Map<String, Double> scrape(int port) throws Exception {
        HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + port + "/metrics")).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(200);
        Map<String, Double> samples = new java.util.HashMap<>();
        for (String line : r.body().split("\n")) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            int space = line.lastIndexOf(' ');
            samples.put(line.substring(0, space), Double.parseDouble(line.substring(space + 1)));
        }
        return samples;
    }

    private static long delta(Map<String, Double> before, Map<String, Double> after, String sample) {
        return Math.round(after.getOrDefault(sample, 0.0) - before.getOrDefault(sample, 0.0));
    }

    /** What one node of the embedded model yields for each prompt. */
    private static Map<String, String> singleNodeTexts(String[] prompts, int maxTokens) {
        return singleNodeTexts(EmbeddedModel.path(), prompts, maxTokens);
    }

    /** What one node of the model at {@code path} yields for each prompt: the same greedy generation on a batcher in this JVM. */
    private static Map<String, String> singleNodeTexts(Path path, String[] prompts, int maxTokens) {
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(1))) {
            LanguageModel model = LanguageModel.load(worker, path);
            // One batch for all prompts: with 32 prompts in batches of 8, this batcher's close() was seen to
            // wait forever after every member had ended (a follow-up for tandem-llm).
            try (BatcherEngine engine = BatcherEngine.start(worker, model,
                    BatcherConfig.builder().maxBatch(prompts.length).build())) {
                GenerateOptions options = GenerateOptions.defaults().withMaxTokens(maxTokens).withIgnoreEos(true);
                Map<String, dev.tandem.llm.Completion> running = new java.util.HashMap<>();
                for (String p : prompts) {
                    running.put(p, engine.submit(model.encode(p), options, null));
                }
                Map<String, String> texts = new java.util.HashMap<>();
                running.forEach((p, c) -> texts.put(p, c.await()));
                return texts;
            }
        }
    }

    /** One client's stream, as it saw it. */
    private static final class Stream {
        final String prompt;
        final StringBuilder text = new StringBuilder();
        final List<Long> arrivals = new ArrayList<>();
        String finish;
        int completionTokens = -1;
        boolean done;
        String error;

        Stream(String prompt) {
            this.prompt = prompt;
        }

        /** The longest wait between two chunks after {@code t}, in ms: the stall of a stream whose worker died at {@code t}. */
        long stallAfter(long t) {
            long longest = 0;
            for (int i = 1; i < arrivals.size(); i++) {
                if (arrivals.get(i) > t) {
                    longest = Math.max(longest, arrivals.get(i) - Math.max(t, arrivals.get(i - 1)));
                }
            }
            return TimeUnit.NANOSECONDS.toMillis(longest);
        }
    }

    private static Stream stream(HttpClient http, int port, String prompt, CountDownLatch streaming) {
        return stream(http, port, prompt, MAX_TOKENS, streaming);
    }

    private static Stream stream(HttpClient http, int port, String prompt, int maxTokens, CountDownLatch streaming) {
        Stream s = new Stream(prompt);
        String body = JSON.createObjectNode().put("prompt", prompt).put("max_tokens", maxTokens).put("temperature", 0)
                .put("stream", true).put("ignore_eos", true)
                .set("stream_options", JSON.createObjectNode().put("include_usage", true)).toString();
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/completions"))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build();
        boolean counted = false;
        try {
            HttpResponse<java.util.stream.Stream<String>> response = http.send(request,
                    HttpResponse.BodyHandlers.ofLines());
            if (response.statusCode() != 200) {
                s.error = "HTTP " + response.statusCode() + ": " + response.body().collect(Collectors.joining("\n"));
                return s;
            }
            for (String line : (Iterable<String>) response.body()::iterator) {
                if (!line.startsWith("data: ")) {
                    continue;
                }
                String data = line.substring(6);
                if (data.equals("[DONE]")) {
                    s.done = true;
                    continue;
                }
                JsonNode chunk = JSON.readTree(data);
                if (chunk.has("error")) {
                    s.error = chunk.get("error").toString();
                    continue;
                }
                if (chunk.has("usage") && chunk.get("usage").isObject()) {
                    s.completionTokens = chunk.get("usage").get("completion_tokens").asInt();
                }
                JsonNode choices = chunk.get("choices");
                if (choices != null && !choices.isEmpty()) {
                    JsonNode c = choices.get(0);
                    s.text.append(c.path("text").asText(""));
                    if (c.hasNonNull("finish_reason")) {
                        s.finish = c.get("finish_reason").asText();
                    }
                    s.arrivals.add(System.nanoTime());
                    if (!counted && s.arrivals.size() >= 8) {
                        counted = true;
                        streaming.countDown();
                    }
                }
            }
        } catch (Exception e) {
            s.error = e.toString();
        } finally {
            if (!counted) {
                streaming.countDown();
            }
        }
        return s;
    }

    private static Matcher matcher(Pattern p, String line) {
        Matcher m = p.matcher(line);
        if (!m.find()) {
            throw new AssertionError("no match of " + p + " in " + line);
        }
        return m;
    }
}
