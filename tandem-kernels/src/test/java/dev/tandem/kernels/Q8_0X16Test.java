package dev.tandem.kernels;

import static dev.tandem.kernels.Tensors.PAD;
import static dev.tandem.kernels.Tensors.SCALAR;
import static dev.tandem.kernels.Tensors.VECTOR;
import static dev.tandem.kernels.Tensors.read;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tandem.kernels.scalar.LittleEndian;
import dev.tandem.kernels.scalar.Q4_0X16;
import java.lang.foreign.MemorySegment;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The interleaved q8_0 layout and its matmul: the layout as {@link TensorType#Q8_0_X16} documents
 * it, the vector kernel (the native one where it runs) against its scalar twin bit for bit (every
 * batch, ranges on and off the groups, the q8_0 rows after the last group, the largest products),
 * and the scalar twin against the plain q8_0 kernel and double-precision arithmetic on the
 * dequantized weights and quantized inputs.
 */
class Q8_0X16Test {

    /** One input, four, eight, and every mix of them up to 8 + 8 + 1. */
    private static final int[] BATCHES = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 17};

    private static MemorySegment interleaved(Tensors t, MemorySegment q8, int rows, int cols) {
        MemorySegment x16 = t.allocate(TensorType.Q8_0.rowBytes(cols) * rows);
        SCALAR.interleave(TensorType.Q8_0, q8, PAD, x16, PAD, rows, cols);
        return x16;
    }

    private static float[] run(Tensors t, KernelOps ops, MemorySegment w, MemorySegment x, int rows, int cols,
            int batch, int rowStart, int rowEnd) {
        MemorySegment out = t.f32(new float[batch * rows]);
        ops.matmul(TensorType.Q8_0_X16, w, PAD, x, PAD, out, PAD, rows, cols, batch, rowStart, rowEnd);
        return read(out, batch * rows);
    }

    @ParameterizedTest(name = "rows = {0}, cols = {1}")
    @CsvSource({"1, 32", "15, 64", "16, 32", "17, 96", "48, 64", "37, 512"})
    void interleavingPutsEveryByteWhereTheLayoutSays(int rows, int cols) {
        try (Tensors t = new Tensors(rows * 29L + cols)) {
            MemorySegment q8 = GgufBlocks.random(t, TensorType.Q8_0, (long) rows * cols);
            MemorySegment x16 = interleaved(t, q8, rows, cols);
            long rowBytes = TensorType.Q8_0.rowBytes(cols);
            int grouped = rows - rows % 16;
            boolean[] seen = new boolean[(int) (rows * rowBytes)];
            for (int r = 0; r < rows; r++) {
                for (int b = 0; b < cols / 32; b++) {
                    for (int j = 0; j < 34; j++) {
                        long from = r * rowBytes + b * 34L + j;
                        long to;
                        if (r < grouped) {
                            int i = r % 16;
                            long groupStart = (r - i) * rowBytes;
                            if (b % 2 == 0 && b + 1 == cols / 32) { // a last odd block, alone
                                long block = groupStart + b * 544L;
                                to = j < 2 ? block + 2L * i + j : block + 32 + 16L * (j - 2) + i;
                            } else { // a pair: both blocks' scales, then their quants k side by side
                                long pair = groupStart + (b - b % 2) * 544L;
                                to = j < 2 ? pair + 32L * (b % 2) + 2L * i + j
                                        : pair + 64 + 32L * (j - 2) + 16L * (b % 2) + i;
                            }
                        } else {
                            to = from;
                        }
                        assertThat(x16.get(LittleEndian.I8, PAD + to)).as("row %d block %d byte %d", r, b, j)
                                .isEqualTo(q8.get(LittleEndian.I8, PAD + from));
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
        try (Tensors t = new Tensors(rows * 5L + cols + rowStart)) {
            MemorySegment x16 = interleaved(t, GgufBlocks.random(t, TensorType.Q8_0, (long) rows * cols), rows, cols);
            for (int batch : BATCHES) {
                MemorySegment x = t.f32(t.uniform(batch * cols, -2f, 2f));
                Tensors.assertIdentical("matmulQ8_0_X16 rows " + rows + " cols " + cols + " batch " + batch,
                        run(t, VECTOR, x16, x, rows, cols, batch, rowStart, rowEnd),
                        run(t, SCALAR, x16, x, rows, cols, batch, rowStart, rowEnd));
            }
        }
    }

    /** Scales of every class (zeros, subnormals, infinities, NaN) widen in the vector kernel as in the scalar twin. */
    @Test
    void everyKindOfScaleWidensAsTheScalarTwin() {
        short[] scales = {0x0000, (short) 0x8000, 0x0001, (short) 0x8001, 0x03ff, 0x0400, 0x3c00, (short) 0xbc00,
            0x7bff, (short) 0xfbff, 0x7c00, (short) 0xfc00, 0x7e00, 0x7c01, 0x0200, 0x2e66};
        int rows = 32;
        int cols = 64;
        try (Tensors t = new Tensors(19)) {
            MemorySegment q8 = GgufBlocks.random(t, TensorType.Q8_0, (long) rows * cols);
            for (int r = 0; r < rows; r++) {
                for (int b = 0; b < cols / 32; b++) {
                    short scale = r < 16 ? scales[(r + b) % 10] : scales[(r + 3 * b) % 16];
                    q8.set(LittleEndian.F16, PAD + r * TensorType.Q8_0.rowBytes(cols) + b * 34L, scale);
                }
            }
            MemorySegment x16 = interleaved(t, q8, rows, cols);
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
        try (Tensors t = new Tensors(3)) {
            int rows = 48;
            int cols = 64;
            MemorySegment x16 = interleaved(t, GgufBlocks.random(t, TensorType.Q8_0, (long) rows * cols), rows, cols);
            GgufBlocks.assertOnlyTheRangeIsWritten(t, TensorType.Q8_0_X16, x16, rows, cols, 5, 16, 32);
        }
    }

    /**
     * Against double precision on the dequantized weights and the inputs quantized as the kernel
     * defines, within f32 rounding of the magnitudes.
     */
    @ParameterizedTest(name = "rows = {0}, cols = {1}")
    @CsvSource({"16, 32", "37, 544", "32, 4096"})
    void matchesDoublePrecisionOnTheQuantizedInputs(int rows, int cols) {
        try (Tensors t = new Tensors(rows + cols * 7L)) {
            MemorySegment q8 = GgufBlocks.random(t, TensorType.Q8_0, (long) rows * cols);
            float[] w = GgufBlocks.dequantized(t, SCALAR, TensorType.Q8_0, q8, rows * cols);
            MemorySegment x16 = interleaved(t, q8, rows, cols);
            for (int batch : new int[] {1, 5}) {
                float[] x = t.uniform(batch * cols, -3f, 3f);
                float[] got = run(t, SCALAR, x16, t.f32(x), rows, cols, batch, 0, rows);
                float[] quantized = new float[x.length];
                for (int block = 0; block < x.length / 32; block++) {
                    float amax = 0f;
                    for (int i = 0; i < 32; i++) {
                        amax = Math.max(amax, Math.abs(x[block * 32 + i]));
                    }
                    for (int i = 0; i < 32; i++) {
                        int q = Q4_0X16.round(x[block * 32 + i] * Q4_0X16.scale(amax));
                        quantized[block * 32 + i] = q * Q4_0X16.factor(amax);
                    }
                }
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
     * Every quant -128 or 127 against inputs of 127 in every lane, or 127 and -127 alternating:
     * the largest products there are, exact in every implementation ({@code 32 * w * 127} per
     * block of 1.0s).
     */
    @Test
    void extremeQuantsSumExactly() {
        int rows = 32;
        int cols = 1024;
        try (Tensors t = new Tensors(31)) {
            MemorySegment q8 = t.allocate(TensorType.Q8_0.rowBytes(cols) * rows);
            for (int r = 0; r < rows; r++) {
                for (int b = 0; b < cols / 32; b++) {
                    long block = PAD + r * TensorType.Q8_0.rowBytes(cols) + b * 34L;
                    q8.set(LittleEndian.F16, block, (short) 0x3c00); // 1.0
                    for (int k = 0; k < 32; k++) {
                        q8.set(LittleEndian.I8, block + 2 + k, (byte) (r % 2 == 0 ? -128 : 127));
                    }
                }
            }
            MemorySegment x16 = interleaved(t, q8, rows, cols);
            for (int batch : BATCHES) {
                float[] x = GgufBlocks.extremeInputs(batch, cols);
                float[] vector = run(t, VECTOR, x16, t.f32(x), rows, cols, batch, 0, rows);
                Tensors.assertIdentical("batch " + batch, vector, run(t, SCALAR, x16, t.f32(x), rows, cols, batch, 0, rows));
                for (int b = 0; b < batch; b++) {
                    for (int r = 0; r < rows; r++) {
                        float expected = b % 2 == 0 ? cols * (r % 2 == 0 ? -128f : 127f) * 127f : 0f;
                        assertThat(vector[b * rows + r]).as("input %d row %d", b, r).isEqualTo(expected);
                    }
                }
            }
        }
    }

    @Test
    void badArgumentsFailWithMessagesThatNameThem() {
        try (Tensors t = new Tensors(1)) {
            MemorySegment a = t.allocate(4096);
            for (KernelOps ops : new KernelOps[] {SCALAR, VECTOR}) {
                assertThatThrownBy(() -> ops.dequantize(TensorType.Q8_0_X16, a, PAD, a, PAD, 32))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageStartingWith("dequantize: type = Q8_0_X16 interleaves whole groups of rows");
                assertThatThrownBy(() -> ops.interleaveQ8_0(a, PAD, a, PAD, 1, 48))
                        .hasMessage("interleaveQ8_0: cols = 48 must be a multiple of the q8_0 block size 32");
                // 16 rows of 16,000,000 values: 272 MB a group, more than the interleaving's table takes.
                assertThatThrownBy(() -> ops.interleaveQ8_0(a, PAD, a, PAD, 16, 16_000_000))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessage("interleaveQ8_0: cols = 16000000 makes a group of 16 rows 272000000 bytes, more"
                                + " than the 268435456 an interleaved layout takes");
                assertThatThrownBy(() -> ops.interleaveQ8_0(a, PAD, t.allocate(100), PAD, 16, 32))
                        .hasMessage("interleaveQ8_0: dst segment of 112 bytes is too small: 544 bytes needed at"
                                + " dstOffset = 12");
                assertThatThrownBy(() -> ops.matmulQ8_0_X16(a, PAD, a, PAD, a, PAD, 1, 48, 1, 0, 1))
                        .hasMessage("matmulQ8_0_X16: cols = 48 must be a multiple of the q8_0_x16 block size 32");
            }
            assertThat(TensorType.Q8_0.interleaved()).isEqualTo(TensorType.Q8_0_X16);
            assertThat(TensorType.Q8_0_X16.isInterleaved()).isTrue();
            assertThat(TensorType.Q8_0_X16.source()).isEqualTo(TensorType.Q8_0);
            assertThat(TensorType.Q4_0_X16.source()).isEqualTo(TensorType.Q4_0);
            assertThat(TensorType.Q4_K_X16.source()).isEqualTo(TensorType.Q4_K);
            for (TensorType type : TensorType.values()) {
                assertThat(type.source() != null).as("%s", type).isEqualTo(type.isInterleaved());
            }
            assertThat(TensorType.Q8_0_X16.inFiles()).isFalse();
        }
    }
}
