package dev.tandem.kernels.vector;

import static dev.tandem.kernels.scalar.LittleEndian.F32;
import static dev.tandem.kernels.vector.VectorLanes.F;
import static dev.tandem.kernels.vector.VectorLanes.LE;
import static dev.tandem.kernels.vector.VectorLanes.X16_FLOATS;
import static dev.tandem.kernels.vector.VectorLanes.X16_HALVES;
import static dev.tandem.kernels.vector.VectorLanes.X16_INTS;
import static dev.tandem.kernels.vector.VectorLanes.X16_PARTS;
import static dev.tandem.kernels.vector.VectorLanes.X16_VECTORS;

import dev.tandem.kernels.QuantOps;
import dev.tandem.kernels.TensorType;
import dev.tandem.kernels.scalar.ArgumentChecks;
import dev.tandem.kernels.scalar.FloatsX16;
import dev.tandem.kernels.scalar.LittleEndian;
import dev.tandem.kernels.scalar.Scratch;
import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;

/**
 * The vector matmuls of {@link TensorType#F32_X16}, {@link TensorType#F16_X16} and
 * {@link TensorType#BF16_X16}, whose layout and scalar rows are {@link FloatsX16}.
 */
public final class VectorFloatsX16 {

    private VectorFloatsX16() {}

    /**
     * One input against {@code groups} (4, 2 or 1) whole groups from {@code at}, {@code groupBytes}
     * apart, part {@code part} of each: four streams of weights and four chains, one broadcast of
     * the input; with fewer groups the spare chains repeat the first group's and are dropped. The
     * outputs of each group at {@code to}, 64 bytes apart. One group at a time (one stream, one
     * chain), batch 1 from memory (16384 x 2816, two threads) read 0.58-1.02x the GB/s of the
     * row-major f32 loop; four at a time 1.09-1.16x, two 1.37-1.63x one in 32-row ranges. The
     * rows' sums are the same either way.
     */
    private static void f32x16Groups(MemorySegment w, long at, long groupBytes, int groups, int cols, int part,
            float[] x, int x0, MemorySegment out, long to) {
        long p = at + (long) part * X16_FLOATS.length() * F;
        long g1 = groups > 1 ? groupBytes : 0;
        long g2 = groups > 2 ? 2 * groupBytes : 0;
        long g3 = groups > 2 ? 3 * groupBytes : 0;
        FloatVector a0 = FloatVector.zero(X16_FLOATS);
        FloatVector a1 = a0;
        FloatVector a2 = a0;
        FloatVector a3 = a0;
        for (int k = 0; k < cols; k++) {
            long wk = p + k * FloatsX16.F32_VALUE_BYTES;
            FloatVector xk = FloatVector.broadcast(X16_FLOATS, x[x0 + k]);
            a0 = FloatVector.fromMemorySegment(X16_FLOATS, w, wk, LE).fma(xk, a0);
            a1 = FloatVector.fromMemorySegment(X16_FLOATS, w, wk + g1, LE).fma(xk, a1);
            a2 = FloatVector.fromMemorySegment(X16_FLOATS, w, wk + g2, LE).fma(xk, a2);
            a3 = FloatVector.fromMemorySegment(X16_FLOATS, w, wk + g3, LE).fma(xk, a3);
        }
        long groupOut = (long) TensorType.X16_ROWS * F;
        a0.intoMemorySegment(out, to, LE);
        if (groups > 1) {
            a1.intoMemorySegment(out, to + groupOut, LE);
        }
        if (groups > 2) {
            a2.intoMemorySegment(out, to + 2 * groupOut, LE);
            a3.intoMemorySegment(out, to + 3 * groupOut, LE);
        }
    }

