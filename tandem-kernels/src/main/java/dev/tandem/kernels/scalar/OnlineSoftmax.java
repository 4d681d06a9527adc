package dev.tandem.kernels.scalar;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The scalar parts of the online-softmax update that the scalar and vector kernels share:
 * folding a block's (max, sum) into the running (max, sum), and the element loop that the
 * vector kernel uses for its tail.
 */
public final class OnlineSoftmax {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final long F = Float.BYTES;

    /** Returned by {@link #foldStats} when the block attended nothing: leave the state as it is. */
    public static final long NO_BLOCK = -1L;

    private OnlineSoftmax() {}

    /**
     * Writes the new running (max, sum) and returns the factors the running output and the
     * block's partial output must be scaled by, packed as two floats (running scale in the high
     * half, block scale in the low half), or {@link #NO_BLOCK}. Packing keeps the hot path free
     * of allocation.
     */
    public static long foldStats(MemorySegment runningStats, long runningStatsOffset, MemorySegment blockStats,
            long blockStatsOffset) {
        float blockMax = blockStats.get(F32, blockStatsOffset);
        if (blockMax == Float.NEGATIVE_INFINITY) {
            return NO_BLOCK;
        }
        float runningMax = runningStats.get(F32, runningStatsOffset);
        float newMax = Math.max(runningMax, blockMax);
        float runningScale = (float) Math.exp(runningMax - newMax);
        float blockScale = (float) Math.exp(blockMax - newMax);
        float newSum = runningStats.get(F32, runningStatsOffset + F) * runningScale
                + blockStats.get(F32, blockStatsOffset + F) * blockScale;
        runningStats.set(F32, runningStatsOffset, newMax);
        runningStats.set(F32, runningStatsOffset + F, newSum);
        return ((long) Float.floatToRawIntBits(runningScale) << 32) | (Float.floatToRawIntBits(blockScale) & 0xFFFF_FFFFL);
    }

    public static float runningScale(long scales) {
        return Float.intBitsToFloat((int) (scales >>> 32));
    }

    public static float blockScale(long scales) {
        return Float.intBitsToFloat((int) scales);
    }

    /** runningOut[c] = runningOut[c] * runningScale + partial[c] * blockScale for c in [from, headDim). */
    public static void rescale(MemorySegment runningOut, long runningOutOffset, MemorySegment partial, long partialOffset,
            int from, int headDim, long scales) {
        float runningScale = runningScale(scales);
        float blockScale = blockScale(scales);
        for (int c = from; c < headDim; c++) {
            long at = runningOutOffset + c * F;
            runningOut.set(F32, at, runningOut.get(F32, at) * runningScale + partial.get(F32, partialOffset + c * F) * blockScale);
        }
    }
}
