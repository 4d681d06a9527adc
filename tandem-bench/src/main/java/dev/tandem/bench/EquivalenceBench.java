package dev.tandem.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.CpuDeviceConfig;
import dev.tandem.RunOptions;
import dev.tandem.Token;
import dev.tandem.TokenStream;
import dev.tandem.Worker;
import dev.tandem.bench.peers.LlamaCppPeer;
import dev.tandem.kernels.TensorType;
import dev.tandem.llm.gguf.GgmlType;
import dev.tandem.llm.gguf.GgufModel;
import dev.tandem.llm.model.Architecture;
import dev.tandem.llm.model.LlamaConfig;
import dev.tandem.llm.model.LlamaModel;
import dev.tandem.llm.model.LlamaRequest;
import dev.tandem.llm.model.RopeStyle;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Greedy tokens of tandem against llama.cpp's on the same files: random-weight GGUFs of each
 * architecture ({@link RandomGguf}, F32, then {@code llama-quantize}d by llama.cpp itself to each
 * type), the same prompt of token ids, the same number of tokens. llama.cpp runs as
 * {@code llama-server} (temperature 0, {@code n_probs} 5: its top-5 log-probabilities before
 * sampling, at every step); tandem runs the file with {@link LlamaModel} on a worker and returns
 * its logits at every step.
 *
 * <p>The tie rule: the two sequences are equal, or they first differ at a step where
 * llama.cpp's own two best tokens are within {@link #TIE_LOGITS} of each other (their
 * log-probabilities differ by their logits' difference). Up to the first difference, tandem's
 * probabilities of llama.cpp's top-5 tokens are compared too: the largest difference is reported.
 *
 * <p>Nothing here builds llama.cpp: without {@code llama-server} and {@code llama-quantize} in
 * {@link LlamaCppPeer#home()}, {@link #unavailable()} says so and a caller reports a skip.
 */
public final class EquivalenceBench {

    /** A divergence is a tie when llama.cpp's top two logits differ by at most this (nats). */
    public static final double TIE_LOGITS = 0.05;

    /** Greedy tokens generated per run. */
    public static final int TOKENS = 24;

    /**
     * The prompt, as token ids of the embedded 512-token vocabulary: BOS, then normal pieces (ids
     * 3-258 are byte tokens, which a printable file embeds as zeros when its classifier is tied).
     */
    static final int[] PROMPT = {1, 415, 300, 333, 287, 400, 312, 499, 356, 270};

    private static final int CONTEXT = 128;

    private EquivalenceBench() {}

    /** Why the comparison cannot run here, or null when llama.cpp's binaries are built. */
    public static String unavailable() {
        for (String tool : List.of("llama-server", "llama-quantize")) {
            if (!Files.isExecutable(LlamaCppPeer.binary(tool))) {
                return "llama.cpp peer not built here (no " + LlamaCppPeer.binary(tool) + "); build it with"
                        + " `tandem bench decode --peer llama.cpp` first";
            }
        }
        return null;
    }

    /**
     * One comparison.
     *
     * @param steps       tokens compared
     * @param equal       whether the sequences are equal
     * @param divergence  the first step where they differ, or -1
     * @param gap         llama.cpp's top-1 minus top-2 logit at {@code divergence} (NaN if none)
     * @param maxProbDiff the largest difference of tandem's probability of one of llama.cpp's top-5
     *                    tokens from llama.cpp's, over the steps up to and including the divergence
     */
    public record Row(String architecture, String shape, String type, int steps, boolean equal, int divergence,
            double gap, double maxProbDiff) {
        public boolean tie() {
            return !equal && gap <= TIE_LOGITS;
        }

        public boolean ok() {
            return equal || tie();
        }

        public String line() {
            return String.format(Locale.ROOT, "%-7s %-6s %-7s %s%s max|dp| %.4f", architecture, shape, type,
                    equal ? "equal " + steps + "/" + steps
                            : "diverge at " + divergence + "/" + steps,
                    equal ? "" : String.format(Locale.ROOT, " (llama.cpp top-2 gap %.4f: %s)", gap,
                            tie() ? "tie" : "NOT a tie"),
                    maxProbDiff);
        }
    }

    /**
     * The shapes compared, two per architecture: a small one and one whose width is not a
     * multiple of 256 (llama-quantize falls back to other types there, as it does for real files).
     * Phi-3's shape a runs its short LongRoPE factors, shape b its long ones. (Mistral's GGUFs are
     * of the llama architecture.) The architecture's name is the file's {@code general.architecture}.
     */
    public static Map<String, LlamaConfig> shapes() {
        Map<String, LlamaConfig> shapes = new LinkedHashMap<>();
        for (String arch : List.of("llama", "qwen2", "qwen3", "gemma2", "gemma3", "phi3")) {
            for (String size : List.of("a", "b")) {
                int dim = size.equals("a") ? 256 : 384;
                int layers = size.equals("a") ? 2 : 3;
                shapes.put(arch + "-" + size, shape(arch, dim, layers));
            }
        }
        return shapes;
    }

    /**
     * A tied classifier over random embeddings gives logits of about 9 units' spread, so their
     * softmax is nearly one-hot and small differences would not show; Gemma's shapes cap their
     * logits at 10 (and Gemma 2's attention scores at 5), which flattens the top and makes the
     * cap's tanh matter without saturating it (at 3, many logits rounded to exactly 3.0).
     */
    private static LlamaConfig shape(String arch, int dim, int layers) {
        int heads = 4;
        int kvHeads = 2;
        int ffn = 2 * dim;
        return switch (arch) {
            case "gemma2" -> new LlamaConfig(dim, layers, heads, kvHeads, 128, ffn, 512, CONTEXT, 10000f,
                    RopeStyle.NEOX, false, 1e-6f, TensorType.F32, false, false, true,
                    Architecture.gemma2(dim, (float) (1 / Math.sqrt(128)), 5f, 10f, 8, 2, 10000f, 1f));
            case "gemma3" -> new LlamaConfig(dim, layers + 1, heads, kvHeads, 128, ffn, 512, CONTEXT, 1_000_000f,
                    RopeStyle.NEOX, false, 1e-6f, TensorType.F32, false, true, true,
                    Architecture.gemma3(dim, (float) (1 / Math.sqrt(128)), 10f, 8, 3, 10000f, 0.125f));
            case "phi3" -> new LlamaConfig(dim, layers, heads, heads, dim / heads, ffn, 512, CONTEXT, 10000f,
                    RopeStyle.NEOX, true, 1e-5f, TensorType.F32, false, false, false, Architecture.phi3(1.19f));
            // Qwen2: q/k/v biases; Qwen3: q/k norms and heads wider than dim / heads; both NeoX, tied.
            case "qwen2" -> new LlamaConfig(dim, layers, heads, kvHeads, dim / heads, ffn, 512, CONTEXT, 1_000_000f,
                    RopeStyle.NEOX, false, 1e-6f, TensorType.F32, true, false, true, Architecture.LLAMA.named("qwen2"));
            case "qwen3" -> new LlamaConfig(dim, layers, heads, kvHeads, 128, ffn, 512, CONTEXT, 1_000_000f,
                    RopeStyle.NEOX, false, 1e-6f, TensorType.F32, false, true, true, Architecture.LLAMA.named("qwen3"));
            default -> RandomGguf.shape(dim, layers, heads, kvHeads, ffn).withContextLength(CONTEXT);
        };
    }

    /** The types compared: what {@code llama-quantize} writes without an importance matrix, by its own names. */
    public static final List<String> TYPES = List.of("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1",
            "Q2_K", "Q3_K_M", "Q4_K_M", "Q5_K_M", "Q6_K", "IQ4_NL", "IQ4_XS");

    /**
     * Compares every shape in every type, handing each row to {@code progress} as it is done; the
     * files are written under {@code dir} (kept for reruns).
     */
    public static List<Row> runAll(Path dir, Map<String, LlamaConfig> shapes, List<String> types,
            java.util.function.Consumer<Row> progress) {
        List<Row> rows = new ArrayList<>();
        for (Map.Entry<String, LlamaConfig> shape : shapes.entrySet()) {
            // Phi-3's shape b has an original context below the one both engines run with: its long factors.
            int original = shape.getKey().equals("phi3-b") ? CONTEXT / 2 : RandomGguf.PHI3_ORIGINAL_CONTEXT;
            Path f32 = RandomGguf.cached(dir.resolve("eq-" + shape.getKey() + "-f32.gguf"), shape.getValue(),
                    GgmlType.F32, 46, true, original);
            for (String type : types) {
                Path file = type.equals("F32") ? f32 : quantize(f32, dir.resolve("eq-" + shape.getKey() + "-"
                        + type.toLowerCase(Locale.ROOT) + ".gguf"), type);
                Row row = compare(shape.getValue().architecture().name(), shape.getKey(), type, file);
                progress.accept(row);
                rows.add(row);
            }
        }
        return rows;
    }

    /** {@code llama-quantize f32 out type}, unless {@code out} exists. */
    static Path quantize(Path f32, Path out, String type) {
        if (Files.exists(out)) {
            return out;
        }
        try {
            Path log = Files.createTempFile("tandem-quantize", ".log");
            Process p = new ProcessBuilder(LlamaCppPeer.binary("llama-quantize").toString(), f32.toString(),
                    out.toString(), type).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            if (!p.waitFor(5, TimeUnit.MINUTES) || p.exitValue() != 0) {
                p.destroyForcibly();
                Files.deleteIfExists(out);
                throw new IllegalStateException("llama-quantize " + type + " of " + f32 + " failed (log: " + log + ")");
            }
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /** One file in both engines. */
    public static Row compare(String architecture, String shape, String type, Path file) {
        Peer peer = peer(file);
        float[][] logits = tandem(file);
        int steps = peer.tokens().length;
        double maxProbDiff = 0;
        for (int k = 0; k < steps; k++) {
            float[] step = logits[k];
            int ours = argmax(step);
            double[] probs = softmax(step);
            // Up to and including the first difference: until then both ran the same tokens.
            for (int i = 0; i < peer.topIds()[k].length; i++) {
                double theirs = Math.exp(peer.topLogprobs()[k][i]);
                maxProbDiff = Math.max(maxProbDiff, Math.abs(probs[peer.topIds()[k][i]] - theirs));
            }
            if (ours != peer.tokens()[k]) {
                double gap = peer.topLogprobs()[k][0] - peer.topLogprobs()[k][1];
                return new Row(architecture, shape, type, steps, false, k, gap, maxProbDiff);
            }
        }
        return new Row(architecture, shape, type, steps, true, -1, Double.NaN, maxProbDiff);
    }

    /** llama.cpp's greedy tokens and, per step, its top-5 tokens and their log-probabilities. */
    record Peer(int[] tokens, int[][] topIds, double[][] topLogprobs) {}

    private static Peer peer(Path file) {
        Object started = LlamaCppPeer.startServer(file, 2, 1, CONTEXT);
        if (!(started instanceof LlamaCppPeer.Server server)) {
            throw new IllegalStateException(file + ": " + started);
        }
        try (server) {
            ObjectMapper json = new ObjectMapper();
            Map<String, Object> body = new LinkedHashMap<>();
            body.put("prompt", PROMPT);
            body.put("n_predict", TOKENS);
            body.put("temperature", 0.0);
            body.put("n_probs", 5);
            body.put("ignore_eos", true);
            body.put("cache_prompt", false);
            HttpRequest request = HttpRequest.newBuilder(server.base().resolve(URI.create("/completion")))
                    .timeout(Duration.ofMinutes(2)).header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(json.writeValueAsString(body))).build();
            HttpResponse<String> response = HttpClient.newHttpClient().send(request, HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() != 200) {
                throw new IllegalStateException(file + ": llama-server answered " + response.statusCode() + ": "
                        + response.body());
            }
            JsonNode steps = json.readTree(response.body()).path("completion_probabilities");
            int n = steps.size();
            int[] tokens = new int[n];
            int[][] ids = new int[n][];
            double[][] logprobs = new double[n][];
            for (int k = 0; k < n; k++) {
                JsonNode step = steps.get(k);
                tokens[k] = step.path("id").asInt();
                JsonNode top = step.path("top_logprobs");
                ids[k] = new int[top.size()];
                logprobs[k] = new double[top.size()];
                for (int i = 0; i < top.size(); i++) {
                    ids[k][i] = top.get(i).path("id").asInt();
                    logprobs[k][i] = top.get(i).path("logprob").asDouble();
                }
            }
            return new Peer(tokens, ids, logprobs);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /** tandem's logits at each of {@link #TOKENS} greedy steps on {@code file}. */
    static float[][] tandem(Path file) {
        try (GgufModel weights = GgufModel.open(file, CONTEXT); Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
            LlamaModel model = LlamaModel.load(worker, weights);
            int vocab = weights.config().vocab();
            LlamaRequest request = LlamaRequest.of(PROMPT, TOKENS).withLogits(true);
            TokenStream stream = worker.run(model.program(), request, RunOptions.defaults().withMaxTokens(TOKENS));
            List<float[]> steps = new ArrayList<>();
            for (Token token : stream) {
                ByteBuffer bytes = ByteBuffer.wrap(token.bytes()).order(ByteOrder.LITTLE_ENDIAN);
                bytes.getInt();
                float[] logits = new float[vocab];
                for (int i = 0; i < vocab; i++) {
                    logits[i] = bytes.getFloat();
                }
                steps.add(logits);
            }
            stream.completion().join();
            return steps.toArray(float[][]::new);
        }
    }

    private static int argmax(float[] v) {
        int best = 0;
        for (int i = 1; i < v.length; i++) {
            if (v[i] > v[best]) {
                best = i;
            }
        }
        return best;
    }

    private static double[] softmax(float[] v) {
        double max = Double.NEGATIVE_INFINITY;
        for (float x : v) {
            max = Math.max(max, x);
        }
        double sum = 0;
        double[] p = new double[v.length];
        for (int i = 0; i < v.length; i++) {
            p[i] = Math.exp(v[i] - max);
            sum += p[i];
        }
        for (int i = 0; i < v.length; i++) {
            p[i] /= sum;
        }
        return p;
    }

    /** The table: per architecture and type, runs with equal tokens / runs compared, and ties. */
    public static String table(List<Row> rows) {
        Map<String, Map<String, int[]>> cells = new LinkedHashMap<>();
        List<String> types = new ArrayList<>();
        for (Row r : rows) {
            if (!types.contains(r.type())) {
                types.add(r.type());
            }
            int[] cell = cells.computeIfAbsent(r.architecture(), k -> new LinkedHashMap<>())
                    .computeIfAbsent(r.type(), k -> new int[4]);
            cell[0] += r.equal() ? 1 : 0;
            cell[1]++;
            cell[2] += r.tie() ? 1 : 0;
            cell[3] += r.ok() ? 0 : 1;
        }
        StringBuilder out = new StringBuilder("| architecture |");
        types.forEach(t -> out.append(' ').append(t).append(" |"));
        out.append("\n|---|");
        types.forEach(t -> out.append("---|"));
        cells.forEach((arch, byType) -> {
            out.append("\n| ").append(arch).append(" |");
            for (String t : types) {
                int[] c = byType.get(t);
                out.append(' ').append(c == null ? "-" : c[0] + "/" + c[1] + (c[2] > 0 ? " (" + c[2] + " tie)" : "")
                        + (c[3] > 0 ? " **" + c[3] + " FAIL**" : "")).append(" |");
            }
        });
        return out.append('\n').toString();
    }
}
