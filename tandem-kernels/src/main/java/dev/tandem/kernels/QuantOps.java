package dev.tandem.kernels;

import dev.tandem.kernels.scalar.ArgumentChecks;
import dev.tandem.kernels.scalar.Interleaving;
import dev.tandem.kernels.scalar.Iq4X16;
import dev.tandem.kernels.scalar.LowBitsKX16;
import dev.tandem.kernels.scalar.Q4_0X16;
import dev.tandem.kernels.scalar.Q4_KX16;
import dev.tandem.kernels.scalar.Q5_KX16;
import dev.tandem.kernels.scalar.Q6_KX16;
import dev.tandem.kernels.scalar.Q8_0X16;
import dev.tandem.kernels.scalar.SmallBlocksX16;
import java.lang.foreign.MemorySegment;

/**
 * Conversion between f32 and the GGUF tensor types of {@link TensorType}: dequantizing any of them
 * to f32 and quantizing f32 to the types a checkpoint writer needs.
 *
 * <p>{@code elements} counts values, and must be a multiple of the type's block size; {@code src}
 * and {@code dst} are a segment and a byte offset each, read and written unaligned, and must not
 * overlap.
 */
public interface QuantOps {

    /**
     * Vector and scalar dequantization agree bit for bit, for every type and every input byte
     * pattern (NaNs included): both compute the same integer unpacking and the same f32 products and
     * differences, in the same order, without fused multiply-add.
     */
    float DEQUANTIZE_TOLERANCE = 0f;

    /**
     * Dequantizes {@code elements} values of {@code type} at {@code src} to f32 at {@code dst}.
     *
     * <p>f16 widens exactly (subnormals included; a NaN keeps its payload and becomes quiet, as an
     * x86 {@code vcvtph2ps} does); bf16 widens by a 16-bit shift; the block types compute the value
     * their layout in {@link TensorType} defines, in f32, with the f16 scales widened exactly.
     */
    void dequantize(
            TensorType type, MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long elements);

    /**
     * Quantizes {@code elements} f32 values at {@code src} to {@code type} at {@code dst}, rounding as
     * llama.cpp's reference quantizers do, so that the bytes equal those of a ggml-written file:
     *
     * <ul>
     *   <li>{@link TensorType#F32}: a copy.
     *   <li>{@link TensorType#F16}: round to nearest even; overflow to infinity; a NaN becomes the
     *       quiet NaN {@code 0x7e00} with its sign.
     *   <li>{@link TensorType#BF16}: round to nearest even on the upper 16 bits (subnormals kept,
     *       not flushed); a NaN keeps its upper bits with the quiet bit set.
     *   <li>{@link TensorType#Q8_0}: per block {@code d = amax / 127},
     *       {@code q = round(x * (1 / d))} rounding half away from zero, {@code d} stored as f16.
     *   <li>{@link TensorType#Q4_0}: per block {@code max} is the value of largest magnitude (the
     *       first, with its sign), {@code d = max / -8},
     *       {@code q = min(15, (int) (x * (1 / d) + 8.5))}, {@code d} stored as f16.
     *   <li>{@link TensorType#Q4_1}: per block {@code min} and {@code max}, {@code d = (max - min) / 15},
     *       {@code q = min(15, (int) ((x - min) * (1 / d) + 0.5))}, {@code d} and {@code min} stored
     *       as f16; {@link TensorType#Q5_1} the same with {@code d = (max - min) / 31} and no clamp.
     *   <li>{@link TensorType#Q5_0}: as q4_0 with {@code d = max / -16} and
     *       {@code q = min(31, (int) (x * (1 / d) + 16.5))}, the fifth bits in {@code qh}.
     * </ul>
     *
     * <p>An all-zero block gets {@code d = 0} and values {@code 0} (q8_0), or {@code d = -0}
     * ({@code 0 / -8}, f16 {@code 0x8000}) and nibbles {@code 8} (q4_0). The block types need finite
     * values.
     *
     * @throws IllegalArgumentException for the k-quants and the iq4 types,
     *     which have no quantizer here, and for bad arguments
     */
    void quantize(
            TensorType type, MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long elements);

