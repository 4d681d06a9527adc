package dev.tandem.kernels.vector;

import static dev.tandem.kernels.scalar.LittleEndian.F32;
import static dev.tandem.kernels.vector.VectorLanes.F;
import static dev.tandem.kernels.vector.VectorLanes.LE;
import static dev.tandem.kernels.vector.VectorLanes.NATIVE_INT8;
import static dev.tandem.kernels.vector.VectorLanes.nativeBatch;
import static dev.tandem.kernels.vector.VectorLanes.X16_FLOATS;
import static dev.tandem.kernels.vector.VectorLanes.X16_HALVES;
import static dev.tandem.kernels.vector.VectorLanes.X16_INTS;
import static dev.tandem.kernels.vector.VectorLanes.X16_PARTS;
import static dev.tandem.kernels.vector.VectorLanes.X16_SHORTS;
import static dev.tandem.kernels.vector.VectorLanes.X16_VECTORS;
import static dev.tandem.kernels.vector.VectorLanes.quantizeInputs;
import static dev.tandem.kernels.vector.VectorLanes.x16High;
import static dev.tandem.kernels.vector.VectorLanes.x16Load;
import static dev.tandem.kernels.vector.VectorLanes.x16Low;
import static dev.tandem.kernels.vector.VectorLanes.x16Pair;
import static dev.tandem.kernels.vector.VectorLanes.x16Scales;
import static dev.tandem.kernels.vector.VectorLanes.x16Sums;
import static dev.tandem.kernels.vector.VectorQ4_KX16.X16_K_CHUNK;
import static dev.tandem.kernels.vector.VectorQ4_KX16.X16_K_HEADER;
import static dev.tandem.kernels.vector.VectorQ4_KX16.x16KFactors;

import dev.tandem.kernels.TensorType;
import dev.tandem.kernels.scalar.ArgumentChecks;
import dev.tandem.kernels.scalar.Iq4X16;
import dev.tandem.kernels.scalar.LowBitsKX16;
import dev.tandem.kernels.scalar.NativeInt8;
import dev.tandem.kernels.scalar.Q4_0X16;
import dev.tandem.kernels.scalar.Q5_KX16;
import dev.tandem.kernels.scalar.Scratch;
import dev.tandem.kernels.scalar.SmallBlocksX16;
import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * The vector matmuls of the other interleaved block layouts (q5_0, q4_1, q5_1, iq4_nl, iq4_xs,
 * q5_K, q2_K, q3_K by 16 rows), whose layouts and scalar rows are {@link SmallBlocksX16},
 * {@link Iq4X16}, {@link Q5_KX16} and {@link LowBitsKX16}.
 */
public final class VectorSmallBlocksX16 {

    /**
     * Rows' bytes of one part, one per float lane: a q5_K scale byte of each row. Below 8 float
     * lanes no x16 loop runs ({@link VectorLanes#X16_VECTORS}), and 64 bits is the narrowest shape there is.
     */
    private static final VectorSpecies<Byte> X16_ROW_BYTES =
            VectorSpecies.of(byte.class, VectorShape.forBitSize(Math.max(64, X16_FLOATS.length() * Byte.SIZE)));

    private VectorSmallBlocksX16() {}

    /**
     * {@link TensorType#Q5_0_X16}, {@link TensorType#Q4_1_X16}, {@link TensorType#Q5_1_X16},
     * {@link TensorType#Q5_K_X16}, the iq4 and the q2_K/q3_K types: groups of 16 rows by
     * {@link NativeInt8} where it runs (from {@link VectorLanes#nativeBatch} inputs), else by
     * {@link #x16SmallBlocksGroup}, {@link #x16Q5KGroup}, {@link #x16Iq4Group} or
     * {@link #x16LowBitsKGroup}, one input at a time (each part's weights stay in the caches from
     * input to input), one row at a time where the range cuts a group, and the last
     * {@code rows % 16} rows one at a time (they are in the file's layout): the type's scalar twin
     * ({@link SmallBlocksX16#row}, {@link Q5_KX16#row}, ...) for both, the same operations as the
     * vector loops lane by lane.
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
        matmul(type, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd, inputKey,
                NATIVE_INT8);
    }

    /**
     * {@link #matmul} by the Java loops, even where {@link NativeInt8} would take it: for the tests,
     * which hold both to the scalar twin.
     */
    public static void matmulJavaLoops(
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
            int rowEnd) {
        matmul(type, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd, 0, false);
    }

