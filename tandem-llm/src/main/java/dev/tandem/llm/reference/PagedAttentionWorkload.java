package dev.tandem.llm.reference;

import static dev.tandem.Access.read;
import static dev.tandem.Access.write;
import static dev.tandem.llm.model.Checks.positive;

import dev.tandem.Buffer;
import dev.tandem.Kernel;
import dev.tandem.Program;
import dev.tandem.Worker;
import dev.tandem.kernels.KernelOps;
import dev.tandem.kernels.Ops;
import dev.tandem.llm.model.KvType;
import dev.tandem.llm.model.PagedAttention;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Multi-layer batched paged attention as a program of its own: the decode-time attention of a
 * batch of sequences with ragged contexts, layer after layer.
 *
 * <p>Data: a query {@code [batch, heads, headDim]}; per layer, paged key and value caches
 * {@code [blocks, blockSize, headDim]} shared by all heads, with one block table per sequence
 * (physical blocks in a seeded random order, so no sequence's blocks are contiguous); all of it
 * in frozen worker buffers, filled from a seed. Per layer, {@link PagedAttention} attends every
 * sequence to its own context; a barrier task then waits for the whole layer and makes its output
 * the next layer's query. Every {@code layersPerStep} layers end a step, whose token is a digest
 * of the output: per sequence, {@code sum_i out[b, i] * (i % 7 + 1) / 7} as an f32 (or, with
 * {@link Readback#OUTPUT}, the whole output).
 *
 * <p>{@link #reference} computes the same in double, one position at a time, from the same seed:
 * the golden values the program is checked against with {@link #RTOL} and {@link #ATOL}.
 */
public final class PagedAttentionWorkload {

    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** Relative tolerance of the program's values against {@link #reference}. */
    public static final double RTOL = 1e-3;

    /** Absolute tolerance of the program's values against {@link #reference}. */
    public static final double ATOL = 1e-3;

    /** What each step reads back as its token. */
    public enum Readback {
        /** One f32 per sequence: a weighted sum of its output. */
        DIGEST,
        /** The whole output {@code [batch, heads, headDim]} of the step's last layer. */
        OUTPUT
    }

    /**
     * The workload's shape.
     *
     * @param contexts      per sequence, the positions it attends to; its length is the batch
     * @param layersPerStep layers between two tokens
     */
    public record Shape(
            int heads, int headDim, int blockSize, int[] contexts, int layers, int layersPerStep, long seed) {

        public Shape {
            positive("heads", heads);
            positive("headDim", headDim);
            positive("blockSize", blockSize);
            positive("layers", layers);
            positive("layersPerStep", layersPerStep);
            if (contexts == null || contexts.length == 0) {
                throw new IllegalArgumentException("contexts must list at least one sequence");
            }
            contexts = contexts.clone();
            for (int b = 0; b < contexts.length; b++) {
                if (contexts[b] < 1) {
                    throw new IllegalArgumentException("contexts[" + b + "] = " + contexts[b] + " must be >= 1");
                }
            }
        }

        /** The same context for every sequence of a batch of {@code batch}. */
        public static Shape uniform(int batch, int heads, int headDim, int blockSize, int context, int layers,
                int layersPerStep, long seed) {
            positive("batch", batch);
            int[] contexts = new int[batch];
            Arrays.fill(contexts, context);
            return new Shape(heads, headDim, blockSize, contexts, layers, layersPerStep, seed);
        }

        /** The bench shape: 16 sequences of context 8192, 16 heads of 128, blocks of 128, 2 layers. */
        public static Shape bench() {
            return uniform(16, 16, 128, 128, 8192, 2, 1, 42);
        }

        public int batch() {
            return contexts.length;
        }

        @Override
        public int[] contexts() {
            return contexts.clone();
        }

        public int steps() {
            return (layers + layersPerStep - 1) / layersPerStep;
        }

        /** FLOPs of one layer: a multiply and an add per query value per key, for qk and for pv. */
        public long flopsPerLayer() {
            long keys = 0;
            for (int context : contexts) {
                keys += context;
            }
            return 4L * heads * headDim * keys;
        }

        /** Bytes of the K and V caches of one layer. */
        public long cacheBytesPerLayer() {
            long blocks = 0;
            for (int context : contexts) {
                blocks += (context + blockSize - 1) / blockSize;
            }
            return 2 * blocks * blockSize * headDim * (long) Float.BYTES;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Shape s && heads == s.heads && headDim == s.headDim && blockSize == s.blockSize
                    && Arrays.equals(contexts, s.contexts) && layers == s.layers && layersPerStep == s.layersPerStep
                    && seed == s.seed;
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(contexts) * 31 + Long.hashCode(seed);
        }

        @Override
        public String toString() {
            return "Shape[batch=" + contexts.length + ", heads=" + heads + ", headDim=" + headDim + ", blockSize="
                    + blockSize + ", contexts=" + Arrays.toString(contexts) + ", layers=" + layers
                    + ", layersPerStep=" + layersPerStep + ", seed=" + seed + "]";
        }
    }

    private final Shape shape;
    private final PagedAttention attention;
    private final int[][] tables;
    private final int physicalBlocks;
    private final Kernel barrier;
    private Buffer query;
    private Buffer[] keys;
    private Buffer[] values;

    /** The workload on the preferred kernels, with the default tiling (128 heads, 16 sequences). */
    public PagedAttentionWorkload(Shape shape) {
        this(shape, Ops.preferred(), PagedAttention.MAX_TILE_HEADS, PagedAttention.MAX_CHUNK_ROWS);
    }

    /** The workload on {@code ops}, with q-tiles of {@code tileHeads} heads and chunks of {@code chunkRows}. */
    public PagedAttentionWorkload(Shape shape, KernelOps ops, int tileHeads, int chunkRows) {
        this.shape = shape;
        this.attention = new PagedAttention(ops, shape.heads(), 1, shape.headDim(), shape.blockSize(),
                Math.min(tileHeads, shape.heads()), chunkRows, PagedAttention.DEFAULT_SLABS, KvType.F32);
        int batch = shape.batch();
        int total = 0;
        for (int context : shape.contexts) {
            total += blocksOf(context);
        }
        this.physicalBlocks = total;
        int[] order = permutation(total, new SplittableRandom(shape.seed()));
        this.tables = new int[batch][];
        int next = 0;
        for (int b = 0; b < batch; b++) {
            tables[b] = new int[blocksOf(shape.contexts[b])];
            for (int j = 0; j < tables[b].length; j++) {
                tables[b][j] = order[next++];
            }
        }
        int width = shape.heads() * shape.headDim();
        this.barrier = Kernel.of("layer_barrier", c -> {
            // regions: out (read), next query (write), digest (write, only when the layer ends a step)
            MemorySegment out = c.region(0);
            MemorySegment.copy(out, 0, c.region(1), 0, out.byteSize());
            if (c.regionCount() > 2) {
                MemorySegment digest = c.region(2);
                for (int b = 0; b < batch; b++) {
                    float sum = 0f;
                    for (int i = 0; i < width; i++) {
                        sum += out.getAtIndex(F32, (long) b * width + i) * digestWeight(i);
                    }
                    digest.setAtIndex(F32, b, sum);
                }
            }
        });
    }

    static float digestWeight(int i) {
        return (i % 7 + 1) / 7f;
    }

    public Shape shape() {
        return shape;
    }

    /** The block table of sequence {@code b}: its physical blocks in context order. */
    public int[] blockTable(int b) {
        return tables[b].clone();
    }

    private int blocksOf(int context) {
        return (context + shape.blockSize() - 1) / shape.blockSize();
    }

    private static int[] permutation(int n, SplittableRandom random) {
        int[] order = new int[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        for (int i = n - 1; i > 0; i--) {
            int j = random.nextInt(i + 1);
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        return order;
    }

    /** Device bytes one request allocates. */
    public long requestBytes() {
        long io = (long) shape.batch() * shape.heads() * shape.headDim() * Float.BYTES;
        return attention.scratchBytes(shape.batch()) + 2 * io + (long) shape.batch() * Float.BYTES;
    }

    /** Fills the query and the caches into frozen worker buffers of {@code worker}. */
    public PagedAttentionWorkload load(Worker worker) {
        int width = shape.heads() * shape.headDim();
        query = fill(worker, (long) shape.batch() * width, 0);
        keys = new Buffer[shape.layers()];
        values = new Buffer[shape.layers()];
        long cacheFloats = (long) physicalBlocks * shape.blockSize() * shape.headDim();
        for (int l = 0; l < shape.layers(); l++) {
            keys[l] = fill(worker, cacheFloats, 1 + 2L * l);
            values[l] = fill(worker, cacheFloats, 2 + 2L * l);
        }
        return this;
    }

    private Buffer fill(Worker worker, long floats, long stream) {
        Buffer buffer = worker.allocate(floats * Float.BYTES);
        MemorySegment segment = buffer.hostSegment();
        for (long i = 0; i < floats; i++) {
            segment.setAtIndex(F32, i, value(shape.seed(), stream, i));
        }
        return buffer.freeze();
    }

    /** Value {@code i} of data stream {@code stream} (0: the query; 1 + 2l, 2 + 2l: keys, values of layer l). */
    static float value(long seed, long stream, long i) {
        return Seeded.uniform(seed, stream, i);
    }

    /** The program of one request; {@link #load} must have run. Its input says what the tokens are. */
    public Program<Readback> program() {
        if (query == null) {
            throw new IllegalStateException("load(worker) the workload before running it");
        }
        return (o, readback) -> {
            int batch = shape.batch();
            long ioBytes = (long) batch * shape.heads() * shape.headDim() * Float.BYTES;
            PagedAttention.Scratch scratch = attention.allocateScratch(o::allocate, batch);
            Buffer next = o.allocate(ioBytes);
            Buffer out = o.allocate(ioBytes);
            Buffer digest = o.allocate((long) batch * Float.BYTES);
            int[][] rowTables = tables;
            Buffer q = query;
            for (int l = 0; l < shape.layers(); l++) {
                attention.submit(o, scratch, batch, q, keys[l], values[l], 0, shape.contexts, rowTables, out);
                boolean endsStep = (l + 1) % shape.layersPerStep() == 0 || l == shape.layers() - 1;
                if (endsStep) {
                    o.submit(barrier, read(out), write(next), write(digest));
                    o.endStep(readback == Readback.OUTPUT ? out.region() : digest.region());
                } else {
                    o.submit(barrier, read(out), write(next));
                }
                q = next;
            }
        };
    }

    /**
     * The expected values, in double, one position at a time: per step, the digest (one value per
     * sequence) and the output of the step's last layer.
     */
    public Expected reference() {
        int batch = shape.batch();
        int heads = shape.heads();
        int dim = shape.headDim();
        int bs = shape.blockSize();
        int width = heads * dim;
        double scale = 1.0 / Math.sqrt(dim);
        double[] q = new double[batch * width];
        for (int i = 0; i < q.length; i++) {
            q[i] = value(shape.seed(), 0, i);
        }
        float[][] digests = new float[shape.steps()][];
        float[][] outputs = new float[shape.steps()][];
        int step = 0;
        for (int l = 0; l < shape.layers(); l++) {
            double[] out = new double[q.length];
            for (int b = 0; b < batch; b++) {
                int context = shape.contexts[b];
                for (int h = 0; h < heads; h++) {
                    double[] scores = new double[context];
                    double max = Double.NEGATIVE_INFINITY;
                    for (int p = 0; p < context; p++) {
                        long row = (long) tables[b][p / bs] * bs + p % bs;
                        double dot = 0;
                        for (int c = 0; c < dim; c++) {
                            dot += q[(b * heads + h) * dim + c] * value(shape.seed(), 1 + 2L * l, row * dim + c);
                        }
                        scores[p] = dot * scale;
                        max = Math.max(max, scores[p]);
                    }
                    double sum = 0;
                    for (int p = 0; p < context; p++) {
                        scores[p] = Math.exp(scores[p] - max);
                        sum += scores[p];
                    }
                    for (int p = 0; p < context; p++) {
                        long row = (long) tables[b][p / bs] * bs + p % bs;
                        for (int c = 0; c < dim; c++) {
                            out[(b * heads + h) * dim + c] +=
                                    scores[p] / sum * value(shape.seed(), 2 + 2L * l, row * dim + c);
                        }
                    }
                }
            }
            q = out;
            if ((l + 1) % shape.layersPerStep() == 0 || l == shape.layers() - 1) {
                float[] digest = new float[batch];
                for (int b = 0; b < batch; b++) {
                    double sum = 0;
                    for (int i = 0; i < width; i++) {
                        sum += out[b * width + i] * digestWeight(i);
                    }
                    digest[b] = (float) sum;
                }
                float[] output = new float[out.length];
                for (int i = 0; i < out.length; i++) {
                    output[i] = (float) out[i];
                }
                digests[step] = digest;
                outputs[step] = output;
                step++;
            }
        }
        return new Expected(digests, outputs);
    }

    /**
     * What {@link #reference} computed.
     *
     * @param digests per step, the token of {@link Readback#DIGEST}
     * @param outputs per step, the token of {@link Readback#OUTPUT}
     */
    public record Expected(float[][] digests, float[][] outputs) {}

    /** Whether {@code actual} is within {@link #RTOL} and {@link #ATOL} of {@code expected}. */
    public static boolean close(float actual, float expected) {
        return Math.abs(actual - expected) <= ATOL + RTOL * Math.abs(expected);
    }

    /** The first index where {@code actual} is not {@link #close} to {@code expected}, or -1. */
    public static int firstMismatch(float[] actual, float[] expected) {
        if (actual.length != expected.length) {
            return Math.min(actual.length, expected.length);
        }
        for (int i = 0; i < actual.length; i++) {
            if (!close(actual[i], expected[i])) {
                return i;
            }
        }
        return -1;
    }

    /** The floats of a token's bytes (little-endian). */
    public static float[] floats(byte[] bytes) {
        float[] out = new float[bytes.length / Float.BYTES];
        MemorySegment.copy(MemorySegment.ofArray(bytes), F32, 0, out, 0, out.length);
        return out;
    }
}
