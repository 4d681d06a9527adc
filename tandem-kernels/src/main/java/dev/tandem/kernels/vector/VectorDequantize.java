package dev.tandem.kernels.vector;

import static dev.tandem.kernels.scalar.LittleEndian.F32;
import static dev.tandem.kernels.vector.VectorLanes.F;
import static dev.tandem.kernels.vector.VectorLanes.L;
import static dev.tandem.kernels.vector.VectorLanes.LE;
import static dev.tandem.kernels.vector.VectorLanes.S;

import dev.tandem.kernels.Q8_0;
import dev.tandem.kernels.QuantOps;
import dev.tandem.kernels.TensorType;
import dev.tandem.kernels.scalar.ArgumentChecks;
import dev.tandem.kernels.scalar.HalfFloats;
import dev.tandem.kernels.scalar.LittleEndian;
import dev.tandem.kernels.scalar.ScalarOps;
import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * The vector kernels of {@link QuantOps}: dequantization, bit for bit what {@link ScalarOps}
 * computes.
 */
public final class VectorDequantize {

    /** q8_0 weights are loaded 16 at a time. */
    private static final VectorSpecies<Byte> Q8_BYTES = ByteVector.SPECIES_128;

    /** The float species q8_0 widens to: the preferred one when 16 bytes widen to 1, 2 or 4 of it. */
    private static final VectorSpecies<Float> Q8_FLOATS =
            L > 16 ? FloatVector.SPECIES_512 : L < 4 ? FloatVector.SPECIES_128 : S;

    private static final int Q8_LANES = Q8_FLOATS.length();

    /** Float vectors per 16 widened bytes: 1, 2 or 4. */
    private static final int Q8_PARTS = 16 / Q8_LANES;

    /** Int lanes in the preferred shape: as many as {@link VectorLanes#S} has float lanes. */
    private static final VectorSpecies<Integer> INTS = VectorSpecies.of(int.class, S.vectorShape());

    /** f16 and bf16 are loaded {@link VectorLanes#L} at a time, half a preferred vector of shorts. */
    private static final VectorSpecies<Short> HALVES =
            VectorSpecies.of(short.class, VectorShape.forBitSize(L * Short.SIZE));

    private VectorDequantize() {}

    /** Widens part {@code part} of 16 int8 weights to f32; each case has a constant part number. */
    private static FloatVector widen(ByteVector q, int part) {
        return switch (part) {
            case 0 -> (FloatVector) q.castShape(Q8_FLOATS, 0);
            case 1 -> (FloatVector) q.castShape(Q8_FLOATS, 1);
            case 2 -> (FloatVector) q.castShape(Q8_FLOATS, 2);
            case 3 -> (FloatVector) q.castShape(Q8_FLOATS, 3);
            default -> throw new AssertionError("q8_0 part " + part + " of " + Q8_PARTS);
        };
    }

    /**
     * Dequantization, bit for bit what {@link ScalarOps} computes. Block types load 16 bytes at a
     * time as a 128-bit {@code ByteVector}, unpack nibbles and bit fields with byte-lane shifts and
     * masks, widen as q8_0 does and apply the scale with a multiply (and a subtract for q4_K's min),
     * never an FMA. f16 widens in int lanes: normals by shifting and re-biasing the exponent,
     * subnormals through an exact int-to-float conversion times {@code 2^-24}, infinities and NaNs
     * by a second re-bias and the quiet bit, chosen per lane by masks.
     */
    static void dequantize(
            TensorType type, MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long elements) {
        ArgumentChecks.dequantize(type, src, srcOffset, dst, dstOffset, elements);
        long blocks = elements / type.blockSize();
        long blockBytes = type.blockBytes();
        long blockFloats = type.blockSize() * F;
        switch (type) {
            case F32 -> MemorySegment.copy(src, srcOffset, dst, dstOffset, elements * F);
            case F16 -> dequantizeF16(src, srcOffset, dst, dstOffset, elements);
            case BF16 -> dequantizeBf16(src, srcOffset, dst, dstOffset, elements);
            case Q8_0 -> {
                for (long b = 0; b < blocks; b++) {
                    dequantizeQ8_0Block(src, srcOffset + b * blockBytes, dst, dstOffset + b * blockFloats);
                }
            }
            case Q4_0 -> {
                for (long b = 0; b < blocks; b++) {
                    dequantizeQ4_0Block(src, srcOffset + b * blockBytes, dst, dstOffset + b * blockFloats);
                }
            }
            case Q5_0 -> {
                for (long b = 0; b < blocks; b++) {
                    ScalarOps.dequantizeQ5_0Block(src, srcOffset + b * blockBytes, dst, dstOffset + b * blockFloats);
                }
            }
            case Q2_K, Q3_K -> {
                for (long b = 0; b < blocks; b++) {
                    ScalarOps.dequantizeLowBitsKBlock(type == TensorType.Q3_K, src, srcOffset + b * blockBytes, dst,
                            dstOffset + b * blockFloats);
                }
            }
            case IQ4_NL, IQ4_XS -> {
                for (long b = 0; b < blocks; b++) {
                    ScalarOps.dequantizeIq4Block(type == TensorType.IQ4_XS, src, srcOffset + b * blockBytes, dst,
                            dstOffset + b * blockFloats);
                }
            }
            case Q4_1, Q5_1 -> {
                for (long b = 0; b < blocks; b++) {
                    ScalarOps.dequantizeMinBlock(type == TensorType.Q5_1, src, srcOffset + b * blockBytes, dst,
                            dstOffset + b * blockFloats);
                }
            }
            case Q5_K -> {
                for (long b = 0; b < blocks; b++) {
                    ScalarOps.dequantizeQ5_KBlock(src, srcOffset + b * blockBytes, dst, dstOffset + b * blockFloats);
                }
            }
            case Q4_K -> {
                for (long b = 0; b < blocks; b++) {
                    dequantizeQ4_KBlock(src, srcOffset + b * blockBytes, dst, dstOffset + b * blockFloats);
                }
            }
            case Q6_K -> {
                for (long b = 0; b < blocks; b++) {
                    dequantizeQ6_KBlock(src, srcOffset + b * blockBytes, dst, dstOffset + b * blockFloats);
                }
            }
        }
    }

