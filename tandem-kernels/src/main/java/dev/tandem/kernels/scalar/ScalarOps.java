package dev.tandem.kernels.scalar;

import static dev.tandem.kernels.scalar.LittleEndian.F16;
import static dev.tandem.kernels.scalar.LittleEndian.F32;
import static dev.tandem.kernels.scalar.LittleEndian.I32;
import static dev.tandem.kernels.scalar.LittleEndian.I8;

import dev.tandem.kernels.KernelOps;
import dev.tandem.kernels.Q8_0;
import dev.tandem.kernels.RopeOps;
import dev.tandem.kernels.TensorType;
import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;

/**
 * The scalar kernels: plain loops in the order a reader expects, the test oracle of
 * {@code VectorOps} and the fallback when the Vector API is absent. Same signatures, same argument
 * checks; accumulation is in f32, as in the vector kernels.
 *
 * <p>One class of about 1,000 lines on purpose, where the vector kernels are a class per family:
 * it is the oracle, read family by family in the interfaces' order beside the vector class under
 * test, and each kernel here is a loop of a few lines with nothing to share but the checks
 * ({@link ArgumentChecks}) and the layout classes' rows, which already live apart.
 */
public final class ScalarOps implements KernelOps {

    public static final ScalarOps INSTANCE = new ScalarOps();

    private static final long F = Float.BYTES;

    private ScalarOps() {}

    @Override
    public String name() {
        return "scalar";
    }
    /**
     * Each input quantized block by block ({@link Q4_0X16#quantized}), then each row's sum in row
     * order, as the layout class's {@code row} takes it; f32, f16 and bf16 each row's values in
     * order ({@link FloatsX16#row}). Nothing is kept from call to call: {@code inputKey} changes
     * nothing.
     */
    @Override
    public void matmul(TensorType type, MemorySegment weights, long weightsOffset, MemorySegment x, long xOffset,
            MemorySegment out, long outOffset, int rows, int cols, int batch, int rowStart, int rowEnd,
            long inputKey) {
        switch (type) {
            case F32_X16, F16_X16, BF16_X16 -> floatsX16(type, weights, weightsOffset, x, xOffset, out, outOffset,
                    rows, cols, batch, rowStart, rowEnd);
            case null -> throw ArgumentChecks.notInterleaved(null);
            default -> int8Rows(type, int8Row(type), weights, weightsOffset, x, xOffset, out, outOffset, rows, cols,
                    batch, rowStart, rowEnd);
        }
    }

    /** The scalar row of an interleaved block layout, from its layout class. */
    private static Int8Row int8Row(TensorType type) {
        return switch (type) {
            case Q4_0_X16 -> (w, at, n, c, r, in, q, k) -> Q4_0X16.row(w, at, n, c / 32, r, in, q, k);
            case Q8_0_X16 -> (w, at, n, c, r, in, q, k) -> Q8_0X16.row(w, at, n, c / 32, r, in, q, k);
            case Q4_K_X16 -> (w, at, n, c, r, in, q, k) -> Q4_KX16.row(w, at, n, c / 256, r, in, q, k);
            case Q5_K_X16 -> (w, at, n, c, r, in, q, k) -> Q5_KX16.row(w, at, n, c / 256, r, in, q, k);
            case Q6_K_X16 -> (w, at, n, c, r, in, q, k) -> Q6_KX16.row(w, at, n, c / 256, r, in, q, k);
            case Q2_K_X16 -> (w, at, n, c, r, in, q, k) -> LowBitsKX16.row(false, w, at, n, c / 256, r, in, q, k);
            case Q3_K_X16 -> (w, at, n, c, r, in, q, k) -> LowBitsKX16.row(true, w, at, n, c / 256, r, in, q, k);
            case IQ4_NL_X16 -> (w, at, n, c, r, in, q, k) -> Iq4X16.row(false, w, at, n, c / 32, r, in, q, k);
            case IQ4_XS_X16 -> (w, at, n, c, r, in, q, k) -> Iq4X16.row(true, w, at, n, c / 256, r, in, q, k);
            case Q4_1_X16 -> (w, at, n, c, r, in, q, k) -> SmallBlocksX16.row(TensorType.Q4_1, w, at, n, c / 32, r, in,
                    q, k);
            case Q5_1_X16 -> (w, at, n, c, r, in, q, k) -> SmallBlocksX16.row(TensorType.Q5_1, w, at, n, c / 32, r, in,
                    q, k);
            case Q5_0_X16 -> (w, at, n, c, r, in, q, k) -> SmallBlocksX16.row(TensorType.Q5_0, w, at, n, c / 32, r, in,
                    q, k);
            default -> throw ArgumentChecks.notInterleaved(type);
        };
    }

    private static void floatsX16(TensorType type, MemorySegment weights, long weightsOffset, MemorySegment x,
            long xOffset, MemorySegment out, long outOffset, int rows, int cols, int batch, int rowStart, int rowEnd) {
        ArgumentChecks.matmulBlocks(type,
                weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd);
        TensorType plain = type.source();
        for (int r = rowStart; r < rowEnd; r++) {
            for (int b = 0; b < batch; b++) {
                out.set(F32, outOffset + ((long) b * rows + r) * F, FloatsX16.row(plain, weights, weightsOffset,
                        rows, cols, r, x, xOffset + (long) b * cols * F));
            }
        }
    }

