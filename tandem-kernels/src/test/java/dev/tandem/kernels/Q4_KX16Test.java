package dev.tandem.kernels;

import static dev.tandem.kernels.Tensors.PAD;
import static dev.tandem.kernels.Tensors.SCALAR;
import static dev.tandem.kernels.Tensors.VECTOR;
import static dev.tandem.kernels.Tensors.read;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tandem.kernels.scalar.LittleEndian;
import dev.tandem.kernels.scalar.Q4_0X16;
import dev.tandem.kernels.scalar.ScalarOps;
import java.lang.foreign.MemorySegment;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The interleaved q4_K layout and its int8-input matmul: the layout as {@link TensorType#Q4_K_X16}
 * documents it, the vector kernel against its scalar twin bit for bit (every batch up to 9, ranges
 * on and off the groups, the q4_K rows after the last group), the scalar twin against double
 * precision on the dequantized weights and the quantized inputs, and the short lanes at their
 * extremes.
 */
class Q4_KX16Test {

    // 8 and more: eight inputs a pass, then four, then one at a time (20 = 8 + 8 + 4).
    private static final int[] BATCHES = {1, 2, 3, 4, 5, 8, 9, 12, 16, 20};

    static MemorySegment interleaved(Tensors t, MemorySegment q4k, int rows, int cols) {
        MemorySegment x16 = t.allocate(TensorType.Q4_K.rowBytes(cols) * rows);
        SCALAR.interleaveQ4_K(q4k, PAD, x16, PAD, rows, cols);
        return x16;
    }

    @ParameterizedTest(name = "rows = {0}, cols = {1}")
    @CsvSource({"1, 256", "15, 512", "16, 256", "17, 768", "37, 512", "17, 1536", "16, 2816"})
    void interleavingPutsEveryByteWhereTheLayoutSays(int rows, int cols) {
        try (Tensors t = new Tensors(rows * 13L + cols)) {
            MemorySegment q4k = GgufBlocks.random(t, TensorType.Q4_K, (long) rows * cols);
            MemorySegment x16 = interleaved(t, q4k, rows, cols);
            long rowBytes = TensorType.Q4_K.rowBytes(cols);
            int grouped = rows - rows % 16;
            boolean[] seen = new boolean[(int) (rows * rowBytes)];
            for (int r = 0; r < rows; r++) {
                for (int b = 0; b < cols / 256; b++) {
                    for (int j = 0; j < 144; j++) {
                        long from = r * rowBytes + b * 144L + j;
                        long to;
                        if (r < grouped) {
                            // Chunks of 4 superblocks (a row's last may have fewer): the chunk's
                            // 256-byte headers one after another, then its 2048-byte nibble blocks.
                            int chunkFirst = b / 4 * 4;
                            int inChunk = Math.min(4, cols / 256 - chunkFirst);
                            long chunk = (r - r % 16) * rowBytes + chunkFirst * 2304L;
                            long block = chunk + 256L * (b - chunkFirst);
                            long nibbles = chunk + 256L * inChunk + 2048L * (b - chunkFirst);
                            int i = r % 16;
                            if (j < 2) {
                                to = block + 2L * i + j;
                            } else if (j < 4) {
                                to = block + 32 + 2L * i + j - 2;
                            } else if (j < 16) {
                                to = block + 64 + 16L * (j - 4) + i;
                            } else {
                                int k = j - 16;
                                to = nibbles + 32L * (k / 2) + 2L * i + k % 2;
                            }
                        } else {
                            to = from;
                        }
                        assertThat(x16.get(LittleEndian.I8, PAD + to)).as("row %d block %d byte %d", r, b, j)
                                .isEqualTo(q4k.get(LittleEndian.I8, PAD + from));
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
        "48, 256, 3, 35", "7, 512, 0, 7", "21, 1280, 0, 21", "16, 2816, 0, 16"})
    void vectorMatchesScalarBitForBit(int rows, int cols, int rowStart, int rowEnd) {
        try (Tensors t = new Tensors(rows * 5L + cols + rowStart)) {
            MemorySegment x16 = interleaved(t, GgufBlocks.random(t, TensorType.Q4_K, (long) rows * cols), rows, cols);
            for (int batch : BATCHES) {
                MemorySegment x = t.f32(t.uniform(batch * cols, -2f, 2f));
                Tensors.assertIdentical("matmulQ4_K_X16 rows " + rows + " cols " + cols + " batch " + batch,
                        run(t, VECTOR, x16, x, rows, cols, batch, rowStart, rowEnd),
                        run(t, SCALAR, x16, x, rows, cols, batch, rowStart, rowEnd));
            }
        }
    }

    /**
     * Against double precision on the dequantized weights ({@code d sc n - dmin m}, as
     * {@code dequantize} gives them) times the inputs quantized as {@link MatmulOps#matmulQ4_0_X16}
     * defines: within f32 rounding of the sum of the magnitudes of both terms.
     */
    @ParameterizedTest(name = "rows = {0}, cols = {1}")
    @CsvSource({"16, 256", "37, 512", "32, 4096"})
    void scalarMatchesDoublePrecisionOnTheDequantizedWeights(int rows, int cols) {
        try (Tensors t = new Tensors(rows + cols * 7L)) {
            MemorySegment q4k = GgufBlocks.random(t, TensorType.Q4_K, (long) rows * cols);
            MemorySegment x16 = interleaved(t, q4k, rows, cols);
            float[] w = GgufBlocks.dequantized(t, SCALAR, TensorType.Q4_K, q4k, rows * cols);
            for (int batch : new int[] {1, 5}) {
                float[] x = t.uniform(batch * cols, -3f, 3f);
                float[] quantized = quantized(x);
                float[] got = run(t, SCALAR, x16, t.f32(x), rows, cols, batch, 0, rows);
                for (int b = 0; b < batch; b++) {
                    for (int r = 0; r < rows; r++) {
                        double exact = 0;
                        double magnitude = 0;
                        for (int k = 0; k < cols; k++) {
                            exact += (double) w[r * cols + k] * quantized[b * cols + k];
                            magnitude += Math.abs((double) w[r * cols + k] * quantized[b * cols + k]);
                        }
                        // The two terms of a weight may nearly cancel: bound by their own sizes.
                        double terms = termMagnitude(q4k, r, cols, quantized, b);
                        assertThat((double) got[b * rows + r]).as("row %d input %d", r, b)
                                .isCloseTo(exact, Offset.offset(1e-5 * (magnitude + terms) + 1e-30));
                    }
                }
            }
        }
    }

    /** {@code Σ (|d sc n| + |dmin m|) |xq|} of row {@code r}: the scale of f32 rounding in its sum. */
    private static double termMagnitude(MemorySegment q4k, int r, int cols, float[] xq, int b) {
        double sum = 0;
        long rowBytes = TensorType.Q4_K.rowBytes(cols);
        for (int s = 0; s < cols / 256; s++) {
            long block = PAD + r * rowBytes + s * 144L;
            float d = Float.float16ToFloat(q4k.get(LittleEndian.F16, block));
            float dmin = Float.float16ToFloat(q4k.get(LittleEndian.F16, block + 2));
            for (int t = 0; t < 8; t++) {
                double sc = d * ScalarOps.q4_KScale(q4k, block + 4, t);
                double mn = dmin * ScalarOps.q4_KMin(q4k, block + 4, t);
                for (int l = 0; l < 32; l++) {
                    int packed = q4k.get(LittleEndian.I8, block + 16 + (t / 2) * 32L + l) & 0xff;
                    int n = t % 2 == 0 ? packed & 0x0f : packed >>> 4;
                    sum += (Math.abs(sc * n) + Math.abs(mn)) * Math.abs(xq[b * cols + s * 256 + t * 32 + l]);
                }
            }
        }
        return sum;
    }

    /** The inputs as the kernel's int8 blocks give them back. */
    static float[] quantized(float[] x) {
        float[] out = new float[x.length];
        for (int block = 0; block < x.length / 32; block++) {
            float amax = 0f;
            for (int i = 0; i < 32; i++) {
                amax = Math.max(amax, Math.abs(x[block * 32 + i]));
            }
            float scale = Q4_0X16.scale(amax);
            float d = Q4_0X16.factor(amax);
            for (int i = 0; i < 32; i++) {
                out[block * 32 + i] = Q4_0X16.round(x[block * 32 + i] * scale) * d;
            }
        }
        return out;
    }

    /**
     * Every nibble 15 and every scale and min 63 (with {@code d = 1}, {@code dmin = 0} and
     * {@code dmin = 1}) against inputs of 127: each short lane at its 16 products of
     * {@code 15 * 127}, and the two lanes of a row past a short when added. Exact integers, so the
     * result is known.
     */
    @Test
    void extremeNibblesAndScalesGiveTheExactSum() {
        int rows = 32;
        int cols = 1024;
        try (Tensors t = new Tensors(29)) {
            long rowBytes = TensorType.Q4_K.rowBytes(cols);
            MemorySegment q4k = t.allocate(rowBytes * rows);
            for (int r = 0; r < rows; r++) {
                for (int s = 0; s < cols / 256; s++) {
                    long block = PAD + r * rowBytes + s * 144L;
                    q4k.set(LittleEndian.F16, block, (short) 0x3c00); // d = 1
                    q4k.set(LittleEndian.F16, block + 2, r % 2 == 0 ? (short) 0 : (short) 0x3c00); // dmin 0 or 1
                    for (int k = 0; k < 12; k++) {
                        q4k.set(LittleEndian.I8, block + 4 + k, (byte) 0xff); // every scale and min 63
                    }
                    for (int k = 0; k < 128; k++) {
                        q4k.set(LittleEndian.I8, block + 16 + k, (byte) 0xff);
                    }
                }
            }
            MemorySegment x16 = interleaved(t, q4k, rows, cols);
            for (int batch : BATCHES) {
                float[] x = new float[batch * cols];
                java.util.Arrays.fill(x, 127f);
                float[] vector = run(t, VECTOR, x16, t.f32(x), rows, cols, batch, 0, rows);
                Tensors.assertIdentical("batch " + batch, vector, run(t, SCALAR, x16, t.f32(x), rows, cols, batch, 0, rows));
                for (int b = 0; b < batch; b++) {
                    for (int r = 0; r < rows; r++) {
                        float expected = cols * (63f * 15f - (r % 2 == 0 ? 0f : 63f)) * 127f;
                        assertThat(vector[b * rows + r]).as("input %d row %d", b, r).isEqualTo(expected);
                    }
                }
            }
        }
    }

    /** Rows outside the range keep what {@code out} held. */
    @Test
    void rowsOutsideTheRangeAreNotWritten() {
        try (Tensors t = new Tensors(31)) {
            int rows = 48;
            int cols = 256;
            MemorySegment x16 = interleaved(t, GgufBlocks.random(t, TensorType.Q4_K, (long) rows * cols), rows, cols);
            GgufBlocks.assertOnlyTheRangeIsWritten(t, TensorType.Q4_K_X16, x16, rows, cols, 2, 5, 33);
        }
    }

    @Test
    void badArgumentsFailWithMessagesThatNameThem() {
        try (Tensors t = new Tensors(37)) {
            MemorySegment w = t.allocate(144 * 16);
            MemorySegment x = t.f32(new float[256]);
            MemorySegment out = t.f32(new float[16]);
            for (KernelOps ops : new KernelOps[] {SCALAR, VECTOR}) {
                assertThatThrownBy(() -> ops.matmulQ4_K_X16(w, PAD, x, PAD, out, PAD, 16, 128, 1, 0, 16))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessage("matmulQ4_K_X16: cols = 128 must be a multiple of the q4_K_x16 block size 256");
            }
            assertThatThrownBy(() -> SCALAR.interleaveQ4_K(w, PAD, w, PAD, 16, 128))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("interleaveQ4_K: cols = 128 must be a multiple of the q4_K block size 256");
            assertThatThrownBy(() -> SCALAR.interleave(TensorType.Q4_0_X16, w, PAD, w, PAD, 16, 256))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("interleave: type = Q4_0_X16 has no interleaved layout (Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, Q8_0, F32, F16 and BF16 have one)");
            assertThat(TensorType.Q4_K.interleaved()).isEqualTo(TensorType.Q4_K_X16);
            assertThat(TensorType.Q4_0.interleaved()).isEqualTo(TensorType.Q4_0_X16);
            for (TensorType type : TensorType.values()) {
                if (type != TensorType.Q4_0 && type != TensorType.Q5_0 && type != TensorType.Q4_1 && type != TensorType.Q5_1 && type != TensorType.IQ4_NL && type != TensorType.IQ4_XS && type != TensorType.Q2_K && type != TensorType.Q3_K && type != TensorType.Q4_K && type != TensorType.Q5_K && type != TensorType.Q8_0
                        && type != TensorType.Q6_K && type != TensorType.F32 && type != TensorType.F16
                        && type != TensorType.BF16) {
                    assertThat(type.interleaved()).as("%s", type).isNull();
                }
            }
            assertThatThrownBy(() -> SCALAR.dequantize(TensorType.Q4_K_X16, w, PAD, out, PAD, 256))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("dequantize: type = Q4_K_X16 interleaves whole groups of rows");
        }
    }

    private static float[] run(Tensors t, KernelOps ops, MemorySegment w, MemorySegment x, int rows, int cols,
            int batch, int rowStart, int rowEnd) {
        MemorySegment out = t.allocate((long) batch * rows * Float.BYTES);
        ops.matmulQ4_K_X16(w, PAD, x, PAD, out, PAD, rows, cols, batch, rowStart, rowEnd);
        float[] all = read(out, batch * rows);
        float[] inRange = new float[batch * (rowEnd - rowStart)];
        for (int b = 0; b < batch; b++) {
            System.arraycopy(all, b * rows + rowStart, inRange, b * (rowEnd - rowStart), rowEnd - rowStart);
        }
        return inRange;
    }
}
