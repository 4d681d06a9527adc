package dev.tandem.kernels;

import static dev.tandem.kernels.Tensors.PAD;
import static dev.tandem.kernels.scalar.LittleEndian.F16;
import static dev.tandem.kernels.scalar.LittleEndian.F32;
import static dev.tandem.kernels.scalar.LittleEndian.I8;

import java.lang.foreign.MemorySegment;
import java.util.Random;

/**
 * Test data in the GGUF tensor types: random but valid bytes for every type, behind the {@link Tensors#PAD}.
 * "Valid" means every f16 scale is finite (half of them subnormal-or-small, to reach those paths); everything
 * else in a block (quants, packed 6-bit scales and mins, int8 scales) is any byte, since every bit pattern is a
 * legal value. f16 and bf16 tensors are any 16 bits, NaNs and infinities included.
 */
final class GgufBlocks {

    /**
     * f16 values of every kind, for scales: zeros of both signs, subnormals, the smallest and
     * largest normals, ones, infinities, NaNs (quiet and signalling), and ordinary values.
     */
    static final short[] EVERY_KIND_OF_HALF = {0x0000, (short) 0x8000, 0x0001, (short) 0x8001, 0x03ff, 0x0400, 0x3c00,
        (short) 0xbc00, 0x7bff, (short) 0xfbff, 0x7c00, (short) 0xfc00, 0x7e00, 0x7c01, (short) 0xfe00, 0x2e66};

    private GgufBlocks() {}

    /**
     * {@code batch} inputs of {@code cols} values at the extremes of the int8 quants: the even
     * inputs 127 in every lane, the odd ones 127 and -127 alternating (their products cancel).
     */
    static float[] extremeInputs(int batch, int cols) {
        float[] x = new float[batch * cols];
        for (int i = 0; i < x.length; i++) {
            x[i] = (i / cols) % 2 == 0 ? 127f : (i % 2 == 0 ? 127f : -127f);
        }
        return x;
    }

    /** {@code elements} random values of {@code type}, {@code type.bytes(elements)} bytes after the pad. */
    static MemorySegment random(Tensors t, TensorType type, long elements) {
        long bytes = type.bytes(elements);
        MemorySegment segment = t.allocate(bytes);
        Random random = t.random;
        switch (type) {
            case F32 -> {
                for (long i = 0; i < elements; i++) {
                    segment.set(F32, PAD + i * 4, random.nextFloat() * 4f - 2f);
                }
            }
            case F16, BF16 -> randomBytes(random, segment, PAD, bytes);
            default -> {
                randomBytes(random, segment, PAD, bytes);
                for (long block = 0; block < elements / type.blockSize(); block++) {
                    long at = PAD + block * type.blockBytes();
                    switch (type) {
                        case Q8_0, Q4_0, Q5_0, IQ4_NL, IQ4_XS -> segment.set(F16, at, finiteHalf(random));
                        case Q4_1, Q5_1 -> {
                            segment.set(F16, at, finiteHalf(random));
                            segment.set(F16, at + 2, finiteHalf(random));
                        }
                        case Q4_K, Q5_K -> {
                            segment.set(F16, at, finiteHalf(random));
                            segment.set(F16, at + 2, finiteHalf(random));
                        }
                        case Q6_K -> segment.set(F16, at + 208, finiteHalf(random));
                        case Q2_K -> {
                            segment.set(F16, at + 80, finiteHalf(random));
                            segment.set(F16, at + 82, finiteHalf(random));
                        }
                        case Q3_K -> segment.set(F16, at + 108, finiteHalf(random));
                        default -> throw new AssertionError(type);
                    }
                }
            }
        }
        return segment;
    }

    private static void randomBytes(Random random, MemorySegment segment, long offset, long bytes) {
        for (long i = 0; i < bytes; i++) {
            segment.set(I8, offset + i, (byte) random.nextInt(256));
        }
    }

    /** A finite f16: any sign and mantissa, an exponent field from 0 (subnormal) to 30. */
    static short finiteHalf(Random random) {
        int exponent = random.nextBoolean() ? random.nextInt(31) : 13 + random.nextInt(4);
        return (short) ((random.nextInt(2) << 15) | exponent << 10 | random.nextInt(1024));
    }

    /** The f32 result of dequantizing {@code elements} values of {@code type} at {@code src} with {@code ops}. */
    static float[] dequantized(Tensors t, KernelOps ops, TensorType type, MemorySegment src, int elements) {
        MemorySegment dst = t.allocate((long) elements * Float.BYTES);
        ops.dequantize(type, src, PAD, dst, PAD, elements);
        return Tensors.read(dst, elements);
    }

    /** A block built byte by byte: {@code bytes} placed after the pad. */
    static MemorySegment bytes(Tensors t, int... bytes) {
        MemorySegment segment = t.allocate(bytes.length);
        for (int i = 0; i < bytes.length; i++) {
            segment.set(I8, PAD + i, (byte) bytes[i]);
        }
        return segment;
    }

    /**
     * Checks that {@code type}'s matmul over rows {@code [from, to)} writes exactly those rows of
     * every input, by both kernels: every output starts as a sentinel, and a row outside the
     * range keeps it.
     */
    static void assertOnlyTheRangeIsWritten(Tensors t, TensorType type, MemorySegment weights, int rows, int cols,
            int batch, int from, int to) {
        float sentinel = -99f;
        MemorySegment x = t.f32(t.uniform(batch * cols, -1f, 1f));
        for (KernelOps ops : new KernelOps[] {Tensors.SCALAR, Tensors.VECTOR}) {
            float[] filled = new float[batch * rows];
            java.util.Arrays.fill(filled, sentinel);
            MemorySegment out = t.f32(filled);
            ops.matmul(type, weights, PAD, x, PAD, out, PAD, rows, cols, batch, from, to);
            float[] got = Tensors.read(out, batch * rows);
            for (int b = 0; b < batch; b++) {
                for (int r = 0; r < rows; r++) {
                    boolean inside = r >= from && r < to;
                    org.assertj.core.api.Assertions.assertThat(got[b * rows + r] == sentinel)
                            .as("%s %s input %d row %d written", ops.name(), type, b, r).isEqualTo(!inside);
                }
            }
        }
    }
}
