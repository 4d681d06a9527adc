package dev.tandem.kernels;

import java.lang.foreign.MemorySegment;

/** Embedding lookup: copies row {@code token} of a {@code [rows, dim]} table to {@code out}. */
public interface EmbeddingOps {

    /**
     * Vector and scalar embedding lookups agree bit for bit: an f32 row is copied, and a q8_0 value
     * is one exact int8-to-f32 conversion times its block scale.
     */
    float EMBEDDING_TOLERANCE = 0f;

    /** Lookup in an f32 table. */
    void embedF32(
            MemorySegment table, long tableOffset, MemorySegment out, long outOffset, int rows, int dim, int token);

    /** Lookup in a {@link Q8_0} table, dequantized to f32; {@code dim} must be a multiple of 32. */
    void embedQ8_0(
            MemorySegment table, long tableOffset, MemorySegment out, long outOffset, int rows, int dim, int token);

}
