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
 * <p>Tasks, per q-tile (at most {@link #MAX_TILE_HEADS} heads), per chunk of at most
 * {@link #MAX_CHUNK_ROWS} rows:
 *
 * <pre>
 *   init                                    running (M, S, out) of every row := nothing seen
 *   for each KV block index j:              (rows whose context ends before block j sit out)
 *     qk(j) -> softmaxPrepare(j) -> pv(j) -> update(j)
 *   normalize                               out := running out / S
 * </pre>
 *
 * <p>Each task declares exactly what it touches, row by row: its rows of the scratch slab, its
 * rows of the query, running state and output, and the positions of each KV block that the row
 * attends to (all KV heads of them: a tile of fewer heads reads only its share, strided, which
 * no region can describe; nothing writes those positions while attention reads them, so the
 * wider read costs no parallelism). The dependencies that follow:
 *
 * <ul>
 *   <li>{@code qk(j)}, {@code softmaxPrepare(j)} and {@code pv(j)} of one block form a chain
 *       through slab {@code j % slabs} of the scratch; chains of different blocks are independent,
 *       so up to {@code slabs} blocks of one tile and chunk run at once on different cores;
 *   <li>the updates form one chain per tile and chunk through the running state, in block order,
 *       and each waits for its own block's chain;
 *   <li>block {@code j + slabs} reuses the slab of block {@code j}: it waits (write after read)
 *       for {@code pv(j)} and {@code update(j)} to have read it, which bounds the scratch.
 * </ul>
 *
 * <p>The reads of the query and of the KV blocks wait for whoever wrote them last (the
 * program's previous tasks); the output's write waits for the readers of the previous output.
 */
final class PagedAttention {

    /** Heads of one q-tile, at most. */
    static final int MAX_TILE_HEADS = 128;

    /** Rows of one chunk, at most. */
    static final int MAX_CHUNK_ROWS = 16;

    /** Scratch slabs: KV blocks of one tile and chunk that can be in flight at once. */
    static final int DEFAULT_SLABS = 8;

    private static final long F = Float.BYTES;
    private static final int STATS = AttentionOps.STATS_FLOATS;

    final int heads;
    final int kvHeads;
    final int headDim;
    final int blockSize;
    final int tileHeads;
    final int chunkRows;
    final int slabs;
    private final float scale;
    private final Kernel init;
    private final Kernel qk;
    private final Kernel softmax;
    private final Kernel pv;
    private final Kernel update;
    private final Kernel normalize;

    /**
     * @param tileHeads heads per q-tile, in {@code [1, MAX_TILE_HEADS]}
     * @param chunkRows rows per chunk, in {@code [1, MAX_CHUNK_ROWS]}
     * @param slabs     KV blocks per tile and chunk in flight at once, at least 1
     */
    PagedAttention(
            KernelOps ops, int heads, int kvHeads, int headDim, int blockSize, int tileHeads, int chunkRows,
            int slabs) {
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
        this.scale = (float) (1.0 / Math.sqrt(headDim));
        int group = heads / kvHeads;
        int rowStride = kvHeads * headDim;
        long headBytes = headDim * F;
        long scoreBytes = blockSize * F;
        long statBytes = STATS * F;

        // Scalars shared by the kernels below: [0] heads of the tile, [1] first head of the tile,
        // then one scalar per row (its valid keys in this block), in region order.
        this.init = Kernel.of("attention_init", c -> {
            int tile = (int) c.scalar(0);
            for (int i = 0; i < c.regionCount() / 2; i++) {
                MemorySegment stats = c.region(2 * i);
                MemorySegment out = c.region(2 * i + 1);
                for (int hl = 0; hl < tile; hl++) {
                    ops.onlineInit(stats, hl * statBytes, out, hl * headBytes, headDim);
                }
            }
        });
        this.qk = Kernel.of("attention_qk", c -> {
            int tile = (int) c.scalar(0);
            int h0 = (int) c.scalar(1);
            for (int i = 0; i < c.regionCount() / 3; i++) {
                MemorySegment scores = c.region(3 * i);
                MemorySegment q = c.region(3 * i + 1);
                MemorySegment keys = c.region(3 * i + 2);
                int valid = (int) c.scalar(2 + i);
                for (int hl = 0; hl < tile; hl++) {
                    int kvHead = (h0 + hl) / group;
                    ops.qk(q, hl * headBytes, keys, kvHead * headBytes, scores, hl * scoreBytes, headDim, rowStride,
                            valid, scale);
                }
            }
        });
        this.softmax = Kernel.of("attention_softmax", c -> {
            int tile = (int) c.scalar(0);
            for (int i = 0; i < c.regionCount() / 2; i++) {
                MemorySegment scores = c.region(2 * i);
                MemorySegment stats = c.region(2 * i + 1);
                int valid = (int) c.scalar(2 + i);
                for (int hl = 0; hl < tile; hl++) {
                    ops.softmaxPrepare(scores, hl * scoreBytes, stats, hl * statBytes, valid);
                }
            }
        });
        this.pv = Kernel.of("attention_pv", c -> {
            int tile = (int) c.scalar(0);
            int h0 = (int) c.scalar(1);
            for (int i = 0; i < c.regionCount() / 3; i++) {
                MemorySegment exps = c.region(3 * i);
                MemorySegment values = c.region(3 * i + 1);
                MemorySegment partial = c.region(3 * i + 2);
                int valid = (int) c.scalar(2 + i);
                for (int hl = 0; hl < tile; hl++) {
                    int kvHead = (h0 + hl) / group;
                    ops.pv(exps, hl * scoreBytes, values, kvHead * headBytes, partial, hl * headBytes, headDim,
                            rowStride, valid);
                }
            }
        });
        this.update = Kernel.of("attention_update", c -> {
            int tile = (int) c.scalar(0);
            for (int i = 0; i < c.regionCount() / 4; i++) {
                MemorySegment stats = c.region(4 * i);
                MemorySegment partial = c.region(4 * i + 1);
                MemorySegment runningStats = c.region(4 * i + 2);
                MemorySegment runningOut = c.region(4 * i + 3);
                for (int hl = 0; hl < tile; hl++) {
                    ops.onlineUpdate(runningStats, hl * statBytes, runningOut, hl * headBytes, stats, hl * statBytes,
                            partial, hl * headBytes, headDim);
                }
            }
        });
        this.normalize = Kernel.of("attention_normalize", c -> {
            int tile = (int) c.scalar(0);
            for (int i = 0; i < c.regionCount() / 3; i++) {
                MemorySegment stats = c.region(3 * i);
                MemorySegment running = c.region(3 * i + 1);
                MemorySegment out = c.region(3 * i + 2);
                for (int hl = 0; hl < tile; hl++) {
                    ops.normalize(stats, hl * statBytes, running, hl * headBytes, out, hl * headBytes, headDim);
                }
            }
        });
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

    /** Bytes {@link #allocateScratch} allocates. */
    long scratchBytes(int maxRows) {
        long perHeadRow = (long) slabs * (blockSize + STATS + headDim) + STATS + headDim;
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
                allocate.apply(cells * STATS * F),
                allocate.apply(cells * headDim * F));
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
                submitTileChunk(o, scratch, h0, tile, r0, r1, query, keys, values, cacheOffset, contexts, tables, out);
            }
        }
    }

    private int blocksOf(int context) {
        return (context + blockSize - 1) / blockSize;
    }

    private void submitTileChunk(
            Orchestrator o, Scratch s, int h0, int tile, int r0, int r1, Buffer query, Buffer keys, Buffer values,
            long cacheOffset, int[] contexts, int[][] tables, Buffer out) {
        int maxRows = s.maxRows();
        long headBytes = headDim * F;
        List<Access> accesses = new ArrayList<>();
        long[] tileScalars = {tile, h0};

        for (int r = r0; r < r1; r++) {
            accesses.add(write(cell(s.runningStats(), maxRows, 0, h0, tile, r, STATS)));
            accesses.add(write(cell(s.runningOut(), maxRows, 0, h0, tile, r, headDim)));
        }
        o.submit(init, tileScalars, take(accesses));

        int blocks = 0;
        for (int r = r0; r < r1; r++) {
            blocks = Math.max(blocks, blocksOf(contexts[r]));
        }
        long[] perRow = new long[2 + (r1 - r0)];
        perRow[0] = tile;
        perRow[1] = h0;
        for (int j = 0; j < blocks; j++) {
            int slab = j % slabs;
            int active = 0;
            for (int r = r0; r < r1; r++) {
                if (j < blocksOf(contexts[r])) {
                    perRow[2 + active++] = validRows(contexts[r], j);
                }
            }
            long[] scalars = Arrays.copyOf(perRow, 2 + active);

            for (int r = r0; r < r1; r++) {
                if (j < blocksOf(contexts[r])) {
                    accesses.add(write(cell(s.scores(), maxRows, slab, h0, tile, r, blockSize)));
                    accesses.add(read(query.region(((long) r * heads + h0) * headBytes, tile * headBytes)));
                    accesses.add(read(block(keys, cacheOffset, tables[r][j], validRows(contexts[r], j))));
                }
            }
            o.submit(qk, scalars, take(accesses));

            for (int r = r0; r < r1; r++) {
                if (j < blocksOf(contexts[r])) {
                    accesses.add(readWrite(cell(s.scores(), maxRows, slab, h0, tile, r, blockSize)));
                    accesses.add(write(cell(s.blockStats(), maxRows, slab, h0, tile, r, STATS)));
                }
            }
            o.submit(softmax, scalars, take(accesses));

            for (int r = r0; r < r1; r++) {
                if (j < blocksOf(contexts[r])) {
                    accesses.add(read(cell(s.scores(), maxRows, slab, h0, tile, r, blockSize)));
                    accesses.add(read(block(values, cacheOffset, tables[r][j], validRows(contexts[r], j))));
                    accesses.add(write(cell(s.partial(), maxRows, slab, h0, tile, r, headDim)));
                }
            }
            o.submit(pv, scalars, take(accesses));

            for (int r = r0; r < r1; r++) {
                if (j < blocksOf(contexts[r])) {
                    accesses.add(read(cell(s.blockStats(), maxRows, slab, h0, tile, r, STATS)));
                    accesses.add(read(cell(s.partial(), maxRows, slab, h0, tile, r, headDim)));
                    accesses.add(readWrite(cell(s.runningStats(), maxRows, 0, h0, tile, r, STATS)));
                    accesses.add(readWrite(cell(s.runningOut(), maxRows, 0, h0, tile, r, headDim)));
                }
            }
            o.submit(update, scalars, take(accesses));
        }

        for (int r = r0; r < r1; r++) {
            accesses.add(read(cell(s.runningStats(), maxRows, 0, h0, tile, r, STATS)));
            accesses.add(read(cell(s.runningOut(), maxRows, 0, h0, tile, r, headDim)));
            accesses.add(write(out.region(((long) r * heads + h0) * headBytes, tile * headBytes)));
        }
        o.submit(normalize, tileScalars, take(accesses));
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

    /** The first {@code rows} positions of a cache block. */
    private Region block(Buffer cache, long cacheOffset, int block, int rows) {
        return cache.region(cacheOffset + block * blockBytes(), (long) rows * rowStride() * F);
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
