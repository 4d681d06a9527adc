package dev.tandem.kernels;

import static dev.tandem.kernels.Tensors.PAD;
import static dev.tandem.kernels.Tensors.SCALAR;
import static dev.tandem.kernels.Tensors.VECTOR;
import static dev.tandem.kernels.Tensors.read;
import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class MatmulOpsTest {

    private static final int ROWS = 9;

    /** Every batch from 1 to 9: the four-input path, the one-input path and each mix of them. */
    private static final int[] BATCHES = {1, 2, 3, 4, 5, 6, 7, 8, 9};

    /** {@code sum_k |W[r, k] * x[b, k]|} in {@code [batch, rows]} order: the scale of a dot product's rounding. */
    private static float[] absoluteProducts(float[] w, float[] x, int rows, int cols, int batch) {
        float[] scale = new float[batch * rows];
        for (int b = 0; b < batch; b++) {
            for (int r = 0; r < rows; r++) {
                double sum = 0;
                for (int k = 0; k < cols; k++) {
                    sum += Math.abs((double) w[r * cols + k] * x[b * cols + k]);
                }
                scale[b * rows + r] = (float) sum;
            }
        }
        return scale;
    }

    private static float[] reference(float[] w, float[] x, int rows, int cols, int batch) {
        float[] out = new float[batch * rows];
        for (int b = 0; b < batch; b++) {
            for (int r = 0; r < rows; r++) {
                double sum = 0;
                for (int k = 0; k < cols; k++) {
                    sum += (double) w[r * cols + k] * x[b * cols + k];
                }
                out[b * rows + r] = (float) sum;
            }
        }
        return out;
    }

    private static float[] matmulF32(
            Tensors t, KernelOps ops, MemorySegment w, MemorySegment x, int rows, int cols, int batch) {
        MemorySegment out = t.allocate((long) batch * rows * Float.BYTES);
        ops.matmulF32(w, PAD, x, PAD, out, PAD, rows, cols, batch, 0, rows);
        return read(out, batch * rows);
    }

    @ParameterizedTest(name = "cols = {0}")
    @ValueSource(ints = {1, 7, 31, 33, 127, 513, 1100, 4096})
    void vectorF32MatmulMatchesScalarForEveryBatch(int cols) {
        try (Tensors t = new Tensors(cols)) {
            for (int batch : BATCHES) {
                float[] w = t.uniform(ROWS * cols, -1f, 1f);
                float[] x = t.uniform(batch * cols, -1f, 1f);
                MemorySegment ws = t.f32(w);
                MemorySegment xs = t.f32(x);
                float[] scalar = run(t, SCALAR, ws, xs, cols, batch, false);
                float[] vector = run(t, VECTOR, ws, xs, cols, batch, false);
                float[] scale = absoluteProducts(w, x, ROWS, cols, batch);
                Tensors.assertWithin(
                        "vector matmulF32, cols " + cols + " batch " + batch,
                        vector,
                        scalar,
                        scale,
                        MatmulOps.F32_RELATIVE_TOLERANCE);
                Tensors.assertWithin(
                        "scalar matmulF32 against double, cols " + cols + " batch " + batch,
                        scalar,
                        reference(w, x, ROWS, cols, batch),
                        scale,
                        MatmulOps.F32_RELATIVE_TOLERANCE);
            }
        }
    }

    @ParameterizedTest(name = "cols = {0}")
    @ValueSource(ints = {32, 96, 128, 544, 1056, 4096})
    void vectorQ8MatmulMatchesScalarAndTheDequantizedF32Matmul(int cols) {
        try (Tensors t = new Tensors(cols)) {
            for (int batch : BATCHES) {
                float[] w = t.uniform(ROWS * cols, -1f, 1f);
                float[] x = t.uniform(batch * cols, -1f, 1f);
                MemorySegment q8 = t.q8(w, ROWS, cols);
                float[] dequantized = t.dequantized(q8, ROWS * cols);
                MemorySegment xs = t.f32(x);
                float[] scalar = run(t, SCALAR, q8, xs, cols, batch, true);
                float[] vector = run(t, VECTOR, q8, xs, cols, batch, true);
                float[] scale = absoluteProducts(dequantized, x, ROWS, cols, batch);
                Tensors.assertWithin(
                        "vector matmulQ8_0, cols " + cols + " batch " + batch,
                        vector,
                        scalar,
                        scale,
                        MatmulOps.Q8_0_RELATIVE_TOLERANCE);
                Tensors.assertWithin(
                        "scalar matmulQ8_0 against double on dequantized weights, cols " + cols,
                        scalar,
                        reference(dequantized, x, ROWS, cols, batch),
                        scale,
                        MatmulOps.Q8_0_RELATIVE_TOLERANCE);
            }
        }
    }

    /** Runs the matmul as three row-block tasks, as a caller that splits it across cores does. */
    private static float[] run(
            Tensors t, KernelOps ops, MemorySegment w, MemorySegment x, int cols, int batch, boolean q8) {
        MemorySegment out = t.allocate((long) batch * ROWS * Float.BYTES);
        int[] cuts = {0, 2, 7, ROWS};
        for (int i = 0; i + 1 < cuts.length; i++) {
            if (q8) {
                ops.matmulQ8_0(w, PAD, x, PAD, out, PAD, ROWS, cols, batch, cuts[i], cuts[i + 1]);
            } else {
                ops.matmulF32(w, PAD, x, PAD, out, PAD, ROWS, cols, batch, cuts[i], cuts[i + 1]);
            }
        }
        return read(out, batch * ROWS);
    }

    /**
     * Random shapes: odd row counts, odd and long columns, batches 1 to 9, and a row range
     * that is not the whole matrix, in both matmuls, vector against scalar.
     */
    @Test
    void randomShapesAgreeWithScalarInEveryLayout() {
        try (Tensors t = new Tensors(99)) {
            for (int trial = 0; trial < 24; trial++) {
                int rows = 1 + t.random.nextInt(13);
                int blocks = 1 + t.random.nextInt(40);
                int cols = blocks * Q8_0.BLOCK_SIZE;
                int f32Cols = 1 + t.random.nextInt(1300);
                int batch = 1 + t.random.nextInt(9);
                int r0 = t.random.nextInt(rows);
                int r1 = r0 + 1 + t.random.nextInt(rows - r0);
                float[] w = t.uniform(rows * cols, -1f, 1f);
                float[] x = t.uniform(batch * cols, -1f, 1f);
                MemorySegment q8 = t.q8(w, rows, cols);
                MemorySegment xs = t.f32(x);
                float[] scale = absoluteProducts(t.dequantized(q8, rows * cols), x, rows, cols, batch);
                float[] wf = t.uniform(rows * f32Cols, -1f, 1f);
                float[] xf = t.uniform(batch * f32Cols, -1f, 1f);
                MemorySegment wfs = t.f32(wf);
                MemorySegment xfs = t.f32(xf);
                float[] scaleF = absoluteProducts(wf, xf, rows, f32Cols, batch);
                float[][] results = new float[4][];
                int i = 0;
                for (KernelOps ops : new KernelOps[] {SCALAR, VECTOR}) {
                    MemorySegment a = t.f32(new float[batch * rows]);
                    MemorySegment c = t.f32(new float[batch * rows]);
                    ops.matmulQ8_0(q8, PAD, xs, PAD, a, PAD, rows, cols, batch, r0, r1);
                    ops.matmulF32(wfs, PAD, xfs, PAD, c, PAD, rows, f32Cols, batch, r0, r1);
                    results[i++] = read(a, batch * rows);
                    results[i++] = read(c, batch * rows);
                }
                String shape = "rows " + rows + " cols " + cols + "/" + f32Cols + " batch " + batch + " rows [" + r0
                        + ", " + r1 + ")";
                Tensors.assertWithin("vector matmulQ8_0, " + shape, results[2], results[0], scale,
                        MatmulOps.Q8_0_RELATIVE_TOLERANCE);
                Tensors.assertWithin("vector matmulF32, " + shape, results[3], results[1], scaleF,
                        MatmulOps.F32_RELATIVE_TOLERANCE);
            }
        }
    }

    @Test
    void rowBlocksTouchOnlyTheirRows() {
        try (Tensors t = new Tensors(1)) {
            int rows = 6;
            int cols = 1056;
            int batch = 9;
            MemorySegment w = t.f32(t.uniform(rows * cols, -1f, 1f));
            MemorySegment q8 = t.q8(t.uniform(rows * cols, -1f, 1f), rows, cols);
            MemorySegment x = t.f32(t.uniform(batch * cols, -1f, 1f));
            String[] layouts = {"f32", "q8_0"};
            for (KernelOps ops : new KernelOps[] {SCALAR, VECTOR}) {
                for (int layout = 0; layout < layouts.length; layout++) {
                    float[] sentinel = new float[batch * rows];
                    java.util.Arrays.fill(sentinel, Float.NaN);
                    MemorySegment out = t.f32(sentinel);
                    switch (layout) {
                        case 0 -> ops.matmulF32(w, PAD, x, PAD, out, PAD, rows, cols, batch, 2, 4);
                        default -> ops.matmulQ8_0(q8, PAD, x, PAD, out, PAD, rows, cols, batch, 2, 4);
                    }
                    float[] result = read(out, batch * rows);
                    for (int b = 0; b < batch; b++) {
                        for (int r = 0; r < rows; r++) {
                            boolean inBlock = r >= 2 && r < 4;
                            assertThat(Float.isNaN(result[b * rows + r]))
                                    .as("%s %s out[%d, %d] written", ops.name(), layouts[layout], b, r)
                                    .isEqualTo(!inBlock);
                        }
                    }
                }
            }
        }
    }

    @Test
    void emptyRowRangeAndEmptyBatchWriteNothing() {
        try (Tensors t = new Tensors(2)) {
            MemorySegment w = t.f32(t.uniform(4 * 32, -1f, 1f));
            MemorySegment x = t.f32(t.uniform(32, -1f, 1f));
            MemorySegment out = t.f32(Float.NaN, Float.NaN, Float.NaN, Float.NaN);
            for (KernelOps ops : new KernelOps[] {SCALAR, VECTOR}) {
                ops.matmulF32(w, PAD, x, PAD, out, PAD, 4, 32, 1, 3, 3);
                ops.matmulF32(w, PAD, x, PAD, out, PAD, 4, 32, 0, 0, 4);
                assertThat(read(out, 4)).as(ops.name()).containsOnly(Float.NaN);
            }
        }
    }

    @Test
    void matmulOfAKnownMatrix() {
        try (Tensors t = new Tensors(3)) {
            // W = [[1, 2, 3], [4, 5, 6]], x = [[1, 0, -1], [2, 2, 2]].
            MemorySegment w = t.f32(1, 2, 3, 4, 5, 6);
            MemorySegment x = t.f32(1, 0, -1, 2, 2, 2);
            for (KernelOps ops : new KernelOps[] {SCALAR, VECTOR}) {
                assertThat(matmulF32(t, ops, w, x, 2, 3, 2)).as(ops.name()).containsExactly(-2f, -2f, 12f, 30f);
            }
        }
    }

    @Test
    void unalignedOffsetsWork() {
        try (Tensors t = new Tensors(4)) {
            int rows = 3;
            int cols = 100;
            float[] w = t.uniform(rows * cols, -1f, 1f);
            float[] x = t.uniform(cols, -1f, 1f);
            MemorySegment ws = t.f32(w);
            MemorySegment xs = t.f32(x);
            // The same values one byte further into fresh segments.
            MemorySegment wOdd = t.allocate(1 + (long) rows * cols * Float.BYTES);
            MemorySegment xOdd = t.allocate(1 + (long) cols * Float.BYTES);
            MemorySegment.copy(ws, PAD, wOdd, PAD + 1, (long) rows * cols * Float.BYTES);
            MemorySegment.copy(xs, PAD, xOdd, PAD + 1, (long) cols * Float.BYTES);
            MemorySegment aligned = t.allocate(rows * Float.BYTES);
            MemorySegment odd = t.allocate(1 + rows * Float.BYTES);
            VECTOR.matmulF32(ws, PAD, xs, PAD, aligned, PAD, rows, cols, 1, 0, rows);
            VECTOR.matmulF32(wOdd, PAD + 1, xOdd, PAD + 1, odd, PAD + 1, rows, cols, 1, 0, rows);
            Tensors.assertIdentical("matmulF32 at an odd offset", read(odd, PAD + 1, rows), read(aligned, rows));
        }
    }
}
