package dev.tandem.kernels.vector;

import static dev.tandem.kernels.scalar.LittleEndian.F32;
import static dev.tandem.kernels.vector.VectorLanes.F;
import static dev.tandem.kernels.vector.VectorLanes.LE;
import static dev.tandem.kernels.vector.VectorLanes.NATIVE_INT8;
import static dev.tandem.kernels.vector.VectorLanes.X16_FLOATS;
import static dev.tandem.kernels.vector.VectorLanes.X16_PARTS;
import static dev.tandem.kernels.vector.VectorLanes.X16_PART_BYTES;
import static dev.tandem.kernels.vector.VectorLanes.X16_SCALE_BYTES;
import static dev.tandem.kernels.vector.VectorLanes.X16_SHORTS;
import static dev.tandem.kernels.vector.VectorLanes.X16_VECTORS;
import static dev.tandem.kernels.vector.VectorLanes.X16_WIDE_INPUTS;
import static dev.tandem.kernels.vector.VectorLanes.quantizeInputs;
import static dev.tandem.kernels.vector.VectorLanes.x16Load;
import static dev.tandem.kernels.vector.VectorLanes.x16Pair;
import static dev.tandem.kernels.vector.VectorLanes.x16Scales;
import static dev.tandem.kernels.vector.VectorLanes.x16Sums;
import static dev.tandem.kernels.vector.VectorQ4_KX16.X16_K_CHUNK;

import dev.tandem.kernels.TensorType;
import dev.tandem.kernels.scalar.ArgumentChecks;
import dev.tandem.kernels.scalar.NativeInt8;
import dev.tandem.kernels.scalar.Q4_0X16;
import dev.tandem.kernels.scalar.Q6_KX16;
import dev.tandem.kernels.scalar.Scratch;
import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;

/** The vector matmul of {@link TensorType#Q6_K_X16}, whose layout and scalar rows are {@link Q6_KX16}. */
public final class VectorQ6_KX16 {

    private VectorQ6_KX16() {}

