package dev.tandem.llm.model;

import dev.tandem.kernels.TensorType;

/** How the matrices of a model are stored. Norm weights are always f32. */
public enum WeightType {
    /** Little-endian f32, row-major. */
    F32(TensorType.F32),
    /** IEEE half precision, row-major; the matmul widens each weight in its loop. */
    F16(TensorType.F16),
    /** bfloat16 (the upper half of an f32), row-major; the matmul widens each weight in its loop. */
    BF16(TensorType.BF16),
    /** llama.cpp's q8_0: per 32 values, an f16 scale and 32 int8; rows of a multiple of 32. */
    Q8_0(TensorType.Q8_0),
    /** llama.cpp's q4_0: per 32 values, an f16 scale and 16 bytes of nibbles; rows of a multiple of 32. */
    Q4_0(TensorType.Q4_0),
    /** llama.cpp's q4_1: per 32 values, f16 {@code d} and {@code m} and 16 bytes of nibbles, {@code q * d + m}. */
    Q4_1(TensorType.Q4_1),
    /** llama.cpp's q5_1: q4_1 with 32 fifth bits per block, as in q5_0. */
    Q5_1(TensorType.Q5_1),
    /**
     * llama.cpp's q5_0: per 32 values, an f16 scale, 32 fifth bits and 16 bytes of nibbles; rows of a
     * multiple of 32. What llama.cpp's Q4_K_M files fall back to for rows not a multiple of 256.
     */
    Q5_0(TensorType.Q5_0),
    /** llama.cpp's q2_K: per 256 values, 2-bit quants with a 4-bit scale and min per 16, f16 {@code d} and {@code dmin}. */
    Q2_K(TensorType.Q2_K),
    /** llama.cpp's q3_K: per 256 values, 3-bit quants (2 bits and a mask bit) with a 6-bit scale per 16, f16 {@code d}. */
    Q3_K(TensorType.Q3_K),
    /**
     * llama.cpp's q4_K: per 256 values, f16 {@code d} and {@code dmin}, eight 6-bit scales and mins
     * and 128 bytes of nibbles; rows of a multiple of 256.
     */
    Q4_K(TensorType.Q4_K),
    /**
     * llama.cpp's q5_K: q4_K's header (f16 {@code d} and {@code dmin}, eight 6-bit scales and mins),
     * 32 bytes of fifth bits and 128 bytes of nibbles per 256 values; rows of a multiple of 256.
     */
    Q5_K(TensorType.Q5_K),
    /** llama.cpp's iq4_nl: q4_0's blocks, each nibble an index into a fixed non-linear table of 16 values. */
    IQ4_NL(TensorType.IQ4_NL),
    /**
     * llama.cpp's iq4_xs: per 256 values an f16 {@code d}, eight 6-bit sub-block scales and 128
     * bytes of iq4_nl's nibbles; rows of a multiple of 256.
     */
    IQ4_XS(TensorType.IQ4_XS),
    /**
     * llama.cpp's q6_K: per 256 values, 6-bit quants (low nibbles and bit pairs apart), sixteen
     * int8 scales and an f16 {@code d}; rows of a multiple of 256.
     */
    Q6_K(TensorType.Q6_K);

    private final TensorType tensorType;

    WeightType(TensorType tensorType) {
        this.tensorType = tensorType;
    }

    /** The kernels' name of this layout, which {@link dev.tandem.kernels.MatmulOps#matmul} dispatches on. */
    public TensorType tensorType() {
        return tensorType;
    }

    /** Values per block: 1 (the float types), 32 or 256; every matrix width must be a multiple of it. */
    public int blockSize() {
        return tensorType.blockSize();
    }

    /** Bytes of a row-major {@code [rows, cols]} matrix. */
    public long bytes(long rows, int cols) {
        return rows * rowBytes(cols);
    }

    /** Bytes of one row of {@code cols} values. */
    public long rowBytes(int cols) {
        return tensorType.rowBytes(cols);
    }
}
