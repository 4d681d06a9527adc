package dev.tandem.kernels;

import static dev.tandem.kernels.Tensors.PAD;
import static dev.tandem.kernels.Tensors.SCALAR;
import static dev.tandem.kernels.Tensors.VECTOR;
import static dev.tandem.kernels.Tensors.read;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tandem.kernels.scalar.LittleEndian;
import dev.tandem.kernels.scalar.Q4_0X16;
import dev.tandem.kernels.vector.VectorLanes;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The interleaved q4_0 layout and its matmul: the layout as {@link TensorType#Q4_0_X16} documents
 * it, the vector kernel against its scalar twin bit for bit (every batch, ranges on and off the
 * groups, the q4_0 rows after the last group), and the scalar twin against double-precision
 * arithmetic on the dequantized weights, with the quantized inputs and with the f32 inputs.
 */
class Q4_0X16Test {

    // 8 and more: the eight-input loop, then four, then one at a time (20 = 8 + 8 + 4).
    private static final int[] BATCHES = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 20};

    private static MemorySegment interleaved(Tensors t, MemorySegment q4, int rows, int cols) {
        MemorySegment x16 = t.allocate(TensorType.Q4_0.rowBytes(cols) * rows);
        SCALAR.interleaveQ4_0(q4, PAD, x16, PAD, rows, cols);
        return x16;
    }

    @ParameterizedTest(name = "rows = {0}, cols = {1}")
    @CsvSource({"1, 32", "15, 64", "16, 32", "17, 96", "48, 64", "37, 512"})
    void interleavingPutsEveryByteWhereTheLayoutSays(int rows, int cols) {
        try (Tensors t = new Tensors(rows * 31L + cols)) {
            MemorySegment q4 = GgufBlocks.random(t, TensorType.Q4_0, (long) rows * cols);
            MemorySegment x16 = interleaved(t, q4, rows, cols);
            long rowBytes = TensorType.Q4_0.rowBytes(cols);
            int grouped = rows - rows % 16;
            boolean[] seen = new boolean[(int) (rows * rowBytes)];
            for (int r = 0; r < rows; r++) {
                for (int b = 0; b < cols / 32; b++) {
                    for (int j = 0; j < 18; j++) {
                        long from = r * rowBytes + b * 18L + j;
                        long to;
                        if (r < grouped) {
                            long block = (r - r % 16) * rowBytes + b * 288L;
                            to = j < 2 ? block + 2L * (r % 16) + j : block + 32 + 32L * ((j - 2) / 2) + 2L * (r % 16) + (j - 2) % 2;
                        } else {
                            to = from;
                        }
                        assertThat(x16.get(LittleEndian.I8, PAD + to)).as("row %d block %d byte %d", r, b, j)
                                .isEqualTo(q4.get(LittleEndian.I8, PAD + from));
                        assertThat(seen[(int) to]).as("byte %d written twice", to).isFalse();
                        seen[(int) to] = true;
                    }
                }
            }
        }
    }

    /** Interleaved bytes, rows and range; the two implementations must agree on every bit. */
    @ParameterizedTest(name = "rows = {0}, cols = {1}, rows [{2}, {3})")
    @CsvSource({
        "16, 32, 0, 16", "16, 512, 0, 16", "48, 544, 0, 48", "37, 64, 0, 37", "37, 1024, 16, 37",
        "64, 4096, 0, 64", "48, 96, 3, 35", "21, 32, 5, 21", "7, 64, 0, 7"
    })
    void vectorMatchesScalarBitForBit(int rows, int cols, int rowStart, int rowEnd) {
        try (Tensors t = new Tensors(rows * 7L + cols + rowStart)) {
            MemorySegment x16 = interleaved(t, GgufBlocks.random(t, TensorType.Q4_0, (long) rows * cols), rows, cols);
            for (int batch : BATCHES) {
                MemorySegment x = t.f32(t.uniform(batch * cols, -2f, 2f));
                float[] scalar = run(t, SCALAR, x16, x, rows, cols, batch, rowStart, rowEnd);
                float[] vector = run(t, VECTOR, x16, x, rows, cols, batch, rowStart, rowEnd);
                Tensors.assertIdentical("matmulQ4_0_X16 rows " + rows + " cols " + cols + " batch " + batch, vector,
                        scalar);
            }
        }
    }

    /**
     * Every class of f16 scale (zeros, subnormals, normals, infinities, NaN) widens in the vector
     * kernel as {@link Float#float16ToFloat} does: the first group's scales are all finite (the
     * kernel's short path), the second group's include infinities and NaN (its full widening).
     */
    @Test
    void everyKindOfScaleWidensAsTheScalarTwin() {
        short[] finite = {0x0000, (short) 0x8000, 0x0001, (short) 0x8001, 0x03ff, 0x0400, 0x3c00, (short) 0xbc00,
            0x7bff, (short) 0xfbff, 0x1234, (short) 0x9abc, 0x0200, 0x3555, 0x0001, 0x2e66};
        short[] special = {0x7c00, (short) 0xfc00, 0x7e00, 0x7c01, (short) 0xfe00, 0x3c00, 0x0001, 0x0000,
            0x3c00, 0x3c00, 0x3c00, 0x3c00, 0x3c00, 0x3c00, 0x3c00, 0x3c00};
        int rows = 48;
        int cols = 64;
        try (Tensors t = new Tensors(17)) {
            MemorySegment q4 = GgufBlocks.random(t, TensorType.Q4_0, (long) rows * cols);
            for (int r = 0; r < 32; r++) {
                for (int b = 0; b < cols / 32; b++) {
                    short scale = r < 16 ? finite[(r + b) % 16] : special[(r - 16 + 5 * b) % 16];
                    q4.set(LittleEndian.F16, PAD + r * TensorType.Q4_0.rowBytes(cols) + b * 18L, scale);
                }
            }
            MemorySegment x16 = interleaved(t, q4, rows, cols);
            for (int batch : BATCHES) {
                MemorySegment x = t.f32(t.uniform(batch * cols, -2f, 2f));
                Tensors.assertIdentical("batch " + batch, run(t, VECTOR, x16, x, rows, cols, batch, 0, rows),
                        run(t, SCALAR, x16, x, rows, cols, batch, 0, rows));
            }
        }
    }

    /**
     * The short lanes at their extremes: every nibble 0 or 15 (weights -8 and 7) against inputs of
     * 127 in every lane, or 127 and -127 alternating, at each batch (the one-input loop and the
     * four-input one): sums that would wrap a short if a lane held more than its 16 products.
     * Exact integers, so the result is known: {@code 32 * (nibble - 8) * 127} per block of 1.0s.
     */
    @Test
    void extremeNibblesAndQuantsDoNotWrapTheShortSums() {
        int rows = 32;
        int cols = 1024;
        try (Tensors t = new Tensors(23)) {
            MemorySegment q4 = t.allocate(TensorType.Q4_0.rowBytes(cols) * rows);
            for (int r = 0; r < rows; r++) {
                for (int b = 0; b < cols / 32; b++) {
                    long block = PAD + r * TensorType.Q4_0.rowBytes(cols) + b * 18L;
                    q4.set(LittleEndian.F16, block, (short) 0x3c00); // 1.0
                    for (int k = 0; k < 16; k++) {
                        q4.set(LittleEndian.I8, block + 2 + k, (byte) (r % 2 == 0 ? 0xff : 0x00));
                    }
                }
            }
            MemorySegment x16 = interleaved(t, q4, rows, cols);
            for (int batch : BATCHES) {
                float[] x = GgufBlocks.extremeInputs(batch, cols);
                float[] vector = run(t, VECTOR, x16, t.f32(x), rows, cols, batch, 0, rows);
                Tensors.assertIdentical("batch " + batch, vector, run(t, SCALAR, x16, t.f32(x), rows, cols, batch, 0, rows));
                for (int b = 0; b < batch; b++) {
                    for (int r = 0; r < rows; r++) {
                        float expected = b % 2 == 0 ? cols * (r % 2 == 0 ? 7f : -8f) * 127f : 0f;
                        assertThat(vector[b * rows + r]).as("input %d row %d", b, r).isEqualTo(expected);
                    }
                }
            }
        }
    }

    /**
     * The vector quantizer fills the inputs exactly as the scalar one does, {@code 8 * sum q} per
     * block included (the four-input and q4_K vector loops take it off their sums), for blocks of
     * every scale: zeros, halves that round away from zero, tiny and huge magnitudes.
     */
    @Test
    void vectorQuantizerFillsTheInputsAsTheScalarOne() {
        try (Tensors t = new Tensors(41)) {
            int cols = 512;
            float[] x = t.uniform(cols, -1f, 1f);
            for (int i = 0; i < 32; i++) {
                x[32 + i] = 0f; // an all-zero block
                x[64 + i] = (i - 16) * 0.5f; // halves of a step
                x[96 + i] *= 1e-30f;
                x[128 + i] *= 3e30f;
            }
            MemorySegment segment = t.f32(x);
            Q4_0X16.Inputs scalar = Q4_0X16.Inputs.of(1, cols);
            for (int block = 0; block < cols / 32; block++) {
                Q4_0X16.quantizeBlock(segment, PAD, block, scalar, 0, 0);
            }
            Q4_0X16.Inputs vector = Q4_0X16.Inputs.of(1, cols);
            VectorLanes.quantizeX16(segment, PAD, cols / 32, vector, 0, 0);
            assertThat(vector.pairs()).containsExactly(scalar.pairs());
            assertThat(vector.d()).containsExactly(scalar.d());
            assertThat(vector.sum8()).containsExactly(scalar.sum8());
            int sum = 0;
            for (int i = 0; i < 32; i++) {
                sum += scalar.quant(i);
            }
            assertThat(scalar.sum8()[0]).isEqualTo(8 * sum);
        }
    }

    /** Rows outside the range keep what {@code out} held. */
    @Test
    void rowsOutsideTheRangeAreNotWritten() {
        try (Tensors t = new Tensors(3)) {
            int rows = 48;
            int cols = 64;
            MemorySegment x16 = interleaved(t, GgufBlocks.random(t, TensorType.Q4_0, (long) rows * cols), rows, cols);
            GgufBlocks.assertOnlyTheRangeIsWritten(t, TensorType.Q4_0_X16, x16, rows, cols, 2, 16, 32);
        }
    }

    /**
     * Against double precision on the dequantized weights: with the inputs quantized as the kernel
     * defines, within f32 rounding; with the f32 inputs, within the inputs' rounding, {@code 0.57 *
     * amax / 127} per value.
     */
    @ParameterizedTest(name = "rows = {0}, cols = {1}")
    @CsvSource({"16, 32", "37, 544", "32, 4096"})
    void scalarMatchesDoublePrecisionOnTheDequantizedWeights(int rows, int cols) {
        try (Tensors t = new Tensors(rows + cols * 3L)) {
            MemorySegment q4 = GgufBlocks.random(t, TensorType.Q4_0, (long) rows * cols);
            float[] w = GgufBlocks.dequantized(t, SCALAR, TensorType.Q4_0, q4, rows * cols);
            MemorySegment x16 = interleaved(t, q4, rows, cols);
            for (int batch : new int[] {1, 5}) {
                float[] x = t.uniform(batch * cols, -3f, 3f);
                float[] got = run(t, SCALAR, x16, t.f32(x), rows, cols, batch, 0, rows);
                float[] quantized = new float[x.length];
                float[] stepBound = new float[x.length];
                for (int block = 0; block < x.length / 32; block++) {
                    float amax = 0f;
                    for (int i = 0; i < 32; i++) {
                        amax = Math.max(amax, Math.abs(x[block * 32 + i]));
                    }
                    float scale = Q4_0X16.scale(amax);
                    float d = Q4_0X16.factor(amax);
                    for (int i = 0; i < 32; i++) {
                        int q = Q4_0X16.round(x[block * 32 + i] * scale);
                        assertThat(Math.abs(q)).isLessThanOrEqualTo(127);
                        quantized[block * 32 + i] = q * d;
                        stepBound[block * 32 + i] = 0.57f * amax / 127f;
                    }
                }
                for (int b = 0; b < batch; b++) {
                    for (int r = 0; r < rows; r++) {
                        double exact = 0;
                        double withQuantized = 0;
                        double magnitude = 0;
                        double inputError = 0;
                        for (int k = 0; k < cols; k++) {
                            double wk = w[r * cols + k];
                            exact += wk * x[b * cols + k];
                            withQuantized += wk * quantized[b * cols + k];
                            magnitude += Math.abs(wk * quantized[b * cols + k]);
                            inputError += Math.abs(wk) * stepBound[b * cols + k];
                        }
                        float value = got[b * rows + r];
                        assertThat((double) value).as("row %d input %d, quantized inputs", r, b)
                                .isCloseTo(withQuantized, org.assertj.core.data.Offset.offset(1e-5 * magnitude + 1e-30));
                        assertThat((double) value).as("row %d input %d, f32 inputs", r, b)
                                .isCloseTo(exact, org.assertj.core.data.Offset.offset(inputError + 1e-5 * magnitude));
                    }
                }
            }
        }
    }

    /**
     * Inputs whose quantization is known exactly: a block whose largest magnitude is 127 keeps its
     * integers; halves round away from zero; an all-zero block gives 0; a NaN gives NaN.
     */
    @Test
    void quantizationOfInputsRoundsAsDocumented() {
        try (Tensors t = new Tensors(9)) {
            // One row: the weights' nibbles are all 9 (value 1 * d) with d = 1, so out = sum of the
            // dequantized inputs.
            int[] block = new int[18];
            block[1] = 0x3c; // f16 1.0
            for (int j = 0; j < 16; j++) {
                block[2 + j] = 0x99;
            }
            MemorySegment w = GgufBlocks.bytes(t, block);
            float[] integers = new float[32];
            for (int i = 0; i < 32; i++) {
                integers[i] = i - 16;
            }
            integers[0] = 127f;
            float[] halves = new float[32];
            halves[0] = 127f;
            halves[1] = 0.5f; // 0.5 rounds to 1
            halves[2] = -0.5f; // -0.5 rounds to -1
            halves[3] = 0.49f; // rounds to 0
            float[] nan = new float[32];
            nan[5] = Float.NaN;
            float[][] inputs = {integers, halves, new float[32], nan};
            float[] expected = {127f + sumOf(integers, 1), 127f + 1f - 1f, 0f, Float.NaN};
            MemorySegment x = t.f32(concat(inputs));
            for (KernelOps ops : new KernelOps[] {SCALAR, VECTOR}) {
                MemorySegment out = t.allocate(4L * inputs.length);
                ops.matmulQ4_0_X16(w, PAD, x, PAD, out, PAD, 1, 32, inputs.length, 0, 1);
                assertThat(read(out, inputs.length)).as(ops.name()).containsExactly(expected);
            }
        }
    }

    private static float sumOf(float[] values, int from) {
        float sum = 0f;
        for (int i = from; i < values.length; i++) {
            sum += values[i];
        }
        return sum;
    }

    private static float[] concat(float[][] arrays) {
        return Arrays.stream(arrays).reduce(new float[0], (a, b) -> {
            float[] c = Arrays.copyOf(a, a.length + b.length);
            System.arraycopy(b, 0, c, a.length, b.length);
            return c;
        });
    }

    @Test
    void badArgumentsFailWithMessagesThatNameThem() {
        try (Tensors t = new Tensors(1)) {
            MemorySegment a = t.allocate(4096);
            for (KernelOps ops : new KernelOps[] {SCALAR, VECTOR}) {
                assertThatThrownBy(() -> ops.dequantize(TensorType.Q4_0_X16, a, PAD, a, PAD, 32))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageStartingWith("dequantize: type = Q4_0_X16 interleaves whole groups of rows");
                assertThatThrownBy(() -> ops.quantize(TensorType.Q4_0_X16, a, PAD, a, PAD, 32))
                        .hasMessage("quantize: type = Q4_0_X16 has no quantizer; tandem quantizes to F32, F16, BF16,"
                                + " Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1");
                assertThatThrownBy(() -> ops.interleaveQ4_0(a, PAD, a, PAD, 1, 48))
                        .hasMessage("interleaveQ4_0: cols = 48 must be a multiple of the q4_0 block size 32");
                assertThatThrownBy(() -> ops.interleaveQ4_0(a, PAD, t.allocate(100), PAD, 16, 32))
                        .hasMessage("interleaveQ4_0: dst segment of 112 bytes is too small: 288 bytes needed at"
                                + " dstOffset = 12");
                assertThatThrownBy(() -> ops.matmulQ4_0_X16(a, PAD, a, PAD, a, PAD, 1, 48, 1, 0, 1))
                        .hasMessage("matmulQ4_0_X16: cols = 48 must be a multiple of the q4_0_x16 block size 32");
                assertThatThrownBy(() -> ops.embed(TensorType.Q4_0_X16, a, PAD, a, PAD, 1, 32, 0))
                        .isInstanceOf(IllegalArgumentException.class);
            }
            assertThatThrownBy(() -> TensorType.fromName("q4_0_x16"))
                    .hasMessage("'q4_0_x16' is not a ggml tensor type name");
        }
    }

    private static float[] run(Tensors t, KernelOps ops, MemorySegment w, MemorySegment x, int rows, int cols,
            int batch, int rowStart, int rowEnd) {
        MemorySegment out = t.allocate((long) batch * rows * Float.BYTES);
        ops.matmulQ4_0_X16(w, PAD, x, PAD, out, PAD, rows, cols, batch, rowStart, rowEnd);
        float[] all = read(out, batch * rows);
        float[] inRange = new float[batch * (rowEnd - rowStart)];
        for (int b = 0; b < batch; b++) {
            System.arraycopy(all, b * rows + rowStart, inRange, b * (rowEnd - rowStart), rowEnd - rowStart);
        }
        return inRange;
    }
}
