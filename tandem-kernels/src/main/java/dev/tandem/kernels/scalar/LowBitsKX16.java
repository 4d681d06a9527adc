package dev.tandem.kernels.scalar;

import static dev.tandem.kernels.scalar.LittleEndian.F16;
import static dev.tandem.kernels.scalar.LittleEndian.I8;

import dev.tandem.kernels.MatmulOps;
import dev.tandem.kernels.TensorType;
import java.lang.foreign.MemorySegment;

/**
 * The layouts of {@link TensorType#Q2_K_X16} and {@link TensorType#Q3_K_X16} and the scalar twin
 * of their matmuls: one row's dot product with an input quantized as for
 * {@link MatmulOps#matmulQ4_0_X16}, read from either layout of a row (inside an interleaved group,
 * or among the last rows, which stay in the file's layout).
 *
 * <p>Both split 256 values into sixteen sub-blocks of 16: sub-block {@code is = 8n + 2j + h}
 * ({@code n, h} in 0..1, {@code j} in 0..3) holds values {@code 128n + 32j + 16h + l} for
 * {@code l} in 0..15, whose two low bits are bits {@code 2j, 2j + 1} of quant byte
 * {@code 32n + 16h + l}. q2_K's value is {@code d * (sc & 15) * q - dmin * (sc >> 4)} with
 * {@code sc} the sub-block's scale byte; q3_K's is {@code d * (s - 32) * (q - 4 + 4 hbit)} with
 * its 6-bit {@code s} ({@link #q3Scale}) and {@code hbit} bit {@code 4n + j} of mask byte
 * {@code 16h + l}.
 *
 * <p>A superblock of a group holds, for its 16 rows side by side, q2_K: the 16 scale bytes (byte
 * {@code s} of row {@code i} at {@code 16 s + i}), the f16 {@code d} (at {@code 256 + 2 i}) and
 * {@code dmin} ({@code 288 + 2 i}), then the quant bytes in pairs (at {@code 320 +}
 * {@link Q4_0X16#pairByte}); q3_K: the mask bytes in pairs (at {@link Q4_0X16#pairByte}), the quant
 * bytes in pairs (at {@code 512 +}), the 12 scale bytes ({@code 1536 + 16 s + i}) and {@code d}
 * ({@code 1728 + 2 i}).
 */
public final class LowBitsKX16 {

    public static final long Q2_GROUP_BLOCK_BYTES = 16 * 84;
    public static final long Q3_GROUP_BLOCK_BYTES = 16 * 110;

    /** q2_K: where a group superblock's d, dmin and quant pairs start. */
    public static final long Q2_D = 256;
    public static final long Q2_QUANTS = 320;

    /** q3_K: where a group superblock's quant pairs, scale bytes and d start (the mask pairs at 0). */
    public static final long Q3_QUANTS = 512;
    public static final long Q3_SCALES = 1536;
    public static final long Q3_D = 1728;

    private LowBitsKX16() {}

    /** Where byte {@code j} (of 84) of row {@code row}'s q2_K superblock sits in its group's superblock. */
    public static long q2ByteAt(int j, int row) {
        if (j < 16) {
            return 16L * j + row;
        }
        if (j < 80) {
            return Q2_QUANTS + Q4_0X16.pairByte(j - 16, row);
        }
        return Q2_D + 32L * ((j - 80) / 2) + 2L * row + j % 2; // d, then dmin
    }

    /** Where byte {@code j} (of 110) of row {@code row}'s q3_K superblock sits in its group's superblock. */
    public static long q3ByteAt(int j, int row) {
        if (j < 32) {
            return Q4_0X16.pairByte(j, row);
        }
        if (j < 96) {
            return Q3_QUANTS + Q4_0X16.pairByte(j - 32, row);
        }
        if (j < 108) {
            return Q3_SCALES + 16L * (j - 96) + row;
        }
        return Q3_D + 2L * row + (j - 108);
    }

