package dev.tandem.kernels.vector;

import static dev.tandem.kernels.scalar.LittleEndian.F32;
import static dev.tandem.kernels.vector.VectorDequantize.widenF16;
import static dev.tandem.kernels.vector.VectorLanes.F;
import static dev.tandem.kernels.vector.VectorLanes.LE;
import static dev.tandem.kernels.vector.VectorLanes.NATIVE_INT8;
import static dev.tandem.kernels.vector.VectorLanes.nativeBatch;
import static dev.tandem.kernels.vector.VectorLanes.X16_FLOATS;
import static dev.tandem.kernels.vector.VectorLanes.X16_INPUTS;
import static dev.tandem.kernels.vector.VectorLanes.X16_INTS;
import static dev.tandem.kernels.vector.VectorLanes.X16_PARTS;
import static dev.tandem.kernels.vector.VectorLanes.X16_PART_BYTES;
import static dev.tandem.kernels.vector.VectorLanes.X16_SCALE_BYTES;
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
import dev.tandem.kernels.scalar.Q4_KX16;
import dev.tandem.kernels.scalar.Q5_KX16;
import dev.tandem.kernels.scalar.ScalarOps;
import dev.tandem.kernels.scalar.Scratch;
import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/** The vector matmul of {@link TensorType#Q4_K_X16}, whose layout and scalar rows are {@link Q4_KX16}. */
public final class VectorQ4_KX16 {

    /** The f16 bits of a part's {@code d} or {@code dmin}, as bytes: two per row. */
    private static final VectorSpecies<Byte> X16_HALF_BYTES =
            VectorSpecies.of(byte.class, VectorShape.forBitSize(X16_FLOATS.length() * Short.SIZE));

    /** The bytes {@link #x16KHalves} moves a header in: the preferred vector's. */
    private static final VectorSpecies<Byte> X16_HEADER_BYTES = ByteVector.SPECIES_PREFERRED;

    /** Superblocks whose factors {@link #x16KFactors} unpacks before {@link #x16KDots4} uses them. */
    static final int X16_K_CHUNK = 2;

    /** Bytes of a q4_K_x16 superblock's header: 16 {@code d}, 16 {@code dmin}, 12 x 16 scale bytes. */
    static final int X16_K_HEADER = Q4_KX16.HEADER_BYTES;

    private VectorQ4_KX16() {}

