package dev.tandem.llm.model;

import static dev.tandem.Access.read;
import static dev.tandem.Access.readWrite;
import static dev.tandem.Access.write;

import dev.tandem.Access;
import dev.tandem.AccessMode;
import dev.tandem.Buffer;
import dev.tandem.Kernel;
import dev.tandem.Orchestrator;
import dev.tandem.Program;
import dev.tandem.Worker;
import dev.tandem.kernels.KernelOps;
import dev.tandem.kernels.Ops;
import dev.tandem.kernels.TensorType;
import dev.tandem.llm.Batcher;
import dev.tandem.llm.engine.ForwardPass;
import dev.tandem.llm.model.LlamaWeights.Tensor;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongFunction;

/**
 * A Llama-style decoder on a worker: its weights in frozen worker buffers ({@link WorkerWeights},
 * the loader's result), the tasks of one forward pass over a list of rows ({@link #forward}), and
 * the program that decodes a {@link LlamaRequest} (a fixed batch of sequences) step by step
 * ({@link #program()}, {@link LlamaProgram}). The tasks' kernels are {@link LlamaKernels}.
 *
 * <h2>Implementation Overview</h2>
 *
 * <p>A forward pass runs a list of <em>rows</em>, each a sequence at a position: a prompt's rows
 * (prefill) or one row per decoding sequence. The KV cache is paged: blocks of
 * {@link Options#kvBlockSize} positions, one block table per sequence, its elements of
 * {@link Options#kvType} (f16 by default); the caller (the plain program or the {@link Batcher})
 * owns the cache and the tables. The host knows every row's
 * sequence and position, so it knows which cache slot each task writes and which blocks each
 * reads.
 *
 * <p>Tasks of one pass, {@code R} rows, in order (a "row chunk" is up to 16 rows):
 *
 * <pre>
 *   embed                                   x[R, dim] := embedding rows of the input tokens
 *                                           (times the architecture's embedding scale)
 *   rmsnorm per row chunk                   xn := norm(x) (layer 0's attention norm)
 *   per layer:
 *     qkv per row block index k            block k of each of wq, wk, wv: block-major outputs
 *                                           ({@link RowBlocks})
 *     rope_store per row chunk              q[R, heads, headDim] := rope(q rows); K, V cache
 *                                           slots of the rows := rope(k rows), v rows (as the
 *                                           cache's element type)
 *     paged attention                       att := {@link PagedAttention} over each row's context
 *                                           (its last window positions on a sliding layer;
 *                                           scores scaled and soft-capped as the family says)
 *     wo row blocks                         block-major output
 *     residual_norm per row chunk           x += wo att (post-norm(wo att) with post-norms);
 *                                           xn := norm(x) (the FFN norm)
 *     w1_w3 per shared row block            gate, up := w1 xn, w3 xn of the block; hb[R, ffnDim]
 *                                           columns of the block := act(gate) * up (SiLU or GELU)
 *     w2 row blocks                         block-major output
 *     residual_norm per row chunk           x += w2 hb; xn := norm(x) (the next layer's
 *                                           attention norm; after the last layer, residual only)
 *   final_norm                              xf := norm(x) of the rows that need logits
 *   classifier row blocks                   logits
 *   logit_softcap (Gemma 2)                 logits := cap * tanh(logits / cap), in place
 * </pre>
 *
 * <p>The caller then adds its sample task, which reads the logits ({@link #addLogitReads}) and
 * writes the next step's input tokens on the device, and ends the step.
 *
 * <p>What a family does beyond Llama is data ({@link Architecture}, read from the config): the
 * builders and kernels above take its fields (a window per layer, the sliding layers' own
 * {@link Rope}, the post-norm weights as extra regions), and nothing branches on a family's name.
 * The {@link Batcher} builds its steps through {@link #forward}, so it needs no hook of its own.
 *
 * <p>Every matmul is split into row blocks of about {@link Options#rowBlockBytes} of weights, one
 * task each, which reads its weight rows once for all {@code R} rows and writes its own
 * contiguous part of a block-major output: tasks write disjoint regions, so the row blocks of one
 * matmul run in parallel and each consumer waits for exactly the blocks it reads. Each task
 * declares exactly the ranges it reads and writes; dependencies follow from them alone.
 */
