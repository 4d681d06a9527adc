package dev.tandem.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.CpuDevice;
import dev.tandem.Worker;
import dev.tandem.bench.peers.LlamaCppPeer;
import dev.tandem.llm.BatcherConfig;
import dev.tandem.llm.LanguageModel;
import dev.tandem.llm.LlamaConfig;
import dev.tandem.llm.gguf.GgmlType;
import dev.tandem.server.BatcherEngine;
import dev.tandem.server.Engine;
import dev.tandem.server.ServerConfig;
import dev.tandem.server.SessionEngine;
import dev.tandem.server.TandemServer;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * {@code tandem bench serve}: closed-loop streaming clients over HTTP on loopback against
 * tandem's server with continuous batching, tandem's server without it (each request its own
 * batch-1 program) and, with the peer, {@code llama-server -np <clients>} on the same file.
 * All servers run at once and idle while another is measured; per concurrency level the
 * engines take turns for several rounds and each figure is the median of its rounds.
 */
public final class ServeBench {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** What one engine did at one concurrency, medians over the rounds. */
    public record Row(String model, String engine, int clients, int completions, double tokensPerSecond,
            double ttftP50Ms, double ttftP99Ms, double itlP50Ms, double itlP99Ms, int errors, String note) {

        public Map<String, Object> toJson() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("model", model);
            out.put("engine", engine);
            out.put("clients", clients);
            out.put("completions", completions);
            out.put("tokens_per_s", tokensPerSecond);
            out.put("ttft_p50_ms", ttftP50Ms);
            out.put("ttft_p99_ms", ttftP99Ms);
            out.put("itl_p50_ms", itlP50Ms);
            out.put("itl_p99_ms", itlP99Ms);
            out.put("errors", errors);
            if (note != null) {
                out.put("note", note);
            }
            return out;
        }
    }

    private ServeBench() {}

    /** The random {@code small}-shaped GGUF of {@code type} whose greedy output is printable text (written once). */
    public static Path printableFile(Path dir, GgmlType type) {
        return RandomGguf.cached(dir.resolve("tandem-serve-small-" + type.name().toLowerCase() + ".gguf"),
                PeerDecodeBench.shapes().get("small"), type, 7, true);
    }

    private static final List<String> PROMPTS = List.of("Once upon a time", "Lily and Ben went to the park.",
            "The little dog was sad because", "One day, a boy named Tim found a", "Sam had a red ball.",
            "There was a big tree in the garden.", "Mia wanted to fly like a bird.", "The sun was shining and");

    /** A server under test: its base URL and how to stop it. */
    private record Target(String engine, URI base, String model, AutoCloseable stop, String missing) {}

    /**
     * Measures {@code path} at each of {@code clients}.
     *
     * @param peer       whether to run llama.cpp's server too
     * @param progress   told each measurement as it ends (for people watching)
     */
    public static List<Row> run(String label, Path path, List<Integer> clients, int cores, int maxTokens,
            Duration perRun, int rounds, boolean peer, Consumer<String> progress) throws Exception {
        int maxClients = clients.stream().mapToInt(Integer::intValue).max().orElse(1);
        int slotContext = 64 + maxTokens + 16;
        List<Target> targets = new ArrayList<>();
        List<AutoCloseable> closers = new ArrayList<>();
        List<Row> rows = new ArrayList<>();
        try {
            Worker batchWorker = Worker.create(CpuDevice.withCores(cores));
            closers.add(batchWorker);
            LanguageModel batchModel = LanguageModel.load(batchWorker, path, slotContext);
            Engine batching = BatcherEngine.start(batchWorker, batchModel, BatcherConfig.builder()
                    .maxBatch(maxClients).maxQueued(maxClients).build());
            closers.add(0, batching);
            targets.add(serve("tandem", batching, closers));

            Worker plainWorker = Worker.create(CpuDevice.withCores(cores));
            closers.add(plainWorker);
            LanguageModel plainModel = LanguageModel.load(plainWorker, path, slotContext);
            Engine plain = SessionEngine.builder(plainWorker, plainModel).maxActive(maxClients).maxQueued(maxClients)
                    .build();
            closers.add(0, plain);
            targets.add(serve("tandem-unbatched", plain, closers));

            if (peer) {
                Object started = LlamaCppPeer.startServer(path, cores, maxClients, slotContext);
                if (started instanceof LlamaCppPeer.Server server) {
                    closers.add(0, server);
                    targets.add(new Target("llama.cpp", server.base(), path.getFileName().toString(), server, null));
                } else {
                    targets.add(new Target("llama.cpp", null, null, null, (String) started));
                }
            }
            ObjectNode extra = JSON.createObjectNode().put("ignore_eos", true);
            for (Target t : targets) { // warm-up: the JIT, the servers' first requests
                if (t.base() != null) {
                    ServeLoad.run(t.base(), t.model(), PROMPTS, Math.min(4, maxClients), maxTokens,
                            Duration.ofSeconds(2), extra);
                }
            }
            for (int c : clients) {
                List<List<ServeLoad.Result>> results = new ArrayList<>();
                for (int i = 0; i < targets.size(); i++) {
                    results.add(new ArrayList<>());
                }
                for (int r = 0; r < rounds; r++) {
                    for (int k = 0; k < targets.size(); k++) {
                        int i = (k + r) % targets.size(); // alternate who goes first
                        Target t = targets.get(i);
                        if (t.base() == null) {
                            continue;
                        }
                        ServeLoad.Result result = ServeLoad.run(t.base(), t.model(), PROMPTS, c, maxTokens, perRun,
                                extra);
                        results.get(i).add(result);
                        progress.accept(String.format(java.util.Locale.ROOT, "  %s, %d clients, round %d: %.1f tokens/s",
                                t.engine(), c, r + 1, result.tokensPerSecond()));
                    }
                }
                for (int i = 0; i < targets.size(); i++) {
                    Target t = targets.get(i);
                    List<ServeLoad.Result> rs = results.get(i);
                    if (rs.isEmpty()) {
                        rows.add(new Row(label, t.engine(), c, 0, Double.NaN, Double.NaN, Double.NaN, Double.NaN,
                                Double.NaN, 0, t.missing()));
                        continue;
                    }
                    String note = rs.stream().map(ServeLoad.Result::firstError).filter(e -> e != null).findFirst()
                            .orElse(null);
                    rows.add(new Row(label, t.engine(), c, rs.stream().mapToInt(ServeLoad.Result::completions).sum(),
                            median(rs, ServeLoad.Result::tokensPerSecond), median(rs, ServeLoad.Result::ttftP50Ms),
                            median(rs, ServeLoad.Result::ttftP99Ms), median(rs, ServeLoad.Result::itlP50Ms),
                            median(rs, ServeLoad.Result::itlP99Ms),
                            rs.stream().mapToInt(ServeLoad.Result::errors).sum(), note));
                }
            }
        } finally {
            for (AutoCloseable c : closers) {
                try {
                    c.close();
                } catch (Exception e) {
                    progress.accept("  closing " + c + ": " + e);
                }
            }
        }
        return rows;
    }

    private static Target serve(String engine, Engine e, List<AutoCloseable> closers) {
        TandemServer server = TandemServer.start(e, ServerConfig.builder().host("127.0.0.1").port(0)
                .drainTimeout(Duration.ofSeconds(1)).build());
        closers.add(0, server);
        return new Target(engine, URI.create("http://127.0.0.1:" + server.port()), server.modelName(), server, null);
    }

    private static double median(List<ServeLoad.Result> rs, java.util.function.ToDoubleFunction<ServeLoad.Result> f) {
        double[] v = rs.stream().mapToDouble(f).sorted().toArray();
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }
}
