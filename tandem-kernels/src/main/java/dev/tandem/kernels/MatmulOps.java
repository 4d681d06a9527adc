package dev.tandem.kernels;

import java.lang.foreign.MemorySegment;

/**
 * Matrix times a batch of vectors, over a range of rows: {@code out[b, r] = sum_k W[r, k] * x[b, k]}
 * for {@code r} in {@code [rowStart, rowEnd)} and {@code b} in {@code [0, batch)}.
 *
 * <p>Layouts: {@code W} is row-major {@code [rows, cols]}, {@code x} is {@code [batch, cols]} and
 * {@code out} is {@code [batch, rows]}, all contiguous. Rows outside the range are not touched, so
 * a caller splits one matmul into row-block tasks that write disjoint parts of {@code out} and
 * together keep every core busy. Each weight row is read once for the whole batch.
 */
public interface MatmulOps {

    /**
     * Vector and scalar {@code matmulF32} agree within this fraction of {@code sum_k |W[r, k] * x[b, k]|}
     * for {@code cols <= 4096}: both accumulate in f32, in different orders.
     */
    float F32_RELATIVE_TOLERANCE = 1e-5f;

    /**
     * Vector and scalar {@code matmulQ8_0} agree within this fraction of the sum of the absolute
     * products of the dequantized weights and {@code x}, for {@code cols <= 4096}.
     */
    float Q8_0_RELATIVE_TOLERANCE = 1e-5f;

    /** Matmul with f32 weights. */
    void matmulF32(
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd);

    /**
     * Matmul with weights in {@link Q8_0} blocks: {@code cols} must be a multiple of 32, and row
     * {@code r} starts {@code r * Q8_0.rowBytes(cols)} bytes after {@code weightsOffset}.
     */
    void matmulQ8_0(
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd);
}
