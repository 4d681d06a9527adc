package dev.tandem.kernels.scalar;

import static dev.tandem.kernels.scalar.LittleEndian.F16;
import static dev.tandem.kernels.scalar.LittleEndian.I8;

import dev.tandem.kernels.MatmulOps;
import dev.tandem.kernels.TensorType;
import java.lang.foreign.MemorySegment;

/**
 * The scalar part of {@link MatmulOps#matmulQ8_0_X16}, shared by all implementations: one row's
 * dot product with an input quantized to int8, read from either layout of a row (inside an
 * interleaved group, or among the last rows, which stay q8_0), in the order the vector loops and
 * the native kernel compute every lane.
 */
public final class Q8_0X16 {

    /** Bytes of one block of a group: 16 f16 scales, then 32 x 16 quants. */
    public static final long GROUP_BLOCK_BYTES = 16 * 34;

    private Q8_0X16() {}

    /** Blocks of a row of {@code blocks} that lie in pairs: all but a last odd one. */
    public static int paired(int blocks) {
        return blocks - blocks % 2;
    }

    /**
     * Offset of row {@code row}'s f16 scale of block {@code b} (of {@code blocks}) within its group.
     * A pair of blocks {@code b, b + 1} ({@code b} even) takes their 1088 bytes at {@code b * 544}:
     * block {@code b}'s 16 scales, block {@code b + 1}'s, then quant {@code k} of block {@code b}
     * and quant {@code k} of block {@code b + 1} of the 16 rows, 16 bytes each, for {@code k} from
     * 0 to 31. A last odd block takes its 544 bytes alone: scales, then quant {@code k} at
     * {@code 32 + 16 * k}. In pairs, one pass front to back runs two blocks' chains of
     * multiply-adds side by side (see {@code VectorQ8_0X16.q8x16Group}).
     */
    public static long scaleAt(int b, int blocks, int row) {
        int odd = b % 2;
        long pair = (long) (b - odd) * GROUP_BLOCK_BYTES;
        return b < paired(blocks) ? pair + 32L * odd + 2L * row : pair + 2L * row;
    }

    /** Offset of row {@code row}'s quant {@code k} of block {@code b} (of {@code blocks}) within its group, as {@link #scaleAt} lays them out. */
    public static long quantAt(int b, int blocks, int k, int row) {
        int odd = b % 2;
        long pair = (long) (b - odd) * GROUP_BLOCK_BYTES;
        return b < paired(blocks) ? pair + 64 + 32L * k + 16L * odd + row : pair + 32 + 16L * k + row;
    }

    /**
     * Row {@code r} of a matrix of {@code rows} rows and {@code blocks} blocks per row at
     * {@code weights}, times the quantized input at {@code qBase} and {@code blockBase} of
     * {@code in} (as {@link MatmulOps#matmulQ4_0_X16} quantizes it): per block the exact integer
     * sum {@code Σ w_k q_k} over its 32 values, then {@code acc = fma((float) sum, dw * dx, acc)},
     * blocks in order from 0.
     */
    public static float row(MemorySegment weights, long weights0, int rows, int blocks, int r, Q4_0X16.Inputs in, int qBase,
            int blockBase) {
        long rowBytes = blocks * 34L;
        int grouped = rows - rows % TensorType.X16_ROWS;
        int lane = r % TensorType.X16_ROWS;
        boolean interleaved = r < grouped;
        long group = weights0 + (long) (r - lane) * rowBytes;
        long plain = weights0 + (long) r * rowBytes;
        float acc = 0f;
        for (int b = 0; b < blocks; b++) {
            long scaleAt = interleaved ? group + scaleAt(b, blocks, lane) : plain + b * 34L;
            int x = qBase + b * 32;
            int sum = 0;
            for (int k = 0; k < 32; k++) {
                long at = interleaved ? group + quantAt(b, blocks, k, lane) : scaleAt + 2 + k;
                sum += weights.get(I8, at) * in.quant(x + k);
            }
            float dw = HalfFloats.f16ToF32(weights.get(F16, scaleAt));
            acc = Math.fma((float) sum, dw * in.d()[blockBase + b], acc);
        }
        return acc;
    }
}
