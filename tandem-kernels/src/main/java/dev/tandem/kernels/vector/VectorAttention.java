package dev.tandem.kernels.vector;

import static dev.tandem.kernels.scalar.LittleEndian.F16;
import static dev.tandem.kernels.scalar.LittleEndian.F32;
import static dev.tandem.kernels.vector.VectorLanes.F;
import static dev.tandem.kernels.vector.VectorLanes.L;
import static dev.tandem.kernels.vector.VectorLanes.LE;
import static dev.tandem.kernels.vector.VectorLanes.S;
import static dev.tandem.kernels.vector.VectorLanes.load;
import static dev.tandem.kernels.vector.VectorLanes.maxOf;

import dev.tandem.kernels.AttentionOps;
import dev.tandem.kernels.scalar.ArgumentChecks;
import dev.tandem.kernels.scalar.OnlineSoftmax;
import dev.tandem.kernels.scalar.ScalarOps;
import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;

/** The vector kernels of {@link AttentionOps}. */
public final class VectorAttention {

    private VectorAttention() {}

    static void qk(
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
        long rowBytes = (long) rowStride * F;
        int upper = S.loopBound(headDim);
        int j = 0;
        // Four keys at a time: each query vector is loaded once for four independent chains of
        // FMAs, where one key's chain waited an FMA latency per vector. Each key's sum is taken
        // in the order dotF32 takes it, so the scores are the same.
        for (; j + 4 <= validRows; j += 4) {
            long k0 = keysOffset + j * rowBytes;
            long k1 = k0 + rowBytes;
            long k2 = k1 + rowBytes;
            long k3 = k2 + rowBytes;
            FloatVector a0 = FloatVector.zero(S);
            FloatVector a1 = FloatVector.zero(S);
            FloatVector a2 = FloatVector.zero(S);
            FloatVector a3 = FloatVector.zero(S);
            int k = 0;
            for (; k < upper; k += L) {
                FloatVector qv = load(q, qOffset + k * F);
                a0 = qv.fma(load(keys, k0 + k * F), a0);
                a1 = qv.fma(load(keys, k1 + k * F), a1);
                a2 = qv.fma(load(keys, k2 + k * F), a2);
                a3 = qv.fma(load(keys, k3 + k * F), a3);
            }
            float s0 = VectorTails.dotFrom(k, q, qOffset, keys, k0, headDim, a0.reduceLanes(VectorOperators.ADD));
            float s1 = VectorTails.dotFrom(k, q, qOffset, keys, k1, headDim, a1.reduceLanes(VectorOperators.ADD));
            float s2 = VectorTails.dotFrom(k, q, qOffset, keys, k2, headDim, a2.reduceLanes(VectorOperators.ADD));
            float s3 = VectorTails.dotFrom(k, q, qOffset, keys, k3, headDim, a3.reduceLanes(VectorOperators.ADD));
            long at = scoresOffset + j * F;
            scores.set(F32, at, s0 * scale);
            scores.set(F32, at + F, s1 * scale);
            scores.set(F32, at + 2 * F, s2 * scale);
            scores.set(F32, at + 3 * F, s3 * scale);
        }
        // The last keys one at a time, as dotF32 sums, written out: called from here, dotF32 was
        // left in C1's code in a decode (JFR: its boxed vectors were a third of the bytes allocated).
        for (; j < validRows; j++) {
            long kj = keysOffset + j * rowBytes;
            FloatVector a0 = FloatVector.zero(S);
            int k = 0;
            for (; k < upper; k += L) {
                a0 = load(q, qOffset + k * F).fma(load(keys, kj + k * F), a0);
            }
            float s0 = VectorTails.dotFrom(k, q, qOffset, keys, kj, headDim, a0.reduceLanes(VectorOperators.ADD));
            scores.set(F32, scoresOffset + j * F, s0 * scale);
        }
    }

    static void widenF16(
            MemorySegment halves,
            long halvesOffset,
            int headDim,
            int rowStride,
            int rows,
            MemorySegment out,
            long outOffset) {
        ArgumentChecks.widenF16(halves, halvesOffset, headDim, rowStride, rows, out, outOffset);
        int upper = S.loopBound(headDim);
        for (int j = 0; j < rows; j++) {
            long from = halvesOffset + (long) j * rowStride * H;
            long to = outOffset + (long) j * headDim * F;
            int c = 0;
            for (; c < upper; c += L) {
                VectorDequantize.widenF16(VectorDequantize.loadHalves(halves, from + c * H))
                        .intoMemorySegment(out, to + c * F, LE);
            }
            for (; c < headDim; c++) {
                out.set(F32, to + c * F, Float.float16ToFloat(halves.get(F16, from + c * H)));
            }
        }
    }

