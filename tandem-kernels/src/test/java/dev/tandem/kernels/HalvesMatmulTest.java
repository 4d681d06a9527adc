package dev.tandem.kernels;

import static dev.tandem.kernels.Tensors.PAD;
import static dev.tandem.kernels.Tensors.SCALAR;
import static dev.tandem.kernels.Tensors.VECTOR;
import static dev.tandem.kernels.Tensors.read;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.MemorySegment;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The f16 and bf16 matmuls, which widen each weight in the loop: vector against scalar within
 * {@link MatmulOps#HALVES_RELATIVE_TOLERANCE} for every path (four rows against four inputs, four
 * against one, one against four and one against one, with and without a column tail), scalar
 * against double precision on the weights as {@code dequantize} widens them, row ranges, the
 * f16 values the fast widening does not take (infinities, NaNs) and those it takes exactly
 * (subnormals, signed zeros), and bad arguments.
 */
class HalvesMatmulTest {

    private static final int[] BATCHES = {1, 2, 3, 4, 5, 8, 9, 13};

    private static MemorySegment halves(Tensors t, TensorType type, float[] values) {
        MemorySegment out = t.allocate(2L * values.length);
        SCALAR.quantize(type, t.f32(values), PAD, out, PAD, values.length);
        return out;
    }

    private static float[] widened(Tensors t, TensorType type, MemorySegment w, int n) {
        MemorySegment out = t.allocate((long) n * Float.BYTES);
        SCALAR.dequantize(type, w, PAD, out, PAD, n);
        return read(out, n);
    }

    private static float[] run(Tensors t, KernelOps ops, TensorType type, MemorySegment w, MemorySegment x, int rows,
            int cols, int batch, int rowStart, int rowEnd) {
        MemorySegment out = t.f32(new float[batch * rows]);
        ops.matmul(type, w, PAD, x, PAD, out, PAD, rows, cols, batch, rowStart, rowEnd);
        return read(out, batch * rows);
    }

    @ParameterizedTest(name = "{0}, rows = {1}, cols = {2}, rows [{3}, {4})")
    @CsvSource({"F16, 9, 1, 0, 9", "F16, 9, 33, 0, 9", "F16, 11, 513, 2, 11", "F16, 8, 4096, 0, 8",
        "F16, 13, 1100, 3, 12", "BF16, 9, 7, 0, 9", "BF16, 11, 513, 2, 11", "BF16, 8, 4096, 0, 8",
        "BF16, 13, 127, 1, 13"})
    void vectorMatchesScalarAndScalarMatchesDoublePrecision(TensorType type, int rows, int cols, int rowStart,
            int rowEnd) {
        try (Tensors t = new Tensors(rows * 31L + cols + type.ordinal())) {
            MemorySegment w = halves(t, type, t.uniform(rows * cols, -1f, 1f));
            float[] wide = widened(t, type, w, rows * cols);
            for (int batch : BATCHES) {
                float[] x = t.uniform(batch * cols, -1f, 1f);
                MemorySegment xs = t.f32(x);
                float[] scalar = run(t, SCALAR, type, w, xs, rows, cols, batch, rowStart, rowEnd);
                float[] vector = run(t, VECTOR, type, w, xs, rows, cols, batch, rowStart, rowEnd);
                float[] scale = new float[batch * rows];
                float[] exact = new float[batch * rows];
                for (int b = 0; b < batch; b++) {
                    for (int r = 0; r < rows; r++) {
                        double sum = 0;
                        double magnitude = 0;
                        for (int k = 0; k < cols; k++) {
                            double product = (double) wide[r * cols + k] * x[b * cols + k];
                            sum += product;
                            magnitude += Math.abs(product);
                        }
                        boolean inRange = r >= rowStart && r < rowEnd;
                        exact[b * rows + r] = inRange ? (float) sum : 0f; // rows outside the range stay 0
                        scale[b * rows + r] = (float) magnitude;
                    }
                }
                String what = type + " cols " + cols + " batch " + batch;
                Tensors.assertWithin("vector " + what, vector, scalar, scale, MatmulOps.HALVES_RELATIVE_TOLERANCE);
                Tensors.assertWithin("scalar against double, " + what, scalar, exact, scale,
                        MatmulOps.HALVES_RELATIVE_TOLERANCE);
            }
        }
    }

