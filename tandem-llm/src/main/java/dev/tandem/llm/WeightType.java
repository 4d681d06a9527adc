package dev.tandem.llm;

import dev.tandem.kernels.Q8_0;

/** How the matrices of a model are stored. Norm weights are always f32. */
public enum WeightType {
    /** Little-endian f32, row-major. */
    F32,
    /** llama.cpp's q8_0: per 32 values, an f16 scale and 32 int8 ({@link Q8_0}); rows of a multiple of 32. */
    Q8_0;

    /** Bytes of a row-major {@code [rows, cols]} matrix. */
    public long bytes(long rows, int cols) {
        return rows * rowBytes(cols);
    }

    /** Bytes of one row of {@code cols} values. */
    public long rowBytes(int cols) {
        return this == F32 ? (long) cols * Float.BYTES : dev.tandem.kernels.Q8_0.rowBytes(cols);
    }
}
