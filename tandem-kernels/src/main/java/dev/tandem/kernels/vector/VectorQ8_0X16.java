package dev.tandem.kernels.vector;

import static dev.tandem.kernels.scalar.LittleEndian.F32;
import static dev.tandem.kernels.vector.VectorDequantize.widenF16;
import static dev.tandem.kernels.vector.VectorLanes.F;
import static dev.tandem.kernels.vector.VectorLanes.LE;
import static dev.tandem.kernels.vector.VectorLanes.NATIVE_INT8;
import static dev.tandem.kernels.vector.VectorLanes.X16_FLOATS;
import static dev.tandem.kernels.vector.VectorLanes.X16_HALVES;
import static dev.tandem.kernels.vector.VectorLanes.X16_INTS;
import static dev.tandem.kernels.vector.VectorLanes.X16_PARTS;
import static dev.tandem.kernels.vector.VectorLanes.X16_VECTORS;
import static dev.tandem.kernels.vector.VectorLanes.quantizeInputs;

import dev.tandem.kernels.TensorType;
import dev.tandem.kernels.scalar.ArgumentChecks;
import dev.tandem.kernels.scalar.NativeInt8;
import dev.tandem.kernels.scalar.Q4_0X16;
import dev.tandem.kernels.scalar.Q8_0X16;
import dev.tandem.kernels.scalar.Scratch;
import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/** The vector matmul of {@link TensorType#Q8_0_X16}, whose layout and scalar rows are {@link Q8_0X16}. */
public final class VectorQ8_0X16 {

    /**
     * Quant {@code k} of one part's rows, a byte per row: as many as {@link VectorLanes#X16_FLOATS} has lanes
     * (at least 64 bits, the narrowest byte vector, where {@link VectorLanes#X16_VECTORS} is false anyway).
     */
    private static final VectorSpecies<Byte> Q8X_BYTES =
            VectorSpecies.of(byte.class, VectorShape.forBitSize(Math.max(64, X16_FLOATS.length() * Byte.SIZE)));

    /** Inputs {@link #q8x16Group4} runs at once, sharing each widened vector of quants. */
    private static final int Q8X_INPUTS = 4;

    /**
     * Inputs {@link #q8x16Group8} runs at once: eight chains of FMAs per widened vector, where
     * four chains were bound by the FMA latency (1.6x the GB/s at batch 8, one thread).
     */
    private static final int Q8X_WIDE_INPUTS = 8;

    private VectorQ8_0X16() {}

    /**
     * The inputs quantized as for q4_0_x16, then groups of 16 rows by {@link NativeInt8} where it
     * runs, else by vector loops ({@link #q8x16Group}, four or eight inputs at a time by
     * {@link #q8x16Group4} and {@link #q8x16Group8}); one row at a time where the range cuts a
     * group and for the last {@code rows % 16} rows ({@link Q8_0X16#row}, the same operations lane
     * by lane). In the vector loops, per block and value, one 16-byte load holds the value's quant
     * in all 16 rows: widened to floats, it meets the input's quant broadcast as a float in one
     * fused multiply-add, with no sum across lanes anywhere; a block's sum of products is an
     * integer below 2^24, so the float chain is the exact integer sum.
     */
    static void matmul(
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
        ArgumentChecks.matmulBlocks(TensorType.Q8_0_X16,
                weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd);
        int blocks = cols / 32;
        Scratch scratch = Scratch.get();
        Q4_0X16.Inputs in = quantizeInputs(scratch, x, xOffset, batch, cols, inputKey);
        long rowBytes = blocks * 34L;
        long outStride = (long) rows * F;
        int lanes = X16_FLOATS.length();
        int groupEnd = Math.min(rowEnd, rows - rows % TensorType.X16_ROWS);
        float[] qs = null;
        float[] q8 = null;
        int r = rowStart;
        while (r < rowEnd) {
            if (NATIVE_INT8 && r % TensorType.X16_ROWS == 0 && r + TensorType.X16_ROWS <= groupEnd) {
                int groups = (groupEnd - r) / TensorType.X16_ROWS;
                NativeInt8.x16(TensorType.Q8_0_X16, weights, weightsOffset, r, groups, blocks, in, batch, cols, out,
                        outOffset, rows);
                r += groups * TensorType.X16_ROWS;
            } else if (X16_VECTORS && r % TensorType.X16_ROWS == 0 && r + TensorType.X16_ROWS <= groupEnd) {
                if (qs == null) {
                    // The quants as floats: each block's sum of products is an integer below 2^24,
                    // exact in an f32 chain of multiply-adds, and the loops broadcast floats.
                    qs = scratch.quantFloats(in, batch, cols);
                    q8 = scratch.quantFloatsByEight();
                }
                float[] ds = in.d();
                long group = weightsOffset + r * rowBytes;
                for (int part = 0; part < X16_PARTS; part++) {
                    long at = outOffset + (long) (r + part * lanes) * F;
                    int b = 0;
                    for (; b + Q8X_WIDE_INPUTS <= batch; b += Q8X_WIDE_INPUTS) {
                        q8x16Group8(weights, group, part, blocks, q8, b * cols, ds, b * blocks, out,
                                at + b * outStride, outStride);
                    }
                    for (; b + Q8X_INPUTS <= batch; b += Q8X_INPUTS) {
                        q8x16Group4(weights, group, part, blocks, qs, b * cols, cols, ds, b * blocks, out,
                                at + b * outStride, outStride);
                    }
                    for (; b < batch; b++) {
                        q8x16Group(weights, group, part, blocks, qs, b * cols, ds, b * blocks, out, at + b * outStride);
                    }
                }
                r += TensorType.X16_ROWS;
            } else {
                for (int b = 0; b < batch; b++) {
                    out.set(F32, outOffset + b * outStride + r * F,
                            Q8_0X16.row(weights, weightsOffset, rows, blocks, r, in, b * cols, b * blocks));
                }
                r++;
            }
        }
    }

