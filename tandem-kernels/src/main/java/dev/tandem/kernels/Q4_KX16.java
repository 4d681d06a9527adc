package dev.tandem.kernels;

import static dev.tandem.kernels.LittleEndian.F16;
import static dev.tandem.kernels.LittleEndian.I8;

import java.lang.foreign.MemorySegment;

/**
 * The scalar parts of {@link MatmulOps#matmulQ4_K_X16}, shared by both implementations: one row's
 * dot product with an input quantized as {@link Q4_0X16} quantizes it, read from either layout of
 * a row (inside an interleaved group, or among the last rows, which stay q4_K).
 */
final class Q4_KX16 {

    /** Bytes of one superblock of a group: 16 f16 {@code d}, 16 f16 {@code dmin}, 12 x 16 scale bytes, 128 x 16 nibble bytes. */
    static final long GROUP_BLOCK_BYTES = 16 * 144;

    private Q4_KX16() {}

    /**
     * Where one row's bytes of one superblock are: its {@code d}, {@code dmin}, scale byte
     * {@code k} and nibble byte {@code k} at {@code d}, {@code dmin}, {@code scales + k * scaleStep}
     * and {@link #nibble}.
     */
    private record Place(long d, long dmin, long scales, long scaleStep, long quants, boolean interleaved) {
        long nibble(int k) {
            return interleaved ? quants + 32L * (k / 2) + k % 2 : quants + k;
        }

        int scaleByte(MemorySegment w, int k) {
            return w.get(I8, scales + k * scaleStep) & 0xff;
        }
    }

    /** The 6-bit scale of sub-block {@code t}, as {@link ScalarOps#q4_KScale} reads it from 12 bytes. */
    private static int scale(MemorySegment w, Place p, int t) {
        if (t < 4) {
            return p.scaleByte(w, t) & 63;
        }
        return (p.scaleByte(w, t + 4) & 0x0f) | (p.scaleByte(w, t - 4) >>> 6) << 4;
    }

    /** The 6-bit min of sub-block {@code t}. */
    private static int min(MemorySegment w, Place p, int t) {
        if (t < 4) {
            return p.scaleByte(w, t + 4) & 63;
        }
        return (p.scaleByte(w, t + 4) >>> 4) | (p.scaleByte(w, t) >>> 6) << 4;
    }

    /**
     * Row {@code r} of a matrix of {@code rows} rows and {@code blocks} superblocks per row at
     * {@code weights}, times the quantized input at {@code qBase} and {@code blockBase} (in blocks
     * of 32) of {@code in}, as {@link MatmulOps#matmulQ4_K_X16} defines it.
     */
    static float row(MemorySegment weights, long weights0, int rows, int blocks, int r, Q4_0X16.Inputs in, int qBase,
            int blockBase) {
        long rowBytes = blocks * 144L;
        int grouped = rows - rows % TensorType.X16_ROWS;
        int lane = r % TensorType.X16_ROWS;
        long group = weights0 + (long) (r - lane) * rowBytes;
        long plain = weights0 + (long) r * rowBytes;
        float acc = 0f;
        for (int b = 0; b < blocks; b++) {
            Place p;
            if (r < grouped) {
                long block = group + b * GROUP_BLOCK_BYTES;
                p = new Place(block + 2L * lane, block + 32 + 2L * lane, block + 64 + lane, 16, block + 256 + 2L * lane,
                        true);
            } else {
                long block = plain + b * 144L;
                p = new Place(block, block + 2, block + 4, 1, block + 16, false);
            }
            float d = HalfFloats.f16ToF32(weights.get(F16, p.d()));
            float dmin = HalfFloats.f16ToF32(weights.get(F16, p.dmin()));
            for (int t = 0; t < 8; t++) {
                int x = qBase + b * 256 + t * 32;
                int dot = 0;
                int sum = 0;
                for (int l = 0; l < 32; l++) {
                    int packed = weights.get(I8, p.nibble((t / 2) * 32 + l)) & 0xff;
                    int n = t % 2 == 0 ? packed & 0x0f : packed >>> 4;
                    int q = in.quant(x + l);
                    dot += n * q;
                    sum += q;
                }
                float dx = in.d()[blockBase + b * 8 + t];
                acc = Math.fma((float) dot, d * scale(weights, p, t) * dx, acc);
                acc = Math.fma((float) sum, -(dmin * min(weights, p, t) * dx), acc);
            }
        }
        return acc;
    }
}
