package dev.tandem.llm;

import static dev.tandem.Access.read;
import static dev.tandem.Access.readWrite;
import static dev.tandem.Access.write;

import dev.tandem.Access;
import dev.tandem.Buffer;
import dev.tandem.Kernel;
import dev.tandem.Orchestrator;
import dev.tandem.Region;
import dev.tandem.kernels.AttentionOps;
import dev.tandem.kernels.KernelOps;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.LongFunction;

/**
 * Builds the tasks of batched paged attention: every row of a batch attends, head by head, to
 * the keys and values of its own context, which live in fixed-size blocks of a paged cache.
 * Both programs of this module use it: {@link PagedAttentionWorkload} on its own, and
 * {@link LlamaModel} as its attention.
 *
 * <h2>Implementation Overview</h2>
 *
 * <p>Shapes: the query is {@code [rows, heads, headDim]}; a cache is {@code [blocks, blockSize,
 * kvHeads, headDim]} (so a cache row is {@code rowStride = kvHeads * headDim} floats); head
 * {@code h} reads KV head {@code h / (heads / kvHeads)}. Row {@code r} attends to the first
 * {@code context[r]} positions of its block table: position {@code p} is row
 * {@code p % blockSize} of block {@code table[r][p / blockSize]}. The output is
 * {@code [rows, heads, headDim]}.
 *
 * <p>A row's context is cut into <em>partitions</em> of whole KV blocks, at least
 * {@link #PARTITION_POSITIONS} positions each and at most {@code slabs} of them (a function of
 * the row's context alone, so a row computes the same whatever its batch). Tasks, per q-tile (at
 * most {@link #MAX_TILE_HEADS} heads), per chunk of at most {@link #MAX_CHUNK_ROWS} rows:
 *
 * <pre>
 *   attention(p), per partition p           for each row with a partition p, over its blocks:
 *                                           running (M, S, out) of partition p := nothing seen;
 *                                           per block: qk, softmax, pv, online update
 *   attention_combine (if any row has       out := partitions 1.. merged into partition 0, / S
 *     more than one partition)
 * </pre>
 *
 * <p>A chunk whose rows all have one partition (every context up to
 * {@code PARTITION_POSITIONS}, which covers most decode steps) is one task per q-tile, which
 * normalizes into the output itself. A decode row costs a handful of tasks however long its
 * context: the host builds few, and each does enough work to pay for its scheduling.
 *
 * <p>Each task declares exactly what it touches in request memory, row by row: its rows of the
 * scratch slab of its partition (scores, block stats and partial of the block in hand, the
 * partition's running state; a task whose rows have one partition each keeps those in its
 * core's own scratch instead, {@link #local}, as no other task reads them), its rows of the query,
 * the positions the row attends to in each run of KV blocks
 * adjacent in the cache (one region per run, so a sequence whose blocks are in order costs one
 * read region however long its context; all KV heads of them: a tile of fewer heads reads only its share, strided, which no region can
 * describe; nothing writes those positions while attention reads them, so the wider read costs
 * no parallelism), and its rows of the output. The partitions of one tile and chunk are
 * independent; the combine waits for all of them. The reads of the query and of the KV blocks
 * wait for whoever wrote them last (the program's previous tasks); the scratch and output
 * writes wait for the readers of their previous contents (the layer before).
 */
final class PagedAttention {

    /** Heads of one q-tile, at most. */
    static final int MAX_TILE_HEADS = 128;

    /** Rows of one chunk, at most. */
    static final int MAX_CHUNK_ROWS = 16;

    /** Scratch slabs: partitions of one row's context, at most (each its own task). */
    static final int DEFAULT_SLABS = 8;

    /** Positions a partition task covers, at least (fewer only when the context is shorter). */
    static final int PARTITION_POSITIONS = 256;

    private static final long F = Float.BYTES;
    private static final java.lang.foreign.ValueLayout.OfFloat F32 = java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED
            .withOrder(java.nio.ByteOrder.LITTLE_ENDIAN);
    private static final int STATS = AttentionOps.STATS_FLOATS;

    final int heads;
    final int kvHeads;
    final int headDim;
    final int blockSize;
    final int tileHeads;
    final int chunkRows;
    final int slabs;
    private final float scale;
    private final float softcap;
    private final Kernel partition;
    private final Kernel combine;