    private static void matmul(
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
            long inputKey,
            boolean allowNative) {
        ArgumentChecks.matmulBlocks(type,
                weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd);
        boolean k = type == TensorType.Q5_K_X16;
        boolean iq4 = type == TensorType.IQ4_NL_X16 || type == TensorType.IQ4_XS_X16;
        boolean xs = type == TensorType.IQ4_XS_X16;
        boolean lowBits = type == TensorType.Q2_K_X16 || type == TensorType.Q3_K_X16;
        boolean three = type == TensorType.Q3_K_X16;
        int blocks = cols / type.blockSize();
        Scratch scratch = Scratch.get();
        Q4_0X16.Inputs in = quantizeInputs(scratch, x, xOffset, batch, cols, inputKey);
        // At most two per 16 values, or (q5_K) x16KFactors' chunk of superblocks and their d and dmin.
        float[] factors = scratch.factors(Math.max(cols / 16, X16_K_CHUNK * (8 + 1)) * 2 * X16_FLOATS.length());
        byte[] headers = k ? scratch.bytes(X16_K_CHUNK * X16_K_HEADER) : null;
        long rowBytes = type.rowBytes(cols);
        long outStride = (long) rows * F;
        int groupEnd = Math.min(rowEnd, rows - rows % TensorType.X16_ROWS);
        boolean nativeKernel = allowNative && batch >= nativeBatch(type);
        int r = rowStart;
        while (r < rowEnd) {
            if (nativeKernel && r % TensorType.X16_ROWS == 0 && r + TensorType.X16_ROWS <= groupEnd) {
                int groups = (groupEnd - r) / TensorType.X16_ROWS;
                NativeInt8.x16(type, weights, weightsOffset, r, groups, blocks, in, batch, cols, out, outOffset, rows);
                r += groups * TensorType.X16_ROWS;
            } else if (X16_VECTORS && r % TensorType.X16_ROWS == 0 && r + TensorType.X16_ROWS <= groupEnd) {
                long group = weightsOffset + r * rowBytes;
                for (int part = 0; part < X16_PARTS; part++) {
                    long at = outOffset + r * F + part * X16_FLOATS.length() * F;
                    if (k) {
                        FloatVector zero = FloatVector.zero(X16_FLOATS);
                        for (int b = 0; b < batch; b++) {
                            zero.intoMemorySegment(out, at + b * outStride, LE);
                        }
                        for (int from = 0; from < blocks; from += X16_K_CHUNK) {
                            int end = Math.min(blocks, from + X16_K_CHUNK);
                            x16KFactors(true, weights, group, part, from, end, headers, factors);
                            for (int b = 0; b < batch; b++) {
                                x16Q5KGroup(weights, group, part, from, end, in, b * cols, b * (cols / 32), factors,
                                        out, at + b * outStride);
                            }
                        }
                        continue;
                    }
                    if (lowBits) {
                        if (three) {
                            x16Q3KFactors(weights, group, part, blocks, factors);
                        } else {
                            x16Q2KFactors(weights, group, part, blocks, factors);
                        }
                    } else if (iq4) {
                        x16Iq4Factors(xs, weights, group, part, blocks, factors);
                    } else {
                        x16SmallBlocksFactors(type.source(), weights, group, part, blocks, factors);
                    }
                    for (int b = 0; b < batch; b++) {
                        if (lowBits) {
                            x16LowBitsKGroup(three, weights, group, part, blocks, in, b * cols, b * (cols / 32),
                                    factors, out, at + b * outStride);
                        } else if (iq4) {
                            x16Iq4Group(xs, weights, group, part, blocks, in, b * cols, b * (cols / 32), factors,
                                    out, at + b * outStride);
                        } else {
                            x16SmallBlocksGroup(type.source(), weights, group, part, blocks, in, b * cols, b * blocks,
                                    factors, out, at + b * outStride);
                        }
                    }
                }
                r += TensorType.X16_ROWS;
            } else {
                for (int b = 0; b < batch; b++) {
                    float value = lowBits
                            ? LowBitsKX16.row(three, weights, weightsOffset, rows, blocks, r, in, b * cols,
                                    b * (cols / 32))
                            : iq4 ? Iq4X16.row(xs, weights, weightsOffset, rows, blocks, r, in, b * cols,
                                    b * (cols / 32))
                            : k ? Q5_KX16.row(weights, weightsOffset, rows, blocks, r, in, b * cols, b * (cols / 32))
                            : SmallBlocksX16.row(type.source(), weights, weightsOffset, rows, blocks, r, in, b * cols,
                                    b * blocks);
                    out.set(F32, outOffset + b * outStride + r * F, value);
                }
                r++;
            }
        }
    }