    /**
     * Groups of 16 rows by {@link NativeInt8} where it runs, else by vector loops
     * ({@link #x16Q6Dots8} eight inputs at a time, then {@link #x16Q6Dots} one at a time), the rest
     * one row at a time by {@link Q6_KX16#row}, as {@link VectorQ4_KX16#matmul} does.
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
        ArgumentChecks.matmulBlocks(TensorType.Q6_K_X16,
                weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd);
        int blocks = cols / 32;
        int supers = cols / 256;
        Scratch scratch = Scratch.get();
        Q4_0X16.Inputs in = quantizeInputs(scratch, x, xOffset, batch, cols, inputKey);
        long rowBytes = supers * 210L;
        long outStride = (long) rows * F;
        short[] sums = scratch.shorts(X16_K_CHUNK * 16 * X16_SHORTS.length());
        int[] byEight = batch >= X16_WIDE_INPUTS ? scratch.pairsByEight(batch / X16_WIDE_INPUTS * X16_WIDE_INPUTS * cols / 2)
                : null;
        short[][] sumsByEight = batch >= X16_WIDE_INPUTS
                ? scratch.shortsByEight(X16_K_CHUNK * 16 * X16_SHORTS.length()) : null;
        float[] factors = scratch.factors(X16_K_CHUNK * 16 * X16_FLOATS.length());
        int groupEnd = Math.min(rowEnd, rows - rows % TensorType.X16_ROWS);
        int r = rowStart;
        while (r < rowEnd) {
            if (NATIVE_INT8 && r % TensorType.X16_ROWS == 0 && r + TensorType.X16_ROWS <= groupEnd) {
                int groups = (groupEnd - r) / TensorType.X16_ROWS;
                NativeInt8.x16(TensorType.Q6_K_X16, weights, weightsOffset, r, groups, supers, in, batch, cols, out,
                        outOffset, rows);
                r += groups * TensorType.X16_ROWS;
            } else if (X16_VECTORS && r % TensorType.X16_ROWS == 0 && r + TensorType.X16_ROWS <= groupEnd) {
                long group = weightsOffset + r * rowBytes;
                for (int part = 0; part < X16_PARTS; part++) {
                    long from = group + part * X16_PART_BYTES;
                    long at = outOffset + r * F + part * X16_FLOATS.length() * F;
                    for (int b = 0; b < batch; b++) {
                        FloatVector.zero(X16_FLOATS).intoMemorySegment(out, at + b * outStride, LE);
                    }
                    for (int s = 0; s < supers; s += X16_K_CHUNK) {
                        int end = Math.min(supers, s + X16_K_CHUNK);
                        x16Q6Factors(weights, from, part, s, end, factors); // once for every input
                        // One call site each: x16Q6Scale, small enough to inline, inlined at two
                        // sites passed this method's node budget and boxed its vectors.
                        for (int b = 0; b < batch; ) {
                            boolean eight = b + X16_WIDE_INPUTS <= batch;
                            if (eight) {
                                x16Q6Dots8(weights, from, s, end, byEight, b * (cols / 2), sumsByEight);
                            } else {
                                x16Q6Dots(weights, from, s, end, in.pairs(), (b * cols) / 2, sums);
                            }
                            int n = eight ? X16_WIDE_INPUTS : 1;
                            for (int i = 0; i < n; i++, b++) {
                                x16Q6Scale(s, end, in.d(), b * blocks, eight ? sumsByEight[i] : sums, factors, out,
                                        at + b * outStride);
                            }
                        }
                    }
                }
                r += TensorType.X16_ROWS;
            } else {
                for (int b = 0; b < batch; b++) {
                    out.set(F32, outOffset + b * outStride + r * F,
                            Q6_KX16.row(weights, weightsOffset, rows, supers, r, in, b * cols, b * blocks));
                }
                r++;
            }
        }
    }

    /**
     * {@link #x16Q6Dots} for eight inputs, their pairs of quants side by side in {@code byEight}
     * from {@code m} ({@link Scratch#byEight}), each input's sums in its own array of
     * {@code sums}, laid out as {@link #x16Q6Dots} lays out one input's (so that one
     * {@link #x16Q6Scale} serves both): one set at a time, its 6-bit values made once per run and
     * met by eight chains of products, where one input at a time made every value again for every
     * input. The four sets of a run differ only in which bytes and shifts make their values, taken
     * as variables so that one loop serves all four.
     */
    private static void x16Q6Dots8(MemorySegment w, long part, int from, int end, int[] byEight, int m,
            short[][] sums) {
        int lanes = X16_SHORTS.length();
        short[] u0 = sums[0];
        short[] u1 = sums[1];
        short[] u2 = sums[2];
        short[] u3 = sums[3];
        short[] u4 = sums[4];
        short[] u5 = sums[5];
        short[] u6 = sums[6];
        short[] u7 = sums[7];
        ShortVector low = ShortVector.broadcast(X16_SHORTS, (short) 0x0f);
        ShortVector high = ShortVector.broadcast(X16_SHORTS, (short) 0x30);
        ShortVector offset = ShortVector.broadcast(X16_SHORTS, (short) 32);
        for (int set = from * 16; set < end * 16; set++) {
            int b = set >> 4;
            int n = (set >> 2) & 3; // as in x16Q6Dots: half n / 2, sub-block half n % 2
            int q = set & 3; // x16Q6Dots' s0 to s3
            long run = part + b * Q6_KX16.GROUP_BLOCK_BYTES + Q6_KX16.QUANTS + (long) Q6_KX16.RUN * 8 * n + 32L * (q & 1);
            int lowShift = (q >> 1) * 4;
            int topLeft = q == 0 ? 4 : q == 1 ? 2 : 0;
            int topRight = q == 3 ? 2 : 0;
            int o = m + (b * 128 + 64 * (n >> 1) + 8 * (n & 1) + 16 * q) * X16_WIDE_INPUTS;
            ShortVector s0 = ShortVector.zero(X16_SHORTS);
            ShortVector s1 = s0;
            ShortVector s2 = s0;
            ShortVector s3 = s0;
            ShortVector s4 = s0;
            ShortVector s5 = s0;
            ShortVector s6 = s0;
            ShortVector s7 = s0;
            for (int j = 0; j < 8; j++) {
                long at = run + (long) Q6_KX16.RUN * j;
                ShortVector top = x16Load(w, at + 64 - 32L * (q & 1));
                ShortVector v = x16Load(w, at).lanewise(VectorOperators.LSHR, lowShift).and(low)
                        .or(top.lanewise(VectorOperators.LSHL, topLeft).lanewise(VectorOperators.LSHR, topRight)
                                .and(high))
                        .sub(offset);
                int k = o + j * X16_WIDE_INPUTS;
                s0 = v.mul(x16Pair(byEight, k)).add(s0);
                s1 = v.mul(x16Pair(byEight, k + 1)).add(s1);
                s2 = v.mul(x16Pair(byEight, k + 2)).add(s2);
                s3 = v.mul(x16Pair(byEight, k + 3)).add(s3);
                s4 = v.mul(x16Pair(byEight, k + 4)).add(s4);
                s5 = v.mul(x16Pair(byEight, k + 5)).add(s5);
                s6 = v.mul(x16Pair(byEight, k + 6)).add(s6);
                s7 = v.mul(x16Pair(byEight, k + 7)).add(s7);
            }
            int at = (set - from * 16) * lanes;
            s0.intoArray(u0, at);
            s1.intoArray(u1, at);
            s2.intoArray(u2, at);
            s3.intoArray(u3, at);
            s4.intoArray(u4, at);
            s5.intoArray(u5, at);
            s6.intoArray(u6, at);
            s7.intoArray(u7, at);
        }
    }