    /**
     * @param tileHeads heads per q-tile, in {@code [1, MAX_TILE_HEADS]}
     * @param chunkRows rows per chunk, in {@code [1, MAX_CHUNK_ROWS]}
     * @param slabs     partitions of one row, at most, at least 1
     */
    PagedAttention(
            KernelOps ops, int heads, int kvHeads, int headDim, int blockSize, int tileHeads, int chunkRows,
            int slabs) {
        this(ops, heads, kvHeads, headDim, blockSize, tileHeads, chunkRows, slabs, (float) (1.0 / Math.sqrt(headDim)),
                0f);
    }

    /**
     * @param scale   the factor of the query-key products
     * @param softcap scores become {@code softcap * tanh(score / softcap)} after scaling; 0 for none
     */
    PagedAttention(
            KernelOps ops, int heads, int kvHeads, int headDim, int blockSize, int tileHeads, int chunkRows,
            int slabs, float scale, float softcap) {
        if (heads < 1 || kvHeads < 1 || heads % kvHeads != 0 || headDim < 1 || blockSize < 1) {
            throw new IllegalArgumentException("paged attention: heads = " + heads + ", kvHeads = " + kvHeads
                    + ", headDim = " + headDim + ", blockSize = " + blockSize
                    + ": all must be >= 1 and kvHeads must divide heads");
        }
        if (tileHeads < 1 || tileHeads > MAX_TILE_HEADS || chunkRows < 1 || chunkRows > MAX_CHUNK_ROWS || slabs < 1) {
            throw new IllegalArgumentException("paged attention: tileHeads = " + tileHeads + " must be in [1, "
                    + MAX_TILE_HEADS + "], chunkRows = " + chunkRows + " in [1, " + MAX_CHUNK_ROWS + "], slabs = "
                    + slabs + " >= 1");
        }
        this.heads = heads;
        this.kvHeads = kvHeads;
        this.headDim = headDim;
        this.blockSize = blockSize;
        this.tileHeads = Math.min(tileHeads, heads);
        this.chunkRows = chunkRows;
        this.slabs = slabs;
        this.scale = scale;
        this.softcap = softcap;
        int group = heads / kvHeads;
        int rowStride = kvHeads * headDim;
        long headBytes = headDim * F;
        long scoreBytes = blockSize * F;
        long statBytes = STATS * F;

        // Scalars of both kernels: [0] heads of the tile, [1] first head of the tile, [2] for a
        // partition task whether it also normalizes (its chunk has one partition), then one scalar
        // per row (its blocks in this partition; for the combine, its partitions), in region order.
        this.partition = Kernel.of("attention", c -> {
            int tile = (int) c.scalar(0);
            int h0 = (int) c.scalar(1);
            boolean last = c.scalar(2) != 0;
            // One partition: the running state stays in this core's own scratch (nothing else reads it).
            MemorySegment[] own = last ? local.get() : null;
            int cells = last ? 0 : 5;
            int at = 0;
            for (int i = 0; 3 + i < c.scalarCount(); i++) {
                int runs = (int) c.scalar(3 + i);
                MemorySegment scores = last ? own[0] : c.region(at);
                MemorySegment blockStats = last ? own[1] : c.region(at + 1);
                MemorySegment partial = last ? own[2] : c.region(at + 2);
                MemorySegment runningStats = last ? own[3] : c.region(at + 3);
                MemorySegment runningOut = last ? own[4] : c.region(at + 4);
                MemorySegment q = c.region(at + cells);
                int keysAt = at + cells + 1;
                int valuesAt = keysAt + runs;
                for (int hl = 0; hl < tile; hl++) {
                    ops.onlineInit(runningStats, hl * statBytes, runningOut, hl * headBytes, headDim);
                }
                for (int j = 0; j < runs; j++) {
                    // A run of whole blocks, adjacent in the cache; its last block may be partly valid.
                    MemorySegment keys = c.region(keysAt + j);
                    MemorySegment values = c.region(valuesAt + j);
                    int positions = (int) (keys.byteSize() / (rowStride * F));
                    for (int p0 = 0; p0 < positions; p0 += blockSize) {
                        int valid = Math.min(blockSize, positions - p0);
                        long blockAt = p0 * (long) rowStride * F;
                        for (int hl = 0; hl < tile; hl++) {
                            long kvAt = blockAt + (h0 + hl) / group * headBytes;
                            ops.qk(q, hl * headBytes, keys, kvAt, scores, hl * scoreBytes, headDim, rowStride, valid,
                                    scale);
                            if (softcap > 0) {
                                capScores(scores, hl * scoreBytes, valid);
                            }
                            ops.softmaxPrepare(scores, hl * scoreBytes, blockStats, hl * statBytes, valid);
                            ops.pv(scores, hl * scoreBytes, values, kvAt, partial, hl * headBytes, headDim, rowStride,
                                    valid);
                            ops.onlineUpdate(runningStats, hl * statBytes, runningOut, hl * headBytes, blockStats,
                                    hl * statBytes, partial, hl * headBytes, headDim);
                        }
                    }
                }
                at = valuesAt + runs;
                if (last) {
                    MemorySegment out = c.region(at++);
                    for (int hl = 0; hl < tile; hl++) {
                        ops.normalize(runningStats, hl * statBytes, runningOut, hl * headBytes, out, hl * headBytes,
                                headDim);
                    }
                }
            }
        });
        this.combine = Kernel.of("attention_combine", c -> {
            int tile = (int) c.scalar(0);
            int at = 0;
            for (int i = 0; 3 + i < c.scalarCount(); i++) {
                int parts = (int) c.scalar(3 + i);
                MemorySegment stats = c.region(at);
                MemorySegment running = c.region(at + 1);
                for (int p = 1; p < parts; p++) {
                    MemorySegment partStats = c.region(at + 2 * p);
                    MemorySegment partOut = c.region(at + 2 * p + 1);
                    for (int hl = 0; hl < tile; hl++) {
                        ops.onlineUpdate(stats, hl * statBytes, running, hl * headBytes, partStats, hl * statBytes,
                                partOut, hl * headBytes, headDim);
                    }
                }
                MemorySegment out = c.region(at + 2 * parts);
                for (int hl = 0; hl < tile; hl++) {
                    ops.normalize(stats, hl * statBytes, running, hl * headBytes, out, hl * headBytes, headDim);
                }
                at += 2 * parts + 1;
            }
        });
    }