    /**
     * Groups of 16 rows by vector loops, the rest one row at a time by {@link Q4_KX16#row}, as
     * {@link VectorQ4_0X16#matmul} does. With fewer than {@link VectorLanes#X16_INPUTS} inputs (a decode step's
     * one), per group and part, {@link #X16_K_UNPACKED} superblocks at a time: {@link #x16KUnpack}
     * widens their {@code d} and {@code dmin} and unpacks their scales' bytes, then {@link
     * #x16KDotsUnpacked} runs each input over their nibbles (which the caches hold for the next
     * input), making each factor where it is used. With more, {@link #X16_K_CHUNK} superblocks at a
     * time: {@link #x16KFactors} makes their rows' {@code d * sc} and {@code dmin * m} once for
     * every eight inputs ({@link #x16KDots8}), then every four ({@link #x16KDots4}), both scaled
     * by {@link #x16KScale}, and the inputs left over unpack
     * the chunk for themselves. The loops doing vector work are methods of more than 325 bytecodes
     * ({@link #x16KSixBitFactors}, {@link #x16KDotsUnpacked}, {@link #x16KDots4}, {@link #x16KScale}),
     * which C2 never inlines into a caller, and {@link #x16KHalves}, small enough to inline whole:
     * inlined into one method, they passed C2's node budget, and the vector operations it then
     * left out of line boxed every vector (0.2 to 1.6 GB/s).
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
        ArgumentChecks.matmulBlocks(TensorType.Q4_K_X16,
                weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd);
        int blocks = cols / 32;
        int supers = cols / 256;
        Scratch scratch = Scratch.get();
        Q4_0X16.Inputs in = quantizeInputs(scratch, x, xOffset, batch, cols, inputKey);
        long rowBytes = supers * 144L;
        long outStride = (long) rows * F;
        byte[] headers = scratch.bytes(Math.max(X16_K_CHUNK, X16_K_UNPACKED) * X16_K_HEADER);
        int fours = batch - batch % X16_INPUTS;
        short[] sums = fours > 0 ? scratch.shorts(X16_K_CHUNK * 8 * X16_WIDE_INPUTS * X16_SHORTS.length()) : null;
        int[] byEight = batch >= X16_WIDE_INPUTS ? scratch.pairsByEight(batch / X16_WIDE_INPUTS * X16_WIDE_INPUTS * cols / 2)
                : null;
        float[] factors = scratch.factors(Math.max(X16_K_CHUNK * (8 + 1), X16_K_UNPACKED) * 2 * X16_FLOATS.length());
        int chunk = fours > 0 ? X16_K_CHUNK : X16_K_UNPACKED;
        int groupEnd = Math.min(rowEnd, rows - rows % TensorType.X16_ROWS);
        int r = rowStart;
        while (r < rowEnd) {
            if (NATIVE_INT8 && batch >= nativeBatch(TensorType.Q4_K_X16) && r % TensorType.X16_ROWS == 0
                    && r + TensorType.X16_ROWS <= groupEnd) {
                int groups = (groupEnd - r) / TensorType.X16_ROWS;
                NativeInt8.x16(TensorType.Q4_K_X16, weights, weightsOffset, r, groups, supers, in, batch, cols, out,
                        outOffset, rows);
                r += groups * TensorType.X16_ROWS;
            } else if (X16_VECTORS && r % TensorType.X16_ROWS == 0 && r + TensorType.X16_ROWS <= groupEnd) {
                long group = weightsOffset + r * rowBytes;
                for (int part = 0; part < X16_PARTS; part++) {
                    long at = outOffset + r * F + part * X16_FLOATS.length() * F;
                    FloatVector zero = FloatVector.zero(X16_FLOATS);
                    for (int b = 0; b < batch; b++) {
                        zero.intoMemorySegment(out, at + b * outStride, LE);
                    }
                    for (int from = 0; from < supers; from += chunk) {
                        int end = Math.min(supers, from + chunk);
                        if (fours > 0) {
                            x16KFactors(false, weights, group, part, from, end, headers, factors);
                            int b = 0;
                            for (; b + X16_WIDE_INPUTS <= fours; b += X16_WIDE_INPUTS) {
                                x16KDots8(weights, group, part, from, end, supers, byEight, b * (cols / 2), sums);
                                x16KScale(from, end, in, b * blocks, blocks, sums, X16_WIDE_INPUTS, factors, out,
                                        at + b * outStride, outStride);
                            }
                            for (; b < fours; b += X16_INPUTS) {
                                x16KDots4(weights, group, part, from, end, supers, in.pairs(), b * cols / 2, cols / 2,
                                        sums);
                                x16KScale(from, end, in, b * blocks, blocks, sums, X16_INPUTS, factors, out,
                                        at + b * outStride, outStride);
                            }
                        }
                        if (fours < batch) {
                            // After the fours (their factors used), the rest unpack the chunk for themselves.
                            x16KUnpack(weights, group, part, from, end, factors, headers);
                            for (int b = fours; b < batch; b++) {
                                x16KDotsUnpacked(weights, group, part, from, end, supers, in, b * cols, factors,
                                        headers,
                                        out, at + b * outStride);
                            }
                        }
                    }
                }
                r += TensorType.X16_ROWS;
            } else {
                for (int b = 0; b < batch; b++) {
                    out.set(F32, outOffset + b * outStride + r * F,
                            Q4_KX16.row(weights, weightsOffset, rows, supers, r, in, b * cols, b * blocks));
                }
                r++;
            }
        }
    }

    /**
     * Per superblock of {@code [from, end)} and sub-block {@code t}, a part's rows' {@code d * sc_t}
     * and {@code dmin * m_t} into {@code factors}, side by side; the 6-bit scales and mins unpacked
     * as {@link ScalarOps#q4_KScale} and {@link ScalarOps#q4_KMin} do. Each superblock's header is
     * first copied into {@code headers} (vector loads from an array cost C2 far fewer nodes than
     * from a segment), and the widening of {@code d} and {@code dmin}, sub-blocks 0-3 and 4-7 are
     * three loops of their own: in fewer, C2 passed its node budget and boxed the vectors.
     */
    static void x16KFactors(boolean q5K, MemorySegment w, long group, int part, int from, int end,
            byte[] headers, float[] factors) {
        x16KHalves(q5K, w, group, part, from, end, headers, factors);
        x16KSixBitFactors(true, part, from, end, headers, factors);
        x16KSixBitFactors(false, part, from, end, headers, factors);
    }