    /** One row of an interleaved type against one quantized input, its {@code row} method's scalar sum. */
    @FunctionalInterface
    private interface Int8Row {
        float row(MemorySegment weights, long weightsOffset, int rows, int cols, int r, Q4_0X16.Inputs in, int qBase,
                int blockBase);
    }

    /** The interleaved block types: each input quantized, then each row's sum by {@code row}, in row order. */
    private static void int8Rows(TensorType type, Int8Row row, MemorySegment weights, long weightsOffset,
            MemorySegment x, long xOffset, MemorySegment out, long outOffset, int rows, int cols, int batch,
            int rowStart, int rowEnd) {
        ArgumentChecks.matmulBlocks(type,
                weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd);
        int blocks = cols / 32;
        Q4_0X16.Inputs in = Q4_0X16.quantized(x, xOffset, batch, cols);
        for (int r = rowStart; r < rowEnd; r++) {
            for (int b = 0; b < batch; b++) {
                out.set(F32, outOffset + ((long) b * rows + r) * F,
                        row.row(weights, weightsOffset, rows, cols, r, in, b * cols, b * blocks));
            }
        }
    }

    /**
     * The 6-bit quant of value {@code i} (0 to 255) of the q6_K block at {@code block}, less 32:
     * its low four bits from {@code ql} (the low or high nibble of byte {@code i % 32}, or of byte
     * {@code 32 + i % 32}, of its 128-value half), its top two from a bit pair of {@code qh} byte
     * {@code i % 32} of that half, as llama.cpp lays them out.
     */
    public static int q6_KQuant(MemorySegment src, long block, int i) {
        int half = i / 128;
        int quarter = i % 128 / 32; // which of q1..q4 of llama.cpp's loop
        int l = i % 32;
        int low = unsigned(src, block + half * 64 + (quarter % 2) * 32 + l);
        int top = unsigned(src, block + 128 + half * 32 + l);
        int nibble = quarter < 2 ? low & 0x0f : low >>> 4;
        return (nibble | (top >>> (2 * quarter) & 3) << 4) - 32;
    }

    /** The scale (0 to 15) of value {@code i} (0 to 255) of a q6_K block: one per 16 values. */
    public static int q6_KGroup(int i) {
        return i / 16;
    }