    /**
     * Copies the matrix {@code [rows, cols]} of {@code type} at {@code src} to {@code dst} in its
     * interleaved layout, {@code type.interleaved()}: {@link #interleaveQ4_0},
     * {@link #interleaveQ4_K}, {@link #interleaveQ8_0}, {@link #interleaveQ6_K}, {@link #interleaveQ5_0}, {@link #interleaveQ5_K}, (q4_1, q5_1, q2_K, q3_K, iq4_nl and iq4_xs here),
     * {@link #interleaveF32}, {@link #interleaveF16} or {@link #interleaveBF16}.
     *
     * @throws IllegalArgumentException for a type without an interleaved layout, and as those do
     */
    default void interleave(TensorType type, MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset,
            int rows, int cols) {
        switch (type) {
            case Q4_0 -> interleaveQ4_0(src, srcOffset, dst, dstOffset, rows, cols);
            case Q4_K -> interleaveQ4_K(src, srcOffset, dst, dstOffset, rows, cols);
            case Q8_0 -> interleaveQ8_0(src, srcOffset, dst, dstOffset, rows, cols);
            case Q6_K -> interleaveQ6_K(src, srcOffset, dst, dstOffset, rows, cols);
            case Q5_0 -> interleaveQ5_0(src, srcOffset, dst, dstOffset, rows, cols);
            case Q5_K -> interleaveQ5_K(src, srcOffset, dst, dstOffset, rows, cols);
            case Q2_K, Q3_K -> {
                ArgumentChecks.interleave("interleave", type, src, srcOffset, dst, dstOffset, rows, cols);
                boolean three = type == TensorType.Q3_K;
                long blockBytes = three ? LowBitsKX16.Q3_GROUP_BLOCK_BYTES : LowBitsKX16.Q2_GROUP_BLOCK_BYTES;
                Interleaving.groups(type, src, srcOffset, dst, dstOffset, rows, cols, (b, blocks, j, row) ->
                        b * blockBytes + (three ? LowBitsKX16.q3ByteAt(j, row) : LowBitsKX16.q2ByteAt(j, row)));
            }
            case IQ4_NL -> {
                ArgumentChecks.interleave("interleave", type, src, srcOffset, dst, dstOffset, rows, cols);
                Interleaving.groups(type, src, srcOffset, dst, dstOffset, rows, cols, (b, blocks, j, row) ->
                        b * 16L * 18 + (j < 2 ? 2L * row + j : 32 + Q4_0X16.pairByte(j - 2, row)));
            }
            case IQ4_XS -> {
                ArgumentChecks.interleave("interleave", type, src, srcOffset, dst, dstOffset, rows, cols);
                Interleaving.groups(type, src, srcOffset, dst, dstOffset, rows, cols, (b, blocks, j, row) ->
                        b * Iq4X16.XS_GROUP_BLOCK_BYTES + Iq4X16.xsByteAt(j, row));
            }
            case Q4_1, Q5_1 -> {
                ArgumentChecks.interleave("interleave", type, src, srcOffset, dst, dstOffset, rows, cols);
                Interleaving.groups(type, src, srcOffset, dst, dstOffset, rows, cols, (b, blocks, j, row) ->
                        b * SmallBlocksX16.groupBlockBytes(type) + SmallBlocksX16.byteAt(type, j, row));
            }
            case F32 -> interleaveF32(src, srcOffset, dst, dstOffset, rows, cols);
            case F16 -> interleaveF16(src, srcOffset, dst, dstOffset, rows, cols);
            case BF16 -> interleaveBF16(src, srcOffset, dst, dstOffset, rows, cols);
            case null -> throw new IllegalArgumentException("interleave: type is null");
            default -> throw new IllegalArgumentException("interleave: type = " + type
                    + " has no interleaved layout (Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, Q8_0, F32, F16 and BF16 have one)");
        }
    }