public final class LlamaModel {

    /** Rows per task of the row-wise kernels (norms, rope, residuals). */
    static final int ROW_CHUNK = 16;

    private static final long F = Float.BYTES;

    /**
     * How the model's steps are cut into tasks.
     *
     * @param kvBlockSize   positions per KV cache block
     * @param rowBlockBytes weight bytes per row block of a matmul's block-major output, about
     * @param parallelism   row blocks and attention q-tiles each phase should offer at least,
     *                      where it can: a matmul has a multiple of this many row blocks, and
     *                      attention splits its heads into this many q-tiles; 0 for the
     *                      worker's cores
     * @param partBytes     weight bytes per part, about: each matmul phase (q/k/v, the output
     *                      projection, gate and up, down, the classifier) is one task split
     *                      into parts of this many bytes of weight rows, which the worker's
     *                      cores claim as they become free ({@link Kernel#parts}); so a core
     *                      that is slower, or preempted, takes fewer parts, instead of every
     *                      core waiting at the end of the phase for the slowest one's share
     * @param kvType        the element type of the KV cache that every pass of the model writes
     *                      and reads ({@link KvType}: f16 by default, as llama.cpp's)
     */
    public record Options(int kvBlockSize, long rowBlockBytes, int parallelism, long partBytes, KvType kvType) {
        public Options {
            Checks.positive("kvBlockSize", kvBlockSize);
            Checks.positive("rowBlockBytes", rowBlockBytes);
            Checks.positive("partBytes", partBytes);
            if (parallelism < 0) {
                throw new IllegalArgumentException("parallelism = " + parallelism + " must be >= 0");
            }
            if (kvType == null) {
                throw new IllegalArgumentException("kvType must not be null");
            }
        }

        /** With the {@link #DEFAULT_KV_TYPE} cache. */
        public Options(int kvBlockSize, long rowBlockBytes, int parallelism, long partBytes) {
            this(kvBlockSize, rowBlockBytes, parallelism, partBytes, DEFAULT_KV_TYPE);
        }

        /** With parts of {@link #DEFAULT_PART_BYTES} and the {@link #DEFAULT_KV_TYPE} cache. */
        public Options(int kvBlockSize, long rowBlockBytes, int parallelism) {
            this(kvBlockSize, rowBlockBytes, parallelism, DEFAULT_PART_BYTES);
        }

        /** Weight bytes per part of a matmul task by default. */
        public static final long DEFAULT_PART_BYTES = 256 << 10;

        /** The KV cache's element type by default: f16, as llama.cpp's. */
        public static final KvType DEFAULT_KV_TYPE = KvType.F16;

        public static Options defaults() {
            return new Options(16, 256 << 10, 0, DEFAULT_PART_BYTES, DEFAULT_KV_TYPE);
        }

        /**
         * The defaults with a KV block sized to the model: about {@value #KV_BLOCK_TARGET_ELEMENTS}
         * key elements per block (32 KiB of f32 keys, 16 KiB of f16), as a power of two in
         * [16, 256] positions. Attention runs a few kernel calls per KV block and head, so a
         * model with narrow KV rows (a small model's 32 elements a position) gets long blocks and
         * few calls, and a wide one keeps 16-position blocks, so paging wastes little of the
         * cache. Counted in elements, not bytes: a call's work is per element whatever the
         * cache's type, so an f16 cache has the blocks an f32 one has.
         */
        public static Options forModel(LlamaConfig config) {
            long rowElements = config.kvDim();
            int positions = (int) Math.max(16, Math.min(256, KV_BLOCK_TARGET_ELEMENTS / rowElements));
            return defaults().withKvBlockSize(Integer.highestOneBit(positions));
        }

        /** Key elements one KV block holds, about, for {@link #forModel}. */
        static final long KV_BLOCK_TARGET_ELEMENTS = 8 << 10;

        public Options withKvBlockSize(int value) {
            return new Options(value, rowBlockBytes, parallelism, partBytes, kvType);
        }

        public Options withRowBlockBytes(long value) {
            return new Options(kvBlockSize, value, parallelism, partBytes, kvType);
        }