    // ---- norm, rope, element-wise ----

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
        ArgumentChecks.rmsnorm(x, xOffset, weight, weightOffset, out, outOffset, n, eps);
        if (n == 0) {
            return;
        }
        float inverseRms = rmsInverse(sumOfSquaresFrom(0, x, xOffset, n, 0f), n, eps);
        rmsScaleFrom(0, x, xOffset, weight, weightOffset, out, outOffset, n, inverseRms);
    }

    // The loops below run from element `from`: from 0 they are the scalar kernels, from the vector
    // loop's bound the vector kernels' tails, so that both compute the same thing in one place.

    /** {@code sum} plus the squares of elements {@code [from, n)} of {@code x}, in order. */
    private static float sumOfSquaresFrom(int from, MemorySegment x, long xOffset, int n, float sum) {
        for (int i = from; i < n; i++) {
            float v = x.get(F32, xOffset + i * F);
            sum += v * v;
        }
        return sum;
    }

    /** {@code out[i] = weight[i] * (x[i] * inverseRms)} for {@code i} in {@code [from, n)}. */
    private static void rmsScaleFrom(int from, MemorySegment x, long xOffset, MemorySegment weight, long weightOffset,
            MemorySegment out, long outOffset, int n, float inverseRms) {
        for (int i = from; i < n; i++) {
            float normalized = x.get(F32, xOffset + i * F) * inverseRms;
            out.set(F32, outOffset + i * F, weight.get(F32, weightOffset + i * F) * normalized);
        }
    }

    /** {@code 1 / sqrt(sumOfSquares / n + eps)}, shared with the vector kernel. */
    public static float rmsInverse(float sumOfSquares, int n, float eps) {
        return (float) (1.0 / Math.sqrt(sumOfSquares / n + eps));
    }

    @Override
    public void rope(MemorySegment x, long xOffset, int heads, int headDim, int position, float theta) {
        ArgumentChecks.rope(x, xOffset, heads, headDim, position, theta);
        for (int pair = 0; pair < headDim / 2; pair++) {
            double angle = RopeOps.angle(position, pair, headDim, theta);
            float cos = (float) Math.cos(angle);
            float sin = (float) Math.sin(angle);
            for (int h = 0; h < heads; h++) {
                rotatePair(x, xOffset + ((long) h * headDim + 2L * pair) * F, cos, sin);
            }
        }
    }

    /** Rotates the pair at {@code offset} by the angle of {@code cos} and {@code sin}. */
    public static void rotatePair(MemorySegment x, long offset, float cos, float sin) {
        float x0 = x.get(F32, offset);
        float x1 = x.get(F32, offset + F);
        x.set(F32, offset, x0 * cos - x1 * sin);
        x.set(F32, offset + F, x0 * sin + x1 * cos);
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
        ArgumentChecks.siluMul(gate, gateOffset, up, upOffset, out, outOffset, n);
        siluMulFrom(0, gate, gateOffset, up, upOffset, out, outOffset, n);
    }

    /** {@link #siluMul} of elements {@code [from, n)}. */
    private static void siluMulFrom(int from, MemorySegment gate, long gateOffset, MemorySegment up, long upOffset,
            MemorySegment out, long outOffset, int n) {
        for (int i = from; i < n; i++) {
            float g = gate.get(F32, gateOffset + i * F);
            float silu = g / (1f + (float) Math.exp(-g));
            out.set(F32, outOffset + i * F, silu * up.get(F32, upOffset + i * F));
        }
    }

    @Override
    public void residualAdd(MemorySegment acc, long accOffset, MemorySegment delta, long deltaOffset, int n) {
        ArgumentChecks.residualAdd(acc, accOffset, delta, deltaOffset, n);
        residualAddFrom(0, acc, accOffset, delta, deltaOffset, n);
    }

    /** {@link #residualAdd} of elements {@code [from, n)}. */
    private static void residualAddFrom(int from, MemorySegment acc, long accOffset, MemorySegment delta,
            long deltaOffset, int n) {
        for (int i = from; i < n; i++) {
            long at = accOffset + i * F;
            acc.set(F32, at, acc.get(F32, at) + delta.get(F32, deltaOffset + i * F));
        }
    }

    // ---- embedding ----

    @Override
    public void embedF32(
            MemorySegment table, long tableOffset, MemorySegment out, long outOffset, int rows, int dim, int token) {
        ArgumentChecks.embedF32(table, tableOffset, out, outOffset, rows, dim, token);
        MemorySegment.copy(table, tableOffset + (long) token * dim * F, out, outOffset, dim * F);
    }

    @Override
    public void embedQ8_0(
            MemorySegment table, long tableOffset, MemorySegment out, long outOffset, int rows, int dim, int token) {
        ArgumentChecks.embedQ8_0(table, tableOffset, out, outOffset, rows, dim, token);
        long row = tableOffset + (long) token * Q8_0.rowBytes(dim);
        for (int block = 0; block < dim / Q8_0.BLOCK_SIZE; block++) {
            dequantizeQ8_0Block(
                    table, row + (long) block * Q8_0.BLOCK_BYTES, out, outOffset + (long) block * Q8_0.BLOCK_SIZE * F);
        }
    }

    // ---- argmax and sampling ----

    @Override
    public int argmax(MemorySegment values, long offset, int n) {
        ArgumentChecks.argmax(values, offset, n);
        return argmaxChecked(values, offset, n);
    }

    private static int argmaxChecked(MemorySegment values, long offset, int n) {
        int best = 0;
        float bestValue = values.get(F32, offset);
        for (int i = 0; i < n; i++) {
            float v = values.get(F32, offset + i * F);
            if (Float.isNaN(v)) {
                throw ArgumentChecks.nanAt("argmax", i);
            }
            if (v > bestValue) {
                bestValue = v;
                best = i;
            }
        }
        return best;
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
        ArgumentChecks.sample(logits, logitsOffset, probs, probsOffset, n, temperature, topP);
        if (temperature == 0f) {
            return argmaxChecked(logits, logitsOffset, n);
        }
        float max = Float.NEGATIVE_INFINITY;
        for (int i = 0; i < n; i++) {
            max = Math.max(max, logits.get(F32, logitsOffset + i * F));
        }
        ArgumentChecks.sampleMax(max);
        float sum = softmaxFrom(0, logits, logitsOffset, probs, probsOffset, n, max, 1f / temperature, 0f);
        float inverseSum = 1f / sum;
        scaleFrom(0, probs, probsOffset, probs, probsOffset, n, inverseSum);
        // The largest probability is exp(0) * inverseSum.
        float threshold = nucleusThreshold(probs, probsOffset, n, topP, inverseSum);
        float nucleusMass = massAtLeast(probs, probsOffset, n, threshold);
        return draw(probs, probsOffset, n, threshold, nucleusMass, seed);
    }

    /**
     * {@code probs[i] = exp((logits[i] - max) * inverseTemperature)} for {@code i} in
     * {@code [from, n)}; returns {@code sum} plus them, in order.
     */
    private static float softmaxFrom(int from, MemorySegment logits, long logitsOffset, MemorySegment probs,
            long probsOffset, int n, float max, float inverseTemperature, float sum) {
        for (int i = from; i < n; i++) {
            float e = (float) Math.exp((logits.get(F32, logitsOffset + i * F) - max) * inverseTemperature);
            probs.set(F32, probsOffset + i * F, e);
            sum += e;
        }
        return sum;
    }

    private static float nucleusThreshold(MemorySegment probs, long offset, int n, float topP, float largest) {
        if (topP >= 1f) {
            return 0f;
        }
        if (largest >= topP) {
            return largest;
        }
        // Bisect on the bits of non-negative floats, whose order is the order of their values.
        // Invariant: mass(low) >= topP or low == 0; mass(high) < topP (above the largest, it is 0).
        int low = 0;
        int high = Float.floatToRawIntBits(largest) + 1;
        while (high - low > 1) {
            int middle = (low + high) >>> 1;
            if (massAtLeast(probs, offset, n, Float.intBitsToFloat(middle)) >= topP) {
                low = middle;
            } else {
                high = middle;
            }
        }
        return Float.intBitsToFloat(low);
    }

    private static float massAtLeast(MemorySegment probs, long offset, int n, float threshold) {
        return massAtLeastFrom(0, probs, offset, n, threshold, 0f);
    }

    /** {@code mass} plus the elements of {@code [from, n)} that are at least {@code threshold}, in order. */
    private static float massAtLeastFrom(int from, MemorySegment probs, long offset, int n, float threshold,
            float mass) {
        for (int i = from; i < n; i++) {
            float p = probs.get(F32, offset + i * F);
            if (p >= threshold) {
                mass += p;
            }
        }
        return mass;
    }

    /**
     * The first nucleus index at which the running nucleus mass exceeds {@code u * nucleusMass}.
     * Shared by both implementations: it is a sequential scan, and sharing it makes equal
     * probabilities give equal tokens.
     */
    public static int draw(MemorySegment probs, long offset, int n, float threshold, float nucleusMass, long seed) {
        double target = new SplittableRandom(seed).nextDouble() * nucleusMass;
        double running = 0.0;
        int last = 0;
        for (int i = 0; i < n; i++) {
            float p = probs.get(F32, offset + i * F);
            if (p >= threshold) {
                running += p;
                last = i;
                if (running > target) {
                    return i;
                }
            }
        }
        return last;
    }

    // ---- paged attention ----

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
        ArgumentChecks.qk(q, qOffset, keys, keysOffset, scores, scoresOffset, headDim, rowStride, validRows, scale);
        for (int j = 0; j < validRows; j++) {
            float dot = dotFrom(0, q, qOffset, keys, keysOffset + (long) j * rowStride * F, headDim, 0f);
            scores.set(F32, scoresOffset + j * F, dot * scale);
        }
    }

    /** {@code sum} plus the products of elements {@code [from, n)} of {@code a} and {@code b}, in order. */
    private static float dotFrom(int from, MemorySegment a, long aOffset, MemorySegment b, long bOffset, int n,
            float sum) {
        for (int c = from; c < n; c++) {
            sum += a.get(F32, aOffset + c * F) * b.get(F32, bOffset + c * F);
        }
        return sum;
    }

    @Override
    public void softmaxPrepare(
            MemorySegment scores, long scoresOffset, MemorySegment blockStats, long blockStatsOffset, int n) {
        ArgumentChecks.softmaxPrepare(scores, scoresOffset, blockStats, blockStatsOffset, n);
        float max = Float.NEGATIVE_INFINITY;
        for (int j = 0; j < n; j++) {
            max = Math.max(max, scores.get(F32, scoresOffset + j * F));
        }
        float sum = 0f;
        if (max == Float.NEGATIVE_INFINITY) {
            for (int j = 0; j < n; j++) {
                scores.set(F32, scoresOffset + j * F, 0f);
            }
        } else {
            sum = expFrom(0, scores, scoresOffset, n, max, 0f);
        }
        blockStats.set(F32, blockStatsOffset, max);
        blockStats.set(F32, blockStatsOffset + F, sum);
    }

    /**
     * Replaces elements {@code [from, n)} of {@code scores} by {@code exp(score - max)}, and returns
     * {@code sum} plus them, in order.
     */
    private static float expFrom(int from, MemorySegment scores, long scoresOffset, int n, float max, float sum) {
        for (int j = from; j < n; j++) {
            long at = scoresOffset + j * F;
            float e = (float) Math.exp(scores.get(F32, at) - max);
            scores.set(F32, at, e);
            sum += e;
        }
        return sum;
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
        ArgumentChecks.pv(exps, expsOffset, values, valuesOffset, partial, partialOffset, headDim, rowStride, n);
        pvFrom(0, exps, expsOffset, values, valuesOffset, partial, partialOffset, headDim, rowStride, n);
    }

    /** {@link #pv} of columns {@code [from, headDim)}: each column's sum over the {@code n} rows in order. */
    private static void pvFrom(int from, MemorySegment exps, long expsOffset, MemorySegment values, long valuesOffset,
            MemorySegment partial, long partialOffset, int headDim, int rowStride, int n) {
        for (int c = from; c < headDim; c++) {
            float sum = 0f;
            for (int j = 0; j < n; j++) {
                sum += exps.get(F32, expsOffset + j * F)
                        * values.get(F32, valuesOffset + ((long) j * rowStride + c) * F);
            }
            partial.set(F32, partialOffset + c * F, sum);
        }
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
        ArgumentChecks.widenF16(halves, halvesOffset, headDim, rowStride, rows, out, outOffset);
        for (int j = 0; j < rows; j++) {
            long from = halvesOffset + (long) j * rowStride * Short.BYTES;
            long to = outOffset + (long) j * headDim * F;
            for (int c = 0; c < headDim; c++) {
                out.set(F32, to + c * F, Float.float16ToFloat(halves.get(F16, from + c * (long) Short.BYTES)));
            }
        }
    }

    @Override
    public void onlineInit(
            MemorySegment runningStats,
            long runningStatsOffset,
            MemorySegment runningOut,
            long runningOutOffset,
            int headDim) {
        ArgumentChecks.onlineInit(runningStats, runningStatsOffset, runningOut, runningOutOffset, headDim);
        runningStats.set(F32, runningStatsOffset, Float.NEGATIVE_INFINITY);
        runningStats.set(F32, runningStatsOffset + F, 0f);
        // Stores, not asSlice(...).fill: inlined into attention's task body the slice was not
        // scalar-replaced, an object per row, head and block.
        for (int k = 0; k < headDim; k++) {
            runningOut.set(F32, runningOutOffset + k * F, 0f);
        }
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
        ArgumentChecks.onlineUpdate(
                runningStats,
                runningStatsOffset,
                runningOut,
                runningOutOffset,
                blockStats,
                blockStatsOffset,
                partial,
                partialOffset,
                headDim);
        long scales = OnlineSoftmax.foldStats(runningStats, runningStatsOffset, blockStats, blockStatsOffset);
        if (scales == OnlineSoftmax.NO_BLOCK) {
            return;
        }
        OnlineSoftmax.rescale(runningOut, runningOutOffset, partial, partialOffset, 0, headDim, scales);
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
        ArgumentChecks.normalize(
                runningStats, runningStatsOffset, runningOut, runningOutOffset, out, outOffset, headDim);
        float sum = runningStats.get(F32, runningStatsOffset + F);
        ArgumentChecks.attendedSomething(sum);
        scaleFrom(0, runningOut, runningOutOffset, out, outOffset, headDim, 1f / sum);
    }

    /** {@code out[c] = in[c] * factor} for {@code c} in {@code [from, n)}. */
    private static void scaleFrom(int from, MemorySegment in, long inOffset, MemorySegment out, long outOffset, int n,
            float factor) {
        for (int c = from; c < n; c++) {
            out.set(F32, outOffset + c * F, in.get(F32, inOffset + c * F) * factor);
        }
    }

    // ---- dequantize and quantize (the block layouts are in TensorType) ----

    @Override
    public void dequantize(
            TensorType type, MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long elements) {
        ArgumentChecks.dequantize(type, src, srcOffset, dst, dstOffset, elements);
        long blocks = elements / type.blockSize();
        long blockBytes = type.blockBytes();
        long blockFloats = type.blockSize() * F;
        switch (type) {
            case F32 -> MemorySegment.copy(src, srcOffset, dst, dstOffset, elements * F);
            case F16 -> dequantizeF16(src, srcOffset, dst, dstOffset, 0, elements);
            case BF16 -> dequantizeBf16(src, srcOffset, dst, dstOffset, 0, elements);
            case Q8_0 -> {
                for (long b = 0; b < blocks; b++) {
                    dequantizeQ8_0Block(src, srcOffset + b * blockBytes, dst, dstOffset + b * blockFloats);
                }
            }
            case Q4_0 -> {
                for (long b = 0; b < blocks; b++) {
                    dequantizeQ4_0Block(src, srcOffset + b * blockBytes, dst, dstOffset + b * blockFloats);
                }
            }
            case Q5_0 -> {
                for (long b = 0; b < blocks; b++) {
                    dequantizeQ5_0Block(src, srcOffset + b * blockBytes, dst, dstOffset + b * blockFloats);
                }
            }
            case Q2_K, Q3_K -> {
                for (long b = 0; b < blocks; b++) {
                    dequantizeLowBitsKBlock(type == TensorType.Q3_K, src, srcOffset + b * blockBytes, dst,
                            dstOffset + b * blockFloats);
                }
            }
            case IQ4_NL, IQ4_XS -> {
                for (long b = 0; b < blocks; b++) {
                    dequantizeIq4Block(type == TensorType.IQ4_XS, src, srcOffset + b * blockBytes, dst,
                            dstOffset + b * blockFloats);
                }
            }
            case Q4_1, Q5_1 -> {
                for (long b = 0; b < blocks; b++) {
                    dequantizeMinBlock(type == TensorType.Q5_1, src, srcOffset + b * blockBytes, dst,
                            dstOffset + b * blockFloats);
                }
            }
            case Q5_K -> {
                for (long b = 0; b < blocks; b++) {
                    dequantizeQ5_KBlock(src, srcOffset + b * blockBytes, dst, dstOffset + b * blockFloats);
                }
            }
            case Q4_K -> {
                for (long b = 0; b < blocks; b++) {
                    dequantizeQ4_KBlock(src, srcOffset + b * blockBytes, dst, dstOffset + b * blockFloats);
                }
            }
            case Q6_K -> {
                for (long b = 0; b < blocks; b++) {
                    dequantizeQ6_KBlock(src, srcOffset + b * blockBytes, dst, dstOffset + b * blockFloats);
                }
            }
        }
    }

    /** f16 values {@code [from, to)} of the tensor at {@code src} to f32; the vector kernel's tail too. */
    public static void dequantizeF16(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long from, long to) {
        for (long i = from; i < to; i++) {
            dst.set(F32, dstOffset + i * F, HalfFloats.f16ToF32(src.get(F16, srcOffset + i * 2)));
        }
    }

    /** bf16 values {@code [from, to)} of the tensor at {@code src} to f32; the vector kernel's tail too. */
    public static void dequantizeBf16(
            MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long from, long to) {
        for (long i = from; i < to; i++) {
            dst.set(F32, dstOffset + i * F, HalfFloats.bf16ToF32(src.get(F16, srcOffset + i * 2)));
        }
    }

    /** The f32 value of the f16 at {@code offset}. */
    public static float half(MemorySegment segment, long offset) {
        return HalfFloats.f16ToF32(segment.get(F16, offset));
    }

    private static void dequantizeQ8_0Block(MemorySegment src, long block, MemorySegment dst, long to) {
        float d = half(src, block);
        for (int j = 0; j < 32; j++) {
            dst.set(F32, to + j * F, src.get(I8, block + 2 + j) * d);
        }
    }

    private static void dequantizeQ4_0Block(MemorySegment src, long block, MemorySegment dst, long to) {
        float d = half(src, block);
        for (int j = 0; j < 16; j++) {
            int packed = src.get(I8, block + 2 + j) & 0xff;
            dst.set(F32, to + j * F, ((packed & 0x0f) - 8) * d);
            dst.set(F32, to + (j + 16) * F, ((packed >>> 4) - 8) * d);
        }
    }

    /**
     * One q5_0 block to f32: {@code (q - 16) * d} per value ({@link SmallBlocksX16#quant}). The vector
     * implementation runs it too: q5_0 is dequantized only for an embedding row and the reference.
     */
    public static void dequantizeQ5_0Block(MemorySegment src, long block, MemorySegment dst, long to) {
        float d = half(src, block);
        int qh = src.get(I32, block + 2);
        for (int j = 0; j < 16; j++) {
            int packed = src.get(I8, block + 6 + j) & 0xff;
            dst.set(F32, to + j * F, (SmallBlocksX16.quant(qh, packed, j) - 16) * d);
            dst.set(F32, to + (j + 16) * F, (SmallBlocksX16.quant(qh, packed, j + 16) - 16) * d);
        }
    }

    /**
     * One q2_K or q3_K block to f32 as llama.cpp's {@code dequantize_row_q2_K} and {@code _q3_K}
     * (the bits as {@link LowBitsKX16} describes them): q2_K {@code (d * (sc & 15)) * q -
     * dmin * (sc >> 4)}, q3_K {@code (d * (s - 32)) * q}. The vector implementation runs it too.
     */
    public static void dequantizeLowBitsKBlock(boolean three, MemorySegment src, long block, MemorySegment dst, long to) {
        float d = half(src, block + (three ? 108 : 80));
        float dmin = three ? 0f : half(src, block + 82);
        long quants = block + (three ? 32 : 16);
        for (int is = 0; is < 16; is++) {
            int n = is / 8;
            int j = (is / 2) % 4;
            int h = is % 2;
            float dl;
            float ml = 0f;
            if (three) {
                dl = d * LowBitsKX16.q3Scale(src, block + 96, 1, is);
            } else {
                int sc = unsigned(src, block + is);
                dl = d * (sc & 15);
                ml = dmin * (sc >>> 4);
            }
            for (int l = 0; l < 16; l++) {
                int q = (unsigned(src, quants + 32 * n + 16 * h + l) >>> (2 * j)) & 3;
                long at = to + (128 * n + 32 * j + 16 * h + l) * F;
                if (three) {
                    int mask = unsigned(src, block + 16 * h + l);
                    dst.set(F32, at, dl * (q - 4 + 4 * ((mask >>> (4 * n + j)) & 1)));
                } else {
                    dst.set(F32, at, dl * q - ml);
                }
            }
        }
    }

    /**
     * One iq4_nl block, or iq4_xs superblock, to f32 as llama.cpp's {@code dequantize_row_iq4_nl}
     * and {@code _iq4_xs}: {@code dl * VALUES[n]}, with {@code dl} the f16 scale, or
     * {@code d * (ls - 32)} per sub-block. The vector implementation runs it too.
     */
    public static void dequantizeIq4Block(boolean xs, MemorySegment src, long block, MemorySegment dst, long to) {
        float d = half(src, block);
        int scalesH = xs ? src.get(F16, block + 2) & 0xffff : 0;
        int scalesL = xs ? src.get(I32, block + 4) : 0;
        long nibbles = block + (xs ? 8 : 2);
        for (int ib = 0; ib < (xs ? 8 : 1); ib++) {
            float dl = xs ? d * Iq4X16.xsScale(scalesH, scalesL, ib) : d;
            for (int j = 0; j < 16; j++) {
                int packed = src.get(I8, nibbles + 16 * ib + j) & 0xff;
                dst.set(F32, to + (32 * ib + j) * F, dl * Iq4X16.VALUES[packed & 0x0f]);
                dst.set(F32, to + (32 * ib + j + 16) * F, dl * Iq4X16.VALUES[packed >>> 4]);
            }
        }
    }

    /**
     * One q4_1 or q5_1 block to f32 as llama.cpp's {@code dequantize_row_q4_1}/{@code _q5_1}:
     * {@code q * d + m} per value, a product then a sum. The vector implementation runs it too.
     */
    public static void dequantizeMinBlock(boolean fifthBits, MemorySegment src, long block, MemorySegment dst, long to) {
        float d = half(src, block);
        float m = half(src, block + 2);
        int qh = fifthBits ? src.get(I32, block + 4) : 0;
        long nibbles = block + (fifthBits ? 8 : 4);
        for (int j = 0; j < 16; j++) {
            int packed = src.get(I8, nibbles + j) & 0xff;
            dst.set(F32, to + j * F, SmallBlocksX16.quant(qh, packed, j) * d + m);
            dst.set(F32, to + (j + 16) * F, SmallBlocksX16.quant(qh, packed, j + 16) * d + m);
        }
    }

    /** The 6-bit scale of q4_K sub-block {@code i} (0 to 7), from the 12 bytes at {@code scales}. */
    public static int q4_KScale(MemorySegment src, long scales, int i) {
        return q4_KScale(src, scales, 1, i);
    }

    /**
     * {@link #q4_KScale(MemorySegment, long, int)} with the 12 bytes {@code step} apart
     * ({@link TensorType#Q4_K_X16} keeps a row's scale bytes 16 apart).
     */
    public static int q4_KScale(MemorySegment src, long scales, long step, int i) {
        if (i < 4) {
            return unsigned(src, scales + i * step) & 63;
        }
        return (unsigned(src, scales + (i + 4) * step) & 0x0f) | (unsigned(src, scales + (i - 4) * step) >>> 6) << 4;
    }

    /** The 6-bit min of q4_K sub-block {@code i} (0 to 7), from the 12 bytes at {@code scales}. */
    public static int q4_KMin(MemorySegment src, long scales, int i) {
        return q4_KMin(src, scales, 1, i);
    }

    /** {@link #q4_KMin(MemorySegment, long, int)} with the 12 bytes {@code step} apart. */
    public static int q4_KMin(MemorySegment src, long scales, long step, int i) {
        if (i < 4) {
            return unsigned(src, scales + (i + 4) * step) & 63;
        }
        return (unsigned(src, scales + (i + 4) * step) >>> 4) | (unsigned(src, scales + i * step) >>> 6) << 4;
    }

    private static int unsigned(MemorySegment segment, long offset) {
        return segment.get(I8, offset) & 0xff;
    }

    private static void dequantizeQ4_KBlock(MemorySegment src, long block, MemorySegment dst, long to) {
        float d = half(src, block);
        float dmin = half(src, block + 2);
        long scales = block + 4;
        long quants = block + 16;
        for (int group = 0; group < 4; group++) {
            float d1 = d * q4_KScale(src, scales, 2 * group);
            float m1 = dmin * q4_KMin(src, scales, 2 * group);
            float d2 = d * q4_KScale(src, scales, 2 * group + 1);
            float m2 = dmin * q4_KMin(src, scales, 2 * group + 1);
            long out = to + group * 64 * F;
            for (int l = 0; l < 32; l++) {
                int packed = unsigned(src, quants + group * 32 + l);
                dst.set(F32, out + l * F, d1 * (packed & 0x0f) - m1);
                dst.set(F32, out + (32 + l) * F, d2 * (packed >>> 4) - m2);
            }
        }
    }

    /**
     * One q5_K block to f32 as llama.cpp's {@code dequantize_row_q5_K}: per sub-block
     * {@code d * scale} and {@code dmin * min}, then {@code (d * scale) * q - dmin * min} per value.
     * The vector implementation runs it too (an embedding row, the reference).
     */
    public static void dequantizeQ5_KBlock(MemorySegment src, long block, MemorySegment dst, long to) {
        float d = half(src, block);
        float dmin = half(src, block + 2);
        long scales = block + 4;
        for (int t = 0; t < 8; t++) {
            float scale = d * q4_KScale(src, scales, t);
            float min = dmin * q4_KMin(src, scales, t);
            for (int l = 0; l < 32; l++) {
                int packed = unsigned(src, block + 48 + (t / 2) * 32 + l);
                int q = Q5_KX16.quant(unsigned(src, block + 16 + l), packed, t);
                dst.set(F32, to + (t * 32 + l) * F, scale * q - min);
            }
        }
    }

    private static void dequantizeQ6_KBlock(MemorySegment src, long block, MemorySegment dst, long to) {
        float d = half(src, block + 208);
        for (int half = 0; half < 2; half++) {
            long ql = block + half * 64;
            long qh = block + 128 + half * 32;
            long sc = block + 192 + half * 8;
            long out = to + half * 128 * F;
            for (int l = 0; l < 32; l++) {
                int is = l / 16;
                int low = unsigned(src, ql + l);
                int high = unsigned(src, ql + 32 + l);
                int top = unsigned(src, qh + l);
                int q1 = ((low & 0x0f) | (top & 3) << 4) - 32;
                int q2 = ((high & 0x0f) | (top >>> 2 & 3) << 4) - 32;
                int q3 = ((low >>> 4) | (top >>> 4 & 3) << 4) - 32;
                int q4 = ((high >>> 4) | (top >>> 6) << 4) - 32;
                dst.set(F32, out + l * F, d * src.get(I8, sc + is) * q1);
                dst.set(F32, out + (32 + l) * F, d * src.get(I8, sc + is + 2) * q2);
                dst.set(F32, out + (64 + l) * F, d * src.get(I8, sc + is + 4) * q3);
                dst.set(F32, out + (96 + l) * F, d * src.get(I8, sc + is + 6) * q4);
            }
        }
    }

    @Override
    public void quantize(
            TensorType type, MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long elements) {
        ArgumentChecks.quantize(type, src, srcOffset, dst, dstOffset, elements);
        long blocks = elements / type.blockSize();
        long blockBytes = type.blockBytes();
        long blockFloats = type.blockSize() * F;
        switch (type) {
            case F32 -> MemorySegment.copy(src, srcOffset, dst, dstOffset, elements * F);
            case F16 -> {
                for (long i = 0; i < elements; i++) {
                    dst.set(F16, dstOffset + i * 2, HalfFloats.f32ToF16(src.get(F32, srcOffset + i * F)));
                }
            }
            case BF16 -> {
                for (long i = 0; i < elements; i++) {
                    dst.set(F16, dstOffset + i * 2, HalfFloats.f32ToBf16(src.get(F32, srcOffset + i * F)));
                }
            }
            case Q8_0 -> {
                for (long b = 0; b < blocks; b++) {
                    quantizeQ8_0Block(src, srcOffset + b * blockFloats, dst, dstOffset + b * blockBytes);
                }
            }
            case Q4_0 -> {
                for (long b = 0; b < blocks; b++) {
                    quantizeQ4_0Block(src, srcOffset + b * blockFloats, dst, dstOffset + b * blockBytes);
                }
            }
            case Q5_0 -> {
                for (long b = 0; b < blocks; b++) {
                    quantizeQ5_0Block(src, srcOffset + b * blockFloats, dst, dstOffset + b * blockBytes);
                }
            }
            case Q4_1, Q5_1 -> {
                for (long b = 0; b < blocks; b++) {
                    quantizeMinBlock(type == TensorType.Q5_1, src, srcOffset + b * blockFloats, dst,
                            dstOffset + b * blockBytes);
                }
            }
            case Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS -> throw new AssertionError("ArgumentChecks.quantize rejects " + type);
        }
    }

    /** Quantizes the 32 f32 at {@code from} to the q8_0 block at {@code block}, as {@link Q8_0#quantize} does. */
    public static void quantizeQ8_0Block(MemorySegment src, long from, MemorySegment dst, long block) {
        float amax = 0f;
        for (int j = 0; j < 32; j++) {
            amax = Math.max(amax, Math.abs(src.get(F32, from + j * F)));
        }
        float d = amax / 127f;
        float inverse = d != 0f ? 1f / d : 0f;
        dst.set(F16, block, HalfFloats.f32ToF16(d));
        for (int j = 0; j < 32; j++) {
            dst.set(I8, block + 2 + j, (byte) roundHalfAwayFromZero(src.get(F32, from + j * F) * inverse));
        }
    }

    /** C's {@code roundf}: to the nearest integer, halves away from zero. */
    private static int roundHalfAwayFromZero(float value) {
        int magnitude = Math.round(Math.abs(value));
        return value < 0f ? -magnitude : magnitude;
    }

    private static void quantizeQ4_0Block(MemorySegment src, long from, MemorySegment dst, long block) {
        float amax = 0f;
        float max = 0f;
        for (int j = 0; j < 32; j++) {
            float v = src.get(F32, from + j * F);
            if (amax < Math.abs(v)) {
                amax = Math.abs(v);
                max = v;
            }
        }
        float d = max / -8f;
        float inverse = d != 0f ? 1f / d : 0f;
        dst.set(F16, block, HalfFloats.f32ToF16(d));
        for (int j = 0; j < 16; j++) {
            int low = Math.min(15, (int) (src.get(F32, from + j * F) * inverse + 8.5f));
            int high = Math.min(15, (int) (src.get(F32, from + (j + 16) * F) * inverse + 8.5f));
            dst.set(I8, block + 2 + j, (byte) (low | high << 4));
        }
    }

    /**
     * llama.cpp's {@code quantize_row_q5_0_ref}: {@code max} the value of largest magnitude (the
     * first), {@code d = max / -16}, {@code q = min(31, (int) (x * (1 / d) + 16.5))}, the low four
     * bits as nibbles and the fifth in {@code qh}.
     */
    private static void quantizeQ5_0Block(MemorySegment src, long from, MemorySegment dst, long block) {
        float amax = 0f;
        float max = 0f;
        for (int j = 0; j < 32; j++) {
            float v = src.get(F32, from + j * F);
            if (amax < Math.abs(v)) {
                amax = Math.abs(v);
                max = v;
            }
        }
        float d = max / -16f;
        float inverse = d != 0f ? 1f / d : 0f;
        dst.set(F16, block, HalfFloats.f32ToF16(d));
        int qh = 0;
        for (int j = 0; j < 16; j++) {
            int low = Math.min(31, (int) (src.get(F32, from + j * F) * inverse + 16.5f));
            int high = Math.min(31, (int) (src.get(F32, from + (j + 16) * F) * inverse + 16.5f));
            dst.set(I8, block + 6 + j, (byte) ((low & 0x0f) | (high & 0x0f) << 4));
            qh |= (low >>> 4) << j | (high >>> 4) << (j + 16);
        }
        dst.set(I32, block + 2, qh);
    }

    /**
     * llama.cpp's {@code quantize_row_q4_1_ref} and {@code quantize_row_q5_1_ref}: {@code min} and
     * {@code max} of the block, {@code d = (max - min) / 15} (or 31), {@code q = (int) ((x - min) *
     * (1 / d) + 0.5)}, clamped to 15 for q4_1; the fifth bits of q5_1 in {@code qh}.
     */
    private static void quantizeMinBlock(boolean fifthBits, MemorySegment src, long from, MemorySegment dst,
            long block) {
        float min = Float.MAX_VALUE;
        float max = -Float.MAX_VALUE;
        for (int j = 0; j < 32; j++) {
            float v = src.get(F32, from + j * F);
            if (v < min) {
                min = v;
            }
            if (v > max) {
                max = v;
            }
        }
        float d = (max - min) / (fifthBits ? 31f : 15f);
        float inverse = d != 0f ? 1f / d : 0f;
        dst.set(F16, block, HalfFloats.f32ToF16(d));
        dst.set(F16, block + 2, HalfFloats.f32ToF16(min));
        long nibbles = block + (fifthBits ? 8 : 4);
        int qh = 0;
        for (int j = 0; j < 16; j++) {
            int low = (int) ((src.get(F32, from + j * F) - min) * inverse + 0.5f);
            int high = (int) ((src.get(F32, from + (j + 16) * F) - min) * inverse + 0.5f);
            if (!fifthBits) {
                low = Math.min(15, low);
                high = Math.min(15, high);
            }
            dst.set(I8, nibbles + j, (byte) ((low & 0x0f) | (high & 0x0f) << 4));
            qh |= (low >>> 4) << j | (high >>> 4) << (j + 16);
        }
        if (fifthBits) {
            dst.set(I32, block + 4, qh);
        }
    }
}
