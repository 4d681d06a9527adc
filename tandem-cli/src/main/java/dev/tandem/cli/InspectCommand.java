package dev.tandem.cli;

import dev.tandem.kernels.TensorType;
import dev.tandem.llm.EmbeddedModel;
import dev.tandem.llm.gguf.GgufFile;
import dev.tandem.llm.gguf.GgufModel;
import dev.tandem.llm.gguf.GgufTensor;
import dev.tandem.llm.gguf.GgufValue;
import dev.tandem.llm.model.LlamaConfig;
import dev.tandem.llm.model.LlamaWeights;
import dev.tandem.llm.safetensors.SafetensorsFile;
import dev.tandem.llm.safetensors.SafetensorsModel;
import dev.tandem.llm.safetensors.SafetensorsTensor;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code tandem inspect}: what a checkpoint holds, without running it. */
@Command(
        name = "inspect",
        mixinStandardHelpOptions = true,
        description = "Show a checkpoint's architecture, shape, tensor types, vocabulary, chat template and size.")
public final class InspectCommand implements Runnable {

    @Option(names = "--model", required = true, paramLabel = "PATH|" + EmbeddedModel.NAME,
            description = "A GGUF file, a Hugging Face model directory, or " + EmbeddedModel.NAME + " for the embedded model.")
    String model;

    @Option(names = "--metadata", description = "Also list every metadata key and value.")
    boolean metadata;

    @Override
    public void run() {
        PrintStream out = System.out;
        Path path = EmbeddedModel.resolve(model);
        if (java.nio.file.Files.isDirectory(path)) {
            inspectDirectory(out, path);
            return;
        }
        try (GgufFile file = GgufFile.open(path)) {
            var m = file.metadata();
            out.printf(Locale.ROOT, "file          %s (GGUF v%d, %s)%n", path, file.version(), bytes(file.fileBytes()));
            out.printf(Locale.ROOT, "name          %s%n", m.string("general.name").orElse("-"));
            out.printf(Locale.ROOT, "architecture  %s%n", m.string("general.architecture").orElse("- (none)"));
            if (!file.tensors().isEmpty()) {
                Map<String, long[]> types = new TreeMap<>();
                for (GgufTensor t : file.tensors()) {
                    long[] countBytes = types.computeIfAbsent(t.type().name(), k -> new long[2]);
                    countBytes[0]++;
                    countBytes[1] += t.bytes();
                }
                StringBuilder summary = new StringBuilder();
                types.forEach((type, cb) -> summary.append(summary.isEmpty() ? "" : ", ")
                        .append(type).append(" x").append(cb[0]).append(" (").append(bytes(cb[1])).append(')'));
                out.printf(Locale.ROOT, "tensors       %d: %s%n", file.tensors().size(), summary);
                try (GgufModel weights = GgufModel.open(path)) {
                    LlamaConfig c = weights.config();
                    out.printf(Locale.ROOT, "shape         dim %d, %d layers, %d heads over %d KV heads (head dim %d), FFN %d,"
                                    + " vocab %d, context %d%n", c.dim(), c.layers(), c.heads(), c.kvHeads(), c.headDim(),
                            c.ffnDim(), c.vocab(), c.contextLength());
                    out.printf(Locale.ROOT, "variants      rope %s theta %.0f%s, eps %.1e%s%s%s%n", c.ropeStyle(),
                            c.ropeTheta(), c.ropeFactors() ? " with frequency factors" : "", c.normEps(),
                            c.attentionBias() ? ", q/k/v bias" : "", c.qkNorm() ? ", q/k norm" : "",
                            c.tiedEmbeddings() ? ", tied embeddings" : "");
                    out.printf(Locale.ROOT, "on a worker   %s%n", workerTypes(weights));
                    if (!c.architecture().equals(dev.tandem.llm.model.Architecture.LLAMA)) {
                        out.printf(Locale.ROOT, "family        %s%n", family(c));
                    }
                    out.printf(Locale.ROOT, "runnable      yes%n");
                } catch (RuntimeException e) {
                    out.printf(Locale.ROOT, "runnable      no: %s%n", e.getMessage());
                }
            }
            if (m.contains("tokenizer.ggml.tokens")) {
                out.printf(Locale.ROOT, "vocabulary    %d tokens, %s%s, BOS %s, EOS %s%n",
                        m.strings("tokenizer.ggml.tokens").size(), m.string("tokenizer.ggml.model").orElse("?"),
                        m.string("tokenizer.ggml.pre").map(p -> " (pre " + p + ")").orElse(""),
                        m.integer("tokenizer.ggml.bos_token_id").stream().mapToObj(Long::toString).findFirst().orElse("-"),
                        m.integer("tokenizer.ggml.eos_token_id").stream().mapToObj(Long::toString).findFirst().orElse("-"));
            }
            String template = m.string("tokenizer.chat_template").orElse(null);
            out.printf(Locale.ROOT, "chat template %s%n", template == null ? "none (the plain fallback is used)"
                    : template.length() + " characters: " + firstLine(template));
            if (metadata) {
                for (Map.Entry<String, GgufValue> e : m.asMap().entrySet()) {
                    out.printf(Locale.ROOT, "  %s = %s%n", e.getKey(), e.getValue());
                }
            }
        }
    }

