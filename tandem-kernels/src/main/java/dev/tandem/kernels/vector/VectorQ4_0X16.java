package dev.tandem.kernels.vector;

import static dev.tandem.kernels.scalar.LittleEndian.F32;
import static dev.tandem.kernels.vector.VectorLanes.F;
import static dev.tandem.kernels.vector.VectorLanes.LE;
import static dev.tandem.kernels.vector.VectorLanes.NATIVE_INT8;
import static dev.tandem.kernels.vector.VectorLanes.nativeBatch;
import static dev.tandem.kernels.vector.VectorLanes.X16_FLOATS;
import static dev.tandem.kernels.vector.VectorLanes.X16_INPUTS;
import static dev.tandem.kernels.vector.VectorLanes.X16_PARTS;
import static dev.tandem.kernels.vector.VectorLanes.X16_PART_BYTES;
import static dev.tandem.kernels.vector.VectorLanes.X16_SHORTS;
import static dev.tandem.kernels.vector.VectorLanes.X16_VECTORS;
import static dev.tandem.kernels.vector.VectorLanes.X16_WIDE_INPUTS;
import static dev.tandem.kernels.vector.VectorLanes.quantizeInputs;
import static dev.tandem.kernels.vector.VectorLanes.x16High;
import static dev.tandem.kernels.vector.VectorLanes.x16Load;
import static dev.tandem.kernels.vector.VectorLanes.x16Low;
import static dev.tandem.kernels.vector.VectorLanes.x16Pair;
import static dev.tandem.kernels.vector.VectorLanes.x16Scales;
import static dev.tandem.kernels.vector.VectorLanes.x16Sums;

import dev.tandem.kernels.TensorType;
import dev.tandem.kernels.scalar.ArgumentChecks;
import dev.tandem.kernels.scalar.NativeInt8;
import dev.tandem.kernels.scalar.Q4_0X16;
import dev.tandem.kernels.scalar.Scratch;
import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.ShortVector;

/** The vector matmul of {@link TensorType#Q4_0_X16}, whose layout and scalar rows are {@link Q4_0X16}. */
public final class VectorQ4_0X16 {

    /** Blocks that {@link #x16Dots4} runs before {@link #x16Sums2} takes their sums: a few KB of scratch. */
    private static final int X16_CHUNK = 16;

    private VectorQ4_0X16() {}

    /**
     * Groups of 16 rows by vector loops, one row at a time where the range cuts a group, and the
     * last {@code rows % 16} rows one at a time (they are in the q4_0 layout): {@link Q4_0X16#row}
     * for both, the same operations as the vector loops lane by lane. Two inputs at a time share
     * the unpacking of each byte of the weights.
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
        ArgumentChecks.matmulBlocks(TensorType.Q4_0_X16,
                weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd);
        int blocks = cols / 32;
        Scratch scratch = Scratch.get();
        Q4_0X16.Inputs in = quantizeInputs(scratch, x, xOffset, batch, cols, inputKey);
        long rowBytes = blocks * 18L;
        long outStride = (long) rows * F;
        int groupEnd = Math.min(rowEnd, rows - rows % TensorType.X16_ROWS);
        short[] sums = batch >= X16_INPUTS ? scratch.shorts(X16_CHUNK * X16_WIDE_INPUTS * X16_SHORTS.length()) : null;
        float[] scales = batch >= X16_INPUTS ? scratch.factors(blocks * X16_FLOATS.length()) : null;
        int[] byEight = batch >= X16_WIDE_INPUTS ? scratch.pairsByEight(batch / X16_WIDE_INPUTS * X16_WIDE_INPUTS * cols / 2)
                : null;
        int r = rowStart;
        while (r < rowEnd) {
            if (NATIVE_INT8 && batch >= nativeBatch(TensorType.Q4_0_X16) && r % TensorType.X16_ROWS == 0
                    && r + TensorType.X16_ROWS <= groupEnd) {
                int groups = (groupEnd - r) / TensorType.X16_ROWS;
                NativeInt8.x16(TensorType.Q4_0_X16, weights, weightsOffset, r, groups, blocks, in, batch, cols, out,
                        outOffset, rows);
                r += groups * TensorType.X16_ROWS;
            } else if (X16_VECTORS && r % TensorType.X16_ROWS == 0 && r + TensorType.X16_ROWS <= groupEnd) {
                long group = weightsOffset + r * rowBytes;
                for (int part = 0; part < X16_PARTS; part++) {
                    long from = group + part * X16_PART_BYTES;
                    long at = outOffset + r * F + part * X16_FLOATS.length() * F;
                    int b = 0;
                    if (batch >= X16_INPUTS) {
                        x16AllScales(weights, from, blocks, scales);
                    }
                    while (b + X16_INPUTS <= batch) {
                        int inputs = b + X16_WIDE_INPUTS <= batch ? X16_WIDE_INPUTS : X16_INPUTS;
                        x16Groups(weights, from, blocks, in, byEight, b, inputs, cols, out, at + b * outStride,
                                outStride, sums, scales);
                        b += inputs;
                    }
                    for (; b < batch; b++) {
                        x16Group(weights, from, blocks, in, b * cols, b * blocks, out, at + b * outStride);
                    }
                }
                r += TensorType.X16_ROWS;
            } else {
                for (int b = 0; b < batch; b++) {
                    out.set(F32, outOffset + b * outStride + r * F,
                            Q4_0X16.row(weights, weightsOffset, rows, blocks, r, in, b * cols, b * blocks));
                }
                r++;
            }
        }
    }

    /**
     * Nibble bytes {@code 2j} and {@code 2j + 1} of one part's rows of a block (at {@code block},
     * already moved to the part), zero-extended: row {@code i}'s in lanes {@code 2i} and {@code 2i + 1}.
     */
    private static ShortVector x16Bytes(MemorySegment w, long block, int j) {
        return x16Load(w, block + 32 + 32L * j);
    }

