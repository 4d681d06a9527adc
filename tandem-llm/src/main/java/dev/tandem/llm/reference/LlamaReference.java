package dev.tandem.llm.reference;

import dev.tandem.kernels.Ops;
import dev.tandem.kernels.TensorType;
import dev.tandem.llm.model.Architecture;
import dev.tandem.llm.model.Checks;
import dev.tandem.llm.model.KvType;
import dev.tandem.llm.model.LlamaConfig;
import dev.tandem.llm.model.LlamaModel;
import dev.tandem.llm.model.LlamaRequest;
import dev.tandem.llm.model.LlamaWeights.Tensor;
import dev.tandem.llm.model.LlamaWeights;
import dev.tandem.llm.model.RopeStyle;
import dev.tandem.llm.reference.SamplerReference;
import dev.tandem.llm.sampling.SamplerConfig;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The same decoder as {@link LlamaModel}, as plain loops over Java arrays, one sequence and one
 * position at a time, in double: the oracle the model's tokens and logits are checked against.
 * It shares no code with the kernels or the runtime; it reads the same {@link LlamaWeights}
 * (dequantizing q8_0 itself) and follows the definitions of rmsnorm, rotary embedding,
 * attention, SiLU and GELU and sampling as the kernels document them, and every feature of the
 * config's {@link Architecture} (embedding scale, post-norms, soft-capping, sliding layers with
 * their own rope base, linear rope scaling, the rope attention factor).
 *
 * <p>Thread-safe after construction: each {@link Sequence} is confined to its caller.
 */
public final class LlamaReference {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort F16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /**
     * Logits of the reference and the model agree within this fraction of the largest magnitude
     * among the reference's logits; it covers f32 accumulation over a few layers of dim up to a
     * few thousand.
     */
    public static final double LOGIT_TOLERANCE = 2e-3;

    /**
     * {@link #LOGIT_TOLERANCE} for a model with block-quantized matrices (q8_0, q4_0 and the
     * rest), whose products round their input to q8_0 blocks. Where the model's f32 input and the reference's double input straddle a
     * rounding boundary they round to neighbouring integers: that input moves by {@code amax/127}
     * of its block, every output of the product moves with it, and the key or value it lands in
     * stays in the cache. One such flip measured 3e-3 to 5.4e-3 of the largest logit on the
     * random models of the tests (dim 256, 2 layers); this leaves room for two. A wrong weight
     * or layout moves logits by their own magnitude, far above it.
     */
    public static final double QUANTIZED_INPUT_LOGIT_TOLERANCE = 1e-2;

    private final LlamaConfig c;
    private final float[][][] weights = new float[Tensor.values().length][][];
    /** Per matrix and layer, whether it is a quantized product (q8_0 too): it takes its input quantized to q8_0 blocks. */
    private final boolean[][] quantizedInputs = new boolean[Tensor.values().length][];

    /** The element type the keys and values are kept as, as the model's cache keeps them. */
    private final KvType kvType;

    /** The reference of a model whose KV cache keeps f32 keys and values: every value as computed. */
    public LlamaReference(LlamaWeights source) {
        this(source, KvType.F32);
    }

    /**
     * The reference of a model whose KV cache keeps its keys and values as {@code kvType}: each is
     * rounded to it (to f32, then to the nearest f16 for {@link KvType#F16}) as it is cached, so
     * that the reference sees the cache the model reads.
     */
    public LlamaReference(LlamaWeights source, KvType kvType) {
        this.c = source.config();
        this.kvType = kvType;
        for (Tensor tensor : Tensor.values()) {
            if (!tensor.present(c)) {
                continue;
            }
            int copies = tensor.perLayer() ? c.layers() : 1;
            float[][] array = new float[copies][];
            boolean[] q4 = new boolean[copies];
            for (int l = 0; l < copies; l++) {
                TensorType type = tensor.norm() ? TensorType.F32 : source.type(tensor, l);
                array[l] = decode(source.tensor(tensor, l), tensor, type);
                Tensor stored = tensor == Tensor.OUTPUT && c.tiedEmbeddings() ? Tensor.TOKEN_EMBEDDING : tensor;
                q4[l] = !tensor.norm() && tensor != Tensor.TOKEN_EMBEDDING
                        && source.type(stored, l).isQuantized();
            }
            weights[tensor.ordinal()] = array;
            quantizedInputs[tensor.ordinal()] = q4;
        }
    }