    /**
     * {@code n} scores at {@code offset} become {@code softcap * tanh(score / softcap)} (Gemma 2's
     * attention soft-capping, in f32 as llama.cpp computes it).
     */
    private void capScores(MemorySegment scores, long offset, int n) {
        float inverse = 1f / softcap;
        for (int i = 0; i < n; i++) {
            long at = offset + i * F;
            float v = scores.get(F32, at);
            scores.set(F32, at, softcap * (float) Math.tanh(v * inverse));
        }
    }

    /** Floats of one cache row: every KV head of one position. */
    int rowStride() {
        return kvHeads * headDim;
    }

    /** Bytes of one cache block. */
    long blockBytes() {
        return (long) blockSize * rowStride() * F;
    }

    /** Multiply-adds of attention over {@code keys} keys for one row, all heads, as FLOPs (qk and pv). */
    long flops(long keys) {
        return 4L * heads * headDim * keys;
    }

    /** Per-request scratch for batches of up to {@code maxRows} rows. */
    record Scratch(int maxRows, Buffer scores, Buffer blockStats, Buffer partial, Buffer runningStats,
            Buffer runningOut) {}

    /**
     * Per core thread, a tile's scores, block stats, partial, running stats and running output
     * for a task whose rows have one partition each: it normalizes each row into the output
     * before the next, so nothing outside the task reads them, and declaring them as regions of
     * the request's scratch cost the host five dependency lookups per row and task (80 a
     * batch-1 step on the large shape) and the cores a round trip through request memory. A few
     * KiB a thread (under 5 for 8 heads of 64), freed with the thread.
     */
    private final ThreadLocal<MemorySegment[]> local = ThreadLocal.withInitial(this::newLocal);

    private MemorySegment[] newLocal() {
        long scores = (long) tileHeads * blockSize * F;
        long stats = (long) tileHeads * STATS * F;
        long head = (long) tileHeads * headDim * F;
        MemorySegment all = java.lang.foreign.Arena.ofAuto().allocate(scores + 2 * stats + 2 * head, 64);
        return new MemorySegment[] {
            all.asSlice(0, scores),
            all.asSlice(scores, stats),
            all.asSlice(scores + stats, head),
            all.asSlice(scores + stats + head, stats),
            all.asSlice(scores + 2 * stats + head, head)
        };
    }

    /** Bytes {@link #allocateScratch} allocates. */
    long scratchBytes(int maxRows) {
        long perHeadRow = (long) slabs * (blockSize + STATS + headDim + STATS + headDim);
        return perHeadRow * heads * maxRows * F;
    }

    /** Allocates the scratch with {@code allocate} (such as {@link Orchestrator#allocate(long)}). */
    Scratch allocateScratch(LongFunction<Buffer> allocate, int maxRows) {
        long cells = (long) heads * maxRows;
        return new Scratch(
                maxRows,
                allocate.apply(slabs * cells * blockSize * F),
                allocate.apply(slabs * cells * STATS * F),
                allocate.apply(slabs * cells * headDim * F),
                allocate.apply(slabs * cells * STATS * F),
                allocate.apply(slabs * cells * headDim * F));
    }

