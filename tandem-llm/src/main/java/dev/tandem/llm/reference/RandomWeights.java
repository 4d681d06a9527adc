package dev.tandem.llm.reference;

import dev.tandem.kernels.Ops;
import dev.tandem.kernels.TensorType;
import dev.tandem.llm.model.LlamaConfig;
import dev.tandem.llm.model.LlamaWeights;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Weights drawn from a seed, the same on every run and every machine: each value is a hash of
 * the seed, the tensor, the layer and its index. Matrices are uniform in
 * {@code [-1/sqrt(cols), 1/sqrt(cols))} (so activations keep their scale), embeddings in
 * {@code [-1, 1)}, norm weights in {@code [0.9, 1.1)}. For {@link TensorType#Q8_0} and
 * {@link TensorType#Q4_0} the f32 values are quantized with llama.cpp's rounding
 * ({@link dev.tandem.kernels.QuantOps#quantize}); the k-quants and the iq4 types, which have no
 * quantizer here, are refused.
 *
 * <p>{@link #forText} tilts the classifier towards printable ASCII (its rows for the bytes
 * {@code 0x20..0x7E} of the {@link ByteTokenizer} are {@value #TEXT_TILT} times larger), so that a
 * random model's output reads as characters rather than control bytes and broken UTF-8.
 */
public final class RandomWeights implements LlamaWeights {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** How much larger {@link #forText} makes the classifier rows of printable ASCII. */
    public static final float TEXT_TILT = 3f;

    private final LlamaConfig config;
    private final long seed;
    private final boolean text;

    public RandomWeights(LlamaConfig config, long seed) {
        this(config, seed, false);
    }

    private RandomWeights(LlamaConfig config, long seed, boolean text) {
        if (config.weightType() == TensorType.Q4_K || config.weightType() == TensorType.Q5_K
                || config.weightType() == TensorType.Q6_K || config.weightType() == TensorType.IQ4_NL
                || config.weightType() == TensorType.IQ4_XS || config.weightType() == TensorType.Q2_K
                || config.weightType() == TensorType.Q3_K) {
            throw new IllegalArgumentException("RandomWeights: " + config.weightType() + " has no quantizer here;"
                    + " write F32 random weights as a " + config.weightType() + " GGUF instead");
        }
        this.config = config;
        this.seed = seed;
        this.text = text;
    }

    /** Random weights whose classifier favours printable ASCII bytes. */
    public static RandomWeights forText(LlamaConfig config, long seed) {
        return new RandomWeights(config, seed, true);
    }

    @Override
    public LlamaConfig config() {
        return config;
    }

    @Override
    public MemorySegment tensor(Tensor tensor, int layer) {
        if (tensor == Tensor.OUTPUT && config.tiedEmbeddings()) {
            return tensor(Tensor.TOKEN_EMBEDDING, 0);
        }
        int rows = tensor.rows(config);
        int cols = tensor.cols(config);
        long stream = stream(tensor, layer);
        float scale;
        float offset;
        if (tensor == Tensor.BQ || tensor == Tensor.BK || tensor == Tensor.BV) {
            scale = 0.2f;
            offset = 0f;
        } else if (tensor == Tensor.ROPE_FREQS) {
            // Divisors of the frequencies, as Llama 3.1's scaling has them: 1 for high frequencies, up to 8.
            scale = 3.5f;
            offset = 4.5f;
        } else if (tensor.norm()) {
            scale = 0.1f;
            offset = 1f;
        } else if (tensor == Tensor.TOKEN_EMBEDDING) {
            scale = 1f;
            offset = 0f;
        } else {
            scale = (float) (1 / Math.sqrt(cols));
            offset = 0f;
        }
        long count = (long) rows * cols;
        MemorySegment values = Arena.ofAuto().allocate(count * Float.BYTES, 64);
        for (long i = 0; i < count; i++) {
            values.setAtIndex(F32, i, offset + scale * Seeded.uniform(seed, 1000 + stream, i));
        }
        if (text && tensor == Tensor.OUTPUT) {
            for (long i = (long) ' ' * cols; i < Math.min(rows, '~' + 1L) * cols; i++) {
                values.setAtIndex(F32, i, values.getAtIndex(F32, i) * TEXT_TILT);
            }
        }
        if (tensor.norm() || config.weightType() == TensorType.F32) {
            return values;
        }
        MemorySegment quantized = Arena.ofAuto().allocate(tensor.bytes(config), 64);
        Ops.scalar().quantize(config.weightType(), values, 0, quantized, 0, count);
        return quantized;
    }

    /**
     * The random stream of a tensor: the first twelve keep the numbers they had before the
     * architecture variants were added, so a seed gives the same plain Llama weights as before.
     */
    private static long stream(Tensor tensor, int layer) {
        int legacy = switch (tensor) {
            case TOKEN_EMBEDDING -> 0;
            case ATTENTION_NORM -> 1;
            case WQ -> 2;
            case WK -> 3;
            case WV -> 4;
            case WO -> 5;
            case FFN_NORM -> 6;
            case W1 -> 7;
            case W2 -> 8;
            case W3 -> 9;
            case OUTPUT_NORM -> 10;
            case OUTPUT -> 11;
            default -> -1;
        };
        if (legacy >= 0) {
            return legacy + (tensor.perLayer() ? (long) layer * 12 : 0);
        }
        return 1_000_000L + tensor.ordinal() * 100_000L + layer;
    }
}