    public LlamaConfig config() {
        return c;
    }

    private float[] decode(MemorySegment bytes, Tensor tensor, TensorType type) {
        int rows = tensor.rows(c);
        int cols = tensor.cols(c);
        float[] values = new float[rows * cols];
        if (tensor.norm() || type == TensorType.F32) {
            for (int i = 0; i < values.length; i++) {
                values[i] = bytes.getAtIndex(F32, i);
            }
            return values;
        }
        if (type != TensorType.Q8_0) {
            // the other block types: the scalar dequantizer, itself checked against llama.cpp's definition.
            MemorySegment f32 = Arena.ofAuto().allocate((long) values.length * Float.BYTES, 4);
            Ops.scalar().dequantize(type, bytes, 0, f32, 0, values.length);
            for (int i = 0; i < values.length; i++) {
                values[i] = f32.getAtIndex(F32, i);
            }
            return values;
        }
        // q8_0: per 32 values, an f16 scale then 32 int8.
        long at = 0;
        for (int i = 0; i < values.length; i += 32) {
            float scale = Float.float16ToFloat(bytes.get(F16, at));
            for (int j = 0; j < 32; j++) {
                values[i + j] = bytes.get(ValueLayout.JAVA_BYTE, at + 2 + j) * scale;
            }
            at += 34;
        }
        return values;
    }

    private float[] w(Tensor tensor, int layer) {
        return weights[tensor.ordinal()][layer];
    }

    /**
     * Matrix {@code tensor} of {@code layer} times {@code x}: with {@code x} first quantized to
     * q8_0 blocks where the matrix is of a block type, as tandem's kernels for them compute it
     * ({@link dev.tandem.kernels.MatmulOps#matmulQ8_0_X16}, {@link dev.tandem.kernels.MatmulOps#matmulQ4_0_X16}, {@link
     * dev.tandem.kernels.MatmulOps#matmulQ4_K_X16}, {@link dev.tandem.kernels.MatmulOps#matmulQ6_K_X16}).
     */
    private double[] project(Tensor tensor, int layer, double[] x, int rows) {
        boolean q4 = quantizedInputs[tensor.ordinal()][layer];
        return matvec(w(tensor, layer), q4 ? quantizedToQ8_0(x) : x, rows);
    }

    /**
     * {@code x} as q8_0 blocks give it back: per 32 values, {@code amax / 127} rounded to f16 times
     * each value scaled by {@code 127 / amax} and rounded half away from zero.
     */
    static double[] quantizedToQ8_0(double[] x) {
        double[] out = new double[x.length];
        for (int block = 0; block < x.length; block += 32) {
            float amax = 0f;
            for (int i = block; i < block + 32; i++) {
                amax = Math.max(amax, Math.abs((float) x[i]));
            }
            float scale = amax != 0f ? 127f / amax : 0f;
            double d = Float.float16ToFloat(Float.floatToFloat16(amax / 127f));
            for (int i = block; i < block + 32; i++) {
                float v = (float) x[i] * scale;
                out[i] = (int) (v + Math.copySign(0.5f, v)) * d;
            }
        }
        return out;
    }

    /**
     * The fraction of the largest logit within which this model's logits and the reference's
     * agree: {@link #QUANTIZED_INPUT_LOGIT_TOLERANCE} where a product quantizes its input,
     * {@link #LOGIT_TOLERANCE} otherwise.
     */
    public double logitTolerance() {
        for (boolean[] layers : quantizedInputs) {
            for (boolean q4 : layers == null ? new boolean[0] : layers) {
                if (q4) {
                    return QUANTIZED_INPUT_LOGIT_TOLERANCE;
                }
            }
        }
        return LOGIT_TOLERANCE;
    }

    /** {@code value} as the model's cache keeps it: rounded to f32, and to f16 for an f16 cache. */
    private double cached(double value) {
        float f32 = (float) value;
        return kvType == KvType.F16 ? Float.float16ToFloat(Float.floatToFloat16(f32)) : f32;
    }

