package dev.tandem.llm.gguf;

import dev.tandem.kernels.Ops;
import dev.tandem.kernels.TensorType;
import dev.tandem.llm.model.LlamaConfig;
import dev.tandem.llm.model.LlamaWeights.Tensor;
import dev.tandem.llm.model.LlamaWeights;
import dev.tandem.llm.reference.GgufWriter;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * Writes f32 {@link LlamaWeights} as a llama.cpp-style GGUF checkpoint: the hyper-parameters as
 * {@code <arch>.*} metadata, the matrices (and the token embedding) in one tensor type, the norms,
 * biases and rope factors in F32.
 *
 * <p>With {@link #fromHuggingFace}, the weights are taken to be in Hugging Face's layout
 * (rotate_half rope) and the query and key rows (and biases) are permuted as llama.cpp's
 * {@code convert_hf_to_gguf.py} does for the llama architecture, {@code permute(w, n_head)}:
 * the rows of each head reshaped to {@code (2, headDim / 2)} and the two axes swapped, so that
 * GGUF row {@code 2i + a} of a head is Hugging Face row {@code a * headDim / 2 + i}.
 */
public final class GgufCheckpointWriter {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final LlamaWeights weights;
    private final LlamaConfig c;
    private String architecture = "llama";
    private GgmlType matrixType = GgmlType.F32;
    private boolean permute;
    private float[] ropeFactors;
    private final Set<String> omitted = new HashSet<>();
    private final Map<String, GgmlType> types = new HashMap<>();
    private final Map<String, long[]> dims = new HashMap<>();
    /** Tensors written as zero bytes of a type no encoder here knows: for the loader's refusal. */
    private final java.util.Set<String> unencoded = new java.util.HashSet<>();
    private Path vocabulary;
    private final Map<String, Object> extraMetadata = new java.util.LinkedHashMap<>();
    private boolean fused;
    private float[] longRopeFactors;

    public GgufCheckpointWriter(LlamaWeights weights) {
        if (weights.config().weightType() != TensorType.F32) {
            throw new IllegalArgumentException("the writer quantises f32 weights, given " + weights.config().weightType());
        }
        this.weights = weights;
        this.c = weights.config();
    }

    /** Copies the {@code tokenizer.*} metadata of {@code gguf}, so the file loads as a language model. */
    public GgufCheckpointWriter vocabularyFrom(Path gguf) {
        this.vocabulary = gguf;
        return this;
    }

    public GgufCheckpointWriter architecture(String value) {
        this.architecture = value;
        return this;
    }

    /** The type of every matrix and the token embedding. */
    public GgufCheckpointWriter matrixType(GgmlType value) {
        this.matrixType = value;
        return this;
    }

    /** Permutes q and k from Hugging Face's layout, as llama.cpp's converter does for llama. */
    public GgufCheckpointWriter fromHuggingFace(boolean value) {
        this.permute = value;
        return this;
    }

    /** Writes {@code rope_freqs.weight} with these values. */
    public GgufCheckpointWriter ropeFactors(float[] value) {
        this.ropeFactors = value.clone();
        return this;
    }

    /** Adds a metadata key: an Integer, a Float or a String. */
    public GgufCheckpointWriter metadata(String key, Object value) {
        extraMetadata.put(key, value);
        return this;
    }

    /**
     * Writes q, k, v as one {@code attn_qkv} and gate, up as one {@code ffn_up} per layer, and the
     * rope factors as {@code rope_factors_short} with {@code longFactors} as
     * {@code rope_factors_long}: Phi-3's layout.
     */
    public GgufCheckpointWriter fusedLikePhi3(float[] longFactors) {
        this.fused = true;
        this.longRopeFactors = longFactors.clone();
        return this;
    }

    /** Leaves the tensor of this GGUF name out. */
    public GgufCheckpointWriter omit(String name) {
        omitted.add(name);
        return this;
    }

    /** Writes the tensor of this GGUF name in {@code type} (zero bytes unless the writer can quantise to it). */
    public GgufCheckpointWriter type(String name, GgmlType type) {
        types.put(name, type);
        return this;
    }

    /**
     * Writes {@code name} as zero bytes of {@code type}, a type this writer cannot encode: a file
     * whose loader must refuse that tensor by its type (never one that decodes to zeros).
     */
    public GgufCheckpointWriter unencodedType(String name, GgmlType type) {
        types.put(name, type);
        unencoded.add(name);
        return this;
    }

    /** Declares the tensor of this GGUF name with these dims (ggml order) and raw zero bytes of {@code type}. */
    public GgufCheckpointWriter dims(String name, long[] value) {
        dims.put(name, value.clone());
        return this;
    }

    public void write(Path path) throws IOException {
        String a = architecture;
        GgufWriter w = new GgufWriter()
                .put("general.architecture", a)
                .put("general.name", "tandem random " + a)
                .put(a + ".context_length", c.contextLength())
                .put(a + ".embedding_length", c.dim())
                .put(a + ".block_count", c.layers())
                .put(a + ".feed_forward_length", c.ffnDim())
                .put(a + ".attention.head_count", c.heads())
                .put(a + ".attention.head_count_kv", c.kvHeads())
                .put(a + ".attention.key_length", c.headDim())
                .put(a + ".attention.value_length", c.headDim())
                .put(a + ".rope.dimension_count", c.headDim())
                .put(a + ".rope.freq_base", c.ropeTheta())
                .put(a + ".attention.layer_norm_rms_epsilon", c.normEps());
        for (var e : extraMetadata.entrySet()) {
            switch (e.getValue()) {
                case Integer i -> w.put(e.getKey(), i);
                case Float f -> w.put(e.getKey(), f);
                case String str -> w.put(e.getKey(), str);
                default -> throw new IllegalArgumentException("metadata " + e.getKey() + ": " + e.getValue());
            }
        }
        if (vocabulary != null) {
            try (GgufFile vocab = GgufFile.open(vocabulary)) {
                for (var e : vocab.metadata().asMap().entrySet()) {
                    if (e.getKey().startsWith("tokenizer.")) {
                        w.put(e.getKey(), e.getValue());
                    }
                }
            }
        }
        for (Tensor t : Tensor.values()) {
            if (!t.present(c) || t == Tensor.ROPE_FREQS || (t == Tensor.OUTPUT && c.tiedEmbeddings())) {
                continue;
            }
            if (fused && (t == Tensor.WK || t == Tensor.WV || t == Tensor.W3)) {
                continue; // written with WQ and W1
            }
            for (int l = 0; l < (t.perLayer() ? c.layers() : 1); l++) {
                String name = GgufModel.name(t, l);
                if (omitted.contains(name)) {
                    continue;
                }
                float[] values = read(weights.tensor(t, l));
                if (fused && (t == Tensor.WQ || t == Tensor.W1)) {
                    float[][] parts = t == Tensor.WQ
                            ? new float[][] {values, read(weights.tensor(Tensor.WK, l)), read(weights.tensor(Tensor.WV, l))}
                            : new float[][] {values, read(weights.tensor(Tensor.W3, l))};
                    int total = 0;
                    for (float[] part : parts) {
                        total += part.length;
                    }
                    float[] all = new float[total];
                    int at = 0;
                    for (float[] part : parts) {
                        System.arraycopy(part, 0, all, at, part.length);
                        at += part.length;
                    }
                    String fusedName = "blk." + l + (t == Tensor.WQ ? ".attn_qkv.weight" : ".ffn_up.weight");
                    w.tensor(fusedName, matrixType, new long[] {t.cols(c), all.length / t.cols(c)}, encode(all, matrixType));
                    continue;
                }
                if (permute && (t == Tensor.WQ || t == Tensor.BQ)) {
                    values = permuteRows(values, c.heads(), t.norm() ? 1 : t.cols(c));
                } else if (permute && (t == Tensor.WK || t == Tensor.BK)) {
                    values = permuteRows(values, c.kvHeads(), t.norm() ? 1 : t.cols(c));
                }
                long[] shape = t.norm() ? new long[] {t.cols(c)} : new long[] {t.cols(c), t.rows(c)};
                GgmlType type = types.getOrDefault(name, t.norm() ? GgmlType.F32 : matrixType);
                if (dims.containsKey(name)) {
                    long[] d = dims.get(name);
                    long elements = 1;
                    for (long x : d) {
                        elements *= x;
                    }
                    long bytes = type.rowBytes(d[0]) * (elements / d[0]);
                    w.tensor(name, type, d, Arena.ofAuto().allocate(bytes));
                    continue;
                }
                w.tensor(name, type, shape, unencoded.contains(name)
                        ? Arena.ofAuto().allocate(type.rowBytes(shape[0]) * (shape.length > 1 ? shape[1] : 1), 64)
                        : encode(values, type));
            }
        }
        if (fused && c.ropeFactors()) {
            float[] f = read(weights.tensor(Tensor.ROPE_FREQS, 0));
            w.tensor("rope_factors_short.weight", GgmlType.F32, new long[] {f.length}, encode(f, GgmlType.F32));
            w.tensor("rope_factors_long.weight", GgmlType.F32, new long[] {f.length},
                    encode(longRopeFactors, GgmlType.F32));
        } else if (ropeFactors != null) {
            w.tensor("rope_freqs.weight", GgmlType.F32, new long[] {ropeFactors.length}, encode(ropeFactors, GgmlType.F32));
        } else if (c.ropeFactors()) {
            float[] f = read(weights.tensor(Tensor.ROPE_FREQS, 0));
            w.tensor("rope_freqs.weight", GgmlType.F32, new long[] {f.length}, encode(f, GgmlType.F32));
        }
        w.write(path);
    }

    /**
     * llama.cpp's {@code permute(w, n_head)} on the rows of a {@code [heads * headDim, cols]} matrix
     * (or a bias, {@code cols = 1}): {@code reshape(n_head, 2, headDim / 2, cols).swapaxes(1, 2)}.
     */
    public static float[] permuteRows(float[] w, int heads, int cols) {
        int rows = w.length / cols;
        int headDim = rows / heads;
        int half = headDim / 2;
        float[] out = new float[w.length];
        for (int h = 0; h < heads; h++) {
            for (int a = 0; a < 2; a++) {
                for (int i = 0; i < half; i++) {
                    int from = h * headDim + a * half + i;
                    int to = h * headDim + 2 * i + a;
                    System.arraycopy(w, from * cols, out, to * cols, cols);
                }
            }
        }
        return out;
    }

    /** The inverse of {@link #permuteRows}: GGUF's interleaved rows back to Hugging Face's halves. */
    public static float[] unpermuteRows(float[] w, int heads, int cols) {
        int rows = w.length / cols;
        int headDim = rows / heads;
        int half = headDim / 2;
        float[] out = new float[w.length];
        for (int h = 0; h < heads; h++) {
            for (int a = 0; a < 2; a++) {
                for (int i = 0; i < half; i++) {
                    System.arraycopy(w, (h * headDim + 2 * i + a) * cols, out, (h * headDim + a * half + i) * cols,
                            cols);
                }
            }
        }
        return out;
    }

    static float[] read(MemorySegment s) {
        return s.toArray(F32);
    }

    /** f32 values in {@code type}: the kernels' quantisers, or {@link CrudeKQuants} for the k-quants and the iq4 types. */
    public static MemorySegment encode(float[] values, GgmlType type) {
        MemorySegment src = Arena.ofAuto().allocate((long) values.length * Float.BYTES, 64);
        for (int i = 0; i < values.length; i++) {
            src.setAtIndex(F32, i, values[i]);
        }
        long bytes = type.rowBytes(values.length);
        if (bytes < 0) {
            throw new IllegalArgumentException(values.length + " values are not whole " + type + " blocks");
        }
        MemorySegment dst = Arena.ofAuto().allocate(bytes, 64);
        switch (type.name()) {
            case "F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1" ->
                    Ops.scalar().quantize(TensorType.valueOf(type.name()), src, 0, dst, 0, values.length);
            case "Q4_K" -> CrudeKQuants.q4K(src, dst, values.length);
            case "Q5_K" -> CrudeKQuants.q5K(src, dst, values.length);
            case "IQ4_NL" -> CrudeKQuants.iq4(src, dst, values.length, false);
            case "Q2_K" -> CrudeKQuants.q2K(src, dst, values.length);
            case "Q3_K" -> CrudeKQuants.q3K(src, dst, values.length);
            case "IQ4_XS" -> CrudeKQuants.iq4(src, dst, values.length, true);
            case "Q6_K" -> CrudeKQuants.q6K(src, dst, values.length);
            // Zero bytes would decode to zero weights, and a test of that type would pass on them.
            default -> throw new IllegalArgumentException("no encoder for " + type
                    + "; unencodedType(…) writes a tensor the loader must refuse");
        }
        return dst;
    }
}
