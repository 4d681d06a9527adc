package dev.tandem.kernels;

import static dev.tandem.kernels.LittleEndian.F32;

import java.lang.foreign.MemorySegment;

/**
 * {@link Q8_0} weights repacked at load for {@link MatmulOps#matmulQ8_0Packed}: the same values,
 * laid out per row as the {@code cols} int8 quants of all its blocks, contiguous, followed by the
 * {@code cols / 32} block scales widened exactly to little-endian f32. A row is {@link #rowBytes}
 * bytes, 36 per 32 values instead of GGUF's 34.
 *
 * <p>Why: on AVX-512 the GGUF matvec is bound by the vector ports, not by memory, and a quarter of
 * its vector instructions widen the f16 scale (a 16-bit load moved into a vector register, an f16
 * conversion and a broadcast); an f32 scale is one broadcast load, which runs on a load port. Where
 * the weights stream from DRAM the 6% more bytes cost more than that saves, so the layout is a
 * choice for the caller, measured by {@code tandem bench kernels}.
 */
public final class Q8_0Packed {

    private Q8_0Packed() {}

    /** Bytes of one packed row of {@code cols} values; {@code cols} must be a multiple of 32. */
    public static long rowBytes(int cols) {
        return Q8_0.rowBytes(cols) / Q8_0.BLOCK_BYTES * (Q8_0.BLOCK_SIZE + Float.BYTES);
    }

    /**
     * Repacks {@code rows} GGUF q8_0 rows of {@code cols} values at {@code src} into the packed
     * layout at {@code dst}. The scales widen exactly, so a matmul on the packed copy computes the
     * same products as on the original.
     */
    public static void pack(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int rows, int cols) {
        ArgumentChecks.packQ8_0(src, srcOffset, dst, dstOffset, rows, cols);
        int blocks = cols / Q8_0.BLOCK_SIZE;
        long fromRow = Q8_0.rowBytes(cols);
        long toRow = rowBytes(cols);
        for (int r = 0; r < rows; r++) {
            long from = srcOffset + r * fromRow;
            long to = dstOffset + r * toRow;
            for (int block = 0; block < blocks; block++) {
                long b = from + (long) block * Q8_0.BLOCK_BYTES;
                MemorySegment.copy(src, b + 2, dst, to + (long) block * Q8_0.BLOCK_SIZE, Q8_0.BLOCK_SIZE);
                dst.set(F32, to + cols + (long) block * Float.BYTES, Q8_0.scale(src, b));
            }
        }
    }
}