    /**
     * Submits the attention of {@code rows} rows.
     *
     * @param query       {@code [rows, heads, headDim]} from offset 0 of its buffer
     * @param keys        the key cache; block {@code b} starts {@code cacheOffset + b * blockBytes()}
     * @param values      the value cache, laid out as the keys
     * @param contexts    per row, the positions it attends to (at least 1)
     * @param tables      per row, its block table (rows of one sequence may share one array)
     * @param out         {@code [rows, heads, headDim]} from offset 0 of its buffer
     */
    void submit(
            Orchestrator o, Scratch scratch, int rows, Buffer query, Buffer keys, Buffer values, long cacheOffset,
            int[] contexts, int[][] tables, Buffer out) {
        submit(o, scratch, rows, query, keys, values, cacheOffset, contexts, tables, out, 0);
    }

    /**
     * Submits the attention of {@code rows} rows, each over the last {@code window} positions of
     * its context only (all of it when {@code window} is 0 or the context is shorter): a sliding
     * layer. The positions before the window are neither read nor declared; the first read of a
     * row starts inside its first block, and the kernel, which walks each run of the cache in
     * steps of up to a block, never learns the difference.
     */
    void submit(
            Orchestrator o, Scratch scratch, int rows, Buffer query, Buffer keys, Buffer values, long cacheOffset,
            int[] contexts, int[][] tables, Buffer out, int window) {
        if (window < 0) {
            throw new IllegalArgumentException("paged attention: window = " + window + " must be >= 0");
        }
        if (rows > scratch.maxRows()) {
            throw new IllegalArgumentException("paged attention: " + rows + " rows exceed the scratch's "
                    + scratch.maxRows());
        }
        for (int r = 0; r < rows; r++) {
            int blocks = blocksOf(contexts[r]);
            if (contexts[r] < 1 || tables[r].length < blocks) {
                throw new IllegalArgumentException("paged attention: row " + r + " has context " + contexts[r]
                        + " (must be >= 1) and a block table of " + tables[r].length + " blocks (needs " + blocks + ")");
            }
        }
        for (int h0 = 0; h0 < heads; h0 += tileHeads) {
            int tile = Math.min(tileHeads, heads - h0);
            for (int r0 = 0; r0 < rows; r0 += chunkRows) {
                int r1 = Math.min(rows, r0 + chunkRows);
                submitTileChunk(o, scratch, h0, tile, r0, r1, query, keys, values, cacheOffset, contexts, tables, out,
                        window);
            }
        }
    }

    private int blocksOf(int context) {
        return (context + blockSize - 1) / blockSize;
    }

    /**
     * KV blocks per partition of a row whose context spans {@code blocks} blocks: at least
     * {@link #PARTITION_POSITIONS} positions each, at most {@code slabs} partitions. A function
     * of the row's own context only, so a row's arithmetic does not depend on its batch.
     */
    int blocksPerPartition(int blocks) {
        int least = Math.max(1, Math.ceilDiv(PARTITION_POSITIONS, blockSize));
        int parts = Math.min(slabs, Math.ceilDiv(blocks, least));
        return Math.ceilDiv(blocks, parts);
    }

    /** Partitions of a row whose context spans {@code blocks} blocks. */
    int partitionsOf(int blocks) {
        return Math.ceilDiv(blocks, blocksPerPartition(blocks));
    }

