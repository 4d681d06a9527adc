package dev.tandem.llm.model;

import dev.tandem.Kernel;
import dev.tandem.TaskContext;
import dev.tandem.kernels.KernelOps;
import dev.tandem.kernels.TensorType;
import dev.tandem.llm.model.LlamaWeights.Tensor;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The task kernels of a {@link LlamaModel}'s steps, made once at load for its configuration and
 * weights. Each reads its shapes from its scalars and its memory from its regions, as the model's
 * step builders lay them out ({@link LlamaModel#forward}); the byte size of a block-major region
 * gives the block's rows. The arithmetic is the kernels module's ({@link KernelOps}); what is here
 * is the model's plumbing around it: gathering rows of block-major outputs, biases, per-head norms,
 * rotations, residuals, the fused q/k/v and gate/up tasks.
 */
final class LlamaKernels {
    private static final long F = Float.BYTES;
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final TensorType[] TENSOR_TYPES = TensorType.values();

    /** Matrices computed inside the {@code matmul_qkv} and {@code matmul_w1_w3} tasks, not by a matmul task of their own. */
    static final Set<Tensor> FUSED_PROJECTIONS = Set.of(Tensor.WQ, Tensor.WK, Tensor.WV, Tensor.W1, Tensor.W3);

    private final LlamaConfig config;
    private final Architecture architecture;
    private final KernelOps ops;
    private final WorkerWeights weights;
    /** The rotation of the global layers, and of the sliding ones ({@link Architecture#sliding}). */
    private final Rope rope;
    private final Rope slidingRope;
    /** Per core thread, one row of {@code dim} floats for {@link #addBlocks}' post-norm; freed with the thread. */
    private final ThreadLocal<MemorySegment> rowScratch;
    /** The KV cache's element type, which {@link #ropeStore} writes. */
    private final KvType kvType;
    /**
     * Per core thread, a key row and a value row of {@code kvDim} floats each, where
     * {@link #ropeStore} computes a row's key and value before storing them in the cache's type;
     * freed with the thread.
     */
    private final ThreadLocal<MemorySegment> kvScratch;

    final Kernel embed;
    final Kernel rmsnorm;
    final Kernel ropeStore;
    final Kernel residual;
    final Kernel residualNorm;
    final Kernel gateUp;
    final Kernel qkv;
    final Kernel finalNorm;
    final Kernel greedySample;
    final Kernel logitSoftcap;
    /** The matmul kernel of each matrix that has tasks of its own (not in {@link #FUSED_PROJECTIONS}). */
    private final Map<Tensor, Kernel> matmuls = new EnumMap<>(Tensor.class);

    LlamaKernels(LlamaConfig config, KernelOps ops, WorkerWeights weights, KvType kvType) {
        this.config = config;
        this.kvType = kvType;
        long kvRowBytes = (long) config.kvDim() * F;
        this.kvScratch = ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(2 * kvRowBytes, 64));
        this.architecture = config.architecture();
        this.ops = ops;
        this.weights = weights;
        this.rope = new Rope(config, weights.ropeFactors());
        this.slidingRope = Rope.sliding(config, weights.ropeFactors());
        long dimBytes = (long) config.dim() * F;
        this.rowScratch = ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(dimBytes, 64));
        for (Tensor tensor : weights.matrices()) {
            if (tensor != Tensor.TOKEN_EMBEDDING && !FUSED_PROJECTIONS.contains(tensor)) {
                matmuls.put(tensor, matmulKernel(tensor));
            }
        }
        this.embed = embedKernel();
        this.rmsnorm = rmsnormKernel();
        this.ropeStore = ropeStoreKernel();
        this.residual = residualKernel();
        this.residualNorm = residualNormKernel();
        this.gateUp = gateUpKernel();
        this.qkv = qkvKernel();
        this.finalNorm = finalNormKernel();
        this.greedySample = greedySampleKernel();
        this.logitSoftcap = logitSoftcapKernel();
    }

    /** The matmul kernel of matrix {@code tensor}, one not in {@link #FUSED_PROJECTIONS}. */
    Kernel matmul(Tensor tensor) {
        return matmuls.get(tensor);
    }

    /**
     * Regions: the matrix (read), input [n, cols] (read), the block-major output (write).
     * Scalars: cols, n, the weights' kernel {@link TensorType} ordinal, the task's input key. One part per entry of the
     * matrix's part table.
     */
    private Kernel matmulKernel(Tensor tensor) {
        RowBlocks split = weights.blocks(tensor);
        int[] table = weights.parts(tensor);
        return Kernel.ofParts("matmul_" + tensor.name().toLowerCase(Locale.ROOT), c -> table.length / 3,
                c -> projectPart(TENSOR_TYPES[(int) c.scalar(2)], split, table, c.part(), c.region(0), c.region(1),
                        c.region(2), (int) c.scalar(0), (int) c.scalar(1), c.scalar(3)));
    }

    /**
     * Part {@code part} of a matmul: the rows of one row block that {@code table} gives it, of
     * the whole matrix {@code weights}, into the whole block-major {@code out}. {@code inputKey} is
     * the task's own (the model numbers its matmul tasks): the parts a core takes of one task quantize or copy
     * {@code in} once.
     */
    private void projectPart(TensorType type, RowBlocks split, int[] table, int part, MemorySegment weights,
            MemorySegment in, MemorySegment out, int cols, int n, long inputKey) {
        int block = table[3 * part];
        ops.matmul(type, weights, split.start(block) * type.rowBytes(cols), in, 0, out,
                split.offset(block, n, 0), split.size(block), cols, n, table[3 * part + 1], table[3 * part + 2],
                inputKey);
    }


    /**
     * Regions: table (read), tokens [n] (read), x [n, dim] (write). Scalars: n, dim, vocab. Each
     * row is multiplied by the architecture's {@link Architecture#embeddingScale} (Gemma).
     */
    private Kernel embedKernel() {
        TensorType type = weights.type(Tensor.TOKEN_EMBEDDING, 0);
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
                ops.embed(type, table, 0, x, (long) r * dim * F, vocab, dim, token);
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
     * <p>Per row: gather q, k, v from the block-major matmul outputs (q into its rows, k and v
     * into this core's {@link #kvScratch}); add the biases; rmsnorm each head of q and k; rotate q
     * and k; store k and v in their cache slots as the cache's {@link KvType}.
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
            MemorySegment kv = kvScratch.get();
            long kAt = 0;
            long vAt = (long) kvDim * F;
            int run = 0;
            int runStart = 0; // the chunk's row at the start of the run
            for (int i = 0; i < n; i++) {
                if (i - runStart == c.scalar(7 + n + run)) {
                    runStart = i;
                    run++;
                }
                int position = (int) c.scalar(6 + i);
                long qAt = (long) i * qDim * F;
                long slotAt = (long) (i - runStart) * kvDim * kvType.bytes();
                gatherRow(c, 0, qBlocks, n, i, q, qAt);
                gatherRow(c, qBlocks, kvBlocks, n, i, kv, kAt);
                gatherRow(c, qBlocks + kvBlocks, kvBlocks, n, i, kv, vAt);
                if (bias) {
                    ops.residualAdd(q, qAt, c.region(extra), 0, qDim);
                    ops.residualAdd(kv, kAt, c.region(extra + 1), 0, kvDim);
                    ops.residualAdd(kv, vAt, c.region(extra + 2), 0, kvDim);
                }
                if (qkNorm) {
                    int normAt = extra + (bias ? 3 : 0);
                    for (int h = 0; h < heads; h++) {
                        long at = qAt + (long) h * headDim * F;
                        ops.rmsnorm(q, at, c.region(normAt), 0, q, at, headDim, eps);
                    }
                    for (int h = 0; h < kvHeads; h++) {
                        long at = kAt + (long) h * headDim * F;
                        ops.rmsnorm(kv, at, c.region(normAt + 1), 0, kv, at, headDim, eps);
                    }
                }
                Rope.Angles angles = layerRope.angles(position);
                layerRope.apply(q, qAt, heads, angles);
                layerRope.apply(kv, kAt, kvHeads, angles);
                kvType.store(kv, kAt, c.region(qRows + 1 + run), slotAt, kvDim);
                kvType.store(kv, vAt, c.region(qRows + 1 + runs + run), slotAt, kvDim);
            }
        });
    }

    /** Picks the token of sequence {@code b} from its logits row at byte {@code row} of {@code out}. */
    @FunctionalInterface
    interface Pick {
        int pick(MemorySegment out, long row, int b);
    }

    /**
     * The body both sample kernels share: per sequence, gather its logits row into {@code out},
     * then either mark it FINISHED (it yielded the stop token before) or pick its token; the
     * token goes to {@code out} and to the next step's input.
     */
    static void sampleEach(TaskContext c, int n, int blockCount, int stop, int vocab, long logitsAt,
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
            splits[i] = weights.blocks(projections[i]);
            tables[i] = weights.parts(projections[i]);
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
        RowBlocks split = weights.blocks(Tensor.W1);
        int[] table = weights.parts(Tensor.W1);
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
     * tokens (write). Scalars: n, blocks, stop token. Each sequence's token is its logits' argmax
     * (the first on ties), as the sampler chain's greedy configuration draws it.
     */
    private Kernel greedySampleKernel() {
        int vocab = config.vocab();
        return Kernel.of("sample", c -> {
            int n = (int) c.scalar(0);
            sampleEach(c, n, (int) c.scalar(1), (int) c.scalar(2), vocab, (long) n * Integer.BYTES,
                    (out, row, b) -> ops.argmax(out, row, vocab));
        });
    }

}