    /** Quant {@code k} of one part's rows (at {@code at}), widened to floats. */
    private static FloatVector q8x16Quants(MemorySegment w, long at) {
        return (FloatVector) ByteVector.fromMemorySegment(Q8X_BYTES, w, at, LE)
                .convertShape(VectorOperators.B2F, X16_FLOATS, 0);
    }

    /**
     * One part of a group of 16 rows with one input at {@code x0}: per block, 32 multiply-adds,
     * then one with the scales. A pair of blocks at a time ({@link Q8_0X16#scaleAt}'s layout), each
     * its own chain of multiply-adds, side by side in one pass over the pair's bytes. One block's
     * chain of 32 dependent multiply-adds bounded the loop by their latency: a matrix in the
     * caches, one thread, read 21.4 GB/s that way, where q4_0_x16, with twice the values per
     * byte, read 25, and two chains 29.2. Two blocks' chains in q8_0's order of the blocks read
     * two streams 544 bytes apart and ran slower from memory (0.74-0.80x). A last odd block runs
     * alone, its second chain reading its own quants again and then dropped (one loop body, not
     * two: a second loop for the odd block passed C2's node budget and boxed every vector).
     */
    private static void q8x16Group(MemorySegment w, long group, int part, int blocks, float[] x, int x0,
            float[] ds, int d0, MemorySegment out, long at) {
        int lanes = X16_FLOATS.length();
        FloatVector acc = FloatVector.zero(X16_FLOATS);
        for (int b = 0; b < blocks; b += 2) {
            boolean pair = b + 1 < blocks;
            // Q8_0X16.scaleAt and quantAt for b even, written out (through them: 0.93-0.95x).
            long block = group + b * Q8_0X16.GROUP_BLOCK_BYTES;
            long quants = block + (pair ? 64 : 32) + (long) part * lanes;
            long stride = pair ? 32 : 16;
            long second = pair ? 16 : 0;
            int xb = x0 + b * 32;
            int xNext = pair ? xb + 32 : xb;
            FloatVector sum = FloatVector.zero(X16_FLOATS);
            FloatVector sumNext = sum;
            for (int k = 0; k < 32; k++) {
                long q = quants + stride * k;
                sum = q8x16Quants(w, q).fma(FloatVector.broadcast(X16_FLOATS, x[xb + k]), sum);
                sumNext = q8x16Quants(w, q + second).fma(FloatVector.broadcast(X16_FLOATS, x[xNext + k]), sumNext);
            }
            // The scales widened as x16Scales does, written out: as a helper of their own, C2
            // compiled them alone in the decoder's order of compilation (and in the test suite's,
            // without bin/compile-commands) and then left them out of line, boxing the vectors
            // (JFR: convert0 and ternaryOp fallbacks).
            IntVector h = (IntVector) ShortVector.fromMemorySegment(X16_HALVES, w, block + 2L * part * lanes, LE)
                    .castShape(X16_INTS, 0);
            IntVector magnitude = h.and(0x7fff);
            FloatVector d = magnitude.compare(VectorOperators.GE, 0x7c00).anyTrue() ? widenF16(h)
                    : magnitude.lanewise(VectorOperators.LSHL, 13).reinterpretAsFloats().mul(0x1p112f)
                            .reinterpretAsInts().or(h.and(0x8000).lanewise(VectorOperators.LSHL, 16))
                            .reinterpretAsFloats();
            acc = sum.fma(d.mul(ds[d0 + b]), acc);
            if (pair) {
                IntVector hNext = (IntVector) ShortVector.fromMemorySegment(X16_HALVES, w,
                        block + 32 + 2L * part * lanes, LE).castShape(X16_INTS, 0);
                IntVector magnitudeNext = hNext.and(0x7fff);
                FloatVector dNext = magnitudeNext.compare(VectorOperators.GE, 0x7c00).anyTrue() ? widenF16(hNext)
                        : magnitudeNext.lanewise(VectorOperators.LSHL, 13).reinterpretAsFloats().mul(0x1p112f)
                                .reinterpretAsInts().or(hNext.and(0x8000).lanewise(VectorOperators.LSHL, 16))
                                .reinterpretAsFloats();
                acc = sumNext.fma(dNext.mul(ds[d0 + b + 1]), acc);
            }
        }
        acc.intoMemorySegment(out, at, LE);
    }

