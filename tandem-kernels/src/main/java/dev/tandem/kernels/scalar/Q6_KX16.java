package dev.tandem.kernels.scalar;

import static dev.tandem.kernels.scalar.LittleEndian.F16;
import static dev.tandem.kernels.scalar.LittleEndian.I8;

import dev.tandem.kernels.MatmulOps;
import dev.tandem.kernels.TensorType;
import java.lang.foreign.MemorySegment;

/**
 * The scalar parts of {@link MatmulOps#matmulQ6_K_X16}, shared by both implementations: where a
 * row's bytes sit in either layout of a row (inside an interleaved group, or among the last rows,
 * which stay q6_K), and one row's dot product with an input quantized as {@link Q4_0X16} quantizes
 * it.
 */
public final class Q6_KX16 {

    /** Bytes of one superblock of a group: 16 f16 {@code d}, 16 x 16 scales, 128 x 16 {@code ql}, 64 x 16 {@code qh}. */
    public static final long GROUP_BLOCK_BYTES = 16 * 210;

    /** Where a group's superblock holds the rows' scales, and its {@code ql} and {@code qh} bytes. */
    public static final int SCALES = 32;
    public static final int QUANTS = SCALES + 16 * 16;

    /**
     * Bytes of one run of the quants: a pair of {@code ql} bytes of the 16 rows, the pair 32
     * bytes further on in the row, and the pair of {@code qh} bytes both share.
     */
    public static final int RUN = 3 * 32;

    private Q6_KX16() {}

    /**
     * Where byte {@code j} (of 210) of row {@code row}'s q6_K superblock goes in its group's
     * superblock. The quants lie in the order the vector kernel reads them, in 32 runs of
     * {@link #RUN} bytes: run {@code p = 16 * h + 8 * s + t} (half {@code h}, sub-block half
     * {@code s}, {@code t} of 8) holds the 16 rows' {@code ql} pair {@code 32 * h + 8 * s + t}
     * (bytes {@code 2 * that} and {@code 2 * that + 1}), the {@code ql} pair 16 after it and the
     * {@code qh} pair {@code p}, each side by side as in {@link Q4_0X16#pairByte}. So the kernel
     * reads a superblock front to back, one stream; in q6_K's order it read three streams at once,
     * hundreds of bytes apart, and ran at about half the speed from memory.
     */
    public static long byteAt(int j, int row) {
        if (j < 192) {
            int pair = j < 128 ? j / 2 : (j - 128) / 2; // of ql, or of qh
            int slot; // 0: the first ql pair of a run, 1: the second, 2: the qh pair
            int p;
            if (j < 128) {
                int h = pair / 32;
                int q = pair % 32;
                slot = q / 16;
                p = 16 * h + q % 16;
            } else {
                slot = 2;
                p = pair;
            }
            // p = 16 * h + 8 * (n % 2) + t, and the run is 8 * n + t with n = 2 * h + n % 2: the run is p
            return QUANTS + (long) RUN * p + 32L * slot + 2L * row + j % 2;
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
    public static float row(MemorySegment weights, long weights0, int rows, int supers, int r, Q4_0X16.Inputs in, int qBase,
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
    public static int subBlock(int n) {
        int h = n / 8;
        int i = n % 8;
        return 8 * h + 2 * (i % 4) + i / 4;
    }
}