    /**
     * One part of a group of 16 rows of q5_K with one input: per sub-block of 32, each pair of
     * nibbles joined with its fifth bits (the pair of {@code qh} bytes of the 16 rows, side by side
     * as the nibble pairs are) and less 16, times the pair of quants it meets, in short lanes (16
     * products of at most {@code 16 * 127} a lane: exact); each row's two lanes added as ints with
     * the 16 taken back ({@code 2 * sum8} is {@code 16 Σ q}), then two fused multiply-adds per row
     * as {@link Q5_KX16#row} does them, with the 6-bit scale and min unpacked in int lanes.
     */
    private static void x16Q5KGroup(MemorySegment w, long group, int part, int from, int end, Q4_0X16.Inputs in,
            int qBase, int blockBase, float[] factors, MemorySegment out, long at) {
        int[] pairs = in.pairs();
        float[] ds = in.d();
        int[] sum8 = in.sum8();
        int lanes = X16_FLOATS.length();
        long pairsAt = part * 2L * lanes;
        FloatVector acc = FloatVector.fromMemorySegment(X16_FLOATS, out, at, LE);
        for (int b = from; b < end; b++) {
            long block = group + b * Q5_KX16.GROUP_BLOCK_BYTES;
            long highBits = block + Q5_KX16.HIGH_BITS + pairsAt;
            for (int t = 0; t < 8; t++) {
                int m = (qBase + b * 256 + t * 32) / 2;
                long nibbles = block + Q5_KX16.NIBBLES + pairsAt + 32L * 16 * (t / 2);
                ShortVector sums = ShortVector.zero(X16_SHORTS);
                for (int p = 0; p < 16; p++) {
                    ShortVector packed = x16Load(w, nibbles + 32L * p);
                    ShortVector nibble = t % 2 == 0 ? x16Low(packed) : x16High(packed);
                    ShortVector fifth = x16Load(w, highBits + 32L * p).lanewise(VectorOperators.LSHR, t)
                            .and((short) 1).lanewise(VectorOperators.LSHL, 4);
                    sums = nibble.or(fifth).sub((short) 16).mul(x16Pair(pairs, m + p)).add(sums);
                }
                int i = blockBase + b * 8 + t;
                float dx = ds[i];
                int f = ((b - from) * 8 + t) * 2 * lanes;
                FloatVector scale = FloatVector.fromArray(X16_FLOATS, factors, f);
                FloatVector min = FloatVector.fromArray(X16_FLOATS, factors, f + lanes);
                acc = x16Sums(sums, -2 * sum8[i]).fma(scale.mul(dx), acc);
                acc = FloatVector.broadcast(X16_FLOATS, (float) (sum8[i] / 8)).fma(min.mul(dx).neg(), acc);
            }
        }
        acc.intoMemorySegment(out, at, LE);
    }

    /** llama.cpp's iq4 table in every short lane {@code l}: {@code VALUES[l % 16]}, for {@code selectFrom}. */
    private static final ShortVector IQ4_VALUES =
            ShortVector.fromArray(X16_SHORTS, iq4Lanes(X16_SHORTS.length()), 0);

