package dev.tandem.kernels.scalar;

import dev.tandem.kernels.AttentionOps;
import dev.tandem.kernels.Q8_0;
import dev.tandem.kernels.TensorType;
import java.lang.foreign.MemorySegment;

/**
 * The argument checks of every kernel, shared by the vector and the scalar implementation so that
 * both reject the same calls with the same message.
 *
 * <p>Messages read {@code "<kernel>: <argument> = <value> <what is wrong> <limit>"}. They are built
 * only when a check fails: a passing check allocates nothing.
 */
public final class ArgumentChecks {

    private ArgumentChecks() {}

    /** The failure of a matmul asked for a {@code type} it has no kernel for: null, or not interleaved. */
    public static IllegalArgumentException notInterleaved(TensorType type) {
        if (type == null) {
            return new IllegalArgumentException("matmul: type is null");
        }
        if (type.interleaved() != null) {
            return new IllegalArgumentException("matmul: type = " + type + " runs in its interleaved layout only, "
                    + type.interleaved() + " (QuantOps.interleave makes it)");
        }
        return new IllegalArgumentException("matmul: type = " + type + " has no matmul");
    }

    /**
     * The checks of a matmul over weights in the interleaved layout {@code type}, named
     * {@code matmulQ4_0_X16} etc. in the messages.
     */
    public static void matmulBlocks(
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
        String kernel = switch (type) { // constants: a passing check allocates nothing
            case Q4_0_X16 -> "matmulQ4_0_X16";
            case Q4_K_X16 -> "matmulQ4_K_X16";
            case Q8_0_X16 -> "matmulQ8_0_X16";
            case Q6_K_X16 -> "matmulQ6_K_X16";
            case Q5_0_X16 -> "matmulQ5_0_X16";
            case Q5_K_X16 -> "matmulQ5_K_X16";
            case Q4_1_X16 -> "matmulQ4_1_X16";
            case IQ4_NL_X16 -> "matmulIQ4_NL_X16";
            case Q2_K_X16 -> "matmulQ2_K_X16";
            case Q3_K_X16 -> "matmulQ3_K_X16";
            case IQ4_XS_X16 -> "matmulIQ4_XS_X16";
            case Q5_1_X16 -> "matmulQ5_1_X16";
            case F32_X16 -> "matmulF32_X16";
            case F16_X16 -> "matmulF16_X16";
            case BF16_X16 -> "matmulBF16_X16";
            default -> throw new IllegalArgumentException("matmulBlocks: " + type + " has no block matmul");
        };
        matmulShape(kernel, rows, cols, batch, rowStart, rowEnd);
        multipleOfBlock(kernel, "cols", cols, type.blockSize(), type.ggmlName());
        long blocks = product(kernel, "rows * cols", rows, cols / type.blockSize());
        fits(kernel, "weights", weights, weightsOffset, product(kernel, "rows * cols bytes", blocks, type.blockBytes()));
        fits(kernel, "x", x, xOffset, f32Bytes(kernel, "batch * cols", batch, cols));
        fits(kernel, "out", out, outOffset, f32Bytes(kernel, "batch * rows", batch, rows));
    }

    public static void rmsnorm(
            MemorySegment x,
            long xOffset,
            MemorySegment weight,
            long weightOffset,
            MemorySegment out,
            long outOffset,
            int n,
            float eps) {
        String kernel = "rmsnorm";
        nonNegative(kernel, "n", n);
        if (!(eps >= 0f) || eps == Float.POSITIVE_INFINITY) {
            throw new IllegalArgumentException(kernel + ": eps = " + eps + " must be finite and >= 0");
        }
        fits(kernel, "x", x, xOffset, f32Bytes(kernel, "n", n, 1));
        fits(kernel, "weight", weight, weightOffset, f32Bytes(kernel, "n", n, 1));
        fits(kernel, "out", out, outOffset, f32Bytes(kernel, "n", n, 1));
    }