    /** One part's f16 scales of a block (at {@code block}, already moved to the part), widened. */
    /**
     * Every block's scales of a part ({@link VectorLanes#x16Scales}) into {@code scales}, a vector per block:
     * widened once for all the part's inputs, where {@link #x16Sums2} widened them again for every
     * two inputs.
     */
    private static void x16AllScales(MemorySegment w, long part, int blocks, float[] scales) {
        int lanes = X16_FLOATS.length();
        for (int b = 0; b < blocks; b++) {
            x16Scales(w, part + b * Q4_0X16.GROUP_BLOCK_BYTES).intoArray(scales, b * lanes);
        }
    }

    /**
     * One part of a group of 16 rows (its weights from {@code part}, which is the group's start
     * moved to the part) with one input: per block, each pair of nibble bytes times the pair of
     * quants it meets, in short lanes (at most {@code 15 * 127} in magnitude, and each lane adds 16
     * of them), then {@code sum8} taken off once per block (each nibble means itself less 8) and
     * one fused multiply-add per row, as {@link #x16Dots4} does. Taking the 8 off each nibble
     * instead, two operations a pair, once measured faster here (8.4 against 6.5 GB/s on one
     * thread, before the launcher's compile commands); with them, two threads, both orders in one
     * JVM, taking {@code sum8} off is 1.05-1.08x the GB/s, from the caches and from memory.
     */
    private static void x16Group(MemorySegment w, long part, int blocks, Q4_0X16.Inputs in, int qBase, int blockBase,
            MemorySegment out, long at) {
        int[] pairs = in.pairs();
        float[] ds = in.d();
        int[] sum8 = in.sum8();
        FloatVector acc = FloatVector.zero(X16_FLOATS);
        for (int b = 0; b < blocks; b++) {
            long block = part + b * Q4_0X16.GROUP_BLOCK_BYTES;
            int m = (qBase + b * 32) / 2;
            ShortVector sums = ShortVector.zero(X16_SHORTS);
            for (int j = 0; j < 8; j++) {
                ShortVector packed = x16Bytes(w, block, j);
                sums = x16Low(packed).mul(x16Pair(pairs, m + j)).add(sums);
                sums = x16High(packed).mul(x16Pair(pairs, m + 8 + j)).add(sums);
            }
            acc = x16Sums(sums, sum8[blockBase + b]).fma(x16Scales(w, block).mul(ds[blockBase + b]), acc);
        }
        acc.intoMemorySegment(out, at, LE);
    }

