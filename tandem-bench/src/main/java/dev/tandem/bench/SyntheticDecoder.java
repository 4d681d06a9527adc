package dev.tandem.bench;

import static dev.tandem.Access.read;
import static dev.tandem.Access.write;

import dev.tandem.Buffer;
import dev.tandem.Kernel;
import dev.tandem.Orchestrator;
import dev.tandem.Program;
import dev.tandem.Worker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;

/**
 * A small decoder-shaped workload with real arithmetic: per step, embed the last token, run
 * {@code layers} dense tanh layers (each split into row-block tasks so every core has work),
 * project to a vocabulary and take the argmax as the next token. The weights live in frozen
 * worker buffers shared by every request.
 *
 * <p>The same static arithmetic runs in {@link #reference}, one operation after another on
 * plain arrays, so any scheduling or dependency error in the runtime shows up as a different
 * token sequence.
 */
public final class SyntheticDecoder {
    /** Printable characters standing for the vocabulary, for people to watch. */
    public static final String ALPHABET =
            " etaoinshrdlucmfwypvbgkjqxz.,;!?ETAOINSHRDLUCMFWYPVBGKJQXZ0123456";

    private final int dim;
    private final int layers;
    private final int rowBlocks;
    private final int vocab;
    private final float[] embedding; // [vocab, dim]
    private final float[][] layerWeights; // [layers][dim*dim]
    private final float[] output; // [vocab, dim]
    private Buffer embeddingBuffer;
    private Buffer[] layerBuffers;
    private Buffer outputBuffer;

    public SyntheticDecoder(int dim, int layers, int rowBlocks, long seed) {
        if (dim < 1 || layers < 1 || rowBlocks < 1 || dim % rowBlocks != 0) {
            throw new IllegalArgumentException("dim, layers and rowBlocks must be positive and rowBlocks must divide dim");
        }
        this.dim = dim;
        this.layers = layers;
        this.rowBlocks = rowBlocks;
        this.vocab = ALPHABET.length();
        SplittableRandom random = new SplittableRandom(seed);
        float scale = (float) (2.0 / Math.sqrt(dim));
        embedding = randomArray(random, vocab * dim, 1f);
        layerWeights = new float[layers][];
        for (int l = 0; l < layers; l++) {
            layerWeights[l] = randomArray(random, dim * dim, scale);
        }
        output = randomArray(random, vocab * dim, scale);
    }

    private static float[] randomArray(SplittableRandom random, int n, float scale) {
        float[] a = new float[n];
        for (int i = 0; i < n; i++) {
            a[i] = (float) (random.nextDouble(-1, 1) * scale);
        }
        return a;
    }

    public int vocab() {
        return vocab;
    }

    /** Uploads the weights into frozen worker buffers. */
    public SyntheticDecoder load(Worker worker) {
        embeddingBuffer = upload(worker, embedding);
        layerBuffers = new Buffer[layers];
        for (int l = 0; l < layers; l++) {
            layerBuffers[l] = upload(worker, layerWeights[l]);
        }
        outputBuffer = upload(worker, output);
        return this;
    }

    private static Buffer upload(Worker worker, float[] values) {
        Buffer buffer = worker.allocate((long) values.length * Float.BYTES);
        MemorySegment.copy(values, 0, buffer.hostSegment(), ValueLayout.JAVA_FLOAT_UNALIGNED, 0, values.length);
        return buffer.freeze();
    }

    /** A request: the first token and how many to generate. */
    public record Prompt(int firstToken, int tokens) {}

    // ---- kernels -------------------------------------------------------------------------

    /** x = E[token] + CARRY * h; regions: token, E, h, x; scalars: dim. */
    private static final Kernel EMBED = Kernel.of("embed", c -> {
        int token = c.region(0).get(ValueLayout.JAVA_INT, 0);
        int dim = (int) c.scalar(0);
        embedRow(c.region(1), token, c.region(2), c.region(3), dim);
    });

    /** h = x; regions: x, h. */
    private static final Kernel CARRY_COPY = Kernel.of("carry", c -> c.region(1).copyFrom(c.region(0)));

    private static final float CARRY = 0.75f;