    /**
     * Copies the headers and widens each one's {@code d} and {@code dmin}, kept after the factors.
     * q5_K_x16's header is q4_K_x16's (d, dmin, the 12 scale bytes, 16 rows each), at the start of
     * each superblock's group rather than in {@link Q4_KX16#headerAt}'s chunks.
     */
    private static void x16KHalves(boolean q5K, MemorySegment w, long group, int part, int from, int end,
            byte[] headers, float[] factors) {
        int lanes = X16_FLOATS.length();
        int halves = part * 2 * lanes;
        int dd = X16_K_CHUNK * 8 * 2 * lanes;
        for (int b = from; b < end; b++) {
            int h = (b - from) * X16_K_HEADER;
            // Vector moves, not MemorySegment.copy: its checks per call cost as much as a
            // superblock's dot products on narrow rows (9% of a decode's samples).
            long from16 = group + (q5K ? b * Q5_KX16.GROUP_BLOCK_BYTES : Q4_KX16.headerAt(b));
            for (int k = 0; k < X16_K_HEADER; k += X16_HEADER_BYTES.length()) {
                ByteVector.fromMemorySegment(X16_HEADER_BYTES, w, from16 + k, LE).intoArray(headers, h + k);
            }
            // d, then dmin, widened as x16Scales does, written out: through helpers that take
            // and return vectors, the decoder's order of compilation left them out of line and
            // boxed every vector (JFR on a large q4_K decode: 2 GB/s of garbage, all from here).
            for (int j = 0; j < 2; j++) {
                IntVector half = (IntVector) ByteVector.fromArray(X16_HALF_BYTES, headers, h + 32 * j + halves)
                        .reinterpretAsShorts().convertShape(VectorOperators.ZERO_EXTEND_S2I, X16_INTS, 0);
                IntVector magnitude = half.and(0x7fff);
                FloatVector widened = magnitude.compare(VectorOperators.GE, 0x7c00).anyTrue() ? widenF16(half)
                        : magnitude.lanewise(VectorOperators.LSHL, 13).reinterpretAsFloats().mul(0x1p112f)
                                .reinterpretAsInts().or(half.and(0x8000).lanewise(VectorOperators.LSHL, 16))
                                .reinterpretAsFloats();
                widened.intoArray(factors, dd + (b - from) * 2 * lanes + j * lanes);
            }
        }
    }