        public Options withParallelism(int value) {
            return new Options(kvBlockSize, rowBlockBytes, value, partBytes, kvType);
        }

        public Options withPartBytes(long value) {
            return new Options(kvBlockSize, rowBlockBytes, parallelism, value, kvType);
        }

        public Options withKvType(KvType value) {
            return new Options(kvBlockSize, rowBlockBytes, parallelism, partBytes, value);
        }
    }

    private final LlamaConfig config;
    private final Options options;
    private final Architecture architecture;
    private final WorkerWeights weights;
    private final LlamaKernels kernels;
    private final PagedAttention attention;
    private final LlamaProgram program;
    /**
     * A key per matmul task, its last scalar, that the task's parts pass to
     * {@link KernelOps#matmul(TensorType, MemorySegment, long, MemorySegment, long, MemorySegment, long,
     * int, int, int, int, int, long)}: a task's input does not change while it runs, so a core that
     * takes several of its parts quantizes (or copies) the input once, not once per part.
     */
    private final AtomicLong inputKeys = new AtomicLong();

    private LlamaModel(Worker worker, LlamaWeights weights, KernelOps ops, Options options) {
        this.config = weights.config();
        this.architecture = config.architecture();
        int parallelism = options.parallelism() == 0 ? worker.device().cores() : options.parallelism();
        this.options = options.withParallelism(parallelism);
        this.weights = WorkerWeights.load(worker, weights, ops, this.options);
        this.kernels = new LlamaKernels(config, ops, this.weights, options.kvType());
        this.attention = new PagedAttention(ops, config.heads(), config.kvHeads(), config.headDim(),
                options.kvBlockSize(),
                Math.min(PagedAttention.MAX_TILE_HEADS, Math.ceilDiv(config.heads(), parallelism)),
                PagedAttention.MAX_CHUNK_ROWS,
                PagedAttention.DEFAULT_SLABS,
                architecture.attentionScale(config.headDim()),
                architecture.attentionSoftcap(),
                options.kvType());
        this.program = new LlamaProgram(this, kernels);
    }

    /** Loads {@code weights} into frozen buffers of {@code worker}, for the preferred kernels and default options. */
    public static LlamaModel load(Worker worker, LlamaWeights weights) {
        return load(worker, weights, Ops.preferred(), Options.forModel(weights.config()));
    }

    /** Loads {@code weights} into frozen buffers of {@code worker}. */
    public static LlamaModel load(Worker worker, LlamaWeights weights, KernelOps ops, Options options) {
        return new LlamaModel(worker, weights, ops, options);
    }

    public LlamaConfig config() {
        return config;
    }

    public Options options() {
        return options;
    }

    /** Bytes of the weights: the matrices in their own types, the norms in f32. */
    public long weightBytes() {
        return weights.bytes();
    }

    /** How matrix {@code tensor} of layer {@code layer} is stored on the worker ({@code layer} ignored if not per layer). */
    public TensorType weightType(Tensor tensor, int layer) {
        return weights.type(tensor, layer);
    }

    /**
     * Checks that {@code request} fits the model.
     *
     * @throws IllegalArgumentException naming the first limit broken
     */
    public void check(LlamaRequest request) {
        request.check(config);
    }

    /** Device bytes one request allocates: set {@code SessionConfig.memoryPerRequest} to at least this. */
    public long requestBytes(LlamaRequest request) {
        return program.requestBytes(request);
    }

    /** The program that decodes one {@link LlamaRequest}; it {@link #check checks} the request first. */
    public Program<LlamaRequest> program() {
        return program;
    }

    // ---- passes -----------------------------------------------------------------------------------

    /**
     * The activation buffers of passes of up to {@code maxRows} rows, of which up to
     * {@code maxLogits} need logits: what one pass writes and the next pass reuses (each
     * reuse waits, through its regions, for the readers of the previous contents).
     */
    final class Activations {
        final int maxRows;
        final int maxLogits;
        final Buffer x;
        final Buffer xn;
        final Buffer q;
        final Buffer att;
        final Buffer hb;
        final Buffer xf;
        final Buffer logits;
        final Map<Tensor, Buffer> outputs = new EnumMap<>(Tensor.class);
        final PagedAttention.Scratch scratch;

