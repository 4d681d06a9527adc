package dev.tandem.llm.safetensors;

import com.fasterxml.jackson.databind.JsonNode;
import dev.tandem.kernels.Ops;
import dev.tandem.kernels.TensorType;
import dev.tandem.llm.model.LlamaConfig;
import dev.tandem.llm.model.LlamaWeights;
import dev.tandem.llm.model.RopeStyle;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;

/**
 * The weights of a Hugging Face model directory of a Llama-family decoder ({@code model_type}
 * llama, mistral, qwen2 or qwen3): {@code config.json} and either {@code model.safetensors} or a
 * sharded {@code model.safetensors.index.json} with its shards. The tokenizer and generation
 * files of the directory are not read here.
 *
 * <p><b>Rope.</b> Hugging Face checkpoints rotate each head's halves ({@code rotate_half}) for
 * every one of these architectures, so the config has {@link RopeStyle#NEOX} and the query and key
 * rows are used as stored (llama.cpp's converter permutes them to interleaved pairs; nothing is
 * permuted here). Llama 3's {@code rope_scaling} ({@code "rope_type": "llama3"}) becomes
 * {@link LlamaWeights.Tensor#ROPE_FREQS}, computed as llama.cpp's converter computes
 * {@code rope_freqs.weight} ({@link #llama3RopeFactors}); any other scaling is an error.
 *
 * <p><b>Weight types.</b> When every matrix is BF16 (the usual checkpoint), or every one F16, the
 * model is {@link TensorType#BF16} (or {@link TensorType#F16}) and its matrices are handed out as
 * read-only slices of the mapping, which the kernels widen in their loops: 2 bytes a weight on
 * the worker. Otherwise the model is {@link TensorType#F32}: F32 tensors as slices, F16 and BF16
 * ones widened exactly through the kernels' dequantisers (in an automatic arena, dropped once
 * {@link dev.tandem.llm.model.LlamaModel} has copied them). Norms, biases and rope factors are f32
 * either way.
 *
 * <p><b>{@code config.json}.</b> Required: {@code model_type}, {@code hidden_size},
 * {@code num_hidden_layers}, {@code num_attention_heads}, {@code intermediate_size},
 * {@code vocab_size}, {@code max_position_embeddings}, {@code rms_norm_eps}. Optional, with the
 * defaults of the transformers library: {@code num_key_value_heads} (the query heads),
 * {@code head_dim} ({@code hidden_size / num_attention_heads}), {@code rope_theta} (10000),
 * {@code tie_word_embeddings} (false), {@code rope_scaling} (none). The q/k/v biases (Qwen2, or a
 * Llama with {@code attention_bias}) and Qwen3's per-head q/k norms are read when their tensors are
 * present. A sliding window in force ({@code sliding_window} of a Mistral, or with
 * {@code use_sliding_window}) shorter than the context caps the context length at the window,
 * where full attention computes the same thing. A missing or malformed field is a one-line
 * {@link SafetensorsException} naming {@code config.json} and the field.
 *
 * <p>Close it after the model is loaded (the worker holds its own copies).
 */
public final class SafetensorsModel implements LlamaWeights, AutoCloseable {
    /** The {@code model_type}s this loader reads. */
    public static final List<String> MODEL_TYPES = List.of("llama", "mistral", "qwen2", "qwen3");

    /** The file of an unsharded checkpoint. */
    public static final String SINGLE_FILE = "model.safetensors";

    /** The index of a sharded checkpoint. */
    public static final String INDEX_FILE = "model.safetensors.index.json";

    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final Path dir;
    private final Path configPath;
    private final List<SafetensorsFile> files;
    /** Tensor name to the file holding it. */
    private final Map<String, SafetensorsFile> where;
    private final String modelType;
    private final LlamaConfig config;
    private final float[] ropeFactors;

