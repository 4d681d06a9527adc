package dev.tandem.kernels;

import static dev.tandem.kernels.scalar.LittleEndian.F16;
import static dev.tandem.kernels.scalar.LittleEndian.F32;
import static dev.tandem.kernels.scalar.LittleEndian.I8;

import dev.tandem.kernels.scalar.ArgumentChecks;
import dev.tandem.kernels.scalar.ScalarOps;
import java.lang.foreign.MemorySegment;

/**
 * llama.cpp's q8_0 weight format, and a quantizer to it.
 *
 * <p>Values are grouped in blocks of {@link #BLOCK_SIZE} = 32. A block is {@link #BLOCK_BYTES} = 34
 * bytes: the scale {@code d} as a little-endian IEEE 754 half, then 32 signed bytes {@code q[j]}.
 * Value {@code j} of the block is {@code q[j] * d}. A row of {@code cols} values (a multiple of 32)
 * is {@code cols / 32} consecutive blocks, {@link #rowBytes} bytes.
 */
public final class Q8_0 {

    /** Values per block. */
    public static final int BLOCK_SIZE = 32;

    /** Bytes per block: a 2-byte f16 scale and 32 int8 values. */
    public static final int BLOCK_BYTES = 2 + BLOCK_SIZE;

    /**
     * A quantize/dequantize round trip moves each value by at most this fraction of its block's
     * largest magnitude {@code amax}, when the block's scale {@code amax / 127} is a normal f16
     * ({@code 2^-14 <= amax / 127 <= 65504}): half a quantization step, {@code 0.5 / 127}, plus the
     * f16 rounding of the scale, {@code 127 * 2^-11 / 127}, plus f32 rounding.
     */
    public static final float ROUND_TRIP_RELATIVE_ERROR = 0.5f / 127f + 1f / 2048f + 1e-6f;

    private Q8_0() {}

    /** Bytes of one row of {@code cols} values; {@code cols} must be a multiple of 32. */
    public static long rowBytes(int cols) {
        if (cols < 0 || cols % BLOCK_SIZE != 0) {
            throw new IllegalArgumentException(
                    "Q8_0.rowBytes: cols = " + cols + " must be a non-negative multiple of " + BLOCK_SIZE);
        }
        return (long) (cols / BLOCK_SIZE) * BLOCK_BYTES;
    }

    /**
     * Quantizes {@code count} f32 values (a multiple of 32) to q8_0 with llama.cpp's rounding:
     * {@code d = amax / 127}, {@code q = round(x * (1 / d))} rounding half away from zero, and
     * {@code d} stored rounded to the nearest f16. An all-zero block gets {@code d = 0} and
     * {@code q = 0}. Values must be finite.
     */
    public static void quantize(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int count) {
        ArgumentChecks.quantizeQ8_0(src, srcOffset, dst, dstOffset, count);
        for (int block = 0; block < count / BLOCK_SIZE; block++) {
            ScalarOps.quantizeQ8_0Block(
                    src, srcOffset + (long) block * BLOCK_SIZE * Float.BYTES, dst, dstOffset + (long) block * BLOCK_BYTES);
        }
    }

    /** Dequantizes {@code count} q8_0 values (a multiple of 32) to f32: {@code q[j] * d}. */
    public static void dequantize(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int count) {
        ArgumentChecks.dequantizeQ8_0(src, srcOffset, dst, dstOffset, count);
        for (int block = 0; block < count / BLOCK_SIZE; block++) {
            long from = srcOffset + (long) block * BLOCK_BYTES;
            long to = dstOffset + (long) block * BLOCK_SIZE * Float.BYTES;
            float d = scale(src, from);
            for (int j = 0; j < BLOCK_SIZE; j++) {
                dst.set(F32, to + (long) j * Float.BYTES, src.get(I8, from + 2 + j) * d);
            }
        }
    }

    /** The f32 value of the f16 scale of the block at {@code blockOffset}. */
    static float scale(MemorySegment blocks, long blockOffset) {
        return Float.float16ToFloat(blocks.get(F16, blockOffset));
    }
}