    /**
     * One input's short sums over superblocks {@code [from, end)} of a part of a group of 16 q6_K
     * rows (its bytes from {@code part}, the group's start moved to the part), into {@code sums}
     * a vector per sub-block, in {@link Q6_KX16#subBlock}'s order: per half and sub-block half,
     * each pair of {@code ql} bytes and its pair of {@code qh} bytes give four pairs of 6-bit
     * quants (of the half's four quarters), each less 32 times its pair of input quants (from
     * {@code pairs[m]}) in short lanes, 8 products of at most {@code 32 * 127} a lane. The
     * scaling is {@link #x16Q6Scale}'s: both in one method passed C2's node budget and boxed
     * every vector.
     */
    private static void x16Q6Dots(MemorySegment w, long part, int from, int end, int[] pairs, int m, short[] sums) {
        int lanes = X16_SHORTS.length();
        // Constants as vectors once: an operation with a scalar broadcasts it again each time,
        // and those broadcasts spent C2's inlining budget (the last pair's, left out of line,
        // boxed a vector per product).
        ShortVector low = ShortVector.broadcast(X16_SHORTS, (short) 0x0f);
        ShortVector high = ShortVector.broadcast(X16_SHORTS, (short) 0x30);
        ShortVector offset = ShortVector.broadcast(X16_SHORTS, (short) 32);
        for (int b = from; b < end; b++) {
            long block = part + b * Q6_KX16.GROUP_BLOCK_BYTES;
            for (int n = 0; n < 4; n++) { // half n / 2, sub-block half n % 2
                int p = m + b * 128 + 64 * (n >> 1) + 8 * (n & 1);
                long run = block + Q6_KX16.QUANTS + (long) Q6_KX16.RUN * 8 * n;
                ShortVector s0 = ShortVector.zero(X16_SHORTS);
                ShortVector s1 = s0;
                ShortVector s2 = s0;
                ShortVector s3 = s0;
                for (int j = 0; j < 8; j++) {
                    long at = run + (long) Q6_KX16.RUN * j;
                    ShortVector a = x16Load(w, at);
                    ShortVector c = x16Load(w, at + 32);
                    ShortVector top = x16Load(w, at + 64);
                    s0 = a.and(low).or(top.lanewise(VectorOperators.LSHL, 4).and(high)).sub(offset)
                            .mul(x16Pair(pairs, p + j)).add(s0);
                    s1 = c.and(low).or(top.lanewise(VectorOperators.LSHL, 2).and(high)).sub(offset)
                            .mul(x16Pair(pairs, p + 16 + j)).add(s1);
                    s2 = a.lanewise(VectorOperators.LSHR, 4).or(top.and(high)).sub(offset)
                            .mul(x16Pair(pairs, p + 32 + j)).add(s2);
                    s3 = c.lanewise(VectorOperators.LSHR, 4).or(top.lanewise(VectorOperators.LSHR, 2).and(high))
                            .sub(offset).mul(x16Pair(pairs, p + 48 + j)).add(s3);
                }
                int at = ((b - from) * 16 + 4 * n) * lanes;
                s0.intoArray(sums, at);
                s1.intoArray(sums, at + lanes);
                s2.intoArray(sums, at + 2 * lanes);
                s3.intoArray(sums, at + 3 * lanes);
            }
        }
    }

