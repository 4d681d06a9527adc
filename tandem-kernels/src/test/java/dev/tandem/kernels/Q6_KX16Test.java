package dev.tandem.kernels;

import static dev.tandem.kernels.Tensors.PAD;
import static dev.tandem.kernels.Tensors.SCALAR;
import static dev.tandem.kernels.Tensors.VECTOR;
import static dev.tandem.kernels.Tensors.read;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.tandem.kernels.scalar.LittleEndian;
import dev.tandem.kernels.scalar.NativeInt8;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The interleaved q6_K layout and its int8-input matmul: the layout as {@link TensorType#Q6_K_X16}
 * documents it, the vector kernel against its scalar twin bit for bit (every batch up to 9, ranges
 * on and off the groups, the q6_K rows after the last group), the scalar twin against double
 * precision on the weights as {@code dequantize} gives them and the quantized inputs, and the
 * short lanes at their extremes.
 */
class Q6_KX16Test {

    // 8 and more: eight inputs a pass, then one at a time (20 = 8 + 8 + 4); the native kernel four
    // at a time, then one (17 = 4 * 4 + 1).
    private static final int[] BATCHES = {1, 2, 3, 4, 5, 8, 9, 12, 16, 17, 20};

    static MemorySegment interleaved(Tensors t, MemorySegment q6k, int rows, int cols) {
        MemorySegment x16 = t.allocate(TensorType.Q6_K.rowBytes(cols) * rows);
        SCALAR.interleaveQ6_K(q6k, PAD, x16, PAD, rows, cols);
        return x16;
    }

    @ParameterizedTest(name = "rows = {0}, cols = {1}")
    @CsvSource({"1, 256", "15, 512", "16, 256", "17, 768", "37, 512"})
    void interleavingPutsEveryByteWhereTheLayoutSays(int rows, int cols) {
        try (Tensors t = new Tensors(rows * 17L + cols)) {
            MemorySegment q6k = GgufBlocks.random(t, TensorType.Q6_K, (long) rows * cols);
            MemorySegment x16 = interleaved(t, q6k, rows, cols);
            long rowBytes = TensorType.Q6_K.rowBytes(cols);
            int grouped = rows - rows % 16;
            boolean[] seen = new boolean[(int) (rows * rowBytes)];
            for (int r = 0; r < rows; r++) {
                for (int b = 0; b < cols / 256; b++) {
                    for (int j = 0; j < 210; j++) {
                        long from = r * rowBytes + b * 210L + j;
                        long to;
                        if (r < grouped) {
                            long block = (r - r % 16) * rowBytes + b * 3360L;
                            int i = r % 16;
                            if (j < 128) { // ql pair j / 2 = 32h + 16u + 8s + t: run 16h + 8s + t, slot u
                                int pair = j / 2;
                                int run = 16 * (pair / 32) + pair % 16;
                                to = block + 288 + 96L * run + 32L * (pair % 32 / 16) + 2L * i + j % 2;
                            } else if (j < 192) { // qh pair k / 2: its own run, slot 2
                                int k = j - 128;
                                to = block + 288 + 96L * (k / 2) + 64 + 2L * i + k % 2;
                            } else if (j < 208) { // scales
                                to = block + 32 + 16L * (j - 192) + i;
                            } else { // d
                                to = block + 2L * i + j - 208;
                            }
                        } else {
                            to = from;
                        }
                        assertThat(x16.get(LittleEndian.I8, PAD + to)).as("row %d block %d byte %d", r, b, j)
                                .isEqualTo(q6k.get(LittleEndian.I8, PAD + from));
                        assertThat(seen[(int) to]).as("byte %d written twice", to).isFalse();
                        seen[(int) to] = true;
                    }
                }
            }
        }
    }

    /** Interleaved bytes, rows and range; the two implementations must agree on every bit. */
    @ParameterizedTest(name = "rows = {0}, cols = {1}, rows [{2}, {3})")
    @CsvSource({"16, 256, 0, 16", "48, 512, 0, 48", "37, 256, 0, 37", "37, 1024, 16, 37", "32, 4096, 0, 32",
        "48, 256, 3, 35", "7, 512, 0, 7"})
    void vectorMatchesScalarBitForBit(int rows, int cols, int start, int end) {
        try (Tensors t = new Tensors(rows * 7L + cols + start)) {
            MemorySegment x16 = interleaved(t, GgufBlocks.random(t, TensorType.Q6_K, (long) rows * cols), rows, cols);
            for (int batch : BATCHES) {
                MemorySegment x = t.f32(t.uniform(batch * cols, -2f, 2f));
                Tensors.assertIdentical("matmulQ6_K_X16 rows " + rows + " cols " + cols + " batch " + batch,
                        run(t, VECTOR, x16, x, rows, cols, batch, start, end),
                        run(t, SCALAR, x16, x, rows, cols, batch, start, end));
            }
        }
    }

    /**
     * Against double precision on the weights as {@code dequantize} gives them
     * ({@code d sc (q - 32)}) times the inputs quantized as {@link MatmulOps#matmulQ4_0_X16}
     * defines: within f32 rounding of the sum of the magnitudes of the products.
     */
    @ParameterizedTest(name = "rows = {0}, cols = {1}")
    @CsvSource({"16, 256", "37, 512", "32, 4096"})
    void scalarMatchesDoublePrecisionOnTheDequantizedWeights(int rows, int cols) {
        try (Tensors t = new Tensors(rows + cols * 11L)) {
            MemorySegment q6k = GgufBlocks.random(t, TensorType.Q6_K, (long) rows * cols);
            MemorySegment x16 = interleaved(t, q6k, rows, cols);
            float[] w = GgufBlocks.dequantized(t, SCALAR, TensorType.Q6_K, q6k, rows * cols);
            for (int batch : new int[] {1, 5}) {
                float[] x = t.uniform(batch * cols, -3f, 3f);
                float[] quantized = Q4_KX16Test.quantized(x);
                float[] got = run(t, SCALAR, x16, t.f32(x), rows, cols, batch, 0, rows);
                for (int b = 0; b < batch; b++) {
                    for (int r = 0; r < rows; r++) {
                        double exact = 0;
                        double magnitude = 0;
                        for (int k = 0; k < cols; k++) {
                            exact += (double) w[r * cols + k] * quantized[b * cols + k];
                            magnitude += Math.abs((double) w[r * cols + k] * quantized[b * cols + k]);
                        }
                        assertThat((double) got[b * rows + r]).as("row %d input %d", r, b)
                                .isCloseTo(exact, Offset.offset(1e-5 * magnitude + 1e-30));
                    }
                }
            }
        }
    }

    /**
     * Every quant 0 (meaning -32, the extreme) or 48 (meaning 16), every scale 127 and
     * {@code d = 1}, against inputs of 127 or -127: each short lane at its 8 products of
     * {@code ±32 * 127}, and the two lanes of a row past a short when added. Exact integers, so
     * the result is known.
     */
    @Test
    void extremeQuantsAndScalesGiveTheExactSum() {
        int rows = 32;
        int cols = 1024;
        try (Tensors t = new Tensors(41)) {
            long rowBytes = TensorType.Q6_K.rowBytes(cols);
            MemorySegment q6k = t.allocate(rowBytes * rows);
            for (int r = 0; r < rows; r++) {
                // Even rows: every quant 0 (-32); odd rows: 48 (16), the high bits set. Every
                // partial sum is then an exact float, so the result is exact.
                byte high = r % 2 == 0 ? 0 : (byte) 0xff;
                for (int s = 0; s < cols / 256; s++) {
                    long block = PAD + r * rowBytes + s * 210L;
                    for (int k = 0; k < 192; k++) {
                        q6k.set(LittleEndian.I8, block + k, k < 128 ? 0 : high);
                    }
                    for (int k = 192; k < 208; k++) {
                        q6k.set(LittleEndian.I8, block + k, (byte) 127);
                    }
                    q6k.set(LittleEndian.F16, block + 208, (short) 0x3c00); // d = 1
                }
            }
            MemorySegment x16 = interleaved(t, q6k, rows, cols);
            for (float input : new float[] {127f, -127f}) {
                for (int batch : BATCHES) {
                    float[] x = new float[batch * cols];
                    Arrays.fill(x, input);
                    float[] vector = run(t, VECTOR, x16, t.f32(x), rows, cols, batch, 0, rows);
                    Tensors.assertIdentical("batch " + batch, vector,
                            run(t, SCALAR, x16, t.f32(x), rows, cols, batch, 0, rows));
                    for (int b = 0; b < batch; b++) {
                        for (int r = 0; r < rows; r++) {
                            float expected = cols * (r % 2 == 0 ? -32f : 16f) * 127f * input;
                            assertThat(vector[b * rows + r]).as("input %s %d row %d", input, b, r).isEqualTo(expected);
                        }
                    }
                }
            }
        }
    }

    /**
     * Factors {@code d} of every kind (zeros, subnormals, the largest finite, infinities, NaN)
     * widen in the native kernel as in the scalar twin: in the second of three groups, the others'
     * random and finite. Where the native kernel runs only, as FiveBitsX16Test's scales say why.
     */
    @Test
    void everyKindOfFactorWidensAsTheScalarTwin() {
        assumeTrue(NativeInt8.available(), "the native kernel's widening; the Java loops' is Q4_0X16Test's");
        short[] factors = GgufBlocks.EVERY_KIND_OF_HALF;
        int rows = 53;
        int cols = 512;
        try (Tensors t = new Tensors(53)) {
            long rowBytes = TensorType.Q6_K.rowBytes(cols);
            MemorySegment q6k = GgufBlocks.random(t, TensorType.Q6_K, (long) rows * cols);
            for (int r = 16; r < 32; r++) {
                for (int s = 0; s < cols / 256; s++) {
                    q6k.set(LittleEndian.F16, PAD + r * rowBytes + s * 210L + 208, factors[(r + 7 * s) % 16]);
                }
            }
            MemorySegment x16 = interleaved(t, q6k, rows, cols);
            for (int batch : BATCHES) {
                MemorySegment x = t.f32(t.uniform(batch * cols, -2f, 2f));
                Tensors.assertIdentical("batch " + batch, run(t, VECTOR, x16, x, rows, cols, batch, 0, rows),
                        run(t, SCALAR, x16, x, rows, cols, batch, 0, rows));
            }
        }
    }

    /** Rows outside the range keep what {@code out} held. */
    @Test
    void rowsOutsideTheRangeAreNotWritten() {
        try (Tensors t = new Tensors(43)) {
            int rows = 48;
            int cols = 256;
            MemorySegment x16 = interleaved(t, GgufBlocks.random(t, TensorType.Q6_K, (long) rows * cols), rows, cols);
            GgufBlocks.assertOnlyTheRangeIsWritten(t, TensorType.Q6_K_X16, x16, rows, cols, 2, 5, 33);
        }
    }

    @Test
    void badArgumentsFailWithMessagesThatNameThem() {
        try (Tensors t = new Tensors(47)) {
            MemorySegment w = t.allocate(210 * 16);
            MemorySegment x = t.f32(new float[256]);
            MemorySegment out = t.f32(new float[16]);
            for (KernelOps ops : new KernelOps[] {SCALAR, VECTOR}) {
                assertThatThrownBy(() -> ops.matmulQ6_K_X16(w, PAD, x, PAD, out, PAD, 16, 128, 1, 0, 16))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessage("matmulQ6_K_X16: cols = 128 must be a multiple of the q6_K_x16 block size 256");
                assertThatThrownBy(() -> ops.matmulQ6_K_X16(w, PAD, x, PAD, out, PAD, 17, 256, 1, 0, 17))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageStartingWith("matmulQ6_K_X16: weights");
            }
            assertThatThrownBy(() -> SCALAR.interleaveQ6_K(w, PAD, w, PAD, 16, 128))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("interleaveQ6_K: cols = 128 must be a multiple of the q6_K block size 256");
            assertThat(TensorType.Q6_K.interleaved()).isEqualTo(TensorType.Q6_K_X16);
            assertThat(TensorType.Q6_K_X16.source()).isEqualTo(TensorType.Q6_K);
            assertThat(TensorType.Q6_K_X16.inFiles()).isFalse();
            assertThatThrownBy(() -> SCALAR.dequantize(TensorType.Q6_K_X16, w, PAD, out, PAD, 256))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("dequantize: type = Q6_K_X16 interleaves whole groups of rows");
        }
    }

    private static float[] run(Tensors t, KernelOps ops, MemorySegment w, MemorySegment x, int rows, int cols,
            int batch, int rowStart, int rowEnd) {
        MemorySegment out = t.allocate((long) batch * rows * Float.BYTES);
        ops.matmulQ6_K_X16(w, PAD, x, PAD, out, PAD, rows, cols, batch, rowStart, rowEnd);
        float[] all = read(out, batch * rows);
        float[] inRange = new float[batch * (rowEnd - rowStart)];
        for (int b = 0; b < batch; b++) {
            System.arraycopy(all, b * rows + rowStart, inRange, b * (rowEnd - rowStart), rowEnd - rowStart);
        }
        return inRange;
    }
}