    /**
     * {@link #x16Group} for the {@code inputs} inputs from {@code first} ({@link VectorLanes#X16_WIDE_INPUTS}
     * with their pairs of quants side by side in {@code byEight}, or {@link VectorLanes#X16_INPUTS}), their
     * outputs {@code outStride} bytes apart, in chunks of {@link #X16_CHUNK} blocks: the dots
     * ({@link #x16Dots8} or {@link #x16Dots4}) leave a chunk's short sums in {@code scratch},
     * {@link #x16Sums2} adds them to the outputs. Two loops, because one that did both was past
     * C2's budget of nodes for inlining, and a vector helper it did not inline boxed the vectors.
     */
    private static void x16Groups(MemorySegment w, long part, int blocks, Q4_0X16.Inputs in, int[] byEight, int first,
            int inputs, int cols, MemorySegment out, long at, long outStride, short[] scratch, float[] scales) {
        FloatVector zero = FloatVector.zero(X16_FLOATS);
        for (int i = 0; i < inputs; i++) {
            zero.intoMemorySegment(out, at + i * outStride, LE);
        }
        for (int b = 0; b < blocks; b += X16_CHUNK) {
            int end = Math.min(blocks, b + X16_CHUNK);
            if (inputs == X16_WIDE_INPUTS) {
                x16Dots8(w, part, b, end, byEight, first * (cols / 2) + b * 16 * X16_WIDE_INPUTS, scratch);
            } else {
                x16Dots4(w, part, b, end, in.pairs(), first * cols / 2 + b * 16, cols / 2, scratch);
            }
            for (int input = 0; input < inputs; input += 2) {
                x16Sums2(scales, b, end, in, (first + input) * blocks, blocks, scratch, input, inputs, out,
                        at + input * outStride, outStride);
            }
        }
    }

    /**
     * The short sums of blocks {@code [from, end)} for eight inputs into {@code scratch}, block by
     * block, input by input; their pairs of quants side by side in {@code byEight} from {@code m}
     * ({@link Scratch#byEight}). Per nibble vector of the weights, eight chains of products,
     * each pair of quants at one base and a constant offset: 1.6x the multiply-adds a second of
     * {@link #x16Dots4} run twice (130 against 81 GMAC/s, one thread, weights in the caches),
     * which kept four chains and eight indexes apart, and broadcast half its pairs through a
     * general register; the whole kernel at batch 8, 83 against 59.
     */
    private static void x16Dots8(MemorySegment w, long part, int from, int end, int[] byEight, int m,
            short[] scratch) {
        int lanes = X16_SHORTS.length();
        for (int b = from; b < end; b++) {
            long block = part + b * Q4_0X16.GROUP_BLOCK_BYTES;
            int o = m + (b - from) * 16 * X16_WIDE_INPUTS;
            ShortVector s0 = ShortVector.zero(X16_SHORTS);
            ShortVector s1 = s0;
            ShortVector s2 = s0;
            ShortVector s3 = s0;
            ShortVector s4 = s0;
            ShortVector s5 = s0;
            ShortVector s6 = s0;
            ShortVector s7 = s0;
            for (int k = 0; k < 16; k++) {
                ShortVector packed = x16Bytes(w, block, k & 7);
                ShortVector v = k < 8 ? x16Low(packed) : x16High(packed);
                int q = o + k * X16_WIDE_INPUTS;
                s0 = v.mul(x16Pair(byEight, q)).add(s0);
                s1 = v.mul(x16Pair(byEight, q + 1)).add(s1);
                s2 = v.mul(x16Pair(byEight, q + 2)).add(s2);
                s3 = v.mul(x16Pair(byEight, q + 3)).add(s3);
                s4 = v.mul(x16Pair(byEight, q + 4)).add(s4);
                s5 = v.mul(x16Pair(byEight, q + 5)).add(s5);
                s6 = v.mul(x16Pair(byEight, q + 6)).add(s6);
                s7 = v.mul(x16Pair(byEight, q + 7)).add(s7);
            }
            int s = (b - from) * X16_WIDE_INPUTS * lanes;
            s0.intoArray(scratch, s);
            s1.intoArray(scratch, s + lanes);
            s2.intoArray(scratch, s + 2 * lanes);
            s3.intoArray(scratch, s + 3 * lanes);
            s4.intoArray(scratch, s + 4 * lanes);
            s5.intoArray(scratch, s + 5 * lanes);
            s6.intoArray(scratch, s + 6 * lanes);
            s7.intoArray(scratch, s + 7 * lanes);
        }
    }