    private static short[] iq4Lanes(int lanes) {
        short[] values = new short[lanes];
        for (int l = 0; l < lanes; l++) {
            values[l] = Iq4X16.VALUES[l % 16];
        }
        return values;
    }

    /**
     * One part of a group of 16 rows of iq4_nl ({@code xs} false, {@code blocks} blocks) or iq4_xs
     * ({@code blocks} superblocks of eight sub-blocks) with one input: per block of 32, each pair
     * of nibble bytes looked up in the table ({@code selectFrom} on the zero-extended nibbles), times
     * the pair of quants it meets; a low and a high product (at most {@code 2 * 127 * 127}) fit a
     * short, so each pair's two are added there and widened to the row's int lane at once. Then one
     * fused multiply-add per row with {@code dw * dx}, as {@link Iq4X16#row} does.
     */
    private static void x16Iq4Group(boolean xs, MemorySegment w, long group, int part, int blocks,
            Q4_0X16.Inputs in, int qBase, int blockBase, float[] factors, MemorySegment out, long at) {
        int[] pairs = in.pairs();
        float[] ds = in.d();
        int lanes = X16_FLOATS.length();
        long pairsAt = part * 2L * lanes;
        long blockBytes = xs ? Iq4X16.XS_GROUP_BLOCK_BYTES : Q4_0X16.GROUP_BLOCK_BYTES;
        int subBlocks = xs ? 8 : 1;
        FloatVector acc = FloatVector.zero(X16_FLOATS);
        for (int b = 0; b < blocks; b++) {
            long block = group + b * blockBytes;
            long nibbles = block + (xs ? Iq4X16.XS_NIBBLES : 32) + pairsAt;
            for (int ib = 0; ib < subBlocks; ib++) {
                int m = (qBase + (b * subBlocks + ib) * 32) / 2;
                IntVector sums = IntVector.zero(X16_INTS);
                for (int j = 0; j < 8; j++) {
                    ShortVector packed = x16Load(w, nibbles + 32L * (8 * ib + j));
                    ShortVector two = x16Low(packed).selectFrom(IQ4_VALUES).mul(x16Pair(pairs, m + j))
                            .add(x16High(packed).selectFrom(IQ4_VALUES).mul(x16Pair(pairs, m + 8 + j)));
                    IntVector both = two.reinterpretAsInts();
                    sums = sums.add(both.lanewise(VectorOperators.LSHL, 16).lanewise(VectorOperators.ASHR, 16))
                            .add(both.lanewise(VectorOperators.ASHR, 16));
                }
                FloatVector dw = FloatVector.fromArray(X16_FLOATS, factors, (b * subBlocks + ib) * lanes);
                FloatVector sumsF = (FloatVector) sums.convert(VectorOperators.I2F, 0);
                acc = sumsF.fma(dw.mul(ds[blockBase + b * subBlocks + ib]), acc);
            }
        }
        acc.intoMemorySegment(out, at, LE);
    }

    /**
     * The row factors of one part of a group of iq4_nl or iq4_xs ({@link #x16Iq4Group}'s): per
     * block of 32, {@code d} (iq4_xs: times the sub-block's 6-bit scale less 32), a vector each,
     * in {@code factors}; once for all the inputs (see {@link #x16Q5KGroup}).
     */
    private static void x16Iq4Factors(boolean xs, MemorySegment w, long group, int part, int blocks,
            float[] factors) {
        int lanes = X16_FLOATS.length();
        long pairsAt = part * 2L * lanes;
        long blockBytes = xs ? Iq4X16.XS_GROUP_BLOCK_BYTES : Q4_0X16.GROUP_BLOCK_BYTES;
        for (int b = 0; b < blocks; b++) {
            long block = group + b * blockBytes;
            FloatVector d = x16Scales(w, block + pairsAt);
            if (!xs) {
                d.intoArray(factors, b * lanes);
                continue;
            }
            IntVector scalesH = x16Scales16(w, block + 32 + pairsAt);
            IntVector scalesL = IntVector.fromMemorySegment(X16_INTS, w, block + 64 + part * 4L * lanes, LE);
            for (int ib = 0; ib < 8; ib++) {
                IntVector ls = scalesL.lanewise(VectorOperators.LSHR, 4 * ib).and(0x0f)
                        .or(scalesH.lanewise(VectorOperators.LSHR, 2 * ib).and(3).lanewise(VectorOperators.LSHL, 4))
                        .sub(32);
                d.mul((FloatVector) ls.convert(VectorOperators.I2F, 0)).intoArray(factors, (b * 8 + ib) * lanes);
            }
        }
    }

