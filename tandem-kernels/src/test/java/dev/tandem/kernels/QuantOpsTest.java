package dev.tandem.kernels;

import static dev.tandem.kernels.Tensors.PAD;
import static dev.tandem.kernels.Tensors.SCALAR;
import static dev.tandem.kernels.Tensors.VECTOR;
import static dev.tandem.kernels.scalar.LittleEndian.F16;
import static dev.tandem.kernels.scalar.LittleEndian.F32;
import static dev.tandem.kernels.scalar.LittleEndian.I8;
import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.kernels.scalar.HalfFloats;
import dev.tandem.kernels.scalar.LittleEndian;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.FloatRange;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/** Vector against scalar dequantization, and the quantizers: round trips, rounding and special values. */
class QuantOpsTest {

    /** Every type at lengths around the vector widths (float types) and at 1 to 17 blocks (block types). */
    static List<Arguments> typesAndLengths() {
        List<Arguments> arguments = new ArrayList<>();
        for (TensorType type : TensorType.values()) {
            if (!type.inFiles()) {
                continue; // Q4_0_X16 is a layout of whole matrices: Q4_0X16Test
            }
            int[] counts = type.isQuantized() ? new int[] {1, 2, 3, 7, 17} : new int[] {1, 3, 4, 7, 8, 15, 16, 17, 31,
                33, 127, 4096};
            for (int count : counts) {
                arguments.add(Arguments.of(type, count * type.blockSize()));
            }
        }
        return arguments;
    }

    /** Bitwise: both compute the same integer unpacking and the same f32 operations in the same order. */
    @ParameterizedTest(name = "{0}, {1} values")
    @MethodSource("typesAndLengths")
    void vectorDequantizationIsIdenticalToScalar(TensorType type, int elements) {
        try (Tensors t = new Tensors(elements * 31L + type.ordinal())) {
            for (int round = 0; round < 3; round++) {
                MemorySegment src = GgufBlocks.random(t, type, elements);
                float[] scalar = GgufBlocks.dequantized(t, SCALAR, type, src, elements);
                float[] vector = GgufBlocks.dequantized(t, VECTOR, type, src, elements);
                Tensors.assertIdentical("vector " + type + ", " + elements + " values", vector, scalar);
            }
        }
    }

    /**
     * Every one of the 65536 f16 bit patterns, in both implementations: the widening is exactly
     * {@link Float#float16ToFloat} for every non-NaN, and a NaN keeps its payload with the quiet bit set.
     */
    @Test
    void everyF16BitPatternWidensExactly() {
        try (Tensors t = new Tensors(9)) {
            MemorySegment src = t.allocate(65536 * 2);
            for (int h = 0; h < 65536; h++) {
                src.set(F16, PAD + h * 2L, (short) h);
            }
            for (KernelOps ops : new KernelOps[] {SCALAR, VECTOR}) {
                float[] out = GgufBlocks.dequantized(t, ops, TensorType.F16, src, 65536);
                for (int h = 0; h < 65536; h++) {
                    float reference = Float.float16ToFloat((short) h);
                    int bits = Float.floatToRawIntBits(out[h]);
                    if (Float.isNaN(reference)) {
                        int expected = (h & 0x8000) << 16 | 0x7fc0_0000 | (h & 0x3ff) << 13;
                        assertThat(bits).as("%s f16 NaN 0x%04x", ops.name(), h).isEqualTo(expected);
                    } else {
                        assertThat(bits)
                                .as("%s f16 0x%04x", ops.name(), h)
                                .isEqualTo(Float.floatToRawIntBits(reference));
                    }
                }
            }
        }
    }

    // ---- quantizers ----

    private static MemorySegment quantized(Tensors t, KernelOps ops, TensorType type, float[] values) {
        MemorySegment dst = t.allocate(type.bytes(values.length));
        ops.quantize(type, t.f32(values), PAD, dst, PAD, values.length);
        return dst;
    }