    /** Bytes of one f16. */
    private static final long H = Short.BYTES;

    static void softmaxPrepare(
            MemorySegment scores, long scoresOffset, MemorySegment blockStats, long blockStatsOffset, int n) {
        ArgumentChecks.softmaxPrepare(scores, scoresOffset, blockStats, blockStatsOffset, n);
        float max = maxOf(scores, scoresOffset, n);
        float sum = 0f;
        if (max == Float.NEGATIVE_INFINITY) {
            scores.asSlice(scoresOffset, n * F).fill((byte) 0);
        } else {
            int upper = S.loopBound(n);
            FloatVector sums = FloatVector.zero(S);
            int j = 0;
            for (; j < upper; j += L) {
                long at = scoresOffset + j * F;
                FloatVector e = load(scores, at).sub(max).lanewise(VectorOperators.EXP);
                e.intoMemorySegment(scores, at, LE);
                sums = sums.add(e);
            }
            sum = VectorTails.expFrom(j, scores, scoresOffset, n, max, sums.reduceLanes(VectorOperators.ADD));
        }
        blockStats.set(F32, blockStatsOffset, max);
        blockStats.set(F32, blockStatsOffset + F, sum);
    }

    static void pv(
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
        long rowBytes = (long) rowStride * F;
        int upper = S.loopBound(headDim);
        int c = 0;
        // Four column vectors at a time, so four chains of FMAs overlap where one waited an FMA
        // latency per position; each column's sum keeps its order.
        for (; c + 4 * L <= upper; c += 4 * L) {
            FloatVector a0 = FloatVector.zero(S);
            FloatVector a1 = FloatVector.zero(S);
            FloatVector a2 = FloatVector.zero(S);
            FloatVector a3 = FloatVector.zero(S);
            for (int j = 0; j < n; j++) {
                FloatVector e = FloatVector.broadcast(S, exps.get(F32, expsOffset + j * F));
                long at = valuesOffset + j * rowBytes + c * F;
                a0 = load(values, at).fma(e, a0);
                a1 = load(values, at + L * F).fma(e, a1);
                a2 = load(values, at + 2 * L * F).fma(e, a2);
                a3 = load(values, at + 3 * L * F).fma(e, a3);
            }
            long to = partialOffset + c * F;
            a0.intoMemorySegment(partial, to, LE);
            a1.intoMemorySegment(partial, to + L * F, LE);
            a2.intoMemorySegment(partial, to + 2 * L * F, LE);
            a3.intoMemorySegment(partial, to + 3 * L * F, LE);
        }
        for (; c < upper; c += L) {
            FloatVector acc = FloatVector.zero(S);
            for (int j = 0; j < n; j++) {
                FloatVector e = FloatVector.broadcast(S, exps.get(F32, expsOffset + j * F));
                acc = load(values, valuesOffset + j * rowBytes + c * F).fma(e, acc);
            }
            acc.intoMemorySegment(partial, partialOffset + c * F, LE);
        }
        VectorTails.pvFrom(c, exps, expsOffset, values, valuesOffset, partial, partialOffset, headDim, rowStride, n);
    }

    static void onlineInit(
            MemorySegment runningStats,
            long runningStatsOffset,
            MemorySegment runningOut,
            long runningOutOffset,
            int headDim) {
        // Two stores and a fill: nothing to vectorise.
        ScalarOps.INSTANCE.onlineInit(runningStats, runningStatsOffset, runningOut, runningOutOffset, headDim);
    }

    static void onlineUpdate(
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
        float runningScale = OnlineSoftmax.runningScale(scales);
        float blockScale = OnlineSoftmax.blockScale(scales);
        int upper = S.loopBound(headDim);
        int c = 0;
        for (; c < upper; c += L) {
            long at = runningOutOffset + c * F;
            FloatVector rescaled = load(runningOut, at).mul(runningScale);
            rescaled.add(load(partial, partialOffset + c * F).mul(blockScale)).intoMemorySegment(runningOut, at, LE);
        }
        OnlineSoftmax.rescale(runningOut, runningOutOffset, partial, partialOffset, c, headDim, scales);
    }

    static void normalize(
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
        int upper = S.loopBound(headDim);
        int c = 0;
        for (; c < upper; c += L) {
            load(runningOut, runningOutOffset + c * F).mul(inverseSum).intoMemorySegment(out, outOffset + c * F, LE);
        }
        VectorTails.scaleFrom(c, runningOut, runningOutOffset, out, outOffset, headDim, inverseSum);
    }
}
