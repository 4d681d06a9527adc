package dev.tandem.kernels;

import static dev.tandem.kernels.scalar.LittleEndian.F32;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The paged-attention pieces composed over a block table, against {@link #referenceAttention} on
 * the same keys and values laid out contiguously.
 */
class PagedAttentionTest {

    private static final double RTOL = 1e-3;
    private static final double ATOL = 1e-3;

    private static final int HEADS = 16;
    private static final int HEAD_DIM = 16;
    private static final int BLOCK_SIZE = 16;

    /** How one block of the cache is laid out. */
    enum Layout {
        /** {@code [heads][blocks, blockSize, headDim]}: rows of a head are {@code headDim} floats apart. */
        PER_HEAD,
        /** {@code [blocks, blockSize, heads, headDim]}: rows are {@code heads * headDim} floats apart. */
        HEADS_INTERLEAVED
    }

    static List<Arguments> cases() {
        List<Arguments> cases = new ArrayList<>();
        for (String ops : new String[] {"scalar", "vector"}) {
            for (Layout layout : Layout.values()) {
                cases.add(Arguments.of(ops, layout, new int[] {33}));
                cases.add(Arguments.of(ops, layout, new int[] {33, 64, 128, 15}));
            }
        }
        return cases;
    }

    @ParameterizedTest(name = "{0} {1} contexts {2}")
    @MethodSource("cases")
    void pagedPiecesComposeToFullAttention(String opsName, Layout layout, int[] contexts) {
        KernelOps ops = opsName.equals("scalar") ? Tensors.SCALAR : Tensors.VECTOR;
        try (Tensors t = new Tensors(contexts.length * 31L + layout.ordinal())) {
            int batch = contexts.length;
            // Block tables: each sequence's blocks, drawn in shuffled order from one pool.
            int[][] blockTables = new int[batch][];
            List<Integer> pool = new ArrayList<>();
            int blocksNeeded = 0;
            for (int context : contexts) {
                blocksNeeded += (context + BLOCK_SIZE - 1) / BLOCK_SIZE;
            }
            int totalBlocks = blocksNeeded + 3; // some blocks stay unused
            for (int block = 0; block < totalBlocks; block++) {
                pool.add(block);
            }
            Collections.shuffle(pool, t.random);
            int next = 0;
            for (int b = 0; b < batch; b++) {
                blockTables[b] = new int[(contexts[b] + BLOCK_SIZE - 1) / BLOCK_SIZE];
                for (int i = 0; i < blockTables[b].length; i++) {
                    blockTables[b][i] = pool.get(next++);
                }
            }

            long cacheFloats = (long) totalBlocks * BLOCK_SIZE * HEADS * HEAD_DIM;
            float[] keyCache = t.uniform((int) cacheFloats, -2f, 2f);
            float[] valueCache = t.uniform((int) cacheFloats, -2f, 2f);
            float[] queries = t.uniform(batch * HEADS * HEAD_DIM, -2f, 2f);
            MemorySegment keys = t.f32(keyCache);
            MemorySegment values = t.f32(valueCache);
            MemorySegment q = t.f32(queries);
            MemorySegment out = t.allocate((long) batch * HEADS * HEAD_DIM * Float.BYTES);
            MemorySegment scores = t.allocate(BLOCK_SIZE * Float.BYTES);
            MemorySegment blockStats = t.allocate(2 * Float.BYTES);
            MemorySegment partial = t.allocate(HEAD_DIM * Float.BYTES);
            MemorySegment running = t.allocate(2 * Float.BYTES);
            MemorySegment runningOut = t.allocate(HEAD_DIM * Float.BYTES);
            float scale = (float) (1 / Math.sqrt(HEAD_DIM));
            int rowStride = layout == Layout.PER_HEAD ? HEAD_DIM : HEADS * HEAD_DIM;

            for (int b = 0; b < batch; b++) {
                for (int h = 0; h < HEADS; h++) {
                    long qOffset = Tensors.PAD + (long) (b * HEADS + h) * HEAD_DIM * Float.BYTES;
                    ops.onlineInit(running, Tensors.PAD, runningOut, Tensors.PAD, HEAD_DIM);
                    for (int i = 0; i < blockTables[b].length; i++) {
                        int validRows = Math.min(BLOCK_SIZE, contexts[b] - i * BLOCK_SIZE);
                        long blockOffset =
                                Tensors.PAD + rowOffset(layout, blockTables[b][i], 0, h, totalBlocks) * Float.BYTES;
                        ops.qk(
                                q,
                                qOffset,
                                keys,
                                blockOffset,
                                scores,
                                Tensors.PAD,
                                HEAD_DIM,
                                rowStride,
                                validRows,
                                scale);
                        ops.softmaxPrepare(scores, Tensors.PAD, blockStats, Tensors.PAD, validRows);
                        ops.pv(
                                scores,
                                Tensors.PAD,
                                values,
                                blockOffset,
                                partial,
                                Tensors.PAD,
                                HEAD_DIM,
                                rowStride,
                                validRows);
                        ops.onlineUpdate(
                                running,
                                Tensors.PAD,
                                runningOut,
                                Tensors.PAD,
                                blockStats,
                                Tensors.PAD,
                                partial,
                                Tensors.PAD,
                                HEAD_DIM);
                    }
                    ops.normalize(running, Tensors.PAD, runningOut, Tensors.PAD, out, qOffset, HEAD_DIM);
                }
            }

            for (int b = 0; b < batch; b++) {
                for (int h = 0; h < HEADS; h++) {
                    // The context of (b, h) laid out contiguously, independent of paging.
                    float[][] k = new float[contexts[b]][HEAD_DIM];
                    float[][] v = new float[contexts[b]][HEAD_DIM];
                    for (int position = 0; position < contexts[b]; position++) {
                        int block = blockTables[b][position / BLOCK_SIZE];
                        long row = rowOffset(layout, block, position % BLOCK_SIZE, h, totalBlocks);
                        for (int c = 0; c < HEAD_DIM; c++) {
                            k[position][c] = keyCache[(int) row + c];
                            v[position][c] = valueCache[(int) row + c];
                        }
                    }
                    float[] query = java.util.Arrays.copyOfRange(
                            queries, (b * HEADS + h) * HEAD_DIM, (b * HEADS + h + 1) * HEAD_DIM);
                    double[] expected = referenceAttention(query, k, v, scale);
                    for (int c = 0; c < HEAD_DIM; c++) {
                        float actual =
                                out.get(F32, Tensors.PAD + ((long) (b * HEADS + h) * HEAD_DIM + c) * Float.BYTES);
                        double error = Math.abs(actual - expected[c]);
                        if (!(error <= ATOL + RTOL * Math.abs(expected[c]))) {
                            throw new AssertionError(ops.name() + " paged attention, " + layout + ", sequence " + b
                                    + " (context " + contexts[b] + ") head " + h + " out[" + c + "] = " + actual
                                    + " but reference " + expected[c] + ": error " + error + " exceeds atol " + ATOL
                                    + " + rtol " + RTOL + " * |reference|");
                        }
                    }
                }
            }
        }
    }

    /** The float index of row {@code row} of head {@code head} in block {@code block}. */
    private static long rowOffset(Layout layout, int block, int row, int head, int totalBlocks) {
        return switch (layout) {
            case PER_HEAD -> (((long) head * totalBlocks + block) * BLOCK_SIZE + row) * HEAD_DIM;
            case HEADS_INTERLEAVED -> (((long) block * BLOCK_SIZE + row) * HEADS + head) * HEAD_DIM;
        };
    }

    /** Single-head attention over a whole context, in double: {@code softmax(scale * q K^T) V}. */
    static double[] referenceAttention(float[] q, float[][] k, float[][] v, float scale) {
        int context = k.length;
        double[] scores = new double[context];
        double max = Double.NEGATIVE_INFINITY;
        for (int position = 0; position < context; position++) {
            double dot = 0;
            for (int c = 0; c < q.length; c++) {
                dot += (double) q[c] * k[position][c];
            }
            scores[position] = scale * dot;
            max = Math.max(max, scores[position]);
        }
        double sum = 0;
        for (int position = 0; position < context; position++) {
            scores[position] = Math.exp(scores[position] - max);
            sum += scores[position];
        }
        double[] out = new double[q.length];
        for (int position = 0; position < context; position++) {
            for (int c = 0; c < q.length; c++) {
                out[c] += scores[position] / sum * v[position][c];
            }
        }
        return out;
    }
}
