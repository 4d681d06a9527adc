package dev.tandem.llm.model;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The rotary embedding of a model: each head's pairs rotated by {@code position * freq[i]}, with
 * {@code freq[i] = scale * theta^(-2i / headDim) / factor[i]} (factors 1 unless the model carries
 * {@link LlamaWeights.Tensor#ROPE_FREQS}; scale 1 unless the file asks for linear scaling), pairs
 * chosen by the {@link RopeStyle}, the cosines and sines multiplied by the architecture's
 * {@link Architecture#ropeAttentionFactor} (1 but for LongRoPE). Immutable;
 * {@link #apply} may run on many cores at once.
 */
final class Rope {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final RopeStyle style;
    private final int headDim;
    private final double[] frequencies;
    private final float attentionFactor;

    /** The rotation of {@code c}'s global (not sliding) layers. */
    Rope(LlamaConfig c, float[] factors) {
        this(c.ropeStyle(), c.headDim(), c.ropeTheta(), c.architecture().ropeScale(),
                c.architecture().ropeAttentionFactor(), factors);
    }

    /** The rotation of {@code c}'s sliding layers ({@link Architecture#sliding}): their own base and scale. */
    static Rope sliding(LlamaConfig c, float[] factors) {
        return new Rope(c.ropeStyle(), c.headDim(), c.architecture().slidingRopeTheta(),
                c.architecture().slidingRopeScale(), c.architecture().ropeAttentionFactor(), factors);
    }

    /**
     * @param positionScale   positions are multiplied by this (linear rope scaling)
     * @param attentionFactor cosines and sines are multiplied by this (LongRoPE)
     */
    Rope(RopeStyle style, int headDim, float theta, float positionScale, float attentionFactor, float[] factors) {
        this.style = style;
        this.headDim = headDim;
        this.attentionFactor = attentionFactor;
        int pairs = headDim / 2;
        if (factors != null && factors.length != pairs) {
            throw new IllegalArgumentException("rope factors: " + factors.length + " given, headDim / 2 = " + pairs);
        }
        this.frequencies = new double[pairs];
        for (int i = 0; i < pairs; i++) {
            double f = positionScale * Math.pow(theta, -2.0 * i / headDim);
            if (factors != null) {
                if (!(factors[i] > 0) || Float.isInfinite(factors[i])) {
                    throw new IllegalArgumentException("rope factor " + i + " = " + factors[i] + " must be finite and > 0");
                }
                f /= factors[i];
            }
            frequencies[i] = f;
        }
    }

    /** One position's cosines and sines, {@code headDim / 2} of each; never written after it is made. */
    record Angles(int position, float[] cos, float[] sin) {}

    /** Slots of {@link #recent}: a power of two. */
    static final int RECENT = 256;

    /**
     * The angles of recent positions, slot {@code position % RECENT}: every layer of a step rotates
     * its rows by the same positions (made per layer, the angles took a fifth to a quarter of
     * rope_store's core time at batch 1 on the large Q4_0 file: 39-48 against 30-36 us a step).
     * Cores read and fill it without locks: an {@link Angles}' fields are final, so a core that
     * sees one sees its arrays filled, and two cores making the same position's make equal ones.
     */
    private final Angles[] recent = new Angles[RECENT];

    /** The cosines and sines of {@code position}'s angles (made once for recent positions). */
    Angles angles(int position) {
        int slot = position & (RECENT - 1);
        Angles angles = recent[slot];
        if (angles == null || angles.position() != position) {
            angles = compute(position);
            recent[slot] = angles;
        }
        return angles;
    }

    private Angles compute(int position) {
        float[] cos = new float[frequencies.length];
        float[] sin = new float[frequencies.length];
        for (int i = 0; i < frequencies.length; i++) {
            double angle = position * frequencies[i];
            cos[i] = (float) (Math.cos(angle) * attentionFactor);
            sin[i] = (float) (Math.sin(angle) * attentionFactor);
        }
        return new Angles(position, cos, sin);
    }

    /** Rotates {@code heads} heads of f32 values at {@code offset} by {@code angles}. */
    void apply(MemorySegment x, long offset, int heads, Angles angles) {
        float[] cos = angles.cos();
        float[] sin = angles.sin();
        int pairs = frequencies.length;
        for (int h = 0; h < heads; h++) {
            long base = offset + (long) h * headDim * Float.BYTES;
            for (int i = 0; i < pairs; i++) {
                long a = base + (long) (style == RopeStyle.INTERLEAVED ? 2 * i : i) * Float.BYTES;
                long b = base + (long) (style == RopeStyle.INTERLEAVED ? 2 * i + 1 : i + pairs) * Float.BYTES;
                float x0 = x.get(F32, a);
                float x1 = x.get(F32, b);
                x.set(F32, a, x0 * cos[i] - x1 * sin[i]);
                x.set(F32, b, x0 * sin[i] + x1 * cos[i]);
            }
        }
    }
}
