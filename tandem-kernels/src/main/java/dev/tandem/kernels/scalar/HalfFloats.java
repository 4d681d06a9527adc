package dev.tandem.kernels.scalar;

/**
 * Scalar conversions between f32 and the two 16-bit float formats of GGUF tensors, written in
 * integer arithmetic so that they are the same on every JVM and in every compilation tier, and so
 * that the vector kernels can compute exactly the same bits lane by lane.
 */
public final class HalfFloats {

    /** The f32 exponent bias minus the f16 exponent bias, in place: {@code (127 - 15) << 23}. */
    public static final int F16_REBIAS = 112 << 23;

    /** {@code 2^-24}, the value of the f16 subnormal unit. */
    public static final float F16_SUBNORMAL_UNIT = 0x1p-24f;

    private HalfFloats() {}

    /**
     * The f32 value of the IEEE 754 binary16 {@code bits}, exactly: normals by moving the exponent
     * and the mantissa, subnormals as {@code mantissa * 2^-24}, infinities as infinities, and a NaN
     * with its payload in the upper mantissa bits and the quiet bit set (what x86's
     * {@code vcvtph2ps} and ggml's conversion produce).
     */
    public static float f16ToF32(short half) {
        int h = half;
        int sign = (h & 0x8000) << 16;
        int exponent = h & 0x7c00;
        int magnitude;
        if (exponent == 0) {
            magnitude = Float.floatToRawIntBits((h & 0x3ff) * F16_SUBNORMAL_UNIT);
        } else {
            magnitude = ((h & 0x7fff) << 13) + F16_REBIAS;
            if (exponent == 0x7c00) {
                magnitude += F16_REBIAS;
                if ((h & 0x3ff) != 0) {
                    magnitude |= 0x0040_0000;
                }
            }
        }
        return Float.intBitsToFloat(sign | magnitude);
    }

    /**
     * {@code value} rounded to the nearest binary16, ties to even: overflow gives an infinity, tiny
     * values a subnormal or a signed zero, and a NaN ggml's quiet NaN {@code 0x7e00} with its sign.
     */
    public static short f32ToF16(float value) {
        if (value != value) {
            return (short) ((Float.floatToRawIntBits(value) >>> 16 & 0x8000) | 0x7e00);
        }
        return Float.floatToFloat16(value);
    }

    /** The f32 value of bfloat16 {@code bits}: they are its upper half. */
    public static float bf16ToF32(short bits) {
        return Float.intBitsToFloat(bits << 16);
    }

    /**
     * {@code value} rounded to bfloat16 as ggml rounds it: to nearest on the upper 16 bits, ties to
     * even, subnormals kept; a NaN keeps its upper 16 bits and gets the quiet bit.
     */
    public static short f32ToBf16(float value) {
        int bits = Float.floatToRawIntBits(value);
        if ((bits & 0x7fff_ffff) > 0x7f80_0000) {
            return (short) ((bits >>> 16) | 0x40);
        }
        return (short) ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16);
    }
}
