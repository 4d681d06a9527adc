package dev.tandem.kernels.scalar;

import static dev.tandem.kernels.scalar.LittleEndian.F16;
import static dev.tandem.kernels.scalar.LittleEndian.I32;
import static dev.tandem.kernels.scalar.LittleEndian.I8;

import dev.tandem.kernels.MatmulOps;
import dev.tandem.kernels.TensorType;
import java.lang.foreign.MemorySegment;

/**
 * The layouts of {@link TensorType#Q5_0_X16}, {@link TensorType#Q4_1_X16} and
 * {@link TensorType#Q5_1_X16}, llama.cpp's other blocks of 32 values interleaved by 16 rows, and
 * the scalar twin of their matmuls: one row's dot product with an input quantized as for
 * {@link MatmulOps#matmulQ4_0_X16}, read from either layout of a row (inside an interleaved group,
 * or among the last rows, which stay in the file's layout).
 *
 * <p>A block of a group holds, for its 16 rows side by side: the f16 scales {@code d} (row
 * {@code i}'s at {@code 2 * i}), for q4_1 and q5_1 the f16 mins {@code m} (at {@code 32 + 2 * i}),
 * for q5_0 and q5_1 the four bytes of fifth bits {@code qh} (at {@link #highBitsAt} {@code + 4 * i}),
 * then the nibble bytes in pairs (byte {@code k} at {@link #nibblesAt} {@code +}
 * {@link Q4_0X16#pairByte}).
 */
public final class SmallBlocksX16 {

    private SmallBlocksX16() {}

    /** Bytes of one block index of a group of 16 rows of {@code type} (a file type: q5_0, q4_1, q5_1). */
    public static long groupBlockBytes(TensorType type) {
        return 16L * type.blockBytes();
    }

    /** Whether {@code type} has a fifth bit per value. */
    public static boolean hasHighBits(TensorType type) {
        return type != TensorType.Q4_1;
    }

    /** Whether {@code type}'s values are {@code q * d + m} (q4_1, q5_1), not {@code (q - 16) * d} (q5_0). */
    public static boolean hasMins(TensorType type) {
        return type != TensorType.Q5_0;
    }

    /** Where the fifth bits of a group's block start, from the block's start (q5_0, q5_1). */
    public static long highBitsAt(TensorType type) {
        return type == TensorType.Q5_1 ? 64 : 32;
    }

    /** Where the nibble bytes of a group's block start, from the block's start. */
    public static long nibblesAt(TensorType type) {
        return 16L * (type.blockBytes() - 16);
    }

    /** Where byte {@code j} of row {@code row}'s block of {@code type} sits in its group's block. */
    public static long byteAt(TensorType type, int j, int row) {
        int nibbles = type.blockBytes() - 16; // the nibbles end every block
        if (j >= nibbles) {
            return nibblesAt(type) + Q4_0X16.pairByte(j - nibbles, row);
        }
        if (j < 2) {
            return 2L * row + j;
        }
        if (hasMins(type) && j < 4) {
            return 32 + 2L * row + (j - 2);
        }
        int qh = hasMins(type) ? 4 : 2; // where qh starts in the file's block
        return highBitsAt(type) + 4L * row + (j - qh);
    }

    /**
     * Value {@code k} (0 to 31) of a block as its unsigned quant: the nibble of byte {@code k % 16}
     * (low for {@code k < 16}) with bit {@code k} of {@code qh} above it ({@code qh} 0 for q4_1).
     */
    public static int quant(int qh, int packed, int k) {
        int nibble = k < 16 ? packed & 0x0f : packed >>> 4;
        return nibble | ((qh >>> k) & 1) << 4;
    }

    /**
     * The input's term for a block's min, as llama.cpp's q8_1 blocks hold it: {@code dx * Σ q}
     * rounded to f16 ({@code sum8} is {@code 8 Σ q}).
     */
    public static float inputSum(float dx, int sum8) {
        return HalfFloats.f16ToF32(HalfFloats.f32ToF16(dx * (float) (sum8 / 8)));
    }

    /**
     * Row {@code r} of a matrix of {@code type} ({@code rows} rows, {@code blocks} blocks per row)
     * at {@code weights} in its interleaved layout, times the quantized input at {@code qBase} and
     * {@code blockBase} of {@code in}: per block the exact integer sum {@code Σ w q} ({@code w} the
     * quant, less 16 for q5_0), then {@code acc = fma(sum, dw * dx, acc)} and, for q4_1 and q5_1,
     * {@code acc = fma(m, inputSum(dx, sum8), acc)}, the blocks in order.
     */
    public static float row(TensorType type, MemorySegment weights, long weights0, int rows, int blocks, int r,
            Q4_0X16.Inputs in, int qBase, int blockBase) {
        long blockBytes = type.blockBytes();
        int nibbles = type.blockBytes() - 16;
        boolean high = hasHighBits(type);
        boolean mins = hasMins(type);
        int offset = mins ? 0 : 16;
        int lane = r % TensorType.X16_ROWS;
        boolean interleaved = Q4_0X16.inGroup(rows, r);
        float acc = 0f;
        for (int b = 0; b < blocks; b++) {
            long block = Q4_0X16.blockStart(weights0, rows, blocks, blockBytes, r, b);
            long scaleAt = interleaved ? block + 2L * lane : block;
            int qh = !high ? 0
                    : weights.get(I32, interleaved ? block + highBitsAt(type) + 4L * lane : block + nibbles - 4);
            int sum = 0;
            int x = qBase + b * 32;
            for (int k = 0; k < 16; k++) {
                long at = interleaved ? block + nibblesAt(type) + Q4_0X16.pairByte(k, lane) : block + nibbles + k;
                int packed = weights.get(I8, at) & 0xff;
                sum += (quant(qh, packed, k) - offset) * in.quant(x + k)
                        + (quant(qh, packed, k + 16) - offset) * in.quant(x + k + 16);
            }
            float dx = in.d()[blockBase + b];
            float dw = HalfFloats.f16ToF32(weights.get(F16, scaleAt));
            acc = Math.fma((float) sum, dw * dx, acc);
            if (mins) {
                float m = HalfFloats.f16ToF32(weights.get(F16, interleaved ? scaleAt + 32 : scaleAt + 2));
                acc = Math.fma(m, inputSum(dx, in.sum8()[blockBase + b]), acc);
            }
        }
        return acc;
    }
}