    /**
     * Sub-blocks 0-3's factors ({@code high} false: the low 6 bits of scale bytes {@code t} and
     * {@code t + 4}) or 4-7's ({@code high} true: the nibbles of scale byte {@code t + 8} with the
     * top two bits of bytes {@code t} and {@code t + 4} above them; {@code (b >> 2) & 0x30} moves
     * bits 6-7 to 4-5 whatever the byte's sign). One method for both halves, each call with a
     * constant: at more than 325 bytecodes C2 never inlines it into its caller, where the two
     * halves' vector code came out boxed (the caller's node budget spent) in the decoder's
     * compilations, though not in a kernel benchmark's.
     */
    private static void x16KSixBitFactors(boolean high, int part, int from, int end, byte[] headers,
            float[] factors) {
        int lanes = X16_FLOATS.length();
        int bytes = 64 + part * lanes;
        int dd = X16_K_CHUNK * 8 * 2 * lanes;
        for (int b = from; b < end; b++) {
            int h = (b - from) * X16_K_HEADER + bytes;
            FloatVector d = FloatVector.fromArray(X16_FLOATS, factors, dd + (b - from) * 2 * lanes);
            FloatVector dmin = FloatVector.fromArray(X16_FLOATS, factors, dd + (b - from) * 2 * lanes + lanes);
            int f0 = (b - from) * 8 * 2 * lanes;
            if (high) {
                for (int t = 0; t < 4; t++) {
                    // In int lanes: a shift of byte lanes has no instruction of its own (C2 widens,
                    // shifts and packs each), and the ints are on their way to floats anyway.
                    IntVector low = (IntVector) ByteVector.fromArray(X16_SCALE_BYTES, headers, h + 16 * t)
                            .convertShape(VectorOperators.ZERO_EXTEND_B2I, X16_INTS, 0);
                    IntVector mid = (IntVector) ByteVector.fromArray(X16_SCALE_BYTES, headers, h + 16 * (t + 4))
                            .convertShape(VectorOperators.ZERO_EXTEND_B2I, X16_INTS, 0);
                    IntVector top = (IntVector) ByteVector.fromArray(X16_SCALE_BYTES, headers, h + 16 * (t + 8))
                            .convertShape(VectorOperators.ZERO_EXTEND_B2I, X16_INTS, 0);
                    int g = f0 + (t + 4) * 2 * lanes;
                    d.mul((FloatVector) top.and(0x0f).or(low.lanewise(VectorOperators.LSHR, 2).and(0x30))
                            .convert(VectorOperators.I2F, 0)).intoArray(factors, g);
                    dmin.mul((FloatVector) top.lanewise(VectorOperators.LSHR, 4)
                            .or(mid.lanewise(VectorOperators.LSHR, 2).and(0x30))
                            .convert(VectorOperators.I2F, 0)).intoArray(factors, g + lanes);
                }
            } else {
                for (int t = 0; t < 4; t++) {
                    int f = f0 + t * 2 * lanes;
                    d.mul(x16KSixBits(ByteVector.fromArray(X16_SCALE_BYTES, headers, h + 16 * t).and((byte) 63)))
                            .intoArray(factors, f);
                    dmin.mul(x16KSixBits(ByteVector.fromArray(X16_SCALE_BYTES, headers, h + 16 * (t + 4))
                            .and((byte) 63))).intoArray(factors, f + lanes);
                }
            }
        }
    }

    /**
     * {@link #x16KDots4} for eight inputs, their pairs of quants side by side in {@code byEight}
     * from {@code m} ({@link Scratch#byEight}): one sub-block of 32 values at a time, eight
     * chains of products per nibble vector, each pair at one index and a constant offset (as
     * {@link VectorQ4_0X16#x16Dots8}). Its chains are a near-copy of {@link VectorQ4_0X16#x16Dots8}'s on purpose: a shared
     * helper would have to take or return the eight accumulators, which C2 then boxes, and only
     * the loops around them (blocks of 16 rows against sub-blocks of a superblock) differ.
     */
    private static void x16KDots8(MemorySegment w, long group, int part, int from, int end, int supers, int[] byEight,
            int m, short[] sums) {
        int lanes = X16_SHORTS.length();
        long halves = part * X16_PART_BYTES;
        for (int sub = from * 8; sub < end * 8; sub++) {
            int b = sub >> 3;
            long quants = group + Q4_KX16.nibblesAt(b, supers) + halves + 512L * ((sub & 7) >> 1);
            int o = m + (b * 128 + (sub & 7) * 16) * X16_WIDE_INPUTS;
            boolean high = (sub & 1) != 0;
            ShortVector s0 = ShortVector.zero(X16_SHORTS);
            ShortVector s1 = s0;
            ShortVector s2 = s0;
            ShortVector s3 = s0;
            ShortVector s4 = s0;
            ShortVector s5 = s0;
            ShortVector s6 = s0;
            ShortVector s7 = s0;
            for (int j = 0; j < 16; j++) {
                ShortVector packed = x16Load(w, quants + 32L * j);
                ShortVector v = high ? x16High(packed) : x16Low(packed);
                int q = o + j * X16_WIDE_INPUTS;
                s0 = v.mul(x16Pair(byEight, q)).add(s0);
                s1 = v.mul(x16Pair(byEight, q + 1)).add(s1);
                s2 = v.mul(x16Pair(byEight, q + 2)).add(s2);
                s3 = v.mul(x16Pair(byEight, q + 3)).add(s3);
                s4 = v.mul(x16Pair(byEight, q + 4)).add(s4);
                s5 = v.mul(x16Pair(byEight, q + 5)).add(s5);
                s6 = v.mul(x16Pair(byEight, q + 6)).add(s6);
                s7 = v.mul(x16Pair(byEight, q + 7)).add(s7);
            }
            int s = (sub - from * 8) * X16_WIDE_INPUTS * lanes;
            s0.intoArray(sums, s);
            s1.intoArray(sums, s + lanes);
            s2.intoArray(sums, s + 2 * lanes);
            s3.intoArray(sums, s + 3 * lanes);
            s4.intoArray(sums, s + 4 * lanes);
            s5.intoArray(sums, s + 5 * lanes);
            s6.intoArray(sums, s + 6 * lanes);
            s7.intoArray(sums, s + 7 * lanes);
        }
    }

