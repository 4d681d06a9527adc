package dev.tandem.kernels;

import static dev.tandem.kernels.Tensors.PAD;
import static dev.tandem.kernels.Tensors.SCALAR;
import static dev.tandem.kernels.Tensors.VECTOR;
import static dev.tandem.kernels.Tensors.read;
import static dev.tandem.kernels.scalar.LittleEndian.F32;
import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.kernels.scalar.LittleEndian;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The input key of {@link MatmulOps#matmul(TensorType, MemorySegment, long, MemorySegment, long,
 * MemorySegment, long, int, int, int, int, int, long)}: the interleaved kernels keep one call's
 * converted inputs for the next call with the same key and input, and convert afresh on any other
 * call. Keeping is seen by breaking the promise: the input's values change between two calls with
 * one key, and the second still reads the first's. Every result is checked bit for bit against the
 * scalar kernel on the values it must have read.
 */
class InputKeyTest {

    private static final int ROWS = 32;
    private static final int COLS = 512;

    /** Batches whose every input goes through the converted copy (q8_0_x16 reads a batch of 4 in place; f32_x16, f16_x16 and bf16_x16 copy every batch). */
    @ParameterizedTest(name = "{0}, batch {1}")
    @CsvSource({"Q4_0_X16, 1", "Q4_0_X16, 8", "Q4_0_X16, 9", "Q4_K_X16, 1", "Q4_K_X16, 8", "Q4_K_X16, 9",
        "Q8_0_X16, 1", "Q8_0_X16, 8", "Q8_0_X16, 9", "Q6_K_X16, 1", "Q6_K_X16, 8", "Q6_K_X16, 9", "F32_X16, 1",
        "F32_X16, 4", "F32_X16, 9", "F16_X16, 1", "F16_X16, 9", "BF16_X16, 1", "BF16_X16, 9"})
    void aKeyKeepsTheConversionUntilAnotherCallConverts(TensorType type, int batch) {
        try (Tensors t = new Tensors(batch * 31L + type.ordinal())) {
            MemorySegment w = weights(t, type);
            float[] first = t.uniform(batch * COLS, -2f, 2f);
            float[] second = t.uniform(batch * COLS, -2f, 2f);
            float[] third = t.uniform(batch * COLS, -2f, 2f);
            float[] expectFirst = run(t, SCALAR, type, w, t.f32(first), PAD, batch, 0, ROWS, 0);
            float[] expectSecond = run(t, SCALAR, type, w, t.f32(second), PAD, batch, 0, ROWS, 0);
            MemorySegment x = t.f32(first);
            long key = 1000 + batch;

            // The first part converts; the second, with the same key, keeps that conversion even
            // though the values changed (the broken promise), as the rows it writes show.
            assertRows(run(t, VECTOR, type, w, x, PAD, batch, 0, 16, key), expectFirst, batch, 0, 16, "first part");
            write(x, second);
            assertRows(run(t, VECTOR, type, w, x, PAD, batch, 16, ROWS, key), expectFirst, batch, 16, ROWS,
                    "same key, values changed");

            // A new key converts afresh; so does the same key on another segment, offset or batch.
            assertRows(run(t, VECTOR, type, w, x, PAD, batch, 0, ROWS, key + 1), expectSecond, batch, 0, ROWS,
                    "new key");
            MemorySegment both = t.allocate(2L * batch * COLS * Float.BYTES);
            long second0 = PAD + (long) batch * COLS * Float.BYTES;
            write(both, PAD, first);
            write(both, second0, second);
            assertRows(run(t, VECTOR, type, w, both, PAD, batch, 0, ROWS, key + 1), expectFirst, batch, 0, ROWS,
                    "same key, another segment");
            assertRows(run(t, VECTOR, type, w, both, second0, batch, 0, ROWS, key + 1), expectSecond, batch, 0,
                    ROWS, "same key, another offset");
            write(both, second0, first);
            if (batch > 1) {
                assertRows(run(t, VECTOR, type, w, both, second0, batch - 1, 0, ROWS, key + 1),
                        run(t, SCALAR, type, w, t.f32(first), PAD, batch - 1, 0, ROWS, 0), batch - 1, 0, ROWS,
                        "same key, another batch");
            }
            // Half the columns: the inputs are the first half of the values.
            MemorySegment narrow = weights(t, type, COLS / 2);
            assertRows(run(t, VECTOR, type, narrow, both, second0, batch, 0, ROWS, key + 1, COLS / 2),
                    run(t, SCALAR, type, narrow, t.f32(first), PAD, batch, 0, ROWS, 0, COLS / 2), batch, 0, ROWS,
                    "same key, other columns");

            // Key 0 promises nothing.
            write(x, first);
            assertRows(run(t, VECTOR, type, w, x, PAD, batch, 0, ROWS, 0), expectFirst, batch, 0, ROWS, "key 0");
            write(x, second);
            assertRows(run(t, VECTOR, type, w, x, PAD, batch, 0, ROWS, 0), expectSecond, batch, 0, ROWS,
                    "key 0 again");

            // A call without a key takes the thread's scratch: the key's conversion is gone, and the
            // next call with it converts what the input now holds.
            assertRows(run(t, VECTOR, type, w, x, PAD, batch, 0, ROWS, key + 2), expectSecond, batch, 0, ROWS,
                    "key + 2");
            write(x, third);
            assertRows(run(t, VECTOR, type, w, x, PAD, batch, 0, ROWS, 0),
                    run(t, SCALAR, type, w, t.f32(third), PAD, batch, 0, ROWS, 0), batch, 0, ROWS,
                    "no key, other values");
            write(x, first);
            assertRows(run(t, VECTOR, type, w, x, PAD, batch, 0, ROWS, key + 2), expectFirst, batch, 0, ROWS,
                    "key + 2 after a call without a key");
        }
    }