    /**
     * Copies the q4_0 matrix {@code [rows, cols]} at {@code src} to {@code dst} in the
     * {@link TensorType#Q4_0_X16} layout: the same bytes, each group of 16 rows interleaved block by
     * block (two bytes of each row side by side), the last {@code rows % 16} rows as they are. A load-time step, once per matrix; plain
     * byte moves, the same for every implementation.
     *
     * @throws IllegalArgumentException if {@code rows} or {@code cols} is negative, {@code cols} is
     *     not a multiple of 32, or either segment is too small
     */
    default void interleaveQ4_0(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int rows,
            int cols) {
        ArgumentChecks.interleaveQ4_0(src, srcOffset, dst, dstOffset, rows, cols);
        Interleaving.groups(TensorType.Q4_0, src, srcOffset, dst, dstOffset, rows, cols, (b, blocks, j, row) ->
                b * 16L * 18 + (j < 2 ? 2L * row + j : 32 + Q4_0X16.pairByte(j - 2, row)));
    }

    /**
     * Copies the f32 matrix {@code [rows, cols]} at {@code src} to {@code dst} in the
     * {@link TensorType#F32_X16} layout: the same bytes, each group of 16 rows interleaved value by
     * value (value {@code k} of the 16 rows side by side), the last {@code rows % 16} rows as they
     * are. A load-time step, once per matrix.
     *
     * @throws IllegalArgumentException if {@code rows} or {@code cols} is negative, or either
     *     segment is too small
     */
    default void interleaveF32(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int rows,
            int cols) {
        ArgumentChecks.interleaveF32(src, srcOffset, dst, dstOffset, rows, cols);
        Interleaving.floats(TensorType.F32, src, srcOffset, dst, dstOffset, rows, cols);
    }

    /**
     * Copies the f16 matrix {@code [rows, cols]} at {@code src} to {@code dst} in the
     * {@link TensorType#F16_X16} layout: the same bytes, each group of 16 rows interleaved value by
     * value (value {@code k} of the 16 rows side by side), the last {@code rows % 16} rows as they
     * are. A load-time step, once per matrix. f16_x16 holds finite values only (its kernel widens
     * them without a check), so a matrix with an infinity or NaN is refused before anything is
     * written.
     *
     * @throws IllegalArgumentException if {@code rows} or {@code cols} is negative, either segment
     *     is too small, or a value is an infinity or NaN (naming its row and column)
     */
    default void interleaveF16(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int rows,
            int cols) {
        ArgumentChecks.interleaveF16(src, srcOffset, dst, dstOffset, rows, cols);
        ArgumentChecks.finiteHalves("interleaveF16", src, srcOffset, rows, cols);
        Interleaving.floats(TensorType.F16, src, srcOffset, dst, dstOffset, rows, cols);
    }

    /**
     * Copies the bf16 matrix {@code [rows, cols]} at {@code src} to {@code dst} in the
     * {@link TensorType#BF16_X16} layout: the same bytes, each group of 16 rows interleaved value by
     * value (value {@code k} of the 16 rows side by side), the last {@code rows % 16} rows as they
     * are. A load-time step, once per matrix.
     *
     * @throws IllegalArgumentException if {@code rows} or {@code cols} is negative, or either
     *     segment is too small
     */
    default void interleaveBF16(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int rows,
            int cols) {
        ArgumentChecks.interleaveBF16(src, srcOffset, dst, dstOffset, rows, cols);
        Interleaving.floats(TensorType.BF16, src, srcOffset, dst, dstOffset, rows, cols);
    }

    /**
     * Copies the q8_0 matrix {@code [rows, cols]} at {@code src} to {@code dst} in the
     * {@link TensorType#Q8_0_X16} layout: the same bytes, each group of 16 rows interleaved a pair
     * of blocks at a time (quant {@code k} of the 16 rows side by side, then the same quant of the
     * pair's other block), the last {@code rows % 16} rows as they are. A load-time step, once per
     * matrix.
     *
     * @throws IllegalArgumentException if {@code rows} or {@code cols} is negative, {@code cols} is
     *     not a multiple of 32, or either segment is too small
     */
    default void interleaveQ8_0(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int rows,
            int cols) {
        ArgumentChecks.interleaveQ8_0(src, srcOffset, dst, dstOffset, rows, cols);
        Interleaving.groups(TensorType.Q8_0, src, srcOffset, dst, dstOffset, rows, cols, (b, blocks, j, row) ->
                j < 2 ? Q8_0X16.scaleAt(b, blocks, row) + j : Q8_0X16.quantAt(b, blocks, j - 2, row));
    }