    /**
     * One part of a group of 16 rows of q2_K ({@code three} false) or q3_K with one input: per
     * sub-block of 16, in {@link LowBitsKX16}'s order, each pair of quant bytes shifted to the
     * sub-block's two bits (and for q3_K joined with its mask bit, less 4), times the pair of input
     * quants it meets, in short lanes (8 products of at most {@code 4 * 127} a lane); each row's two
     * lanes added as ints and one fused multiply-add per row with the sub-block's factor (for q2_K a
     * second with the min and the input's {@code Σ q}), as {@link LowBitsKX16#row} does.
     */
    private static void x16LowBitsKGroup(boolean three, MemorySegment w, long group, int part, int supers,
            Q4_0X16.Inputs in, int qBase, int blockBase, float[] factors, MemorySegment out, long at) {
        int[] pairs = in.pairs();
        float[] ds = in.d();
        int lanes = X16_FLOATS.length();
        long pairsAt = part * 2L * lanes;
        long blockBytes = three ? LowBitsKX16.Q3_GROUP_BLOCK_BYTES : LowBitsKX16.Q2_GROUP_BLOCK_BYTES;
        FloatVector acc = FloatVector.zero(X16_FLOATS);
        for (int b = 0; b < supers; b++) {
            long block = group + b * blockBytes;
            long quants = block + (three ? LowBitsKX16.Q3_QUANTS : LowBitsKX16.Q2_QUANTS) + pairsAt;
            for (int is = 0; is < 16; is++) {
                int n = is / 8;
                int j = (is / 2) % 4;
                int h = is % 2;
                int x = qBase + b * 256 + 128 * n + 32 * j + 16 * h;
                int m = x / 2;
                ShortVector sums = ShortVector.zero(X16_SHORTS);
                for (int p = 0; p < 8; p++) {
                    ShortVector q = x16Load(w, quants + 32L * (16 * n + 8 * h + p)).lanewise(VectorOperators.LSHR,
                            2 * j)
                            .and((short) 3);
                    if (three) {
                        ShortVector mask = x16Load(w, block + pairsAt + 32L * (8 * h + p));
                        q = q.or(mask.lanewise(VectorOperators.LSHR, 4 * n + j).and((short) 1)
                                .lanewise(VectorOperators.LSHL, 2)).sub((short) 4);
                    }
                    sums = q.mul(x16Pair(pairs, m + p)).add(sums);
                }
                float dx = ds[blockBase + b * 8 + 4 * n + j];
                FloatVector dot = x16Sums(sums, 0);
                int f = (b * 16 + is) * 2 * lanes;
                acc = dot.fma(FloatVector.fromArray(X16_FLOATS, factors, f).mul(dx), acc);
                if (!three) {
                    acc = FloatVector.broadcast(X16_FLOATS, (float) LowBitsKX16.sum16(in, x))
                            .fma(FloatVector.fromArray(X16_FLOATS, factors, f + lanes).mul(dx).neg(), acc);
                }
            }
        }
        acc.intoMemorySegment(out, at, LE);
    }

