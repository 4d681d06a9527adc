package dev.tandem.llm.gguf;

import dev.tandem.kernels.TensorType;
import dev.tandem.llm.model.Architecture;
import dev.tandem.llm.model.LlamaConfig;
import dev.tandem.llm.model.LlamaWeights;
import dev.tandem.llm.model.RopeStyle;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The weights of a Llama-family GGUF checkpoint ({@code general.architecture} llama, mistral,
 * qwen2 or qwen3), with every hyper-parameter read from the file.
 *
 * <p>What reaches the worker: norm weights, biases and rope factors as f32; the model's
 * {@link TensorType} chosen from the file's types: the one type when every matrix has it and it is
 * not F32 (F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL or IQ4_XS); else {@code Q8_0} (a label: nothing is
 * converted) when every matrix has one of those types, all of which have kernels; else
 * {@code F32} (F16 and BF16 widen exactly; 4 bytes a weight). In such a model every matrix of
 * every layer ({@link #type}) runs as stored, so llama.cpp's Q4_K_M files, with Q6_K in the
 * classifier and in half the layers' value and down projections (and Q5_0 in the matrices whose
 * rows are not a multiple of 256), run with the file's exact
 * weights and bytes, and an F16 file reads 2 bytes a weight per token; an F32 model (any F32
 * matrix) converts what is not F32. Same-type tensors are handed out as read-only slices of the mapping, which
 * {@link dev.tandem.llm.model.LlamaModel} copies once into frozen worker buffers; converted ones are
 * built in automatic arenas, which the collector frees once they are copied.
 *
 * <p>An unsupported architecture, tensor type or shape is a {@link GgufException} naming it.
 * Close it after the model is loaded (the worker holds its own copies).
 */
public final class GgufModel implements LlamaWeights, AutoCloseable {
    /** The architectures this loader reads. */
    public static final List<String> ARCHITECTURES = List.of("llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3",
            "phi3");

    /** The tensor types it converts from. */
    public static final Set<String> TENSOR_TYPES = Set.of("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K",
            "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS");

    private final GgufFile file;
    private final String architecture;
    /** Each matrix's type on the worker, per layer (one entry for tensors not per layer). */
    private final Map<Tensor, TensorType[]> types = new EnumMap<>(Tensor.class);
    private final LlamaConfig config;

    private GgufModel(GgufFile file, int maxContext) {
        this.file = file;
        GgufMetadata m = file.metadata();
        String arch = m.string("general.architecture")
                .orElseThrow(() -> fail("metadata has no general.architecture; is this a model file?"));
        if (!ARCHITECTURES.contains(arch)) {
            throw fail("unsupported architecture '" + arch + "' (supported: " + String.join(", ", ARCHITECTURES) + ")");
        }
        this.architecture = arch;
        if (file.tensors().isEmpty()) {
            throw fail("has no tensors (a vocabulary-only file?)");
        }
        int dim = required(arch + ".embedding_length");
        int layers = required(arch + ".block_count");
        int heads = required(arch + ".attention.head_count");
        int kvHeads = optional(arch + ".attention.head_count_kv", heads);
        int ffn = required(arch + ".feed_forward_length");
        int headDim = optional(arch + ".attention.key_length", heads > 0 && dim % heads == 0 ? dim / heads : 0);
        int valueDim = optional(arch + ".attention.value_length", headDim);
        if (valueDim != headDim) {
            throw fail(arch + ".attention.value_length = " + valueDim + " differs from key_length = " + headDim
                    + "; unsupported");
        }
        int rotary = optional(arch + ".rope.dimension_count", headDim);
        if (rotary != headDim) {
            throw fail(arch + ".rope.dimension_count = " + rotary + " rotates part of a head of " + headDim
                    + "; partial rotary embedding is unsupported");
        }
        String scaling = m.string(arch + ".rope.scaling.type").orElse("none");
        double scalingFactor = m.number(arch + ".rope.scaling.factor").orElse(1.0);
        if (!scaling.equals("none") && !(scaling.equals("linear") && scalingFactor > 0)) {
            throw fail(arch + ".rope.scaling.type = " + scaling + " is unsupported (linear scaling is; Llama 3's"
                    + " scaling comes as rope_freqs.weight and Phi-3's LongRoPE as rope_factors_short/long, which are"
                    + " supported)");
        }
        float ropeScale = scaling.equals("linear") ? (float) (1 / scalingFactor) : 1f;
        int trainedContext = optional(arch + ".context_length", 2048);
        int context = trainedContext;
        if (maxContext > 0) {
            context = Math.min(context, maxContext);
        }
        float theta = m.number(arch + ".rope.freq_base").orElse(10000.0).floatValue();
        float eps = m.number(arch + ".attention.layer_norm_rms_epsilon").orElse(1e-5).floatValue();
        GgufTensor embedding = tensorNamed("token_embd.weight");
        int vocab = (int) embedding.rows();
        boolean tied = file.tensor("output.weight").isEmpty();
        boolean bias = file.tensor("blk.0.attn_q.bias").isPresent();
        boolean qkNorm = file.tensor("blk.0.attn_q_norm.weight").isPresent();
        // LongRoPE (Phi-3): the short factors up to the original context, the long ones beyond,
        // as llama.cpp picks them for a context of this length.
        int originalContext = optional(arch + ".rope.scaling.original_context_length", trainedContext);
        this.ropeFactorsName = file.tensor("rope_freqs.weight").isPresent() ? "rope_freqs.weight"
                : file.tensor("rope_factors_long.weight").isEmpty() ? null
                : context > originalContext ? "rope_factors_long.weight" : "rope_factors_short.weight";
        boolean factors = ropeFactorsName != null;
        RopeStyle style = NEOX_ARCHITECTURES.contains(arch) ? RopeStyle.NEOX : RopeStyle.INTERLEAVED;
        float attentionFactor = m.number(arch + ".rope.scaling.attn_factor").orElse(1.0).floatValue();
        Architecture features = architecture(arch, dim, layers, heads, headDim, theta, ropeScale)
                .withRope(ropeScale, attentionFactor);
        this.fusedQkv = file.tensor("blk.0.attn_qkv.weight").isPresent();
        this.fusedGateUp = file.tensor("blk.0.ffn_gate.weight").isEmpty() && file.tensor("blk.0.ffn_up.weight")
                .map(t -> t.dims().length == 2 && t.dims()[1] == 2L * ffn).orElse(false);
        TensorType type = chooseWeightType();
        LlamaConfig c;
        try {
            c = new LlamaConfig(dim, layers, heads, kvHeads, headDim, ffn, vocab, context, theta, style, factors, eps,
                    type, bias, qkNorm, tied, features);
        } catch (IllegalArgumentException e) {
            throw fail("hyper-parameters do not form a model: " + e.getMessage(), e);
        }
        this.config = c;
        for (Tensor t : Tensor.values()) {
            if (!t.present(c) || (t == Tensor.OUTPUT && tied)) {
                continue;
            }
            for (int l = 0; l < (t.perLayer() ? layers : 1); l++) {
                Slice slice = slice(t, l, c);
                GgufTensor g = slice.tensor();
                long[] expected = t.norm() ? new long[] {t.cols(c)} : new long[] {t.cols(c), slice.totalRows()};
                long[] dims = g.dims();
                if (!Arrays.equals(trimOnes(dims), trimOnes(expected))) {
                    throw fail("tensor " + g.name() + " has shape " + Arrays.toString(dims) + ", expected "
                            + Arrays.toString(expected) + " for " + arch);
                }
                if (!TENSOR_TYPES.contains(g.type().name())) {
                    throw fail("tensor " + g.name() + " has type " + g.type() + ", unsupported (supported: "
                            + String.join(", ", TENSOR_TYPES.stream().sorted().toList()) + ")");
                }
            }
        }
        for (Tensor t : Tensor.values()) {
            if (t.present(c) && !t.norm() && !(t == Tensor.OUTPUT && tied)) {
                TensorType[] perLayer = new TensorType[t.perLayer() ? layers : 1];
                for (int l = 0; l < perLayer.length; l++) {
                    perLayer[l] = c.weightType() == TensorType.F32 ? TensorType.F32
                            : quantisedKernelType(slice(t, l, c).tensor().type().name());
                }
                types.put(t, perLayer);
            }
        }
    }

    /** Opens {@code path} as a model, its context length as the file says. */
    public static GgufModel open(Path path) {
        return open(path, 0);
    }

    /**
     * Opens {@code path} as a model.
     *
     * @param maxContext caps the context length (0: the file's {@code context_length})
     * @throws GgufException naming the file and what is wrong
     */
    public static GgufModel open(Path path, int maxContext) {
        GgufFile file = GgufFile.open(path);
        try {
            return new GgufModel(file, maxContext);
        } catch (RuntimeException e) {
            file.close();
            throw e;
        }
    }

    public GgufFile file() {
        return file;
    }

    public String architecture() {
        return architecture;
    }

    @Override
    public LlamaConfig config() {
        return config;
    }

    @Override
    public MemorySegment tensor(Tensor tensor, int layer) {
        if (tensor == Tensor.OUTPUT && config.tiedEmbeddings()) {
            tensor = Tensor.TOKEN_EMBEDDING;
        }
        Slice slice = slice(tensor, tensor.perLayer() ? layer : 0, config);
        GgufTensor g = slice.tensor();
        MemorySegment bytes = file.data(g);
        long elements = g.elements();
        if (slice.totalRows() != tensor.rows(config) || slice.firstRow() != 0) { // a part of a fused matrix
            long rowBytes = g.type().rowBytes(tensor.cols(config));
            bytes = bytes.asSlice(slice.firstRow() * rowBytes, (long) tensor.rows(config) * rowBytes);
            elements = (long) tensor.rows(config) * tensor.cols(config);
        }
        GgmlType target = tensor.norm() ? GgmlType.F32 : GgmlType.byName(type(tensor, layer).name());
        if (g.type().equals(target)) {
            return bytes;
        }
        // Only an F32 model converts: a quantised one runs every matrix as stored.
        MemorySegment f32 = Arena.ofAuto().allocate(elements * Float.BYTES, 64);
        TensorConversion.toF32(g.type(), bytes, f32, elements);
        return f32;
    }

    /** The GGUF name of a tensor, as llama.cpp names them. */
    public static String name(Tensor tensor, int layer) {
        String blk = "blk." + layer + ".";
        return switch (tensor) {
            case TOKEN_EMBEDDING -> "token_embd.weight";
            case ATTENTION_NORM -> blk + "attn_norm.weight";
            case WQ -> blk + "attn_q.weight";
            case WK -> blk + "attn_k.weight";
            case WV -> blk + "attn_v.weight";
            case BQ -> blk + "attn_q.bias";
            case BK -> blk + "attn_k.bias";
            case BV -> blk + "attn_v.bias";
            case Q_NORM -> blk + "attn_q_norm.weight";
            case K_NORM -> blk + "attn_k_norm.weight";
            case WO -> blk + "attn_output.weight";
            case FFN_NORM -> blk + "ffn_norm.weight";
            case W1 -> blk + "ffn_gate.weight";
            case W2 -> blk + "ffn_down.weight";
            case W3 -> blk + "ffn_up.weight";
            case OUTPUT_NORM -> "output_norm.weight";
            case OUTPUT -> "output.weight";
            case ROPE_FREQS -> "rope_freqs.weight";
            case ATTENTION_POST_NORM -> blk + "post_attention_norm.weight";
            case FFN_POST_NORM -> blk + "post_ffw_norm.weight";
        };
    }

    /** Architectures whose rope rotates halves (llama.cpp's {@code LLAMA_ROPE_TYPE_NEOX}). */
    private static final Set<String> NEOX_ARCHITECTURES = Set.of("qwen2", "qwen3", "gemma2", "gemma3", "phi3");

    /** Which of the rope factor tensors the model uses (Phi-3's short or long ones, by context), or null. */
    private final String ropeFactorsName;
    /** Whether q, k and v come in one {@code attn_qkv} matrix, and gate and up in one {@code ffn_up} (Phi-3). */
    private final boolean fusedQkv;
    private final boolean fusedGateUp;

    /**
     * Where a tensor's rows live: its own tensor, or rows {@code [firstRow, firstRow + rows)} of
     * a fused one of {@code totalRows} rows (q, k, v in that order in {@code attn_qkv}; gate, then
     * up in {@code ffn_up}, as llama.cpp's {@code ggml_swiglu} splits it).
     */
    private record Slice(GgufTensor tensor, long firstRow, long totalRows) {}

    private Slice slice(Tensor t, int layer, LlamaConfig c) {
        String blk = "blk." + layer + ".";
        if (fusedQkv && (t == Tensor.WQ || t == Tensor.WK || t == Tensor.WV)) {
            long first = t == Tensor.WQ ? 0 : t == Tensor.WK ? c.qDim() : c.qDim() + c.kvDim();
            return new Slice(tensorNamed(blk + "attn_qkv.weight"), first, c.qDim() + 2L * c.kvDim());
        }
        if (fusedGateUp && (t == Tensor.W1 || t == Tensor.W3)) {
            return new Slice(tensorNamed(blk + "ffn_up.weight"), t == Tensor.W1 ? 0 : c.ffnDim(), 2L * c.ffnDim());
        }
        if (t == Tensor.ROPE_FREQS) {
            return new Slice(tensorNamed(ropeFactorsName), 0, 1);
        }
        return new Slice(tensorNamed(name(t, layer)), 0, t.rows(c));
    }

    /**
     * The family's features as llama.cpp's loader derives them from the file (its
     * {@code src/models/<arch>.cpp}): the defaults and the rules below are llama.cpp's, not the
     * Hugging Face config's, so the same file computes the same thing in both. Gemma's attention
     * scale is {@code 1/sqrt(headDim)} but for the 27B shapes (46 layers of Gemma 2, 62 of
     * Gemma 3), where it is {@code 1/sqrt(dim / heads)}: llama.cpp's stand-in for
     * {@code query_pre_attn_scalar}, which GGUF files do not carry.
     */
    private Architecture architecture(String arch, int dim, int layers, int heads, int headDim, float theta,
            float ropeScale) {
        GgufMetadata m = file.metadata();
        return switch (arch) {
            case "gemma2", "gemma3" -> {
                boolean large = layers == (arch.equals("gemma2") ? 46 : 62);
                float scale = (float) (1.0 / Math.sqrt(large ? dim / heads : headDim));
                float logitCap = m.number(arch + ".final_logit_softcapping").orElse(arch.equals("gemma2") ? 30.0 : 0.0)
                        .floatValue();
                int window = optional(arch + ".attention.sliding_window", arch.equals("gemma2") ? 4096 : 0);
                // One integer (a per-layer array is refused by the metadata reader, naming the key).
                int period = optional(arch + ".attention.sliding_window_pattern", arch.equals("gemma2") ? 2 : 6);
                if (arch.equals("gemma2")) {
                    float attentionCap = m.number(arch + ".attn_logit_softcapping").orElse(50.0).floatValue();
                    float slidingTheta = m.number(arch + ".rope.freq_base_swa").orElse((double) theta).floatValue();
                    yield Architecture.gemma2(dim, scale, attentionCap, logitCap, window, period, slidingTheta,
                            ropeScale);
                }
                float slidingTheta = m.number(arch + ".rope.freq_base_swa").orElse(10000.0).floatValue();
                yield Architecture.gemma3(dim, scale, logitCap, window, period, slidingTheta, ropeScale);
            }
            case "phi3" -> Architecture.phi3(1f); // sliding_window is in Phi-3 files, and llama.cpp ignores it
            default -> Architecture.LLAMA; // llama, mistral, qwen2, qwen3: one decoder
        };
    }

    /** Unmaps the file. */
    @Override
    public void close() {
        file.close();
    }

    /** The {@link TensorType} of ggml type {@code name} other than F32 (the quantised and half types), else null. */
    private static TensorType quantisedKernelType(String name) {
        for (TensorType t : TensorType.values()) {
            if (t != TensorType.F32 && t.name().equals(name)) {
                return t;
            }
        }
        return null;
    }

    @Override
    public TensorType type(Tensor tensor, int layer) {
        if (tensor == Tensor.OUTPUT && config.tiedEmbeddings()) {
            tensor = Tensor.TOKEN_EMBEDDING;
        }
        TensorType[] t = types.get(tensor);
        if (t == null) {
            throw new IllegalArgumentException(tensor + " is not a matrix of this model");
        }
        if (tensor.perLayer() && (layer < 0 || layer >= t.length)) {
            throw new IllegalArgumentException(tensor + ": layer " + layer + " is outside [0, " + t.length + ")");
        }
        return t[tensor.perLayer() ? layer : 0];
    }

    /**
     * The model's type: the one quantised type when every matrix has it; else Q8_0 (a label)
     * when every matrix has a quantised kernel type; else F32.
     */
    private TensorType chooseWeightType() {
        Set<String> matrixTypes = new TreeSet<>();
        for (GgufTensor t : file.tensors()) {
            if (t.dims().length >= 2) {
                matrixTypes.add(t.type().name());
            }
        }
        if (!matrixTypes.stream().allMatch(name -> quantisedKernelType(name) != null)) {
            return TensorType.F32;
        }
        return matrixTypes.size() == 1 ? quantisedKernelType(matrixTypes.iterator().next()) : TensorType.Q8_0;
    }

    private static long[] trimOnes(long[] dims) {
        int n = dims.length;
        while (n > 1 && dims[n - 1] == 1) {
            n--;
        }
        return Arrays.copyOf(dims, n);
    }

    private GgufTensor tensorNamed(String name) {
        return file.tensor(name).orElseThrow(() -> fail("has no tensor " + name + " (architecture "
                + file.metadata().string("general.architecture").orElse("?") + ")"));
    }

    private int required(String key) {
        long v = file.metadata().integer(key).orElseThrow(() -> fail("metadata has no " + key));
        return toInt(key, v);
    }

    private int optional(String key, int fallback) {
        var v = file.metadata().integer(key);
        return v.isPresent() ? toInt(key, v.getAsLong()) : fallback;
    }

    private int toInt(String key, long v) {
        if (v < 0 || v > Integer.MAX_VALUE) {
            throw fail("metadata " + key + " = " + v + " is out of range");
        }
        return (int) v;
    }

    private GgufException fail(String message) {
        return new GgufException(file.path() + ": " + message);
    }

    private GgufException fail(String message, Throwable cause) {
        return new GgufException(file.path() + ": " + message, cause);
    }

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "%s (%s, %s)", file.path().getFileName(), architecture, config);
    }
}