        Activations(int maxRows, int maxLogits, LongFunction<Buffer> allocate) {
            this.maxRows = maxRows;
            this.maxLogits = maxLogits;
            int dim = config.dim();
            x = allocate.apply((long) maxRows * dim * F);
            xn = allocate.apply((long) maxRows * dim * F);
            q = allocate.apply((long) maxRows * config.qDim() * F);
            att = allocate.apply((long) maxRows * config.qDim() * F);
            hb = allocate.apply((long) maxRows * config.ffnDim() * F);
            xf = allocate.apply((long) maxLogits * dim * F);
            logits = allocate.apply((long) maxLogits * config.vocab() * F);
            for (Tensor t : List.of(Tensor.WQ, Tensor.WK, Tensor.WV, Tensor.WO, Tensor.W1, Tensor.W2, Tensor.W3)) {
                outputs.put(t, allocate.apply((long) maxRows * t.rows(config) * F));
            }
            scratch = attention.allocateScratch(allocate, maxRows);
        }

        /** Slots of {@link #access}'s cache: a batch-1 step of the decoder declares about 100 accesses of these buffers. */
        private static final int ACCESS_SLOTS = 256;

        private final Access[] accesses = new Access[ACCESS_SLOTS];

        Access read(Buffer buffer, long offset, long length) {
            return access(buffer, AccessMode.READ, offset, length);
        }

        Access write(Buffer buffer, long offset, long length) {
            return access(buffer, AccessMode.WRITE, offset, length);
        }

        Access readWrite(Buffer buffer, long offset, long length) {
            return access(buffer, AccessMode.READ_WRITE, offset, length);
        }

        /**
         * The access of {@code length} bytes at {@code offset} of {@code buffer} in {@code mode},
         * made once and kept in a slot of a small cache (a record, immutable, so every step may
         * declare the same one): a decode step declares the same accesses of these buffers every
         * time, and made anew they were a sixth of its heap allocation. A slot holds the last
         * access hashed to it; the program thread that builds this pass's steps is its only user.
         */
        private Access access(Buffer buffer, AccessMode mode, long offset, long length) {
            int hash = System.identityHashCode(buffer) * 31 + Long.hashCode(offset * 31 + length) * 7 + mode.ordinal();
            int slot = (hash ^ (hash >>> 16)) & (ACCESS_SLOTS - 1);
            Access cached = accesses[slot];
            if (cached != null && cached.mode() == mode && cached.region().buffer() == buffer
                    && cached.region().offset() == offset && cached.region().length() == length) {
                return cached;
            }
            Access made = new Access(buffer.region(offset, length), mode);
            accesses[slot] = made;
            return made;
        }
    }

    /** Device bytes of the {@link Activations} of passes of {@code maxRows} rows and {@code maxLogits} logit rows. */
    long activationBytes(int maxRows, int maxLogits) {
        long[] total = new long[1];
        new Activations(maxRows, maxLogits, bytes -> {
            total[0] += bytes;
            return null;
        });
        return total[0];
    }

    /** This model through the engine's {@link ForwardPass} seam (what the {@code Batcher} builds its steps with). */
    public ForwardPass forwardPass() {
        return new LlamaForwardPass(this);
    }

    /** Bytes of one KV cache block of one layer, keys or values, in the cache's {@link Options#kvType}. */
    long kvBlockBytes() {
        return attention.blockBytes();
    }

