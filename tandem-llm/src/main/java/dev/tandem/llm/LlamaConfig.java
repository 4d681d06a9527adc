package dev.tandem.llm;

import static dev.tandem.llm.Checks.divides;
import static dev.tandem.llm.Checks.positive;

import dev.tandem.kernels.Q8_0;
import java.util.Locale;

/**
 * The shape of a Llama-style decoder. Validated on construction: a config that cannot work fails
 * with one line naming the field and the limit.
 *
 * @param dim           width of the residual stream
 * @param layers        transformer blocks
 * @param heads         query heads; {@code headDim = dim / heads}, which must be even (rotary pairs)
 * @param kvHeads       key/value heads (grouped-query attention); divides {@code heads}
 * @param ffnDim        hidden width of the feed-forward network
 * @param vocab         tokens
 * @param contextLength positions a sequence may use: its prompt plus its generated tokens
 * @param ropeTheta     base of the rotary frequencies
 * @param normEps       epsilon of rmsnorm
 * @param weightType    how the matrices (and the token embedding) are stored
 */
public record LlamaConfig(
        int dim, int layers, int heads, int kvHeads, int ffnDim, int vocab, int contextLength, float ropeTheta,
        float normEps, WeightType weightType) {

    public LlamaConfig {
        positive("dim", dim);
        positive("layers", layers);
        positive("heads", heads);
        positive("kvHeads", kvHeads);
        positive("ffnDim", ffnDim);
        positive("vocab", vocab);
        positive("contextLength", contextLength);
        divides("heads", heads, "dim", dim);
        divides("kvHeads", kvHeads, "heads", heads);
        if ((dim / heads) % 2 != 0) {
            throw new IllegalArgumentException("headDim = dim / heads = " + dim / heads
                    + " must be even (rotary embedding rotates pairs)");
        }
        if (!(ropeTheta > 0) || Float.isInfinite(ropeTheta)) {
            throw new IllegalArgumentException("ropeTheta = " + ropeTheta + " must be finite and > 0");
        }
        if (!(normEps >= 0) || Float.isInfinite(normEps)) {
            throw new IllegalArgumentException("normEps = " + normEps + " must be finite and >= 0");
        }
        if (weightType == null) {
            throw new IllegalArgumentException("weightType must be F32 or Q8_0, was null");
        }
        if (weightType == WeightType.Q8_0) {
            multipleOfQ8Block("dim", dim);
            multipleOfQ8Block("ffnDim", ffnDim);
        }
    }

    private static void multipleOfQ8Block(String field, int value) {
        if (value % Q8_0.BLOCK_SIZE != 0) {
            throw new IllegalArgumentException(field + " = " + value + " must be a multiple of " + Q8_0.BLOCK_SIZE
                    + " for Q8_0 weights");
        }
    }

    /** Names of the shapes {@link #named} knows. */
    public static final String NAMES = "tiny, small";

    /**
     * A named shape on the {@link ByteTokenizer}'s vocabulary, q8_0 weights:
     * {@code tiny} (dim 64, 2 layers; for tests and quick checks) or {@code small} (dim 512,
     * 8 layers, 8 heads over 4 KV heads, FFN 1536; about 27 MB of weights, a few milliseconds a
     * token on 2 cores).
     *
     * @throws IllegalArgumentException for another name, naming the known ones
     */
    public static LlamaConfig named(String name) {
        return switch (name == null ? "" : name.toLowerCase(Locale.ROOT)) {
            case "tiny" -> new LlamaConfig(64, 2, 4, 2, 192, ByteTokenizer.VOCAB, 256, 10000f, 1e-5f, WeightType.Q8_0);
            case "small" -> new LlamaConfig(512, 8, 8, 4, 1536, ByteTokenizer.VOCAB, 512, 10000f, 1e-5f,
                    WeightType.Q8_0);
            default -> throw new IllegalArgumentException("model = " + name + " is not a known shape; known: " + NAMES);
        };
    }

    public int headDim() {
        return dim / heads;
    }

    /** Width of the keys (and values) of one position: {@code kvHeads * headDim}. */
    public int kvDim() {
        return kvHeads * headDim();
    }

    public LlamaConfig withWeightType(WeightType value) {
        return new LlamaConfig(dim, layers, heads, kvHeads, ffnDim, vocab, contextLength, ropeTheta, normEps, value);
    }

    public LlamaConfig withContextLength(int value) {
        return new LlamaConfig(dim, layers, heads, kvHeads, ffnDim, vocab, value, ropeTheta, normEps, weightType);
    }

    /** Bytes of every weight: the matrices in {@link #weightType}, the norms in f32. */
    public long weightBytes() {
        long total = 0;
        for (LlamaWeights.Tensor tensor : LlamaWeights.Tensor.values()) {
            total += tensor.bytes(this) * (tensor.perLayer() ? layers : 1);
        }
        return total;
    }
}
