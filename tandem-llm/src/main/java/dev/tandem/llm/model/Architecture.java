package dev.tandem.llm.model;

import dev.tandem.llm.reference.LlamaReference;

/**
 * What one decoder family does differently from plain Llama, as data: the shared decoder
 * ({@link LlamaModel}, {@link LlamaReference}) reads these fields and has no branch on a family's
 * name. The tensors a family stores differently (Phi-3's fused q/k/v and gate/up matrices, its
 * short and long rope factors) are the loader's business and never reach the decoder.
 *
 * <p>Every value is as llama.cpp computes it for the family (its {@code src/models/*.cpp}), so
 * the same GGUF file runs the same arithmetic in both:
 *
 * <ul>
 *   <li>Gemma 2: GELU-tanh gated FFN, embeddings times {@code sqrt(dim)}, the attention and FFN
 *       outputs rmsnormed again before their residual add (post-norms), attention scores and the
 *       final logits soft-capped ({@code cap * tanh(x / cap)}), every {@code slidingPeriod}-th
 *       layer global and the others attending to the last {@code slidingWindow} positions.
 *   <li>Gemma 3: as Gemma 2 with q/k norms ({@link LlamaConfig#qkNorm()}), no soft-capping, and
 *       a rope base of its own for the sliding layers (10,000 against the global layers' 1e6,
 *       which a linear {@code ropeScale} may stretch).
 *   <li>Phi-3 / Phi-3.5: plain SiLU decoder; its LongRoPE factors arrive as {@link
 *       LlamaWeights.Tensor#ROPE_FREQS} and its attention factor multiplies every rotation.
 * </ul>
 *
 * <p>The Gemma norm weights in a GGUF already hold {@code 1 + w} (llama.cpp's converter adds
 * the 1), so they are used as stored, like every other family's.
 *
 * @param name                the family, for messages
 * @param activation          the gate's activation in the FFN
 * @param embeddingScale      the token embedding is multiplied by this (1, or {@code sqrt(dim)} as
 *                            an f32 for Gemma)
 * @param postNorms           whether the attention and FFN outputs are rmsnormed
 *                            ({@link LlamaWeights.Tensor#ATTENTION_POST_NORM},
 *                            {@link LlamaWeights.Tensor#FFN_POST_NORM}) before their residual add
 * @param attentionScale      the factor of the query-key products; 0 for {@code 1/sqrt(headDim)}
 * @param attentionSoftcap    attention scores become {@code cap * tanh(score / cap)} (after
 *                            scaling); 0 for none
 * @param logitSoftcap        the logits become {@code cap * tanh(logit / cap)}; 0 for none
 * @param slidingWindow       positions a sliding layer attends to, its own included (a query at
 *                            {@code p} sees keys at {@code p - slidingWindow < k <= p}); 0 for
 *                            none
 * @param slidingPeriod       layer {@code l} slides when {@code l % slidingPeriod <
 *                            slidingPeriod - 1} (llama.cpp's {@code set_swa_pattern}): 2 for
 *                            Gemma 2 (even layers slide), 6 for Gemma 3 (five sliding, one global)
 * @param slidingRopeTheta    the rope base of sliding layers
 * @param slidingRopeScale    sliding layers' positions are multiplied by this (1 but for a Gemma 2
 *                            file with linear rope scaling: llama.cpp scales both kinds there)
 * @param ropeScale           global layers' positions are multiplied by this before rotating
 *                            (linear rope scaling: {@code 1 / factor})
 * @param ropeAttentionFactor every rotation's cosine and sine are multiplied by this (LongRoPE's
 *                            attention factor), so scores scale by its square
 */
