package dev.tandem.llm.model;

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
import dev.tandem.llm.reference.PagedAttentionWorkload;
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
 * <p>Shapes: the query is {@code [rows, heads, headDim]} f32; a cache is {@code [blocks, blockSize,
 * kvHeads, headDim]} of its {@link KvType} (so a cache row is {@code rowStride = kvHeads * headDim}
 * elements; an f16 block is widened exactly, a KV head at a time, before qk and pv read it); head
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
 * <p>Each task declares what it touches in request memory, a chunk of rows at a time: its
 * chunk's rows of the scratch slab of its partition (scores, block stats and partial of the
 * block in hand, the partition's running state: one region each, a tile's rows being
 * contiguous; a task whose rows have one partition each keeps those in its core's own scratch
 * instead, {@link #local}, as no other task reads them), its chunk's rows of the query, the
 * runs of KV blocks adjacent in the cache that its rows attend to ({@link Runs}: rows of one
 * sequence share them, so a prompt's chunk of rows reads each block once, and a sequence whose
 * blocks are in order costs one region however long its context; all KV heads of them: a tile
 * of fewer heads reads only its share, strided, which no region can describe; nothing writes
 * those positions while attention reads them, so the wider read costs no parallelism), and each
 * row's heads of the output (strided too: one region a row, so the tiles of a row write apart).
 * The kernels find a row's place in a region from its index in the chunk and walk its own
 * pieces of the runs, so a row computes the same whatever rows share its task. The partitions
 * of one tile and chunk are independent; the combine waits for all of them. The reads of the
 * query and of the KV blocks wait for whoever wrote them last (the program's previous tasks);
 * the scratch and output writes wait for the readers of their previous contents (the layer
 * before). Declared per row, a 256-row prompt step of a 24-layer model made about half a million
 * regions, which outlived the young generation and grew the server's heap by hundreds of MB.
 */
public final class PagedAttention {

    /** Heads of one q-tile, at most. */
    public static final int MAX_TILE_HEADS = 128;

    /** Rows of one chunk, at most. */
    public static final int MAX_CHUNK_ROWS = 16;

    /** Scratch slabs: partitions of one row's context, at most (each its own task). */
    public static final int DEFAULT_SLABS = 8;

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
    private final KvType kvType;
    private final Kernel partition;
    private final Kernel combine;

    /**
     * @param tileHeads heads per q-tile, in {@code [1, MAX_TILE_HEADS]}
     * @param chunkRows rows per chunk, in {@code [1, MAX_CHUNK_ROWS]}
     * @param slabs     partitions of one row, at most, at least 1
     * @param kvType    the element type of the caches it reads
     */
    public PagedAttention(
            KernelOps ops, int heads, int kvHeads, int headDim, int blockSize, int tileHeads, int chunkRows,
            int slabs, KvType kvType) {
        this(ops, heads, kvHeads, headDim, blockSize, tileHeads, chunkRows, slabs, (float) (1.0 / Math.sqrt(headDim)),
                0f, kvType);
    }

    /**
     * @param scale   the factor of the query-key products
     * @param softcap scores become {@code softcap * tanh(score / softcap)} after scaling; 0 for none
     */
    public PagedAttention(
            KernelOps ops, int heads, int kvHeads, int headDim, int blockSize, int tileHeads, int chunkRows,
            int slabs, float scale, float softcap, KvType kvType) {
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
        this.kvType = kvType;
        boolean half = kvType == KvType.F16;
        int group = heads / kvHeads;
        int rowStride = kvHeads * headDim;
        long headBytes = headDim * F;
        long kvHeadBytes = (long) headDim * kvType.bytes();
        long kvRowBytes = (long) rowStride * kvType.bytes();
        long scoreBytes = blockSize * F;
        long statBytes = STATS * F;

        // Regions of a partition task: unless it normalizes (its chunk has one partition), its
        // chunk's rows of the five scratch cells of its slab; the chunk's rows of the query; the
        // task's runs of KV blocks, keys then values (m of each); if it normalizes, one output
        // region per row. Scalars: [0] heads of the tile, [1] its first head, [2] whether it
        // normalizes, [3] m, then per row it computes: the row's index in the chunk, its pieces,
        // and per piece the run it lies in, its byte offset there and its positions.
        this.partition = Kernel.of("attention", c -> {
            int tile = (int) c.scalar(0);
            int h0 = (int) c.scalar(1);
            boolean last = c.scalar(2) != 0;
            int runs = (int) c.scalar(3);
            // One partition: the running state stays in this core's own scratch (nothing else reads it).
            MemorySegment[] own = last ? local.get() : null;
            int cells = last ? 0 : 5;
            MemorySegment scores = last ? own[0] : c.region(0);
            MemorySegment blockStats = last ? own[1] : c.region(1);
            MemorySegment partial = last ? own[2] : c.region(2);
            MemorySegment runningStats = last ? own[3] : c.region(3);
            MemorySegment runningOut = last ? own[4] : c.region(4);
            MemorySegment q = c.region(cells);
            // An f16 cache's block of one KV head, keys and values, widened to f32.
            MemorySegment[] wide = half ? widened.get() : null;
            int keysAt = cells + 1;
            int valuesAt = keysAt + runs;
            int outAt = valuesAt + runs;
            for (int s = 4, row = 0; s < c.scalarCount(); row++) {
                int i = (int) c.scalar(s++);
                int pieces = (int) c.scalar(s++);
                long scoresAt = last ? 0 : (long) i * tile * scoreBytes;
                long statsAt = last ? 0 : (long) i * tile * statBytes;
                long headsAt = last ? 0 : (long) i * tile * headBytes;
                long qAt = ((long) i * heads + h0) * headBytes;
                for (int hl = 0; hl < tile; hl++) {
                    ops.onlineInit(runningStats, statsAt + hl * statBytes, runningOut, headsAt + hl * headBytes,
                            headDim);
                }
                for (int j = 0; j < pieces; j++, s += 3) {
                    // A piece of a run of whole blocks adjacent in the cache; its last block may be partly valid.
                    int run = (int) c.scalar(s);
                    long pieceAt = c.scalar(s + 1);
                    int positions = (int) c.scalar(s + 2);
                    MemorySegment cachedKeys = c.region(keysAt + run);
                    MemorySegment cachedValues = c.region(valuesAt + run);
                    for (int p0 = 0; p0 < positions; p0 += blockSize) {
                        int valid = Math.min(blockSize, positions - p0);
                        long blockAt = pieceAt + p0 * kvRowBytes;
                        int widenedHead = -1;
                        for (int hl = 0; hl < tile; hl++) {
                            int kvHead = (h0 + hl) / group;
                            long kvAt = blockAt + kvHead * kvHeadBytes;
                            MemorySegment keys = cachedKeys;
                            MemorySegment values = cachedValues;
                            int stride = rowStride;
                            if (half) {
                                // The block's rows of this KV head, widened once for the tile's
                                // heads that read them (a tile's heads are in order, so a group's
                                // are neighbours).
                                if (kvHead != widenedHead) {
                                    ops.widenF16(cachedKeys, kvAt, headDim, rowStride, valid, wide[0], 0);
                                    ops.widenF16(cachedValues, kvAt, headDim, rowStride, valid, wide[1], 0);
                                    widenedHead = kvHead;
                                }
                                keys = wide[0];
                                values = wide[1];
                                kvAt = 0;
                                stride = headDim;
                            }
                            long scoreAt = scoresAt + hl * scoreBytes;
                            long statAt = statsAt + hl * statBytes;
                            long headAt = headsAt + hl * headBytes;
                            ops.qk(q, qAt + hl * headBytes, keys, kvAt, scores, scoreAt, headDim, stride, valid, scale);
                            if (softcap > 0) {
                                capScores(scores, scoreAt, valid);
                            }
                            ops.softmaxPrepare(scores, scoreAt, blockStats, statAt, valid);
                            ops.pv(scores, scoreAt, values, kvAt, partial, headAt, headDim, stride, valid);
                            ops.onlineUpdate(runningStats, statAt, runningOut, headAt, blockStats, statAt, partial,
                                    headAt, headDim);
                        }
                    }
                }
                if (last) {
                    MemorySegment out = c.region(outAt + row);
                    for (int hl = 0; hl < tile; hl++) {
                        ops.normalize(runningStats, hl * statBytes, runningOut, hl * headBytes, out, hl * headBytes,
                                headDim);
                    }
                }
            }
        });
        // Regions of a combine task: per slab p below [2], the chunk's rows of its running stats
        // and running output; then one output region per row. Scalars: [0] heads of the tile,
        // [1] its first head, [2] the slabs declared, then per row of the chunk its partitions.
        this.combine = Kernel.of("attention_combine", c -> {
            int tile = (int) c.scalar(0);
            int outAt = 2 * (int) c.scalar(2);
            for (int i = 0; 3 + i < c.scalarCount(); i++) {
                int parts = (int) c.scalar(3 + i);
                long statsAt = (long) i * tile * statBytes;
                long headsAt = (long) i * tile * headBytes;
                MemorySegment stats = c.region(0);
                MemorySegment running = c.region(1);
                for (int p = 1; p < parts; p++) {
                    MemorySegment partStats = c.region(2 * p);
                    MemorySegment partOut = c.region(2 * p + 1);
                    for (int hl = 0; hl < tile; hl++) {
                        ops.onlineUpdate(stats, statsAt + hl * statBytes, running, headsAt + hl * headBytes,
                                partStats, statsAt + hl * statBytes, partOut, headsAt + hl * headBytes, headDim);
                    }
                }
                MemorySegment out = c.region(outAt + i);
                for (int hl = 0; hl < tile; hl++) {
                    ops.normalize(stats, statsAt + hl * statBytes, running, headsAt + hl * headBytes, out,
                            hl * headBytes, headDim);
                }
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

    /** Elements of one cache row: every KV head of one position. */
    int rowStride() {
        return kvHeads * headDim;
    }

    /** Bytes of one cache row, in the cache's element type. */
    private long kvRowBytes() {
        return (long) rowStride() * kvType.bytes();
    }

    /** Bytes of one cache block. */
    long blockBytes() {
        return blockSize * kvRowBytes();
    }

    /** Multiply-adds of attention over {@code keys} keys for one row, all heads, as FLOPs (qk and pv). */
    long flops(long keys) {
        return 4L * heads * headDim * keys;
    }

    /** Per-request scratch for batches of up to {@code maxRows} rows. */
    public record Scratch(int maxRows, Buffer scores, Buffer blockStats, Buffer partial, Buffer runningStats,
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

    /**
     * Per core thread, for an f16 cache: one block's keys and values of one KV head, widened to
     * f32 ({@code blockSize * headDim} floats each), which qk and pv then read as an f32 cache's:
     * widened once per block and KV head, not once per query head (the 0.5B shape's seven query
     * heads of a KV head would widen each element seven times). A few KiB to tens of KiB a
     * thread (32 for blocks of 64 positions of head dim 64), freed with the thread.
     */
    private final ThreadLocal<MemorySegment[]> widened = ThreadLocal.withInitial(this::newWidened);

    private MemorySegment[] newWidened() {
        long bytes = (long) blockSize * headDim * F;
        MemorySegment both = java.lang.foreign.Arena.ofAuto().allocate(2 * bytes, 64);
        return new MemorySegment[] {both.asSlice(0, bytes), both.asSlice(bytes, bytes)};
    }

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
    public long scratchBytes(int maxRows) {
        long perHeadRow = (long) slabs * (blockSize + STATS + headDim + STATS + headDim);
        return perHeadRow * heads * maxRows * F;
    }

    /** Allocates the scratch with {@code allocate} (such as {@link Orchestrator#allocate(long)}). */
    public Scratch allocateScratch(LongFunction<Buffer> allocate, int maxRows) {
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
    public void submit(
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
    public void submit(
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
        Region rowsOfQuery = query.region((long) r0 * heads * headBytes, (long) n * heads * headBytes);
        List<Access> accesses = new ArrayList<>();
        Runs runs = new Runs(n);
        for (int p = 0; p < partitions; p++) {
            if (!single) { // a single partition's running state is its core's own (local)
                accesses.add(write(cells(s.scores(), maxRows, p, h0, tile, r0, n, blockSize)));
                accesses.add(write(cells(s.blockStats(), maxRows, p, h0, tile, r0, n, STATS)));
                accesses.add(write(cells(s.partial(), maxRows, p, h0, tile, r0, n, headDim)));
                accesses.add(write(cells(s.runningStats(), maxRows, p, h0, tile, r0, n, STATS)));
                accesses.add(write(cells(s.runningOut(), maxRows, p, h0, tile, r0, n, headDim)));
            }
            accesses.add(read(rowsOfQuery));
            runs.clear();
            for (int i = 0; i < n; i++) {
                if (p < parts[i]) {
                    int j0 = firstBlock[i] + p * per[i];
                    runs.add(i, tables[r0 + i], j0, Math.min(firstBlock[i] + blocks[i], j0 + per[i]), start[i],
                            contexts[r0 + i]);
                }
            }
            long[] scalars = runs.close(tile, h0, single);
            for (Buffer cache : new Buffer[] {keys, values}) {
                for (int k = 0; k < runs.count; k++) {
                    int a = runs.firstBlock[k];
                    long from = runs.from[k];
                    accesses.add(read(cache.region(cacheOffset + runs.table[k][a] * blockBytes()
                            + (from - (long) a * blockSize) * kvRowBytes(), (runs.to[k] - from) * kvRowBytes())));
                }
            }
            if (single) {
                for (int r = r0; r < r1; r++) {
                    accesses.add(write(out.region(((long) r * heads + h0) * headBytes, tile * headBytes)));
                }
            }
            o.submit(partition, scalars, take(accesses));
        }
        if (single) {
            return;
        }
        long[] scalars = new long[3 + n];
        scalars[0] = tile;
        scalars[1] = h0;
        scalars[2] = partitions;
        for (int p = 0; p < partitions; p++) {
            Region stats = cells(s.runningStats(), maxRows, p, h0, tile, r0, n, STATS);
            Region running = cells(s.runningOut(), maxRows, p, h0, tile, r0, n, headDim);
            accesses.add(p == 0 ? readWrite(stats) : read(stats));
            accesses.add(p == 0 ? readWrite(running) : read(running));
        }
        for (int i = 0; i < n; i++) {
            int r = r0 + i;
            scalars[3 + i] = parts[i];
            accesses.add(write(out.region(((long) r * heads + h0) * headBytes, tile * headBytes)));
        }
        o.submit(combine, scalars, take(accesses));
    }

    /**
     * The floats of rows {@code [r0, r0 + n)}, heads {@code [h0, h0 + tile)} in slab {@code slab}
     * of a scratch buffer laid out as {@code [slab][tile][row][head of tile][perHead]}: one tile's
     * rows are contiguous, so a chunk's rows of a tile are one region, row {@code r0 + i} at
     * {@code i * tile * perHead} floats.
     */
    private Region cells(Buffer buffer, int maxRows, int slab, int h0, int tile, int r0, int n, int perHead) {
        long slabFloats = (long) heads * maxRows * perHead;
        long offset = slab * slabFloats + ((long) h0 * maxRows + (long) r0 * tile) * perHead;
        return buffer.region(offset * F, (long) n * tile * perHead * F);
    }

    /**
     * The KV reads of one partition task and its rows' pieces of them. Rows of one sequence (one
     * block table) read overlapping positions of the same blocks: their reads are merged into
     * runs of blocks adjacent in the cache, one region each from the first position any of the
     * rows attends to there to the last, and each row walks its own positions of them as pieces
     * (a run, a byte offset in it, positions). A row's pieces are the runs of its own blocks
     * exactly, so it computes the same whatever rows share its task, and a prompt's chunk of
     * rows costs a few regions a task, not a few a row. One task at a time, program thread only.
     */
    private final class Runs {
        int count;
        int[][] table;
        int[] firstBlock;
        long[] from;
        long[] to;
        private int rows;
        private final int[] index;
        private final int[][] rowTable;
        private final int[] rowFirst;
        private final int[] rowEnd;
        private final int[] rowStart;
        private final int[] rowContext;
        /** Per row, the run of each of its blocks from {@link #runsFrom}'s block on. */
        private final int[][] runOfBlock;
        private final int[] runsFrom;

        Runs(int capacity) {
            index = new int[capacity];
            rowTable = new int[capacity][];
            rowFirst = new int[capacity];
            rowEnd = new int[capacity];
            rowStart = new int[capacity];
            rowContext = new int[capacity];
            runOfBlock = new int[capacity][];
            runsFrom = new int[capacity];
            table = new int[capacity][];
            firstBlock = new int[capacity];
            from = new long[capacity];
            to = new long[capacity];
        }

        void clear() {
            rows = 0;
            count = 0;
        }

        /** Row {@code i} of the chunk reads blocks {@code [j0, j1)} of {@code t}, positions from {@code start} to {@code context}. */
        void add(int i, int[] t, int j0, int j1, int start, int context) {
            index[rows] = i;
            rowTable[rows] = t;
            rowFirst[rows] = j0;
            rowEnd[rows] = j1;
            rowStart[rows] = start;
            rowContext[rows] = context;
            runOfBlock[rows] = null;
            rows++;
        }

        /**
         * Merges the rows' blocks into runs, table by table, and returns the task's scalars: tile,
         * first head, whether it normalizes, the runs, then per row its index, its pieces and
         * (run, byte offset, positions) per piece.
         */
        long[] close(int tile, int h0, boolean normalizes) {
            for (int x = 0; x < rows; x++) {
                if (runOfBlock[x] == null) {
                    group(x);
                }
            }
            int bound = 4; // a row has at most a piece per block
            for (int x = 0; x < rows; x++) {
                bound += 2 + 3 * (rowEnd[x] - rowFirst[x]);
            }
            long[] scalars = new long[bound];
            scalars[0] = tile;
            scalars[1] = h0;
            scalars[2] = normalizes ? 1 : 0;
            scalars[3] = count;
            int at = 4;
            for (int x = 0; x < rows; x++) {
                scalars[at] = index[x];
                int pieces = pieces(x, scalars, at + 2);
                scalars[at + 1] = pieces;
                at += 2 + 3 * pieces;
            }
            return at == bound ? scalars : Arrays.copyOf(scalars, at);
        }

        /** The runs of the rows that share row {@code x}'s block table. */
        private void group(int x) {
            int[] t = rowTable[x];
            int lo = Integer.MAX_VALUE;
            int hi = 0;
            for (int y = x; y < rows; y++) {
                if (rowTable[y] == t) {
                    lo = Math.min(lo, rowFirst[y]);
                    hi = Math.max(hi, rowEnd[y]);
                }
            }
            long[] blockFrom = new long[hi - lo];
            long[] blockTo = new long[hi - lo];
            Arrays.fill(blockFrom, Long.MAX_VALUE);
            int[] runs = new int[hi - lo];
            for (int y = x; y < rows; y++) {
                if (rowTable[y] == t) {
                    for (int j = rowFirst[y]; j < rowEnd[y]; j++) {
                        blockFrom[j - lo] = Math.min(blockFrom[j - lo], Math.max(rowStart[y], (long) j * blockSize));
                        blockTo[j - lo] = Math.max(blockTo[j - lo], Math.min(rowContext[y], (long) (j + 1) * blockSize));
                    }
                    runOfBlock[y] = runs;
                    runsFrom[y] = lo;
                }
            }
            for (int j = lo; j < hi; j++) {
                if (blockFrom[j - lo] == Long.MAX_VALUE) {
                    continue; // no row of this task reads it
                }
                boolean extends_ = j > lo && blockFrom[j - lo - 1] != Long.MAX_VALUE && t[j] == t[j - 1] + 1;
                if (!extends_) {
                    if (count == table.length) {
                        grow();
                    }
                    table[count] = t;
                    firstBlock[count] = j;
                    from[count] = blockFrom[j - lo];
                    count++;
                }
                to[count - 1] = blockTo[j - lo];
                runs[j - lo] = count - 1;
            }
        }

        private void grow() {
            int grown = 2 * table.length;
            table = Arrays.copyOf(table, grown);
            firstBlock = Arrays.copyOf(firstBlock, grown);
            from = Arrays.copyOf(from, grown);
            to = Arrays.copyOf(to, grown);
        }

        /** Writes row {@code x}'s pieces from {@code at} of {@code scalars}; returns how many. */
        private int pieces(int x, long[] scalars, int at) {
            int[] t = rowTable[x];
            int j1 = rowEnd[x];
            int first = rowFirst[x];
            int pieces = 0;
            for (int j = first + 1; j <= j1; j++) {
                if (j == j1 || t[j] != t[j - 1] + 1) {
                    long lo = Math.max(rowStart[x], (long) first * blockSize);
                    long hi = Math.min(rowContext[x], (long) j * blockSize);
                    int k = runOfBlock[x][first - runsFrom[x]];
                    scalars[at] = k;
                    scalars[at + 1] = (lo - from[k]) * kvRowBytes();
                    scalars[at + 2] = hi - lo;
                    at += 3;
                    pieces++;
                    first = j;
                }
            }
            return pieces;
        }
    }

    private static Access[] take(List<Access> accesses) {
        Access[] array = accesses.toArray(Access[]::new);
        accesses.clear();
        return array;
    }
}
