package dev.tandem.llm;

import static dev.tandem.Access.read;
import static dev.tandem.Access.readWrite;
import static dev.tandem.Access.write;

import dev.tandem.Access;
import dev.tandem.AccessMode;
import dev.tandem.Buffer;
import dev.tandem.Kernel;
import dev.tandem.Orchestrator;
import dev.tandem.Program;
import dev.tandem.TaskContext;
import dev.tandem.Worker;
import dev.tandem.kernels.KernelOps;
import dev.tandem.kernels.MatmulOps;
import dev.tandem.kernels.Ops;
import dev.tandem.kernels.TensorType;
import dev.tandem.llm.LlamaWeights.Tensor;
import dev.tandem.llm.sampling.Sampler;
import dev.tandem.llm.sampling.SamplerConfig;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongFunction;

/**
 * A Llama-style decoder on a worker: its weights in frozen worker buffers, and the program that
 * decodes a {@link LlamaRequest} (a batch of sequences) step by step.
 *
 * <h2>Implementation Overview</h2>
 *
 * <p>A step is one forward pass over a list of <em>rows</em>, each a sequence at a position:
 * step 0 (prefill) has one row per prompt token of every sequence, each later step one row per
 * sequence. Per request, the KV cache is paged: blocks of {@link Options#kvBlockSize} positions
 * in request memory, one block table per sequence (blocks of different sequences interleave).
 * The host knows every row's sequence and position, so it knows which cache slot each task
 * writes and which blocks each reads; tokens stay on the device (a step's sample task writes the
 * next step's input tokens), and the host never waits for them.
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
 *                                           slots of the rows := rope(k rows), v rows
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
 *   sample                                  out[b] := token (or FINISHED after the stop token);
 *                                           input[b] := the next step's input token
 *   endStep(out)
 * </pre>
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

    /** The value of a sequence's token before its first step. */
    private static final int NO_TOKEN = -2;

    private static final long F = Float.BYTES;
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

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
     */
    public record Options(int kvBlockSize, long rowBlockBytes, int parallelism, long partBytes) {
        public Options {
            Checks.positive("kvBlockSize", kvBlockSize);
            Checks.positive("rowBlockBytes", rowBlockBytes);
            Checks.positive("partBytes", partBytes);
            if (parallelism < 0) {
                throw new IllegalArgumentException("parallelism = " + parallelism + " must be >= 0");
            }
        }

        /** With parts of {@link #DEFAULT_PART_BYTES}. */
        public Options(int kvBlockSize, long rowBlockBytes, int parallelism) {
            this(kvBlockSize, rowBlockBytes, parallelism, DEFAULT_PART_BYTES);
        }

        /** Weight bytes per part of a matmul task by default. */
        public static final long DEFAULT_PART_BYTES = 256 << 10;

        public static Options defaults() {
            return new Options(16, 256 << 10, 0, DEFAULT_PART_BYTES);
        }

        /**
         * The defaults with a KV block sized to the model: about {@value #KV_BLOCK_TARGET_BYTES}
         * bytes of keys per block, as a power of two in [16, 256] positions. Attention runs a
         * few tasks per KV block, so a model with narrow KV rows (a small model's 32 floats a
         * position) gets long blocks and few tasks, and a wide one keeps 16-position blocks, so
         * paging wastes little of the cache.
         */
        public static Options forModel(LlamaConfig config) {
            long rowBytes = (long) config.kvDim() * Float.BYTES;
            int positions = (int) Math.max(16, Math.min(256, KV_BLOCK_TARGET_BYTES / rowBytes));
            return defaults().withKvBlockSize(Integer.highestOneBit(positions));
        }

        /** Bytes of keys one KV block holds, about, for {@link #forModel}. */
        static final long KV_BLOCK_TARGET_BYTES = 32 << 10;

        public Options withKvBlockSize(int value) {
            return new Options(value, rowBlockBytes, parallelism, partBytes);
        }

        public Options withRowBlockBytes(long value) {
            return new Options(kvBlockSize, value, parallelism, partBytes);
        }

        public Options withParallelism(int value) {
            return new Options(kvBlockSize, rowBlockBytes, value, partBytes);
        }

        public Options withPartBytes(long value) {
            return new Options(kvBlockSize, rowBlockBytes, parallelism, value);
        }
    }

    private final LlamaConfig config;
    private final KernelOps ops;
    private final Options options;
    private final Map<Tensor, RowBlocks> blocks = new EnumMap<>(Tensor.class);
    /** Per matrix, the parts its matmul task splits into: {@link RowBlocks#parts} triples. */
    private final Map<Tensor, int[]> parts = new EnumMap<>(Tensor.class);
    /** The matmul kernel of each matrix that has tasks of its own (see {@link #FUSED_PROJECTIONS}). */
    private final Map<Tensor, Kernel> matmuls = new EnumMap<>(Tensor.class);
    /**
     * Every weight buffer's read (the whole frozen buffer), per copy (layer), made once at load:
     * steps declare the same ones every time (a batch-1 decode step of the large shape about 75),
     * and an {@link Access} and its {@link dev.tandem.Region} are immutable.
     */
    private final Map<Tensor, Access[]> weightReads = new EnumMap<>(Tensor.class);

    /** Matrices computed inside the {@code matmul_qkv} and {@code matmul_w1_w3} tasks, not by {@link #matmul}. */
    private static final Set<Tensor> FUSED_PROJECTIONS =
            EnumSet.of(Tensor.WQ, Tensor.WK, Tensor.WV, Tensor.W1, Tensor.W3);
    private final PagedAttention attention;
    /** The rotation of the global layers, and of the sliding ones ({@link Architecture#sliding}). */
    private final Rope rope;
    private final Rope slidingRope;
    private final Architecture architecture;
    /**
     * How each matrix of each layer is stored ({@link LlamaWeights#type}; one entry for a tensor
     * not per layer); the classifier's is the embedding's when tied. A task's kernel reads its
     * weights' type from the task's scalars, so the layers of one matrix may differ.
     */
    private final Map<Tensor, WeightType[]> types = new EnumMap<>(Tensor.class);
    private final Kernel embed;
    private final Kernel rmsnorm;
    private final Kernel ropeStore;
    private final Kernel residual;
    private final Kernel residualNorm;
    private final Kernel gateUp;
    private final Kernel qkv;
    private final Kernel finalNorm;
    private final Kernel sample;
    private final Kernel logitSoftcap;
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
        long dimBytes = (long) config.dim() * F;
        this.rowScratch = ThreadLocal.withInitial(() -> java.lang.foreign.Arena.ofAuto().allocate(dimBytes, 64));
        this.ops = ops;
        int parallelism = options.parallelism() == 0 ? worker.device().cores() : options.parallelism();
        this.options = options.withParallelism(parallelism);
        float[] ropeFactors = null;
        Map<Tensor, Buffer[]> buffers = new EnumMap<>(Tensor.class); // kept as weightReads
        List<Runnable> fills = new ArrayList<>(); // each buffer's copy or interleave, run by fillAll
        for (Tensor tensor : Tensor.values()) {
            if (!tensor.present(config)) {
                continue;
            }
            if (tensor == Tensor.ROPE_FREQS) {
                ropeFactors = weights.tensor(tensor, 0).toArray(ValueLayout.JAVA_FLOAT_UNALIGNED
                        .withOrder(ByteOrder.LITTLE_ENDIAN));
                continue;
            }
            int copies = tensor.perLayer() ? config.layers() : 1;
            Buffer[] array = new Buffer[copies];
            if (!tensor.norm()) {
                Tensor typeSource = tensor == Tensor.OUTPUT && config.tiedEmbeddings() ? Tensor.TOKEN_EMBEDDING : tensor;
                WeightType[] perLayer = new WeightType[copies];
                for (int l = 0; l < copies; l++) {
                    perLayer[l] = weights.type(typeSource, l);
                }
                types.put(tensor, perLayer);
            }
            for (int l = 0; l < copies; l++) {
                boolean interleave = !tensor.norm() && interleaved(tensor, types.get(tensor)[l]);
                if (tensor == Tensor.OUTPUT && config.tiedEmbeddings() && !interleave) {
                    array[l] = buffers.get(Tensor.TOKEN_EMBEDDING)[0];
                    continue;
                }
                Tensor source = tensor == Tensor.OUTPUT && config.tiedEmbeddings() ? Tensor.TOKEN_EMBEDDING : tensor;
                long bytes = tensor.norm() ? tensor.bytes(config) : tensor.bytes(config, types.get(tensor)[l]);
                MemorySegment bytesIn = weights.tensor(source, l);
                if (bytesIn.byteSize() != bytes) {
                    throw new IllegalArgumentException("weights: " + source + " of layer " + l + " has "
                            + bytesIn.byteSize() + " bytes, expected " + bytes);
                }
                Buffer buffer = worker.allocate(bytes);
                int layer = l;
                WeightType type = interleave ? types.get(tensor)[l] : null;
                fills.add(() -> {
                    if (type != null) {
                        try {
                            ops.interleave(type.tensorType(), bytesIn, 0, buffer.hostSegment(), 0,
                                    tensor.rows(config), tensor.cols(config));
                        } catch (IllegalArgumentException e) { // an f16 infinity or NaN: see QuantOps.interleaveF16
                            throw new IllegalArgumentException("weights: " + source + " of layer " + layer + ": "
                                    + e.getMessage(), e);
                        }
                    } else {
                        buffer.hostSegment().copyFrom(bytesIn);
                    }
                    buffer.freeze();
                });
                array[l] = buffer;
            }
            buffers.put(tensor, array);
            Access[] reads = new Access[copies];
            for (int l = 0; l < copies; l++) {
                reads[l] = read(array[l]);
            }
            weightReads.put(tensor, reads);
        }
        fillAll(fills);
        // One split of each matrix's rows for every layer (the block-major outputs that later
        // tasks read must not change shape between layers), sized by its widest rows; the gate and
        // up projections share theirs, since one task computes a block of both.
        for (Tensor tensor : types.keySet()) {
            if (tensor != Tensor.TOKEN_EMBEDDING) {
                Tensor[] sharing = tensor == Tensor.W1 || tensor == Tensor.W3
                        ? new Tensor[] {Tensor.W1, Tensor.W3} : new Tensor[] {tensor};
                long rowBytes = widestRowBytes(sharing);
                int align = 1;
                for (Tensor t : sharing) {
                    for (WeightType type : types.get(t)) {
                        if (interleaved(t, type)) {
                            align = Math.max(align, type.blockSize() == 1 // f32, f16, bf16
                                    ? MatmulOps.F32_X16_PASS_ROWS : TensorType.X16_ROWS);
                        }
                    }
                }
                RowBlocks split = RowBlocks.of(tensor.rows(config), rowBytes, options.rowBlockBytes(), parallelism, align);
                blocks.put(tensor, split);
                // Gate and up rows are computed together: a part's bytes are both matrices' rows.
                long partRowBytes = tensor == Tensor.W1 || tensor == Tensor.W3 ? 2 * rowBytes : rowBytes;
                int partRows = (int) Math.max(1, Math.min(Integer.MAX_VALUE, options.partBytes() / partRowBytes));
                parts.put(tensor, split.parts(Math.ceilDiv(partRows, align) * align));
            }
        }
        for (Tensor tensor : types.keySet()) {
            if (!tensor.norm() && tensor != Tensor.TOKEN_EMBEDDING && !FUSED_PROJECTIONS.contains(tensor)) {
                matmuls.put(tensor, matmulKernel(tensor));
            }
        }
        this.rope = new Rope(config, ropeFactors);
        this.slidingRope = Rope.sliding(config, ropeFactors);
        this.attention = new PagedAttention(ops, config.heads(), config.kvHeads(), config.headDim(),
                options.kvBlockSize(),
                Math.min(PagedAttention.MAX_TILE_HEADS, Math.ceilDiv(config.heads(), parallelism)),
                PagedAttention.MAX_CHUNK_ROWS,
                PagedAttention.DEFAULT_SLABS,
                architecture.attentionScale(config.headDim()),
                architecture.attentionSoftcap());
        this.embed = embedKernel();
        this.rmsnorm = rmsnormKernel();
        this.ropeStore = ropeStoreKernel();
        this.residual = residualKernel();
        this.residualNorm = residualNormKernel();
        this.gateUp = gateUpKernel();
        this.qkv = qkvKernel();
        this.finalNorm = finalNormKernel();
        this.sample = sampleKernel();
        this.logitSoftcap = logitSoftcapKernel();
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

    /** The bytes of the widest row of {@code tensors} in any layer. */
    private long widestRowBytes(Tensor... tensors) {
        long widest = 0;
        for (Tensor t : tensors) {
            for (WeightType type : types.get(t)) {
                widest = Math.max(widest, type.rowBytes(t.cols(config)));
            }
        }
        return widest;
    }

    /**
     * Runs the weight buffers' copies and interleavings, several at a time, and returns when all
     * are done; the first failure in load order is rethrown. Each reads its own tensor and writes
     * its own buffer. On one thread the interleaving ran at 1.3-1.7 ns a byte once compiled (a
     * model of several GB took seconds to load); the buffers are independent, so they share the
     * machine's processors (virtual threads: the JDK's scheduler runs as many at once as there are
     * processors).
     */
    private static void fillAll(List<Runnable> fills) {
        List<Future<?>> done = new ArrayList<>(fills.size());
        try (ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor()) {
            for (Runnable fill : fills) {
                done.add(executor.submit(fill));
            }
        }
        for (Future<?> future : done) {
            try {
                future.get();
            } catch (ExecutionException e) {
                if (e.getCause() instanceof RuntimeException failure) {
                    throw failure;
                }
                if (e.getCause() instanceof Error error) {
                    throw error;
                }
                throw new IllegalStateException(e.getCause());
            } catch (InterruptedException | CancellationException e) { // close() cancels them when interrupted
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while loading the weights", e);
            }
        }
    }

    /**
     * Whether the model keeps matrix {@code tensor}, stored as {@code type}, in an interleaved
     * layout ({@link TensorType#Q4_0_X16}, {@link TensorType#Q4_K_X16}, {@link TensorType#Q8_0_X16},
     * {@link TensorType#Q6_K_X16}, {@link TensorType#F32_X16}, {@link TensorType#F16_X16},
     * {@link TensorType#BF16_X16}): every matrix
     * it multiplies (the classifier too, in a copy of its own when tied to the embedding, which
     * keeps its file layout for its row look-ups).
     */
    static boolean interleaved(Tensor tensor, WeightType type) {
        return type.tensorType().interleaved() != null && tensor != Tensor.TOKEN_EMBEDDING;
    }

    /** The layout the matmul kernel of {@code tensor} of {@code layer} reads. */
    private TensorType kernelType(Tensor tensor, int layer) {
        WeightType type = weightType(tensor, layer);
        return interleaved(tensor, type) ? type.tensorType().interleaved() : type.tensorType();
    }

    /** Bytes of the weights: the matrices in their own types, the norms in f32. */
    public long weightBytes() {
        return config.weightBytes(this::weightType);
    }

    /** The read of the whole of weight {@code tensor}'s copy {@code copy} (its layer, or 0). */
    private Access weightRead(Tensor tensor, int copy) {
        return weightReads.get(tensor)[copy];
    }

    /** How matrix {@code tensor} of layer {@code layer} is stored on the worker ({@code layer} ignored if not per layer). */
    public WeightType weightType(Tensor tensor, int layer) {
        if (tensor.norm()) {
            throw new IllegalArgumentException(tensor + " is an f32 vector, not a matrix");
        }
        WeightType[] perLayer = types.get(tensor);
        return perLayer[tensor.perLayer() ? layer : 0];
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
        long[] total = new long[1];
        new RequestState(request, bytes -> {
            total[0] += bytes;
            return null;
        });
        return total[0];
    }

    /** The program that decodes one {@link LlamaRequest}; it {@link #check checks} the request first. */
    public Program<LlamaRequest> program() {
        return (o, request) -> {
            check(request);
            RequestState state = new RequestState(request, o::allocate);
            state.prefill(o);
            for (int k = 1; k < request.maxTokens(); k++) {
                state.decode(o, k);
            }
        };
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

    /** Bytes of one KV cache block of one layer, keys or values. */
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
        o.submit(embed, Orchestrator.scalars(rows, dim, config.vocab()),
                weightRead(Tensor.TOKEN_EMBEDDING, 0),
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
        accesses.add(weightRead(Tensor.OUTPUT_NORM, 0));
        accesses.add(a.write(a.xf, 0, (long) logitRows.length * dim * F));
        for (int row : logitRows) {
            accesses.add(a.read(a.x, (long) row * dim * F, dim * F));
        }
        o.submit(finalNorm, Orchestrator.scalars(dim, Float.floatToRawIntBits(config.normEps())),
                accesses.toArray(Access[]::new));
        matmul(o, a, Tensor.OUTPUT, 0, a.xf, logitRows.length);
        if (architecture.logitSoftcap() > 0) {
            // Element-wise, so the classifier's block-major layout needs no gathering; readers of
            // a.logits (the sample task, the Batcher's) wait for this task through their regions.
            o.submit(logitSoftcap, Orchestrator.scalars(Float.floatToRawIntBits(architecture.logitSoftcap())),
                    a.readWrite(a.logits, 0, (long) logitRows.length * config.vocab() * F));
        }
    }

    /**
     * Adds reads of the {@code n} logit rows of the last {@link #forward}'s classifier, as
     * {@link #addBlockReads} declares them, and returns how many regions that is (the
     * {@code Pick}-style kernels take one region per block, {@link #gatherRow}).
     */
    int addLogitReads(List<Access> accesses, Activations a, int n) {
        return addBlockReads(a, accesses, a.logits, blocks.get(Tensor.OUTPUT), n, 0, n);
    }

    private void norm(Orchestrator o, Activations a, Tensor weight, int layer, int rows) {
        int dim = config.dim();
        for (int r0 = 0; r0 < rows; r0 += ROW_CHUNK) {
            int n = Math.min(ROW_CHUNK, rows - r0);
            o.submit(rmsnorm, Orchestrator.scalars(n, dim, Float.floatToRawIntBits(config.normEps())),
                    weightRead(weight, layer),
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
        o.submit(matmuls.get(weight),
                Orchestrator.scalars(cols, rows, kernelType(weight, layer).ordinal(), inputKeys.incrementAndGet()),
                weightRead(weight, layer),
                a.read(in, 0, (long) rows * cols * F),
                a.write(target, 0, (long) matrixRows * rows * F));
    }

    private void ropeStore(Orchestrator o, Activations a, Buffer keyCache, Buffer valueCache, int layer, int rows,
            int r0, int r1, int[] position, int[][] rowTables) {
        int n = r1 - r0;
        RowBlocks qSplit = blocks.get(Tensor.WQ);
        RowBlocks kvSplit = blocks.get(Tensor.WK);
        List<Access> accesses = new ArrayList<>();
        int qBlocks = addBlockReads(a, accesses, a.outputs.get(Tensor.WQ), qSplit, rows, r0, n);
        int kvBlocks = addBlockReads(a, accesses, a.outputs.get(Tensor.WK), kvSplit, rows, r0, n);
        addBlockReads(a, accesses, a.outputs.get(Tensor.WV), kvSplit, rows, r0, n);
        int qDim = config.qDim();
        accesses.add(a.write(a.q, (long) r0 * qDim * F, (long) n * qDim * F));
        // The rows' cache slots, one region per run of slots adjacent in the cache (a prompt's
        // rows fill their blocks in order): the run lengths follow the positions in the scalars.
        long slotBytes = (long) config.kvDim() * F;
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
            accesses.add(weightRead(Tensor.BQ, layer));
            accesses.add(weightRead(Tensor.BK, layer));
            accesses.add(weightRead(Tensor.BV, layer));
        }
        if (config.qkNorm()) {
            accesses.add(weightRead(Tensor.Q_NORM, layer));
            accesses.add(weightRead(Tensor.K_NORM, layer));
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
        o.submit(ropeStore, scalars, accesses.toArray(Access[]::new));
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
        RowBlocks split = blocks.get(weight);
        Tensor postNorm = !architecture.postNorms() ? null
                : weight == Tensor.WO ? Tensor.ATTENTION_POST_NORM : Tensor.FFN_POST_NORM;
        int eps = Float.floatToRawIntBits(config.normEps());
        for (int r0 = 0; r0 < rows; r0 += ROW_CHUNK) {
            int n = Math.min(ROW_CHUNK, rows - r0);
            List<Access> accesses = new ArrayList<>();
            accesses.add(a.readWrite(a.x, (long) r0 * dim * F, (long) n * dim * F));
            int deltas = addBlockReads(a, accesses, a.outputs.get(weight), split, rows, r0, n);
            if (postNorm != null) {
                accesses.add(weightRead(postNorm, layer));
            }
            int post = postNorm != null ? 1 : 0;
            if (norm == null) {
                o.submit(residual, Orchestrator.scalars(n, dim, deltas, eps, post), accesses.toArray(Access[]::new));
                continue;
            }
            accesses.add(weightRead(norm, normLayer));
            accesses.add(a.write(a.xn, (long) r0 * dim * F, (long) n * dim * F));
            o.submit(residualNorm, Orchestrator.scalars(n, dim, deltas, eps, post), accesses.toArray(Access[]::new));
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
            scalars[2 + i] = kernelType(projections[i], layer).ordinal();
            accesses[1 + 2 * i] = weightRead(projections[i], layer);
            accesses[2 + 2 * i] = a.write(a.outputs.get(projections[i]), 0, (long) matrixRows * rows * F);
        }
        scalars[2 + projections.length] = inputKeys.incrementAndGet();
        o.submit(qkv, scalars, accesses);
    }

    /**
     * The gate and up projections and their product, per shared row block of w1 and w3: one task
     * writes the block's gate and up outputs and then {@code hb}'s columns of the block, so the
     * product needs no task of its own.
     */
    private void gateUp(Orchestrator o, Activations a, int layer, int rows) {
        int cols = Tensor.W1.cols(config);
        int ffn = config.ffnDim();
        o.submit(gateUp, Orchestrator.scalars(cols, rows, kernelType(Tensor.W1, layer).ordinal(),
                        kernelType(Tensor.W3, layer).ordinal(), inputKeys.incrementAndGet()),
                weightRead(Tensor.W1, layer),
                weightRead(Tensor.W3, layer),
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

    // ---- one request ----------------------------------------------------------------------------

    /** The buffers, block tables and pass builder of one request. Program thread only. */
    private final class RequestState {
        final LlamaRequest request;
        final int batch;
        final int[][] tables;
        final int[] promptLengths;
        final Buffer promptTokens;
        final Buffer input;
        final Buffer out;
        final Buffer probs;
        final Activations a;
        final Buffer[] keys;
        final Buffer[] values;
        /** With a {@link LlamaRequest#sampler()}: the sample kernel of this request, holding one sampler per sequence. */
        final Kernel samplerKernel;

        RequestState(LlamaRequest request, LongFunction<Buffer> allocate) {
            this.request = request;
            this.batch = request.batch();
            int bs = options.kvBlockSize();
            int prompt = 0;
            promptLengths = new int[batch];
            int[] blockCounts = new int[batch];
            int cacheBlocks = 0;
            for (int b = 0; b < batch; b++) {
                promptLengths[b] = request.promptLength(b);
                prompt += promptLengths[b];
                blockCounts[b] = Math.ceilDiv(promptLengths[b] + request.maxTokens(), bs);
                cacheBlocks += blockCounts[b];
            }
            // Blocks of different sequences interleave: block j of every sequence, then block j + 1.
            this.tables = new int[batch][];
            for (int b = 0; b < batch; b++) {
                tables[b] = new int[blockCounts[b]];
            }
            int next = 0;
            for (int j = 0; next < cacheBlocks; j++) {
                for (int b = 0; b < batch; b++) {
                    if (j < blockCounts[b]) {
                        tables[b][j] = next++;
                    }
                }
            }
            promptTokens = allocate.apply((long) prompt * Integer.BYTES);
            input = allocate.apply((long) batch * Integer.BYTES);
            out = allocate.apply((long) batch * Integer.BYTES + (long) batch * request.logprobsBytes()
                    + (long) batch * config.vocab() * F);
            probs = allocate.apply(config.vocab() * F);
            a = new Activations(Math.max(prompt, batch), batch, allocate);
            keys = new Buffer[config.layers()];
            values = new Buffer[config.layers()];
            long cacheBytes = (long) cacheBlocks * attention.blockBytes();
            for (int l = 0; l < config.layers(); l++) {
                keys[l] = allocate.apply(cacheBytes);
                values[l] = allocate.apply(cacheBytes);
            }
            samplerKernel = request.sampler() == null ? null : samplerKernel(request);
        }

        /** Step 0: every prompt token of every sequence, then each sequence's first token. */
        void prefill(Orchestrator o) {
            int rows = 0;
            for (int length : promptLengths) {
                rows += length;
            }
            int[] position = new int[rows];
            int[][] rowTables = new int[rows][];
            int[] logitRows = new int[batch];
            MemorySegment tokens = MemorySegment.ofArray(new int[rows]);
            int r = 0;
            for (int b = 0; b < batch; b++) {
                int[] prompt = request.prompt(b);
                for (int p = 0; p < prompt.length; p++) {
                    position[r] = p;
                    rowTables[r] = tables[b];
                    tokens.setAtIndex(I32, r, prompt[p]);
                    r++;
                }
                logitRows[b] = r - 1;
            }
            o.upload(promptTokens.region(0, (long) rows * Integer.BYTES), tokens);
            int[] none = new int[batch];
            Arrays.fill(none, NO_TOKEN);
            o.upload(out.region(0, (long) batch * Integer.BYTES), MemorySegment.ofArray(none));
            step(o, 0, promptTokens, rows, position, rowTables, logitRows);
        }

        /** Step {@code k >= 1}: one row per sequence, at the position after its previous token. */
        void decode(Orchestrator o, int k) {
            int[] position = new int[batch];
            int[] rows = new int[batch];
            for (int b = 0; b < batch; b++) {
                position[b] = promptLengths[b] + k - 1;
                rows[b] = b;
            }
            step(o, k, input, batch, position, tables, rows);
        }

        private void step(Orchestrator o, int step, Buffer tokenSource, int rows, int[] position, int[][] rowTables,
                int[] logitRows) {
            forward(o, a, keys, values, tokenSource, rows, position, rowTables, logitRows);
            submitSample(o, step);
            o.endStep(request.logits() ? out.region()
                    : out.region(0, (long) batch * (Integer.BYTES + request.logprobsBytes())));
        }

        private void submitSample(Orchestrator o, int step) {
            List<Access> accesses = new ArrayList<>();
            int logitRegions = addLogitReads(accesses, a, batch);
            accesses.add(readWrite(out.region()));
            accesses.add(write(input.region()));
            accesses.add(write(probs.region()));
            Sampling s = request.sampling();
            o.submit(samplerKernel != null ? samplerKernel : sample, Orchestrator.scalars(batch, logitRegions,
                            request.stopToken(), step, Float.floatToRawIntBits(s.temperature()),
                            Float.floatToRawIntBits(s.topP()), s.seed()),
                    accesses.toArray(Access[]::new));
        }

        /**
         * The sample kernel of {@link #sampleKernel()} with the full sampler chain: one {@link Sampler}
         * per sequence, fed its prompt, drawing token {@code k} at step {@code k}. The samplers' state
         * lives on the heap, not in a region; the sample tasks of successive steps are ordered by
         * their read-write of {@code out}, so each sees the one before it.
         */
        private Kernel samplerKernel(LlamaRequest request) {
            int vocab = config.vocab();
            Sampler[] samplers = new Sampler[batch];
            for (int b = 0; b < batch; b++) {
                SamplerConfig sc = request.sampler();
                samplers[b] = new Sampler(b == 0 ? sc : sc.toBuilder().seed(sc.seed() + b).build(), vocab,
                        request.grammar() == null ? null : request.grammar().matcher(), request.topLogprobs());
                samplers[b].acceptPrompt(request.prompt(b));
            }
            int recordBytes = request.logprobsBytes();
            long logitsAt = (long) batch * (Integer.BYTES + recordBytes);
            if (recordBytes == 0) {
                return Kernel.of("sample", c -> {
                    int n = (int) c.scalar(0);
                    int blockCount = (int) c.scalar(1);
                    int stop = (int) c.scalar(2);
                    sampleEach(c, n, blockCount, stop, vocab, logitsAt, (out, row, b) -> samplers[b].sample(out, row));
                });
            }
            // With logprobs: each sequence's record follows the token ints (a FINISHED sequence's stays as it was).
            return Kernel.of("sample", c -> {
                int n = (int) c.scalar(0);
                int blockCount = (int) c.scalar(1);
                int stop = (int) c.scalar(2);
                sampleEach(c, n, blockCount, stop, vocab, logitsAt, (out, row, b) -> {
                    int token = samplers[b].sample(out, row);
                    samplers[b].lastLogprobs().writeTo(out, request.logprobsAt(b));
                    return token;
                });
            });
        }
    }
    // ---- kernels --------------------------------------------------------------------------------
    // Each reads its shapes from its scalars and its memory from its regions, as the builders above
    // lay them out; the byte size of a block-major region gives the block's rows.

    /**
     * Regions: the matrix (read), input [n, cols] (read), the block-major output (write).
     * Scalars: cols, n, the weights' kernel {@link TensorType} ordinal, the task's input key. One part per entry of the
     * matrix's part table.
     */
    private Kernel matmulKernel(Tensor tensor) {
        RowBlocks split = blocks.get(tensor);
        int[] table = parts.get(tensor);
        return Kernel.ofParts("matmul_" + tensor.name().toLowerCase(Locale.ROOT), c -> table.length / 3,
                c -> projectPart(TENSOR_TYPES[(int) c.scalar(2)], split, table, c.part(), c.region(0), c.region(1),
                        c.region(2), (int) c.scalar(0), (int) c.scalar(1), c.scalar(3)));
    }

    /**
     * Part {@code part} of a matmul: the rows of one row block that {@code table} gives it, of
     * the whole matrix {@code weights}, into the whole block-major {@code out}. {@code inputKey} is
     * the task's own ({@link #inputKeys}): the parts a core takes of one task quantize or copy
     * {@code in} once.
     */
    private void projectPart(TensorType type, RowBlocks split, int[] table, int part, MemorySegment weights,
            MemorySegment in, MemorySegment out, int cols, int n, long inputKey) {
        int block = table[3 * part];
        ops.matmul(type, weights, split.start(block) * type.rowBytes(cols), in, 0, out,
                split.offset(block, n, 0), split.size(block), cols, n, table[3 * part + 1], table[3 * part + 2],
                inputKey);
    }

    private static final TensorType[] TENSOR_TYPES = TensorType.values();

    /**
     * Regions: table (read), tokens [n] (read), x [n, dim] (write). Scalars: n, dim, vocab. Each
     * row is multiplied by the architecture's {@link Architecture#embeddingScale} (Gemma).
     */
    private Kernel embedKernel() {
        WeightType type = weightType(Tensor.TOKEN_EMBEDDING, 0);
        float scale = architecture.embeddingScale();
        return Kernel.of("embed", c -> {
            int n = (int) c.scalar(0);
            int dim = (int) c.scalar(1);
            int vocab = (int) c.scalar(2);
            MemorySegment table = c.region(0);
            MemorySegment tokens = c.region(1);
            MemorySegment x = c.region(2);
            for (int r = 0; r < n; r++) {
                int token = tokens.getAtIndex(I32, r);
                ops.embed(type.tensorType(), table, 0, x, (long) r * dim * F, vocab, dim, token);
                if (scale != 1f) {
                    for (long i = (long) r * dim; i < (long) (r + 1) * dim; i++) {
                        x.set(F32, i * F, x.get(F32, i * F) * scale);
                    }
                }
            }
        });
    }

    /** Regions: weight (read), x rows (read), out rows (write). Scalars: n, dim, eps bits. */
    private Kernel rmsnormKernel() {
        return Kernel.of("rmsnorm", c -> {
            int n = (int) c.scalar(0);
            int dim = (int) c.scalar(1);
            float eps = Float.intBitsToFloat((int) c.scalar(2));
            for (int r = 0; r < n; r++) {
                ops.rmsnorm(c.region(1), r * dim * F, c.region(0), 0, c.region(2), r * dim * F, dim, eps);
            }
        });
    }

    /**
     * Regions: the n rows of each q block, k block and v block (read), q rows (write), the m runs
     * of key slots, the m runs of value slots (write; a run is rows whose slots are adjacent in the
     * cache); then, with biases, bq, bk, bv (read); then, with q/k norms, the q and k norm weights
     * (read). Scalars: n, q blocks, kv blocks, heads, kvHeads, whether the layer slides (1:
     * {@link #slidingRope}, 0: {@link #rope}; each holds its frequencies), the n positions, m, and
     * the rows of each run.
     *
     * <p>Per row: gather q, k, v from the block-major matmul outputs; add the biases; rmsnorm each
     * head of q and k; rotate q and k; store k and v in their cache slots.
     */
    private Kernel ropeStoreKernel() {
        int headDim = config.headDim();
        int qDim = config.qDim();
        int kvDim = config.kvDim();
        boolean bias = config.attentionBias();
        boolean qkNorm = config.qkNorm();
        float eps = config.normEps();
        return Kernel.of("rope_store", c -> {
            int n = (int) c.scalar(0);
            int qBlocks = (int) c.scalar(1);
            int kvBlocks = (int) c.scalar(2);
            int heads = (int) c.scalar(3);
            int kvHeads = (int) c.scalar(4);
            Rope layerRope = c.scalar(5) != 0 ? slidingRope : rope;
            int qRows = qBlocks + 2 * kvBlocks;
            int runs = (int) c.scalar(6 + n);
            int extra = qRows + 1 + 2 * runs;
            MemorySegment q = c.region(qRows);
            int run = 0;
            int runStart = 0; // the chunk's row at the start of the run
            for (int i = 0; i < n; i++) {
                if (i - runStart == c.scalar(7 + n + run)) {
                    runStart = i;
                    run++;
                }
                int position = (int) c.scalar(6 + i);
                long qAt = (long) i * qDim * F;
                long kvAt = (long) (i - runStart) * kvDim * F;
                MemorySegment key = c.region(qRows + 1 + run);
                MemorySegment value = c.region(qRows + 1 + runs + run);
                gatherRow(c, 0, qBlocks, n, i, q, qAt);
                gatherRow(c, qBlocks, kvBlocks, n, i, key, kvAt);
                gatherRow(c, qBlocks + kvBlocks, kvBlocks, n, i, value, kvAt);
                if (bias) {
                    ops.residualAdd(q, qAt, c.region(extra), 0, qDim);
                    ops.residualAdd(key, kvAt, c.region(extra + 1), 0, kvDim);
                    ops.residualAdd(value, kvAt, c.region(extra + 2), 0, kvDim);
                }
                if (qkNorm) {
                    int normAt = extra + (bias ? 3 : 0);
                    for (int h = 0; h < heads; h++) {
                        long at = qAt + (long) h * headDim * F;
                        ops.rmsnorm(q, at, c.region(normAt), 0, q, at, headDim, eps);
                    }
                    for (int h = 0; h < kvHeads; h++) {
                        long at = kvAt + (long) h * headDim * F;
                        ops.rmsnorm(key, at, c.region(normAt + 1), 0, key, at, headDim, eps);
                    }
                }
                Rope.Angles angles = layerRope.angles(position);
                layerRope.apply(q, qAt, heads, angles);
                layerRope.apply(key, kvAt, kvHeads, angles);
            }
        });
    }

    /** Picks the token of sequence {@code b} from its logits row at byte {@code row} of {@code out}. */
    @FunctionalInterface
    private interface Pick {
        int pick(MemorySegment out, long row, int b);
    }

    /**
     * The body both sample kernels share: per sequence, gather its logits row into {@code out},
     * then either mark it FINISHED (it yielded the stop token before) or pick its token; the
     * token goes to {@code out} and to the next step's input.
     */
    private static void sampleEach(TaskContext c, int n, int blockCount, int stop, int vocab, long logitsAt,
            Pick pick) {
        MemorySegment out = c.region(blockCount);
        MemorySegment input = c.region(blockCount + 1);
        for (int b = 0; b < n; b++) {
            long row = logitsAt + (long) b * vocab * F;
            gatherRow(c, 0, blockCount, n, b, out, row);
            int previous = out.getAtIndex(I32, b);
            if (stop >= 0 && (previous == stop || previous == LlamaRequest.FINISHED)) {
                out.setAtIndex(I32, b, LlamaRequest.FINISHED);
                input.setAtIndex(I32, b, stop);
            } else {
                int token = pick.pick(out, row, b);
                out.setAtIndex(I32, b, token);
                input.setAtIndex(I32, b, token);
            }
        }
    }

    /** Copies row {@code i} of a block-major output: {@link dev.tandem.llm.engine.StepBuilder#gatherRow}. */
    static void gatherRow(TaskContext c, int first, int count, int n, int i, MemorySegment to, long toOffset) {
        dev.tandem.llm.engine.StepBuilder.gatherRow(c, first, count, n, i, to, toOffset);
    }

    /**
     * Regions: x rows (read-write), the n rows of each delta block (read), then with a post-norm
     * its weight (read). Scalars: n, dim, delta blocks, eps bits, whether there is a post-norm.
     */
    private Kernel residualKernel() {
        return Kernel.of("residual", c -> addBlocks(c, (int) c.scalar(0), (int) c.scalar(1), (int) c.scalar(2),
                Float.intBitsToFloat((int) c.scalar(3)), c.scalar(4) != 0));
    }

    /**
     * Regions: x rows (read-write), the n rows of each delta block (read), with a post-norm its
     * weight (read), the norm weight (read), xn rows (write). Scalars: n, dim, delta blocks, eps
     * bits, whether there is a post-norm.
     */
    private Kernel residualNormKernel() {
        return Kernel.of("residual_norm", c -> {
            int n = (int) c.scalar(0);
            int dim = (int) c.scalar(1);
            int deltas = (int) c.scalar(2);
            float eps = Float.intBitsToFloat((int) c.scalar(3));
            boolean post = c.scalar(4) != 0;
            addBlocks(c, n, dim, deltas, eps, post);
            MemorySegment x = c.region(0);
            int at = 1 + deltas + (post ? 1 : 0);
            MemorySegment weight = c.region(at);
            MemorySegment xn = c.region(at + 1);
            for (int r = 0; r < n; r++) {
                ops.rmsnorm(x, r * dim * F, weight, 0, xn, r * dim * F, dim, eps);
            }
        });
    }

    /**
     * {@code x} (region 0, n rows) {@code +=} the n rows of the delta blocks in regions
     * {@code [1, deltas]}; with {@code post}, each delta row is first gathered and rmsnormed by
     * the weight in region {@code deltas + 1} (Gemma's post-norms need the whole row).
     */
    private void addBlocks(TaskContext c, int n, int dim, int deltas, float eps, boolean post) {
        MemorySegment x = c.region(0);
        MemorySegment row = post ? rowScratch.get() : null;
        for (int i = 0; i < n; i++) {
            long at = (long) i * dim * F;
            if (post) {
                gatherRow(c, 1, deltas, n, i, row, 0);
                ops.rmsnorm(row, 0, c.region(1 + deltas), 0, row, 0, dim, eps);
                ops.residualAdd(x, at, row, 0, dim);
                continue;
            }
            for (int k = 1; k <= deltas; k++) {
                MemorySegment block = c.region(k);
                int size = (int) (block.byteSize() / n / F);
                ops.residualAdd(x, at, block, (long) i * size * F, size);
                at += size * F;
            }
        }
    }

    /** Per core thread, one row of {@code dim} floats for {@link #addBlocks}' post-norm; freed with the thread. */
    private final ThreadLocal<MemorySegment> rowScratch;

    /**
     * Regions: input [n, cols] (read), then for each of q, k and v its matrix (read) and its
     * block-major output (write). Scalars: cols, n, then the kernels' {@link TensorType} ordinals of q, k
     * and v, the task's input key. The parts are q's, then k's, then v's.
     */
    private Kernel qkvKernel() {
        Tensor[] projections = {Tensor.WQ, Tensor.WK, Tensor.WV};
        RowBlocks[] splits = new RowBlocks[3];
        int[][] tables = new int[3][];
        int total = 0;
        for (int i = 0; i < 3; i++) {
            splits[i] = blocks.get(projections[i]);
            tables[i] = parts.get(projections[i]);
            total += tables[i].length / 3;
        }
        int partCount = total;
        return Kernel.ofParts("matmul_qkv", c -> partCount, c -> {
            int part = c.part();
            int i = 0;
            while (part >= tables[i].length / 3) {
                part -= tables[i].length / 3;
                i++;
            }
            projectPart(TENSOR_TYPES[(int) c.scalar(2 + i)], splits[i], tables[i], part, c.region(1 + 2 * i),
                    c.region(0), c.region(2 + 2 * i), (int) c.scalar(0), (int) c.scalar(1), c.scalar(5));
        });
    }

    /**
     * Regions: w1, w3, input [n, cols] (read), the block-major gate and up outputs, hb [n, ffn]
     * (write). Scalars: cols, n, the kernels' {@link TensorType} ordinals of w1 and w3, the task's input key. Each part computes
     * a few rows of one shared row block of w1 and w3 and then those columns of every hb row.
     */
    private Kernel gateUpKernel() {
        RowBlocks split = blocks.get(Tensor.W1);
        int[] table = parts.get(Tensor.W1);
        int ffn = config.ffnDim();
        boolean gelu = architecture.activation() == Architecture.Activation.GELU_TANH;
        return Kernel.ofParts("matmul_w1_w3", c -> table.length / 3, c -> {
            int cols = (int) c.scalar(0);
            int n = (int) c.scalar(1);
            TensorType gateType = TENSOR_TYPES[(int) c.scalar(2)];
            TensorType upType = TENSOR_TYPES[(int) c.scalar(3)];
            MemorySegment in = c.region(2);
            MemorySegment gate = c.region(3);
            MemorySegment up = c.region(4);
            MemorySegment hb = c.region(5);
            int part = c.part();
            long inputKey = c.scalar(4);
            projectPart(gateType, split, table, part, c.region(0), in, gate, cols, n, inputKey);
            projectPart(upType, split, table, part, c.region(1), in, up, cols, n, inputKey);
            int block = table[3 * part];
            int r0 = table[3 * part + 1];
            int r1 = table[3 * part + 2];
            int size = split.size(block);
            long at = split.offset(block, n, 0);
            for (int i = 0; i < n; i++) {
                long rowAt = at + ((long) i * size + r0) * F;
                long hbAt = ((long) i * ffn + split.start(block) + r0) * F;
                if (gelu) {
                    geluMul(gate, rowAt, up, rowAt, hb, hbAt, r1 - r0);
                } else {
                    ops.siluMul(gate, rowAt, up, rowAt, hb, hbAt, r1 - r0);
                }
            }
        });
    }

    /**
     * {@code out[i] := gelu(gate[i]) * up[i]} for {@code n} floats, GELU in its tanh form as
     * llama.cpp's {@code ggml_gelu_f32} writes it (f32; llama.cpp's CPU build reads it from a
     * table of f16 inputs, which differs in the last bits). Scalar: the kernels module has no
     * vector GELU yet, and the FFN's matmuls, not this, bound a layer's time.
     */
    static void geluMul(MemorySegment gate, long gateAt, MemorySegment up, long upAt, MemorySegment out, long outAt,
            int n) {
        for (int i = 0; i < n; i++) {
            float g = gate.get(F32, gateAt + i * F);
            float u = up.get(F32, upAt + i * F);
            out.set(F32, outAt + i * F, gelu(g) * u);
        }
    }

    /** GELU, tanh form: {@code 0.5 x (1 + tanh(sqrt(2/pi) x (1 + 0.044715 x^2)))}. */
    static float gelu(float x) {
        return 0.5f * x * (1f + (float) Math.tanh(SQRT_2_OVER_PI * x * (1f + GELU_COEF_A * x * x)));
    }

    private static final float SQRT_2_OVER_PI = 0.79788456080286535587989211986876f;
    private static final float GELU_COEF_A = 0.044715f;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** Regions: logits rows (read-write). Scalars: the cap's bits. Each logit becomes {@code cap * tanh(logit / cap)}. */
    private Kernel logitSoftcapKernel() {
        return Kernel.of("logit_softcap", c -> {
            float cap = Float.intBitsToFloat((int) c.scalar(0));
            float inverse = 1f / cap;
            MemorySegment logits = c.region(0);
            long n = logits.byteSize() / F;
            for (long i = 0; i < n; i++) {
                logits.set(F32, i * F, cap * (float) Math.tanh(logits.get(F32, i * F) * inverse));
            }
        });
    }

    /** Regions: weight (read), xf [n, dim] (write), then the n x rows (read). Scalars: dim, eps bits. */
    private Kernel finalNormKernel() {
        return Kernel.of("final_norm", c -> {
            int dim = (int) c.scalar(0);
            float eps = Float.intBitsToFloat((int) c.scalar(1));
            for (int i = 2; i < c.regionCount(); i++) {
                ops.rmsnorm(c.region(i), 0, c.region(0), 0, c.region(1), (i - 2) * dim * F, dim, eps);
            }
        });
    }

    /**
     * Regions: the logits blocks (read), out (read-write: n token ints, then n logit rows), input
     * tokens (write), probabilities (write). Scalars: n, blocks, stop token, step, temperature bits,
     * top-p bits, seed.
     */
    private Kernel sampleKernel() {
        int vocab = config.vocab();
        return Kernel.of("sample", c -> {
            int n = (int) c.scalar(0);
            int blockCount = (int) c.scalar(1);
            int stop = (int) c.scalar(2);
            long step = c.scalar(3);
            float temperature = Float.intBitsToFloat((int) c.scalar(4));
            float topP = Float.intBitsToFloat((int) c.scalar(5));
            long seed = c.scalar(6);
            MemorySegment probs = c.region(blockCount + 2);
            sampleEach(c, n, blockCount, stop, vocab, (long) n * Integer.BYTES, (out, row, b) -> ops.sample(out, row, probs, 0, vocab,
                    temperature, topP, Sampling.seedFor(seed, step, b)));
        });
    }
}
