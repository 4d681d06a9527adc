package dev.tandem.kernels;

import static dev.tandem.kernels.scalar.LittleEndian.F32;

import dev.tandem.kernels.scalar.ScalarOps;
import dev.tandem.kernels.vector.VectorOps;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Random;

/**
 * Test tensors: f32 arrays copied into native segments behind a {@link #PAD}-byte prefix, so every
 * kernel is exercised at a non-zero offset that is not a multiple of any vector width.
 */
final class Tensors implements AutoCloseable {

    /** Every tensor starts this many bytes into its segment. */
    static final long PAD = 12;

    static final KernelOps SCALAR = ScalarOps.INSTANCE;
    static final KernelOps VECTOR = VectorOps.INSTANCE;

    /** Lengths that are and are not multiples of every vector width. */
    static final int[] SIZES = {1, 7, 31, 33, 127, 4096};

    private final Arena arena = Arena.ofConfined();
    final Random random;

    Tensors(long seed) {
        random = new Random(seed);
    }

    /** A segment of {@code PAD + bytes} bytes. */
    MemorySegment allocate(long bytes) {
        return arena.allocate(PAD + bytes, 1);
    }

    MemorySegment f32(float... values) {
        MemorySegment segment = allocate((long) values.length * Float.BYTES);
        for (int i = 0; i < values.length; i++) {
            segment.set(F32, PAD + (long) i * Float.BYTES, values[i]);
        }
        return segment;
    }

    float[] uniform(int n, float low, float high) {
        float[] values = new float[n];
        for (int i = 0; i < n; i++) {
            values[i] = low + (high - low) * random.nextFloat();
        }
        return values;
    }

    /** A copy of a segment, so that an in-place kernel can run on the same input twice. */
    MemorySegment copy(MemorySegment segment) {
        MemorySegment copy = arena.allocate(segment.byteSize(), 1);
        copy.copyFrom(segment);
        return copy;
    }

    static float[] read(MemorySegment segment, int n) {
        return read(segment, PAD, n);
    }

    static float[] read(MemorySegment segment, long offset, int n) {
        float[] values = new float[n];
        for (int i = 0; i < n; i++) {
            values[i] = segment.get(F32, offset + (long) i * Float.BYTES);
        }
        return values;
    }

    /** A q8_0 copy of row-major {@code [rows, cols]} f32 values, behind the pad. */
    MemorySegment q8(float[] values, int rows, int cols) {
        MemorySegment f32 = f32(values);
        MemorySegment q8 = allocate(rows * Q8_0.rowBytes(cols));
        Q8_0.quantize(f32, PAD, q8, PAD, rows * cols);
        return q8;
    }

    /** The dequantized values of a q8_0 tensor made by {@link #q8}. */
    float[] dequantized(MemorySegment q8, int count) {
        MemorySegment f32 = allocate((long) count * Float.BYTES);
        Q8_0.dequantize(q8, PAD, f32, PAD, count);
        return read(f32, count);
    }

    /**
     * Asserts {@code |actual[i] - expected[i]| <= tolerance * scale[i]} for every element, with a
     * message naming the element, both values and the bound.
     */
    static void assertWithin(String what, float[] actual, float[] expected, float[] scale, float tolerance) {
        if (actual.length != expected.length) {
            throw new AssertionError(what + ": " + actual.length + " values, expected " + expected.length);
        }
        for (int i = 0; i < actual.length; i++) {
            double bound = (double) tolerance * scale[i];
            double error = Math.abs((double) actual[i] - expected[i]);
            boolean bitwiseEqual = Float.floatToIntBits(actual[i]) == Float.floatToIntBits(expected[i]);
            if (!bitwiseEqual && !(error <= bound)) {
                throw new AssertionError(what + "[" + i + "] = " + actual[i] + " but expected " + expected[i]
                        + ": error " + error + " exceeds " + tolerance + " * " + scale[i] + " = " + bound);
            }
        }
    }

    /** Asserts the two arrays are equal bit for bit. */
    static void assertIdentical(String what, float[] actual, float[] expected) {
        assertWithin(what, actual, expected, new float[expected.length], 0f);
    }

    static float[] abs(float[] values) {
        float[] result = new float[values.length];
        for (int i = 0; i < values.length; i++) {
            result[i] = Math.abs(values[i]);
        }
        return result;
    }

    @Override
    public void close() {
        arena.close();
    }
}