    public static void rope(MemorySegment x, long xOffset, int heads, int headDim, int position, float theta) {
        String kernel = "rope";
        nonNegative(kernel, "heads", heads);
        nonNegative(kernel, "headDim", headDim);
        if (headDim % 2 != 0) {
            throw new IllegalArgumentException(
                    kernel + ": headDim = " + headDim + " must be even (rope rotates pairs)");
        }
        nonNegative(kernel, "position", position);
        if (!(theta > 0f) || theta == Float.POSITIVE_INFINITY) {
            throw new IllegalArgumentException(kernel + ": theta = " + theta + " must be finite and > 0");
        }
        fits(kernel, "x", x, xOffset, f32Bytes(kernel, "heads * headDim", heads, headDim));
    }

    public static void siluMul(
            MemorySegment gate,
            long gateOffset,
            MemorySegment up,
            long upOffset,
            MemorySegment out,
            long outOffset,
            int n) {
        String kernel = "siluMul";
        nonNegative(kernel, "n", n);
        fits(kernel, "gate", gate, gateOffset, f32Bytes(kernel, "n", n, 1));
        fits(kernel, "up", up, upOffset, f32Bytes(kernel, "n", n, 1));
        fits(kernel, "out", out, outOffset, f32Bytes(kernel, "n", n, 1));
    }

    public static void residualAdd(MemorySegment acc, long accOffset, MemorySegment delta, long deltaOffset, int n) {
        String kernel = "residualAdd";
        nonNegative(kernel, "n", n);
        fits(kernel, "acc", acc, accOffset, f32Bytes(kernel, "n", n, 1));
        fits(kernel, "delta", delta, deltaOffset, f32Bytes(kernel, "n", n, 1));
    }

    public static void embedF32(
            MemorySegment table, long tableOffset, MemorySegment out, long outOffset, int rows, int dim, int token) {
        String kernel = "embedF32";
        embedShape(kernel, rows, dim, token);
        fits(kernel, "table", table, tableOffset, f32Bytes(kernel, "rows * dim", rows, dim));
        fits(kernel, "out", out, outOffset, f32Bytes(kernel, "dim", dim, 1));
    }

    public static void embedQ8_0(
            MemorySegment table, long tableOffset, MemorySegment out, long outOffset, int rows, int dim, int token) {
        String kernel = "embedQ8_0";
        embedShape(kernel, rows, dim, token);
        multipleOfBlock(kernel, "dim", dim);
        fits(kernel, "table", table, tableOffset, q8Bytes(kernel, "rows * dim", rows, dim));
        fits(kernel, "out", out, outOffset, f32Bytes(kernel, "dim", dim, 1));
    }

    public static void embed(TensorType type, MemorySegment table, long tableOffset, MemorySegment out, long outOffset,
            int rows, int dim, int token) {
        String kernel = EMBED_NAMES[type.ordinal()]; // constants: a passing check allocates nothing
        embedShape(kernel, rows, dim, token);
        multipleOfBlock(kernel, "dim", dim, type.blockSize(), type.ggmlName());
        long blocks = product(kernel, "rows * dim", rows, dim / type.blockSize());
        fits(kernel, "table", table, tableOffset, product(kernel, "rows * dim bytes", blocks, type.blockBytes()));
        fits(kernel, "out", out, outOffset, f32Bytes(kernel, "dim", dim, 1));
    }

    public static void argmax(MemorySegment values, long offset, int n) {
        String kernel = "argmax";
        positive(kernel, "n", n);
        fits(kernel, "values", values, offset, f32Bytes(kernel, "n", n, 1));
    }

    public static void sample(
            MemorySegment logits,
            long logitsOffset,
            MemorySegment probs,
            long probsOffset,
            int n,
            float temperature,
            float topP) {
        String kernel = "sample";
        positive(kernel, "n", n);
        if (!(temperature >= 0f) || temperature == Float.POSITIVE_INFINITY) {
            throw new IllegalArgumentException(kernel + ": temperature = " + temperature + " must be finite and >= 0");
        }
        if (!(topP > 0f && topP <= 1f)) {
            throw new IllegalArgumentException(kernel + ": topP = " + topP + " is outside (0, 1]");
        }
        fits(kernel, "logits", logits, logitsOffset, f32Bytes(kernel, "n", n, 1));
        fits(kernel, "probs", probs, probsOffset, f32Bytes(kernel, "n", n, 1));
    }