    private static short[] halves(MemorySegment segment, int n) {
        short[] result = new short[n];
        for (int i = 0; i < n; i++) {
            result[i] = segment.get(F16, PAD + i * 2L);
        }
        return result;
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"scalar", "vector"})
    void f16RoundsToNearestEvenAndKeepsSpecials(String name) {
        KernelOps ops = name.equals("scalar") ? SCALAR : VECTOR;
        try (Tensors t = new Tensors(10)) {
            float[] values = {
                0f, -0f, 1f, -2f,
                1f + 0x1p-11f, // halfway between 1 (0x3c00, even) and 1 + 2^-10 (0x3c01): to 0x3c00
                1f + 3 * 0x1p-11f, // halfway between 0x3c01 and 0x3c02 (even): to 0x3c02
                1f + 0x1p-11f + 0x1p-20f, // just above halfway: up to 0x3c01
                0x1p-24f, // smallest subnormal: 0x0001
                0x1p-25f, // halfway between 0 (even) and 0x0001: to 0
                3 * 0x1p-25f, // halfway between 0x0001 and 0x0002 (even): to 0x0002
                0x1p-26f, // below half the smallest subnormal: 0
                -1023 * 0x1p-24f, // largest subnormal, negative: 0x83ff
                65504f, // largest finite: 0x7bff
                65519.996f, // below halfway to 65536: 0x7bff
                65520f, // halfway between 0x7bff (odd) and 2^16 (infinity, even): to 0x7c00
                1e10f, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY,
                Float.NaN, // ggml's quiet NaN 0x7e00
                Float.intBitsToFloat(0xffa0_0001), // a negative signalling NaN: 0xfe00
            };
            int[] expected = {
                0x0000, 0x8000, 0x3c00, 0xc000, 0x3c00, 0x3c02, 0x3c01, 0x0001, 0x0000, 0x0002, 0x0000, 0x83ff, 0x7bff,
                0x7bff, 0x7c00, 0x7c00, 0x7c00, 0xfc00, 0x7e00, 0xfe00
            };
            short[] actual = halves(quantized(t, ops, TensorType.F16, values), values.length);
            for (int i = 0; i < values.length; i++) {
                assertThat(actual[i] & 0xffff)
                        .as("f16 of %s (0x%08x)", values[i], Float.floatToRawIntBits(values[i]))
                        .isEqualTo(expected[i]);
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"scalar", "vector"})
    void bf16RoundsToNearestEvenLikeGgml(String name) {
        KernelOps ops = name.equals("scalar") ? SCALAR : VECTOR;
        try (Tensors t = new Tensors(11)) {
            int[] bits = {
                0x3f80_0000, // 1: 0x3f80
                0x3f80_8000, // halfway between 0x3f80 (even) and 0x3f81: 0x3f80
                0x3f81_8000, // halfway between 0x3f81 and 0x3f82 (even): 0x3f82
                0x3f80_8001, // just above halfway: 0x3f81
                0x3f80_7fff, // just below halfway: 0x3f80
                0x7f7f_ffff, // largest finite f32 rounds up to infinity: 0x7f80
                0x0000_0001, // smallest subnormal, kept as a subnormal and rounded: 0x0000
                0x0001_8000, // a subnormal halfway between 0x0001 and 0x0002 (even): 0x0002
                0x8000_0000, // -0: 0x8000
                0x7f80_0000, // infinity: 0x7f80
                0xff80_0000, // -infinity: 0xff80
                0x7fa0_0001, // a signalling NaN keeps its upper bits and becomes quiet: 0x7fe0
                0xffc0_0000, // -NaN: 0xffc0
            };
            int[] expected = {
                0x3f80, 0x3f80, 0x3f82, 0x3f81, 0x3f80, 0x7f80, 0x0000, 0x0002, 0x8000, 0x7f80, 0xff80, 0x7fe0, 0xffc0
            };
            float[] values = new float[bits.length];
            for (int i = 0; i < bits.length; i++) {
                values[i] = Float.intBitsToFloat(bits[i]);
            }
            short[] actual = halves(quantized(t, ops, TensorType.BF16, values), values.length);
            for (int i = 0; i < values.length; i++) {
                assertThat(actual[i] & 0xffff).as("bf16 of 0x%08x", bits[i]).isEqualTo(expected[i]);
            }
        }
    }

    /** Normal f16 values round-trip within half an f16 ulp, {@code 2^-11} of the value; bf16 within {@code 2^-8}. */
    @Property(tries = 100)
    void f16AndBf16RoundTripWithinHalfAnUlp(@ForAll long seed, @ForAll @IntRange(min = 1, max = 300) int n) {
        try (Tensors t = new Tensors(seed)) {
            float[] values = new float[n];
            for (int i = 0; i < n; i++) {
                float magnitude = (float) Math.pow(2, -14 + t.random.nextDouble() * 29); // 2^-14 to 2^15
                values[i] = t.random.nextBoolean() ? magnitude : -magnitude;
            }
            for (KernelOps ops : new KernelOps[] {SCALAR, VECTOR}) {
                float[] f16 = GgufBlocks.dequantized(t, ops, TensorType.F16, quantized(t, ops, TensorType.F16, values), n);
                float[] bf16 =
                        GgufBlocks.dequantized(t, ops, TensorType.BF16, quantized(t, ops, TensorType.BF16, values), n);
                Tensors.assertWithin(ops.name() + " f16 round trip", f16, values, Tensors.abs(values), 0x1p-11f);
                Tensors.assertWithin(ops.name() + " bf16 round trip", bf16, values, Tensors.abs(values), 0x1p-8f);
            }
        }
    }

    @Test
    void q8_0QuantizerWritesTheBytesOfQ8_0Quantize() {
        try (Tensors t = new Tensors(12)) {
            float[] values = t.uniform(32 * 5, -3f, 3f);
            MemorySegment expected = t.q8(values, 1, values.length);
            for (KernelOps ops : new KernelOps[] {SCALAR, VECTOR}) {
                MemorySegment actual = quantized(t, ops, TensorType.Q8_0, values);
                assertThat(actual.asSlice(PAD).mismatch(expected.asSlice(PAD))).as(ops.name()).isEqualTo(-1L);
            }
        }
    }

    /**
     * One q4_0 block by hand: the largest magnitude is -4 (at index 3), so d = -4 / -8 = 0.5 and 1 / d = 2; each
     * nibble is min(15, (int) (2x + 8.5)).
     */
    @Test
    void q4_0QuantizerUsesTheSignedMaximumAndTruncatesAfterAddingEightAndAHalf() {
        try (Tensors t = new Tensors(13)) {
            float[] values = new float[32];
            values[0] = 1f; // 2 + 8.5 = 10.5 -> 10
            values[1] = 0.74f; // 1.48 + 8.5 = 9.98 -> 9
            values[2] = 0.75f; // 1.5 + 8.5 = 10 -> 10
            values[3] = -4f; // -8 + 8.5 = 0.5 -> 0
            values[4] = 4f; // 8 + 8.5 = 16.5 -> 16 -> min(15) = 15
            values[16] = -0.3f; // -0.6 + 8.5 = 7.9 -> 7
            values[17] = 3.5f; // 7 + 8.5 = 15.5 -> 15
            // every other value 0: 8.5 -> 8
            MemorySegment q = quantized(t, SCALAR, TensorType.Q4_0, values);
            assertThat(q.get(F16, PAD)).as("d").isEqualTo((short) 0x3800);
            assertThat(q.get(I8, PAD + 2) & 0xff).as("byte 0: values 0 and 16").isEqualTo(10 | 7 << 4);
            assertThat(q.get(I8, PAD + 3) & 0xff).as("byte 1: values 1 and 17").isEqualTo(9 | 15 << 4);
            assertThat(q.get(I8, PAD + 4) & 0xff).as("byte 2: values 2 and 18").isEqualTo(10 | 8 << 4);
            assertThat(q.get(I8, PAD + 5) & 0xff).as("byte 3: values 3 and 19").isEqualTo(0 | 8 << 4);
            assertThat(q.get(I8, PAD + 6) & 0xff).as("byte 4: values 4 and 20").isEqualTo(15 | 8 << 4);
            assertThat(q.get(I8, PAD + 17) & 0xff).as("byte 15: values 15 and 31").isEqualTo(0x88);

            MemorySegment zero = quantized(t, SCALAR, TensorType.Q4_0, new float[32]);
            // max = 0, so d = 0 / -8 = -0: f16 0x8000, as ggml writes it.
            assertThat(zero.get(F16, PAD) & 0xffff).as("d of a zero block").isEqualTo(0x8000);
            assertThat(zero.get(I8, PAD + 2) & 0xff).as("nibbles of a zero block").isEqualTo(0x88);
        }
    }

    /**
     * One q5_0 block by hand, as llama.cpp's {@code quantize_row_q5_0_ref}: the largest magnitude is
     * -8 (at index 3), so d = -8 / -16 = 0.5 and 1 / d = 2; each 5-bit quant is
     * min(31, (int) (2x + 16.5)), its low four bits a nibble and its fifth bit in {@code qh}.
     */
    @Test
    void q5_0QuantizerUsesTheSignedMaximumAndPutsTheFifthBitsInQh() {
        try (Tensors t = new Tensors(14)) {
            float[] values = new float[32];
            values[0] = 1f; // 2 + 16.5 = 18.5 -> 18 = 0b10010: nibble 2, fifth bit 1
            values[1] = -1.3f; // -2.6 + 16.5 = 13.9 -> 13: nibble 13, fifth bit 0
            values[3] = -8f; // -16 + 16.5 = 0.5 -> 0
            values[4] = 8f; // 16 + 16.5 = 32.5 -> 32 -> min(31) = 31: nibble 15, fifth bit 1
            values[16] = -0.3f; // -0.6 + 16.5 = 15.9 -> 15: nibble 15, fifth bit 0
            values[17] = 7.6f; // 15.2 + 16.5 = 31.7 -> 31: nibble 15, fifth bit 1
            // every other value 0: 16.5 -> 16: nibble 0, fifth bit 1
            MemorySegment q = quantized(t, SCALAR, TensorType.Q5_0, values);
            assertThat(q.get(F16, PAD)).as("d").isEqualTo((short) 0x3800);
            // fifth bits: every value but 1, 3 and 16 has one
            int qh = ~(1 << 1 | 1 << 3 | 1 << 16);
            assertThat(q.get(LittleEndian.I32, PAD + 2)).as("qh").isEqualTo(qh);
            assertThat(q.get(I8, PAD + 6) & 0xff).as("byte 0: values 0 and 16").isEqualTo(2 | 15 << 4);
            assertThat(q.get(I8, PAD + 7) & 0xff).as("byte 1: values 1 and 17").isEqualTo(13 | 15 << 4);
            assertThat(q.get(I8, PAD + 9) & 0xff).as("byte 3: values 3 and 19").isEqualTo(0);
            assertThat(q.get(I8, PAD + 10) & 0xff).as("byte 4: values 4 and 20").isEqualTo(15);
            assertThat(q.get(I8, PAD + 21) & 0xff).as("byte 15: values 15 and 31").isEqualTo(0);
            float[] back = GgufBlocks.dequantized(t, SCALAR, TensorType.Q5_0, q, 32);
            assertThat(back[0]).isEqualTo(1f);
            assertThat(back[1]).isEqualTo(-1.5f);
            assertThat(back[3]).isEqualTo(-8f);
            assertThat(back[4]).isEqualTo(7.5f);
            assertThat(back[17]).isEqualTo(7.5f);

            MemorySegment zero = quantized(t, SCALAR, TensorType.Q5_0, new float[32]);
            // max = 0, so d = 0 / -16 = -0, and every quant 16: nibbles 0, every fifth bit set.
            assertThat(zero.get(F16, PAD) & 0xffff).as("d of a zero block").isEqualTo(0x8000);
            assertThat(zero.get(LittleEndian.I32, PAD + 2)).as("qh of a zero block").isEqualTo(-1);
            assertThat(zero.get(I8, PAD + 6) & 0xff).as("nibbles of a zero block").isEqualTo(0);
        }
    }

    /**
     * One q4_1 and one q5_1 block by hand, as llama.cpp's reference quantizers: min -1, max 2, so
     * d = 3 / 15 = 0.2 (q4_1) or 3 / 31 (q5_1), m = -1, q = (int) ((x + 1) / d + 0.5).
     */
    @Test
    void q4_1AndQ5_1QuantizersTakeTheMinAndTheRange() {
        try (Tensors t = new Tensors(15)) {
            float[] values = new float[32];
            values[0] = -1f; // q 0
            values[1] = 2f; // q 15 (q4_1), 31 (q5_1)
            values[16] = 0.5f; // 1.5 / 0.2 + 0.5 = 8 -> 8 (q4_1); 1.5 * 31 / 3 + 0.5 = 16 -> 16 (q5_1)
            // every other value 0: 1 / 0.2 + 0.5 = 5.5 -> 5 (q4_1); 31 / 3 + 0.5 = 10.83 -> 10 (q5_1)
            MemorySegment q41 = quantized(t, SCALAR, TensorType.Q4_1, values);
            assertThat(q41.get(F16, PAD)).as("q4_1 d").isEqualTo(HalfFloats.f32ToF16(3f / 15f));
            assertThat(q41.get(F16, PAD + 2)).as("q4_1 m").isEqualTo((short) 0xbc00);
            assertThat(q41.get(I8, PAD + 4) & 0xff).as("values 0 and 16").isEqualTo(0 | 8 << 4);
            assertThat(q41.get(I8, PAD + 5) & 0xff).as("values 1 and 17").isEqualTo(15 | 5 << 4);
            assertThat(q41.get(I8, PAD + 6) & 0xff).as("values 2 and 18").isEqualTo(5 | 5 << 4);
            MemorySegment q51 = quantized(t, SCALAR, TensorType.Q5_1, values);
            assertThat(q51.get(F16, PAD)).as("q5_1 d").isEqualTo(HalfFloats.f32ToF16(3f / 31f));
            assertThat(q51.get(LittleEndian.I32, PAD + 4)).as("q5_1 qh: values 1 (31) and 16 (16)")
                    .isEqualTo(1 << 1 | 1 << 16);
            assertThat(q51.get(I8, PAD + 8) & 0xff).as("values 0 and 16").isEqualTo(0);
            assertThat(q51.get(I8, PAD + 9) & 0xff).as("values 1 and 17").isEqualTo(15 | 10 << 4);
        }
    }

    /**
     * q4_0's step is {@code |d| = amax / 8}. A value rounds to within half a step, except that values opposite in
     * sign to the maximum and beyond 7.5 steps clamp to nibble 15 and may move by a whole step; the f16 rounding of
     * d adds up to {@code 8 * 2^-11 * |d|}, when d is a normal f16.
     */
    @Property(tries = 200)
    void q4_0RoundTripStaysWithinHalfAStepOrAWholeStepWhereItClamps(
            @ForAll long seed,
            @ForAll @FloatRange(min = 0.01f, max = 1e5f) float magnitude,
            @ForAll @IntRange(min = 1, max = 8) int blocks) {
        try (Tensors t = new Tensors(seed)) {
            int count = blocks * 32;
            float[] values = t.uniform(count, -magnitude, magnitude);
            for (int block = 0; block < blocks; block++) {
                values[block * 32 + t.random.nextInt(32)] = t.random.nextBoolean() ? magnitude : -magnitude;
            }
            for (KernelOps ops : new KernelOps[] {SCALAR, VECTOR}) {
                float[] roundTrip = GgufBlocks.dequantized(
                        t, ops, TensorType.Q4_0, quantized(t, ops, TensorType.Q4_0, values), count);
                for (int block = 0; block < blocks; block++) {
                    float max = 0f;
                    for (int j = 0; j < 32; j++) {
                        float v = values[block * 32 + j];
                        if (Math.abs(v) > Math.abs(max)) {
                            max = v;
                        }
                    }
                    float step = Math.abs(max) / 8f;
                    for (int j = 0; j < 32; j++) {
                        int i = block * 32 + j;
                        boolean clamps = Math.signum(values[i]) != Math.signum(max) && Math.abs(values[i]) > 7.5f * step;
                        float bound = (clamps ? 1f : 0.5f) * step + 8 * 0x1p-11f * step + 1e-6f * Math.abs(max);
                        assertThat(Math.abs(roundTrip[i] - values[i]))
                                .as("%s |q4_0 round trip - x| at %d for x = %s, block max %s", ops.name(), i, values[i],
                                        max)
                                .isLessThanOrEqualTo(bound);
                    }
                }
            }
        }
    }

    @Property(tries = 100)
    void q8_0RoundTripThroughTheOpsStaysWithinTheDocumentedBound(
            @ForAll long seed,
            @ForAll @FloatRange(min = 0.01f, max = 1e6f) float magnitude,
            @ForAll @IntRange(min = 1, max = 8) int blocks) {
        try (Tensors t = new Tensors(seed)) {
            int count = blocks * 32;
            float[] values = t.uniform(count, -magnitude, magnitude);
            for (int block = 0; block < blocks; block++) {
                values[block * 32 + t.random.nextInt(32)] = t.random.nextBoolean() ? magnitude : -magnitude;
            }
            for (KernelOps ops : new KernelOps[] {SCALAR, VECTOR}) {
                float[] roundTrip = GgufBlocks.dequantized(
                        t, ops, TensorType.Q8_0, quantized(t, ops, TensorType.Q8_0, values), count);
                float[] bound = new float[count];
                java.util.Arrays.fill(bound, magnitude);
                Tensors.assertWithin(
                        ops.name() + " q8_0 round trip", roundTrip, values, bound, Q8_0.ROUND_TRIP_RELATIVE_ERROR);
            }
        }
    }

    @Test
    void f32QuantizeAndDequantizeAreCopies() {
        try (Tensors t = new Tensors(14)) {
            float[] values = {1f, Float.NaN, -0f, 7e-45f};
            for (KernelOps ops : new KernelOps[] {SCALAR, VECTOR}) {
                MemorySegment q = quantized(t, ops, TensorType.F32, values);
                Tensors.assertIdentical(ops.name() + " f32", Tensors.read(q, values.length), values);
                assertThat(q.get(F32, PAD + 4)).isNaN();
            }
        }
    }
}
