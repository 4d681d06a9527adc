package dev.tandem.bench;

import dev.tandem.kernels.Ops;
import dev.tandem.kernels.TensorType;
import dev.tandem.llm.EmbeddedModel;
import dev.tandem.llm.gguf.GgmlType;
import dev.tandem.llm.gguf.GgufFile;
import dev.tandem.llm.gguf.GgufModel;
import dev.tandem.llm.gguf.GgufValue;
import dev.tandem.llm.gguf.GgufVocabulary;
import dev.tandem.llm.model.Architecture;
import dev.tandem.llm.model.LlamaConfig;
import dev.tandem.llm.model.LlamaWeights.Tensor;
import dev.tandem.llm.reference.GgufWriter;
import dev.tandem.llm.reference.RandomWeights;
import dev.tandem.llm.tokenizer.TokenType;
import dev.tandem.llm.tokenizer.Tokenizer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * A random Llama of a given shape written as a GGUF file that tandem and llama.cpp both load, so
 * that a decode benchmark runs the same file in both engines: the embedded model's 512-token
 * vocabulary, {@link RandomWeights}' values, the matrices in one ggml type and the norms in F32.
 *
 * <p>F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 matrices are quantised from the random
 * values; the k-quants' and the iq4 types' blocks are random but valid (small finite f16 scales),
 * which is all a speed measurement needs.
 */
public final class RandomGguf {
    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private RandomGguf() {}

    /** {@code dim, layers, heads, kvHeads, ffn} with the embedded vocabulary and a context of 1024. */
    public static LlamaConfig shape(int dim, int layers, int heads, int kvHeads, int ffn) {
        return new LlamaConfig(dim, layers, heads, kvHeads, ffn, 512, 1024, 10000f, 1e-5f, TensorType.F32);
    }

    /**
     * {@code path}, written by {@link #write(Path, LlamaConfig, GgmlType, long, boolean)} unless
     * it exists (through a temporary file moved into place, so a partial file is never used).
     */
    public static Path cached(Path path, LlamaConfig shape, GgmlType type, long seed, boolean printable) {
        return cached(path, shape, type, seed, printable, PHI3_ORIGINAL_CONTEXT);
    }

    /**
     * A Phi-3 file's {@code rope.scaling.original_context_length} unless given: above any context
     * a bench uses, so both engines take the short LongRoPE factors (llama.cpp pads its context to
     * a multiple of 256 before it chooses).
     */
    public static final int PHI3_ORIGINAL_CONTEXT = 4096;