    static void embedRow(MemorySegment e, int token, MemorySegment h, MemorySegment x, int dim) {
        long base = (long) token * dim;
        for (int i = 0; i < dim; i++) {
            float value = e.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, base + i)
                    + CARRY * h.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i);
            x.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, value);
        }
    }

    /** out[rows] = tanh(W[rows] · x); regions: W, x, out-rows; scalars: dim, firstRow. */
    private static final Kernel DENSE = Kernel.of("dense_tanh", c -> {
        int dim = (int) c.scalar(0);
        int firstRow = (int) c.scalar(1);
        MemorySegment w = c.region(0);
        MemorySegment x = c.region(1);
        MemorySegment out = c.region(2);
        int rows = (int) (out.byteSize() / Float.BYTES);
        for (int r = 0; r < rows; r++) {
            out.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, r, denseRow(w, x, firstRow + r, dim));
        }
    });

    /** token = argmax(Wout · x); regions: Wout, x, token; scalars: dim, vocab. */
    private static final Kernel LOGITS_ARGMAX = Kernel.of("logits_argmax", c -> {
        int dim = (int) c.scalar(0);
        int vocab = (int) c.scalar(1);
        c.region(2).set(ValueLayout.JAVA_INT, 0, argmaxRow(c.region(0), c.region(1), dim, vocab));
    });

    static float denseRow(MemorySegment w, MemorySegment x, int row, int dim) {
        float sum = 0f;
        long base = (long) row * dim;
        for (int k = 0; k < dim; k++) {
            sum += w.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, base + k) * x.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, k);
        }
        return (float) Math.tanh(sum);
    }

    static int argmaxRow(MemorySegment w, MemorySegment x, int dim, int vocab) {
        int best = 0;
        float bestValue = Float.NEGATIVE_INFINITY;
        for (int v = 0; v < vocab; v++) {
            float sum = 0f;
            long base = (long) v * dim;
            for (int k = 0; k < dim; k++) {
                sum += w.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, base + k) * x.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, k);
            }
            if (sum > bestValue) {
                bestValue = sum;
                best = v;
            }
        }
        return best;
    }

    // ---- program -------------------------------------------------------------------------

    /** The program of one request. {@link #load} must have run. */
    public Program<Prompt> program() {
        if (embeddingBuffer == null) {
            throw new IllegalStateException("load(worker) the decoder before running it");
        }
        return (o, prompt) -> {
            long rowBytes = (long) dim / rowBlocks * Float.BYTES;
            Buffer token = o.allocate(ValueLayout.JAVA_INT, 1);
            Buffer a = o.allocate(ValueLayout.JAVA_FLOAT, dim);
            Buffer b = o.allocate(ValueLayout.JAVA_FLOAT, dim);
            Buffer h = o.allocate(ValueLayout.JAVA_FLOAT, dim);
            MemorySegment first = MemorySegment.ofArray(new int[] {prompt.firstToken()});
            o.upload(token.region(), first);
            for (int step = 0; step < prompt.tokens(); step++) {
                o.submit(EMBED, Orchestrator.scalars(dim), read(token), read(embeddingBuffer), read(h), write(a));
                Buffer in = a;
                Buffer out = b;
                for (int l = 0; l < layers; l++) {
                    for (int block = 0; block < rowBlocks; block++) {
                        int firstRow = block * (dim / rowBlocks);
                        o.submit(DENSE, Orchestrator.scalars(dim, firstRow), read(layerBuffers[l]), read(in),
                                write(out.region(firstRow * (long) Float.BYTES, rowBytes)));
                    }
                    Buffer swap = in;
                    in = out;
                    out = swap;
                }
                o.submit(LOGITS_ARGMAX, Orchestrator.scalars(dim, vocab), read(outputBuffer), read(in), write(token));
                o.submit(CARRY_COPY, read(in), write(h));
                o.endStep(token.region());
            }
        };
    }

    /** The same model, one operation after another on plain arrays: the expected tokens. */
    public int[] reference(Prompt prompt) {
        MemorySegment emb = MemorySegment.ofArray(embedding);
        MemorySegment out = MemorySegment.ofArray(output);
        float[] a = new float[dim];
        float[] b = new float[dim];
        float[] h = new float[dim];
        int token = prompt.firstToken();
        int[] tokens = new int[prompt.tokens()];
        for (int step = 0; step < prompt.tokens(); step++) {
            embedRow(emb, token, MemorySegment.ofArray(h), MemorySegment.ofArray(a), dim);
            float[] in = a;
            float[] next = b;
            for (int l = 0; l < layers; l++) {
                MemorySegment w = MemorySegment.ofArray(layerWeights[l]);
                MemorySegment x = MemorySegment.ofArray(in);
                for (int r = 0; r < dim; r++) {
                    next[r] = denseRow(w, x, r, dim);
                }
                float[] swap = in;
                in = next;
                next = swap;
            }
            token = argmaxRow(out, MemorySegment.ofArray(in), dim, vocab);
            System.arraycopy(in, 0, h, 0, dim);
            tokens[step] = token;
        }
        return tokens;
    }

    /** The character a token stands for. */
    public static char render(int token) {
        return ALPHABET.charAt(Math.floorMod(token, ALPHABET.length()));
    }
}