    public static void qk(
            MemorySegment q,
            long qOffset,
            MemorySegment keys,
            long keysOffset,
            MemorySegment scores,
            long scoresOffset,
            int headDim,
            int rowStride,
            int validRows,
            float scale) {
        String kernel = "qk";
        blockShape(kernel, headDim, rowStride, "validRows", validRows);
        if (!Float.isFinite(scale)) {
            throw new IllegalArgumentException(kernel + ": scale = " + scale + " must be finite");
        }
        fits(kernel, "q", q, qOffset, f32Bytes(kernel, "headDim", headDim, 1));
        fits(kernel, "keys", keys, keysOffset, blockBytes(kernel, headDim, rowStride, validRows));
        fits(kernel, "scores", scores, scoresOffset, f32Bytes(kernel, "validRows", validRows, 1));
    }

    public static void softmaxPrepare(
            MemorySegment scores, long scoresOffset, MemorySegment blockStats, long blockStatsOffset, int n) {
        String kernel = "softmaxPrepare";
        nonNegative(kernel, "n", n);
        fits(kernel, "scores", scores, scoresOffset, f32Bytes(kernel, "n", n, 1));
        fits(kernel, "blockStats", blockStats, blockStatsOffset, AttentionOps.STATS_FLOATS * (long) Float.BYTES);
    }

    public static void pv(
            MemorySegment exps,
            long expsOffset,
            MemorySegment values,
            long valuesOffset,
            MemorySegment partial,
            long partialOffset,
            int headDim,
            int rowStride,
            int n) {
        String kernel = "pv";
        blockShape(kernel, headDim, rowStride, "n", n);
        fits(kernel, "exps", exps, expsOffset, f32Bytes(kernel, "n", n, 1));
        fits(kernel, "values", values, valuesOffset, blockBytes(kernel, headDim, rowStride, n));
        fits(kernel, "partial", partial, partialOffset, f32Bytes(kernel, "headDim", headDim, 1));
    }

    public static void widenF16(
            MemorySegment halves,
            long halvesOffset,
            int headDim,
            int rowStride,
            int rows,
            MemorySegment out,
            long outOffset) {
        String kernel = "widenF16";
        blockShape(kernel, headDim, rowStride, "rows", rows);
        fits(kernel, "halves", halves, halvesOffset, blockBytes(kernel, headDim, rowStride, rows, Short.BYTES));
        fits(kernel, "out", out, outOffset, f32Bytes(kernel, "rows * headDim", rows, headDim));
    }

    public static void onlineInit(
            MemorySegment runningStats,
            long runningStatsOffset,
            MemorySegment runningOut,
            long runningOutOffset,
            int headDim) {
        String kernel = "onlineInit";
        nonNegative(kernel, "headDim", headDim);
        fits(kernel, "runningStats", runningStats, runningStatsOffset, AttentionOps.STATS_FLOATS * (long) Float.BYTES);
        fits(kernel, "runningOut", runningOut, runningOutOffset, f32Bytes(kernel, "headDim", headDim, 1));
    }

    public static void onlineUpdate(
            MemorySegment runningStats,
            long runningStatsOffset,
            MemorySegment runningOut,
            long runningOutOffset,
            MemorySegment blockStats,
            long blockStatsOffset,
            MemorySegment partial,
            long partialOffset,
            int headDim) {
        String kernel = "onlineUpdate";
        nonNegative(kernel, "headDim", headDim);
        long statsBytes = AttentionOps.STATS_FLOATS * (long) Float.BYTES;
        fits(kernel, "runningStats", runningStats, runningStatsOffset, statsBytes);
        fits(kernel, "runningOut", runningOut, runningOutOffset, f32Bytes(kernel, "headDim", headDim, 1));
        fits(kernel, "blockStats", blockStats, blockStatsOffset, statsBytes);
        fits(kernel, "partial", partial, partialOffset, f32Bytes(kernel, "headDim", headDim, 1));
    }