    /** {@link VectorLanes#L} f16 or bf16 at {@code offset}, sign-extended to int lanes (one widening load). */
    static IntVector loadHalves(MemorySegment src, long offset) {
        return (IntVector) ShortVector.fromMemorySegment(HALVES, src, offset, LE).castShape(INTS, 0);
    }

    /** The f16 values in the low 16 bits of each lane, widened exactly as {@link HalfFloats#f16ToF32}. */
    static FloatVector widenF16(IntVector h) {
        IntVector sign = h.and(0x8000).lanewise(VectorOperators.LSHL, 16);
        IntVector exponent = h.and(0x7c00);
        IntVector mantissa = h.and(0x3ff);
        IntVector normal = h.and(0x7fff).lanewise(VectorOperators.LSHL, 13).add(HalfFloats.F16_REBIAS);
        VectorMask<Integer> special = exponent.eq(0x7c00);
        IntVector magnitude = normal.add(HalfFloats.F16_REBIAS, special)
                .lanewise(VectorOperators.OR, 0x0040_0000, special.and(mantissa.compare(VectorOperators.NE, 0)));
        IntVector subnormal = ((FloatVector) mantissa.convert(VectorOperators.I2F, 0))
                .mul(HalfFloats.F16_SUBNORMAL_UNIT)
                .reinterpretAsInts();
        return magnitude.blend(subnormal, exponent.eq(0)).or(sign).reinterpretAsFloats();
    }

    private static void dequantizeF16(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long n) {
        long upper = n - n % L;
        long i = 0;
        for (; i < upper; i += L) {
            // sign-extended: only the low 16 bits are used
            widenF16(loadHalves(src, srcOffset + i * 2)).intoMemorySegment(dst, dstOffset + i * F, LE);
        }
        ScalarOps.dequantizeF16(src, srcOffset, dst, dstOffset, i, n);
    }

    private static void dequantizeBf16(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long n) {
        long upper = n - n % L;
        long i = 0;
        for (; i < upper; i += L) {
            loadHalves(src, srcOffset + i * 2)
                    .lanewise(VectorOperators.LSHL, 16)
                    .reinterpretAsFloats()
                    .intoMemorySegment(dst, dstOffset + i * F, LE);
        }
        ScalarOps.dequantizeBf16(src, srcOffset, dst, dstOffset, i, n);
    }

    private static ByteVector bytes16(MemorySegment src, long offset) {
        return ByteVector.fromMemorySegment(Q8_BYTES, src, offset, LE);
    }

    /** Stores the 16 signed bytes {@code q} times {@code d} as 16 f32 at {@code to}. */
    private static void storeScaled(ByteVector q, FloatVector d, MemorySegment dst, long to) {
        for (int part = 0; part < Q8_PARTS; part++) {
            widen(q, part).mul(d).intoMemorySegment(dst, to + (long) part * Q8_LANES * F, LE);
        }
    }

    static void dequantizeQ8_0Block(MemorySegment src, long block, MemorySegment dst, long to) {
        FloatVector d = FloatVector.broadcast(Q8_FLOATS, ScalarOps.half(src, block));
        storeScaled(bytes16(src, block + 2), d, dst, to);
        storeScaled(bytes16(src, block + 18), d, dst, to + 16 * F);
    }