    /**
     * Submits one forward pass: embedding, every layer, and — for {@code logitRows} — the final
     * norm and the classifier into {@code a.logits} (block-major, {@code logitRows.length} rows;
     * read them with {@link #addLogitReads}). Row {@code r} is at position {@code position[r]}
     * of the sequence whose block table is {@code rowTables[r]}: it writes its key and value to
     * that position's cache slot and attends to positions {@code [0, position[r]]}.
     *
     * @param tokenSource holds the rows' input tokens, one int each, from offset 0
     */
    void forward(Orchestrator o, Activations a, Buffer[] keys, Buffer[] values, Buffer tokenSource, int rows,
            int[] position, int[][] rowTables, int[] logitRows) {
        int dim = config.dim();
        o.submit(kernels.embed, Orchestrator.scalars(rows, dim, config.vocab()),
                weights.read(Tensor.TOKEN_EMBEDDING, 0),
                read(tokenSource.region(0, (long) rows * Integer.BYTES)),
                a.write(a.x, 0, (long) rows * dim * F));
        int[] contexts = new int[rows];
        for (int r = 0; r < rows; r++) {
            contexts[r] = position[r] + 1;
        }
        norm(o, a, Tensor.ATTENTION_NORM, 0, rows);
        for (int l = 0; l < config.layers(); l++) {
            qkv(o, a, l, rows);
            for (int r0 = 0; r0 < rows; r0 += ROW_CHUNK) {
                ropeStore(o, a, keys[l], values[l], l, rows, r0, Math.min(rows, r0 + ROW_CHUNK), position, rowTables);
            }
            attention.submit(o, a.scratch, rows, a.q, keys[l], values[l], 0, contexts, rowTables, a.att,
                    architecture.window(l));
            matmul(o, a, Tensor.WO, l, a.att, rows);
            residual(o, a, Tensor.WO, l, rows, Tensor.FFN_NORM, l);
            gateUp(o, a, l, rows);
            matmul(o, a, Tensor.W2, l, a.hb, rows);
            if (l + 1 < config.layers()) {
                residual(o, a, Tensor.W2, l, rows, Tensor.ATTENTION_NORM, l + 1);
            } else {
                residual(o, a, Tensor.W2, l, rows, null, 0);
            }
        }
        if (logitRows.length == 0) {
            return;
        }
        List<Access> accesses = new ArrayList<>();
        accesses.add(weights.read(Tensor.OUTPUT_NORM, 0));
        accesses.add(a.write(a.xf, 0, (long) logitRows.length * dim * F));
        for (int row : logitRows) {
            accesses.add(a.read(a.x, (long) row * dim * F, dim * F));
        }
        o.submit(kernels.finalNorm, Orchestrator.scalars(dim, Float.floatToRawIntBits(config.normEps())),
                accesses.toArray(Access[]::new));
        matmul(o, a, Tensor.OUTPUT, 0, a.xf, logitRows.length);
        if (architecture.logitSoftcap() > 0) {
            // Element-wise, so the classifier's block-major layout needs no gathering; readers of
            // a.logits (the sample task, the Batcher's) wait for this task through their regions.
            o.submit(kernels.logitSoftcap, Orchestrator.scalars(Float.floatToRawIntBits(architecture.logitSoftcap())),
                    a.readWrite(a.logits, 0, (long) logitRows.length * config.vocab() * F));
        }
    }

    /**
     * Adds reads of the {@code n} logit rows of the last {@link #forward}'s classifier, as
     * {@link #addBlockReads} declares them, and returns how many regions that is (the
     * {@code Pick}-style kernels take one region per block, {@link #gatherRow}).
     */
    int addLogitReads(List<Access> accesses, Activations a, int n) {
        return addBlockReads(a, accesses, a.logits, weights.blocks(Tensor.OUTPUT), n, 0, n);
    }

    private void norm(Orchestrator o, Activations a, Tensor weight, int layer, int rows) {
        int dim = config.dim();
        for (int r0 = 0; r0 < rows; r0 += ROW_CHUNK) {
            int n = Math.min(ROW_CHUNK, rows - r0);
            o.submit(kernels.rmsnorm, Orchestrator.scalars(n, dim, Float.floatToRawIntBits(config.normEps())),
                    weights.read(weight, layer),
                    a.read(a.x, (long) r0 * dim * F, (long) n * dim * F),
                    a.write(a.xn, (long) r0 * dim * F, (long) n * dim * F));
        }
    }

    /**
     * The task of {@code weight} times the first {@code rows} rows of {@code in}: one task that
     * reads the whole matrix and writes its whole block-major output, split into parts of a few
     * weight rows each that the cores share (see {@link Options#partBytes}).
     */
    private void matmul(Orchestrator o, Activations a, Tensor weight, int layer, Buffer in, int rows) {
        int cols = weight.cols(config);
        int matrixRows = weight.rows(config);
        Buffer target = weight == Tensor.OUTPUT ? a.logits : a.outputs.get(weight);
        o.submit(kernels.matmul(weight),
                Orchestrator.scalars(cols, rows, weights.kernelType(weight, layer).ordinal(), inputKeys.incrementAndGet()),
                weights.read(weight, layer),
                a.read(in, 0, (long) rows * cols * F),
                a.write(target, 0, (long) matrixRows * rows * F));
    }