    public static void normalize(
            MemorySegment runningStats,
            long runningStatsOffset,
            MemorySegment runningOut,
            long runningOutOffset,
            MemorySegment out,
            long outOffset,
            int headDim) {
        String kernel = "normalize";
        nonNegative(kernel, "headDim", headDim);
        fits(kernel, "runningStats", runningStats, runningStatsOffset, AttentionOps.STATS_FLOATS * (long) Float.BYTES);
        fits(kernel, "runningOut", runningOut, runningOutOffset, f32Bytes(kernel, "headDim", headDim, 1));
        fits(kernel, "out", out, outOffset, f32Bytes(kernel, "headDim", headDim, 1));
    }

    /** Data check of {@code normalize}: the running sum of a context with at least one key is >= 1. */
    public static void attendedSomething(float runningSum) {
        if (!(runningSum > 0f)) {
            throw new IllegalArgumentException("normalize: running sum = " + runningSum
                    + " must be > 0; no key was attended (an empty context has no attention output)");
        }
    }

    public static void quantizeQ8_0(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int count) {
        String kernel = "Q8_0.quantize";
        nonNegative(kernel, "count", count);
        multipleOfBlock(kernel, "count", count);
        fits(kernel, "src", src, srcOffset, f32Bytes(kernel, "count", count, 1));
        fits(kernel, "dst", dst, dstOffset, q8Bytes(kernel, "count", 1, count));
    }

    public static void dequantizeQ8_0(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int count) {
        String kernel = "Q8_0.dequantize";
        nonNegative(kernel, "count", count);
        multipleOfBlock(kernel, "count", count);
        fits(kernel, "src", src, srcOffset, q8Bytes(kernel, "count", 1, count));
        fits(kernel, "dst", dst, dstOffset, f32Bytes(kernel, "count", count, 1));
    }

    public static void interleaveQ4_0(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int rows,
            int cols) {
        interleave("interleaveQ4_0", TensorType.Q4_0, src, srcOffset, dst, dstOffset, rows, cols);
    }

    public static void interleaveF32(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int rows,
            int cols) {
        interleave("interleaveF32", TensorType.F32, src, srcOffset, dst, dstOffset, rows, cols);
    }

    public static void interleaveBF16(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int rows,
            int cols) {
        interleave("interleaveBF16", TensorType.BF16, src, srcOffset, dst, dstOffset, rows, cols);
    }

    public static void interleaveF16(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int rows,
            int cols) {
        interleave("interleaveF16", TensorType.F16, src, srcOffset, dst, dstOffset, rows, cols);
    }

    /** Refuses an f16 matrix {@code [rows, cols]} at {@code src} with an infinity or NaN, naming the first. */
    public static void finiteHalves(String kernel, MemorySegment src, long srcOffset, int rows, int cols) {
        long n = (long) rows * cols;
        for (long i = 0; i < n; i++) {
            short half = src.get(LittleEndian.F16, srcOffset + 2 * i);
            if ((half & 0x7c00) == 0x7c00) {
                throw new IllegalArgumentException(String.format("%s: row %d, column %d is %s (0x%04x); f16_x16 holds"
                        + " finite values only", kernel, i / cols, i % cols, (half & 0x3ff) == 0 ? "an infinity" : "NaN",
                        half & 0xffff));
            }
        }
    }

    public static void interleaveQ8_0(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int rows,
            int cols) {
        interleave("interleaveQ8_0", TensorType.Q8_0, src, srcOffset, dst, dstOffset, rows, cols);
    }

    public static void interleaveQ4_K(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int rows,
            int cols) {
        interleave("interleaveQ4_K", TensorType.Q4_K, src, srcOffset, dst, dstOffset, rows, cols);
    }

    public static void interleaveQ6_K(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int rows,
            int cols) {
        interleave("interleaveQ6_K", TensorType.Q6_K, src, srcOffset, dst, dstOffset, rows, cols);
    }