    /** A sequence at position 0 with an empty cache. */
    public Sequence sequence() {
        return new Sequence();
    }

    /** One sequence: its KV cache and next position. Not thread-safe. */
    public final class Sequence {
        private final double[][] keys = new double[c.layers()][];
        private final double[][] values = new double[c.layers()][];
        private int position;

        private Sequence() {
            for (int l = 0; l < c.layers(); l++) {
                keys[l] = new double[c.contextLength() * c.kvDim()];
                values[l] = new double[c.contextLength() * c.kvDim()];
            }
        }

        public int position() {
            return position;
        }

        /** Runs {@code token} at the next position and returns the logits that follow it. */
        public float[] forward(int token) {
            if (position >= c.contextLength()) {
                throw new IllegalStateException("the sequence is at contextLength = " + c.contextLength());
            }
            int dim = c.dim();
            int hd = c.headDim();
            int qDim = c.qDim();
            int kvDim = c.kvDim();
            int group = c.heads() / c.kvHeads();
            Architecture arch = c.architecture();
            double[] x = new double[dim];
            float[] embedding = w(Tensor.TOKEN_EMBEDDING, 0);
            for (int i = 0; i < dim; i++) {
                x[i] = embedding[token * dim + i] * (double) arch.embeddingScale();
            }
            for (int l = 0; l < c.layers(); l++) {
                double[] xn = rmsnorm(x, w(Tensor.ATTENTION_NORM, l));
                double[] q = project(Tensor.WQ, l, xn, qDim);
                double[] k = project(Tensor.WK, l, xn, kvDim);
                double[] v = project(Tensor.WV, l, xn, kvDim);
                if (c.attentionBias()) {
                    add(q, w(Tensor.BQ, l));
                    add(k, w(Tensor.BK, l));
                    add(v, w(Tensor.BV, l));
                }
                if (c.qkNorm()) {
                    headNorm(q, c.heads(), w(Tensor.Q_NORM, l));
                    headNorm(k, c.kvHeads(), w(Tensor.K_NORM, l));
                }
                boolean sliding = arch.sliding(l);
                rope(q, c.heads(), sliding);
                rope(k, c.kvHeads(), sliding);
                for (int i = 0; i < kvDim; i++) {
                    keys[l][position * kvDim + i] = cached(k[i]);
                    values[l][position * kvDim + i] = cached(v[i]);
                }
                double[] att = new double[qDim];
                double scale = arch.attentionScale(hd);
                double cap = arch.attentionSoftcap();
                // A sliding layer sees the keys at positions (position - window, position].
                int first = arch.sliding(l) ? Math.max(0, position + 1 - arch.slidingWindow()) : 0;
                for (int h = 0; h < c.heads(); h++) {
                    int kvh = h / group;
                    double[] scores = new double[position + 1];
                    double max = Double.NEGATIVE_INFINITY;
                    for (int t = first; t <= position; t++) {
                        double dot = 0;
                        for (int i = 0; i < hd; i++) {
                            dot += q[h * hd + i] * keys[l][t * kvDim + kvh * hd + i];
                        }
                        scores[t] = dot * scale;
                        if (cap > 0) {
                            scores[t] = cap * Math.tanh(scores[t] / cap);
                        }
                        max = Math.max(max, scores[t]);
                    }
                    double sum = 0;
                    for (int t = first; t <= position; t++) {
                        scores[t] = Math.exp(scores[t] - max);
                        sum += scores[t];
                    }
                    for (int t = first; t <= position; t++) {
                        double weight = scores[t] / sum;
                        for (int i = 0; i < hd; i++) {
                            att[h * hd + i] += weight * values[l][t * kvDim + kvh * hd + i];
                        }
                    }
                }
                double[] attended = project(Tensor.WO, l, att, dim);
                add(x, arch.postNorms() ? rmsnorm(attended, w(Tensor.ATTENTION_POST_NORM, l)) : attended);
                xn = rmsnorm(x, w(Tensor.FFN_NORM, l));
                double[] gate = project(Tensor.W1, l, xn, c.ffnDim());
                double[] up = project(Tensor.W3, l, xn, c.ffnDim());
                for (int i = 0; i < gate.length; i++) {
                    gate[i] = activation(gate[i]) * up[i];
                }
                double[] down = project(Tensor.W2, l, gate, dim);
                add(x, arch.postNorms() ? rmsnorm(down, w(Tensor.FFN_POST_NORM, l)) : down);
            }
            double[] xf = rmsnorm(x, w(Tensor.OUTPUT_NORM, 0));
            double[] logits = project(Tensor.OUTPUT, 0, xf, c.vocab());
            position++;
            double cap = arch.logitSoftcap();
            float[] out = new float[logits.length];
            for (int i = 0; i < out.length; i++) {
                out[i] = (float) (cap > 0 ? cap * Math.tanh(logits[i] / cap) : logits[i]);
            }
            return out;
        }

