package dev.tandem.kernels.scalar;

import static dev.tandem.kernels.scalar.LittleEndian.F16;
import static dev.tandem.kernels.scalar.LittleEndian.I8;

import dev.tandem.kernels.MatmulOps;
import dev.tandem.kernels.TensorType;
import java.lang.foreign.MemorySegment;

/**
 * The layouts of {@link TensorType#IQ4_NL_X16} and {@link TensorType#IQ4_XS_X16} and the scalar
 * twin of their matmuls: one row's dot product with an input quantized as for
 * {@link MatmulOps#matmulQ4_0_X16}, read from either layout of a row (inside an interleaved group,
 * or among the last rows, which stay in the file's layout). A nibble {@code n} of either type means
 * {@link #VALUES}{@code [n]} times the block's (iq4_nl) or sub-block's (iq4_xs) scale.
 *
 * <p>iq4_nl's interleaved layout is q4_0's ({@link TensorType#Q4_0_X16}): the same 18-byte blocks.
 * An iq4_xs superblock of a group holds, for its 16 rows side by side, the f16 {@code d} (row
 * {@code i}'s at {@code 2 * i}), the 16-bit {@code scales_h} (at {@code 32 + 2 * i}), the four
 * {@code scales_l} bytes (at {@code 64 + 4 * i}), then the 128 nibble bytes in pairs (byte
 * {@code k} at {@code 128 +} {@link Q4_0X16#pairByte}).
 */
public final class Iq4X16 {

    /** llama.cpp's {@code kvalues_iq4nl}: the value of each nibble before the scale. */
    public static final byte[] VALUES = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

    /** Bytes of one iq4_xs superblock of a group of 16 rows. */
    public static final long XS_GROUP_BLOCK_BYTES = 16 * 136;

    /** Where the nibble bytes of an iq4_xs superblock of a group start. */
    public static final long XS_NIBBLES = 128;

    private Iq4X16() {}

    /** Where byte {@code j} (of 136) of row {@code row}'s iq4_xs superblock sits in its group's superblock. */
    public static long xsByteAt(int j, int row) {
        if (j < 4) {
            return 32L * (j / 2) + 2L * row + j % 2; // d, then scales_h
        }
        if (j < 8) {
            return 64 + 4L * row + (j - 4); // scales_l
        }
        return XS_NIBBLES + Q4_0X16.pairByte(j - 8, row);
    }

    /** The 6-bit scale of iq4_xs sub-block {@code ib} (0 to 7), less 32. */
    public static int xsScale(int scalesH, int scalesL, int ib) {
        int low = (scalesL >>> (4 * ib)) & 0x0f;
        return (low | ((scalesH >>> (2 * ib)) & 3) << 4) - 32;
    }

    /**
     * Row {@code r} of an iq4_nl ({@code xs} false; {@code blocks} blocks of 32 a row) or iq4_xs
     * ({@code blocks} superblocks of 256) matrix of {@code rows} rows at {@code weights} in its
     * interleaved layout, times the quantized input at {@code qBase} and {@code blockBase} of
     * {@code in}: per block of 32 the exact integer sum {@code Σ VALUES[n] q}, then
     * {@code acc = fma(sum, dw * dx, acc)} with {@code dw} iq4_nl's scale, or iq4_xs's
     * {@code d * (ls - 32)}, the blocks in order.
     */
    public static float row(boolean xs, MemorySegment weights, long weights0, int rows, int blocks, int r,
            Q4_0X16.Inputs in, int qBase, int blockBase) {
        long blockBytes = xs ? 136 : 18;
        int lane = r % TensorType.X16_ROWS;
        boolean interleaved = Q4_0X16.inGroup(rows, r);
        int subBlocks = xs ? 8 : 1;
        float acc = 0f;
        for (int b = 0; b < blocks; b++) {
            long block = Q4_0X16.blockStart(weights0, rows, blocks, blockBytes, r, b);
            float d = HalfFloats.f16ToF32(weights.get(F16, interleaved ? block + 2L * lane : block));
            int scalesH = 0;
            int scalesL = 0;
            if (xs) {
                scalesH = weights.get(F16, interleaved ? block + 32 + 2L * lane : block + 2) & 0xffff;
                scalesL = weights.get(LittleEndian.I32, interleaved ? block + 64 + 4L * lane : block + 4);
            }
            long nibbles = interleaved ? block + (xs ? XS_NIBBLES : 32) : block + (xs ? 8 : 2);
            for (int ib = 0; ib < subBlocks; ib++) {
                int x = qBase + (b * subBlocks + ib) * 32;
                int sum = 0;
                for (int k = 0; k < 16; k++) {
                    int byteIndex = 16 * ib + k;
                    long at = interleaved ? nibbles + Q4_0X16.pairByte(byteIndex, lane) : nibbles + byteIndex;
                    int packed = weights.get(I8, at) & 0xff;
                    sum += VALUES[packed & 0x0f] * in.quant(x + k) + VALUES[packed >>> 4] * in.quant(x + k + 16);
                }
                float dw = xs ? d * xsScale(scalesH, scalesL, ib) : d;
                acc = Math.fma((float) sum, dw * in.d()[blockBase + b * subBlocks + ib], acc);
            }
        }
        return acc;
    }
}