    /**
     * The factors {@code d * sc} of superblocks {@code [from, end)} of a part of a group of 16
     * q6_K rows into {@code factors}, a vector per sub-block in its natural order: {@code d} the
     * rows' f16 factors, {@code sc} their int8 scales of the sub-block.
     */
    private static void x16Q6Factors(MemorySegment w, long part, int partIndex, int from, int end, float[] factors) {
        int lanes = X16_FLOATS.length();
        long scaleLanes = Q6_KX16.SCALES + partIndex * (lanes - X16_PART_BYTES);
        for (int b = from; b < end; b++) {
            long block = part + b * Q6_KX16.GROUP_BLOCK_BYTES;
            FloatVector d = x16Scales(w, block);
            for (int s = 0; s < 16; s++) {
                d.mul((FloatVector) ByteVector.fromMemorySegment(X16_SCALE_BYTES, w, block + scaleLanes + 16L * s, LE)
                        .convertShape(VectorOperators.B2F, X16_FLOATS, 0)).intoArray(factors,
                                ((b - from) * 16 + s) * lanes);
            }
        }
    }

    /**
     * {@link #x16Q6Dots}' sums of superblocks {@code [from, end)} added to one input's
     * accumulators at {@code at}, each sub-block's with the fused multiply-add
     * {@link Q6_KX16#row} does, in its order: times {@code (d * sc) * dx}, the factors from
     * {@link #x16Q6Factors}, {@code dx} the factor of the sub-block's input block (from
     * {@code ds[i]}).
     */
    private static void x16Q6Scale(int from, int end, float[] ds, int i, short[] sums, float[] factors,
            MemorySegment out, long at) {
        int lanes = X16_FLOATS.length();
        int shorts = X16_SHORTS.length();
        FloatVector acc = FloatVector.fromMemorySegment(X16_FLOATS, out, at, LE);
        for (int b = from; b < end; b++) {
            for (int n = 0; n < 16; n++) {
                int s = Q6_KX16.subBlock(n);
                FloatVector factor = FloatVector.fromArray(X16_FLOATS, factors, ((b - from) * 16 + s) * lanes);
                acc = x16Sums(ShortVector.fromArray(X16_SHORTS, sums, ((b - from) * 16 + n) * shorts), 0)
                        .fma(factor.mul(ds[i + b * 8 + s / 2]), acc);
            }
        }
        acc.intoMemorySegment(out, at, LE);
    }
}