    /** What the file's family does beyond Llama, in a line: {@code gemma2: GELU, post-norms, ...}. */
    static String family(LlamaConfig c) {
        dev.tandem.llm.model.Architecture a = c.architecture();
        java.util.List<String> parts = new java.util.ArrayList<>();
        if (a.activation() == dev.tandem.llm.model.Architecture.Activation.GELU_TANH) {
            parts.add("GELU gate");
        }
        if (a.embeddingScale() != 1f) {
            parts.add("embeddings x " + compact(a.embeddingScale()));
        }
        if (a.postNorms()) {
            parts.add("post-norms");
        }
        if (a.attentionSoftcap() > 0 || a.logitSoftcap() > 0) {
            parts.add("soft-caps " + compact(a.attentionSoftcap()) + " (attention) " + compact(a.logitSoftcap())
                    + " (logits)");
        }
        if (a.hasSlidingLayers()) {
            parts.add(String.format(Locale.ROOT, "window %d in %d of every %d layers (rope theta %.0f)",
                    a.slidingWindow(), a.slidingPeriod() - 1, a.slidingPeriod(), a.slidingRopeTheta()));
        }
        if (a.ropeScale() != 1f) {
            parts.add("linear rope scale " + compact(a.ropeScale()));
        }
        if (a.ropeAttentionFactor() != 1f) {
            parts.add("rope attention factor " + compact(a.ropeAttentionFactor()));
        }
        return a.name() + (parts.isEmpty() ? "" : ": " + String.join(", ", parts));
    }

    /** A float as its shortest decimal, without trailing zeros: 16, 0.125, 1.19. */
    private static String compact(float value) {
        return new java.math.BigDecimal(Float.toString(value)).stripTrailingZeros().toPlainString();
    }

    private static void inspectDirectory(PrintStream out, Path dir) {
        try (SafetensorsModel weights = SafetensorsModel.open(dir)) {
            long bytes = 0;
            Map<String, long[]> types = new TreeMap<>();
            for (SafetensorsFile f : weights.files()) {
                bytes += f.fileBytes();
                for (SafetensorsTensor t : f.tensors()) {
                    long[] cb = types.computeIfAbsent(t.dtype().name(), k -> new long[2]);
                    cb[0]++;
                    cb[1] += t.bytes();
                }
            }
            StringBuilder summary = new StringBuilder();
            types.forEach((type, cb) -> summary.append(summary.isEmpty() ? "" : ", ")
                    .append(type).append(" x").append(cb[0]).append(" (").append(bytes(cb[1])).append(')'));
            LlamaConfig c = weights.config();
            out.printf(Locale.ROOT, "directory     %s (safetensors, %d file(s), %s)%n", dir, weights.files().size(),
                    bytes(bytes));
            out.printf(Locale.ROOT, "architecture  %s%n", weights.modelType());
            out.printf(Locale.ROOT, "tensors       %s%n", summary);
            out.printf(Locale.ROOT, "shape         dim %d, %d layers, %d heads over %d KV heads (head dim %d), FFN %d,"
                            + " vocab %d, context %d%n", c.dim(), c.layers(), c.heads(), c.kvHeads(), c.headDim(),
                    c.ffnDim(), c.vocab(), c.contextLength());
            out.printf(Locale.ROOT, "variants      rope %s theta %.0f%s, eps %.1e%s%s%s%n", c.ropeStyle(), c.ropeTheta(),
                    c.ropeFactors() ? " with frequency factors" : "", c.normEps(),
                    c.attentionBias() ? ", q/k/v bias" : "", c.qkNorm() ? ", q/k norm" : "",
                    c.tiedEmbeddings() ? ", tied embeddings" : "");
            out.printf(Locale.ROOT, "on a worker   %s weights, %s%n", c.weightType(), bytes(c.weightBytes()));
        }
    }

    private static String firstLine(String s) {
        String line = s.strip().lines().findFirst().orElse("");
        return line.length() > 60 ? line.substring(0, 60) + "…" : line;
    }

    static String bytes(long n) {
        if (n < 10_000) {
            return n + " B";
        }
        if (n < 10_000_000) {
            return String.format(Locale.ROOT, "%.1f KB", n / 1e3);
        }
        if (n < 10_000_000_000L) {
            return String.format(Locale.ROOT, "%.1f MB", n / 1e6);
        }
        return String.format(Locale.ROOT, "%.2f GB", n / 1e9);
    }

    /**
     * The matrices' types on a worker and the bytes of all weights: {@code "Q8_0 weights, 27.3 MB"},
     * or for a mix {@code "Q4_K (wq, wk, ...), Q6_K (output) weights, 16.1 MB"}, where a matrix
     * whose layers differ is listed under each of its types with the layers that have it
     * ({@code "wv in 4 of 8 layers"}).
     */
    static String workerTypes(LlamaWeights weights) {
        LlamaConfig c = weights.config();
        Map<TensorType, List<String>> byType = new TreeMap<>();
        for (LlamaWeights.Tensor t : LlamaWeights.Tensor.values()) {
            if (t.present(c) && !t.norm()) {
                int layers = t.perLayer() ? c.layers() : 1;
                Map<TensorType, Integer> counts = new TreeMap<>();
                for (int l = 0; l < layers; l++) {
                    counts.merge(weights.type(t, l), 1, Integer::sum);
                }
                String name = t.name().toLowerCase(Locale.ROOT);
                counts.forEach((type, n) -> byType.computeIfAbsent(type, k -> new ArrayList<>())
                        .add(n == layers ? name : name + " in " + n + " of " + layers + " layers"));
            }
        }
        String types = byType.size() == 1 ? byType.keySet().iterator().next().toString()
                : String.join(", ", byType.entrySet().stream()
                        .map(e -> e.getKey() + " (" + String.join(", ", e.getValue()) + ")").toList());
        return types + " weights, " + bytes(c.weightBytes(weights::type));
    }
}
