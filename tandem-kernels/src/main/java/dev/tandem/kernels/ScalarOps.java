package dev.tandem.kernels;

import static dev.tandem.kernels.LittleEndian.F32;
import static dev.tandem.kernels.LittleEndian.I8;

import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;

/**
 * The scalar kernels: plain loops in the order a reader expects, the test oracle of
 * {@code VectorOps} and the fallback when the Vector API is absent. Same signatures, same argument
 * checks; accumulation is in f32, as in the vector kernels.
 */
final class ScalarOps implements KernelOps {

    static final ScalarOps INSTANCE = new ScalarOps();

    private static final long F = Float.BYTES;

    private ScalarOps() {}

    @Override
    public String name() {
        return "scalar";
    }

    // ---- matmul ----

    @Override
    public void matmulF32(
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
            int rowEnd) {
        ArgumentChecks.matmulF32(
                weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd);
        for (int r = rowStart; r < rowEnd; r++) {
            long row = weightsOffset + (long) r * cols * F;
            for (int b = 0; b < batch; b++) {
                long input = xOffset + (long) b * cols * F;
                float sum = 0f;
                for (int k = 0; k < cols; k++) {
                    sum += weights.get(F32, row + k * F) * x.get(F32, input + k * F);
                }
                out.set(F32, outOffset + ((long) b * rows + r) * F, sum);
            }
        }
    }

    @Override
    public void matmulQ8_0(
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
            int rowEnd) {
        ArgumentChecks.matmulQ8_0(
                weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd);
        int blocks = cols / Q8_0.BLOCK_SIZE;
        for (int r = rowStart; r < rowEnd; r++) {
            long row = weightsOffset + (long) r * blocks * Q8_0.BLOCK_BYTES;
            for (int b = 0; b < batch; b++) {
                long input = xOffset + (long) b * cols * F;
                float sum = 0f;
                for (int block = 0; block < blocks; block++) {
                    long blockOffset = row + (long) block * Q8_0.BLOCK_BYTES;
                    long blockInput = input + (long) block * Q8_0.BLOCK_SIZE * F;
                    float blockSum = 0f;
                    for (int j = 0; j < Q8_0.BLOCK_SIZE; j++) {
                        blockSum += weights.get(I8, blockOffset + 2 + j) * x.get(F32, blockInput + j * F);
                    }
                    sum += blockSum * Q8_0.scale(weights, blockOffset);
                }
                out.set(F32, outOffset + ((long) b * rows + r) * F, sum);
            }
        }
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
        float sumOfSquares = 0f;
        for (int i = 0; i < n; i++) {
            float v = x.get(F32, xOffset + i * F);
            sumOfSquares += v * v;
        }
        float inverseRms = rmsInverse(sumOfSquares, n, eps);
        for (int i = 0; i < n; i++) {
            float normalized = x.get(F32, xOffset + i * F) * inverseRms;
            out.set(F32, outOffset + i * F, weight.get(F32, weightOffset + i * F) * normalized);
        }
    }

    /** {@code 1 / sqrt(sumOfSquares / n + eps)}, shared with the vector kernel. */
    static float rmsInverse(float sumOfSquares, int n, float eps) {
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
    static void rotatePair(MemorySegment x, long offset, float cos, float sin) {
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
        for (int i = 0; i < n; i++) {
            float g = gate.get(F32, gateOffset + i * F);
            float silu = g / (1f + (float) Math.exp(-g));
            out.set(F32, outOffset + i * F, silu * up.get(F32, upOffset + i * F));
        }
    }

    @Override
    public void residualAdd(MemorySegment acc, long accOffset, MemorySegment delta, long deltaOffset, int n) {
        ArgumentChecks.residualAdd(acc, accOffset, delta, deltaOffset, n);
        for (int i = 0; i < n; i++) {
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
            long blockOffset = row + (long) block * Q8_0.BLOCK_BYTES;
            long to = outOffset + (long) block * Q8_0.BLOCK_SIZE * F;
            float d = Q8_0.scale(table, blockOffset);
            for (int j = 0; j < Q8_0.BLOCK_SIZE; j++) {
                out.set(F32, to + j * F, table.get(I8, blockOffset + 2 + j) * d);
            }
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
                throw nanAt("argmax", i);
            }
            if (v > bestValue) {
                bestValue = v;
                best = i;
            }
        }
        return best;
    }

    static IllegalArgumentException nanAt(String kernel, int index) {
        return new IllegalArgumentException(kernel + ": values[" + index + "] is NaN");
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
        checkSampleMax(max);
        float inverseTemperature = 1f / temperature;
        float sum = 0f;
        for (int i = 0; i < n; i++) {
            float e = (float) Math.exp((logits.get(F32, logitsOffset + i * F) - max) * inverseTemperature);
            probs.set(F32, probsOffset + i * F, e);
            sum += e;
        }
        float inverseSum = 1f / sum;
        for (int i = 0; i < n; i++) {
            long at = probsOffset + i * F;
            probs.set(F32, at, probs.get(F32, at) * inverseSum);
        }
        // The largest probability is exp(0) * inverseSum.
        float threshold = nucleusThreshold(probs, probsOffset, n, topP, inverseSum);
        float nucleusMass = massAtLeast(probs, probsOffset, n, threshold);
        return draw(probs, probsOffset, n, threshold, nucleusMass, seed);
    }

    static void checkSampleMax(float max) {
        if (Float.isNaN(max) || max == Float.POSITIVE_INFINITY || max == Float.NEGATIVE_INFINITY) {
            throw new IllegalArgumentException("sample: largest logit = " + max
                    + " must be finite (no NaN, no +Infinity, not every logit -Infinity)");
        }
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
        float mass = 0f;
        for (int i = 0; i < n; i++) {
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
    static int draw(MemorySegment probs, long offset, int n, float threshold, float nucleusMass, long seed) {
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
            long key = keysOffset + (long) j * rowStride * F;
            float dot = 0f;
            for (int c = 0; c < headDim; c++) {
                dot += q.get(F32, qOffset + c * F) * keys.get(F32, key + c * F);
            }
            scores.set(F32, scoresOffset + j * F, dot * scale);
        }
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
            for (int j = 0; j < n; j++) {
                long at = scoresOffset + j * F;
                float e = (float) Math.exp(scores.get(F32, at) - max);
                scores.set(F32, at, e);
                sum += e;
            }
        }
        blockStats.set(F32, blockStatsOffset, max);
        blockStats.set(F32, blockStatsOffset + F, sum);
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
        for (int c = 0; c < headDim; c++) {
            float sum = 0f;
            for (int j = 0; j < n; j++) {
                sum += exps.get(F32, expsOffset + j * F)
                        * values.get(F32, valuesOffset + ((long) j * rowStride + c) * F);
            }
            partial.set(F32, partialOffset + c * F, sum);
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
        runningOut.asSlice(runningOutOffset, headDim * F).fill((byte) 0);
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
        float inverseSum = 1f / sum;
        for (int c = 0; c < headDim; c++) {
            out.set(F32, outOffset + c * F, runningOut.get(F32, runningOutOffset + c * F) * inverseSum);
        }
    }
}