    public static void interleave(String kernel, TensorType type, MemorySegment src, long srcOffset,
            MemorySegment dst, long dstOffset, int rows, int cols) {
        nonNegative(kernel, "rows", rows);
        nonNegative(kernel, "cols", cols);
        multipleOfBlock(kernel, "cols", cols, type.blockSize(), type.ggmlName());
        long groupBytes = TensorType.X16_ROWS * type.rowBytes(cols);
        if (groupBytes > Interleaving.MAX_GROUP_BYTES) {
            throw new IllegalArgumentException(kernel + ": cols = " + cols + " makes a group of 16 rows " + groupBytes
                    + " bytes, more than the " + Interleaving.MAX_GROUP_BYTES + " an interleaved layout takes");
        }
        long bytes = product(kernel, "rows * cols bytes", rows, type.rowBytes(cols));
        fits(kernel, "src", src, srcOffset, bytes);
        fits(kernel, "dst", dst, dstOffset, bytes);
    }

    public static void dequantize(
            TensorType type, MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long elements) {
        String kernel = "dequantize";
        long srcBytes = typeBytes(kernel, type, elements);
        if (type.isInterleaved()) {
            throw new IllegalArgumentException(kernel + ": type = " + type + " interleaves whole groups of rows,"
                    + " which a run of values does not say; dequantize the matrix it was made from");
        }
        fits(kernel, "src", src, srcOffset, srcBytes);
        fits(kernel, "dst", dst, dstOffset, product(kernel, "elements * 4", elements, Float.BYTES));
    }

    public static void quantize(
            TensorType type, MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long elements) {
        String kernel = "quantize";
        long dstBytes = typeBytes(kernel, type, elements);
        if (type == TensorType.Q4_K || type == TensorType.Q5_K || type == TensorType.Q6_K || type == TensorType.IQ4_NL
                || type == TensorType.IQ4_XS || type == TensorType.Q2_K || type == TensorType.Q3_K || type.isInterleaved()) {
            throw new IllegalArgumentException(kernel + ": type = " + type
                    + " has no quantizer; tandem quantizes to F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1");
        }
        fits(kernel, "src", src, srcOffset, product(kernel, "elements * 4", elements, Float.BYTES));
        fits(kernel, "dst", dst, dstOffset, dstBytes);
    }

    /** Bytes of {@code elements} values of {@code type}, after checking both. */
    private static long typeBytes(String kernel, TensorType type, long elements) {
        if (type == null) {
            throw new IllegalArgumentException(kernel + ": type is null");
        }
        nonNegative(kernel, "elements", elements);
        multipleOfBlock(kernel, "elements", elements, type.blockSize(), type.name());
        return product(kernel, "blocks * block bytes", elements / type.blockSize(), type.blockBytes());
    }

    private static final String[] EMBED_NAMES = new String[TensorType.values().length];

    static {
        for (TensorType type : TensorType.values()) {
            EMBED_NAMES[type.ordinal()] = "embed " + type.ggmlName();
        }
    }

    // ---- building blocks ----

    private static void matmulShape(String kernel, int rows, int cols, int batch, int rowStart, int rowEnd) {
        nonNegative(kernel, "rows", rows);
        nonNegative(kernel, "cols", cols);
        nonNegative(kernel, "batch", batch);
        if (rowStart < 0 || rowStart > rows) {
            throw new IllegalArgumentException(
                    kernel + ": rowStart = " + rowStart + " is outside [0, rows = " + rows + "]");
        }
        if (rowEnd < rowStart || rowEnd > rows) {
            throw new IllegalArgumentException(
                    kernel + ": rowEnd = " + rowEnd + " is outside [rowStart = " + rowStart + ", rows = " + rows + "]");
        }
    }

    private static void embedShape(String kernel, int rows, int dim, int token) {
        nonNegative(kernel, "rows", rows);
        nonNegative(kernel, "dim", dim);
        if (token < 0 || token >= rows) {
            throw new IllegalArgumentException(kernel + ": token = " + token + " is outside [0, rows = " + rows + ")");
        }
    }

    private static void blockShape(String kernel, int headDim, int rowStride, String rowsName, int rowCount) {
        nonNegative(kernel, "headDim", headDim);
        nonNegative(kernel, rowsName, rowCount);
        if (rowStride < headDim) {
            throw new IllegalArgumentException(
                    kernel + ": rowStride = " + rowStride + " is less than headDim = " + headDim);
        }
    }

