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
     * Rows of {@link TensorType#F32_X16}, {@link TensorType#F16_X16} and {@link TensorType#BF16_X16}
     * that their matmuls read as four streams for one input (batch 1, and the inputs a
     * batch leaves over four at a time): a caller that splits a matrix into row ranges of multiples
     * of this runs every range that way. Smaller ranges run two groups or one at a time, the same
     * bits, slower from memory.
     */
    int F32_X16_PASS_ROWS = 4 * TensorType.X16_ROWS;

    /**
     * Vector and scalar {@code matmulQ4_0_X16} agree bit for bit: both quantize the inputs the same
     * way, sum the integer products exactly and combine the blocks with the same fused
     * multiply-adds in the same order.
     */
    float Q4_0_X16_RELATIVE_TOLERANCE = 0f;

    /** Vector and scalar {@code matmulQ4_K_X16} agree bit for bit, as {@code matmulQ4_0_X16} does. */
    float Q4_K_X16_RELATIVE_TOLERANCE = 0f;

    /** Vector and scalar {@code matmulQ6_K_X16} agree bit for bit, as {@code matmulQ4_0_X16} does. */
    float Q6_K_X16_RELATIVE_TOLERANCE = 0f;

    /** Vector and scalar {@code matmulQ5_0_X16} agree bit for bit, as {@code matmulQ4_0_X16} does. */
    float Q5_0_X16_RELATIVE_TOLERANCE = 0f;

    /** Vector and scalar {@code matmulQ4_1_X16} and {@code matmulQ5_1_X16} agree bit for bit. */
    float Q4_1_X16_RELATIVE_TOLERANCE = 0f;

    /** Vector and scalar {@code matmulIQ4_NL_X16} and {@code matmulIQ4_XS_X16} agree bit for bit. */
    float IQ4_X16_RELATIVE_TOLERANCE = 0f;

    /** Vector and scalar {@code matmulQ2_K_X16} and {@code matmulQ3_K_X16} agree bit for bit. */
    float LOW_BITS_K_X16_RELATIVE_TOLERANCE = 0f;

    /** Vector and scalar {@code matmulQ5_K_X16} agree bit for bit, as {@code matmulQ4_0_X16} does. */
    float Q5_K_X16_RELATIVE_TOLERANCE = 0f;

    /**
     * Matmul with q4_0 weights in the {@link TensorType#Q4_0_X16} layout ({@link
     * QuantOps#interleaveQ4_0}), computed as llama.cpp computes its q4_0 dot products: each input is
     * first quantized to q8_0 blocks, and each block's dot product is a sum of integer products.
     *
     * <p>Per input and per block of 32 values, {@code amax} is the largest magnitude, the factor
     * {@code dx} is {@code amax / 127} rounded to f16 and back, and value {@code v} becomes
     * {@code q = (int) (v * s + copySign(0.5f, v * s))} with {@code s = 127 / amax} ({@code 0} when
     * {@code amax} is 0): rounding half away from zero, {@code |q| <= 127}. Then, per row and input,
     * starting from {@code 0} and block by block in order,
     * {@code acc = fma((float) (sum_k (w_k - 8) * q_k), dw * dx, acc)} with {@code w_k} the
     * block's nibbles and {@code dw} its f16 scale, all in f32; {@code out} is {@code acc}. The
     * result differs from a plain q4_0 dot product by the rounding of the inputs, at most
     * {@code 0.57 * amax / 127} per value of a block (half a step, and the f16 rounding of {@code dx}).
     *
     * <p>{@code cols} must be a multiple of 32; row {@code r} starts {@code r *
     * TensorType.Q4_0.rowBytes(cols)} bytes after {@code weightsOffset} as in q4_0, and
     * {@code weightsOffset} must be the start of a group of 16 rows (a multiple of 16 rows from the
     * matrix's first). Any row range works; one that starts and ends on group boundaries runs at
     * full speed, a row of a group cut by the range reads its bytes one by one.
     */
    default void matmulQ4_0_X16(
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
            int rowEnd) {
        matmul(TensorType.Q4_0_X16, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                rowStart, rowEnd, 0);
    }

    /**
     * Matmul with f32 weights in the {@link TensorType#F32_X16} layout ({@link
     * QuantOps#interleaveF32}) and f32 inputs: per row and input, {@code acc = fma(w_k, x_k, acc)}
     * for {@code k} from 0 in order, starting from {@code 0}; {@code out} is {@code acc}. Both
     * implementations compute exactly that, so they agree bit for bit, at every batch and wherever
     * a range cuts the rows. Row ranges and offsets as for {@link #matmulQ4_0_X16}.
     */
    default void matmulF32_X16(
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
            int rowEnd) {
        matmul(TensorType.F32_X16, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                rowStart, rowEnd, 0);
    }

    /**
     * Matmul with f16 weights in the {@link TensorType#F16_X16} layout ({@link
     * QuantOps#interleaveF16}, finite values only: on an infinity or NaN the vector kernel's result
     * is undefined) and f32 inputs: per row and input, {@code acc = fma(w_k, x_k, acc)}
     * for {@code k} from 0 in order, starting from {@code 0}, each weight widened to f32 exactly;
     * {@code out} is {@code acc}. Both implementations compute exactly that, so they agree bit for
     * bit, at every batch and wherever a range cuts the rows. Row ranges and offsets as for
     * {@link #matmulQ4_0_X16}; ranges of multiples of {@link #F32_X16_PASS_ROWS} rows run fastest.
     */
    default void matmulF16_X16(
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
            int rowEnd) {
        matmul(TensorType.F16_X16, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                rowStart, rowEnd, 0);
    }

    /**
     * Matmul with bf16 weights in the {@link TensorType#BF16_X16} layout ({@link
     * QuantOps#interleaveBF16}) and f32 inputs: per row and input, {@code acc = fma(w_k, x_k, acc)}
     * for {@code k} from 0 in order, starting from {@code 0}, each weight widened to f32 exactly;
     * {@code out} is {@code acc}. Both implementations compute exactly that, so they agree bit for
     * bit, at every batch and wherever a range cuts the rows. Row ranges and offsets as for
     * {@link #matmulQ4_0_X16}; ranges of multiples of {@link #F32_X16_PASS_ROWS} rows run fastest.
     */
    default void matmulBF16_X16(
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
            int rowEnd) {
        matmul(TensorType.BF16_X16, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                rowStart, rowEnd, 0);
    }

    /**
     * Matmul with q8_0 weights in the {@link TensorType#Q8_0_X16} layout ({@link
     * QuantOps#interleaveQ8_0}), computed as llama.cpp computes its q8_0 x q8_0 dot products: each
     * input is quantized per 32 values exactly as {@link #matmulQ4_0_X16} does (factor {@code dx},
     * quants {@code q}); then per row and input, starting from {@code 0} and block by block in
     * order, {@code acc = fma((float) Σ w q, dw * dx, acc)} with {@code w} the block's int8 quants
     * and {@code dw} its f16 scale; {@code out} is {@code acc}. Every implementation computes
     * exactly that, so they agree bit for bit. Row ranges and offsets as for
     * {@link #matmulQ4_0_X16}; {@code cols} must be a multiple of 32.
     */
    default void matmulQ8_0_X16(
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
            int rowEnd) {
        matmul(TensorType.Q8_0_X16, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                rowStart, rowEnd, 0);
    }

    /**
     * Matmul with q4_K weights in the {@link TensorType#Q4_K_X16} layout ({@link
     * QuantOps#interleaveQ4_K}), with int8 inputs: each input is quantized per 32 values exactly as
     * {@link #matmulQ4_0_X16} does (factor {@code dx}, quants {@code q}). Then, per row and input,
     * from {@code acc = 0}, superblock by superblock and within each its sub-blocks {@code t = 0..7}
     * in order (sub-block {@code t} meets input block {@code 8 b + t}):
     * {@code acc = fma((float) Σ n q, (d * sc_t) * dx, acc)}, then
     * {@code acc = fma((float) Σ q, -((dmin * m_t) * dx), acc)}, with {@code n} the sub-block's
     * nibbles (0 to 15), {@code d} and {@code dmin} the superblock's f16 factors and
     * {@code sc_t}, {@code m_t} its 6-bit scale and min, all in f32. That is the dot product of
     * the dequantized weights {@code d sc n - dmin m} with the quantized inputs, the rounding of the
     * inputs as in {@link #matmulQ4_0_X16} aside. Row ranges and offsets as for
     * {@link #matmulQ4_0_X16}; {@code cols} must be a multiple of 256.
     */
    default void matmulQ4_K_X16(
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
            int rowEnd) {
        matmul(TensorType.Q4_K_X16, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                rowStart, rowEnd, 0);
    }

    /**
     * Matmul with q6_K weights in the {@link TensorType#Q6_K_X16} layout ({@link
     * QuantOps#interleaveQ6_K}), with int8 inputs: each input is quantized per 32 values exactly as
     * {@link #matmulQ4_0_X16} does (factor {@code dx}, quants {@code q}). Then, per row and input,
     * from {@code acc = 0}, superblock by superblock and within each its sixteen sub-blocks of 16
     * values in the order 0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15 (sub-block {@code s}
     * meets input block {@code 8 b + s / 2}): {@code acc = fma((float) Σ (w - 32) q, (d * sc_s) * dx, acc)},
     * with {@code w} the sub-block's 6-bit quants, {@code d} the superblock's f16 factor and
     * {@code sc_s} its int8 scale, all in f32. That is the dot product of the dequantized weights
     * {@code d sc (w - 32)} with the quantized inputs. Row ranges and offsets as for
     * {@link #matmulQ4_0_X16}; {@code cols} must be a multiple of 256.
     */
    default void matmulQ6_K_X16(
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
            int rowEnd) {
        matmul(TensorType.Q6_K_X16, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                rowStart, rowEnd, 0);
    }

    /**
     * Matmul with q5_0 weights in the {@link TensorType#Q5_0_X16} layout ({@link
     * QuantOps#interleaveQ5_0}), computed as llama.cpp computes its q5_0 x q8_0 dot products: each
     * input is quantized per 32 values exactly as {@link #matmulQ4_0_X16} does (factor {@code dx},
     * quants {@code q}); then per row and input, starting from {@code 0} and block by block,
     * {@code acc = fma((float) Σ (w - 16) q, dw * dx, acc)} with {@code w} the 5-bit quants and
     * {@code dw} the block's scale. Row ranges and offsets as for {@link #matmulQ4_0_X16}; {@code
     * cols} must be a multiple of 32. Plain q5_0 has no matmul: it runs interleaved.
     */
    default void matmulQ5_0_X16(
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
            int rowEnd) {
        matmul(TensorType.Q5_0_X16, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                rowStart, rowEnd, 0);
    }

    /**
     * Matmul with q4_1 weights in the {@link TensorType#Q4_1_X16} layout, computed as llama.cpp
     * computes its q4_1 x q8_1 dot products: each input quantized per 32 values as for
     * {@link #matmulQ4_0_X16} (factor {@code dx}, quants {@code q}), with {@code s = dx * Σ q}
     * rounded to f16 as a q8_1 block holds it; then per row and input, block by block,
     * {@code acc = fma((float) Σ w q, dw * dx, acc)} and {@code acc = fma(m, s, acc)}, with
     * {@code w} the nibbles and {@code dw}, {@code m} the block's scale and min. Row ranges and
     * offsets as for {@link #matmulQ4_0_X16}; {@code cols} must be a multiple of 32. Plain q4_1 has
     * no matmul: it runs interleaved.
     */
    default void matmulQ4_1_X16(
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
            int rowEnd) {
        matmul(TensorType.Q4_1_X16, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                rowStart, rowEnd, 0);
    }

    /** {@link #matmulQ4_1_X16} for q5_1 in the {@link TensorType#Q5_1_X16} layout: {@code w} the 5-bit quants. */
    default void matmulQ5_1_X16(
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
            int rowEnd) {
        matmul(TensorType.Q5_1_X16, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                rowStart, rowEnd, 0);
    }

    /**
     * Matmul with iq4_nl weights in the {@link TensorType#IQ4_NL_X16} layout, computed as
     * llama.cpp computes its iq4_nl x q8_0 dot products: each input quantized per 32 values as for
     * {@link #matmulQ4_0_X16}; then per row and input, block by block,
     * {@code acc = fma((float) Σ v q, dw * dx, acc)} with {@code v} the table values of the
     * nibbles. Row ranges and offsets as for {@link #matmulQ4_0_X16}; {@code cols} must be a
     * multiple of 32. Plain iq4_nl has no matmul: it runs interleaved.
     */
    default void matmulIQ4_NL_X16(
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
            int rowEnd) {
        matmul(TensorType.IQ4_NL_X16, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                rowStart, rowEnd, 0);
    }

    /**
     * {@link #matmulIQ4_NL_X16} for iq4_xs in the {@link TensorType#IQ4_XS_X16} layout, with
     * {@code dw = d * (ls - 32)} per sub-block of 32; {@code cols} must be a multiple of 256.
     */
    default void matmulIQ4_XS_X16(
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
            int rowEnd) {
        matmul(TensorType.IQ4_XS_X16, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                rowStart, rowEnd, 0);
    }

    /**
     * Matmul with q2_K weights in the {@link TensorType#Q2_K_X16} layout, with int8 inputs quantized
     * per 32 values as for {@link #matmulQ4_0_X16}. Per row and input, sub-block of 16 by sub-block
     * in llama.cpp's order, with {@code w} the 2-bit quants and {@code sc} the sub-block's scale
     * byte: {@code acc = fma((float) Σ w q, d * (sc & 15) * dx, acc)}, then
     * {@code acc = fma((float) Σ q, -(dmin * (sc >> 4) * dx), acc)}. Row ranges and offsets as for
     * {@link #matmulQ4_0_X16}; {@code cols} must be a multiple of 256. Plain q2_K has no matmul.
     */
    default void matmulQ2_K_X16(
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
            int rowEnd) {
        matmul(TensorType.Q2_K_X16, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                rowStart, rowEnd, 0);
    }

    /**
     * {@link #matmulQ2_K_X16} for q3_K in the {@link TensorType#Q3_K_X16} layout: {@code w} the
     * 3-bit quants less 4, one fused multiply-add per sub-block with {@code d * (s - 32) * dx}.
     */
    default void matmulQ3_K_X16(
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
            int rowEnd) {
        matmul(TensorType.Q3_K_X16, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                rowStart, rowEnd, 0);
    }

    /**
     * Matmul with q5_K weights in the {@link TensorType#Q5_K_X16} layout ({@link
     * QuantOps#interleaveQ5_K}), with int8 inputs quantized per 32 values as {@link
     * #matmulQ4_K_X16} quantizes them (one q5_K sub-block each). Then, per row and input, starting
     * from {@code 0} and sub-block by sub-block, with {@code w} the 5-bit quants, {@code sc} and
     * {@code m} the sub-block's 6-bit scale and min: {@code acc = fma((float) Σ w q, d * sc * dx, acc)},
     * then {@code acc = fma((float) Σ q, -(dmin * m * dx), acc)}. Row ranges and offsets as for
     * {@link #matmulQ4_0_X16}; {@code cols} must be a multiple of 256. Plain q5_K has no matmul: it
     * runs interleaved.
     */
    default void matmulQ5_K_X16(
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
            int rowEnd) {
        matmul(TensorType.Q5_K_X16, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                rowStart, rowEnd, 0);
    }

    /**
     * The matmul for weights in an interleaved layout {@code type}: {@link TensorType#Q4_0_X16},
     * {@link TensorType#Q8_0_X16}, {@link TensorType#Q4_K_X16}, {@link TensorType#Q6_K_X16},
     * {@link TensorType#Q5_0_X16}, {@link TensorType#Q5_K_X16}, {@link TensorType#Q4_1_X16},
     * {@link TensorType#Q5_1_X16}, {@link TensorType#IQ4_NL_X16}, {@link TensorType#IQ4_XS_X16},
     * {@link TensorType#Q2_K_X16}, {@link TensorType#Q3_K_X16}, {@link TensorType#F32_X16},
     * {@link TensorType#F16_X16} or {@link TensorType#BF16_X16}. A file's type runs only in its
     * interleaved layout ({@link TensorType#interleaved()}, which {@link QuantOps#interleave} makes):
     * every matrix a model multiplies is interleaved when it is loaded.
     *
     * @throws IllegalArgumentException for a null type and a type that is not interleaved, and as the kernel does
     */
    default void matmul(
            TensorType type,
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
            int rowEnd) {
        matmul(type, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd, 0);
    }

    /**
     * {@link #matmul(TensorType, MemorySegment, long, MemorySegment, long, MemorySegment, long, int,
     * int, int, int, int)} for a caller that multiplies the same inputs several times on one thread
     * (the parts of one task, which one core takes one after another; the gate and up projections
     * of the same rows). Calls on one thread with the same nonzero {@code inputKey} and the same
     * {@code x}, {@code xOffset}, {@code batch} and {@code cols} promise the same input values, so
     * the kernels that first convert their inputs (the block types' interleaved kernels quantize them to int8) may keep one call's conversion for the next: a promise
     * broken reads the earlier values. {@code 0} promises nothing. The results are the same bits
     * either way. A caller gives each task, or each set of calls over the same values, a key of its
     * own, say from a counter.
     */
    void matmul(
            TensorType type,
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
            int rowEnd,
            long inputKey);
}
