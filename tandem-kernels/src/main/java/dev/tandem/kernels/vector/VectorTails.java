package dev.tandem.kernels.vector;

import static dev.tandem.kernels.scalar.LittleEndian.F32;

import java.lang.foreign.MemorySegment;

/**
 * The vector kernels' scalar tails: the loops over {@code [from, n)} that finish what a kernel's
 * vector loop left, each the same arithmetic in the same order as the scalar kernel's loop of the
 * same name in {@code ScalarOps}, so the vector and scalar kernels give the same bits.
 *
 * <p>They are copies on purpose. When the vector kernels called {@code ScalarOps}' loops instead
 * (loops the scalar kernels run too), {@code CompiledKernelAllocationTest} found compiled
 * kernels allocating (qk 1,536 bytes a call, bf16_x16 262 KB) in two of three runs of the
 * kernels' suite, and in none of three with these copies, as in none before the vector kernels
 * had classes of their own, when each wrote its tail out. Each copy is a few lines, and the
 * kernels' vector-against-scalar tests keep the two equal.
 */
final class VectorTails {
    private static final long F = Float.BYTES;

    private VectorTails() {}

    /** {@code sum} plus the products of elements {@code [from, n)} of {@code a} and {@code b}, in order. */
    static float dotFrom(int from, MemorySegment a, long aOffset, MemorySegment b, long bOffset, int n,
            float sum) {
        for (int c = from; c < n; c++) {
            sum += a.get(F32, aOffset + c * F) * b.get(F32, bOffset + c * F);
        }
        return sum;
    }

    /**
     * Replaces elements {@code [from, n)} of {@code scores} by {@code exp(score - max)}, and returns
     * {@code sum} plus them, in order.
     */
    static float expFrom(int from, MemorySegment scores, long scoresOffset, int n, float max, float sum) {
        for (int j = from; j < n; j++) {
            long at = scoresOffset + j * F;
            float e = (float) Math.exp(scores.get(F32, at) - max);
            scores.set(F32, at, e);
            sum += e;
        }
        return sum;
    }

    /** {@link #pv} of columns {@code [from, headDim)}: each column's sum over the {@code n} rows in order. */
    static void pvFrom(int from, MemorySegment exps, long expsOffset, MemorySegment values, long valuesOffset,
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

    /** {@code out[c] = in[c] * factor} for {@code c} in {@code [from, n)}. */
    static void scaleFrom(int from, MemorySegment in, long inOffset, MemorySegment out, long outOffset, int n,
            float factor) {
        for (int c = from; c < n; c++) {
            out.set(F32, outOffset + c * F, in.get(F32, inOffset + c * F) * factor);
        }
    }

    /** {@code sum} plus the squares of elements {@code [from, n)} of {@code x}, in order. */
    static float sumOfSquaresFrom(int from, MemorySegment x, long xOffset, int n, float sum) {
        for (int i = from; i < n; i++) {
            float v = x.get(F32, xOffset + i * F);
            sum += v * v;
        }
        return sum;
    }

    /** {@code out[i] = weight[i] * (x[i] * inverseRms)} for {@code i} in {@code [from, n)}. */
    static void rmsScaleFrom(int from, MemorySegment x, long xOffset, MemorySegment weight, long weightOffset,
            MemorySegment out, long outOffset, int n, float inverseRms) {
        for (int i = from; i < n; i++) {
            float normalized = x.get(F32, xOffset + i * F) * inverseRms;
            out.set(F32, outOffset + i * F, weight.get(F32, weightOffset + i * F) * normalized);
        }
    }

    /** {@link #siluMul} of elements {@code [from, n)}. */
    static void siluMulFrom(int from, MemorySegment gate, long gateOffset, MemorySegment up, long upOffset,
            MemorySegment out, long outOffset, int n) {
        for (int i = from; i < n; i++) {
            float g = gate.get(F32, gateOffset + i * F);
            float silu = g / (1f + (float) Math.exp(-g));
            out.set(F32, outOffset + i * F, silu * up.get(F32, upOffset + i * F));
        }
    }

    /** {@link #residualAdd} of elements {@code [from, n)}. */
    static void residualAddFrom(int from, MemorySegment acc, long accOffset, MemorySegment delta,
            long deltaOffset, int n) {
        for (int i = from; i < n; i++) {
            long at = accOffset + i * F;
            acc.set(F32, at, acc.get(F32, at) + delta.get(F32, deltaOffset + i * F));
        }
    }

    /**
     * {@code probs[i] = exp((logits[i] - max) * inverseTemperature)} for {@code i} in
     * {@code [from, n)}; returns {@code sum} plus them, in order.
     */
    static float softmaxFrom(int from, MemorySegment logits, long logitsOffset, MemorySegment probs,
            long probsOffset, int n, float max, float inverseTemperature, float sum) {
        for (int i = from; i < n; i++) {
            float e = (float) Math.exp((logits.get(F32, logitsOffset + i * F) - max) * inverseTemperature);
            probs.set(F32, probsOffset + i * F, e);
            sum += e;
        }
        return sum;
    }

    /** {@code mass} plus the elements of {@code [from, n)} that are at least {@code threshold}, in order. */
    static float massAtLeastFrom(int from, MemorySegment probs, long offset, int n, float threshold,
            float mass) {
        for (int i = from; i < n; i++) {
            float p = probs.get(F32, offset + i * F);
            if (p >= threshold) {
                mass += p;
            }
        }
        return mass;
    }
}
