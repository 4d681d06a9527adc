package dev.tandem.kernels.scalar;

import static dev.tandem.kernels.scalar.LittleEndian.F16;
import static dev.tandem.kernels.scalar.LittleEndian.F32;
import static dev.tandem.kernels.scalar.LittleEndian.I8;

import dev.tandem.kernels.MatmulOps;
import dev.tandem.kernels.TensorType;
import java.lang.foreign.MemorySegment;

/**
 * The scalar parts of {@link MatmulOps#matmulQ4_0_X16}, shared by both implementations: the
 * quantization of an input to q8_0 blocks, and one row's dot product with it, read from either
 * layout of a row (inside an interleaved group, or among the last rows, which stay q4_0).
 */
public final class Q4_0X16 {

    /** Bytes of one block of a group: 16 f16 scales, then 16 x 16 nibble bytes. */
    public static final long GROUP_BLOCK_BYTES = 16 * 18;

    private Q4_0X16() {}

    /**
     * Scratch for the quantized inputs of one call: the quants two to an int (quant {@code 2m} in
     * the low half of {@code pairs[m]}, {@code 2m + 1} in the high half, as the vector loops
     * broadcast them), one factor and {@code 8 * sum q} per block (the vector loops multiply the
     * nibbles as they are and take the 8 off once per block).
     */
    public record Inputs(int[] pairs, float[] d, int[] sum8) {
        public static Inputs of(int batch, int cols) {
            return new Inputs(new int[batch * cols / 2], new float[batch * (cols / 32)], new int[batch * (cols / 32)]);
        }

        /** Quant {@code i}. */
        public short quant(int i) {
            return (short) (pairs[i >> 1] >> ((i & 1) << 4));
        }

        public void setQuant(int i, int q) {
            int shift = (i & 1) << 4;
            pairs[i >> 1] = (pairs[i >> 1] & ~(0xffff << shift)) | (q & 0xffff) << shift;
        }
    }

    /**
     * Quantizes block {@code block} of the input at {@code at} into {@code into} at
     * {@code block * 32} and its factor and {@code 8 * sum q} at {@code block}, as
     * {@link MatmulOps#matmulQ4_0_X16} defines.
     */
    public static void quantizeBlock(MemorySegment x, long at, int block, Inputs into, int qBase, int blockBase) {
        long from = at + block * 32L * Float.BYTES;
        float amax = 0f;
        for (int i = 0; i < 32; i++) {
            amax = Math.max(amax, Math.abs(x.get(F32, from + i * (long) Float.BYTES)));
        }
        float scale = scale(amax);
        int sum = 0;
        for (int i = 0; i < 32; i++) {
            int q = round(x.get(F32, from + i * (long) Float.BYTES) * scale);
            into.setQuant(qBase + block * 32 + i, q);
            sum += q;
        }
        into.d()[blockBase + block] = factor(amax);
        into.sum8()[blockBase + block] = 8 * sum;
    }

    /** The {@code batch} inputs of {@code cols} values at {@code x}, every block quantized by {@link #quantizeBlock}. */
    public static Inputs quantized(MemorySegment x, long xOffset, int batch, int cols) {
        int blocks = cols / 32;
        Inputs in = Inputs.of(batch, cols);
        for (int b = 0; b < batch; b++) {
            for (int block = 0; block < blocks; block++) {
                quantizeBlock(x, xOffset + (long) b * cols * Float.BYTES, block, in, b * cols, b * blocks);
            }
        }
        return in;
    }

    /**
     * Where nibble byte {@code k} of row {@code row} of a group of 16 sits among the group's nibble
     * bytes of one block, in both interleaved layouts ({@link TensorType#Q4_0_X16},
     * {@link TensorType#Q4_K_X16}): bytes {@code 2j} and {@code 2j + 1} of the 16 rows side by side,
     * 32 bytes per pair.
     */
    public static long pairByte(int k, int row) {
        return 32L * (k / 2) + 2L * row + k % 2;
    }

    /** Whether row {@code r} of a matrix of {@code rows} rows lies in a group of 16 (else it is one of the last, as stored). */
    public static boolean inGroup(int rows, int r) {
        return r < rows - rows % TensorType.X16_ROWS;
    }

    /**
     * Where row {@code r}'s block {@code b} starts in a matrix of {@code rows} rows of
     * {@code blocks} blocks of {@code blockBytes} at {@code weights0}, in a layout that interleaves
     * 16 rows block by block: its group's block (16 rows' worth) for a row in a group, else the
     * row's own block.
     */
    public static long blockStart(long weights0, int rows, int blocks, long blockBytes, int r, int b) {
        long rowBytes = blocks * blockBytes;
        if (inGroup(rows, r)) {
            return weights0 + (long) (r - r % TensorType.X16_ROWS) * rowBytes + b * TensorType.X16_ROWS * blockBytes;
        }
        return weights0 + (long) r * rowBytes + b * blockBytes;
    }

    /** {@code 127 / amax}, or 0 for an all-zero block. */
    public static float scale(float amax) {
        return amax != 0f ? 127f / amax : 0f;
    }

    /** The block's factor: {@code amax / 127} rounded to f16 and back. */
    public static float factor(float amax) {
        return HalfFloats.f16ToF32(HalfFloats.f32ToF16(amax / 127f));
    }

    /** {@code v} rounded half away from zero, as {@code (int)} of {@code v + copySign(0.5f, v)}. */
    public static int round(float v) {
        return (int) (v + Math.copySign(0.5f, v));
    }

    /**
     * Row {@code r} of a matrix of {@code rows} rows and {@code blocks} blocks per row at
     * {@code weights}, times the quantized input at {@code qBase} and {@code blockBase} of
     * {@code in}: the blocks in order, each added with one fused multiply-add.
     */
    public static float row(MemorySegment weights, long weights0, int rows, int blocks, int r, Inputs in, int qBase,
            int blockBase) {
        long rowBytes = blocks * 18L;
        int grouped = rows - rows % TensorType.X16_ROWS;
        int lane = r % TensorType.X16_ROWS;
        long group = weights0 + (long) (r - lane) * rowBytes;
        long plain = weights0 + (long) r * rowBytes;
        float acc = 0f;
        for (int b = 0; b < blocks; b++) {
            long scaleAt;
            long quants;
            boolean interleaved = r < grouped;
            if (interleaved) {
                long block = group + b * GROUP_BLOCK_BYTES;
                scaleAt = block + 2L * lane;
                quants = block + 32;
            } else {
                scaleAt = plain + b * 18L;
                quants = scaleAt + 2;
            }
            int sum = 0;
            int x = qBase + b * 32;
            for (int k = 0; k < 16; k++) {
                long at = interleaved ? quants + pairByte(k, lane) : quants + k;
                int packed = weights.get(I8, at) & 0xff;
                sum += ((packed & 0x0f) - 8) * in.quant(x + k) + ((packed >>> 4) - 8) * in.quant(x + k + 16);
            }
            float dw = HalfFloats.f16ToF32(weights.get(F16, scaleAt));
            acc = Math.fma((float) sum, dw * in.d()[blockBase + b], acc);
        }
        return acc;
    }
}
