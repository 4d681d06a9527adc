package dev.tandem.llm.model;

import static dev.tandem.llm.model.Checks.divides;
import static dev.tandem.llm.model.Checks.positive;

import dev.tandem.kernels.TensorType;
import dev.tandem.llm.reference.ByteTokenizer;
import java.util.Locale;
import java.util.function.BiFunction;

/**
 * The shape of a Llama-style decoder and the variations of the architectures it covers (Llama 2
 * and 3, Mistral, Qwen2, Qwen3; Gemma 2, Gemma 3 and Phi-3 through their {@link Architecture}). Validated on construction: a config that cannot work fails
 * with one line naming the field and the limit.
 *
 * @param dim            width of the residual stream
 * @param layers         transformer blocks
 * @param heads          query heads
 * @param kvHeads        key/value heads (grouped-query attention); divides {@code heads}
 * @param headDim        width of one head, even (rotary pairs); {@code dim / heads} in most
 *                       models, larger in Qwen3 (so the query width {@code heads * headDim} may
 *                       differ from {@code dim})
 * @param ffnDim         hidden width of the feed-forward network
 * @param vocab          tokens
 * @param contextLength  positions a sequence may use: its prompt plus its generated tokens
 * @param ropeTheta      base of the rotary frequencies
 * @param ropeStyle      which pairs rotate together
 * @param ropeFactors    whether the weights carry {@link LlamaWeights.Tensor#ROPE_FREQS}, a divisor
 *                       of each pair's frequency (Llama 3.1's rope scaling, as llama.cpp stores it;
 *                       Phi-3's LongRoPE short or long factors, as the loader picks them)
 * @param normEps        epsilon of rmsnorm
 * @param weightType     how the matrices (and the token embedding) are stored on the worker
 * @param attentionBias  whether q, k and v have biases (Qwen2)
 * @param qkNorm         whether each head's query and key are rmsnormed before rope (Qwen3)
 * @param tiedEmbeddings whether the classifier is the token embedding (no output matrix)
 * @param architecture   what the family does beyond these fields (Gemma's GELU, post-norms,
 *                       soft-capping and sliding layers, Phi-3's rope attention factor); {@link
 *                       Architecture#LLAMA} for none
 */