    /**
     * Infinities, NaNs, subnormals and signed zeros among f16 weights, in the first vector of a row
     * and in its tail: every output the same as the scalar kernel's (NaN where it gives NaN), and
     * a row of subnormals exact.
     */
    @ParameterizedTest(name = "batch {0}")
    @CsvSource({"1", "4", "5"})
    void specialF16WeightsWidenAsTheScalarKernelWidensThem(int batch) {
        int rows = 6;
        int cols = 40;
        short[] specials = {(short) 0x7c00, (short) 0xfc00, (short) 0x7e00, (short) 0x0001, (short) 0x83ff,
            (short) 0x8000, (short) 0x0000, (short) 0x03ff};
        try (Tensors t = new Tensors(53)) {
            MemorySegment w = halves(t, TensorType.F16, t.uniform(rows * cols, -1f, 1f));
            for (int k = 0; k < cols; k++) {
                // row 0: an infinity in its first vector; row 1: a NaN in its tail; row 2: all subnormal or zero
                w.set(LittleEndian.F16, PAD + 2L * (2 * cols + k), specials[3 + k % 5]);
            }
            w.set(LittleEndian.F16, PAD + 2L * 3, specials[0]);
            w.set(LittleEndian.F16, PAD + 2L * (cols + 37), specials[2]);
            w.set(LittleEndian.F16, PAD + 2L * (3 * cols + 5), specials[1]);
            float[] x = t.uniform(batch * cols, 0.5f, 1f);
            MemorySegment xs = t.f32(x);
            float[] scalar = run(t, SCALAR, TensorType.F16, w, xs, rows, cols, batch, 0, rows);
            float[] vector = run(t, VECTOR, TensorType.F16, w, xs, rows, cols, batch, 0, rows);
            float[] wide = widened(t, TensorType.F16, w, rows * cols);
            for (int b = 0; b < batch; b++) {
                assertThat(vector[b * rows]).as("input %d row 0 (+inf)", b).isEqualTo(Float.POSITIVE_INFINITY);
                assertThat(vector[b * rows + 1]).as("input %d row 1 (NaN)", b).isNaN();
                assertThat(vector[b * rows + 3]).as("input %d row 3 (-inf)", b).isEqualTo(Float.NEGATIVE_INFINITY);
                double exact = 0;
                for (int k = 0; k < cols; k++) {
                    exact += (double) wide[2 * cols + k] * x[b * cols + k];
                }
                assertThat((double) scalar[b * rows + 2]).as("input %d row 2 (subnormals), scalar", b)
                        .isCloseTo(exact, org.assertj.core.data.Offset.offset(Math.abs(exact) * 1e-5));
                for (int r = 0; r < rows; r++) {
                    float s = scalar[b * rows + r];
                    float v = vector[b * rows + r];
                    if (Float.isNaN(s)) {
                        assertThat(v).as("input %d row %d", b, r).isNaN();
                    } else if (Float.isInfinite(s)) {
                        assertThat(v).as("input %d row %d", b, r).isEqualTo(s);
                    } else {
                        assertThat(v).as("input %d row %d", b, r)
                                .isCloseTo(s, org.assertj.core.data.Offset.offset(Math.abs(s) * 1e-5f + 1e-30f));
                    }
                }
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = TensorType.class, names = {"F16", "BF16"})
    void badArgumentsFailWithMessagesThatNameThem(TensorType type) {
        String kernel = type == TensorType.F16 ? "matmulF16" : "matmulBF16";
        try (Tensors t = new Tensors(59)) {
            MemorySegment w = t.allocate(2 * 16 * 32);
            MemorySegment x = t.f32(new float[32]);
            MemorySegment out = t.f32(new float[17]);
            for (KernelOps ops : new KernelOps[] {SCALAR, VECTOR}) {
                assertThatThrownBy(() -> ops.matmul(type, w, PAD, x, PAD, out, PAD, 17, 32, 1, 0, 17))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageStartingWith(kernel + ": weights");
                assertThatThrownBy(() -> ops.matmul(type, w, PAD, x, PAD, out, PAD, 16, 32, 1, 3, 2))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageStartingWith(kernel + ":");
            }
        }
    }
}