    /** Bytes of {@code rowCount} rows of {@code headDim} f32, {@code rowStride} floats apart. */
    private static long blockBytes(String kernel, int headDim, int rowStride, int rowCount) {
        return blockBytes(kernel, headDim, rowStride, rowCount, Float.BYTES);
    }

    /** Bytes of {@code rowCount} rows of {@code headDim} elements of {@code elementBytes}, {@code rowStride} elements apart. */
    private static long blockBytes(String kernel, int headDim, int rowStride, int rowCount, int elementBytes) {
        if (rowCount == 0) {
            return 0;
        }
        long elements = product(kernel, "rows * rowStride", rowCount - 1L, rowStride) + headDim;
        return product(kernel, "block bytes", elements, elementBytes);
    }

    public static void nonNegative(String kernel, String name, long value) {
        if (value < 0) {
            throw new IllegalArgumentException(kernel + ": " + name + " = " + value + " must be >= 0");
        }
    }

    public static void positive(String kernel, String name, long value) {
        if (value <= 0) {
            throw new IllegalArgumentException(kernel + ": " + name + " = " + value + " must be >= 1");
        }
    }

    private static void multipleOfBlock(String kernel, String name, int value) {
        multipleOfBlock(kernel, name, value, Q8_0.BLOCK_SIZE, "q8_0");
    }

    /** {@code value} a multiple of {@code blockSize}, the block size of the type {@code typeName}. */
    private static void multipleOfBlock(String kernel, String name, long value, int blockSize, String typeName) {
        if (value % blockSize != 0) {
            throw new IllegalArgumentException(kernel + ": " + name + " = " + value + " must be a multiple of the "
                    + typeName + " block size " + blockSize);
        }
    }

    /** The failure of a kernel that met a NaN at {@code index}. */
    public static IllegalArgumentException nanAt(String kernel, int index) {
        return new IllegalArgumentException(kernel + ": values[" + index + "] is NaN");
    }

    /** {@code sample}'s largest logit: finite, or there is no distribution to draw from. */
    public static void sampleMax(float max) {
        if (Float.isNaN(max) || max == Float.POSITIVE_INFINITY || max == Float.NEGATIVE_INFINITY) {
            throw new IllegalArgumentException("sample: largest logit = " + max
                    + " must be finite (no NaN, no +Infinity, not every logit -Infinity)");
        }
    }

    private static long f32Bytes(String kernel, String what, int a, int b) {
        return product(kernel, what, " bytes", product(kernel, what, "", a, b), Float.BYTES);
    }

    private static long q8Bytes(String kernel, String what, int rows, int cols) {
        long blocks = product(kernel, what, "", rows, cols / Q8_0.BLOCK_SIZE);
        return product(kernel, what, " bytes", blocks, Q8_0.BLOCK_BYTES);
    }

    private static long product(String kernel, String what, long a, long b) {
        return product(kernel, what, "", a, b);
    }

    /**
     * {@code a * b}, or an exception naming {@code what + suffix}: the name is put together only
     * when it is needed, since these checks run on every kernel call and a passing check must
     * allocate nothing.
     */
    private static long product(String kernel, String what, String suffix, long a, long b) {
        try {
            return Math.multiplyExact(a, b);
        } catch (ArithmeticException overflow) {
            throw new IllegalArgumentException(
                    kernel + ": " + what + suffix + " = " + a + " * " + b + " overflows a long");
        }
    }

    /** Checks that {@code segment} holds {@code bytes} bytes from {@code offset}. */
    public static void fits(String kernel, String name, MemorySegment segment, long offset, long bytes) {
        if (segment == null) {
            throw new IllegalArgumentException(kernel + ": " + name + " segment is null");
        }
        if (offset < 0) {
            throw new IllegalArgumentException(kernel + ": " + name + "Offset = " + offset + " must be >= 0");
        }
        long size = segment.byteSize();
        if (offset > size || bytes > size - offset) {
            throw new IllegalArgumentException(kernel + ": " + name + " segment of " + size + " bytes is too small: "
                    + bytes + " bytes needed at " + name + "Offset = " + offset);
        }
    }
}