    /** As {@link #cached(Path, LlamaConfig, GgmlType, long, boolean)}, a Phi-3 file with this original context. */
    public static Path cached(Path path, LlamaConfig shape, GgmlType type, long seed, boolean printable,
            int originalContext) {
        if (!java.nio.file.Files.exists(path)) {
            try {
                java.nio.file.Files.createDirectories(path.getParent());
                Path partial = java.nio.file.Files.createTempFile(path.getParent(), "partial", ".gguf");
                write(partial, shape, type, seed, printable, originalContext);
                java.nio.file.Files.move(partial, path, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        return path;
    }

    /** Writes the file; the matrices in {@code type}. */
    public static void write(Path path, LlamaConfig shape, GgmlType type, long seed) {
        write(path, shape, type, seed, false);
    }

    /**
     * Writes the file; the matrices in {@code type}. With {@code printable}, the classifier's rows
     * of every token that is not a normal piece (byte tokens, BOS, EOS, unknown) are zero, so
     * greedy decoding writes valid text (a server that returns text refuses invalid UTF-8); with
     * a tied classifier, those rows of the embedding (such tokens then embed as zeros).
     */
    public static void write(Path path, LlamaConfig shape, GgmlType type, long seed, boolean printable) {
        write(path, shape, type, seed, printable, PHI3_ORIGINAL_CONTEXT);
    }

    private static void write(Path path, LlamaConfig shape, GgmlType type, long seed, boolean printable,
            int originalContext) {
        RandomWeights weights = new RandomWeights(shape.withWeightType(TensorType.F32), seed);
        GgufWriter w = new GgufWriter();
        Tokenizer tokenizer;
        try (GgufFile vocab = GgufFile.open(EmbeddedModel.path())) {
            for (Map.Entry<String, GgufValue> e : vocab.metadata().asMap().entrySet()) {
                if (e.getKey().startsWith("tokenizer.")) {
                    w.put(e.getKey(), e.getValue());
                }
            }
            tokenizer = Tokenizer.of(GgufVocabulary.read(vocab.metadata()));
        }
        Architecture features = shape.architecture();
        String arch = features.name();
        w.put("general.architecture", arch).put("general.name", "random-" + shape.dim() + "-" + type.name()) // no family in the name: llama.cpp keys token attributes on it
                .put(arch + ".context_length", shape.contextLength()).put(arch + ".embedding_length", shape.dim())
                .put(arch + ".block_count", shape.layers()).put(arch + ".feed_forward_length", shape.ffnDim())
                .put(arch + ".attention.head_count", shape.heads()).put(arch + ".attention.head_count_kv", shape.kvHeads())
                .put(arch + ".attention.key_length", shape.headDim())
                .put(arch + ".attention.value_length", shape.headDim())
                .put(arch + ".rope.dimension_count", shape.headDim()).put(arch + ".rope.freq_base", shape.ropeTheta())
                .put(arch + ".attention.layer_norm_rms_epsilon", shape.normEps())
                .put("general.file_type", 0);
        putArchitecture(w, shape, originalContext);
        try (Arena arena = Arena.ofConfined()) {
            SplittableRandom random = new SplittableRandom(seed);
            boolean phi3 = arch.equals("phi3");
            for (Tensor t : Tensor.values()) {
                if (!t.present(shape) || (t == Tensor.OUTPUT && shape.tiedEmbeddings())) {
                    continue;
                }
                if (phi3 && (t == Tensor.WK || t == Tensor.WV || t == Tensor.W3)) {
                    continue; // written with WQ and W1, fused
                }
                if (phi3 && t == Tensor.ROPE_FREQS) {
                    // LongRoPE: the random factors are the short ones; the long ones (used past the
                    // original context) differ, so a model that picked the wrong ones would show it.
                    MemorySegment shortFactors = weights.tensor(t, 0);
                    MemorySegment longFactors = arena.allocate(shortFactors.byteSize(), 64);
                    for (long i = 0; i < shortFactors.byteSize() / Float.BYTES; i++) {
                        longFactors.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i,
                                shortFactors.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i) * 4f);
                    }
                    long[] dims = {t.cols(shape)};
                    w.tensor("rope_factors_short.weight", GgmlType.F32, dims, shortFactors);
                    w.tensor("rope_factors_long.weight", GgmlType.F32, dims, longFactors);
                    continue;
                }
                for (int l = 0; l < (t.perLayer() ? shape.layers() : 1); l++) {
                    MemorySegment f32 = weights.tensor(t, l);
                    long rows = t.rows(shape);
                    String name = GgufModel.name(t, l);
                    if (phi3 && t == Tensor.WQ) {
                        f32 = concat(arena, f32, weights.tensor(Tensor.WK, l), weights.tensor(Tensor.WV, l));
                        rows = shape.qDim() + 2L * shape.kvDim();
                        name = "blk." + l + ".attn_qkv.weight";
                    } else if (phi3 && t == Tensor.W1) {
                        f32 = concat(arena, f32, weights.tensor(Tensor.W3, l));
                        rows = 2L * shape.ffnDim();
                        name = "blk." + l + ".ffn_up.weight";
                    }
                    // A tied classifier is the embedding: its rows of non-text tokens are zeroed there.
                    if (printable && (t == Tensor.OUTPUT
                            || (t == Tensor.TOKEN_EMBEDDING && shape.tiedEmbeddings()))) {
                        MemorySegment copy = arena.allocate(f32.byteSize(), 64);
                        copy.copyFrom(f32);
                        long rowBytes = (long) shape.dim() * Float.BYTES;
                        for (int id = 0; id < shape.vocab(); id++) {
                            if (tokenizer.tokenType(id) != TokenType.NORMAL) {
                                copy.asSlice(id * rowBytes, rowBytes).fill((byte) 0);
                            }
                        }
                        f32 = copy;
                    }
                    if (t.norm()) {
                        w.tensor(name, GgmlType.F32, new long[] {t.cols(shape)}, f32);
                        continue;
                    }
                    long[] dims = {t.cols(shape), rows};
                    long elements = dims[0] * dims[1];
                    GgmlType tensorType = fallback(type, dims[0]);
                    TensorType kernelType = TensorType.fromGgmlId(tensorType.id());
                    MemorySegment out = arena.allocate(kernelType.bytes(elements), 64);
                    switch (tensorType.name()) {
                        case "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS" ->
                                randomBlocks(out, tensorType, random);
                        default -> Ops.scalar().quantize(kernelType, f32, 0, out, 0, elements);
                    }
                    w.tensor(name, tensorType, dims, out);
                }
            }
            w.write(path);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * The type a matrix of rows of {@code cols} values is written in when {@code type} is asked
     * for: {@code type} itself where its blocks divide the rows, else the 32-value type
     * {@code llama-quantize} falls back to for it ({@code tensor_type_fallback}), so a shape of
     * Qwen2.5-0.5B's width (896) in a k-quant is the mix its users download.
     *
     * @throws IllegalArgumentException where neither fits, naming both
     */
    static GgmlType fallback(GgmlType type, long cols) {
        if (cols % type.blockSize() == 0) {
            return type;
        }
        GgmlType fallback = switch (type.name()) {
            case "IQ4_XS" -> GgmlType.byName("IQ4_NL");
            case "Q2_K", "Q3_K" -> GgmlType.byName("Q4_0");
            case "Q4_K" -> GgmlType.byName("Q5_0");
            case "Q5_K" -> GgmlType.byName("Q5_1");
            case "Q6_K" -> GgmlType.byName("Q8_0");
            default -> null;
        };
        if (fallback == null || cols % fallback.blockSize() != 0) {
            throw new IllegalArgumentException("rows of " + cols + " values fit neither " + type.name() + " (blocks of "
                    + type.blockSize() + ")" + (fallback == null ? "" : " nor its fallback " + fallback.name() + " (blocks of "
                    + fallback.blockSize() + ")"));
        }
        return fallback;
    }

    /**
     * The keys by which llama.cpp (and {@link GgufModel}) derive {@code shape}'s {@link
     * Architecture}: Gemma's soft-caps, sliding window, its period and the sliding layers' rope
     * base; Phi-3's original context and rope attention factor. The Gemma attention scale is not a
     * key: both derive it from the shape.
     */
    private static void putArchitecture(GgufWriter w, LlamaConfig shape, int originalContext) {
        Architecture a = shape.architecture();
        String arch = a.name();
        switch (arch) {
            case "gemma2", "gemma3" -> {
                w.put(arch + ".attention.sliding_window", a.slidingWindow())
                        .put(arch + ".attention.sliding_window_pattern", a.slidingPeriod())
                        .put(arch + ".rope.freq_base_swa", a.slidingRopeTheta())
                        .put(arch + ".final_logit_softcapping", a.logitSoftcap());
                if (arch.equals("gemma2")) {
                    w.put(arch + ".attn_logit_softcapping", a.attentionSoftcap());
                }
                if (a.ropeScale() != 1f) {
                    w.put(arch + ".rope.scaling.type", "linear").put(arch + ".rope.scaling.factor", 1f / a.ropeScale());
                }
            }
            case "phi3" -> w.put(arch + ".rope.scaling.original_context_length", originalContext)
                    .put(arch + ".rope.scaling.attn_factor", a.ropeAttentionFactor());
            default -> { }
        }
    }

    private static MemorySegment concat(Arena arena, MemorySegment... parts) {
        long bytes = 0;
        for (MemorySegment p : parts) {
            bytes += p.byteSize();
        }
        MemorySegment out = arena.allocate(bytes, 64);
        long at = 0;
        for (MemorySegment p : parts) {
            MemorySegment.copy(p, 0, out, at, p.byteSize());
            at += p.byteSize();
        }
        return out;
    }

    private static void randomBlocks(MemorySegment out, GgmlType type, SplittableRandom random) {
        for (long i = 0; i < out.byteSize(); i++) {
            out.set(ValueLayout.JAVA_BYTE, i, (byte) random.nextInt(256));
        }
        long blocks = out.byteSize() / type.blockBytes();
        for (long b = 0; b < blocks; b++) {
            long at = b * type.blockBytes();
            switch (type.name()) {
                case "Q4_K", "Q5_K" -> {
                    out.set(U16, at, Float.floatToFloat16(0.002f));       // d
                    out.set(U16, at + 2, Float.floatToFloat16(0.001f));   // dmin
                }
                case "Q2_K" -> {
                    out.set(U16, at + 80, Float.floatToFloat16(0.002f));  // d
                    out.set(U16, at + 82, Float.floatToFloat16(0.001f));  // dmin
                }
                case "Q3_K" -> out.set(U16, at + 108, Float.floatToFloat16(0.0005f)); // d is last
                case "IQ4_NL", "IQ4_XS" -> out.set(U16, at, Float.floatToFloat16(0.0005f));
                default -> out.set(U16, at + 208, Float.floatToFloat16(0.0005f)); // Q6_K's d is last
            }
        }
    }
}
