package dev.tandem.kernels.vector;

import dev.tandem.kernels.KernelOps;
import dev.tandem.kernels.Ops;
import dev.tandem.kernels.RopeOps;
import dev.tandem.kernels.TensorType;
import dev.tandem.kernels.scalar.ArgumentChecks;
import dev.tandem.kernels.scalar.ScalarOps;
import java.lang.foreign.MemorySegment;

/**
 * The vector kernels, on {@code FloatVector.SPECIES_PREFERRED}: a dispatcher over one class per
 * kernel family or interleaved layout of this package. Loading a class of this package without
 * {@code jdk.incubator.vector} fails, so only {@link Ops#preferred()} refers to this one, and only
 * after checking the boot layer.
 *
 * <h2>Implementation Overview</h2>
 *
 * <p>Every kernel has llama3.java's shape: a vector loop over {@code loopBound(n)} elements (FMA
 * where it accumulates), {@code reduceLanes} where it reduces, then a scalar tail that computes
 * what {@link ScalarOps} computes for the remaining elements. Argument checks are
 * {@link ArgumentChecks}, shared with the scalar kernels; each kernel checks once, in the family
 * class, before its loops.
 *
 * <ul>
 *   <li>Matmul runs only the interleaved layouts ({@link TensorType#interleaved()}): every matrix a
 *       model multiplies is interleaved when it is loaded. In a group of 16 rows one load holds a
 *       value of all 16 rows, so the loops keep 16 rows' sums in lanes and never sum across lanes;
 *       the block types quantize each input to int8 first ({@link VectorLanes#quantizeInputs}) and
 *       sum integer products exactly, f32, f16 and bf16 multiply-add widened floats. Four or eight
 *       inputs share each loaded weight vector: enough independent FMA chains to hide the FMA
 *       latency. Rows a range cuts out of a group, and the last {@code rows % 16}, run the layout
 *       class's scalar row. One class per layout: {@link VectorQ4_0X16}, {@link VectorQ8_0X16},
 *       {@link VectorQ4_KX16}, {@link VectorQ6_KX16}, {@link VectorSmallBlocksX16} (q5_0, q4_1,
 *       q5_1, iq4_nl, iq4_xs, q5_K, q2_K, q3_K) and {@link VectorFloatsX16}.
 *   <li>Maxima use four independent accumulators: a lane-wise max with {@link Math#max} semantics
 *       (NaN wins) takes several instructions, and one chain of them was the bottleneck.
 *   <li>rope computes cos and sin once per pair (the scalar {@link Math#cos}/{@link Math#sin} of
 *       {@link RopeOps#angle}, as the scalar kernel does), places them in vectors of
 *       {@code [c0, c0, c1, c1, ...]} and {@code [-s0, s0, -s1, s1, ...]}, and rotates every head of
 *       the span with one lane swap, two multiplies and one add per vector.
 *   <li>Exponentials use the vector {@code EXP}, which may differ from {@link Math#exp} in the last
 *       bit; the tolerances in the interfaces allow for it.
 *   <li>The 256- and 128-bit paths are tested by running the tests under a smaller
 *       {@code -XX:MaxVectorSize}.
 * </ul>
 */
public final class VectorOps implements KernelOps {

    public static final VectorOps INSTANCE = new VectorOps();

    private VectorOps() {}

    @Override
    public String name() {
        return "vector (" + VectorLanes.S.vectorBitSize() + "-bit, " + VectorLanes.L + " f32 lanes)";
    }

    /** The interleaved kernels keep their converted inputs from call to call under {@code inputKey}. */
    @Override
    public void matmul(
            TensorType type,
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd,
            long inputKey) {
        switch (type) {
            case Q4_0_X16 -> VectorQ4_0X16.matmul(weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                    rowStart, rowEnd, inputKey);
            case Q4_K_X16 -> VectorQ4_KX16.matmul(weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                    rowStart, rowEnd, inputKey);
            case Q8_0_X16 -> VectorQ8_0X16.matmul(weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                    rowStart, rowEnd, inputKey);
            case Q6_K_X16 -> VectorQ6_KX16.matmul(weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                    rowStart, rowEnd, inputKey);
            case Q5_0_X16, Q5_K_X16, Q4_1_X16, Q5_1_X16, IQ4_NL_X16, IQ4_XS_X16, Q2_K_X16, Q3_K_X16 ->
                    VectorSmallBlocksX16.matmul(type, weights, weightsOffset, x, xOffset, out, outOffset,
                    rows, cols, batch, rowStart, rowEnd, inputKey);
            case F32_X16, F16_X16, BF16_X16 -> VectorFloatsX16.matmul(type, weights, weightsOffset, x, xOffset, out,
                    outOffset, rows, cols, batch, rowStart, rowEnd, inputKey);
            case null, default -> throw ArgumentChecks.notInterleaved(type);
        }
    }

