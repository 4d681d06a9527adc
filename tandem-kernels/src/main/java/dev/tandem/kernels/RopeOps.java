package dev.tandem.kernels;

import java.lang.foreign.MemorySegment;

/**
 * Rotary position embedding, Llama's interleaved-pair convention.
 *
 * <p>Within each head of {@code headDim} values, pair {@code i} is {@code (x[2i], x[2i+1])} and is
 * rotated by {@link #angle angle} {@code position * theta^(-2i / headDim)}:
 *
 * <pre>
 *   x[2i]   = x[2i] * cos - x[2i+1] * sin
 *   x[2i+1] = x[2i] * sin + x[2i+1] * cos
 * </pre>
 *
 * <p>This is the layout of Meta's reference code and of GGUF files. Checkpoints in the Hugging Face
 * layout rotate half-split pairs {@code (x[i], x[i + headDim/2])} instead; their q and k weight
 * rows must be permuted to this layout when loaded.
 */
public interface RopeOps {

    /**
     * Vector and scalar {@code rope} agree bit for bit: both take cos and sin from {@link #angle}
     * through {@link Math#cos}/{@link Math#sin} and round the same f32 products and sums.
     */
    float ROPE_TOLERANCE = 0f;

    /**
     * Rotates, in place, {@code heads} consecutive heads of {@code headDim} values each (a span of
     * the heads of one token), all at {@code position}. {@code headDim} must be even.
     */
    void rope(MemorySegment x, long xOffset, int heads, int headDim, int position, float theta);

    /** The rotation angle of pair {@code pair}, computed in double: {@code position * theta^(-2 pair / headDim)}. */
    static double angle(int position, int pair, int headDim, float theta) {
        return position * Math.pow(theta, -2.0 * pair / headDim);
    }
}