    private void ropeStore(Orchestrator o, Activations a, Buffer keyCache, Buffer valueCache, int layer, int rows,
            int r0, int r1, int[] position, int[][] rowTables) {
        int n = r1 - r0;
        RowBlocks qSplit = weights.blocks(Tensor.WQ);
        RowBlocks kvSplit = weights.blocks(Tensor.WK);
        List<Access> accesses = new ArrayList<>();
        int qBlocks = addBlockReads(a, accesses, a.outputs.get(Tensor.WQ), qSplit, rows, r0, n);
        int kvBlocks = addBlockReads(a, accesses, a.outputs.get(Tensor.WK), kvSplit, rows, r0, n);
        addBlockReads(a, accesses, a.outputs.get(Tensor.WV), kvSplit, rows, r0, n);
        int qDim = config.qDim();
        accesses.add(a.write(a.q, (long) r0 * qDim * F, (long) n * qDim * F));
        // The rows' cache slots, one region per run of slots adjacent in the cache (a prompt's
        // rows fill their blocks in order): the run lengths follow the positions in the scalars.
        long slotBytes = (long) config.kvDim() * options.kvType().bytes();
        int bs = options.kvBlockSize();
        int[] runRows = new int[n];
        long[] runSlot = new long[n];
        int runs = 0;
        for (int r = r0; r < r1; r++) {
            int p = position[r];
            long slot = (long) rowTables[r][p / bs] * bs + p % bs;
            if (runs > 0 && slot == runSlot[runs - 1] + runRows[runs - 1]) {
                runRows[runs - 1]++;
            } else {
                runSlot[runs] = slot;
                runRows[runs++] = 1;
            }
        }
        for (Buffer cache : new Buffer[] {keyCache, valueCache}) {
            for (int k = 0; k < runs; k++) {
                accesses.add(write(cache.region(runSlot[k] * slotBytes, runRows[k] * slotBytes)));
            }
        }
        if (config.attentionBias()) {
            accesses.add(weights.read(Tensor.BQ, layer));
            accesses.add(weights.read(Tensor.BK, layer));
            accesses.add(weights.read(Tensor.BV, layer));
        }
        if (config.qkNorm()) {
            accesses.add(weights.read(Tensor.Q_NORM, layer));
            accesses.add(weights.read(Tensor.K_NORM, layer));
        }
        long[] scalars = new long[7 + n + runs];
        scalars[0] = n;
        scalars[1] = qBlocks;
        scalars[2] = kvBlocks;
        scalars[3] = config.heads();
        scalars[4] = config.kvHeads();
        scalars[5] = architecture.sliding(layer) ? 1 : 0;
        for (int i = 0; i < n; i++) {
            scalars[6 + i] = position[r0 + i];
        }
        scalars[6 + n] = runs;
        for (int k = 0; k < runs; k++) {
            scalars[7 + n + k] = runRows[k];
        }
        o.submit(kernels.ropeStore, scalars, accesses.toArray(Access[]::new));
    }