        /**
         * Each head's pairs rotated by {@code position * scale * theta^(-2i / headDim) / factor[i]}
         * (a sliding layer: its own theta and scale), the rotation times the rope attention factor:
         * pairs {@code (x[2i], x[2i+1])} when interleaved, {@code (x[i], x[i + headDim/2])} for NeoX.
         */
        private void rope(double[] v, int heads, boolean sliding) {
            int hd = c.headDim();
            boolean neox = c.ropeStyle() == RopeStyle.NEOX;
            Architecture arch = c.architecture();
            double theta = sliding ? arch.slidingRopeTheta() : c.ropeTheta();
            double scale = sliding ? arch.slidingRopeScale() : arch.ropeScale();
            double factor = arch.ropeAttentionFactor();
            for (int h = 0; h < heads; h++) {
                for (int i = 0; i < hd / 2; i++) {
                    double angle = position * scale * Math.pow(theta, -2.0 * i / hd);
                    if (c.ropeFactors()) {
                        angle /= w(Tensor.ROPE_FREQS, 0)[i];
                    }
                    double cos = Math.cos(angle) * factor;
                    double sin = Math.sin(angle) * factor;
                    int a = h * hd + (neox ? i : 2 * i);
                    int b = h * hd + (neox ? i + hd / 2 : 2 * i + 1);
                    double x0 = v[a];
                    double x1 = v[b];
                    v[a] = x0 * cos - x1 * sin;
                    v[b] = x0 * sin + x1 * cos;
                }
            }
        }

        /** Each head of {@code v} rmsnormed on its own, by the one weight of {@code headDim} values. */
        private void headNorm(double[] v, int heads, float[] weight) {
            int hd = c.headDim();
            for (int h = 0; h < heads; h++) {
                double[] head = Arrays.copyOfRange(v, h * hd, (h + 1) * hd);
                System.arraycopy(rmsnorm(head, weight), 0, v, h * hd, hd);
            }
        }
    }

