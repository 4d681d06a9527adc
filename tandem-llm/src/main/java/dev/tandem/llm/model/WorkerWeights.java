package dev.tandem.llm.model;

import dev.tandem.Access;
import dev.tandem.Buffer;
import dev.tandem.Worker;
import dev.tandem.kernels.KernelOps;
import dev.tandem.kernels.MatmulOps;
import dev.tandem.kernels.TensorType;
import dev.tandem.llm.model.LlamaWeights.Tensor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * The loader's result: a model's tensors in frozen buffers of a worker, each matrix in the layout
 * its matmul kernel reads, and how each matrix's rows are cut into the row blocks and parts of its
 * tasks.
 *
 * <p>{@link #load} copies every tensor of a {@link LlamaWeights} into a buffer of its own (an
 * interleaved layout for every matrix the model multiplies, {@link #interleaved}), several at a
 * time, and freezes it; the file's mapping is not needed afterwards. Then it splits each matrix's
 * rows once for every layer ({@link RowBlocks}): the block-major outputs that later tasks read must
 * not change shape between layers, so a split is sized by the matrix's widest rows, and the gate
 * and up projections share theirs, since one task computes a block of both.
 */
final class WorkerWeights {
    private final LlamaConfig config;
    /**
     * How each matrix of each layer is stored ({@link LlamaWeights#type}; one entry for a tensor
     * not per layer); the classifier's is the embedding's when tied. A task's kernel reads its
     * weights' type from the task's scalars, so the layers of one matrix may differ.
     */
    private final Map<Tensor, TensorType[]> types = new EnumMap<>(Tensor.class);
    /**
     * Every weight buffer's read (the whole frozen buffer), per copy (layer), made once at load:
     * steps declare the same ones every time (a batch-1 decode step of the large shape about 75),
     * and an {@link Access} and its {@link dev.tandem.Region} are immutable.
     */
    private final Map<Tensor, Access[]> reads = new EnumMap<>(Tensor.class);
    private final Map<Tensor, RowBlocks> blocks = new EnumMap<>(Tensor.class);
    /** Per matrix, the parts its matmul task splits into: {@link RowBlocks#parts} triples. */
    private final Map<Tensor, int[]> parts = new EnumMap<>(Tensor.class);
    /** Llama 3's rope frequency factors ({@link Tensor#ROPE_FREQS}), or null. */
    private final float[] ropeFactors;

    private WorkerWeights(Worker worker, LlamaWeights weights, KernelOps ops, LlamaModel.Options options) {
        this.config = weights.config();
        float[] factors = null;
        Map<Tensor, Buffer[]> buffers = new EnumMap<>(Tensor.class);
        List<Runnable> fills = new ArrayList<>(); // each buffer's copy or interleave, run by fillAll
        for (Tensor tensor : Tensor.values()) {
            if (!tensor.present(config)) {
                continue;
            }
            if (tensor == Tensor.ROPE_FREQS) {
                factors = weights.tensor(tensor, 0).toArray(ValueLayout.JAVA_FLOAT_UNALIGNED
                        .withOrder(ByteOrder.LITTLE_ENDIAN));
                continue;
            }
            int copies = tensor.perLayer() ? config.layers() : 1;
            Buffer[] array = new Buffer[copies];
            if (!tensor.norm()) {
                Tensor typeSource = tensor == Tensor.OUTPUT && config.tiedEmbeddings() ? Tensor.TOKEN_EMBEDDING : tensor;
                TensorType[] perLayer = new TensorType[copies];
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
                TensorType type = interleave ? types.get(tensor)[l] : null;
                fills.add(() -> {
                    if (type != null) {
                        try {
                            ops.interleave(type, bytesIn, 0, buffer.hostSegment(), 0,
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
            Access[] perCopy = new Access[copies];
            for (int l = 0; l < copies; l++) {
                perCopy[l] = Access.read(array[l]);
            }
            reads.put(tensor, perCopy);
        }
        this.ropeFactors = factors;
        fillAll(fills);
        for (Tensor tensor : types.keySet()) {
            if (tensor != Tensor.TOKEN_EMBEDDING) {
                split(tensor, options);
            }
        }
    }

    /**
     * Loads {@code weights} onto {@code worker}; {@code options} must have its parallelism
     * resolved (not 0).
     */
    static WorkerWeights load(Worker worker, LlamaWeights weights, KernelOps ops, LlamaModel.Options options) {
        return new WorkerWeights(worker, weights, ops, options);
    }

    private void split(Tensor tensor, LlamaModel.Options options) {
        Tensor[] sharing = tensor == Tensor.W1 || tensor == Tensor.W3
                ? new Tensor[] {Tensor.W1, Tensor.W3} : new Tensor[] {tensor};
        long rowBytes = widestRowBytes(sharing);
        int align = 1;
        for (Tensor t : sharing) {
            for (TensorType type : types.get(t)) {
                if (interleaved(t, type)) {
                    align = Math.max(align, type.blockSize() == 1 // f32, f16, bf16
                            ? MatmulOps.F32_X16_PASS_ROWS : TensorType.X16_ROWS);
                }
            }
        }
        RowBlocks split = RowBlocks.of(tensor.rows(config), rowBytes, options.rowBlockBytes(), options.parallelism(),
                align);
        blocks.put(tensor, split);
        // Gate and up rows are computed together: a part's bytes are both matrices' rows.
        long partRowBytes = tensor == Tensor.W1 || tensor == Tensor.W3 ? 2 * rowBytes : rowBytes;
        int partRows = (int) Math.max(1, Math.min(Integer.MAX_VALUE, options.partBytes() / partRowBytes));
        parts.put(tensor, split.parts(Math.ceilDiv(partRows, align) * align));
    }

    /** The bytes of the widest row of {@code tensors} in any layer. */
    private long widestRowBytes(Tensor... tensors) {
        long widest = 0;
        for (Tensor t : tensors) {
            for (TensorType type : types.get(t)) {
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
     * layout ({@link TensorType#interleaved()}): every matrix it multiplies (the classifier too, in
     * a copy of its own when tied to the embedding, which keeps its file layout for its row
     * look-ups).
     */
    static boolean interleaved(Tensor tensor, TensorType type) {
        return type.interleaved() != null && tensor != Tensor.TOKEN_EMBEDDING;
    }

    /** The matrices present, in {@link Tensor} order. */
    Set<Tensor> matrices() {
        return types.keySet();
    }

    /** How matrix {@code tensor} of layer {@code layer} is stored ({@code layer} ignored if not per layer). */
    TensorType type(Tensor tensor, int layer) {
        if (tensor.norm()) {
            throw new IllegalArgumentException(tensor + " is an f32 vector, not a matrix");
        }
        TensorType[] perLayer = types.get(tensor);
        return perLayer[tensor.perLayer() ? layer : 0];
    }

    /** The layout the matmul kernel of {@code tensor} of {@code layer} reads. */
    TensorType kernelType(Tensor tensor, int layer) {
        TensorType type = type(tensor, layer);
        return interleaved(tensor, type) ? type.interleaved() : type;
    }

    /** The read of the whole of weight {@code tensor}'s copy {@code copy} (its layer, or 0). */
    Access read(Tensor tensor, int copy) {
        return reads.get(tensor)[copy];
    }

    /** The row blocks of matrix {@code tensor}'s block-major output. */
    RowBlocks blocks(Tensor tensor) {
        return blocks.get(tensor);
    }

    /** The parts of matrix {@code tensor}'s matmul task. */
    int[] parts(Tensor tensor) {
        return parts.get(tensor);
    }

    /** Llama 3's rope frequency factors, or null. */
    float[] ropeFactors() {
        return ropeFactors;
    }

    /** Bytes of the weights: the matrices in their own types, the norms in f32. */
    long bytes() {
        return config.weightBytes(this::type);
    }
}