    /**
     * {@link #x16KDotsUnpacked}' short sums for four inputs at once (their pairs of quants from {@code m}
     * and {@code stride} ints apart), sharing each unpacked byte of the nibbles: into {@code sums},
     * per superblock and sub-block, the four inputs' sums in order. The nibbles' products for the
     * four inputs in one loop, their scaling in another ({@link #x16KScale}): both in one passed
     * C2's node budget, as in {@link VectorQ4_0X16#x16Groups}.
     */
    private static void x16KDots4(MemorySegment w, long group, int part, int from, int end, int supers, int[] pairs,
            int m,
            int stride, short[] sums) {
        int lanes = X16_SHORTS.length();
        long halves = part * X16_PART_BYTES;
        int m1 = m + stride;
        int m2 = m1 + stride;
        int m3 = m2 + stride;
        for (int b = from; b < end; b++) {
            long block = group + Q4_KX16.nibblesAt(b, supers) + halves;
            for (int g = 0; g < 4; g++) {
                long quants = block + 512L * g;
                int o = b * 128 + g * 32;
                ShortVector l0 = ShortVector.zero(X16_SHORTS);
                ShortVector l1 = l0;
                ShortVector l2 = l0;
                ShortVector l3 = l0;
                ShortVector h0 = l0;
                ShortVector h1 = l0;
                ShortVector h2 = l0;
                ShortVector h3 = l0;
                for (int j = 0; j < 16; j++) {
                    ShortVector packed = x16Load(w, quants + 32L * j);
                    ShortVector low = x16Low(packed);
                    l0 = low.mul(x16Pair(pairs, m + o + j)).add(l0);
                    l1 = low.mul(x16Pair(pairs, m1 + o + j)).add(l1);
                    l2 = low.mul(x16Pair(pairs, m2 + o + j)).add(l2);
                    l3 = low.mul(x16Pair(pairs, m3 + o + j)).add(l3);
                    ShortVector high = x16High(packed);
                    h0 = high.mul(x16Pair(pairs, m + o + 16 + j)).add(h0);
                    h1 = high.mul(x16Pair(pairs, m1 + o + 16 + j)).add(h1);
                    h2 = high.mul(x16Pair(pairs, m2 + o + 16 + j)).add(h2);
                    h3 = high.mul(x16Pair(pairs, m3 + o + 16 + j)).add(h3);
                }
                int s = ((b - from) * 8 + 2 * g) * X16_INPUTS * lanes;
                l0.intoArray(sums, s);
                l1.intoArray(sums, s + lanes);
                l2.intoArray(sums, s + 2 * lanes);
                l3.intoArray(sums, s + 3 * lanes);
                int t = s + X16_INPUTS * lanes;
                h0.intoArray(sums, t);
                h1.intoArray(sums, t + lanes);
                h2.intoArray(sums, t + 2 * lanes);
                h3.intoArray(sums, t + 3 * lanes);
            }
        }
    }

