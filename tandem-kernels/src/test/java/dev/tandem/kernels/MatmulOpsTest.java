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

    /** Every batch from 1 to 9 and two beyond: the four-input paths, the one-input paths and each mix of them. */
    private static final int[] BATCHES = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13};

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

    @ParameterizedTest(name = "cols = {0}")
    @ValueSource(ints = {32, 64, 256, 544, 1056, 4096})
    void vectorQ4_0MatmulMatchesScalarAndTheDequantizedF32Matmul(int cols) {
        checkAgainstScalarAndDequantized(TensorType.Q4_0, cols, cols + 1, MatmulOps.Q4_0_RELATIVE_TOLERANCE);
    }

    /**
     * For random blocks of {@code type} and every batch: vector against scalar, and scalar against
     * a double-precision matmul on the dequantized weights, within {@code tolerance} of the sum of
     * the absolute products.
     */
    private static void checkAgainstScalarAndDequantized(TensorType type, int cols, long seed, float tolerance) {
        try (Tensors t = new Tensors(seed)) {
            for (int batch : BATCHES) {
                MemorySegment w = GgufBlocks.random(t, type, (long) ROWS * cols);
                float[] dequantized = GgufBlocks.dequantized(t, SCALAR, type, w, ROWS * cols);
                float[] x = t.uniform(batch * cols, -1f, 1f);
                MemorySegment xs = t.f32(x);
                float[] scalar = run(t, SCALAR, type, w, xs, cols, batch);
                float[] vector = run(t, VECTOR, type, w, xs, cols, batch);
                float[] scale = absoluteProducts(dequantized, x, ROWS, cols, batch);
                Tensors.assertWithin("vector matmul " + type + ", cols " + cols + " batch " + batch, vector, scalar,
                        scale, tolerance);
                Tensors.assertWithin("scalar matmul " + type + " against double on dequantized weights, cols " + cols,
                        scalar, reference(dequantized, x, ROWS, cols, batch), scale, tolerance);
            }
        }
    }

    @ParameterizedTest(name = "cols = {0}")
    @ValueSource(ints = {256, 512, 1536, 4096})
    void vectorQ4_KMatmulMatchesScalarAndTheDequantizedF32Matmul(int cols) {
        try (Tensors t = new Tensors(cols + 2)) {
            for (int batch : BATCHES) {
                MemorySegment q4 = GgufBlocks.random(t, TensorType.Q4_K, (long) ROWS * cols);
                float[] dequantized = GgufBlocks.dequantized(t, SCALAR, TensorType.Q4_K, q4, ROWS * cols);
                float[] x = t.uniform(batch * cols, -1f, 1f);
                MemorySegment xs = t.f32(x);
                float[] scalar = run(t, SCALAR, TensorType.Q4_K, q4, xs, cols, batch);
                float[] vector = run(t, VECTOR, TensorType.Q4_K, q4, xs, cols, batch);
                float[] scale = absoluteProducts(q4_KTerms(t, q4, ROWS * cols), x, ROWS, cols, batch);
                Tensors.assertWithin("vector matmulQ4_K, cols " + cols + " batch " + batch, vector, scalar, scale,
                        MatmulOps.Q4_K_RELATIVE_TOLERANCE);
                Tensors.assertWithin("scalar matmulQ4_K against double on dequantized weights, cols " + cols,
                        scalar, reference(dequantized, x, ROWS, cols, batch), scale,
                        MatmulOps.Q4_K_RELATIVE_TOLERANCE);
            }
        }
    }

    /**
     * {@code |d * scale * q| + |dmin * min|} of each q4_K value: the scale of a q4_K dot product's
     * rounding, from two dequantizations, one with every {@code dmin} zeroed and one with every
     * {@code d} zeroed.
     */
    private static float[] q4_KTerms(Tensors t, MemorySegment q4, int elements) {
        long bytes = TensorType.Q4_K.bytes(elements);
        MemorySegment noMin = t.allocate(bytes);
        MemorySegment noScale = t.allocate(bytes);
        MemorySegment.copy(q4, PAD, noMin, PAD, bytes);
        MemorySegment.copy(q4, PAD, noScale, PAD, bytes);
        for (long at = PAD; at < PAD + bytes; at += TensorType.Q4_K.blockBytes()) {
            noMin.set(LittleEndian.F16, at + 2, (short) 0);
            noScale.set(LittleEndian.F16, at, (short) 0);
        }
        float[] scaled = GgufBlocks.dequantized(t, SCALAR, TensorType.Q4_K, noMin, elements);
        float[] mins = GgufBlocks.dequantized(t, SCALAR, TensorType.Q4_K, noScale, elements);
        float[] terms = new float[elements];
        for (int i = 0; i < elements; i++) {
            terms[i] = Math.abs(scaled[i]) + Math.abs(mins[i]);
        }
        return terms;
    }

    @ParameterizedTest(name = "cols = {0}")
    @ValueSource(ints = {256, 512, 1536, 4096})
    void vectorQ6_KMatmulMatchesScalarAndTheDequantizedF32Matmul(int cols) {
        checkAgainstScalarAndDequantized(TensorType.Q6_K, cols, cols + 3, MatmulOps.Q6_K_RELATIVE_TOLERANCE);
    }

    /**
     * The hand-built q6_K block of {@link DequantizeTest#handBuiltQ6_KBlock} times one-hot inputs:
     * input j picks value {@code Q6_K_HAND_INDEXES[j]}, whose value was worked out by hand. Ten
     * inputs, so both the four-input and the one-input paths read it.
     */
    @Test
    void matmulOfAHandBuiltQ6_KBlockPicksTheHandWorkedValues() {
        try (Tensors t = new Tensors(11)) {
            MemorySegment w = GgufBlocks.bytes(t, DequantizeTest.handBuiltQ6_KBlock());
            int inputs = DequantizeTest.Q6_K_HAND_INDEXES.length;
            float[] xs = new float[inputs * 256];
            for (int j = 0; j < inputs; j++) {
                xs[j * 256 + DequantizeTest.Q6_K_HAND_INDEXES[j]] = 1f;
            }
            MemorySegment x = t.f32(xs);
            for (KernelOps ops : new KernelOps[] {SCALAR, VECTOR}) {
                MemorySegment out = t.allocate(inputs * Float.BYTES);
                ops.matmulQ6_K(w, PAD, x, PAD, out, PAD, 1, 256, inputs, 0, 1);
                assertThat(read(out, inputs)).as("%s q6_K", ops.name()).containsExactly(DequantizeTest.Q6_K_HAND_VALUES);
            }
        }
    }

    /** A q4_0 block and a q4_K block built by hand, with the sums they define worked out by hand. */
    @Test
    void matmulOfHandBuiltQ4Blocks() {
        try (Tensors t = new Tensors(5)) {
            // q4_0: d = 0.5; byte j holds nibbles (j, 15 - j), so value j is (j - 8) / 2 and value
            // j + 16 is (7 - j) / 2. With x = 1 everywhere, the sum is 0.5 * (sum_j (j - 8) + (7 - j)) = -8.
            int[] q4_0 = new int[18];
            q4_0[0] = 0x00;
            q4_0[1] = 0x38; // f16 0.5
            for (int j = 0; j < 16; j++) {
                q4_0[2 + j] = j | (15 - j) << 4;
            }
            MemorySegment w0 = GgufBlocks.bytes(t, q4_0);
            float[] ones = new float[32];
            java.util.Arrays.fill(ones, 1f);
            MemorySegment x0 = t.f32(ones);
            // q4_K: d = 1, dmin = 2; sub-block i < 4 has scale i + 1 and min i, sub-blocks 4 to 7 have
            // scale 1 and min 0 (packed bytes 8 to 11 are 0x01); every nibble is 3 (bytes 0x33). Value
            // in sub-block i < 4 is (i + 1) * 3 - 2 * i = i + 3, in the others 3. With x = 1 on sub-block
            // k and 0 elsewhere, the sum is 32 times that value.
            int[] q4_K = new int[144];
            q4_K[1] = 0x3c; // d = 1
            q4_K[3] = 0x40; // dmin = 2
            for (int i = 0; i < 4; i++) {
                q4_K[4 + i] = i + 1;
                q4_K[8 + i] = i;
            }
            for (int i = 0; i < 4; i++) {
                q4_K[12 + i] = 0x01; // sub-blocks 4..7: scale 1, min 0
            }
            for (int j = 16; j < 144; j++) {
                q4_K[j] = 0x33;
            }
            MemorySegment wK = GgufBlocks.bytes(t, q4_K);
            float[] xs = new float[8 * 256];
            for (int k = 0; k < 8; k++) {
                for (int l = 0; l < 32; l++) {
                    xs[k * 256 + k * 32 + l] = 1f;
                }
            }
            MemorySegment xK = t.f32(xs);
            for (KernelOps ops : new KernelOps[] {SCALAR, VECTOR}) {
                MemorySegment out0 = t.allocate(Float.BYTES);
                ops.matmulQ4_0(w0, PAD, x0, PAD, out0, PAD, 1, 32, 1, 0, 1);
                assertThat(read(out0, 1)).as("%s q4_0", ops.name()).containsExactly(-8f);
                MemorySegment outK = t.allocate(8 * Float.BYTES);
                ops.matmulQ4_K(wK, PAD, xK, PAD, outK, PAD, 1, 256, 8, 0, 1);
                assertThat(read(outK, 8)).as("%s q4_K", ops.name())
                        .containsExactly(96f, 128f, 160f, 192f, 96f, 96f, 96f, 96f);
            }
        }
    }

    private static float[] run(
            Tensors t, KernelOps ops, TensorType type, MemorySegment w, MemorySegment x, int cols, int batch) {
        MemorySegment out = t.allocate((long) batch * ROWS * Float.BYTES);
        int[] cuts = {0, 2, 7, ROWS};
        for (int i = 0; i + 1 < cuts.length; i++) {
            ops.matmul(type, w, PAD, x, PAD, out, PAD, ROWS, cols, batch, cuts[i], cuts[i + 1]);
        }
        return read(out, batch * ROWS);
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

    /**
     * Four rows against four inputs, four rows against one, one row against four and one against
     * one sum in the same order, so a row's output does not depend on where a part boundary cuts
     * the matrix (nor on how many cores split it) — in compiled code: {@code reduceLanes(ADD)}
     * leaves its order to the implementation, and the interpreter's differs from C2's in the last
     * bit, so both cuts run warm before they are compared.
     */
    @ParameterizedTest(name = "cols = {0}")
    @ValueSource(ints = {7, 64, 513})
    void vectorF32RowsGiveTheSameBitsWhereverTheRangeIsCut(int cols) {
        try (Tensors t = new Tensors(cols)) {
            int rows = 11;
            MemorySegment[] w = new MemorySegment[BATCHES.length];
            MemorySegment[] x = new MemorySegment[BATCHES.length];
            MemorySegment[] whole = new MemorySegment[BATCHES.length];
            MemorySegment[] alone = new MemorySegment[BATCHES.length];
            for (int i = 0; i < BATCHES.length; i++) {
                w[i] = t.f32(t.uniform(rows * cols, -1f, 1f));
                x[i] = t.f32(t.uniform(BATCHES[i] * cols, -1f, 1f));
                whole[i] = t.allocate((long) BATCHES[i] * rows * Float.BYTES);
                alone[i] = t.allocate((long) BATCHES[i] * rows * Float.BYTES);
            }
            // At least a second of calls, then until every cut agrees (once C2 has compiled every
            // path) or 20 s: a lasting difference fails below.
            long start = System.nanoTime();
            boolean agree;
            do {
                agree = true;
                for (int i = 0; i < BATCHES.length; i++) {
                    VECTOR.matmulF32(w[i], PAD, x[i], PAD, whole[i], PAD, rows, cols, BATCHES[i], 0, rows);
                    for (int r = 0; r < rows; r++) {
                        VECTOR.matmulF32(w[i], PAD, x[i], PAD, alone[i], PAD, rows, cols, BATCHES[i], r, r + 1);
                    }
                    agree &= whole[i].asSlice(PAD, (long) BATCHES[i] * rows * Float.BYTES)
                            .mismatch(alone[i].asSlice(PAD, (long) BATCHES[i] * rows * Float.BYTES)) == -1;
                }
            } while (System.nanoTime() - start < 1_000_000_000L
                    || !agree && System.nanoTime() - start < 20_000_000_000L);
            for (int i = 0; i < BATCHES.length; i++) {
                int batch = BATCHES[i];
                float[] expected = read(alone[i], batch * rows);
                float[] actual = read(whole[i], batch * rows);
                for (int j = 0; j < expected.length; j++) {
                    assertThat(Float.floatToRawIntBits(actual[j]))
                            .as("cols %d batch %d out[%d, %d]", cols, batch, j / rows, j % rows)
                            .isEqualTo(Float.floatToRawIntBits(expected[j]));
                }
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