    /**
     * The row factors of one part of a group of q2_K ({@link #x16LowBitsKGroup}'s): per sub-block of
     * 16, {@code d * scale} and {@code dmin * min}, a vector each, side by side in {@code factors};
     * once for all the inputs (see {@link #x16Q5KGroup}).
     */
    private static void x16Q2KFactors(MemorySegment w, long group, int part, int supers, float[] factors) {
        int lanes = X16_FLOATS.length();
        long pairsAt = part * 2L * lanes;
        long rowsAt = (long) part * lanes;
        for (int b = 0; b < supers; b++) {
            long block = group + b * LowBitsKX16.Q2_GROUP_BLOCK_BYTES;
            FloatVector d = x16Scales(w, block + LowBitsKX16.Q2_D + pairsAt);
            FloatVector dmin = x16Scales(w, block + LowBitsKX16.Q2_D + 32 + pairsAt);
            for (int is = 0; is < 16; is++) {
                int f = (b * 16 + is) * 2 * lanes;
                IntVector sc = x16RowBytes(w, block + 16L * is + rowsAt);
                d.mul((FloatVector) sc.and(15).convert(VectorOperators.I2F, 0)).intoArray(factors, f);
                dmin.mul((FloatVector) sc.lanewise(VectorOperators.LSHR, 4).convert(VectorOperators.I2F, 0))
                        .intoArray(factors, f + lanes);
            }
        }
    }

    /** The row factors of one part of a group of q3_K: per sub-block of 16, {@code d * scale}, as {@link #x16Q2KFactors} lays them out. */
    private static void x16Q3KFactors(MemorySegment w, long group, int part, int supers, float[] factors) {
        int lanes = X16_FLOATS.length();
        long pairsAt = part * 2L * lanes;
        long rowsAt = (long) part * lanes;
        for (int b = 0; b < supers; b++) {
            long block = group + b * LowBitsKX16.Q3_GROUP_BLOCK_BYTES;
            FloatVector d = x16Scales(w, block + LowBitsKX16.Q3_D + pairsAt);
            long scales = block + LowBitsKX16.Q3_SCALES + rowsAt;
            for (int is = 0; is < 16; is++) {
                IntVector low = x16RowBytes(w, scales + 16L * (is & 7));
                low = is < 8 ? low.and(0x0f) : low.lanewise(VectorOperators.LSHR, 4);
                IntVector high = x16RowBytes(w, scales + 16L * (8 + (is & 3)))
                        .lanewise(VectorOperators.LSHR, 2 * (is / 4)).and(3);
                FloatVector scale = (FloatVector) low.or(high.lanewise(VectorOperators.LSHL, 4)).sub(32)
                        .convert(VectorOperators.I2F, 0);
                d.mul(scale).intoArray(factors, (b * 16 + is) * 2 * lanes);
            }
        }
    }

    /** One part's 16-bit fields of the rows at {@code at} (two bytes a row, side by side), zero-extended to ints. */
    private static IntVector x16Scales16(MemorySegment w, long at) {
        return ((IntVector) ShortVector.fromMemorySegment(X16_HALVES, w, at, LE).castShape(X16_INTS, 0)).and(0xffff);
    }

    /** A byte of each row of a part at {@code at} (one per row, side by side), zero-extended to int lanes. */
    private static IntVector x16RowBytes(MemorySegment w, long at) {
        return (IntVector) ByteVector.fromMemorySegment(X16_ROW_BYTES, w, at, LE)
                .convertShape(VectorOperators.ZERO_EXTEND_B2I, X16_INTS, 0);
    }

