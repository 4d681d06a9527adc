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
import dev.tandem.kernels.scalar.Q4_0X16;
import dev.tandem.kernels.vector.VectorSmallBlocksX16;
import java.lang.foreign.MemorySegment;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The interleaved q5_0 and q5_K layouts and their matmuls: the layouts as {@link TensorType#Q5_0_X16}
 * and {@link TensorType#Q5_K_X16} document them, the vector kernels against their scalar twins bit
 * for bit (every batch, ranges on and off the groups, the rows after the last group in the file's
 * layout), the short sums at their extremes, and the scalar twins against double-precision
 * arithmetic on the dequantized weights and quantized inputs.
 */
class FiveBitsX16Test {

    private static final int[] BATCHES = {1, 2, 3, 4, 5, 8, 9, 17};

    private static MemorySegment interleaved(Tensors t, TensorType type, MemorySegment q5, int rows, int cols) {
        MemorySegment x16 = t.allocate(type.rowBytes(cols) * rows);
        SCALAR.interleave(type, q5, PAD, x16, PAD, rows, cols);
        return x16;
    }

    private static MemorySegment interleaved(Tensors t, MemorySegment q5, int rows, int cols) {
        return interleaved(t, TensorType.Q5_0, q5, rows, cols);
    }

    /** Random q5_0 or q5_K rows (the type of {@code x16}'s source) in its interleaved layout. */
    private static MemorySegment randomInterleaved(Tensors t, TensorType x16, int rows, int cols) {
        return interleaved(t, x16.source(), GgufBlocks.random(t, x16.source(), (long) rows * cols), rows, cols);
    }

    /** q4_1 and q5_1: the scale, the min, q5_1's fifth bits, then the nibble pairs. */
    @ParameterizedTest(name = "{0}, rows = {1}, cols = {2}")
    @CsvSource({"Q4_1, 16, 32", "Q4_1, 37, 96", "Q5_1, 17, 64", "Q5_1, 33, 32"})
    void minBlocksInterleavePutEveryByteWhereTheLayoutSays(TensorType type, int rows, int cols) {
        int nibbles = type.blockBytes() - 16;
        assertEveryByteWhereTheLayoutSays(type, rows, cols, (i, j) -> j < 2 ? 2L * i + j
                : j < 4 ? 32 + 2L * i + (j - 2)
                : j < nibbles ? 64 + 4L * i + (j - 4) // q5_1's qh
                : (type == TensorType.Q4_1 ? 64 : 128) + pair(j - nibbles, i));
    }

    /**
     * q2_K: the scale bytes, d and dmin, the quant pairs; q3_K: the mask pairs, the quant pairs, the
     * scale bytes and d.
     */
    @ParameterizedTest(name = "{0}, rows = {1}, cols = {2}")
    @CsvSource({"Q2_K, 17, 256", "Q2_K, 37, 512", "Q3_K, 17, 256", "Q3_K, 33, 512"})
    void lowBitsKInterleavingPutsEveryByteWhereTheLayoutSays(TensorType type, int rows, int cols) {
        if (type == TensorType.Q2_K) {
            assertEveryByteWhereTheLayoutSays(type, rows, cols, (i, j) -> j < 16 ? 16L * j + i
                    : j < 80 ? 320 + pair(j - 16, i)
                    : 256 + pair(j - 80, i));
        } else {
            assertEveryByteWhereTheLayoutSays(type, rows, cols, (i, j) -> j < 32 ? pair(j, i)
                    : j < 96 ? 512 + pair(j - 32, i)
                    : j < 108 ? 1536 + 16L * (j - 96) + i
                    : 1728 + 2L * i + (j - 108));
        }
    }

    /** iq4_nl in q4_0's layout; iq4_xs: d, scales_h, scales_l, then the nibble pairs. */
    @ParameterizedTest(name = "rows = {0}, cols = {1}")
    @CsvSource({"1, 256", "16, 256", "17, 512", "37, 768"})
    void iq4InterleavingPutsEveryByteWhereTheLayoutSays(int rows, int cols) {
        try (Tensors t = new Tensors(rows * 43L + cols)) {
            MemorySegment nl = GgufBlocks.random(t, TensorType.IQ4_NL, (long) rows * cols);
            MemorySegment q4 = t.allocate(TensorType.Q4_0.rowBytes(cols) * rows);
            SCALAR.interleaveQ4_0(nl, PAD, q4, PAD, rows, cols);
            MemorySegment x16 = interleaved(t, TensorType.IQ4_NL, nl, rows, cols);
            assertThat(x16.asSlice(PAD, TensorType.IQ4_NL.rowBytes(cols) * rows).mismatch(
                    q4.asSlice(PAD, TensorType.Q4_0.rowBytes(cols) * rows))).as("iq4_nl_x16 is q4_0_x16's layout")
                    .isEqualTo(-1L);
        }
        assertEveryByteWhereTheLayoutSays(TensorType.IQ4_XS, rows, cols, (i, j) -> j < 4 ? pair(j, i)
                : j < 8 ? 64 + 4L * i + (j - 4)
                : 128 + pair(j - 8, i));
    }

    @ParameterizedTest(name = "rows = {0}, cols = {1}")
    @CsvSource({"1, 256", "16, 256", "17, 512", "37, 768"})
    void q5_KInterleavingPutsEveryByteWhereTheLayoutSays(int rows, int cols) {
        assertEveryByteWhereTheLayoutSays(TensorType.Q5_K, rows, cols, (i, j) -> j < 4 ? pair(j, i)
                : j < 16 ? 64 + 16L * (j - 4) + i
                : j < 48 ? 256 + pair(j - 16, i)
                : 768 + pair(j - 48, i));
    }

    @ParameterizedTest(name = "rows = {0}, cols = {1}")
    @CsvSource({"1, 32", "15, 64", "16, 32", "17, 96", "37, 512"})
    void interleavingPutsEveryByteWhereTheLayoutSays(int rows, int cols) {
        assertEveryByteWhereTheLayoutSays(TensorType.Q5_0, rows, cols, (i, j) -> j < 2 ? 2L * i + j
                : j < 6 ? 32 + 4L * i + (j - 2)
                : 96 + pair(j - 6, i));
    }

    @ParameterizedTest(name = "{0}, rows = {1}, cols = {2}, rows [{3}, {4})")
    @CsvSource({
        "Q5_0_X16, 16, 32, 0, 16", "Q5_0_X16, 16, 896, 0, 16", "Q5_0_X16, 48, 544, 0, 48",
        "Q5_0_X16, 37, 64, 0, 37", "Q5_0_X16, 37, 1024, 16, 37", "Q5_0_X16, 48, 96, 3, 35",
        "Q5_0_X16, 21, 32, 5, 21", "Q5_0_X16, 7, 64, 0, 7",
        "Q4_1_X16, 16, 32, 0, 16", "Q4_1_X16, 37, 1024, 16, 37", "Q4_1_X16, 48, 96, 3, 35",
        "Q4_1_X16, 7, 64, 0, 7", "Q5_1_X16, 16, 896, 0, 16", "Q5_1_X16, 37, 64, 0, 37",
        "Q5_1_X16, 48, 96, 3, 35", "Q5_1_X16, 21, 32, 5, 21",
        "IQ4_NL_X16, 16, 32, 0, 16", "IQ4_NL_X16, 37, 1024, 16, 37", "IQ4_NL_X16, 48, 96, 3, 35",
        "IQ4_XS_X16, 16, 256, 0, 16", "IQ4_XS_X16, 37, 768, 0, 37", "IQ4_XS_X16, 48, 256, 3, 35",
        "Q2_K_X16, 16, 256, 0, 16", "Q2_K_X16, 37, 768, 0, 37", "Q2_K_X16, 48, 256, 3, 35",
        "Q3_K_X16, 16, 256, 0, 16", "Q3_K_X16, 37, 768, 0, 37", "Q3_K_X16, 48, 256, 3, 35",
        "Q5_K_X16, 16, 256, 0, 16", "Q5_K_X16, 48, 768, 0, 48", "Q5_K_X16, 37, 512, 16, 37",
        "Q5_K_X16, 48, 256, 3, 35", "Q5_K_X16, 7, 256, 0, 7"
    })
    void vectorMatchesScalarBitForBit(TensorType type, int rows, int cols, int rowStart, int rowEnd) {
        try (Tensors t = new Tensors(rows * 7L + cols + rowStart)) {
            MemorySegment x16 = randomInterleaved(t, type, rows, cols);
            for (int batch : BATCHES) {
                MemorySegment x = t.f32(t.uniform(batch * cols, -2f, 2f));
                float[] scalar = run(t, SCALAR, type, x16, x, rows, cols, batch, rowStart, rowEnd);
                Tensors.assertIdentical(type + " rows " + rows + " cols " + cols + " batch " + batch,
                        run(t, VECTOR, type, x16, x, rows, cols, batch, rowStart, rowEnd), scalar);
                // where the native kernel takes the groups, the Java vector loops are still the fallback
                Tensors.assertIdentical(type + " Java loops, rows " + rows + " cols " + cols + " batch " + batch,
                        runJavaLoops(t, type, x16, x, rows, cols, batch, rowStart, rowEnd), scalar);
            }
        }
    }

    /**
     * Scales of every kind (zeros, subnormals, the largest finite, infinities, NaN) widen in the
     * native kernel as in the scalar twin, at every batch: in the second of three groups, the
     * others' random and finite. Where the native kernel runs: run through the Java loops, the
     * infinities and NaNs made x16Scales' rare branch (shared by every interleaved kernel's Java
     * loop) look common to C2, which then compiled those loops with a boxed call to widenF16, and
     * CompiledKernelAllocationTest, later in the same JVM, found them allocating. The Java loops'
     * widening of such scales is Q4_0X16Test's to check.
     */
    @Test
    void everyKindOfScaleWidensAsTheScalarTwin() {
        assumeTrue(NativeInt8.available(), "the native kernel's widening; the Java loops' is Q4_0X16Test's");
        short[] scales = GgufBlocks.EVERY_KIND_OF_HALF;
        int rows = 53;
        int cols = 96;
        try (Tensors t = new Tensors(29)) {
            MemorySegment q5 = GgufBlocks.random(t, TensorType.Q5_0, (long) rows * cols);
            for (int r = 16; r < 32; r++) {
                for (int b = 0; b < cols / 32; b++) {
                    q5.set(LittleEndian.F16, PAD + r * TensorType.Q5_0.rowBytes(cols) + b * 22L, scales[(r + 5 * b) % 16]);
                }
            }
            MemorySegment x16 = interleaved(t, q5, rows, cols);
            for (int batch : BATCHES) {
                MemorySegment x = t.f32(t.uniform(batch * cols, -2f, 2f));
                Tensors.assertIdentical("batch " + batch, run(t, VECTOR, x16, x, rows, cols, batch, 0, rows),
                        run(t, SCALAR, x16, x, rows, cols, batch, 0, rows));
            }
        }
    }

    /**
     * Every 5-bit quant 0 or 31 (weights -16 and 15), with every pattern of fifth bits, against
     * inputs of 127 in every lane or 127 and -127 alternating: sums that would wrap a short if a
     * lane held more than its 16 products. Exact integers: {@code 32 * (q - 16) * 127} per block of
     * 1.0s.
     */
    @Test
    void extremeQuantsDoNotWrapTheShortSums() {
        int rows = 32;
        int cols = 1024;
        try (Tensors t = new Tensors(23)) {
            MemorySegment q5 = t.allocate(TensorType.Q5_0.rowBytes(cols) * rows);
            for (int r = 0; r < rows; r++) {
                for (int b = 0; b < cols / 32; b++) {
                    long block = PAD + r * TensorType.Q5_0.rowBytes(cols) + b * 22L;
                    q5.set(LittleEndian.F16, block, (short) 0x3c00); // 1.0
                    q5.set(LittleEndian.I32, block + 2, r % 2 == 0 ? -1 : 0);
                    for (int k = 0; k < 16; k++) {
                        q5.set(LittleEndian.I8, block + 6 + k, (byte) (r % 2 == 0 ? 0xff : 0x00));
                    }
                }
            }
            MemorySegment x16 = interleaved(t, q5, rows, cols);
            for (int batch : BATCHES) {
                float[] x = GgufBlocks.extremeInputs(batch, cols);
                float[] vector = run(t, VECTOR, x16, t.f32(x), rows, cols, batch, 0, rows);
                Tensors.assertIdentical("batch " + batch, vector, run(t, SCALAR, x16, t.f32(x), rows, cols, batch, 0, rows));
                for (int b = 0; b < batch; b++) {
                    for (int r = 0; r < rows; r++) {
                        float expected = b % 2 == 0 ? cols * (r % 2 == 0 ? 15f : -16f) * 127f : 0f;
                        assertThat(vector[b * rows + r]).as("input %d row %d", b, r).isEqualTo(expected);
                    }
                }
            }
        }
    }

    /**
     * Against double precision on the dequantized weights, with the inputs quantized as the kernel
     * defines; q5_K's two terms ({@code d * sc * q} and {@code dmin * m}) round apart, so its bound
     * is on the sum of both terms' magnitudes.
     */
    @ParameterizedTest(name = "{0}, rows = {1}, cols = {2}")
    @CsvSource({"Q5_0, 16, 32", "Q5_0, 37, 544", "Q5_0, 32, 896", "Q4_1, 37, 544", "Q5_1, 37, 544", "IQ4_NL, 37, 544", "IQ4_XS, 37, 512", "Q2_K, 37, 512",
        "Q3_K, 37, 512",
        "Q5_K, 16, 256",
        "Q5_K, 37, 768"})
    void scalarMatchesDoublePrecisionOnTheDequantizedWeights(TensorType type, int rows, int cols) {
        try (Tensors t = new Tensors(rows + cols * 3L)) {
            MemorySegment q5 = GgufBlocks.random(t, type, (long) rows * cols);
            float[] w = GgufBlocks.dequantized(t, SCALAR, type, q5, rows * cols);
            MemorySegment x16 = interleaved(t, type, q5, rows, cols);
            for (int batch : new int[] {1, 3}) {
                float[] x = t.uniform(batch * cols, -3f, 3f);
                float[] got = run(t, SCALAR, type.interleaved(), x16, t.f32(x), rows, cols, batch, 0, rows);
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
                        double expected = 0;
                        double magnitude = 0;
                        for (int k = 0; k < cols; k++) {
                            expected += (double) w[r * cols + k] * quantized[b * cols + k];
                            magnitude += Math.abs((double) w[r * cols + k] * quantized[b * cols + k]);
                        }
                        double bound = type == TensorType.Q5_0 ? 1e-5 * magnitude : 1e-3 * magnitude;
                        assertThat((double) got[b * rows + r]).as("row %d input %d", r, b)
                                .isCloseTo(expected, Offset.offset(bound + 1e-30));
                    }
                }
            }
        }
    }

    /** Rows outside the range keep what {@code out} held. */
    @Test
    void rowsOutsideTheRangeAreNotWritten() {
        try (Tensors t = new Tensors(3)) {
            int rows = 48;
            int cols = 64;
            MemorySegment x16 = interleaved(t, GgufBlocks.random(t, TensorType.Q5_0, (long) rows * cols), rows, cols);
            GgufBlocks.assertOnlyTheRangeIsWritten(t, TensorType.Q5_0_X16, x16, rows, cols, 2, 16, 32);
            GgufBlocks.assertOnlyTheRangeIsWritten(t, TensorType.Q5_K_X16, randomInterleaved(t, TensorType.Q5_K_X16,
                    rows, 256), rows, 256, 2, 16, 32);
        }
    }

    @Test
    void badArgumentsFailWithMessagesThatNameThem() {
        try (Tensors t = new Tensors(1)) {
            MemorySegment a = t.allocate(4096);
            for (KernelOps ops : new KernelOps[] {SCALAR, VECTOR}) {
                assertThatThrownBy(() -> ops.dequantize(TensorType.Q5_0_X16, a, PAD, a, PAD, 32))
                        .hasMessageStartingWith("dequantize: type = Q5_0_X16 interleaves whole groups of rows");
                assertThatThrownBy(() -> ops.interleaveQ5_0(a, PAD, a, PAD, 1, 48))
                        .hasMessage("interleaveQ5_0: cols = 48 must be a multiple of the q5_0 block size 32");
                assertThatThrownBy(() -> ops.matmulQ5_0_X16(a, PAD, a, PAD, a, PAD, 1, 48, 1, 0, 1))
                        .hasMessage("matmulQ5_0_X16: cols = 48 must be a multiple of the q5_0_x16 block size 32");
                assertThatThrownBy(() -> ops.matmul(TensorType.Q5_0, a, PAD, a, PAD, a, PAD, 1, 32, 1, 0, 1))
                        .hasMessage("matmul: type = Q5_0 runs in its interleaved layout only, Q5_0_X16"
                                + " (QuantOps.interleave makes it)");
                assertThatThrownBy(() -> ops.matmul(TensorType.Q5_K, a, PAD, a, PAD, a, PAD, 1, 256, 1, 0, 1))
                        .hasMessage("matmul: type = Q5_K runs in its interleaved layout only, Q5_K_X16"
                                + " (QuantOps.interleave makes it)");
                assertThatThrownBy(() -> ops.matmulQ5_K_X16(a, PAD, a, PAD, a, PAD, 1, 32, 1, 0, 1))
                        .hasMessage("matmulQ5_K_X16: cols = 32 must be a multiple of the q5_K_x16 block size 256");
            }
            assertThat(TensorType.Q5_0.interleaved()).isEqualTo(TensorType.Q5_0_X16);
            assertThat(TensorType.fromGgmlId(6)).isEqualTo(TensorType.Q5_0);
            assertThat(TensorType.fromGgmlId(13)).isEqualTo(TensorType.Q5_K);
            assertThat(TensorType.Q5_K.interleaved()).isEqualTo(TensorType.Q5_K_X16);
        }
    }

    /** Where byte {@code j} of row {@code i}'s block goes, from its group's block of 16 rows. */
    @FunctionalInterface
    private interface Destination {
        long at(int i, int j);
    }

    /** Byte {@code k} of a row's run of bytes kept in pairs: {@code 32 (k / 2) + 2 i + k % 2}. */
    private static long pair(int k, int i) {
        return 32L * (k / 2) + 2L * i + k % 2;
    }

    /**
     * Every byte of random rows of {@code type}, interleaved, where {@code to} says within its
     * group's block (block {@code b} of a group at {@code 16 b blockBytes}), each written once; the
     * rows after the last group as they are.
     */
    private static void assertEveryByteWhereTheLayoutSays(TensorType type, int rows, int cols, Destination to) {
        try (Tensors t = new Tensors(rows * 43L + cols + type.ordinal())) {
            MemorySegment q = GgufBlocks.random(t, type, (long) rows * cols);
            MemorySegment x16 = interleaved(t, type, q, rows, cols);
            int blockBytes = type.blockBytes();
            long rowBytes = type.rowBytes(cols);
            int grouped = rows - rows % 16;
            boolean[] seen = new boolean[(int) (rows * rowBytes)];
            for (int r = 0; r < rows; r++) {
                int i = r % 16;
                for (int b = 0; b < cols / type.blockSize(); b++) {
                    for (int j = 0; j < blockBytes; j++) {
                        long from = r * rowBytes + (long) b * blockBytes + j;
                        long at = r < grouped ? (r - i) * rowBytes + b * 16L * blockBytes + to.at(i, j) : from;
                        assertThat(x16.get(LittleEndian.I8, PAD + at)).as("%s row %d block %d byte %d", type, r, b, j)
                                .isEqualTo(q.get(LittleEndian.I8, PAD + from));
                        assertThat(seen[(int) at]).as("byte %d written twice", at).isFalse();
                        seen[(int) at] = true;
                    }
                }
            }
        }
    }

    private static float[] run(Tensors t, KernelOps ops, MemorySegment w, MemorySegment x, int rows, int cols,
            int batch, int rowStart, int rowEnd) {
        return run(t, ops, TensorType.Q5_0_X16, w, x, rows, cols, batch, rowStart, rowEnd);
    }

    private static float[] runJavaLoops(Tensors t, TensorType type, MemorySegment w, MemorySegment x, int rows,
            int cols, int batch, int rowStart, int rowEnd) {
        MemorySegment out = t.allocate((long) batch * rows * Float.BYTES);
        VectorSmallBlocksX16.matmulJavaLoops(type, w, PAD, x, PAD, out, PAD, rows, cols, batch, rowStart, rowEnd);
        return inRange(out, rows, batch, rowStart, rowEnd);
    }

    private static float[] run(Tensors t, KernelOps ops, TensorType type, MemorySegment w, MemorySegment x, int rows,
            int cols, int batch, int rowStart, int rowEnd) {
        MemorySegment out = t.allocate((long) batch * rows * Float.BYTES);
        ops.matmul(type, w, PAD, x, PAD, out, PAD, rows, cols, batch, rowStart, rowEnd);
        return inRange(out, rows, batch, rowStart, rowEnd);
    }

    private static float[] inRange(MemorySegment out, int rows, int batch, int rowStart, int rowEnd) {
        float[] all = read(out, batch * rows);
        float[] inRange = new float[batch * (rowEnd - rowStart)];
        for (int b = 0; b < batch; b++) {
            System.arraycopy(all, b * rows + rowStart, inRange, b * (rowEnd - rowStart), rowEnd - rowStart);
        }
        return inRange;
    }
}