    /**
     * Copies the q4_K matrix {@code [rows, cols]} at {@code src} to {@code dst} in the
     * {@link TensorType#Q4_K_X16} layout: the same bytes, each group of 16 rows interleaved
     * superblock by superblock, the last {@code rows % 16} rows as they are. A load-time step.
     *
     * @throws IllegalArgumentException if {@code rows} or {@code cols} is negative, {@code cols} is
     *     not a multiple of 256, or either segment is too small
     */
    default void interleaveQ4_K(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int rows,
            int cols) {
        ArgumentChecks.interleaveQ4_K(src, srcOffset, dst, dstOffset, rows, cols);
        Interleaving.groups(TensorType.Q4_K, src, srcOffset, dst, dstOffset, rows, cols, (b, blocks, j, row) ->
                j < 4 ? Q4_KX16.headerAt(b) + 32L * (j / 2) + 2L * row + j % 2 // d, then dmin
                        : j < 16 ? Q4_KX16.headerAt(b) + 64 + 16L * (j - 4) + row // the 12 scale bytes
                        : Q4_KX16.nibblesAt(b, blocks) + Q4_0X16.pairByte(j - 16, row)); // the nibbles
    }

    /**
     * Copies the q6_K matrix {@code [rows, cols]} at {@code src} to {@code dst} in the
     * {@link TensorType#Q6_K_X16} layout: the same bytes, each group of 16 rows interleaved
     * superblock by superblock, the last {@code rows % 16} rows as they are. A load-time step.
     *
     * @throws IllegalArgumentException if {@code rows} or {@code cols} is negative, {@code cols} is
     *     not a multiple of 256, or either segment is too small
     */
    default void interleaveQ6_K(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int rows,
            int cols) {
        ArgumentChecks.interleaveQ6_K(src, srcOffset, dst, dstOffset, rows, cols);
        Interleaving.groups(TensorType.Q6_K, src, srcOffset, dst, dstOffset, rows, cols, (b, blocks, j, row) ->
                b * Q6_KX16.GROUP_BLOCK_BYTES + Q6_KX16.byteAt(j, row));
    }

    /**
     * Copies the q5_0 matrix {@code [rows, cols]} at {@code src} to {@code dst} in the
     * {@link TensorType#Q5_0_X16} layout: the same bytes, each group of 16 rows interleaved block by
     * block (the 16 scales, the 16 rows' fifth bits, then two nibble bytes of each row side by
     * side), the last {@code rows % 16} rows as they are. A load-time step.
     *
     * @throws IllegalArgumentException if {@code rows} or {@code cols} is negative, {@code cols} is
     *     not a multiple of 32, or either segment is too small
     */
    default void interleaveQ5_0(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int rows,
            int cols) {
        ArgumentChecks.interleave("interleaveQ5_0", TensorType.Q5_0, src, srcOffset, dst, dstOffset, rows, cols);
        Interleaving.groups(TensorType.Q5_0, src, srcOffset, dst, dstOffset, rows, cols, (b, blocks, j, row) ->
                b * SmallBlocksX16.groupBlockBytes(TensorType.Q5_0) + SmallBlocksX16.byteAt(TensorType.Q5_0, j, row));
    }

    /**
     * Copies the q5_K matrix {@code [rows, cols]} at {@code src} to {@code dst} in the
     * {@link TensorType#Q5_K_X16} layout: the same bytes, each group of 16 rows interleaved
     * superblock by superblock, the last {@code rows % 16} rows as they are. A load-time step.
     *
     * @throws IllegalArgumentException if {@code rows} or {@code cols} is negative, {@code cols} is
     *     not a multiple of 256, or either segment is too small
     */
    default void interleaveQ5_K(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int rows,
            int cols) {
        ArgumentChecks.interleave("interleaveQ5_K", TensorType.Q5_K, src, srcOffset, dst, dstOffset, rows, cols);
        Interleaving.groups(TensorType.Q5_K, src, srcOffset, dst, dstOffset, rows, cols, (b, blocks, j, row) ->
                b * Q5_KX16.GROUP_BLOCK_BYTES + Q5_KX16.byteAt(j, row));
    }
}
