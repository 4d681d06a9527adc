package dev.tandem.kernels.scalar;

import static dev.tandem.kernels.scalar.LittleEndian.F16;
import static dev.tandem.kernels.scalar.LittleEndian.I8;

import dev.tandem.kernels.MatmulOps;
import dev.tandem.kernels.TensorType;
import java.lang.foreign.MemorySegment;

/**
 * The layout of {@link TensorType#Q5_K_X16} and the scalar twin of {@link MatmulOps#matmulQ5_K_X16}:
 * one row's dot product with an input quantized as {@link Q4_0X16} quantizes it, read from either
 * layout of a row (inside an interleaved group, or among the last rows, which stay q5_K).
 */
public final class Q5_KX16 {

    /**
     * Bytes of one superblock of a group: a 256-byte header (16 f16 {@code d}, 16 f16 {@code dmin},
     * 12 x 16 scale bytes, as in {@link TensorType#Q4_K_X16}), 32 x 16 bytes of fifth bits, 128 x 16
     * nibble bytes.
     */
    public static final long GROUP_BLOCK_BYTES = 16 * 176;

    /** Where the fifth bits of a group's superblock start: byte {@code l} of row {@code i} at {@link Q4_0X16#pairByte}. */
    public static final long HIGH_BITS = 256;

    /** Where the nibble bytes of a group's superblock start: byte {@code k} of row {@code i} at {@link Q4_0X16#pairByte}. */
    public static final long NIBBLES = 768;

    private Q5_KX16() {}

    /** Where byte {@code j} (of 176) of row {@code row}'s superblock sits in its group's superblock. */
    public static long byteAt(int j, int row) {
        if (j < 4) {
            return 32L * (j / 2) + 2L * row + j % 2; // d, then dmin
        }
        if (j < 16) {
            return 64 + 16L * (j - 4) + row; // the 12 scale bytes
        }
        if (j < 48) {
            return HIGH_BITS + Q4_0X16.pairByte(j - 16, row);
        }
        return NIBBLES + Q4_0X16.pairByte(j - 48, row);
    }

    /**
     * The 5-bit quant (0 to 31) of sub-block {@code t} (0 to 7) at position {@code l} of its 32:
     * the low nibble of nibble byte {@code 32 * (t / 2) + l} for an even {@code t}, the high one for
     * an odd, with bit {@code t} of fifth-bit byte {@code l} above it.
     */
    public static int quant(int highBits, int packed, int t) {
        int nibble = t % 2 == 0 ? packed & 0x0f : packed >>> 4;
        return nibble | ((highBits >>> t) & 1) << 4;
    }

    /**
     * Row {@code r} of a matrix of {@code rows} rows and {@code blocks} superblocks per row at
     * {@code weights}, times the quantized input at {@code qBase} and {@code blockBase} (in blocks
     * of 32) of {@code in}, as {@link MatmulOps#matmulQ5_K_X16} defines it.
     */
    public static float row(MemorySegment weights, long weights0, int rows, int blocks, int r, Q4_0X16.Inputs in, int qBase,
            int blockBase) {
        int lane = r % TensorType.X16_ROWS;
        boolean interleaved = Q4_0X16.inGroup(rows, r);
        float acc = 0f;
        for (int b = 0; b < blocks; b++) {
            long block = Q4_0X16.blockStart(weights0, rows, blocks, 176, r, b);
            long d0 = interleaved ? block + 2L * lane : block;
            long scales = interleaved ? block + 64 + lane : block + 4;
            long step = interleaved ? 16 : 1;
            float d = HalfFloats.f16ToF32(weights.get(F16, d0));
            float dmin = HalfFloats.f16ToF32(weights.get(F16, interleaved ? d0 + 32 : d0 + 2));
            for (int t = 0; t < 8; t++) {
                int x = qBase + b * 256 + t * 32;
                int dot = 0;
                int sum = 0;
                for (int l = 0; l < 32; l++) {
                    int k = (t / 2) * 32 + l;
                    int packed = weights.get(I8, interleaved ? block + NIBBLES + Q4_0X16.pairByte(k, lane)
                            : block + 48 + k) & 0xff;
                    int high = weights.get(I8, interleaved ? block + HIGH_BITS + Q4_0X16.pairByte(l, lane)
                            : block + 16 + l) & 0xff;
                    int q = in.quant(x + l);
                    dot += quant(high, packed, t) * q;
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