public record LlamaConfig(
        int dim, int layers, int heads, int kvHeads, int headDim, int ffnDim, int vocab, int contextLength,
        float ropeTheta, RopeStyle ropeStyle, boolean ropeFactors, float normEps, TensorType weightType,
        boolean attentionBias, boolean qkNorm, boolean tiedEmbeddings, Architecture architecture) {

    public LlamaConfig {
        if (architecture == null) {
            throw new IllegalArgumentException("architecture must not be null (Architecture.LLAMA for none)");
        }
        positive("dim", dim);
        positive("layers", layers);
        positive("heads", heads);
        positive("kvHeads", kvHeads);
        positive("headDim", headDim);
        positive("ffnDim", ffnDim);
        positive("vocab", vocab);
        positive("contextLength", contextLength);
        divides("kvHeads", kvHeads, "heads", heads);
        if (headDim % 2 != 0) {
            throw new IllegalArgumentException("headDim = " + headDim + " must be even (rotary embedding rotates pairs)");
        }
        if (!(ropeTheta > 0) || Float.isInfinite(ropeTheta)) {
            throw new IllegalArgumentException("ropeTheta = " + ropeTheta + " must be finite and > 0");
        }
        if (ropeStyle == null) {
            throw new IllegalArgumentException("ropeStyle must be INTERLEAVED or NEOX, was null");
        }
        if (!(normEps >= 0) || Float.isInfinite(normEps)) {
            throw new IllegalArgumentException("normEps = " + normEps + " must be finite and >= 0");
        }
        if (weightType == null || weightType.isInterleaved()) {
            throw new IllegalArgumentException("weightType must be a stored type, one of " + java.util.Arrays.stream(
                    TensorType.values()).filter(t -> !t.isInterleaved()).toList() + ", was " + weightType);
        }
        if (weightType != TensorType.F32) {
            multipleOfBlock(weightType, "dim", dim);
            multipleOfBlock(weightType, "ffnDim", ffnDim);
            multipleOfBlock(weightType, "heads * headDim", heads * headDim);
        }
    }

    /** A config of the Llama family ({@link Architecture#LLAMA}). */
    public LlamaConfig(int dim, int layers, int heads, int kvHeads, int headDim, int ffnDim, int vocab,
            int contextLength, float ropeTheta, RopeStyle ropeStyle, boolean ropeFactors, float normEps,
            TensorType weightType, boolean attentionBias, boolean qkNorm, boolean tiedEmbeddings) {
        this(dim, layers, heads, kvHeads, headDim, ffnDim, vocab, contextLength, ropeTheta, ropeStyle, ropeFactors,
                normEps, weightType, attentionBias, qkNorm, tiedEmbeddings, Architecture.LLAMA);
    }

    /**
     * A plain Llama shape: {@code headDim = dim / heads}, interleaved rope without factors, no
     * biases, no q/k norm, a separate classifier.
     */
    public LlamaConfig(int dim, int layers, int heads, int kvHeads, int ffnDim, int vocab, int contextLength,
            float ropeTheta, float normEps, TensorType weightType) {
        this(dim, layers, heads, kvHeads, headDimOf(dim, heads), ffnDim, vocab, contextLength, ropeTheta,
                RopeStyle.INTERLEAVED, false, normEps, weightType, false, false, false);
    }

    private static int headDimOf(int dim, int heads) {
        positive("heads", heads);
        divides("heads", heads, "dim", dim);
        return dim / heads;
    }

    private static void multipleOfBlock(TensorType type, String field, int value) {
        if (value % type.blockSize() != 0) {
            throw new IllegalArgumentException(field + " = " + value + " must be a multiple of " + type.blockSize()
                    + " for " + type + " weights");
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
            case "tiny" -> new LlamaConfig(64, 2, 4, 2, 192, ByteTokenizer.VOCAB, 256, 10000f, 1e-5f, TensorType.Q8_0);
            case "small" -> new LlamaConfig(512, 8, 8, 4, 1536, ByteTokenizer.VOCAB, 512, 10000f, 1e-5f,
                    TensorType.Q8_0);
            default -> throw new IllegalArgumentException("model = " + name + " is not a known shape; known: " + NAMES);
        };
    }

    /** Width of the queries of one position: {@code heads * headDim}. */
    public int qDim() {
        return heads * headDim;
    }

    /** Width of the keys (and values) of one position: {@code kvHeads * headDim}. */
    public int kvDim() {
        return kvHeads * headDim();
    }

    public LlamaConfig withWeightType(TensorType value) {
        return new LlamaConfig(dim, layers, heads, kvHeads, headDim, ffnDim, vocab, contextLength, ropeTheta,
                ropeStyle, ropeFactors, normEps, value, attentionBias, qkNorm, tiedEmbeddings, architecture);
    }

    public LlamaConfig withContextLength(int value) {
        return new LlamaConfig(dim, layers, heads, kvHeads, headDim, ffnDim, vocab, value, ropeTheta, ropeStyle,
                ropeFactors, normEps, weightType, attentionBias, qkNorm, tiedEmbeddings, architecture);
    }

    public LlamaConfig withRope(RopeStyle style, boolean factors) {
        return new LlamaConfig(dim, layers, heads, kvHeads, headDim, ffnDim, vocab, contextLength, ropeTheta, style,
                factors, normEps, weightType, attentionBias, qkNorm, tiedEmbeddings, architecture);
    }

    /** With q/k/v biases, per-head q/k norms and a tied classifier as given. */
    public LlamaConfig withVariants(boolean bias, boolean norm, boolean tied) {
        return new LlamaConfig(dim, layers, heads, kvHeads, headDim, ffnDim, vocab, contextLength, ropeTheta,
                ropeStyle, ropeFactors, normEps, weightType, bias, norm, tied, architecture);
    }

    public LlamaConfig withHeadDim(int value) {
        return new LlamaConfig(dim, layers, heads, kvHeads, value, ffnDim, vocab, contextLength, ropeTheta,
                ropeStyle, ropeFactors, normEps, weightType, attentionBias, qkNorm, tiedEmbeddings, architecture);
    }

    /** With {@code value}'s family features. */
    public LlamaConfig withArchitecture(Architecture value) {
        return new LlamaConfig(dim, layers, heads, kvHeads, headDim, ffnDim, vocab, contextLength, ropeTheta,
                ropeStyle, ropeFactors, normEps, weightType, attentionBias, qkNorm, tiedEmbeddings, value);
    }

    /** Bytes of every weight: the matrices in {@link #weightType}, the norms in f32. */
    public long weightBytes() {
        return weightBytes((tensor, layer) -> weightType);
    }

    /**
     * Bytes of every weight with each matrix of each layer in {@code typeOf(tensor, layer)} (the
     * classifier counted once when tied to the embedding; layer 0 for tensors not per layer), the
     * norms in f32.
     */
    public long weightBytes(BiFunction<LlamaWeights.Tensor, Integer, TensorType> typeOf) {
        long total = 0;
        for (LlamaWeights.Tensor tensor : LlamaWeights.Tensor.values()) {
            if (tensor.present(this) && !(tensor == LlamaWeights.Tensor.OUTPUT && tiedEmbeddings)) {
                for (int l = 0; l < (tensor.perLayer() ? layers : 1); l++) {
                    total += tensor.norm() ? tensor.bytes(this) : tensor.bytes(this, typeOf.apply(tensor, l));
                }
            }
        }
        return total;
    }
}
