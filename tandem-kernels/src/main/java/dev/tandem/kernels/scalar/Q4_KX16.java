package dev.tandem.kernels.scalar;

import static dev.tandem.kernels.scalar.LittleEndian.F16;
import static dev.tandem.kernels.scalar.LittleEndian.I8;

import dev.tandem.kernels.MatmulOps;
import dev.tandem.kernels.TensorType;
import java.lang.foreign.MemorySegment;

/**
 * The scalar parts of {@link MatmulOps#matmulQ4_K_X16}, shared by both implementations: one row's
 * dot product with an input quantized as {@link Q4_0X16} quantizes it, read from either layout of
 * a row (inside an interleaved group, or among the last rows, which stay q4_K).
 */
public final class Q4_KX16 {

    /** Bytes of one superblock of a group: 16 f16 {@code d}, 16 f16 {@code dmin}, 12 x 16 scale bytes, 128 x 16 nibble bytes. */
    public static final long GROUP_BLOCK_BYTES = 16 * 144;

    /** Bytes of the 16 rows' header of a superblock: their {@code d}, {@code dmin} and scale bytes. */
    public static final int HEADER_BYTES = 256;

    /**
     * Superblocks of a row that the layout keeps together: their headers side by side, then their
     * nibbles, so that a kernel reading a chunk's headers and then its nibbles reads front to back.
     */
    public static final int CHUNK = 4;

    private Q4_KX16() {}

    /**
     * Offset from its group's start of superblock {@code b}'s header: in the chunk of
     * {@link #CHUNK} superblocks (fewer for a row's last) that holds it, its header is the
     * {@code b % CHUNK}-th of the chunk's headers, which come first.
     */
    public static long headerAt(int b) {
        int first = b - b % CHUNK;
        return first * GROUP_BLOCK_BYTES + (long) HEADER_BYTES * (b - first);
    }

    /**
     * Offset from its group's start of superblock {@code b}'s 2048 nibble bytes (of {@code supers}
     * a row), after its chunk's headers.
     */
    public static long nibblesAt(int b, int supers) {
        int first = b - b % CHUNK;
        int chunk = Math.min(CHUNK, supers - first);
        return first * GROUP_BLOCK_BYTES + (long) HEADER_BYTES * chunk + 2048L * (b - first);
    }

    /**
     * Row {@code r} of a matrix of {@code rows} rows and {@code blocks} superblocks per row at
     * {@code weights}, times the quantized input at {@code qBase} and {@code blockBase} (in blocks
     * of 32) of {@code in}, as {@link MatmulOps#matmulQ4_K_X16} defines it.
     */
    public static float row(MemorySegment weights, long weights0, int rows, int blocks, int r, Q4_0X16.Inputs in, int qBase,
            int blockBase) {
        long rowBytes = blocks * 144L;
        int grouped = rows - rows % TensorType.X16_ROWS;
        int lane = r % TensorType.X16_ROWS;
        long group = weights0 + (long) (r - lane) * rowBytes;
        long plain = weights0 + (long) r * rowBytes;
        float acc = 0f;
        boolean interleaved = r < grouped;
        for (int b = 0; b < blocks; b++) {
            // Row r's d, dmin, 12 scale bytes (step apart) and nibble bytes in this superblock.
            long d0;
            long scales;
            long step;
            long quants;
            if (interleaved) {
                long header = group + headerAt(b);
                d0 = header + 2L * lane;
                scales = header + 64 + lane;
                step = 16;
                quants = group + nibblesAt(b, blocks);
            } else {
                long block = plain + b * 144L;
                d0 = block;
                scales = block + 4;
                step = 1;
                quants = block + 16;
            }
            float d = HalfFloats.f16ToF32(weights.get(F16, d0));
            float dmin = HalfFloats.f16ToF32(weights.get(F16, interleaved ? d0 + 32 : d0 + 2));
            for (int t = 0; t < 8; t++) {
                int x = qBase + b * 256 + t * 32;
                int dot = 0;
                int sum = 0;
                for (int l = 0; l < 32; l++) {
                    int k = (t / 2) * 32 + l;
                    int packed = weights.get(I8, interleaved ? quants + Q4_0X16.pairByte(k, lane) : quants + k) & 0xff;
                    int n = t % 2 == 0 ? packed & 0x0f : packed >>> 4;
                    int q = in.quant(x + l);
                    dot += n * q;
                    sum += q;
                }
                float dx = in.d()[blockBase + b * 8 + t];
                acc = Math.fma((float) dot, d * ScalarOps.q4_KScale(weights, scales, step, t) * dx, acc);
                acc = Math.fma((float) sum, -(dmin * ScalarOps.q4_KMin(weights, scales, step, t) * dx), acc);
            }
        }
        return acc;
    }
}