    @Override
    public void rmsnorm(
            MemorySegment x,
            long xOffset,
            MemorySegment weight,
            long weightOffset,
            MemorySegment out,
            long outOffset,
            int n,
            float eps) {
        VectorNormRope.rmsnorm(x, xOffset, weight, weightOffset, out, outOffset, n, eps);
    }

    @Override
    public void rope(MemorySegment x, long xOffset, int heads, int headDim, int position, float theta) {
        VectorNormRope.rope(x, xOffset, heads, headDim, position, theta);
    }

    @Override
    public void siluMul(
            MemorySegment gate,
            long gateOffset,
            MemorySegment up,
            long upOffset,
            MemorySegment out,
            long outOffset,
            int n) {
        VectorNormRope.siluMul(gate, gateOffset, up, upOffset, out, outOffset, n);
    }

    @Override
    public void residualAdd(MemorySegment acc, long accOffset, MemorySegment delta, long deltaOffset, int n) {
        VectorNormRope.residualAdd(acc, accOffset, delta, deltaOffset, n);
    }

    @Override
    public void embedF32(
            MemorySegment table, long tableOffset, MemorySegment out, long outOffset, int rows, int dim, int token) {
        VectorNormRope.embedF32(table, tableOffset, out, outOffset, rows, dim, token);
    }

    @Override
    public void embedQ8_0(
            MemorySegment table, long tableOffset, MemorySegment out, long outOffset, int rows, int dim, int token) {
        VectorNormRope.embedQ8_0(table, tableOffset, out, outOffset, rows, dim, token);
    }

    @Override
    public int argmax(MemorySegment values, long offset, int n) {
        return VectorSampling.argmax(values, offset, n);
    }

    @Override
    public int sample(
            MemorySegment logits,
            long logitsOffset,
            MemorySegment probs,
            long probsOffset,
            int n,
            float temperature,
            float topP,
            long seed) {
        return VectorSampling.sample(logits, logitsOffset, probs, probsOffset, n, temperature, topP, seed);
    }

    @Override
    public void qk(
            MemorySegment q,
            long qOffset,
            MemorySegment keys,
            long keysOffset,
            MemorySegment scores,
            long scoresOffset,
            int headDim,
            int rowStride,
            int validRows,
            float scale) {
        VectorAttention.qk(q, qOffset, keys, keysOffset, scores, scoresOffset, headDim, rowStride, validRows, scale);
    }

    @Override
    public void softmaxPrepare(
            MemorySegment scores, long scoresOffset, MemorySegment blockStats, long blockStatsOffset, int n) {
        VectorAttention.softmaxPrepare(scores, scoresOffset, blockStats, blockStatsOffset, n);
    }

    @Override
    public void pv(
            MemorySegment exps,
            long expsOffset,
            MemorySegment values,
            long valuesOffset,
            MemorySegment partial,
            long partialOffset,
            int headDim,
            int rowStride,
            int n) {
        VectorAttention.pv(exps, expsOffset, values, valuesOffset, partial, partialOffset, headDim, rowStride, n);
    }

    @Override
    public void widenF16(
            MemorySegment halves,
            long halvesOffset,
            int headDim,
            int rowStride,
            int rows,
            MemorySegment out,
            long outOffset) {
        VectorAttention.widenF16(halves, halvesOffset, headDim, rowStride, rows, out, outOffset);
    }

    @Override
    public void onlineInit(
            MemorySegment runningStats,
            long runningStatsOffset,
            MemorySegment runningOut,
            long runningOutOffset,
            int headDim) {
        VectorAttention.onlineInit(runningStats, runningStatsOffset, runningOut, runningOutOffset, headDim);
    }

    @Override
    public void onlineUpdate(
            MemorySegment runningStats,
            long runningStatsOffset,
            MemorySegment runningOut,
            long runningOutOffset,
            MemorySegment blockStats,
            long blockStatsOffset,
            MemorySegment partial,
            long partialOffset,
            int headDim) {
        VectorAttention.onlineUpdate(runningStats, runningStatsOffset, runningOut, runningOutOffset, blockStats,
                blockStatsOffset, partial, partialOffset, headDim);
    }

    @Override
    public void normalize(
            MemorySegment runningStats,
            long runningStatsOffset,
            MemorySegment runningOut,
            long runningOutOffset,
            MemorySegment out,
            long outOffset,
            int headDim) {
        VectorAttention.normalize(runningStats, runningStatsOffset, runningOut, runningOutOffset, out, outOffset,
                headDim);
    }

    @Override
    public void dequantize(
            TensorType type, MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long elements) {
        VectorDequantize.dequantize(type, src, srcOffset, dst, dstOffset, elements);
    }

    @Override
    public void quantize(
            TensorType type, MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long elements) {
        VectorDequantize.quantize(type, src, srcOffset, dst, dstOffset, elements);
    }
}
