package dev.tandem.kernels;

import static dev.tandem.kernels.LittleEndian.F16;
import static dev.tandem.kernels.LittleEndian.I32;
import static dev.tandem.kernels.LittleEndian.I8;

import java.lang.foreign.MemorySegment;

/**
 * The layout of {@link TensorType#Q5_0_X16} and the scalar twin of {@link MatmulOps#matmulQ5_0_X16}:
 * one row's dot product with an input quantized as for {@link MatmulOps#matmulQ4_0_X16}, read from
 * either layout of a row (inside an interleaved group, or among the last rows, which stay q5_0).
 */
final class Q5_0X16 {

    /** Bytes of one block of a group: 16 f16 scales, 16 x 4 bytes of fifth bits, 16 x 16 nibble bytes. */
    static final long GROUP_BLOCK_BYTES = 16 * 22;

    /** Where the fifth bits of a group's block start, from the block's start: row {@code i}'s four at {@code 4 * i}. */
    static final long HIGH_BITS = 32;

    /** Where the nibble bytes of a group's block start, from the block's start. */
    static final long NIBBLES = 96;

    private Q5_0X16() {}

    /** Where byte {@code j} (of 22) of row {@code row}'s block sits in its group's block of 352 bytes. */
    static long byteAt(int j, int row) {
        if (j < 2) {
            return 2L * row + j;
        }
        if (j < 6) {
            return HIGH_BITS + 4L * row + (j - 2);
        }
        return NIBBLES + Q4_0X16.pairByte(j - 6, row);
    }

    /**
     * Value {@code k} (0 to 31) of a q5_0 block as its 5-bit quant less 16, from the block's
     * {@code qh} and the nibble byte {@code k % 16}.
     */
    static int quant(int qh, int packed, int k) {
        int nibble = k < 16 ? packed & 0x0f : packed >>> 4;
        return (nibble | ((qh >>> k) & 1) << 4) - 16;
    }

    /**
     * Row {@code r} of a matrix of {@code rows} rows and {@code blocks} blocks per row at
     * {@code weights}, times the quantized input at {@code qBase} and {@code blockBase} of
     * {@code in}: per block the exact integer sum {@code Σ (q - 16) x}, then
     * {@code acc = fma(sum, dw * dx, acc)}, the blocks in order.
     */
    static float row(MemorySegment weights, long weights0, int rows, int blocks, int r, Q4_0X16.Inputs in, int qBase,
            int blockBase) {
        long rowBytes = blocks * 22L;
        int grouped = rows - rows % TensorType.X16_ROWS;
        int lane = r % TensorType.X16_ROWS;
        boolean interleaved = r < grouped;
        long group = weights0 + (long) (r - lane) * rowBytes;
        long plain = weights0 + (long) r * rowBytes;
        float acc = 0f;
        for (int b = 0; b < blocks; b++) {
            long block = interleaved ? group + b * GROUP_BLOCK_BYTES : plain + b * 22L;
            long scaleAt = interleaved ? block + 2L * lane : block;
            int qh = weights.get(I32, interleaved ? block + HIGH_BITS + 4L * lane : block + 2);
            int sum = 0;
            int x = qBase + b * 32;
            for (int k = 0; k < 16; k++) {
                long at = interleaved ? block + NIBBLES + Q4_0X16.pairByte(k, lane) : block + 6 + k;
                int packed = weights.get(I8, at) & 0xff;
                sum += quant(qh, packed, k) * in.quant(x + k) + quant(qh, packed, k + 16) * in.quant(x + k + 16);
            }
            float dw = HalfFloats.f16ToF32(weights.get(F16, scaleAt));
            acc = Math.fma((float) sum, dw * in.d()[blockBase + b], acc);
        }
        return acc;
    }
}