    /**
     * {@link #x16KDots4}'s four inputs (their outputs at {@code at} and {@code outStride} apart,
     * their blocks of 32 from {@code i} and {@code stride} apart), scaled as {@link
     * #x16KDotsUnpacked} scales its sums, with the factors {@link #x16KFactors} made: two inputs a
     * pass (four passed C2's node budget), both passes in this one method, which at more than 325
     * bytecodes C2 never inlines into its caller.
     */
    private static void x16KScale(int from, int end, Q4_0X16.Inputs in, int i, int stride, short[] sums, int inputs,
            float[] factors, MemorySegment out, long at, long outStride) {
        int lanes = X16_FLOATS.length();
        int shorts = X16_SHORTS.length();
        float[] ds = in.d();
        int[] sum8 = in.sum8();
        for (int input = 0; input < inputs; input += 2) {
            long at0 = at + input * outStride;
            long at1 = at0 + outStride;
            int first = i + input * stride;
            FloatVector a0 = FloatVector.fromMemorySegment(X16_FLOATS, out, at0, LE);
            FloatVector a1 = FloatVector.fromMemorySegment(X16_FLOATS, out, at1, LE);
            for (int k = 0; k < (end - from) * 8; k++) {
                FloatVector dsc = FloatVector.fromArray(X16_FLOATS, factors, k * 2 * lanes);
                FloatVector dm = FloatVector.fromArray(X16_FLOATS, factors, k * 2 * lanes + lanes);
                int s = (k * inputs + input) * shorts;
                int i0 = first + from * 8 + k;
                float dx = ds[i0];
                a0 = x16Sums(ShortVector.fromArray(X16_SHORTS, sums, s), 0).fma(dsc.mul(dx), a0);
                a0 = FloatVector.broadcast(X16_FLOATS, (float) (sum8[i0] >> 3)).fma(dm.mul(dx).neg(), a0);
                int i1 = i0 + stride;
                float dy = ds[i1];
                a1 = x16Sums(ShortVector.fromArray(X16_SHORTS, sums, s + shorts), 0).fma(dsc.mul(dy), a1);
                a1 = FloatVector.broadcast(X16_FLOATS, (float) (sum8[i1] >> 3)).fma(dm.mul(dy).neg(), a1);
            }
            a0.intoMemorySegment(out, at0, LE);
            a1.intoMemorySegment(out, at1, LE);
        }
    }

    /** A 6-bit scale or min per row, at most 63, as floats. */
    private static FloatVector x16KSixBits(ByteVector sixBits) {
        return (FloatVector) sixBits.convertShape(VectorOperators.B2F, X16_FLOATS, 0);
    }

    /** Ints of a header's scale bytes, four rows' bytes an int, for {@link #x16KUnpack}. */
    private static final VectorSpecies<Integer> X16_K_UNPACK = IntVector.SPECIES_PREFERRED;

    /**
     * Superblocks {@link #x16KUnpack} unpacks before {@link #x16KDotsUnpacked} runs over them.
     * Four, measured on a matrix in memory, two threads, one input: against {@link #x16KFactors}'
     * chunks, 1.11-1.24x the GB/s with 1024 or 2816 columns; one or two superblocks gained
     * nothing, and a whole row's (11 at 2816 columns) lost, its headers read 2304 bytes apart
     * ahead of their nibbles.
     */
    private static final int X16_K_UNPACKED = Q4_KX16.CHUNK;

    /**
     * Per superblock of {@code [from, end)} of a group, its rows' {@code d} and {@code dmin}
     * widened into {@code halves} (16 floats each, side by side) and its 6-bit scales and mins
     * unpacked into {@code unpacked}, a byte each: 256 bytes a superblock, the 16 rows' scales of
     * sub-block {@code t} at {@code 16t}, their mins at {@code 128 + 16t}. In int lanes, four
     * rows a lane: the masks keep each byte's bits from its neighbours' ({@link
     * ScalarOps#q4_KScale} and {@link ScalarOps#q4_KMin} unpack the same bits).
     */
    private static void x16KUnpack(MemorySegment w, long group, int part, int from, int end, float[] halves,
            byte[] unpacked) {
        int lanes = X16_FLOATS.length();
        long offset = part * X16_PART_BYTES;
        int step = X16_K_UNPACK.vectorByteSize();
        for (int b = from; b < end; b++) {
            long header = group + Q4_KX16.headerAt(b);
            x16Scales(w, header + offset).intoArray(halves, 2 * (b - from) * lanes);
            x16Scales(w, header + 32 + offset).intoArray(halves, (2 * (b - from) + 1) * lanes);
            int u = (b - from) * 256;
            for (int k = 0; k < 64; k += step) {
                IntVector low = IntVector.fromMemorySegment(X16_K_UNPACK, w, header + 64 + k, LE);
                IntVector mid = IntVector.fromMemorySegment(X16_K_UNPACK, w, header + 128 + k, LE);
                IntVector top = IntVector.fromMemorySegment(X16_K_UNPACK, w, header + 192 + k, LE);
                low.and(0x3f3f3f3f).reinterpretAsBytes().intoArray(unpacked, u + k);
                top.and(0x0f0f0f0f).or(low.lanewise(VectorOperators.LSHR, 2).and(0x30303030))
                        .reinterpretAsBytes().intoArray(unpacked, u + 64 + k);
                mid.and(0x3f3f3f3f).reinterpretAsBytes().intoArray(unpacked, u + 128 + k);
                top.lanewise(VectorOperators.LSHR, 4).and(0x0f0f0f0f)
                        .or(mid.lanewise(VectorOperators.LSHR, 2).and(0x30303030))
                        .reinterpretAsBytes().intoArray(unpacked, u + 192 + k);
            }
        }
    }

