package dev.tandem.llm.model;

import dev.tandem.kernels.TensorType;
import dev.tandem.llm.reference.RandomWeights;
import java.lang.foreign.MemorySegment;

/**
 * Where a {@link LlamaModel}'s weights come from: random ({@link RandomWeights}) or a checkpoint
 * ({@link dev.tandem.llm.gguf.GgufModel}). The model asks for each tensor once, copies it into a frozen worker
 * buffer and keeps no reference to the segment.
 *
 * <p>Layouts are llama.cpp's: matrices are row-major {@code [rows, cols]} (one output per row) in
 * {@link LlamaConfig#weightType()}, norm weights are f32 vectors, all little-endian. The query and
 * key rows rotate interleaved pairs ({@link dev.tandem.kernels.RopeOps}).
 */
public interface LlamaWeights {

    /** The shape the tensors have. */
    LlamaConfig config();

    /**
     * The bytes of one tensor, {@link Tensor#bytes} long; asked only for tensors {@link
     * Tensor#present present} in the config.
     *
     * @param layer the layer for {@link Tensor#perLayer() per-layer} tensors, else ignored
     */
    MemorySegment tensor(Tensor tensor, int layer);

    /**
     * How matrix {@code tensor} of layer {@code layer} is stored ({@code layer} is ignored for
     * tensors that are not {@link Tensor#perLayer() per layer}): {@link LlamaConfig#weightType()}
     * unless the source keeps some matrices, or some layers of one, in another type the kernels
     * read (llama.cpp's Q4_K_M files keep the classifier and half the layers' value and down
     * projections in Q6_K). Never asked for norm weights.
     */
    default TensorType type(Tensor tensor, int layer) {
        return config().weightType();
    }

    /** The tensors of a Llama-style decoder; which are {@link #present} depends on the config. */
    enum Tensor {
        /** {@code [vocab, dim]}: the input embedding of each token. */
        TOKEN_EMBEDDING(false, false),
        /** {@code [dim]}: rmsnorm weight before attention. */
        ATTENTION_NORM(true, true),
        /** {@code [heads * headDim, dim]}. */
        WQ(true, false),
        /** {@code [kvHeads * headDim, dim]}. */
        WK(true, false),
        /** {@code [kvHeads * headDim, dim]}. */
        WV(true, false),
        /** {@code [heads * headDim]}: the query bias, with {@link LlamaConfig#attentionBias()}. */
        BQ(true, true),
        /** {@code [kvHeads * headDim]}: the key bias, with {@link LlamaConfig#attentionBias()}. */
        BK(true, true),
        /** {@code [kvHeads * headDim]}: the value bias, with {@link LlamaConfig#attentionBias()}. */
        BV(true, true),
        /** {@code [headDim]}: rmsnorm weight of each query head, with {@link LlamaConfig#qkNorm()}. */
        Q_NORM(true, true),
        /** {@code [headDim]}: rmsnorm weight of each key head, with {@link LlamaConfig#qkNorm()}. */
        K_NORM(true, true),
        /** {@code [dim, heads * headDim]}. */
        WO(true, false),
        /** {@code [dim]}: rmsnorm weight before the feed-forward network. */
        FFN_NORM(true, true),
        /** {@code [ffnDim, dim]}: the gate. */
        W1(true, false),
        /** {@code [dim, ffnDim]}: the down projection. */
        W2(true, false),
        /** {@code [ffnDim, dim]}: the up projection. */
        W3(true, false),
        /** {@code [dim]}: rmsnorm weight before the classifier. */
        OUTPUT_NORM(false, true),
        /** {@code [vocab, dim]}: the classifier; with {@link LlamaConfig#tiedEmbeddings()}, the token embedding's bytes. */
        OUTPUT(false, false),
        /** {@code [headDim / 2]}: divisors of the rotary frequencies, with {@link LlamaConfig#ropeFactors()}. */
        ROPE_FREQS(false, true),
        /** {@code [dim]}: rmsnorm weight of the attention output before its residual add, with {@link Architecture#postNorms()}. */
        ATTENTION_POST_NORM(true, true),
        /** {@code [dim]}: rmsnorm weight of the FFN output before its residual add, with {@link Architecture#postNorms()}. */
        FFN_POST_NORM(true, true);

        private final boolean perLayer;
        private final boolean norm;

        Tensor(boolean perLayer, boolean norm) {
            this.perLayer = perLayer;
            this.norm = norm;
        }

        /** Whether each layer has its own. */
        public boolean perLayer() {
            return perLayer;
        }

        /** Whether it is an f32 vector (a norm weight, a bias, the rope factors), else a matrix in the config's weight type. */
        public boolean norm() {
            return norm;
        }

        /** Whether a model of config {@code c} has this tensor. */
        public boolean present(LlamaConfig c) {
            return switch (this) {
                case BQ, BK, BV -> c.attentionBias();
                case Q_NORM, K_NORM -> c.qkNorm();
                case ROPE_FREQS -> c.ropeFactors();
                case ATTENTION_POST_NORM, FFN_POST_NORM -> c.architecture().postNorms();
                default -> true;
            };
        }

        public int rows(LlamaConfig c) {
            return switch (this) {
                case TOKEN_EMBEDDING, OUTPUT -> c.vocab();
                case ATTENTION_NORM, FFN_NORM, OUTPUT_NORM, BQ, BK, BV, Q_NORM, K_NORM, ROPE_FREQS,
                        ATTENTION_POST_NORM, FFN_POST_NORM -> 1;
                case WO, W2 -> c.dim();
                case WQ -> c.qDim();
                case WK, WV -> c.kvDim();
                case W1, W3 -> c.ffnDim();
            };
        }

        public int cols(LlamaConfig c) {
            return switch (this) {
                case W2 -> c.ffnDim();
                case WO, BQ -> c.qDim();
                case BK, BV -> c.kvDim();
                case Q_NORM, K_NORM -> c.headDim();
                case ROPE_FREQS -> c.headDim() / 2;
                default -> c.dim();
            };
        }

        /** Bytes of the tensor (of one layer), a matrix in the config's weight type. */
        public long bytes(LlamaConfig c) {
            return bytes(c, c.weightType());
        }

        /** Bytes of the tensor (of one layer), a matrix in {@code type}. */
        public long bytes(LlamaConfig c, TensorType type) {
            return norm ? (long) cols(c) * Float.BYTES : rows(c) * type.rowBytes(cols(c));
        }
    }
}