    private static void dequantizeQ4_0Block(MemorySegment src, long block, MemorySegment dst, long to) {
        FloatVector d = FloatVector.broadcast(Q8_FLOATS, ScalarOps.half(src, block));
        ByteVector packed = bytes16(src, block + 2);
        storeScaled(packed.and((byte) 0x0f).sub((byte) 8), d, dst, to);
        storeScaled(packed.lanewise(VectorOperators.LSHR, 4).sub((byte) 8), d, dst, to + 16 * F);
    }

    /** Stores the 16 nibbles {@code q} as {@code d * q - m}, 16 f32 at {@code to}. */
    private static void storeScaledLessMin(ByteVector q, FloatVector d, FloatVector m, MemorySegment dst, long to) {
        for (int part = 0; part < Q8_PARTS; part++) {
            widen(q, part).mul(d).sub(m).intoMemorySegment(dst, to + (long) part * Q8_LANES * F, LE);
        }
    }

    private static void dequantizeQ4_KBlock(MemorySegment src, long block, MemorySegment dst, long to) {
        float d = ScalarOps.half(src, block);
        float dmin = ScalarOps.half(src, block + 2);
        long scales = block + 4;
        long quants = block + 16;
        for (int group = 0; group < 4; group++) {
            FloatVector d1 = FloatVector.broadcast(Q8_FLOATS, d * ScalarOps.q4_KScale(src, scales, 2 * group));
            FloatVector m1 = FloatVector.broadcast(Q8_FLOATS, dmin * ScalarOps.q4_KMin(src, scales, 2 * group));
            FloatVector d2 = FloatVector.broadcast(Q8_FLOATS, d * ScalarOps.q4_KScale(src, scales, 2 * group + 1));
            FloatVector m2 = FloatVector.broadcast(Q8_FLOATS, dmin * ScalarOps.q4_KMin(src, scales, 2 * group + 1));
            long out = to + group * 64 * F;
            for (int sixteen = 0; sixteen < 2; sixteen++) {
                ByteVector packed = bytes16(src, quants + group * 32 + sixteen * 16);
                storeScaledLessMin(packed.and((byte) 0x0f), d1, m1, dst, out + sixteen * 16 * F);
                storeScaledLessMin(packed.lanewise(VectorOperators.LSHR, 4), d2, m2, dst,
                        out + (32 + sixteen * 16) * F);
            }
        }
    }

    private static void dequantizeQ6_KBlock(MemorySegment src, long block, MemorySegment dst, long to) {
        float d = ScalarOps.half(src, block + 208);
        for (int half = 0; half < 2; half++) {
            long ql = block + half * 64;
            long qh = block + 128 + half * 32;
            long sc = block + 192 + half * 8;
            long out = to + half * 128 * F;
            for (int is = 0; is < 2; is++) {
                ByteVector low = bytes16(src, ql + is * 16);
                ByteVector high = bytes16(src, ql + 32 + is * 16);
                ByteVector top = bytes16(src, qh + is * 16);
                ByteVector q1 = low.and((byte) 0x0f).or(top.and((byte) 3).lanewise(VectorOperators.LSHL, 4));
                ByteVector q2 = high.and((byte) 0x0f)
                        .or(top.lanewise(VectorOperators.LSHR, 2).and((byte) 3).lanewise(VectorOperators.LSHL, 4));
                ByteVector q3 = low.lanewise(VectorOperators.LSHR, 4)
                        .or(top.lanewise(VectorOperators.LSHR, 4).and((byte) 3).lanewise(VectorOperators.LSHL, 4));
                ByteVector q4 = high.lanewise(VectorOperators.LSHR, 4)
                        .or(top.lanewise(VectorOperators.LSHR, 6).lanewise(VectorOperators.LSHL, 4));
                long at = out + is * 16 * F;
                storeScaled(q1.sub((byte) 32), q6_KScale(d, src, sc + is), dst, at);
                storeScaled(q2.sub((byte) 32), q6_KScale(d, src, sc + is + 2), dst, at + 32 * F);
                storeScaled(q3.sub((byte) 32), q6_KScale(d, src, sc + is + 4), dst, at + 64 * F);
                storeScaled(q4.sub((byte) 32), q6_KScale(d, src, sc + is + 6), dst, at + 96 * F);
            }
        }
    }

    /** {@code d * sc}, the factor of the q6_K values of the int8 scale at {@code scale}. */
    private static FloatVector q6_KScale(float d, MemorySegment src, long scale) {
        return FloatVector.broadcast(Q8_FLOATS, d * src.get(LittleEndian.I8, scale));
    }

    /** The quantizers run their scalar twins: they run once per checkpoint written, not per token. */
    static void quantize(
            TensorType type, MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long elements) {
        ScalarOps.INSTANCE.quantize(type, src, srcOffset, dst, dstOffset, elements);
    }
}
