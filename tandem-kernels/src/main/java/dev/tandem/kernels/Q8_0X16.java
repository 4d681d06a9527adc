package dev.tandem.kernels;

import static dev.tandem.kernels.LittleEndian.F16;
import static dev.tandem.kernels.LittleEndian.F32;
import static dev.tandem.kernels.LittleEndian.I8;

import java.lang.foreign.MemorySegment;

/**
 * The scalar part of {@link MatmulOps#matmulQ8_0_X16}, shared by both implementations: one row's
 * dot product with an input, read from either layout of a row (inside an interleaved group, or
 * among the last rows, which stay q8_0), in the order the vector loops compute every lane.
 */
final class Q8_0X16 {

    /** Bytes of one block of a group: 16 f16 scales, then 32 x 16 quants. */
    static final long GROUP_BLOCK_BYTES = 16 * 34;

    private Q8_0X16() {}

    /** Offset of quant {@code k} of row {@code row}'s block within the group's block: 16 rows side by side. */
    static int quantByte(int k, int row) {
        return 32 + 16 * k + row;
    }

    /**
     * Row {@code r} of a matrix of {@code rows} rows and {@code blocks} blocks per row at
     * {@code weights}, times the f32 input at {@code x}: per block, {@code sum = fma(q_k, x_k, sum)}
     * over its 32 values from 0, then {@code acc = fma(sum, d, acc)}, blocks in order from 0.
     */
    static float row(MemorySegment weights, long weights0, int rows, int blocks, int r, MemorySegment x, long x0) {
        long rowBytes = blocks * 34L;
        int grouped = rows - rows % TensorType.X16_ROWS;
        int lane = r % TensorType.X16_ROWS;
        boolean interleaved = r < grouped;
        long group = weights0 + (long) (r - lane) * rowBytes;
        long plain = weights0 + (long) r * rowBytes;
        float acc = 0f;
        for (int b = 0; b < blocks; b++) {
            long block = group + b * GROUP_BLOCK_BYTES;
            long scaleAt = interleaved ? block + 2L * lane : plain + b * 34L;
            long xb = x0 + b * 32L * Float.BYTES;
            float sum = 0f;
            for (int k = 0; k < 32; k++) {
                long at = interleaved ? block + quantByte(k, lane) : scaleAt + 2 + k;
                sum = Math.fma((float) weights.get(I8, at), x.get(F32, xb + (long) k * Float.BYTES), sum);
            }
            acc = Math.fma(sum, HalfFloats.f16ToF32(weights.get(F16, scaleAt)), acc);
        }
        return acc;
    }
}