    /** The scalar kernels have nothing to keep: a key changes nothing. */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"Q4_0_X16", "Q4_K_X16", "Q8_0_X16", "Q6_K_X16", "F32_X16", "F16_X16", "BF16_X16"})
    void theScalarKernelsReadTheInputEveryTime(TensorType type) {
        try (Tensors t = new Tensors(type.ordinal())) {
            MemorySegment w = weights(t, type);
            float[] first = t.uniform(COLS, -2f, 2f);
            float[] second = t.uniform(COLS, -2f, 2f);
            MemorySegment x = t.f32(first);
            float[] expectSecond = run(t, SCALAR, type, w, t.f32(second), PAD, 1, 0, ROWS, 0);
            run(t, SCALAR, type, w, x, PAD, 1, 0, ROWS, 7);
            write(x, second);
            assertRows(run(t, SCALAR, type, w, x, PAD, 1, 0, ROWS, 7), expectSecond, 1, 0, ROWS, "scalar, same key");
        }
    }

    private static MemorySegment weights(Tensors t, TensorType type) {
        return weights(t, type, COLS);
    }

    private static MemorySegment weights(Tensors t, TensorType type, int cols) {
        TensorType plain = type.source();
        MemorySegment stored = GgufBlocks.random(t, plain, (long) ROWS * cols);
        if (plain == TensorType.F16) { // f16_x16 holds finite values only
            for (long i = 0; i < (long) ROWS * cols; i++) {
                short half = stored.get(LittleEndian.F16, PAD + 2 * i);
                if ((half & 0x7c00) == 0x7c00) {
                    stored.set(LittleEndian.F16, PAD + 2 * i, (short) (half & 0x83ff));
                }
            }
        }
        MemorySegment interleaved = t.allocate(plain.rowBytes(cols) * ROWS);
        SCALAR.interleave(plain, stored, PAD, interleaved, PAD, ROWS, cols);
        return interleaved;
    }

    private static void write(MemorySegment x, float[] values) {
        write(x, PAD, values);
    }

    private static void write(MemorySegment x, long offset, float[] values) {
        for (int i = 0; i < values.length; i++) {
            x.set(F32, offset + (long) i * Float.BYTES, values[i]);
        }
    }

    /** All {@code batch * ROWS} outputs of a call over rows {@code [rowStart, rowEnd)} (the others zero). */
    private static float[] run(Tensors t, KernelOps ops, TensorType type, MemorySegment w, MemorySegment x, long xOffset,
            int batch, int rowStart, int rowEnd, long key) {
        return run(t, ops, type, w, x, xOffset, batch, rowStart, rowEnd, key, COLS);
    }

    private static float[] run(Tensors t, KernelOps ops, TensorType type, MemorySegment w, MemorySegment x,
            long xOffset, int batch, int rowStart, int rowEnd, long key, int cols) {
        MemorySegment out = t.f32(new float[batch * ROWS]);
        ops.matmul(type, w, PAD, x, xOffset, out, PAD, ROWS, cols, batch, rowStart, rowEnd, key);
        return read(out, batch * ROWS);
    }

    private static void assertRows(float[] actual, float[] expected, int batch, int rowStart, int rowEnd,
            String what) {
        for (int b = 0; b < batch; b++) {
            for (int r = rowStart; r < rowEnd; r++) {
                assertThat(Float.floatToRawIntBits(actual[b * ROWS + r])).as("%s: input %d row %d", what, b, r)
                        .isEqualTo(Float.floatToRawIntBits(expected[b * ROWS + r]));
            }
        }
    }
}