    /**
     * Per row chunk, {@code x += } the block-major output of {@code weight} of layer
     * {@code layer} (first rmsnormed by its post-norm where the architecture has
     * {@link Architecture#postNorms}); with a {@code norm}, the same task then writes
     * {@code xn := norm(x)} for the next matmuls (one task, not two in a row, on the critical
     * path of every layer).
     */
    private void residual(Orchestrator o, Activations a, Tensor weight, int layer, int rows, Tensor norm,
            int normLayer) {
        int dim = config.dim();
        RowBlocks split = weights.blocks(weight);
        Tensor postNorm = !architecture.postNorms() ? null
                : weight == Tensor.WO ? Tensor.ATTENTION_POST_NORM : Tensor.FFN_POST_NORM;
        int eps = Float.floatToRawIntBits(config.normEps());
        for (int r0 = 0; r0 < rows; r0 += ROW_CHUNK) {
            int n = Math.min(ROW_CHUNK, rows - r0);
            List<Access> accesses = new ArrayList<>();
            accesses.add(a.readWrite(a.x, (long) r0 * dim * F, (long) n * dim * F));
            int deltas = addBlockReads(a, accesses, a.outputs.get(weight), split, rows, r0, n);
            if (postNorm != null) {
                accesses.add(weights.read(postNorm, layer));
            }
            int post = postNorm != null ? 1 : 0;
            if (norm == null) {
                o.submit(kernels.residual, Orchestrator.scalars(n, dim, deltas, eps, post), accesses.toArray(Access[]::new));
                continue;
            }
            accesses.add(weights.read(norm, normLayer));
            accesses.add(a.write(a.xn, (long) r0 * dim * F, (long) n * dim * F));
            o.submit(kernels.residualNorm, Orchestrator.scalars(n, dim, deltas, eps, post), accesses.toArray(Access[]::new));
        }
    }

    /**
     * The q, k and v projections: task {@code k} computes row block {@code k} of each of wq, wk
     * and wv that has one (their splits differ in length when the KV heads are fewer), so a
     * layer's projections are as many tasks as the longest split instead of the three splits'
     * sum.
     */
    private void qkv(Orchestrator o, Activations a, int layer, int rows) {
        Tensor[] projections = {Tensor.WQ, Tensor.WK, Tensor.WV};
        int cols = Tensor.WQ.cols(config);
        Access[] accesses = new Access[1 + 2 * projections.length];
        long[] scalars = new long[3 + projections.length];
        accesses[0] = a.read(a.xn, 0, (long) rows * cols * F);
        scalars[0] = cols;
        scalars[1] = rows;
        for (int i = 0; i < projections.length; i++) {
            int matrixRows = projections[i].rows(config);
            scalars[2 + i] = weights.kernelType(projections[i], layer).ordinal();
            accesses[1 + 2 * i] = weights.read(projections[i], layer);
            accesses[2 + 2 * i] = a.write(a.outputs.get(projections[i]), 0, (long) matrixRows * rows * F);
        }
        scalars[2 + projections.length] = inputKeys.incrementAndGet();
        o.submit(kernels.qkv, scalars, accesses);
    }

    /**
     * The gate and up projections and their product, per shared row block of w1 and w3: one task
     * writes the block's gate and up outputs and then {@code hb}'s columns of the block, so the
     * product needs no task of its own.
     */
    private void gateUp(Orchestrator o, Activations a, int layer, int rows) {
        int cols = Tensor.W1.cols(config);
        int ffn = config.ffnDim();
        o.submit(kernels.gateUp, Orchestrator.scalars(cols, rows, weights.kernelType(Tensor.W1, layer).ordinal(),
                        weights.kernelType(Tensor.W3, layer).ordinal(), inputKeys.incrementAndGet()),
                weights.read(Tensor.W1, layer),
                weights.read(Tensor.W3, layer),
                a.read(a.xn, 0, (long) rows * cols * F),
                a.write(a.outputs.get(Tensor.W1), 0, (long) ffn * rows * F),
                a.write(a.outputs.get(Tensor.W3), 0, (long) ffn * rows * F),
                a.write(a.hb, 0, (long) rows * ffn * F));
    }

    /**
     * Reads rows {@code [r0, r0 + n)} of every block of a block-major output of {@code rows} rows,
     * a region per block, and returns how many regions it added. A pass of one row is the plain
     * layout, its blocks side by side: one region of the whole output, which the kernels read as
     * one block. (At batch 1 on the large Q8_0 shape, a layer's rope_store and residual tasks read
     * 5 regions instead of 24, and the sample task one instead of one per classifier block: one
     * dependency lookup each on the host, which builds the next step on one of the cores'
     * processors.)
     */
    private static int addBlockReads(Activations a, List<Access> accesses, Buffer output, RowBlocks split, int rows, int r0, int n) {
        if (rows == 1) {
            accesses.add(a.read(output, 0, (long) split.rows() * F));
            return 1;
        }
        for (int k = 0; k < split.count(); k++) {
            accesses.add(a.read(output, split.offset(k, rows, r0), split.length(k, n)));
        }
        return split.count();
    }
}
