package dev.tandem.kernels;

import dev.tandem.kernels.scalar.ArgumentChecks;
import java.lang.foreign.MemorySegment;

/**
 * Every kernel of this module. {@link Ops#preferred()} returns the vector kernels when the JVM can
 * run them, {@link Ops#scalar()} the scalar ones.
 */
public interface KernelOps
        extends MatmulOps, NormOps, RopeOps, ElementwiseOps, EmbeddingOps, AttentionOps, SamplingOps,
                QuantOps {

    /** {@code "vector"} or {@code "scalar"}, followed by a detail such as the vector width. */
    String name();

    /**
     * Embedding lookup in a table of any {@link TensorType}: {@link #embedF32} and
     * {@link #embedQ8_0} for theirs, else the row dequantized by {@link #dequantize}; {@code dim}
     * must be a multiple of the type's block size.
     */
    default void embed(TensorType type, MemorySegment table, long tableOffset,
            MemorySegment out, long outOffset, int rows, int dim, int token) {
        switch (type) {
            case F32 -> embedF32(table, tableOffset, out, outOffset, rows, dim, token);
            case Q8_0 -> embedQ8_0(table, tableOffset, out, outOffset, rows, dim, token);
            default -> {
                ArgumentChecks.embed(type, table, tableOffset, out, outOffset, rows, dim, token);
                dequantize(type, table, tableOffset + token * type.rowBytes(dim), out, outOffset, dim);
            }
        }
    }
}
