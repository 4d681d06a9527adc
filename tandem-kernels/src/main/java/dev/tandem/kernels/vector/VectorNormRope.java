package dev.tandem.kernels.vector;

import static dev.tandem.kernels.scalar.LittleEndian.F32;
import static dev.tandem.kernels.vector.VectorDequantize.dequantizeQ8_0Block;
import static dev.tandem.kernels.vector.VectorLanes.F;
import static dev.tandem.kernels.vector.VectorLanes.L;
import static dev.tandem.kernels.vector.VectorLanes.LE;
import static dev.tandem.kernels.vector.VectorLanes.S;
import static dev.tandem.kernels.vector.VectorLanes.load;

import dev.tandem.kernels.ElementwiseOps;
import dev.tandem.kernels.EmbeddingOps;
import dev.tandem.kernels.NormOps;
import dev.tandem.kernels.Q8_0;
import dev.tandem.kernels.RopeOps;
import dev.tandem.kernels.scalar.ArgumentChecks;
import dev.tandem.kernels.scalar.ScalarOps;
import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShuffle;

/**
 * The vector kernels of {@link NormOps}, {@link RopeOps}, {@link ElementwiseOps} and
 * {@link EmbeddingOps}.
 */
public final class VectorNormRope {

    /** Swaps the lanes of each pair: {@code [x1, x0, x3, x2, ...]}. */
    private static final VectorShuffle<Float> SWAP_PAIRS = VectorShuffle.fromOp(S, lane -> lane ^ 1);

    private VectorNormRope() {}

    static void rmsnorm(
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
        int upper = S.loopBound(n);
        FloatVector acc = FloatVector.zero(S);
        int i = 0;
        for (; i < upper; i += L) {
            FloatVector v = load(x, xOffset + i * F);
            acc = v.fma(v, acc);
        }
        float sumOfSquares = VectorTails.sumOfSquaresFrom(i, x, xOffset, n, acc.reduceLanes(VectorOperators.ADD));
        float inverseRms = ScalarOps.rmsInverse(sumOfSquares, n, eps);
        i = 0;
        for (; i < upper; i += L) {
            FloatVector normalized = load(x, xOffset + i * F).mul(inverseRms);
            load(weight, weightOffset + i * F).mul(normalized).intoMemorySegment(out, outOffset + i * F, LE);
        }
        VectorTails.rmsScaleFrom(i, x, xOffset, weight, weightOffset, out, outOffset, n, inverseRms);
    }

    static void rope(MemorySegment x, long xOffset, int heads, int headDim, int position, float theta) {
        ArgumentChecks.rope(x, xOffset, heads, headDim, position, theta);
        // L is a power of two >= 2, so a vector holds whole pairs.
        int upper = S.loopBound(headDim);
        long headBytes = (long) headDim * F;
        for (int c = 0; c < upper; c += L) {
            FloatVector cos = FloatVector.zero(S);
            FloatVector sin = FloatVector.zero(S);
            for (int lane = 0; lane < L; lane += 2) {
                double angle = RopeOps.angle(position, (c + lane) / 2, headDim, theta);
                float cosine = (float) Math.cos(angle);
                float sine = (float) Math.sin(angle);
                cos = cos.withLane(lane, cosine).withLane(lane + 1, cosine);
                sin = sin.withLane(lane, -sine).withLane(lane + 1, sine);
            }
            for (int h = 0; h < heads; h++) {
                long at = xOffset + h * headBytes + c * F;
                FloatVector v = load(x, at);
                // lane 2i: x0 * cos + x1 * -sin; lane 2i+1: x1 * cos + x0 * sin.
                v.mul(cos).add(v.rearrange(SWAP_PAIRS).mul(sin)).intoMemorySegment(x, at, LE);
            }
        }
        for (int pair = upper / 2; pair < headDim / 2; pair++) {
            double angle = RopeOps.angle(position, pair, headDim, theta);
            float cosine = (float) Math.cos(angle);
            float sine = (float) Math.sin(angle);
            for (int h = 0; h < heads; h++) {
                ScalarOps.rotatePair(x, xOffset + h * headBytes + 2L * pair * F, cosine, sine);
            }
        }
    }

    static void siluMul(
            MemorySegment gate,
            long gateOffset,
            MemorySegment up,
            long upOffset,
            MemorySegment out,
            long outOffset,
            int n) {
        ArgumentChecks.siluMul(gate, gateOffset, up, upOffset, out, outOffset, n);
        int upper = S.loopBound(n);
        int i = 0;
        for (; i < upper; i += L) {
            FloatVector g = load(gate, gateOffset + i * F);
            FloatVector silu = g.div(g.neg().lanewise(VectorOperators.EXP).add(1f));
            silu.mul(load(up, upOffset + i * F)).intoMemorySegment(out, outOffset + i * F, LE);
        }
        VectorTails.siluMulFrom(i, gate, gateOffset, up, upOffset, out, outOffset, n);
    }

    static void residualAdd(MemorySegment acc, long accOffset, MemorySegment delta, long deltaOffset, int n) {
        ArgumentChecks.residualAdd(acc, accOffset, delta, deltaOffset, n);
        int upper = S.loopBound(n);
        int i = 0;
        for (; i < upper; i += L) {
            long at = accOffset + i * F;
            load(acc, at).add(load(delta, deltaOffset + i * F)).intoMemorySegment(acc, at, LE);
        }
        VectorTails.residualAddFrom(i, acc, accOffset, delta, deltaOffset, n);
    }

    /** A row copy: {@link MemorySegment#copy} is already the vector loop. */
    static void embedF32(
            MemorySegment table, long tableOffset, MemorySegment out, long outOffset, int rows, int dim, int token) {
        ArgumentChecks.embedF32(table, tableOffset, out, outOffset, rows, dim, token);
        MemorySegment.copy(table, tableOffset + (long) token * dim * F, out, outOffset, dim * F);
    }

    static void embedQ8_0(
            MemorySegment table, long tableOffset, MemorySegment out, long outOffset, int rows, int dim, int token) {
        ArgumentChecks.embedQ8_0(table, tableOffset, out, outOffset, rows, dim, token);
        long row = tableOffset + (long) token * Q8_0.rowBytes(dim);
        for (int block = 0; block < dim / Q8_0.BLOCK_SIZE; block++) {
            dequantizeQ8_0Block(
                    table, row + (long) block * Q8_0.BLOCK_BYTES, out, outOffset + (long) block * Q8_0.BLOCK_SIZE * F);
        }
    }
}