    /** The FFN gate's activation: SiLU, or GELU in its tanh form (Gemma). */
    private double activation(double g) {
        if (c.architecture().activation() == Architecture.Activation.GELU_TANH) {
            return 0.5 * g * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (g + 0.044715 * g * g * g)));
        }
        return g / (1 + Math.exp(-g));
    }

    private double[] rmsnorm(double[] x, float[] weight) {
        double squares = 0;
        for (double v : x) {
            squares += v * v;
        }
        double inverse = 1 / Math.sqrt(squares / x.length + c.normEps());
        double[] out = new double[x.length];
        for (int i = 0; i < x.length; i++) {
            out[i] = weight[i] * (x[i] * inverse);
        }
        return out;
    }

    private static double[] matvec(float[] w, double[] x, int rows) {
        int cols = x.length;
        double[] out = new double[rows];
        for (int r = 0; r < rows; r++) {
            double sum = 0;
            int base = r * cols;
            for (int k = 0; k < cols; k++) {
                sum += w[base + k] * x[k];
            }
            out[r] = sum;
        }
        return out;
    }

    private static void add(double[] x, float[] delta) {
        for (int i = 0; i < x.length; i++) {
            x[i] += delta[i];
        }
    }

    private static void add(double[] x, double[] delta) {
        for (int i = 0; i < x.length; i++) {
            x[i] += delta[i];
        }
    }

    // ---- generation -----------------------------------------------------------------------------

    /**
     * What one sequence of a request yields.
     *
     * @param tokens the tokens in step order, up to and including the stop token
     * @param logits per token, the logits it was picked from
     */
    public record Generation(int[] tokens, float[][] logits) {}

    /** The tokens sequence {@code b} of {@code request} yields, as {@link LlamaModel}'s program defines them. */
    public Generation generate(LlamaRequest request, int b) {
        if (request.grammar() != null) {
            throw new IllegalArgumentException("the reference decodes without a grammar");
        }
        Sequence sequence = sequence();
        float[] logits = null;
        for (int token : request.prompt(b)) {
            logits = sequence.forward(token);
        }
        List<float[]> allLogits = new ArrayList<>();
        int[] tokens = new int[request.maxTokens()];
        int n = 0;
        while (n < request.maxTokens()) {
            int token = pick(logits, request.sampler(), n, b, history(request.prompt(b), tokens, n));
            allLogits.add(logits);
            tokens[n++] = token;
            if (token == request.stopToken() || n == request.maxTokens()) {
                break;
            }
            logits = sequence.forward(token);
        }
        return new Generation(Arrays.copyOf(tokens, n), allLogits.toArray(float[][]::new));
    }

    /**
     * A verdict on a stream of greedy tokens: the reference runs the stream's own tokens (teacher
     * forcing) and at each step the stream's token must be the reference's argmax, or tie with it
     * within {@link #logitTolerance()}.
     *
     * @param steps      steps checked
     * @param ties       steps where the stream took a token that ties with the reference's choice
     * @param mismatch   the first step where the stream's token is not the reference's, or -1
     * @param expected   the reference's token at {@code mismatch}
     */
    public record Verdict(int steps, int ties, int mismatch, int expected) {
        public boolean ok() {
            return mismatch < 0;
        }
    }

    /**
     * Checks the tokens one greedy sequence yielded ({@code actual}, up to its stop token) against
     * its prompt; with sampling, the stream's tokens must equal the reference's draws.
     */
    public Verdict verify(int[] prompt, int[] actual, SamplerConfig sampler, int b) {
        Sequence sequence = sequence();
        float[] logits = null;
        for (int token : prompt) {
            logits = sequence.forward(token);
        }
        int ties = 0;
        for (int k = 0; k < actual.length; k++) {
            int expected = pick(logits, sampler, k, b, history(prompt, actual, k));
            if (actual[k] != expected) {
                if (sampler.greedy() && actual[k] >= 0 && actual[k] < logits.length
                        && logits[expected] - logits[actual[k]] <= logitTolerance() * maxMagnitude(logits)) {
                    ties++;
                } else {
                    return new Verdict(k + 1, ties, k, expected);
                }
            }
            if (k + 1 < actual.length) {
                logits = sequence.forward(actual[k]);
            }
        }
        return new Verdict(actual.length, ties, -1, -1);
    }

    public static double maxMagnitude(float[] values) {
        double max = 0;
        for (float v : values) {
            max = Math.max(max, Math.abs(v));
        }
        return max;
    }

    /** {@code prompt} followed by the first {@code n} of {@code tokens}. */
    private static int[] history(int[] prompt, int[] tokens, int n) {
        int[] history = Arrays.copyOf(prompt, prompt.length + n);
        System.arraycopy(tokens, 0, history, prompt.length, n);
        return history;
    }

    /**
     * The token picked from {@code logits} for token {@code step} of sequence {@code b}, after
     * {@code history} (the sequence's prompt, then its tokens before this one): greedy, or the
     * draw of {@link SamplerReference} with seed {@code sampler.seed() + b} and the penalty window
     * that history gives, as {@link LlamaRequest#sampler()} defines it.
     */
    public static int pick(float[] logits, SamplerConfig sampler, long step, int b, int[] history) {
        SamplerConfig config = sampler.toBuilder().seed(sampler.seed() + b).build();
        int promptLength = (int) (history.length - step);
        int from = config.penalizePrompt() ? 0 : promptLength;
        int start = Math.max(from, history.length - config.repeatLastN());
        return SamplerReference.sample(logits, config, Arrays.copyOfRange(history, start, history.length), step);
    }
}