    private void submitTileChunk(
            Orchestrator o, Scratch s, int h0, int tile, int r0, int r1, Buffer query, Buffer keys, Buffer values,
            long cacheOffset, int[] contexts, int[][] tables, Buffer out, int window) {
        int maxRows = s.maxRows();
        long headBytes = headDim * F;
        int n = r1 - r0;
        int[] start = new int[n]; // the first position the row attends to
        int[] firstBlock = new int[n];
        int[] blocks = new int[n]; // blocks from firstBlock that hold its positions
        int[] per = new int[n];
        int[] parts = new int[n];
        int partitions = 0;
        for (int i = 0; i < n; i++) {
            int context = contexts[r0 + i];
            start[i] = window > 0 ? Math.max(0, context - window) : 0;
            firstBlock[i] = start[i] / blockSize;
            blocks[i] = blocksOf(context) - firstBlock[i];
            per[i] = blocksPerPartition(blocks[i]);
            parts[i] = partitionsOf(blocks[i]);
            partitions = Math.max(partitions, parts[i]);
        }
        boolean single = partitions == 1;
        List<Access> accesses = new ArrayList<>();
        long[] scalars = new long[3 + n];
        for (int p = 0; p < partitions; p++) {
            scalars[0] = tile;
            scalars[1] = h0;
            scalars[2] = single ? 1 : 0;
            int active = 0;
            for (int i = 0; i < n; i++) {
                if (p >= parts[i]) {
                    continue;
                }
                int r = r0 + i;
                int j0 = firstBlock[i] + p * per[i];
                int j1 = Math.min(firstBlock[i] + blocks[i], j0 + per[i]);
                int[] table = tables[r];
                int runs = 0;
                for (int j = j0; j < j1; j++) {
                    if (j == j0 || table[j] != table[j - 1] + 1) {
                        runs++;
                    }
                }
                scalars[3 + active++] = runs;
                if (!single) { // a single partition's running state is its core's own (local)
                    accesses.add(write(cell(s.scores(), maxRows, p, h0, tile, r, blockSize)));
                    accesses.add(write(cell(s.blockStats(), maxRows, p, h0, tile, r, STATS)));
                    accesses.add(write(cell(s.partial(), maxRows, p, h0, tile, r, headDim)));
                    accesses.add(write(cell(s.runningStats(), maxRows, p, h0, tile, r, STATS)));
                    accesses.add(write(cell(s.runningOut(), maxRows, p, h0, tile, r, headDim)));
                }
                accesses.add(read(query.region(((long) r * heads + h0) * headBytes, tile * headBytes)));
                addRuns(accesses, keys, cacheOffset, table, j0, j1, start[i], contexts[r]);
                addRuns(accesses, values, cacheOffset, table, j0, j1, start[i], contexts[r]);
                if (single) {
                    accesses.add(write(out.region(((long) r * heads + h0) * headBytes, tile * headBytes)));
                }
            }
            o.submit(partition, Arrays.copyOf(scalars, 3 + active), take(accesses));
        }
        if (single) {
            return;
        }
        for (int i = 0; i < n; i++) {
            int r = r0 + i;
            scalars[3 + i] = parts[i];
            accesses.add(readWrite(cell(s.runningStats(), maxRows, 0, h0, tile, r, STATS)));
            accesses.add(readWrite(cell(s.runningOut(), maxRows, 0, h0, tile, r, headDim)));
            for (int p = 1; p < parts[i]; p++) {
                accesses.add(read(cell(s.runningStats(), maxRows, p, h0, tile, r, STATS)));
                accesses.add(read(cell(s.runningOut(), maxRows, p, h0, tile, r, headDim)));
            }
            accesses.add(write(out.region(((long) r * heads + h0) * headBytes, tile * headBytes)));
        }
        scalars[2] = 0;
        o.submit(combine, scalars, take(accesses));
    }

    /**
     * The floats of row {@code r}, heads {@code [h0, h0 + tile)} in slab {@code slab} of a scratch
     * buffer laid out as {@code [slab][tile][row][head of tile][perHead]}: one tile's rows are
     * contiguous, so every tile and row is one region.
     */
    private Region cell(Buffer buffer, int maxRows, int slab, int h0, int tile, int r, int perHead) {
        long slabFloats = (long) heads * maxRows * perHead;
        long offset = slab * slabFloats + ((long) h0 * maxRows + (long) r * tile) * perHead;
        return buffer.region(offset * F, (long) tile * perHead * F);
    }

    /**
     * Reads of blocks {@code [j0, j1)} of a block table, one region per run of blocks adjacent in
     * the cache (a sequence whose blocks were handed out in order is one region), each from
     * position {@code start} (a sliding window's first; 0 otherwise) up to the last position of
     * {@code context} it holds.
     */
    private void addRuns(List<Access> accesses, Buffer cache, long cacheOffset, int[] table, int j0, int j1,
            int start, int context) {
        int first = j0;
        for (int j = j0 + 1; j <= j1; j++) {
            if (j == j1 || table[j] != table[j - 1] + 1) {
                int skip = Math.max(0, start - first * blockSize); // only in the window's first block
                long positions = (long) (j - 1 - first) * blockSize + validRows(context, j - 1) - skip;
                accesses.add(read(cache.region(cacheOffset + table[first] * blockBytes() + skip * rowStride() * F,
                        positions * rowStride() * F)));
                first = j;
            }
        }
    }

    /** Positions of block {@code j} that a context of {@code context} attends to. */
    private int validRows(int context, int j) {
        return Math.min(blockSize, context - j * blockSize);
    }

    private static Access[] take(List<Access> accesses) {
        Access[] array = accesses.toArray(Access[]::new);
        accesses.clear();
        return array;
    }
}