    private SafetensorsModel(Path dir, List<SafetensorsFile> files, Map<String, SafetensorsFile> where, JsonNode json,
            int maxContext) {
        this.dir = dir;
        this.configPath = dir.resolve("config.json");
        this.files = Collections.unmodifiableList(files);
        this.where = where;
        String type = text(json, "model_type");
        if (!MODEL_TYPES.contains(type)) {
            throw configFail("model_type = " + type + " is unsupported (supported: " + String.join(", ", MODEL_TYPES)
                    + ")");
        }
        this.modelType = type;
        String act = optionalText(json, "hidden_act").orElse("silu");
        if (!act.equals("silu")) {
            throw configFail("hidden_act = " + act + " is unsupported (only silu)");
        }
        JsonNode partial = json.get("partial_rotary_factor");
        if (partial != null && !partial.isNull() && partial.asDouble() != 1.0) {
            throw configFail("partial_rotary_factor = " + partial + " is unsupported (only 1)");
        }
        int dim = integer(json, "hidden_size");
        int layers = integer(json, "num_hidden_layers");
        int heads = integer(json, "num_attention_heads");
        int kvHeads = optionalInteger(json, "num_key_value_heads").orElse(heads);
        int headDim = optionalInteger(json, "head_dim").orElse(heads > 0 && dim % heads == 0 ? dim / heads : 0);
        int ffn = integer(json, "intermediate_size");
        int vocab = integer(json, "vocab_size");
        int context = integer(json, "max_position_embeddings");
        float eps = (float) number(json, "rms_norm_eps");
        double theta = optionalNumber(json, "rope_theta").orElse(10000.0);
        boolean tied = optionalBoolean(json, "tie_word_embeddings").orElse(false);
        Optional<Integer> window = optionalInteger(json, "sliding_window");
        boolean windowed = type.equals("mistral") || optionalBoolean(json, "use_sliding_window").orElse(false);
        if (window.isPresent() && windowed && window.get() < context) {
            context = window.get();
        }
        if (maxContext > 0) {
            context = Math.min(context, maxContext);
        }
        this.ropeFactors = ropeScaling(json, headDim, theta);
        boolean bias = where.containsKey(name(Tensor.BQ, 0));
        boolean qkNorm = where.containsKey(name(Tensor.Q_NORM, 0));
        for (String unsupported : List.of("self_attn.o_proj.bias", "mlp.gate_proj.bias", "mlp.up_proj.bias",
                "mlp.down_proj.bias")) {
            if (where.containsKey("model.layers.0." + unsupported)) {
                throw fail(dir, "has tensor model.layers.0." + unsupported + "; biases other than q/k/v are"
                        + " unsupported");
            }
        }
        LlamaConfig c;
        try {
            c = new LlamaConfig(dim, layers, heads, kvHeads, headDim, ffn, vocab, context, (float) theta,
                    RopeStyle.NEOX, ropeFactors != null, eps, TensorType.F32, bias, qkNorm, tied);
        } catch (IllegalArgumentException e) {
            throw configFail("hyper-parameters do not form a model: " + e.getMessage(), e);
        }
        c = c.withWeightType(matrixType(c));
        this.config = c;
        for (Tensor t : Tensor.values()) {
            if (!t.present(c) || t == Tensor.ROPE_FREQS || (t == Tensor.OUTPUT && tied)) {
                continue;
            }
            for (int l = 0; l < (t.perLayer() ? layers : 1); l++) {
                SafetensorsTensor s = tensorNamed(name(t, l));
                long[] expected = t.norm() ? new long[] {t.cols(c)} : new long[] {t.rows(c), t.cols(c)};
                if (!Arrays.equals(s.shape(), expected)) {
                    throw fail(where.get(s.name()).path(), "tensor " + s.name() + " has shape "
                            + Arrays.toString(s.shape()) + ", expected " + Arrays.toString(expected) + " for "
                            + type + " (config.json)");
                }
            }
        }
    }

    /** Opens the model directory {@code dir}, its context length as {@code config.json} says. */
    public static SafetensorsModel open(Path dir) {
        return open(dir, 0);
    }

    /**
     * Opens the model directory {@code dir}.
     *
     * @param maxContext caps the context length (0: {@code max_position_embeddings})
     * @throws SafetensorsException naming the file and what is wrong
     */
    public static SafetensorsModel open(Path dir, int maxContext) {
        JsonNode config = readJson(dir.resolve("config.json"));
        if (!config.isObject()) {
            throw fail(dir.resolve("config.json"), "is not a JSON object");
        }
        List<SafetensorsFile> files = new ArrayList<>();
        try {
            Map<String, SafetensorsFile> where = new LinkedHashMap<>();
            Path index = dir.resolve(INDEX_FILE);
            if (Files.exists(index)) {
                Map<String, String> map = weightMap(index);
                Map<String, SafetensorsFile> shards = new LinkedHashMap<>();
                for (String shard : new TreeSet<>(map.values())) {
                    SafetensorsFile f = SafetensorsFile.open(dir.resolve(shard));
                    files.add(f);
                    shards.put(shard, f);
                }
                for (Map.Entry<String, String> e : map.entrySet()) {
                    SafetensorsFile f = shards.get(e.getValue());
                    if (f.tensor(e.getKey()).isEmpty()) {
                        throw fail(index, "maps tensor " + e.getKey() + " to " + e.getValue()
                                + ", which does not hold it");
                    }
                    where.put(e.getKey(), f);
                }
            } else {
                Path single = dir.resolve(SINGLE_FILE);
                if (!Files.exists(single)) {
                    throw fail(dir, "has neither " + SINGLE_FILE + " nor " + INDEX_FILE);
                }
                SafetensorsFile f = SafetensorsFile.open(single);
                files.add(f);
                for (SafetensorsTensor t : f.tensors()) {
                    where.put(t.name(), f);
                }
            }
            return new SafetensorsModel(dir, files, where, config, maxContext);
        } catch (RuntimeException | Error e) {
            for (SafetensorsFile f : files) {
                f.close();
            }
            throw e;
        }
    }

