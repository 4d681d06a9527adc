package dev.tandem.kernels;

import static dev.tandem.kernels.Tensors.PAD;
import static dev.tandem.kernels.Tensors.SCALAR;
import static dev.tandem.kernels.Tensors.VECTOR;
import static dev.tandem.kernels.Tensors.read;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tandem.kernels.scalar.LittleEndian;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The interleaved f32, f16 and bf16 layouts and their matmuls: the layouts as
 * {@link TensorType#F32_X16} and {@link TensorType#F16_X16} document them, the vector kernels
 * against their scalar twins bit for bit (every batch, ranges on and off the groups and the runs of
 * four groups, the rows after the last group, every kind of value each layout holds), the same
 * bits for an input alone as among others, and the kernels against the row-major ones and double
 * precision. Each test runs the three types.
 */
class FloatsX16Test {

    private static final TensorType[] TYPES = {TensorType.F32, TensorType.F16, TensorType.BF16};

    /** One input, four, eight, and every mix of them up to 8 + 4 + 3. */
    private static final int[] BATCHES = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 15, 16};

    private static MemorySegment interleaved(Tensors t, TensorType plain, MemorySegment values, int rows, int cols) {
        MemorySegment x16 = t.allocate(plain.rowBytes(cols) * rows);
        SCALAR.interleave(plain, values, PAD, x16, PAD, rows, cols);
        return x16;
    }

    private static short half(TensorType plain, float value) {
        return plain == TensorType.BF16 ? (short) (Float.floatToRawIntBits(value) >>> 16) : Float.floatToFloat16(value);
    }

    private static float widen(TensorType plain, short bits) {
        return plain == TensorType.BF16 ? Float.intBitsToFloat(bits << 16) : Float.float16ToFloat(bits);
    }

    /** {@code n} finite random values of {@code plain}, from -2 to 2. */
    private static MemorySegment values(Tensors t, TensorType plain, long n) {
        if (plain == TensorType.F32) {
            return GgufBlocks.random(t, plain, n);
        }
        MemorySegment segment = t.allocate(2 * n);
        for (long i = 0; i < n; i++) {
            segment.set(LittleEndian.F16, PAD + 2 * i, half(plain, t.random.nextFloat() * 4f - 2f));
        }
        return segment;
    }

    /** Value {@code i} of {@code values}, of {@code plain}, as an f32. */
    private static float value(TensorType plain, MemorySegment values, long i) {
        return plain == TensorType.F32 ? values.get(LittleEndian.F32, PAD + 4 * i)
                : widen(plain, values.get(LittleEndian.F16, PAD + 2 * i));
    }

    /** {@code n} random f16 bit patterns, every one finite. */
    private static MemorySegment finiteRandomBits(Tensors t, long n) {
        MemorySegment segment = t.allocate(2 * n);
        for (long i = 0; i < n; i++) {
            int bits = t.random.nextInt(1 << 16);
            segment.set(LittleEndian.F16, PAD + 2 * i, (short) ((bits & 0x7c00) == 0x7c00 ? bits & 0x83ff : bits));
        }
        return segment;
    }

    private static float[] run(Tensors t, KernelOps ops, TensorType plain, MemorySegment w, MemorySegment x, int rows,
            int cols, int batch, int rowStart, int rowEnd) {
        MemorySegment out = t.f32(new float[batch * rows]);
        ops.matmul(plain.interleaved(), w, PAD, x, PAD, out, PAD, rows, cols, batch, rowStart, rowEnd);
        return read(out, batch * rows);
    }

    @ParameterizedTest(name = "rows = {0}, cols = {1}")
    @CsvSource({"1, 3", "15, 8", "16, 1", "17, 5", "48, 33", "69, 64"})
    void interleavingPutsEveryByteWhereTheLayoutSays(int rows, int cols) {
        for (TensorType plain : TYPES) {
            try (Tensors t = new Tensors(rows * 31L + cols)) {
                // f32 and bf16: random values or bits; f16: finite bits, all that f16_x16 holds.
                MemorySegment values = plain != TensorType.F16 ? GgufBlocks.random(t, plain, (long) rows * cols)
                        : finiteRandomBits(t, (long) rows * cols);
                MemorySegment x16 = interleaved(t, plain, values, rows, cols);
                int size = plain.blockBytes();
                long rowBytes = (long) size * cols;
                int grouped = rows - rows % 16;
                boolean[] seen = new boolean[(int) (rows * rowBytes)];
                for (int r = 0; r < rows; r++) {
                    for (int k = 0; k < cols; k++) {
                        for (int j = 0; j < size; j++) {
                            long from = r * rowBytes + (long) size * k + j;
                            int i = r % 16;
                            long to = r < grouped ? (r - i) * rowBytes + 16L * size * k + (long) size * i + j : from;
                            assertThat(x16.get(LittleEndian.I8, PAD + to)).as("%s row %d value %d byte %d", plain, r, k, j)
                                    .isEqualTo(values.get(LittleEndian.I8, PAD + from));
                            assertThat(seen[(int) to]).as("byte %d written twice", to).isFalse();
                            seen[(int) to] = true;
                        }
                    }
                }
            }
        }
    }

    /** Interleaved bytes, rows and range; the two implementations must agree on every bit. */
    @ParameterizedTest(name = "rows = {0}, cols = {1}, rows [{2}, {3})")
    @CsvSource({
        "16, 1, 0, 16", "16, 64, 0, 16", "64, 7, 0, 64", "80, 100, 0, 80", "37, 64, 0, 37", "101, 33, 16, 101",
        "128, 1024, 0, 128", "96, 17, 3, 93", "21, 32, 5, 21", "7, 64, 0, 7", "144, 5, 32, 144"
    })
    void vectorMatchesScalarBitForBit(int rows, int cols, int rowStart, int rowEnd) {
        for (TensorType plain : TYPES) {
            try (Tensors t = new Tensors(rows * 5L + cols + rowStart)) {
                MemorySegment x16 = interleaved(t, plain, values(t, plain, (long) rows * cols), rows, cols);
                for (int batch : BATCHES) {
                    MemorySegment x = t.f32(t.uniform(batch * cols, -2f, 2f));
                    Tensors.assertIdentical(plain + " rows " + rows + " cols " + cols + " batch " + batch,
                            run(t, VECTOR, plain, x16, x, rows, cols, batch, rowStart, rowEnd),
                            run(t, SCALAR, plain, x16, x, rows, cols, batch, rowStart, rowEnd));
                }
            }
        }
    }

    /**
     * Each input's outputs are the bits it gets alone, whatever the batch and wherever the range
     * cuts the rows: continuous batching must not change a request's tokens.
     */
    @Test
    void anInputGetsTheSameBitsAloneAndAmongOthers() {
        int rows = 150;
        int cols = 96;
        for (TensorType plain : TYPES) {
            try (Tensors t = new Tensors(23)) {
                MemorySegment x16 = interleaved(t, plain, values(t, plain, (long) rows * cols), rows, cols);
                float[] inputs = t.uniform(16 * cols, -2f, 2f);
                float[][] alone = new float[16][];
                for (int b = 0; b < 16; b++) {
                    alone[b] = run(t, VECTOR, plain, x16, t.f32(Arrays.copyOfRange(inputs, b * cols, (b + 1) * cols)),
                            rows, cols, 1, 0, rows);
                }
                for (int batch : BATCHES) {
                    MemorySegment x = t.f32(Arrays.copyOf(inputs, batch * cols));
                    float[] together = new float[batch * rows];
                    int[] cuts = {0, 5, 16, 80, 97, rows};
                    for (int c = 0; c + 1 < cuts.length; c++) {
                        float[] part = run(t, VECTOR, plain, x16, x, rows, cols, batch, cuts[c], cuts[c + 1]);
                        for (int b = 0; b < batch; b++) {
                            System.arraycopy(part, b * rows + cuts[c], together, b * rows + cuts[c],
                                    cuts[c + 1] - cuts[c]);
                        }
                    }
                    for (int b = 0; b < batch; b++) {
                        Tensors.assertIdentical(plain + " batch " + batch + " input " + b,
                                Arrays.copyOfRange(together, b * rows, (b + 1) * rows), alone[b]);
                    }
                }
            }
        }
    }

    /** Rows outside the range keep what {@code out} held. */
    @Test
    void rowsOutsideTheRangeAreNotWritten() {
        for (TensorType plain : TYPES) {
            try (Tensors t = new Tensors(3)) {
                int rows = 100;
                int cols = 24;
                MemorySegment x16 = interleaved(t, plain, values(t, plain, (long) rows * cols), rows, cols);
                GgufBlocks.assertOnlyTheRangeIsWritten(t, plain.interleaved(), x16, rows, cols, 5, 16, 96);
            }
        }
    }

    /** Close to double precision on the same values. */
    @ParameterizedTest(name = "rows = {0}, cols = {1}")
    @CsvSource({"16, 32", "37, 544", "80, 2048"})
    void matchesDoublePrecision(int rows, int cols) {
        for (TensorType plain : TYPES) {
            try (Tensors t = new Tensors(rows + cols * 7L)) {
                MemorySegment values = values(t, plain, (long) rows * cols);
                float[] w = new float[rows * cols];
                for (int i = 0; i < w.length; i++) {
                    w[i] = value(plain, values, i);
                }
                MemorySegment x16 = interleaved(t, plain, values, rows, cols);
                for (int batch : new int[] {1, 5, 8}) {
                    float[] x = t.uniform(batch * cols, -3f, 3f);
                    float[] got = run(t, VECTOR, plain, x16, t.f32(x), rows, cols, batch, 0, rows);
                    for (int b = 0; b < batch; b++) {
                        for (int r = 0; r < rows; r++) {
                            double exact = 0;
                            double magnitude = 0;
                            for (int k = 0; k < cols; k++) {
                                exact += (double) w[r * cols + k] * x[b * cols + k];
                                magnitude += Math.abs((double) w[r * cols + k] * x[b * cols + k]);
                            }
                            var bound = org.assertj.core.data.Offset.offset(1e-5 * magnitude + 1e-30);
                            assertThat((double) got[b * rows + r]).as("%s row %d input %d", plain, r, b)
                                    .isCloseTo(exact, bound);
                        }
                    }
                }
            }
        }
    }

    /**
     * Zeros, subnormals and the largest values (and for f32 and bf16 infinities and NaN, which
     * f16_x16 does not hold) give the same bits in the vector kernels as in the scalar twins.
     */
    @Test
    void everyKindOfValueGivesTheScalarTwinsBits() {
        short[] f16 = {0x0000, (short) 0x8000, 0x0001, (short) 0x8001, 0x03ff, (short) 0x83ff, 0x0400,
            (short) 0x8400, 0x3c00, (short) 0xbc00, 0x7bff, (short) 0xfbff, 0x0200, (short) 0x8200, 0x2e66, 0x7800};
        short[] bf16 = {0x0000, (short) 0x8000, 0x0001, (short) 0x8001, 0x007f, 0x0080, 0x3f80, (short) 0xbf80,
            0x7f7f, (short) 0xff7f, 0x7f80, (short) 0xff80, 0x7fc0, 0x7f81, 0x0040, 0x3e66};
        int rows = 80;
        int cols = 70;
        float[] f32 = {0f, -0f, Float.MIN_VALUE, -Float.MIN_VALUE, Float.MIN_NORMAL, 1f, -1f, Float.MAX_VALUE,
            -Float.MAX_VALUE, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, Float.NaN, 0x1p-140f, 1e-3f};
        for (TensorType plain : TYPES) {
            short[] special = plain == TensorType.BF16 ? bf16 : f16;
            try (Tensors t = new Tensors(29)) {
                MemorySegment values = values(t, plain, (long) rows * cols);
                for (int r = 0; r < rows; r++) {
                    // Row r holds one special value (most rows finite), at a column that moves.
                    long at = r * cols + (7 * r) % cols;
                    if (plain == TensorType.F32) {
                        values.set(LittleEndian.F32, PAD + 4L * at, f32[r % f32.length]);
                    } else {
                        values.set(LittleEndian.F16, PAD + 2L * at, special[r % special.length]);
                    }
                }
                MemorySegment x16 = interleaved(t, plain, values, rows, cols);
                for (int batch : BATCHES) {
                    MemorySegment x = t.f32(t.uniform(batch * cols, -2f, 2f));
                    Tensors.assertIdentical(plain + " batch " + batch,
                            run(t, VECTOR, plain, x16, x, rows, cols, batch, 0, rows),
                            run(t, SCALAR, plain, x16, x, rows, cols, batch, 0, rows));
                }
            }
        }
    }

    /** An f16 infinity or NaN is refused by name and place before anything is written: f16_x16 holds finite values only. */
    @ParameterizedTest(name = "0x{0}")
    @CsvSource({"7c00, an infinity", "fc00, an infinity", "7e00, NaN", "7c01, NaN", "fe00, NaN"})
    void interleavingRefusesAnF16InfinityOrNaN(String hex, String what) {
        int rows = 20;
        int cols = 12;
        try (Tensors t = new Tensors(41)) {
            MemorySegment values = values(t, TensorType.F16, (long) rows * cols);
            values.set(LittleEndian.F16, PAD + 2L * (17 * cols + 5), (short) Integer.parseInt(hex, 16));
            MemorySegment dst = t.allocate(2L * rows * cols);
            for (KernelOps ops : new KernelOps[] {SCALAR, VECTOR}) {
                assertThatThrownBy(() -> ops.interleave(TensorType.F16, values, PAD, dst, PAD, rows, cols))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessage("interleaveF16: row 17, column 5 is " + what + " (0x" + hex
                                + "); f16_x16 holds finite values only");
                for (long i = 0; i < 2L * rows * cols; i++) {
                    assertThat(dst.get(LittleEndian.I8, PAD + i)).as("dst byte %d", i).isZero();
                }
            }
        }
    }

    @Test
    void badArgumentsFailWithMessagesThatNameThem() {
        try (Tensors t = new Tensors(1)) {
            MemorySegment a = t.allocate(4096);
            for (KernelOps ops : new KernelOps[] {SCALAR, VECTOR}) {
                assertThatThrownBy(() -> ops.dequantize(TensorType.F32_X16, a, PAD, a, PAD, 32))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageStartingWith("dequantize: type = F32_X16 interleaves whole groups of rows");
                assertThatThrownBy(() -> ops.interleaveF32(a, PAD, a, PAD, -1, 48))
                        .hasMessage("interleaveF32: rows = -1 must be >= 0");
                assertThatThrownBy(() -> ops.interleaveF32(a, PAD, t.allocate(100), PAD, 16, 2))
                        .hasMessage("interleaveF32: dst segment of 112 bytes is too small: 128 bytes needed at"
                                + " dstOffset = 12");
                // 16 rows of 5,000,000 values: 320 MB a group, more than the interleaving's table takes.
                assertThatThrownBy(() -> ops.interleaveF32(a, PAD, a, PAD, 16, 5_000_000))
                        .hasMessage("interleaveF32: cols = 5000000 makes a group of 16 rows 320000000 bytes, more"
                                + " than the 268435456 an interleaved layout takes");
                assertThatThrownBy(() -> ops.matmulF32_X16(a, PAD, a, PAD, a, PAD, 64, 64, 1, 0, 64))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageStartingWith("matmulF32_X16: weights segment of");
                assertThatThrownBy(() -> ops.dequantize(TensorType.F16_X16, a, PAD, a, PAD, 32))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageStartingWith("dequantize: type = F16_X16 interleaves whole groups of rows");
                assertThatThrownBy(() -> ops.dequantize(TensorType.BF16_X16, a, PAD, a, PAD, 32))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageStartingWith("dequantize: type = BF16_X16 interleaves whole groups of rows");
                assertThatThrownBy(() -> ops.interleaveF16(a, PAD, a, PAD, 16, -1))
                        .hasMessage("interleaveF16: cols = -1 must be >= 0");
                assertThatThrownBy(() -> ops.interleaveBF16(a, PAD, a, PAD, -2, 4))
                        .hasMessage("interleaveBF16: rows = -2 must be >= 0");
                assertThatThrownBy(() -> ops.interleaveF16(a, PAD, t.allocate(100), PAD, 16, 4))
                        .hasMessage("interleaveF16: dst segment of 112 bytes is too small: 128 bytes needed at"
                                + " dstOffset = 12");
                assertThatThrownBy(() -> ops.matmulF16_X16(a, PAD, a, PAD, a, PAD, 64, 64, 1, 0, 64))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageStartingWith("matmulF16_X16: weights segment of");
                assertThatThrownBy(() -> ops.matmulBF16_X16(a, PAD, a, PAD, a, PAD, 64, 64, 1, 0, 64))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageStartingWith("matmulBF16_X16: weights segment of");
            }
            assertThat(TensorType.F32.interleaved()).isEqualTo(TensorType.F32_X16);
            assertThat(TensorType.F32_X16.isInterleaved()).isTrue();
            assertThat(TensorType.F32_X16.source()).isEqualTo(TensorType.F32);
            assertThat(TensorType.F32_X16.inFiles()).isFalse();
            assertThat(TensorType.F32_X16.isQuantized()).isFalse();
            assertThat(TensorType.F16.interleaved()).isEqualTo(TensorType.F16_X16);
            assertThat(TensorType.BF16.interleaved()).isEqualTo(TensorType.BF16_X16);
            assertThat(TensorType.F16_X16.source()).isEqualTo(TensorType.F16);
            assertThat(TensorType.BF16_X16.source()).isEqualTo(TensorType.BF16);
            assertThat(TensorType.BF16_X16.inFiles()).isFalse();
            assertThat(TensorType.F16_X16.isQuantized()).isFalse();
        }
    }
}
