package dev.tandem.bench;

import dev.tandem.kernels.Ops;
import dev.tandem.kernels.TensorType;
import dev.tandem.llm.EmbeddedModel;
import dev.tandem.llm.LlamaConfig;
import dev.tandem.llm.LlamaWeights.Tensor;
import dev.tandem.llm.RandomWeights;
import dev.tandem.llm.WeightType;
import dev.tandem.llm.gguf.GgmlType;
import dev.tandem.llm.gguf.GgufFile;
import dev.tandem.llm.gguf.GgufModel;
import dev.tandem.llm.gguf.GgufValue;
import dev.tandem.llm.gguf.GgufWriter;
import dev.tandem.llm.tokenizer.TokenType;
import dev.tandem.llm.tokenizer.Tokenizer;
import dev.tandem.llm.tokenizer.Vocabulary;
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
        return new LlamaConfig(dim, layers, heads, kvHeads, ffn, 512, 1024, 10000f, 1e-5f, WeightType.F32);
    }

    /**
     * {@code path}, written by {@link #write(Path, LlamaConfig, GgmlType, long, boolean)} unless
     * it exists (through a temporary file moved into place, so a partial file is never used).
     */
    public static Path cached(Path path, LlamaConfig shape, GgmlType type, long seed, boolean printable) {
        if (!java.nio.file.Files.exists(path)) {
            try {
                java.nio.file.Files.createDirectories(path.getParent());
                Path partial = java.nio.file.Files.createTempFile(path.getParent(), "partial", ".gguf");
                write(partial, shape, type, seed, printable);
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
     * greedy decoding writes valid text (a server that returns text refuses invalid UTF-8).
     */
    public static void write(Path path, LlamaConfig shape, GgmlType type, long seed, boolean printable) {
        RandomWeights weights = new RandomWeights(shape.withWeightType(WeightType.F32), seed);
        GgufWriter w = new GgufWriter();
        Tokenizer tokenizer;
        try (GgufFile vocab = GgufFile.open(EmbeddedModel.path())) {
            for (Map.Entry<String, GgufValue> e : vocab.metadata().asMap().entrySet()) {
                if (e.getKey().startsWith("tokenizer.")) {
                    w.put(e.getKey(), e.getValue());
                }
            }
            tokenizer = Tokenizer.of(Vocabulary.fromGguf(vocab.metadata()));
        }
        w.put("general.architecture", "llama").put("general.name", "random-" + shape.dim() + "-" + type.name())
                .put("llama.context_length", shape.contextLength()).put("llama.embedding_length", shape.dim())
                .put("llama.block_count", shape.layers()).put("llama.feed_forward_length", shape.ffnDim())
                .put("llama.attention.head_count", shape.heads()).put("llama.attention.head_count_kv", shape.kvHeads())
                .put("llama.rope.dimension_count", shape.headDim()).put("llama.rope.freq_base", shape.ropeTheta())
                .put("llama.attention.layer_norm_rms_epsilon", shape.normEps())
                .put("general.file_type", 0);
        try (Arena arena = Arena.ofConfined()) {
            SplittableRandom random = new SplittableRandom(seed);
            for (Tensor t : Tensor.values()) {
                if (!t.present(shape)) {
                    continue;
                }
                for (int l = 0; l < (t.perLayer() ? shape.layers() : 1); l++) {
                    MemorySegment f32 = weights.tensor(t, l);
                    if (printable && t == Tensor.OUTPUT) {
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
                    String name = GgufModel.name(t, l);
                    if (t.norm()) {
                        w.tensor(name, GgmlType.F32, new long[] {t.cols(shape)}, f32);
                        continue;
                    }
                    long[] dims = {t.cols(shape), t.rows(shape)};
                    long elements = dims[0] * dims[1];
                    TensorType kernelType = TensorType.fromGgmlId(type.id());
                    MemorySegment out = arena.allocate(kernelType.bytes(elements), 64);
                    switch (type.name()) {
                        case "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS" -> randomBlocks(out, type, random);
                        default -> Ops.scalar().quantize(kernelType, f32, 0, out, 0, elements);
                    }
                    w.tensor(name, type, dims, out);
                }
            }
            w.write(path);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
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