    /**
     * One input ({@code qBase} its first quant) over superblocks {@code [from, end)} of a part of a
     * group of 16 q4_K rows, unpacked by {@link #x16KUnpack}, added to its accumulators at
     * {@code at}: per group of 64 values (two sub-blocks), each pair of nibble bytes times its pair
     * of quants in short lanes, the low nibbles' products for the first sub-block and the high
     * nibbles' for the second (16 products of at most {@code 15 * 127} a lane); then each
     * sub-block's two fused multiply-adds as {@link Q4_KX16#row} does them: the integer dot
     * products times {@code (d * sc) * dx}, then the input block's sum of quants times
     * {@code -((dmin * m) * dx)}, each factor made here in the same operations as {@link
     * #x16KSixBitFactors}, so the same bits as the four inputs' path. It makes no floats of
     * factors to store and load again, the work that made {@link #x16KFactors} a third of a
     * superblock's time with one input (the matrix in the caches: 1.48x the GB/s with the
     * factors left out altogether).
     */
    private static void x16KDotsUnpacked(MemorySegment w, long group, int part, int from, int end, int supers,
            Q4_0X16.Inputs in, int qBase, float[] halvesOf, byte[] unpacked, MemorySegment out, long at) {
        int lanes = X16_FLOATS.length();
        int[] pairs = in.pairs();
        float[] ds = in.d();
        int[] sum8 = in.sum8();
        long halves = part * X16_PART_BYTES;
        FloatVector acc = FloatVector.fromMemorySegment(X16_FLOATS, out, at, LE);
        for (int b = from; b < end; b++) {
            FloatVector d = FloatVector.fromArray(X16_FLOATS, halvesOf, 2 * (b - from) * lanes);
            FloatVector dmin = FloatVector.fromArray(X16_FLOATS, halvesOf, (2 * (b - from) + 1) * lanes);
            long block = group + Q4_KX16.nibblesAt(b, supers) + halves;
            for (int g = 0; g < 4; g++) {
                long quants = block + 512L * g;
                int m = (qBase + b * 256 + g * 64) / 2;
                ShortVector low = ShortVector.zero(X16_SHORTS);
                ShortVector high = low;
                for (int j = 0; j < 16; j++) {
                    ShortVector packed = x16Load(w, quants + 32L * j);
                    low = x16Low(packed).mul(x16Pair(pairs, m + j)).add(low);
                    high = x16High(packed).mul(x16Pair(pairs, m + 16 + j)).add(high);
                }
                int i = (qBase + b * 256 + g * 64) / 32;
                float dx = ds[i];
                float dy = ds[i + 1];
                int t = (b - from) * 256 + g * 32 + part * lanes;
                FloatVector sc0 = x16KSixBits(ByteVector.fromArray(X16_SCALE_BYTES, unpacked, t));
                FloatVector sc1 = x16KSixBits(ByteVector.fromArray(X16_SCALE_BYTES, unpacked, t + 16));
                FloatVector m0 = x16KSixBits(ByteVector.fromArray(X16_SCALE_BYTES, unpacked, t + 128));
                FloatVector m1 = x16KSixBits(ByteVector.fromArray(X16_SCALE_BYTES, unpacked, t + 144));
                acc = x16Sums(low, 0).fma(d.mul(sc0).mul(dx), acc);
                acc = FloatVector.broadcast(X16_FLOATS, (float) (sum8[i] >> 3)).fma(dmin.mul(m0).mul(dx).neg(), acc);
                acc = x16Sums(high, 0).fma(d.mul(sc1).mul(dy), acc);
                acc = FloatVector.broadcast(X16_FLOATS, (float) (sum8[i + 1] >> 3))
                        .fma(dmin.mul(m1).mul(dy).neg(), acc);
            }
        }
        acc.intoMemorySegment(out, at, LE);
    }
}
