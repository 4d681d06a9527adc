package dev.tandem.kernels;

import static dev.tandem.kernels.Tensors.PAD;
import static dev.tandem.kernels.scalar.LittleEndian.F16;
import static dev.tandem.kernels.scalar.LittleEndian.I8;
import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.kernels.scalar.LittleEndian;
import java.lang.foreign.MemorySegment;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Dequantization of one hand-built block of every type, in both implementations, against values worked out by
 * hand from the layout (the arithmetic is in the comments). Every expected value is exact in f32, so the
 * comparison is exact; zeros compare by value, since a zero quant times a negative scale is {@code -0.0}.
 */
class DequantizeTest {

    static Stream<Arguments> implementations() {
        return Stream.of(Arguments.of("scalar", Tensors.SCALAR), Arguments.of("vector", Tensors.VECTOR));
    }

    private static void assertValues(String what, float[] actual, int[] at, float[] expected, float elsewhere) {
        float[] all = new float[actual.length];
        java.util.Arrays.fill(all, elsewhere);
        for (int k = 0; k < at.length; k++) {
            all[at[k]] = expected[k];
        }
        for (int i = 0; i < actual.length; i++) {
            assertThat(actual[i] == all[i] || Float.floatToIntBits(actual[i]) == Float.floatToIntBits(all[i]))
                    .as("%s value %d = %s, expected %s", what, i, actual[i], all[i])
                    .isTrue();
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void f32IsCopied(String name, KernelOps ops) {
        try (Tensors t = new Tensors(1)) {
            float[] values = {1.5f, -0f, Float.NaN, Float.MIN_VALUE, -3e38f};
            float[] out = GgufBlocks.dequantized(t, ops, TensorType.F32, t.f32(values), values.length);
            Tensors.assertIdentical(name + " f32", out, values);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void f16WidensNormalsSubnormalsInfinitiesAndNaNs(String name, KernelOps ops) {
        try (Tensors t = new Tensors(2)) {
            // 17 values, so that the vector kernel's tail runs too when it has 16 lanes.
            int[] halves = {
                0x3c00, // sign 0, exponent 15, mantissa 0: 2^0 = 1
                0xc000, // sign 1, exponent 16: -2
                0x3555, // exponent 13, mantissa 0x155 = 341: 2^-2 * (1 + 341/1024) = 0.333251953125
                0x0001, // subnormal: 1 * 2^-24
                0x03ff, // largest subnormal: 1023 * 2^-24
                0x0400, // smallest normal: 2^-14
                0x7bff, // largest finite: 2^15 * (1 + 1023/1024) = 65504
                0x7c00, // +infinity
                0xfc00, // -infinity
                0x8000, // -0
                0x0000, // +0
                0x7e00, // quiet NaN, mantissa 0x200: f32 bits 0x7f800000 | 0x200 << 13 = 0x7fc00000
                0x7d00, // signalling NaN, mantissa 0x100: 0x7f800000 | 0x100 << 13 = 0x7fa00000, quieted 0x7fe00000
                0xfc01, // negative signalling NaN, mantissa 1: 0xff800000 | 1 << 13 | quiet = 0xffc02000
                0x8001, // -2^-24
                0x5640, // exponent 21, mantissa 0x240 = 576: 2^6 * (1 + 576/1024) = 100
                0xbc01, // -(1 + 1/1024) = -1.0009765625
            };
            MemorySegment src = t.allocate(halves.length * 2L);
            for (int i = 0; i < halves.length; i++) {
                src.set(F16, PAD + i * 2L, (short) halves[i]);
            }
            float[] expected = {
                1f, -2f, 0.333251953125f, 0x1p-24f, 1023 * 0x1p-24f, 0x1p-14f, 65504f, Float.POSITIVE_INFINITY,
                Float.NEGATIVE_INFINITY, -0f, 0f, Float.intBitsToFloat(0x7fc00000), Float.intBitsToFloat(0x7fe00000),
                Float.intBitsToFloat(0xffc02000), -0x1p-24f, 100f, -1.0009765625f
            };
            Tensors.assertIdentical(
                    name + " f16", GgufBlocks.dequantized(t, ops, TensorType.F16, src, halves.length), expected);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void bf16IsTheUpperHalfOfAnF32(String name, KernelOps ops) {
        try (Tensors t = new Tensors(3)) {
            int[] halves = {
                0x3f80, // f32 0x3f800000 = 1
                0xc0a0, // f32 0xc0a00000 = -5
                0x0001, // f32 0x00010000 = 2^16 * 2^-149 = 2^-133, a subnormal
                0x7f80, // +infinity
                0x7fc1, // NaN 0x7fc10000, payload kept
                0x8000, // -0
                0x4049, // f32 0x40490000 = 2 * (1 + 0x490000 / 2^23) = 3.140625
            };
            MemorySegment src = t.allocate(halves.length * 2L);
            for (int i = 0; i < halves.length; i++) {
                src.set(F16, PAD + i * 2L, (short) halves[i]);
            }
            float[] expected = {
                1f, -5f, 0x1p-133f, Float.POSITIVE_INFINITY, Float.intBitsToFloat(0x7fc10000), -0f, 3.140625f
            };
            Tensors.assertIdentical(
                    name + " bf16", GgufBlocks.dequantized(t, ops, TensorType.BF16, src, halves.length), expected);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void q8_0IsSignedBytesTimesTheHalfScale(String name, KernelOps ops) {
        try (Tensors t = new Tensors(4)) {
            MemorySegment src = t.allocate(34);
            src.set(F16, PAD, (short) 0x3800); // d = 2^-1 = 0.5
            src.set(I8, PAD + 2, (byte) -128); // value 0 = -128 * 0.5 = -64
            src.set(I8, PAD + 3, (byte) 127); // value 1 = 63.5
            src.set(I8, PAD + 4, (byte) 3); // value 2 = 1.5
            src.set(I8, PAD + 2 + 31, (byte) -1); // value 31 = -0.5
            float[] out = GgufBlocks.dequantized(t, ops, TensorType.Q8_0, src, 32);
            assertValues(name + " q8_0", out, new int[] {0, 1, 2, 31}, new float[] {-64f, 63.5f, 1.5f, -0.5f}, 0f);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void q4_0LowNibblesAreTheFirstHalfAndHighNibblesTheSecond(String name, KernelOps ops) {
        try (Tensors t = new Tensors(5)) {
            int[] block = new int[18];
            block[0] = 0x00; // d = f16 0xbe00 = -(1 + 512/1024) = -1.5, little-endian
            block[1] = 0xbe;
            java.util.Arrays.fill(block, 2, 18, 0x88); // nibbles 8 and 8: (8 - 8) * d = 0
            block[2] = 0x00; // value 0: (0 - 8) * -1.5 = 12; value 16: 12
            block[3] = 0xf8; // value 1: low 8 -> 0; value 17: high 15 -> 7 * -1.5 = -10.5
            block[4] = 0x3a; // value 2: low 10 -> 2 * -1.5 = -3; value 18: high 3 -> -5 * -1.5 = 7.5
            block[17] = 0x1f; // value 15: low 15 -> -10.5; value 31: high 1 -> -7 * -1.5 = 10.5
            float[] out = GgufBlocks.dequantized(t, ops, TensorType.Q4_0, GgufBlocks.bytes(t, block), 32);
            assertValues(
                    name + " q4_0",
                    out,
                    new int[] {0, 16, 1, 17, 2, 18, 15, 31},
                    new float[] {12f, 12f, 0f, -10.5f, -3f, 7.5f, -10.5f, 10.5f},
                    0f);
        }
    }

    /**
     * q5_0: d = -1.5; the fifth bit of value {@code j} is bit {@code j} of the little-endian
     * {@code qh}, above the nibble; a 5-bit {@code q} means {@code (q - 16) * d}.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void q5_0JoinsNibblesWithTheirFifthBits(String name, KernelOps ops) {
        try (Tensors t = new Tensors(7)) {
            int[] block = new int[22];
            block[0] = 0x00; // d = f16 0xbe00 = -1.5, little-endian
            block[1] = 0xbe;
            // qh: bits 1, 16 and 31 set, little-endian
            block[2] = 0x02; // bit 1: value 1
            block[3] = 0x00;
            block[4] = 0x01; // bit 16: value 16
            block[5] = 0x80; // bit 31: value 31
            // every other nibble 0 without its fifth bit: (0 - 16) * -1.5 = 24
            block[6] = 0x05; // value 0: low 5, bit 0 clear -> (5 - 16) * -1.5 = 16.5; value 16: high 0, bit set -> 16 -> 0
            block[7] = 0xf3; // value 1: low 3 | 16 = 19 -> 3 * -1.5 = -4.5; value 17: high 15 -> (15 - 16) * -1.5 = 1.5
            block[21] = 0xf0; // value 15: low 0 -> 24; value 31: high 15 | 16 = 31 -> 15 * -1.5 = -22.5
            float[] out = GgufBlocks.dequantized(t, ops, TensorType.Q5_0, GgufBlocks.bytes(t, block), 32);
            assertValues(
                    name + " q5_0",
                    out,
                    new int[] {0, 16, 1, 17, 15, 31},
                    new float[] {16.5f, 0f, -4.5f, 1.5f, 24f, -22.5f},
                    24f);
        }
    }

    /**
     * q4_1 and q5_1: d = 0.5, m = -3; a quant {@code q} means {@code q * 0.5 - 3}; q5_1's fifth bit of
     * value {@code j} is bit {@code j} of {@code qh}.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void q4_1AndQ5_1AddTheMinToTheScaledQuants(String name, KernelOps ops) {
        try (Tensors t = new Tensors(9)) {
            int[] q41 = new int[20];
            q41[1] = 0x38; // d = 0.5
            q41[3] = 0xc2; // m = f16 0xc200 = -3
            q41[4] = 0xf3; // value 0: 3 -> -1.5; value 16: 15 -> 4.5
            q41[19] = 0x0a; // value 15: 10 -> 2; value 31: 0 -> -3
            float[] out = GgufBlocks.dequantized(t, ops, TensorType.Q4_1, GgufBlocks.bytes(t, q41), 32);
            assertValues(name + " q4_1", out, new int[] {0, 16, 15, 31}, new float[] {-1.5f, 4.5f, 2f, -3f}, -3f);
            int[] q51 = new int[24];
            q51[1] = 0x38;
            q51[3] = 0xc2;
            q51[4] = 0x01; // qh bit 0: value 0
            q51[7] = 0x80; // qh bit 31: value 31
            q51[8] = 0xf3; // value 0: 3 | 16 = 19 -> 6.5; value 16: 15 -> 4.5
            q51[23] = 0xfa; // value 15: 10 -> 2; value 31: 15 | 16 = 31 -> 12.5
            out = GgufBlocks.dequantized(t, ops, TensorType.Q5_1, GgufBlocks.bytes(t, q51), 32);
            assertValues(name + " q5_1", out, new int[] {0, 16, 15, 31}, new float[] {6.5f, 4.5f, 2f, 12.5f}, -3f);
        }
    }

    /**
     * iq4_nl: d = 0.5, a nibble {@code n} means {@code 0.5 * kvalues[n]}; iq4_xs: d = 0.25 and
     * sub-block {@code ib}'s scale {@code d * (ls - 32)}, its 6-bit {@code ls} from a nibble of
     * {@code scales_l} and two bits of {@code scales_h}.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void iq4TypesLookUpTheNonLinearTable(String name, KernelOps ops) {
        try (Tensors t = new Tensors(10)) {
            int[] nl = new int[18];
            nl[1] = 0x38; // d = 0.5
            java.util.Arrays.fill(nl, 2, 18, 0x88); // nibbles 8: kvalues[8] = 1 -> 0.5
            nl[2] = 0xf0; // value 0: kvalues[0] = -127 -> -63.5; value 16: kvalues[15] = 113 -> 56.5
            nl[17] = 0x37; // value 15: kvalues[7] = -10 -> -5; value 31: kvalues[3] = -65 -> -32.5
            float[] out = GgufBlocks.dequantized(t, ops, TensorType.IQ4_NL, GgufBlocks.bytes(t, nl), 32);
            assertValues(name + " iq4_nl", out, new int[] {0, 16, 15, 31}, new float[] {-63.5f, 56.5f, -5f, -32.5f},
                    0.5f);
            int[] xs = new int[136];
            xs[1] = 0x34; // d = 0.25
            // sub-block 0: ls = 0x1 | 0b10 << 4 = 33 -> scale 0.25; sub-block 7: ls = 0xf | 0b11 << 4 = 63 -> 7.75
            // every other sub-block: ls = 0 | 0 -> -32 * 0.25 = -8
            xs[2] = 0x02; // scales_h bits 0-1 = 2 (sub-block 0)
            xs[3] = 0xc0; // scales_h bits 14-15 = 3 (sub-block 7)
            xs[4] = 0x01; // scales_l[0] low nibble: sub-block 0
            xs[7] = 0xf0; // scales_l[3] high nibble: sub-block 7
            java.util.Arrays.fill(xs, 8, 136, 0x88); // kvalues[8] = 1
            xs[8] = 0x0f; // sub-block 0 value 0: 113 * 0.25 = 28.25; value 16: -127 * 0.25 = -31.75
            xs[8 + 16 * 7 + 15] = 0xe8; // sub-block 7 value 15: 1 * 7.75; value 31: 89 * 7.75 = 689.75
            out = GgufBlocks.dequantized(t, ops, TensorType.IQ4_XS, GgufBlocks.bytes(t, xs), 256);
            float[] expected = new float[256];
            for (int i = 0; i < 256; i++) {
                expected[i] = i < 32 ? 0.25f : i >= 224 ? 7.75f : -8f;
            }
            expected[0] = 28.25f;
            expected[16] = -31.75f;
            expected[224 + 31] = 689.75f;
            for (int i = 0; i < 256; i++) {
                assertThat(out[i]).as("%s iq4_xs value %d", name, i).isEqualTo(expected[i]);
            }
        }
    }

    /**
     * q2_K: d = 0.5, dmin = 0.25, sub-block {@code is} at values {@code 128n + 32j + 16h + l} with
     * bits {@code 2j, 2j + 1} of quant byte {@code 32n + 16h + l}; q3_K: d = 0.5, sub-block scales
     * from llama.cpp's packing, a value {@code q - 4} plus 4 where its mask bit is set.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void q2_KAndQ3_KTakeTwoBitsPerValueAndTheirSubBlockScales(String name, KernelOps ops) {
        try (Tensors t = new Tensors(11)) {
            int[] q2 = new int[84];
            q2[81] = 0x38; // d = 0.5
            q2[83] = 0x34; // dmin = 0.25
            java.util.Arrays.fill(q2, 0, 16, 0x42); // every sub-block: scale 2 -> 1.0, min 4 -> 1.0: q - 1
            q2[15] = 0x1f; // sub-block 15 (n 1, j 3, h 1): scale 15 -> 7.5, min 1 -> 0.25
            q2[16] = 0xc3; // byte 0: values 0 (bits 0-1 = 3 -> 2) and 96 (bits 6-7 = 3 -> 2), 32 and 64 -> -1
            q2[16 + 63] = 0x80; // byte 63 (n 1, h 1, l 15): value 128 + 96 + 16 + 15 = 255: 2 * 7.5 - 0.25
            float[] out = GgufBlocks.dequantized(t, ops, TensorType.Q2_K, GgufBlocks.bytes(t, q2), 256);
            float[] expected = new float[256];
            java.util.Arrays.fill(expected, -1f);
            java.util.Arrays.fill(expected, 240, 256, -0.25f); // sub-block 15: 0 * 7.5 - 0.25
            expected[0] = 2f;
            expected[96] = 2f;
            expected[255] = 14.75f;
            for (int i = 0; i < 256; i++) {
                assertThat(out[i]).as("%s q2_K value %d", name, i).isEqualTo(expected[i]);
            }
            int[] q3 = new int[110];
            q3[109] = 0x38; // d = 0.5
            // scales: bytes 0-7 low nibbles (is 0-7) and high nibbles (is 8-15), bytes 8-11 two high bits each
            java.util.Arrays.fill(q3, 96, 104, 0x00);
            java.util.Arrays.fill(q3, 104, 108, 0xaa); // high bits 2 for every is: s = 32 + low -> s - 32 = low
            q3[96] = 0x31; // is 0: low 1 -> scale 1 -> 0.5; is 8: low 3 -> 1.5
            q3[96 + 7] = 0xf0; // is 7: 0; is 15: 15 -> 7.5
            q3[32] = 0x01; // quant byte 0: value 0 (j 0) q = 1
            q3[0] = 0x01; // mask byte 0 bit 0 (n 0, j 0): value 0 gets + 4 -> 1 - 4 + 4 = 1 -> 0.5
            q3[32 + 32 + 16 + 15] = 0xc0; // byte 63: value 255 (n 1, j 3, h 1) q = 3, mask clear: -1 * 7.5
            out = GgufBlocks.dequantized(t, ops, TensorType.Q3_K, GgufBlocks.bytes(t, q3), 256);
            for (int i = 0; i < 256; i++) {
                int is = 8 * (i / 128) + 2 * ((i % 128) / 32) + (i % 32) / 16;
                float scale = is == 0 ? 0.5f : is == 8 ? 1.5f : is == 15 ? 7.5f : 0f;
                float value = i == 0 ? 0.5f : i == 255 ? -7.5f : -4f * scale;
                assertThat(out[i] == value).as("%s q3_K value %d = %s, expected %s", name, i, out[i], value).isTrue();
            }
        }
    }

    /**
     * q5_K: d = 0.5, dmin = 0.25, every sub-block's scale 2 and min 4 (scale bytes 0-3 = 2, 4-7 = 4,
     * 8-11 = 0x42: low nibble scale 2, high nibble min 4), so a 5-bit {@code q} means
     * {@code 1 * q - 1}; the fifth bit of sub-block {@code t} at position {@code l} is bit {@code t}
     * of {@code qh[l]}.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void q5_KJoinsNibblesWithTheirFifthBitsPerSubBlock(String name, KernelOps ops) {
        try (Tensors t = new Tensors(8)) {
            int[] block = new int[176];
            block[1] = 0x38; // d = f16 0x3800 = 0.5
            block[3] = 0x34; // dmin = f16 0x3400 = 0.25
            for (int i = 0; i < 4; i++) {
                block[4 + i] = 2;
                block[8 + i] = 4;
                block[12 + i] = 0x42;
            }
            block[16] = 0x01; // qh[0] bit 0: sub-block 0, value 0
            block[16 + 5] = 0x80; // qh[5] bit 7: sub-block 7, value 7 * 32 + 5 = 229
            block[16 + 31] = 0x0c; // qh[31] bits 2 and 3: values 2 * 32 + 31 = 95 and 127
            block[48] = 0x3a; // nibbles of values 0 (low 10) and 32 (high 3)
            block[48 + 96 + 5] = 0xf0; // values 6 * 32 + 5 = 197 (low 0) and 229 (high 15)
            block[48 + 32 + 31] = 0x21; // values 95 (low 1) and 127 (high 2)
            float[] out = GgufBlocks.dequantized(t, ops, TensorType.Q5_K, GgufBlocks.bytes(t, block), 256);
            assertValues(
                    name + " q5_K",
                    out,
                    // 0: 10 | 16 = 26 -> 25; 32: 3 -> 2; 229: 15 | 16 = 31 -> 30; 95: 1 | 16 = 17 -> 16;
                    // 127: 2 | 16 = 18 -> 17; every other value q = 0 -> -1
                    new int[] {0, 32, 229, 95, 127},
                    new float[] {25f, 2f, 30f, 16f, 17f},
                    -1f);
        }
    }

    /**
     * d = 0.5, dmin = 0.25; sub-block scales {1, 2, 3, 4, 63, 17, 33, 48} and mins {0, 5, 10, 63, 1, 34, 20, 47},
     * packed into the 12 bytes by hand.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void q4_KUnpacksSixBitScalesAndMinsAndNibbleGroups(String name, KernelOps ops) {
        try (Tensors t = new Tensors(6)) {
            int[] block = new int[144];
            block[0] = 0x00; // d = f16 0x3800 = 0.5
            block[1] = 0x38;
            block[2] = 0x00; // dmin = f16 0x3400 = 0.25
            block[3] = 0x34;
            // Bytes 0-3 of the scales: scale i in the low 6 bits, the top 2 bits of scale i + 4 above them.
            // scale 4 = 63 = 0b11_1111, scale 5 = 17 = 0b01_0001, scale 6 = 33 = 0b10_0001, scale 7 = 48 = 0b11_0000.
            block[4] = 1 | 3 << 6; // 0xc1
            block[5] = 2 | 1 << 6; // 0x42
            block[6] = 3 | 2 << 6; // 0x83
            block[7] = 4 | 3 << 6; // 0xc4
            // Bytes 4-7: min i in the low 6 bits, the top 2 bits of min i + 4 above them.
            // min 4 = 1 = 0b00_0001, min 5 = 34 = 0b10_0010, min 6 = 20 = 0b01_0100, min 7 = 47 = 0b10_1111.
            block[8] = 0; // 0x00
            block[9] = 5 | 2 << 6; // 0x85
            block[10] = 10 | 1 << 6; // 0x4a
            block[11] = 63 | 2 << 6; // 0xbf
            // Bytes 8-11: the low 4 bits of scale i + 4, then the low 4 bits of min i + 4.
            block[12] = 15 | 1 << 4; // 0x1f
            block[13] = 1 | 2 << 4; // 0x21
            block[14] = 1 | 4 << 4; // 0x41
            block[15] = 0 | 15 << 4; // 0xf0
            // Nibbles: byte 32g + l holds value 64g + l (low) and value 64g + 32 + l (high). All zero but:
            block[16] = 0x2f; // value 0: 0.5*1*15 - 0.25*0 = 7.5; value 32: 0.5*2*2 - 0.25*5 = 0.75
            block[16 + 31] = 0x91; // value 31: 0.5*1*1 - 0 = 0.5; value 63: 0.5*2*9 - 1.25 = 7.75
            block[16 + 32] = 0xa7; // value 64: 0.5*3*7 - 0.25*10 = 8; value 96: 0.5*4*10 - 0.25*63 = 4.25
            block[16 + 64] = 0x5c; // value 128: 0.5*63*12 - 0.25*1 = 377.75; value 160: 0.5*17*5 - 0.25*34 = 34
            block[16 + 127] = 0xff; // value 223: 0.5*33*15 - 0.25*20 = 242.5; value 255: 0.5*48*15 - 0.25*47 = 348.25
            float[] out = GgufBlocks.dequantized(t, ops, TensorType.Q4_K, GgufBlocks.bytes(t, block), 256);
            int[] at = {0, 32, 31, 63, 64, 96, 128, 160, 223, 255};
            float[] expected = {7.5f, 0.75f, 0.5f, 7.75f, 8f, 4.25f, 377.75f, 34f, 242.5f, 348.25f};
            // A zero nibble is -dmin * min of its sub-block of 32: -0.25 * {0, 5, 10, 63, 1, 34, 20, 47}.
            float[] zeroNibble = {-0f, -1.25f, -2.5f, -15.75f, -0.25f, -8.5f, -5f, -11.75f};
            for (int i = 0; i < 256; i++) {
                float want = zeroNibble[i / 32];
                for (int k = 0; k < at.length; k++) {
                    if (at[k] == i) {
                        want = expected[k];
                    }
                }
                assertThat(out[i] == want).as("%s q4_K value %d = %s, expected %s", name, i, out[i], want).isTrue();
            }
        }
    }

    /** d = 0.5; scales {1, -2, 3, -4, ..., 15, -16}; every 6-bit quant is 32 (value 0) but the ones set below. */
    static int[] handBuiltQ6_KBlock() {
        int[] block = new int[210];
        // ql (bytes 0-127) all 0 and qh (128-191) all 0b10_10_10_10: every quant is 0 | 2 << 4 = 32.
        java.util.Arrays.fill(block, 128, 192, 0xaa);
        for (int k = 0; k < 16; k++) {
            block[192 + k] = (k % 2 == 0 ? k + 1 : -(k + 1)) & 0xff; // scale k
        }
        block[208] = 0x00; // d = f16 0x3800 = 0.5
        block[209] = 0x38;
        // Half 0, l = 0 (scale index l/16 = 0): values 0, 32, 64, 96 use scales 0, 2, 4, 6 = 1, 3, 5, 7.
        block[0] = 0x3f; // ql[0]: low 15 for value 0, high 3 for value 64
        block[128] = 3 | 2 << 2 | 0 << 4 | 1 << 6; // qh[0]: top bits 3, 2, 0, 1 for values 0, 32, 64, 96
        // value 0: 15 | 3 << 4 = 63 -> 31: 0.5*1*31 = 15.5; value 32: 0 | 2 << 4 = 32 -> 0
        // value 64: 3 | 0 << 4 = 3 -> -29: 0.5*5*-29 = -72.5; value 96: 0 | 1 << 4 = 16 -> -16: 0.5*7*-16 = -56
        // Half 0, l = 17 (scale index 1): values 17, 49, 81, 113 use scales 1, 3, 5, 7 = -2, -4, -6, -8.
        block[32 + 17] = 0xa5; // ql[49]: low 5 for value 49, high 10 for value 113
        block[128 + 17] = 2 | 1 << 2 | 2 << 4 | 3 << 6; // qh[17]
        // value 49: 5 | 1 << 4 = 21 -> -11: 0.5*-4*-11 = 22; value 113: 10 | 3 << 4 = 58 -> 26: 0.5*-8*26 = -104
        // Half 1 (ql from 64, qh from 160, scales from 8), l = 31 (scale index 1): values 159, 191, 223, 255
        // use scales 9, 11, 13, 15 = -10, -12, -14, -16.
        block[64 + 31] = 0xf0; // ql: low 0 for value 159, high 15 for value 223
        block[64 + 63] = 0x0f; // ql: low 15 for value 191, high 0 for value 255
        block[160 + 31] = 0 | 3 << 2 | 3 << 4 | 0 << 6; // qh
        // value 159: 0 -> -32: 0.5*-10*-32 = 160; value 191: 15 | 3 << 4 = 63 -> 31: 0.5*-12*31 = -186
        // value 223: 63 -> 31: 0.5*-14*31 = -217; value 255: 0 -> -32: 0.5*-16*-32 = 256
        return block;
    }

    /** The values of {@link #handBuiltQ6_KBlock} worked out by hand, at {@link #Q6_K_HAND_INDEXES}; all others are 0. */
    static final int[] Q6_K_HAND_INDEXES = {0, 32, 64, 96, 49, 113, 159, 191, 223, 255};

    static final float[] Q6_K_HAND_VALUES = {15.5f, 0f, -72.5f, -56f, 22f, -104f, 160f, -186f, -217f, 256f};

    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void q6_KJoinsLowNibblesAndHighBitPairs(String name, KernelOps ops) {
        try (Tensors t = new Tensors(7)) {
            float[] out = GgufBlocks.dequantized(t, ops, TensorType.Q6_K, GgufBlocks.bytes(t, handBuiltQ6_KBlock()), 256);
            assertValues(name + " q6_K", out, Q6_K_HAND_INDEXES, Q6_K_HAND_VALUES, 0f);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void blocksFollowEachOtherAndOffsetsAreHonoured(String name, KernelOps ops) {
        try (Tensors t = new Tensors(8)) {
            // Two q4_0 blocks: d = 1 (0x3c00) with all nibbles 9 (value 1), d = 2 (0x4000) with all nibbles 7 (-2).
            int[] blocks = new int[36];
            blocks[1] = 0x3c;
            java.util.Arrays.fill(blocks, 2, 18, 0x99);
            blocks[19] = 0x40;
            java.util.Arrays.fill(blocks, 20, 36, 0x77);
            MemorySegment src = GgufBlocks.bytes(t, blocks);
            MemorySegment dst = t.allocate(64 * 4 + 4);
            ops.dequantize(TensorType.Q4_0, src, PAD, dst, PAD + 4, 64);
            float[] out = Tensors.read(dst, PAD + 4, 64);
            for (int i = 0; i < 64; i++) {
                assertThat(out[i]).as("%s value %d", name, i).isEqualTo(i < 32 ? 1f : -2f);
            }
            assertThat(dst.get(LittleEndian.F32, PAD)).as("the float before dstOffset is untouched").isZero();
        }
    }
}
