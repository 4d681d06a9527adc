package dev.tandem.kernels.scalar;

import static dev.tandem.kernels.scalar.LittleEndian.F16;
import static dev.tandem.kernels.scalar.LittleEndian.F32;

import dev.tandem.kernels.MatmulOps;
import dev.tandem.kernels.TensorType;
import java.lang.foreign.MemorySegment;

/**
 * The scalar part of {@link MatmulOps#matmulF32_X16}, {@link MatmulOps#matmulF16_X16} and
 * {@link MatmulOps#matmulBF16_X16}, shared by both implementations: one row's dot product with an
 * input, read from either layout of a row (inside an interleaved group, or among the last rows,
 * which stay as stored), in the order the vector loops compute every lane.
 */
public final class FloatsX16 {

    /** Bytes of one value of the 16 rows of an f32_x16 group: 16 floats side by side. */
    public static final long F32_VALUE_BYTES = 16L * Float.BYTES;

    /** Bytes of one value of the 16 rows of an f16_x16 or bf16_x16 group: 16 halves side by side. */
    public static final long HALF_VALUE_BYTES = 16L * Short.BYTES;

    private FloatsX16() {}

    /**
     * Offset of row {@code row}'s value {@code k} within its group, values of {@code bytes} bytes
     * (4 or 2): value {@code k} of the 16 rows side by side.
     */
    public static long valueAt(int bytes, int k, int row) {
        return (long) k * TensorType.X16_ROWS * bytes + (long) row * bytes;
    }

    /** The f32 of half {@code bits}, exactly: bf16 (the upper half of an f32) or f16 ({@link Float#float16ToFloat}). */
    public static float widen(boolean bf16, short bits) {
        return bf16 ? Float.intBitsToFloat(bits << 16) : Float.float16ToFloat(bits);
    }

    /**
     * Row {@code r} of a matrix of {@code plain} (F32, F16 or BF16) values, {@code rows} rows and
     * {@code cols} columns at {@code weights}, times the f32 input at {@code x}:
     * {@code acc = fma(w_k, x_k, acc)} for {@code k} from 0, one chain from 0, each half widened
     * exactly.
     */
    public static float row(TensorType plain, MemorySegment weights, long weights0, int rows, int cols, int r,
            MemorySegment x, long x0) {
        int bytes = plain.blockBytes();
        boolean bf16 = plain == TensorType.BF16;
        long rowBytes = (long) cols * bytes;
        int grouped = rows - rows % TensorType.X16_ROWS;
        int lane = r % TensorType.X16_ROWS;
        boolean interleaved = r < grouped;
        long group = weights0 + (long) (r - lane) * rowBytes;
        long plainRow = weights0 + (long) r * rowBytes;
        float acc = 0f;
        for (int k = 0; k < cols; k++) {
            long at = interleaved ? group + valueAt(bytes, k, lane) : plainRow + (long) k * bytes;
            float w = bytes == Float.BYTES ? weights.get(F32, at) : widen(bf16, weights.get(F16, at));
            acc = Math.fma(w, x.get(F32, x0 + (long) k * Float.BYTES), acc);
        }
        return acc;
    }
}