    /**
     * The short sums of blocks {@code [from, end)} for four inputs, their pairs of quants from
     * {@code m} and {@code stride} ints apart, into {@code scratch}: block by block, input by input.
     * The nibbles as they are: a product is at most {@code 15 * 127}, and 16 of them fit a short.
     */
    private static void x16Dots4(MemorySegment w, long part, int from, int end, int[] pairs, int m, int stride,
            short[] scratch) {
        int lanes = X16_SHORTS.length();
        int m1 = m + stride;
        int m2 = m1 + stride;
        int m3 = m2 + stride;
        for (int b = from; b < end; b++) {
            long block = part + b * Q4_0X16.GROUP_BLOCK_BYTES;
            int o = (b - from) * 16;
            ShortVector s0 = ShortVector.zero(X16_SHORTS);
            ShortVector s1 = s0;
            ShortVector s2 = s0;
            ShortVector s3 = s0;
            for (int j = 0; j < 8; j++) {
                ShortVector packed = x16Bytes(w, block, j);
                ShortVector low = x16Low(packed);
                s0 = low.mul(x16Pair(pairs, m + o + j)).add(s0);
                s1 = low.mul(x16Pair(pairs, m1 + o + j)).add(s1);
                s2 = low.mul(x16Pair(pairs, m2 + o + j)).add(s2);
                s3 = low.mul(x16Pair(pairs, m3 + o + j)).add(s3);
                ShortVector high = x16High(packed);
                s0 = high.mul(x16Pair(pairs, m + o + 8 + j)).add(s0);
                s1 = high.mul(x16Pair(pairs, m1 + o + 8 + j)).add(s1);
                s2 = high.mul(x16Pair(pairs, m2 + o + 8 + j)).add(s2);
                s3 = high.mul(x16Pair(pairs, m3 + o + 8 + j)).add(s3);
            }
            int s = (b - from) * X16_INPUTS * lanes;
            s0.intoArray(scratch, s);
            s1.intoArray(scratch, s + lanes);
            s2.intoArray(scratch, s + 2 * lanes);
            s3.intoArray(scratch, s + 3 * lanes);
        }
    }

    /**
     * Blocks {@code [from, end)}'s sums from {@link #x16Dots4} for two of its inputs (the
     * {@code input}-th and the next), scaled, added to their outputs at {@code at} and
     * {@code outStride} further; their factors from {@code i} and {@code stride} apart. Two inputs
     * a call: four made a loop past C2's node budget.
     */
    private static void x16Sums2(float[] scales, int from, int end, Q4_0X16.Inputs in, int i, int stride,
            short[] scratch, int input, int inputs, MemorySegment out, long at, long outStride) {
        int lanes = X16_SHORTS.length();
        float[] ds = in.d();
        int[] sum8 = in.sum8();
        long at1 = at + outStride;
        FloatVector a0 = FloatVector.fromMemorySegment(X16_FLOATS, out, at, LE);
        FloatVector a1 = FloatVector.fromMemorySegment(X16_FLOATS, out, at1, LE);
        for (int b = from; b < end; b++) {
            FloatVector dw = FloatVector.fromArray(X16_FLOATS, scales, b * X16_FLOATS.length());
            int s = ((b - from) * inputs + input) * lanes;
            int i0 = i + b;
            a0 = x16Sums(ShortVector.fromArray(X16_SHORTS, scratch, s), sum8[i0]).fma(dw.mul(ds[i0]), a0);
            int i1 = i0 + stride;
            a1 = x16Sums(ShortVector.fromArray(X16_SHORTS, scratch, s + lanes), sum8[i1]).fma(dw.mul(ds[i1]), a1);
        }
        a0.intoMemorySegment(out, at, LE);
        a1.intoMemorySegment(out, at1, LE);
    }
}
