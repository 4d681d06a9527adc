package dev.tandem.kernels;

import static dev.tandem.kernels.LittleEndian.F16;
import static dev.tandem.kernels.LittleEndian.I8;

import java.lang.foreign.MemorySegment;

/**
 * The scalar parts of {@link MatmulOps#matmulQ6_K_X16}, shared by both implementations: where a
 * row's bytes sit in either layout of a row (inside an interleaved group, or among the last rows,
 * which stay q6_K), and one row's dot product with an input quantized as {@link Q4_0X16} quantizes
 * it.
 */
final class Q6_KX16 {

    /** Bytes of one superblock of a group: 16 f16 {@code d}, 16 x 16 scales, 128 x 16 {@code ql}, 64 x 16 {@code qh}. */
    static final long GROUP_BLOCK_BYTES = 16 * 210;

    /** Where a group's superblock holds the rows' scales, {@code ql} and {@code qh} bytes. */
    static final int SCALES = 32;
    static final int QL = SCALES + 16 * 16;
    static final int QH = QL + 128 * 16;

    private Q6_KX16() {}

    /** Where byte {@code j} (of 210) of row {@code row}'s q6_K superblock goes in its group's superblock. */
    static long byteAt(int j, int row) {
        if (j < 128) {
            return QL + Q4_0X16.pairByte(j, row);
        } else if (j < 192) {
            return QH + Q4_0X16.pairByte(j - 128, row);
        } else if (j < 208) {
            return SCALES + 16L * (j - 192) + row;
        }
        return 2L * row + (j - 208);
    }

    /**
     * Row {@code r} of a matrix of {@code rows} rows and {@code supers} superblocks per row at
     * {@code weights}, times the quantized input at {@code qBase} and {@code blockBase} (in blocks
     * of 32) of {@code in}, as {@link MatmulOps#matmulQ6_K_X16} defines it: per superblock, its
     * sub-blocks in the order {@link #subBlock} gives.
     */
    static float row(MemorySegment weights, long weights0, int rows, int supers, int r, Q4_0X16.Inputs in, int qBase,
            int blockBase) {
        long rowBytes = supers * 210L;
        int grouped = rows - rows % TensorType.X16_ROWS;
        int lane = r % TensorType.X16_ROWS;
        boolean interleaved = r < grouped;
        long first = interleaved ? weights0 + (long) (r - lane) * rowBytes : weights0 + (long) r * rowBytes;
        float acc = 0f;
        for (int b = 0; b < supers; b++) {
            long block = first + b * (interleaved ? GROUP_BLOCK_BYTES : 210L);
            float d = HalfFloats.f16ToF32(weights.get(F16, block + (interleaved ? byteAt(208, lane) : 208)));
            for (int n = 0; n < 16; n++) {
                int s = subBlock(n);
                int h = s / 8;
                int k = (s % 8) / 2;
                int sum = 0;
                for (int l = 16 * (s % 2); l < 16 * (s % 2) + 16; l++) {
                    int ql = 64 * h + 32 * (k % 2) + l; // k 0 and 2: ql[l] of the half, 1 and 3: ql[l + 32]
                    int qh = 128 + 32 * h + l;
                    int low = weights.get(I8, block + (interleaved ? byteAt(ql, lane) : ql)) & 0xff;
                    int high = weights.get(I8, block + (interleaved ? byteAt(qh, lane) : qh)) & 0xff;
                    int q = ((k < 2 ? low : low >>> 4) & 0x0f) | ((high >>> (2 * k)) & 3) << 4;
                    sum += (q - 32) * in.quant(qBase + b * 256 + 16 * s + l % 16);
                }
                int sc = weights.get(I8, block + (interleaved ? byteAt(192 + s, lane) : 192 + s));
                float dx = in.d()[blockBase + b * 8 + s / 2];
                acc = Math.fma((float) sum, d * sc * dx, acc);
            }
        }
        return acc;
    }

    /**
     * The {@code n}-th sub-block of 16 values a superblock's sum takes: per half of 128 values,
     * the first 16 of each quarter of 32 values, then the second 16 of each (0, 2, 4, 6, 1, 3, 5,
     * 7, 8, 10, ...), the order in which the vector kernel's loads meet them.
     */
    static int subBlock(int n) {
        int h = n / 8;
        int i = n % 8;
        return 8 * h + 2 * (i % 4) + i / 4;
    }
}