    /**
     * q3_K's scale of sub-block {@code is} (0 to 15) less 32, from the 12 scale bytes ({@code at}
     * the first, {@code step} apart): llama.cpp's unpacking of four low nibbles and two high bits.
     */
    public static int q3Scale(MemorySegment w, long at, long step, int is) {
        int low = unsigned(w, at + step * (is & 7));
        low = is < 8 ? low & 0x0f : low >>> 4;
        int high = (unsigned(w, at + step * (8 + (is & 3))) >>> (2 * (is / 4))) & 3;
        return (low | high << 4) - 32;
    }

    private static int unsigned(MemorySegment w, long at) {
        return w.get(I8, at) & 0xff;
    }

    /** {@code Σ q} of the 16 input quants from {@code x}: the input's side of q2_K's min term. */
    public static int sum16(Q4_0X16.Inputs in, int x) {
        int sum = 0;
        for (int l = 0; l < 16; l++) {
            sum += in.quant(x + l);
        }
        return sum;
    }

    /**
     * Row {@code r} of a q2_K ({@code three} false) or q3_K matrix of {@code rows} rows and
     * {@code blocks} superblocks per row at {@code weights} in its interleaved layout, times the
     * quantized input at {@code qBase} and {@code blockBase} (blocks of 32) of {@code in}: per
     * sub-block of 16, in the order of {@code is}, the exact integer sum {@code Σ w q} and
     * {@code acc = fma(sum, d * scale * dx, acc)}, then for q2_K
     * {@code acc = fma(Σ q, -(dmin * min * dx), acc)}.
     */
    public static float row(boolean three, MemorySegment weights, long weights0, int rows, int blocks, int r,
            Q4_0X16.Inputs in, int qBase, int blockBase) {
        long blockBytes = three ? 110 : 84;
        int lane = r % TensorType.X16_ROWS;
        boolean interleaved = Q4_0X16.inGroup(rows, r);
        float acc = 0f;
        for (int b = 0; b < blocks; b++) {
            long block = Q4_0X16.blockStart(weights0, rows, blocks, blockBytes, r, b);
            long dAt = interleaved ? block + (three ? Q3_D : Q2_D) + 2L * lane : block + (three ? 108 : 80);
            float d = HalfFloats.f16ToF32(weights.get(F16, dAt));
            float dmin = three ? 0f : HalfFloats.f16ToF32(weights.get(F16, interleaved ? dAt + 32 : dAt + 2));
            long quants = interleaved ? block + (three ? Q3_QUANTS : Q2_QUANTS) : block + (three ? 32 : 16);
            for (int is = 0; is < 16; is++) {
                int n = is / 8;
                int j = (is / 2) % 4;
                int h = is % 2;
                int x = qBase + b * 256 + 128 * n + 32 * j + 16 * h;
                int sum = 0;
                for (int l = 0; l < 16; l++) {
                    int k = 32 * n + 16 * h + l;
                    int q = (weights.get(I8, interleaved ? quants + Q4_0X16.pairByte(k, lane) : quants + k) >>> (2 * j)) & 3;
                    if (three) {
                        int m = 16 * h + l;
                        int mask = weights.get(I8, interleaved ? block + Q4_0X16.pairByte(m, lane) : block + m) & 0xff;
                        q = q - 4 + 4 * ((mask >>> (4 * n + j)) & 1);
                    }
                    sum += q * in.quant(x + l);
                }
                float dx = in.d()[blockBase + b * 8 + 4 * n + j];
                if (three) {
                    long scales = interleaved ? block + Q3_SCALES + lane : block + 96;
                    int scale = q3Scale(weights, scales, interleaved ? 16 : 1, is);
                    acc = Math.fma((float) sum, d * scale * dx, acc);
                } else {
                    int sc = weights.get(I8, interleaved ? block + 16L * is + lane : block + is) & 0xff;
                    acc = Math.fma((float) sum, d * (sc & 15) * dx, acc);
                    acc = Math.fma((float) sum16(in, x), -(dmin * (sc >>> 4) * dx), acc);
                }
            }
        }
        return acc;
    }
}