    /**
     * One part of a group of 16 rows of q5_0, q4_1 or q5_1 ({@code source}) with one input: per
     * block, each pair of nibble bytes (joined with its fifth bits and less 16, for the 5-bit
     * types), times the pair of quants it meets, in short lanes (16 products of at most
     * {@code 16 * 127}, or {@code 15 * 127} for q4_1, a lane: exact); each row's two lanes added as
     * ints (with {@code 16 Σ q}, which is {@code 2 * sum8}, added back for q5_1), one fused
     * multiply-add per row with {@code dw * dx}, and for q4_1 and q5_1 one with the min, as
     * {@link SmallBlocksX16#row} does. The fifth bits of the part's rows are one int lane each; for
     * the pair of values {@code 2j, 2j + 1} of a half, bit {@code 2j} goes to bit 4 of the row's
     * even short lane and bit {@code 2j + 1} to bit 4 of its odd one: the half's 16 bits spread once
     * per block to {@code bits | (bits >>> 1) << 16}, then per pair a shift, a mask and a shift.
     */
    private static void x16SmallBlocksGroup(TensorType source, MemorySegment w, long group, int part, int blocks,
            Q4_0X16.Inputs in, int qBase, int blockBase, float[] factors, MemorySegment out, long at) {
        int[] pairs = in.pairs();
        float[] ds = in.d();
        int[] sum8 = in.sum8();
        boolean fifth = SmallBlocksX16.hasHighBits(source);
        boolean mins = SmallBlocksX16.hasMins(source);
        boolean addBack = fifth && mins; // q5_1: its quants are not centred, the products less 16 are
        int lanes = X16_FLOATS.length();
        long blockBytes = SmallBlocksX16.groupBlockBytes(source);
        long highBits = group + SmallBlocksX16.highBitsAt(source) + part * 4L * lanes;
        long nibbles = group + SmallBlocksX16.nibblesAt(source) + part * 2L * lanes;
        FloatVector acc = FloatVector.zero(X16_FLOATS);
        for (int b = 0; b < blocks; b++) {
            long o = b * blockBytes;
            int m = (qBase + b * 32) / 2;
            IntVector low = IntVector.zero(X16_INTS); // never null: a vector that may be null is boxed
            IntVector high = low;
            if (fifth) {
                IntVector qh = IntVector.fromMemorySegment(X16_INTS, w, highBits + o, LE);
                low = qh.and(0xffff);
                low = low.or(low.lanewise(VectorOperators.LSHR, 1).lanewise(VectorOperators.LSHL, 16));
                high = qh.lanewise(VectorOperators.LSHR, 16);
                high = high.or(high.lanewise(VectorOperators.LSHR, 1).lanewise(VectorOperators.LSHL, 16));
            }
            ShortVector sums = ShortVector.zero(X16_SHORTS);
            for (int j = 0; j < 8; j++) {
                ShortVector packed = x16Load(w, nibbles + o + 32L * j);
                ShortVector first = x16Low(packed);
                ShortVector second = x16High(packed);
                if (fifth) {
                    first = first.or(low.lanewise(VectorOperators.LSHR, 2 * j).and(0x0001_0001)
                            .lanewise(VectorOperators.LSHL, 4).reinterpretAsShorts()).sub((short) 16);
                    second = second.or(high.lanewise(VectorOperators.LSHR, 2 * j).and(0x0001_0001)
                            .lanewise(VectorOperators.LSHL, 4).reinterpretAsShorts()).sub((short) 16);
                }
                sums = first.mul(x16Pair(pairs, m + j)).add(sums);
                sums = second.mul(x16Pair(pairs, m + 8 + j)).add(sums);
            }
            int i = blockBase + b;
            float dx = ds[i];
            int f = b * 2 * lanes;
            acc = x16Sums(sums, addBack ? -2 * sum8[i] : 0).fma(FloatVector.fromArray(X16_FLOATS, factors, f).mul(dx),
                    acc);
            if (mins) {
                acc = FloatVector.fromArray(X16_FLOATS, factors, f + lanes).fma(FloatVector.broadcast(X16_FLOATS,
                        SmallBlocksX16.inputSum(dx, sum8[i])), acc);
            }
        }
        acc.intoMemorySegment(out, at, LE);
    }

    /**
     * The row factors of one part of a group of q5_0, q4_1 or q5_1 ({@link #x16SmallBlocksGroup}'s):
     * per block, {@code d} and (q4_1, q5_1) {@code m}, widened, in {@code factors} two vectors
     * apart; once for all the inputs (see {@link #x16Q5KGroup}).
     */
    private static void x16SmallBlocksFactors(TensorType source, MemorySegment w, long group, int part, int blocks,
            float[] factors) {
        boolean mins = SmallBlocksX16.hasMins(source);
        int lanes = X16_FLOATS.length();
        long blockBytes = SmallBlocksX16.groupBlockBytes(source);
        long scales = group + part * 2L * lanes;
        for (int b = 0; b < blocks; b++) {
            long o = b * blockBytes;
            x16Scales(w, scales + o).intoArray(factors, b * 2 * lanes);
            if (mins) {
                x16Scales(w, scales + 32 + o).intoArray(factors, b * 2 * lanes + lanes);
            }
        }
    }
}
