package dev.tandem.kernels;

import static dev.tandem.kernels.LittleEndian.F16;
import static dev.tandem.kernels.LittleEndian.F32;

import java.lang.foreign.MemorySegment;

/**
 * The scalar part of {@link MatmulOps#matmulF16_X16} and {@link MatmulOps#matmulBF16_X16}, shared
 * by both implementations: one row's dot product with an input, read from either layout of a row
 * (inside an interleaved group, or among the last rows, which stay f16 or bf16), in the order the
 * vector loops compute every lane.
 */
final class HalvesX16 {

    /** Bytes of one value of the 16 rows of a group: 16 halves side by side. */
    static final long GROUP_VALUE_BYTES = 16L * Short.BYTES;

    private HalvesX16() {}

    /** The f32 of half {@code bits}, exactly: bf16 (the upper half of an f32) or f16 ({@link Float#float16ToFloat}). */
    static float widen(boolean bf16, short bits) {
        return bf16 ? Float.intBitsToFloat(bits << 16) : Float.float16ToFloat(bits);
    }

    /** Offset of row {@code row}'s value {@code k} within its group: value {@code k} of the 16 rows side by side. */
    static long valueAt(int k, int row) {
        return k * GROUP_VALUE_BYTES + (long) row * Short.BYTES;
    }

    /**
     * Row {@code r} of a matrix of {@code rows} rows and {@code cols} columns at {@code weights},
     * times the f32 input at {@code x}: {@code acc = fma(widen(w_k), x_k, acc)} for {@code k} from
     * 0, one chain from 0.
     */
    static float row(boolean bf16, MemorySegment weights, long weights0, int rows, int cols, int r, MemorySegment x,
            long x0) {
        long rowBytes = (long) cols * Short.BYTES;
        int grouped = rows - rows % TensorType.X16_ROWS;
        int lane = r % TensorType.X16_ROWS;
        boolean interleaved = r < grouped;
        long group = weights0 + (long) (r - lane) * rowBytes;
        long plain = weights0 + (long) r * rowBytes;
        float acc = 0f;
        for (int k = 0; k < cols; k++) {
            long at = interleaved ? group + valueAt(k, lane) : plain + (long) k * Short.BYTES;
            acc = Math.fma(widen(bf16, weights.get(F16, at)), x.get(F32, x0 + (long) k * Float.BYTES), acc);
        }
        return acc;
    }
}