    /** One group at {@code at}, part {@code part}, with four inputs {@code cols} floats apart, their outputs {@code outStride} bytes apart. */
    private static void f32x16Group4(MemorySegment w, long at, int cols, int part, float[] x, int x0,
            MemorySegment out, long to, long outStride) {
        long p = at + (long) part * X16_FLOATS.length() * F;
        FloatVector a0 = FloatVector.zero(X16_FLOATS);
        FloatVector a1 = a0;
        FloatVector a2 = a0;
        FloatVector a3 = a0;
        for (int k = 0; k < cols; k++) {
            FloatVector v = FloatVector.fromMemorySegment(X16_FLOATS, w, p + k * FloatsX16.F32_VALUE_BYTES, LE);
            int xk = x0 + k;
            a0 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk]), a0);
            a1 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + cols]), a1);
            a2 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 2 * cols]), a2);
            a3 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 3 * cols]), a3);
        }
        a0.intoMemorySegment(out, to, LE);
        a1.intoMemorySegment(out, to + outStride, LE);
        a2.intoMemorySegment(out, to + 2 * outStride, LE);
        a3.intoMemorySegment(out, to + 3 * outStride, LE);
    }

    /**
     * {@link #f32x16Group4} for eight inputs: eight chains per loaded vector of weights, the
     * inputs side by side in {@code x} from {@code x0} ({@link Scratch#heapInputsByEight}), so
     * the eight broadcasts of a value are at one index and constant offsets.
     */
    private static void f32x16Group8(MemorySegment w, long at, int cols, int part, float[] x, int x0,
            MemorySegment out, long to, long outStride) {
        long p = at + (long) part * X16_FLOATS.length() * F;
        FloatVector a0 = FloatVector.zero(X16_FLOATS);
        FloatVector a1 = a0;
        FloatVector a2 = a0;
        FloatVector a3 = a0;
        FloatVector a4 = a0;
        FloatVector a5 = a0;
        FloatVector a6 = a0;
        FloatVector a7 = a0;
        for (int k = 0; k < cols; k++) {
            FloatVector v = FloatVector.fromMemorySegment(X16_FLOATS, w, p + k * FloatsX16.F32_VALUE_BYTES, LE);
            int xk = x0 + 8 * k;
            a0 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk]), a0);
            a1 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 1]), a1);
            a2 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 2]), a2);
            a3 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 3]), a3);
            a4 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 4]), a4);
            a5 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 5]), a5);
            a6 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 6]), a6);
            a7 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 7]), a7);
        }
        a0.intoMemorySegment(out, to, LE);
        a1.intoMemorySegment(out, to + outStride, LE);
        a2.intoMemorySegment(out, to + 2 * outStride, LE);
        a3.intoMemorySegment(out, to + 3 * outStride, LE);
        a4.intoMemorySegment(out, to + 4 * outStride, LE);
        a5.intoMemorySegment(out, to + 5 * outStride, LE);
        a6.intoMemorySegment(out, to + 6 * outStride, LE);
        a7.intoMemorySegment(out, to + 7 * outStride, LE);
    }

    /**
     * The float types interleaved by 16 rows ({@code type} {@link TensorType#F32_X16},
     * {@link TensorType#F16_X16} or {@link TensorType#BF16_X16}): groups of 16 rows by vector loops,
     * eight inputs at a time ({@link #f32x16Group8}, {@link #f16x16Group8}, {@link #bf16x16Group8}),
     * four at a time ({@code ...Group4}), the rest one at a time against four or two groups at once
     * where the range holds them ({@code ...Groups}); one row at a time where the range cuts a group
     * and for the last {@code rows % 16} rows ({@link FloatsX16#row}, the same operations lane by
     * lane). Per value, one load holds it in all 16 rows; each input's value, broadcast from a copy
     * of the inputs on the heap, meets it in one fused multiply-add. Each (row, input) is one chain
     * in the order of the values, at every batch. Halves are widened exactly where they are used
     * ({@link #bf16x16}, {@link #f16x16Groups}), except f16 eight inputs at a time, which widen 64
     * values of a group at a time into scratch ({@link #f16x16Group8}). f16 through that scratch at
     * batch 1 read 15-22 GB/s from memory on two threads, as the row-major f16 loop does; in the
     * loop, against the row-major loops (two threads, in-JVM, 64-row parts): f16 batch 1 from
     * memory 3.4-3.7x, batch 8 1.22x; bf16 batch 1 1.62-1.81x, batch 8 1.22x, batch 64 1.81x.
     * The loops of the three types are near-copies on purpose: one loop over a per-type widening
     * helper boxed its vectors wherever C2 compiled the helper on its own and left it out of line
     * (see {@link #f16x16Groups}).
     */
    static void matmul(
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
        ArgumentChecks.matmulBlocks(type,
                weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd);
        TensorType plain = type.source();
        long rowBytes = plain.rowBytes(cols);
        long groupBytes = TensorType.X16_ROWS * rowBytes;
        long outStride = (long) rows * F;
        long xStride = (long) cols * F;
        int lanes = X16_FLOATS.length();
        int groupEnd = Math.min(rowEnd, rows - rows % TensorType.X16_ROWS);
        int fours = batch - batch % 4;
        float[] xs = null;
        float[] x8 = null;
        float[] wide = null;
        int r = rowStart;
        while (r < rowEnd) {
            if (X16_VECTORS && r % TensorType.X16_ROWS == 0 && r + TensorType.X16_ROWS <= groupEnd) {
                if (xs == null) {
                    Scratch scratch = Scratch.get();
                    xs = scratch.heapInputs(inputKey, x, xOffset, batch, cols);
                    x8 = scratch.heapInputsByEight();
                    wide = type == TensorType.F16_X16 && batch >= 8 ? scratch.wide(F16_CHUNK * TensorType.X16_ROWS)
                            : null;
                }
                int whole = fours < batch ? (groupEnd - r) / TensorType.X16_ROWS : 1;
                int groups = whole >= 4 ? 4 : whole >= 2 ? 2 : 1;
                for (int g = 0; g < groups; g++) {
                    long group = weightsOffset + (r + g * TensorType.X16_ROWS) * rowBytes;
                    for (int part = 0; part < X16_PARTS; part++) {
                        long at = outOffset + (long) (r + g * TensorType.X16_ROWS + part * lanes) * F;
                        int b = 0;
                        for (; b + 8 <= batch; b += 8) {
                            long to = at + b * outStride;
                            switch (type) {
                                case F32_X16 -> f32x16Group8(weights, group, cols, part, x8, b * cols, out, to,
                                        outStride);
                                case F16_X16 -> f16x16Group8(weights, group, cols, wide, part, xs, b * cols, out, to,
                                        outStride);
                                default -> bf16x16Group8(weights, group, cols, part, x8, b * cols, out, to, outStride);
                            }
                        }
                        for (; b < fours; b += 4) {
                            long to = at + b * outStride;
                            switch (type) {
                                case F32_X16 -> f32x16Group4(weights, group, cols, part, xs, b * cols, out, to,
                                        outStride);
                                case F16_X16 -> f16x16Group4(weights, group, cols, part, xs, b * cols, out, to,
                                        outStride);
                                default -> bf16x16Group4(weights, group, cols, part, xs, b * cols, out, to, outStride);
                            }
                        }
                    }
                }
                long group = weightsOffset + r * rowBytes;
                for (int b = fours; b < batch; b++) {
                    for (int part = 0; part < X16_PARTS; part++) {
                        long to = outOffset + b * outStride + (long) (r + part * lanes) * F;
                        switch (type) {
                            case F32_X16 -> f32x16Groups(weights, group, groupBytes, groups, cols, part, xs, b * cols,
                                    out, to);
                            case F16_X16 -> f16x16Groups(weights, group, groupBytes, groups, cols, part, xs, b * cols,
                                    out, to);
                            default -> bf16x16Groups(weights, group, groupBytes, groups, cols, part, xs, b * cols,
                                    out, to);
                        }
                    }
                }
                r += groups * TensorType.X16_ROWS;
            } else {
                for (int b = 0; b < batch; b++) {
                    out.set(F32, outOffset + b * outStride + r * F,
                            FloatsX16.row(plain, weights, weightsOffset, rows, cols, r, x, xOffset + b * xStride));
                }
                r++;
            }
        }
    }

    /** Value {@code k} of one part's rows of a bf16_x16 group, at {@code at}, widened exactly: one 16-bit shift. */
    private static FloatVector bf16x16(MemorySegment w, long at) {
        return ((IntVector) ShortVector.fromMemorySegment(X16_HALVES, w, at, LE).castShape(X16_INTS, 0))
                .lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
    }

    /**
     * {@link #f32x16Groups} for bf16, widened in the loop.
     */
    private static void bf16x16Groups(MemorySegment w, long at, long groupBytes, int groups, int cols, int part,
            float[] x, int x0, MemorySegment out, long to) {
        long p = at + 2L * part * X16_FLOATS.length();
        long g1 = groups > 1 ? groupBytes : 0;
        long g2 = groups > 2 ? 2 * groupBytes : 0;
        long g3 = groups > 2 ? 3 * groupBytes : 0;
        FloatVector a0 = FloatVector.zero(X16_FLOATS);
        FloatVector a1 = a0;
        FloatVector a2 = a0;
        FloatVector a3 = a0;
        for (int k = 0; k < cols; k++) {
            FloatVector xk = FloatVector.broadcast(X16_FLOATS, x[x0 + k]);
            long wk = p + k * FloatsX16.HALF_VALUE_BYTES;
            a0 = bf16x16(w, wk).fma(xk, a0);
            a1 = bf16x16(w, wk + g1).fma(xk, a1);
            a2 = bf16x16(w, wk + g2).fma(xk, a2);
            a3 = bf16x16(w, wk + g3).fma(xk, a3);
        }
        long groupOut = (long) TensorType.X16_ROWS * F;
        a0.intoMemorySegment(out, to, LE);
        if (groups > 1) {
            a1.intoMemorySegment(out, to + groupOut, LE);
        }
        if (groups > 2) {
            a2.intoMemorySegment(out, to + 2 * groupOut, LE);
            a3.intoMemorySegment(out, to + 3 * groupOut, LE);
        }
    }

    /** One group at {@code at}, part {@code part}, with four inputs {@code cols} floats apart, their outputs {@code outStride} bytes apart. */
    private static void bf16x16Group4(MemorySegment w, long at, int cols, int part, float[] x, int x0,
            MemorySegment out, long to, long outStride) {
        long p = at + 2L * part * X16_FLOATS.length();
        FloatVector a0 = FloatVector.zero(X16_FLOATS);
        FloatVector a1 = a0;
        FloatVector a2 = a0;
        FloatVector a3 = a0;
        for (int k = 0; k < cols; k++) {
            FloatVector v = bf16x16(w, p + k * FloatsX16.HALF_VALUE_BYTES);
            int xk = x0 + k;
            a0 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk]), a0);
            a1 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + cols]), a1);
            a2 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 2 * cols]), a2);
            a3 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 3 * cols]), a3);
        }
        a0.intoMemorySegment(out, to, LE);
        a1.intoMemorySegment(out, to + outStride, LE);
        a2.intoMemorySegment(out, to + 2 * outStride, LE);
        a3.intoMemorySegment(out, to + 3 * outStride, LE);
    }

    /** {@link #bf16x16Group4} for eight inputs side by side (as {@link #f32x16Group8}): eight chains per widened vector. */
    private static void bf16x16Group8(MemorySegment w, long at, int cols, int part, float[] x, int x0,
            MemorySegment out, long to, long outStride) {
        long p = at + 2L * part * X16_FLOATS.length();
        FloatVector a0 = FloatVector.zero(X16_FLOATS);
        FloatVector a1 = a0;
        FloatVector a2 = a0;
        FloatVector a3 = a0;
        FloatVector a4 = a0;
        FloatVector a5 = a0;
        FloatVector a6 = a0;
        FloatVector a7 = a0;
        for (int k = 0; k < cols; k++) {
            FloatVector v = bf16x16(w, p + k * FloatsX16.HALF_VALUE_BYTES);
            int xk = x0 + 8 * k;
            a0 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk]), a0);
            a1 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 1]), a1);
            a2 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 2]), a2);
            a3 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 3]), a3);
            a4 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 4]), a4);
            a5 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 5]), a5);
            a6 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 6]), a6);
            a7 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 7]), a7);
        }
        a0.intoMemorySegment(out, to, LE);
        a1.intoMemorySegment(out, to + outStride, LE);
        a2.intoMemorySegment(out, to + 2 * outStride, LE);
        a3.intoMemorySegment(out, to + 3 * outStride, LE);
        a4.intoMemorySegment(out, to + 4 * outStride, LE);
        a5.intoMemorySegment(out, to + 5 * outStride, LE);
        a6.intoMemorySegment(out, to + 6 * outStride, LE);
        a7.intoMemorySegment(out, to + 7 * outStride, LE);
    }

    /**
     * {@link #bf16x16Groups} for f16, each finite half widened exactly in the loop, written out (as
     * a helper, C2 compiled it alone in the suite's JVM and then left it out of line, boxing the
     * vectors): its magnitude's bits moved to an f32's and scaled by 2^112 (exact for subnormals
     * too), then its sign, bit 31 of the lane as {@code castShape} sign-extends the half (a mask;
     * moving bit 15 up cost a shift more a value, and 24% of the loop's speed from memory). f16_x16
     * holds no infinities or NaN ({@link QuantOps#interleaveF16});
     * handling them here, by a branch to {@link VectorDequantize#widenF16}, a blend or a masked or, boxed.
     */
    private static void f16x16Groups(MemorySegment w, long at, long groupBytes, int groups, int cols, int part,
            float[] x, int x0, MemorySegment out, long to) {
        long p = at + 2L * part * X16_FLOATS.length();
        long g1 = groups > 1 ? groupBytes : 0;
        long g2 = groups > 2 ? 2 * groupBytes : 0;
        long g3 = groups > 2 ? 3 * groupBytes : 0;
        FloatVector a0 = FloatVector.zero(X16_FLOATS);
        FloatVector a1 = a0;
        FloatVector a2 = a0;
        FloatVector a3 = a0;
        for (int k = 0; k < cols; k++) {
            FloatVector xk = FloatVector.broadcast(X16_FLOATS, x[x0 + k]);
            long wk = p + k * FloatsX16.HALF_VALUE_BYTES;
            IntVector h0 = (IntVector) ShortVector.fromMemorySegment(X16_HALVES, w, wk, LE)
                    .castShape(X16_INTS, 0);
            a0 = h0.and(0x7fff).lanewise(VectorOperators.LSHL, 13).reinterpretAsFloats().mul(0x1p112f)
                    .reinterpretAsInts().or(h0.and(0x8000_0000))
                    .reinterpretAsFloats().fma(xk, a0);
            IntVector h1 = (IntVector) ShortVector.fromMemorySegment(X16_HALVES, w, wk + g1, LE)
                    .castShape(X16_INTS, 0);
            a1 = h1.and(0x7fff).lanewise(VectorOperators.LSHL, 13).reinterpretAsFloats().mul(0x1p112f)
                    .reinterpretAsInts().or(h1.and(0x8000_0000))
                    .reinterpretAsFloats().fma(xk, a1);
            IntVector h2 = (IntVector) ShortVector.fromMemorySegment(X16_HALVES, w, wk + g2, LE)
                    .castShape(X16_INTS, 0);
            a2 = h2.and(0x7fff).lanewise(VectorOperators.LSHL, 13).reinterpretAsFloats().mul(0x1p112f)
                    .reinterpretAsInts().or(h2.and(0x8000_0000))
                    .reinterpretAsFloats().fma(xk, a2);
            IntVector h3 = (IntVector) ShortVector.fromMemorySegment(X16_HALVES, w, wk + g3, LE)
                    .castShape(X16_INTS, 0);
            a3 = h3.and(0x7fff).lanewise(VectorOperators.LSHL, 13).reinterpretAsFloats().mul(0x1p112f)
                    .reinterpretAsInts().or(h3.and(0x8000_0000))
                    .reinterpretAsFloats().fma(xk, a3);
        }
        long groupOut = (long) TensorType.X16_ROWS * F;
        a0.intoMemorySegment(out, to, LE);
        if (groups > 1) {
            a1.intoMemorySegment(out, to + groupOut, LE);
        }
        if (groups > 2) {
            a2.intoMemorySegment(out, to + 2 * groupOut, LE);
            a3.intoMemorySegment(out, to + 3 * groupOut, LE);
        }
    }

    /** {@link #bf16x16Group4} for f16, widened as in {@link #f16x16Groups}. */
    private static void f16x16Group4(MemorySegment w, long at, int cols, int part, float[] x, int x0,
            MemorySegment out, long to, long outStride) {
        long p = at + 2L * part * X16_FLOATS.length();
        FloatVector a0 = FloatVector.zero(X16_FLOATS);
        FloatVector a1 = a0;
        FloatVector a2 = a0;
        FloatVector a3 = a0;
        for (int k = 0; k < cols; k++) {
            IntVector h = (IntVector) ShortVector.fromMemorySegment(X16_HALVES, w,
                    p + k * FloatsX16.HALF_VALUE_BYTES, LE)
                    .castShape(X16_INTS, 0);
            FloatVector v = h.and(0x7fff).lanewise(VectorOperators.LSHL, 13).reinterpretAsFloats().mul(0x1p112f)
                    .reinterpretAsInts().or(h.and(0x8000_0000))
                    .reinterpretAsFloats();
            int xk = x0 + k;
            a0 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk]), a0);
            a1 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + cols]), a1);
            a2 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 2 * cols]), a2);
            a3 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 3 * cols]), a3);
        }
        a0.intoMemorySegment(out, to, LE);
        a1.intoMemorySegment(out, to + outStride, LE);
        a2.intoMemorySegment(out, to + 2 * outStride, LE);
        a3.intoMemorySegment(out, to + 3 * outStride, LE);
    }

    /**
     * {@link #bf16x16Group8} for f16: {@link #F16_CHUNK} values of the group at a time widened into
     * this thread's scratch by {@link #f16sToFloats} (the {@code vcvtph2ps} loop), which costs less
     * per eight inputs than widening in the loop as {@link #f16x16Groups} does (small F16 prompt,
     * decoder A/B: 1741/2071 tokens/s in the loop, 1975/2803 through the scratch, the row-major
     * build 1749-2253).
     */
    private static void f16x16Group8(MemorySegment w, long at, int cols, float[] wide, int part, float[] x, int x0,
            MemorySegment out, long to, long outStride) {
        int lanes = X16_FLOATS.length();
        FloatVector a0 = FloatVector.zero(X16_FLOATS);
        FloatVector a1 = a0;
        FloatVector a2 = a0;
        FloatVector a3 = a0;
        FloatVector a4 = a0;
        FloatVector a5 = a0;
        FloatVector a6 = a0;
        FloatVector a7 = a0;
        for (int k0 = 0; k0 < cols; k0 += F16_CHUNK) {
            int n = Math.min(F16_CHUNK, cols - k0);
            f16sToFloats(w, at + k0 * FloatsX16.HALF_VALUE_BYTES, wide, n * TensorType.X16_ROWS);
            int xk0 = x0 + k0;
            for (int k = 0; k < n; k++) {
                FloatVector v = FloatVector.fromArray(X16_FLOATS, wide, k * TensorType.X16_ROWS + part * lanes);
                int xk = xk0 + k;
                a0 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk]), a0);
                a1 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + cols]), a1);
                a2 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 2 * cols]), a2);
                a3 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 3 * cols]), a3);
                a4 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 4 * cols]), a4);
                a5 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 5 * cols]), a5);
                a6 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 6 * cols]), a6);
                a7 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 7 * cols]), a7);
            }
        }
        a0.intoMemorySegment(out, to, LE);
        a1.intoMemorySegment(out, to + outStride, LE);
        a2.intoMemorySegment(out, to + 2 * outStride, LE);
        a3.intoMemorySegment(out, to + 3 * outStride, LE);
        a4.intoMemorySegment(out, to + 4 * outStride, LE);
        a5.intoMemorySegment(out, to + 5 * outStride, LE);
        a6.intoMemorySegment(out, to + 6 * outStride, LE);
        a7.intoMemorySegment(out, to + 7 * outStride, LE);
    }

    /** Values of a group {@link #f16x16Group8} widens at a time: 4 KB of floats. */
    private static final int F16_CHUNK = 64;

    /** {@code n} f16 from {@code from} widened into {@code wide}. */
    private static void f16sToFloats(MemorySegment w, long from, float[] wide, int n) {
        for (int i = 0; i < n; i++) {
            wide[i] = Float.float16ToFloat(w.get(LittleEndian.F16, from + 2L * i));
        }
    }
}