public record Architecture(
        String name, Activation activation, float embeddingScale, boolean postNorms, float attentionScale,
        float attentionSoftcap, float logitSoftcap, int slidingWindow, int slidingPeriod, float slidingRopeTheta,
        float slidingRopeScale, float ropeScale, float ropeAttentionFactor) {

    /** The gate's activation of a gated FFN: {@code act(gate) * up}. */
    public enum Activation {
        /** {@code x / (1 + exp(-x))}: Llama, Mistral, Qwen, Phi-3. */
        SILU,
        /** {@code 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))}: Gemma. */
        GELU_TANH
    }

    /** Llama 2 and 3, Mistral, Qwen2, Qwen3: nothing beyond the config's own variants. */
    public static final Architecture LLAMA =
            new Architecture("llama", Activation.SILU, 1f, false, 0f, 0f, 0f, 0, 1, 10000f, 1f, 1f, 1f);

    public Architecture {
        if (name == null || activation == null) {
            throw new IllegalArgumentException("architecture: name and activation must not be null");
        }
        finitePositive("embeddingScale", embeddingScale);
        finitePositive("ropeScale", ropeScale);
        finitePositive("slidingRopeScale", slidingRopeScale);
        finitePositive("ropeAttentionFactor", ropeAttentionFactor);
        finitePositive("slidingRopeTheta", slidingRopeTheta);
        finiteAtLeastZero("attentionScale", attentionScale);
        finiteAtLeastZero("attentionSoftcap", attentionSoftcap);
        finiteAtLeastZero("logitSoftcap", logitSoftcap);
        if (slidingWindow < 0 || slidingPeriod < 1) {
            throw new IllegalArgumentException(name + ": slidingWindow = " + slidingWindow + " must be >= 0 and"
                    + " slidingPeriod = " + slidingPeriod + " >= 1");
        }
    }

    /**
     * Gemma 2 as llama.cpp runs it.
     *
     * @param dim the model's width (the embedding scale is {@code sqrtf(dim)})
     */
    public static Architecture gemma2(int dim, float attentionScale, float attentionSoftcap, float logitSoftcap,
            int slidingWindow, int slidingPeriod, float slidingRopeTheta, float ropeScale) {
        return new Architecture("gemma2", Activation.GELU_TANH, (float) Math.sqrt(dim), true, attentionScale,
                attentionSoftcap, logitSoftcap, slidingWindow, slidingPeriod, slidingRopeTheta, ropeScale, ropeScale,
                1f);
    }

    /** Gemma 3 (text) as llama.cpp runs it; {@code slidingWindow} 0 when the file has none. */
    public static Architecture gemma3(int dim, float attentionScale, float logitSoftcap, int slidingWindow,
            int slidingPeriod, float slidingRopeTheta, float ropeScale) {
        return new Architecture("gemma3", Activation.GELU_TANH, (float) Math.sqrt(dim), true, attentionScale, 0f,
                logitSoftcap, slidingWindow, slidingPeriod, slidingRopeTheta, 1f, ropeScale, 1f);
    }

    /** Phi-3 and Phi-3.5: a Llama decoder whose rotations are multiplied by LongRoPE's attention factor. */
    public static Architecture phi3(float ropeAttentionFactor) {
        return LLAMA.named("phi3").withRope(1f, ropeAttentionFactor);
    }

    /** This one under another name (Mistral, Qwen: the Llama decoder). */
    public Architecture named(String value) {
        return new Architecture(value, activation, embeddingScale, postNorms, attentionScale, attentionSoftcap,
                logitSoftcap, slidingWindow, slidingPeriod, slidingRopeTheta, slidingRopeScale, ropeScale,
                ropeAttentionFactor);
    }

    /** With the global layers' linear rope scale and every rotation's attention factor as given. */
    public Architecture withRope(float scale, float attentionFactor) {
        return new Architecture(name, activation, embeddingScale, postNorms, attentionScale, attentionSoftcap,
                logitSoftcap, slidingWindow, slidingPeriod, slidingRopeTheta, slidingRopeScale, scale,
                attentionFactor);
    }

    /** Whether layer {@code layer} attends to a window of {@link #slidingWindow} positions only. */
    public boolean sliding(int layer) {
        return slidingWindow > 0 && layer % slidingPeriod < slidingPeriod - 1;
    }

    /** The window of layer {@code layer}: {@link #slidingWindow} for a sliding layer, else 0 (the whole context). */
    public int window(int layer) {
        return sliding(layer) ? slidingWindow : 0;
    }

    /** The query-key factor for heads of {@code headDim}: {@link #attentionScale}, or {@code 1/sqrt(headDim)}. */
    public float attentionScale(int headDim) {
        return attentionScale > 0 ? attentionScale : (float) (1.0 / Math.sqrt(headDim));
    }

    /** Whether any layer slides. */
    public boolean hasSlidingLayers() {
        return slidingWindow > 0 && slidingPeriod > 1;
    }

    private static void finitePositive(String field, float value) {
        if (!(value > 0) || Float.isInfinite(value)) {
            throw new IllegalArgumentException(field + " = " + value + " must be finite and > 0");
        }
    }

    private static void finiteAtLeastZero(String field, float value) {
        if (!(value >= 0) || Float.isInfinite(value)) {
            throw new IllegalArgumentException(field + " = " + value + " must be finite and >= 0");
        }
    }
}
