package dev.tandem.kernels;

import java.lang.foreign.MemorySegment;

/**
 * The pieces of paged attention for one query head, one KV block at a time.
 *
 * <h2>Implementation Overview</h2>
 *
 * <p>A paged KV cache holds keys and values in fixed-size blocks; a sequence's block table lists
 * the blocks of its context in order, the last one holding {@code contextLength % blockSize} valid
 * rows (or a full block). For one query head the caller runs, per block:
 *
 * <pre>
 *   qk(q, keysOfBlock, scores, validRows, scale)   scores[j] = scale * (q . k_j)
 *   softmaxPrepare(scores, blockStats, validRows)  blockStats = (m, s): m = max_j scores[j],
 *                                                  scores[j] = exp(scores[j] - m), s = sum_j scores[j]
 *   pv(scores, valuesOfBlock, partial, validRows)  partial = sum_j scores[j] * v_j
 *   onlineUpdate(running, runningOut, blockStats, partial)
 * </pre>
 *
 * <p>after {@link #onlineInit} and before {@link #normalize}. The running state is
 * {@code runningStats = (M, S)} and {@code runningOut[headDim]}; the invariant after each update is
 * that, over the keys seen so far, {@code M} is the largest score, {@code S = sum exp(score - M)}
 * and {@code runningOut = sum exp(score - M) * v}. {@code onlineUpdate} keeps it with the standard
 * flash-attention rescaling: {@code M' = max(M, m)}, {@code S' = S e^(M-M') + s e^(m-M')},
 * {@code runningOut' = runningOut e^(M-M') + partial e^(m-M')}. The output is
 * {@code runningOut / S}, the softmax-weighted sum of the values, whatever the block order.
 *
 * <p>Stats segments hold {@link #STATS_FLOATS} f32: the max, then the sum. Rows of a block are
 * {@code rowStride} floats apart ({@code headDim} for a per-head cache {@code [blocks, blockSize,
 * headDim]}, {@code heads * headDim} for {@code [blocks, blockSize, heads, headDim]}); the caller
 * offsets to its block and head.
 *
 * <p>A cache may hold its keys and values as f16, as llama.cpp's does by default: half the bytes
 * to keep and to read. {@link #widenF16} widens a block's rows of one KV head exactly
 * ({@link Float#float16ToFloat}) into contiguous f32 rows, and {@link #qk} and {@link #pv} run on
 * them, so an f16 cache gives the bits an f32 cache of the same (rounded) values gives; the rows
 * of one KV head are widened once for every query head that reads them.
 */
public interface AttentionOps {

    /** Floats in a stats segment: the max, then the sum of exponentials. */
    int STATS_FLOATS = 2;

    /**
     * Vector and scalar {@code qk} agree within this fraction of {@code |scale| * sum_c |q[c] k_j[c]|}
     * for {@code headDim <= 4096}.
     */
    float QK_RELATIVE_TOLERANCE = 1e-5f;

    /**
     * Vector and scalar {@code softmaxPrepare} agree on the max exactly and on each exponential (all
     * in {@code [0, 1]}) within this absolute tolerance; the sum within {@code n} times it.
     */
    float SOFTMAX_ABSOLUTE_TOLERANCE = 1e-6f;

    /**
     * Vector and scalar {@code pv} agree within this fraction of {@code sum_j exps[j] |v_j[c]|} for
     * {@code n <= 4096}.
     */
    float PV_RELATIVE_TOLERANCE = 1e-5f;

    /**
     * Vector and scalar {@code onlineInit}, {@code onlineUpdate} and {@code normalize} agree bit for
     * bit: the exponentials are scalar {@link Math#exp} in both, and the vector rescaling rounds the
     * same products and sums as the scalar one.
     */
    float ONLINE_TOLERANCE = 0f;

    /**
     * {@code scores[j] = scale * (q . k_j)} for the {@code validRows} rows {@code k_j} of one key
     * block.
     */
    void qk(
            MemorySegment q,
            long qOffset,
            MemorySegment keys,
            long keysOffset,
            MemorySegment scores,
            long scoresOffset,
            int headDim,
            int rowStride,
            int validRows,
            float scale);

    /**
     * Replaces {@code n} scores by {@code exp(score - m)} and writes {@code (m, sum)} to
     * {@code blockStats}, where {@code m} is the largest score. With {@code n == 0}, or with every
     * score {@code -Infinity} (all masked), it writes {@code (-Infinity, 0)} and exponentials of 0.
     */
    void softmaxPrepare(
            MemorySegment scores, long scoresOffset, MemorySegment blockStats, long blockStatsOffset, int n);

    /** {@code partial[c] = sum_j exps[j] * v_j[c]} over the {@code n} rows {@code v_j} of one value block. */
    void pv(
            MemorySegment exps,
            long expsOffset,
            MemorySegment values,
            long valuesOffset,
            MemorySegment partial,
            long partialOffset,
            int headDim,
            int rowStride,
            int n);

    /**
     * Widens {@code rows} rows of {@code headDim} f16 (IEEE binary16, little-endian), each
     * {@link Float#float16ToFloat} exactly, from byte {@code halvesOffset} of {@code halves}, where
     * rows are {@code rowStride} elements (two bytes each) apart, into {@code rows} contiguous rows
     * of {@code headDim} f32 from byte {@code outOffset} of {@code out}: a block's keys or values of
     * one KV head, for {@link #qk} and {@link #pv} with a row stride of {@code headDim}. A NaN stays
     * a NaN (its quiet bit as the implementation's conversion leaves it).
     */
    void widenF16(
            MemorySegment halves,
            long halvesOffset,
            int headDim,
            int rowStride,
            int rows,
            MemorySegment out,
            long outOffset);

    /** Sets the running state to no keys seen: {@code (M, S) = (-Infinity, 0)}, {@code runningOut = 0}. */
    void onlineInit(
            MemorySegment runningStats,
            long runningStatsOffset,
            MemorySegment runningOut,
            long runningOutOffset,
            int headDim);

    /**
     * Folds one block's {@code (m, s)} and {@code partial} into the running state. A block with no
     * attended key ({@code m == -Infinity}) leaves it unchanged.
     */
    void onlineUpdate(
            MemorySegment runningStats,
            long runningStatsOffset,
            MemorySegment runningOut,
            long runningOutOffset,
            MemorySegment blockStats,
            long blockStatsOffset,
            MemorySegment partial,
            long partialOffset,
            int headDim);

    /**
     * {@code out[c] = runningOut[c] * (1 / S)}; {@code out} may be {@code runningOut}.
     *
     * @throws IllegalArgumentException also if {@code S} is not positive (no key was attended)
     */
    void normalize(
            MemorySegment runningStats,
            long runningStatsOffset,
            MemorySegment runningOut,
            long runningOutOffset,
            MemorySegment out,
            long outOffset,
            int headDim);
}