    /**
     * {@link #q8x16Group} for eight inputs side by side in {@code x} from {@code x0}
     * ({@link Scratch#heapInputsByEight}), their outputs {@code outStride} bytes apart: each
     * input's sums in {@link #q8x16Group}'s order, so the same bits as one input at a time. With
     * the inputs side by side rather than {@code cols} floats apart, the eight broadcasts of a
     * value sit at one index and constant offsets: 60.2 → 67.5 GMAC/s (512 x 512, in cache) and
     * 30.4 → 34.8 (65536 x 1024, from memory), one thread, the two builds alternating in one JVM;
     * f32 and bf16 gained more from memory (1.75x and 1.9x in the same runs), while
     * f16's loop, which widens its weights into scratch first, lost 7-10% in cache and reads the
     * inputs {@code cols} apart as before.
     */
    private static void q8x16Group8(MemorySegment w, long group, int part, int blocks, float[] x, int x0,
            float[] ds, int d0, MemorySegment out, long at, long outStride) {
        int lanes = X16_FLOATS.length();
        FloatVector a0 = FloatVector.zero(X16_FLOATS);
        FloatVector a1 = a0;
        FloatVector a2 = a0;
        FloatVector a3 = a0;
        FloatVector a4 = a0;
        FloatVector a5 = a0;
        FloatVector a6 = a0;
        FloatVector a7 = a0;
        int paired = Q8_0X16.paired(blocks);
        for (int b = 0; b < blocks; b++) {
            // Q8_0X16.scaleAt and quantAt, written out: called here per block they cost 3-7%
            // (batch 8 and batch 1, both orders in one JVM).
            int odd = b % 2;
            boolean inPair = b < paired;
            long block = group + (b - odd) * Q8_0X16.GROUP_BLOCK_BYTES + (inPair ? 32L * odd : 0);
            long quants = group + (b - odd) * Q8_0X16.GROUP_BLOCK_BYTES + (inPair ? 64 + 16L * odd : 32)
                    + (long) part * lanes;
            long stride = inPair ? 32 : 16;
            int xb = x0 + b * 32 * 8;
            FloatVector s0 = FloatVector.zero(X16_FLOATS);
            FloatVector s1 = s0;
            FloatVector s2 = s0;
            FloatVector s3 = s0;
            FloatVector s4 = s0;
            FloatVector s5 = s0;
            FloatVector s6 = s0;
            FloatVector s7 = s0;
            for (int k = 0; k < 32; k++) {
                FloatVector q = q8x16Quants(w, quants + stride * k);
                int xk = xb + 8 * k;
                s0 = q.fma(FloatVector.broadcast(X16_FLOATS, x[xk]), s0);
                s1 = q.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 1]), s1);
                s2 = q.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 2]), s2);
                s3 = q.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 3]), s3);
                s4 = q.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 4]), s4);
                s5 = q.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 5]), s5);
                s6 = q.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 6]), s6);
                s7 = q.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 7]), s7);
            }
            // The scales widened as in q8x16Group, written out for the same reason.
            IntVector h = (IntVector) ShortVector.fromMemorySegment(X16_HALVES, w, block + 2L * part * lanes, LE)
                    .castShape(X16_INTS, 0);
            IntVector magnitude = h.and(0x7fff);
            FloatVector d = magnitude.compare(VectorOperators.GE, 0x7c00).anyTrue() ? widenF16(h)
                    : magnitude.lanewise(VectorOperators.LSHL, 13).reinterpretAsFloats().mul(0x1p112f)
                            .reinterpretAsInts().or(h.and(0x8000).lanewise(VectorOperators.LSHL, 16))
                            .reinterpretAsFloats();
            int db = d0 + b;
            a0 = s0.fma(d.mul(ds[db]), a0);
            a1 = s1.fma(d.mul(ds[db + blocks]), a1);
            a2 = s2.fma(d.mul(ds[db + 2 * blocks]), a2);
            a3 = s3.fma(d.mul(ds[db + 3 * blocks]), a3);
            a4 = s4.fma(d.mul(ds[db + 4 * blocks]), a4);
            a5 = s5.fma(d.mul(ds[db + 5 * blocks]), a5);
            a6 = s6.fma(d.mul(ds[db + 6 * blocks]), a6);
            a7 = s7.fma(d.mul(ds[db + 7 * blocks]), a7);
        }
        a0.intoMemorySegment(out, at, LE);
        a1.intoMemorySegment(out, at + outStride, LE);
        a2.intoMemorySegment(out, at + 2 * outStride, LE);
        a3.intoMemorySegment(out, at + 3 * outStride, LE);
        a4.intoMemorySegment(out, at + 4 * outStride, LE);
        a5.intoMemorySegment(out, at + 5 * outStride, LE);
        a6.intoMemorySegment(out, at + 6 * outStride, LE);
        a7.intoMemorySegment(out, at + 7 * outStride, LE);
    }

    /** {@link #q8x16Group} for four inputs {@code xStride} floats apart, their outputs {@code outStride} bytes apart. */
    private static void q8x16Group4(MemorySegment w, long group, int part, int blocks, float[] x, int x0,
            int xStride, float[] ds, int d0, MemorySegment out, long at, long outStride) {
        int lanes = X16_FLOATS.length();
        FloatVector a0 = FloatVector.zero(X16_FLOATS);
        FloatVector a1 = a0;
        FloatVector a2 = a0;
        FloatVector a3 = a0;
        int paired = Q8_0X16.paired(blocks);
        for (int b = 0; b < blocks; b++) {
            // Q8_0X16.scaleAt and quantAt, written out: called here per block they cost 3-7%
            // (batch 8 and batch 1, both orders in one JVM).
            int odd = b % 2;
            boolean inPair = b < paired;
            long block = group + (b - odd) * Q8_0X16.GROUP_BLOCK_BYTES + (inPair ? 32L * odd : 0);
            long quants = group + (b - odd) * Q8_0X16.GROUP_BLOCK_BYTES + (inPair ? 64 + 16L * odd : 32)
                    + (long) part * lanes;
            long stride = inPair ? 32 : 16;
            int xb = x0 + b * 32;
            FloatVector s0 = FloatVector.zero(X16_FLOATS);
            FloatVector s1 = s0;
            FloatVector s2 = s0;
            FloatVector s3 = s0;
            for (int k = 0; k < 32; k++) {
                FloatVector q = q8x16Quants(w, quants + stride * k);
                int xk = xb + k;
                s0 = q.fma(FloatVector.broadcast(X16_FLOATS, x[xk]), s0);
                s1 = q.fma(FloatVector.broadcast(X16_FLOATS, x[xk + xStride]), s1);
                s2 = q.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 2 * xStride]), s2);
                s3 = q.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 3 * xStride]), s3);
            }
            // The scales widened as x16Scales does, written out: as a helper of their own, C2
            // compiled them alone in the decoder's order of compilation and then left them out of
            // line, boxing the vectors (JFR: convert0 and ternaryOp fallbacks).
            IntVector h = (IntVector) ShortVector.fromMemorySegment(X16_HALVES, w, block + 2L * part * lanes, LE)
                    .castShape(X16_INTS, 0);
            IntVector magnitude = h.and(0x7fff);
            FloatVector d = magnitude.compare(VectorOperators.GE, 0x7c00).anyTrue() ? widenF16(h)
                    : magnitude.lanewise(VectorOperators.LSHL, 13).reinterpretAsFloats().mul(0x1p112f)
                            .reinterpretAsInts().or(h.and(0x8000).lanewise(VectorOperators.LSHL, 16))
                            .reinterpretAsFloats();
            int db = d0 + b;
            a0 = s0.fma(d.mul(ds[db]), a0);
            a1 = s1.fma(d.mul(ds[db + blocks]), a1);
            a2 = s2.fma(d.mul(ds[db + 2 * blocks]), a2);
            a3 = s3.fma(d.mul(ds[db + 3 * blocks]), a3);
        }
        a0.intoMemorySegment(out, at, LE);
        a1.intoMemorySegment(out, at + outStride, LE);
        a2.intoMemorySegment(out, at + 2 * outStride, LE);
        a3.intoMemorySegment(out, at + 3 * outStride, LE);
    }
}