    private static Map<String, String> weightMap(Path index) {
        JsonNode root = readJson(index);
        JsonNode map = root.get("weight_map");
        if (map == null || !map.isObject()) {
            throw fail(index, "has no weight_map object");
        }
        Map<String, String> out = new LinkedHashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = map.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            if (!e.getValue().isTextual()) {
                throw fail(index, "weight_map." + e.getKey() + " is not a file name");
            }
            String shard = e.getValue().textValue();
            Path p = Path.of(shard);
            if (p.isAbsolute() || p.getNameCount() != 1 || shard.equals("..") || shard.equals(".")
                    || shard.contains("/") || shard.contains("\\")) {
                throw fail(index, "weight_map." + e.getKey() + " = " + shard + " is not a file name in the directory");
            }
            out.put(e.getKey(), shard);
        }
        return out;
    }

    private static JsonNode readJson(Path file) {
        if (!Files.isRegularFile(file)) {
            throw fail(file, "missing");
        }
        try {
            JsonNode node = SafetensorsFile.JSON.readTree(file.toFile());
            if (node == null || node.isMissingNode()) {
                throw fail(file, "is empty");
            }
            return node;
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw fail(file, "is not valid JSON: " + SafetensorsFile.oneLine(e.getOriginalMessage()), e);
        } catch (IOException e) {
            throw fail(file, "cannot read: " + e.getMessage(), e);
        }
    }

    /**
     * The Llama 3 rope factors of a {@code rope_scaling} object, or {@code null} when the config has
     * none (or the {@code default} type, or {@code linear} with factor 1).
     */
    private float[] ropeScaling(JsonNode json, int headDim, double theta) {
        JsonNode s = json.get("rope_scaling");
        if (s == null || s.isNull()) {
            return null;
        }
        if (!s.isObject()) {
            throw configFail("rope_scaling = " + SafetensorsFile.oneLine(s.toString()) + " is not an object");
        }
        JsonNode typeNode = s.has("rope_type") ? s.get("rope_type") : s.get("type");
        String type = typeNode == null || !typeNode.isTextual() ? "" : typeNode.textValue();
        double factor = scalingNumber(s, "factor", 8.0);
        if (type.equals("default") || (type.equals("linear") && factor == 1.0)) {
            return null;
        }
        if (!type.equals("llama3")) {
            throw configFail("rope_scaling type " + (type.isEmpty() ? "(none given)" : type)
                    + " is unsupported (only llama3)");
        }
        double low = scalingNumber(s, "low_freq_factor", 1.0);
        double high = scalingNumber(s, "high_freq_factor", 4.0);
        double original = scalingNumber(s, "original_max_position_embeddings", 8192);
        if (!(factor > 0) || !(low > 0) || !(high > low) || !(original > 0)) {
            throw configFail("rope_scaling needs factor > 0 and 0 < low_freq_factor < high_freq_factor, and"
                    + " original_max_position_embeddings > 0; has factor " + factor + ", low_freq_factor " + low
                    + ", high_freq_factor " + high + ", original_max_position_embeddings " + original);
        }
        if (headDim <= 0 || headDim % 2 != 0) {
            return null; // the config's own check names headDim
        }
        return llama3RopeFactors(headDim, theta, factor, low, high, original);
    }

    private double scalingNumber(JsonNode s, String field, double fallback) {
        JsonNode n = s.get(field);
        if (n == null || n.isNull()) {
            return fallback;
        }
        if (!n.isNumber()) {
            throw configFail("rope_scaling." + field + " = " + SafetensorsFile.oneLine(n.toString())
                    + " is not a number");
        }
        return n.doubleValue();
    }

    /**
     * The divisors of the rotary frequencies that Llama 3's rope scaling applies, exactly as
     * llama.cpp's {@code convert_hf_to_gguf.py} computes {@code rope_freqs.weight}: in f32 as its
     * torch code runs, for pair {@code i} with {@code freq = 1 / theta^(2i / headDim)} and
     * {@code wavelen = 2π / freq}: 1 when {@code wavelen < original / high}, {@code factor} when
     * {@code wavelen > original / low}, else {@code 1 / ((1 - smooth) / factor + smooth)} with
     * {@code smooth = (original / wavelen - low) / (high - low)}.
     */
    public static float[] llama3RopeFactors(int headDim, double theta, double factor, double low, double high,
            double original) {
        int pairs = headDim / 2;
        float[] out = new float[pairs];
        float highWavelen = (float) (original / high);
        float lowWavelen = (float) (original / low);
        for (int i = 0; i < pairs; i++) {
            // torch: base ** (arange(0, dim, 2, dtype=float32) / dim), then 1.0 / that.
            float exponent = (float) (2 * i) / (float) headDim;
            float freq = 1f / (float) Math.pow((float) theta, exponent);
            // A Python scalar divided by a tensor is the tensor's reciprocal times the scalar, in f32.
            float wavelen = (1f / freq) * (float) (2 * Math.PI);
            if (wavelen < highWavelen) {
                out[i] = 1f;
            } else if (wavelen > lowWavelen) {
                out[i] = (float) factor;
            } else {
                float smooth = ((1f / wavelen) * (float) original - (float) low) / (float) (high - low);
                out[i] = 1f / ((1f - smooth) / (float) factor + smooth);
            }
        }
        return out;
    }

    /** The Hugging Face name of a tensor (absent for {@link Tensor#ROPE_FREQS}, which the config defines). */
    public static String name(Tensor tensor, int layer) {
        String l = "model.layers." + layer + ".";
        return switch (tensor) {
            case TOKEN_EMBEDDING -> "model.embed_tokens.weight";
            case ATTENTION_NORM -> l + "input_layernorm.weight";
            case WQ -> l + "self_attn.q_proj.weight";
            case WK -> l + "self_attn.k_proj.weight";
            case WV -> l + "self_attn.v_proj.weight";
            case BQ -> l + "self_attn.q_proj.bias";
            case BK -> l + "self_attn.k_proj.bias";
            case BV -> l + "self_attn.v_proj.bias";
            case Q_NORM -> l + "self_attn.q_norm.weight";
            case K_NORM -> l + "self_attn.k_norm.weight";
            case WO -> l + "self_attn.o_proj.weight";
            case FFN_NORM -> l + "post_attention_layernorm.weight";
            case W1 -> l + "mlp.gate_proj.weight";
            case W2 -> l + "mlp.down_proj.weight";
            case W3 -> l + "mlp.up_proj.weight";
            case OUTPUT_NORM -> "model.norm.weight";
            case OUTPUT -> "lm_head.weight";
            case ROPE_FREQS -> "rope_freqs.weight";
            case ATTENTION_POST_NORM, FFN_POST_NORM -> throw new IllegalArgumentException(tensor
                    + ": Gemma's post-norms are read from GGUF files only; a Hugging Face directory of the Llama family"
                    + " has none");
        };
    }

    public Path directory() {
        return dir;
    }

    public String modelType() {
        return modelType;
    }

    /** The mapped files, one or the shards. */
    public List<SafetensorsFile> files() {
        return files;
    }

    @Override
    public LlamaConfig config() {
        return config;
    }

    @Override
    public MemorySegment tensor(Tensor tensor, int layer) {
        if (tensor == Tensor.ROPE_FREQS) {
            if (ropeFactors == null) {
                throw new IllegalArgumentException(dir + ": has no rope scaling");
            }
            MemorySegment out = Arena.ofAuto().allocate((long) ropeFactors.length * Float.BYTES, 64);
            for (int i = 0; i < ropeFactors.length; i++) {
                out.setAtIndex(F32, i, ropeFactors[i]);
            }
            return out;
        }
        if (tensor == Tensor.OUTPUT && config.tiedEmbeddings()) {
            tensor = Tensor.TOKEN_EMBEDDING;
        }
        SafetensorsTensor t = tensorNamed(name(tensor, tensor.perLayer() ? layer : 0));
        MemorySegment bytes = where.get(t.name()).data(t);
        if (t.dtype() == SafetensorsDtype.F32 || (!tensor.norm() && config.weightType() != TensorType.F32)) {
            return bytes; // an f32 tensor, or a matrix of an all-F16 or all-BF16 model: as stored
        }
        long elements = t.elements();
        MemorySegment f32 = Arena.ofAuto().allocate(elements * Float.BYTES, 64);
        Ops.preferred().dequantize(t.dtype().kernelType(), bytes, 0, f32, 0, elements);
        return f32;
    }

    /**
     * The model's {@link TensorType}: BF16 (or F16) when every matrix is stored in it, which the
     * kernels widen in their loops; else F32, every matrix widened at load.
     */
    private TensorType matrixType(LlamaConfig c) {
        SafetensorsDtype common = null;
        for (Tensor tensor : Tensor.values()) {
            if (tensor.norm() || !tensor.present(c) || (tensor == Tensor.OUTPUT && c.tiedEmbeddings())) {
                continue;
            }
            for (int l = 0; l < (tensor.perLayer() ? c.layers() : 1); l++) {
                SafetensorsDtype dtype = tensorNamed(name(tensor, l)).dtype();
                if (common != null && dtype != common) {
                    return TensorType.F32;
                }
                common = dtype;
            }
        }
        return common == SafetensorsDtype.BF16 ? TensorType.BF16
                : common == SafetensorsDtype.F16 ? TensorType.F16 : TensorType.F32;
    }

    /** Unmaps every file. */
    @Override
    public void close() {
        for (SafetensorsFile f : files) {
            f.close();
        }
    }

    private SafetensorsTensor tensorNamed(String name) {
        SafetensorsFile f = where.get(name);
        if (f == null) {
            throw fail(dir, "has no tensor " + name + " (model_type " + modelType + ")");
        }
        return f.tensor(name).orElseThrow();
    }

    // ---- config.json fields -----------------------------------------------------------------------

    private JsonNode field(JsonNode json, String name) {
        JsonNode n = json.get(name);
        if (n == null || n.isNull()) {
            throw configFail("missing required field " + name);
        }
        return n;
    }

    private String text(JsonNode json, String name) {
        JsonNode n = field(json, name);
        if (!n.isTextual()) {
            throw configFail(name + " = " + SafetensorsFile.oneLine(n.toString()) + " is not a string");
        }
        return n.textValue();
    }

    private Optional<String> optionalText(JsonNode json, String name) {
        JsonNode n = json.get(name);
        return n == null || n.isNull() ? Optional.empty() : Optional.of(text(json, name));
    }

    private int integer(JsonNode json, String name) {
        JsonNode n = field(json, name);
        if (!n.isIntegralNumber() || !n.canConvertToInt() || n.intValue() < 0) {
            throw configFail(name + " = " + SafetensorsFile.oneLine(n.toString()) + " is not an integer in [0, 2^31)");
        }
        return n.intValue();
    }

    private Optional<Integer> optionalInteger(JsonNode json, String name) {
        JsonNode n = json.get(name);
        return n == null || n.isNull() ? Optional.empty() : Optional.of(integer(json, name));
    }

    private double number(JsonNode json, String name) {
        JsonNode n = field(json, name);
        if (!n.isNumber() || !Double.isFinite(n.doubleValue())) {
            throw configFail(name + " = " + SafetensorsFile.oneLine(n.toString()) + " is not a finite number");
        }
        return n.doubleValue();
    }

    private Optional<Double> optionalNumber(JsonNode json, String name) {
        JsonNode n = json.get(name);
        return n == null || n.isNull() ? Optional.empty() : Optional.of(number(json, name));
    }

    private Optional<Boolean> optionalBoolean(JsonNode json, String name) {
        JsonNode n = json.get(name);
        if (n == null || n.isNull()) {
            return Optional.empty();
        }
        if (!n.isBoolean()) {
            throw configFail(name + " = " + SafetensorsFile.oneLine(n.toString()) + " is not a boolean");
        }
        return Optional.of(n.booleanValue());
    }

    private SafetensorsException configFail(String message) {
        return fail(configPath, message);
    }

    private SafetensorsException configFail(String message, Throwable cause) {
        return new SafetensorsException(configPath + ": " + message, cause);
    }

    private static SafetensorsException fail(Path path, String message) {
        return new SafetensorsException(path + ": " + message);
    }

    private static SafetensorsException fail(Path path, String message, Throwable cause) {
        return new SafetensorsException(path + ": " + message, cause);
    }

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "%s (%s, %s)", dir.getFileName(), modelType, config);
    }
}
