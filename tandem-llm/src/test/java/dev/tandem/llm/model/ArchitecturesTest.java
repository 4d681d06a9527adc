package dev.tandem.llm.model;

import static dev.tandem.llm.model.LlamaModelTest.assertMatchesReference;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tandem.kernels.TensorType;
import dev.tandem.llm.reference.ByteTokenizer;
import org.junit.jupiter.api.Test;

/**
 * The features of Gemma 2, Gemma 3 and Phi-3 ({@link Architecture}) run on the worker as the
 * scalar reference defines them: random weights of each family's shape, ragged batches whose
 * contexts outgrow the sliding window and cross KV blocks, logits compared at every step.
 */
class ArchitecturesTest {

    private static int[] prompt(int length, int salt) {
        int[] tokens = new int[length];
        for (int i = 0; i < length; i++) {
            tokens[i] = (i * 37 + salt * 11 + 3) % 256;
        }
        return tokens;
    }

    /** A Gemma-like shape: heads wider than {@code dim / heads}, grouped queries, NeoX rope, tied classifier. */
    private static LlamaConfig shape(TensorType type, int layers, boolean qkNorm, Architecture architecture) {
        return new LlamaConfig(64, layers, 4, 2, 32, 128, ByteTokenizer.VOCAB, 128, 10000f, RopeStyle.NEOX, false,
                1e-6f, type, false, qkNorm, true, architecture);
    }

    /** Gemma 2 with caps small enough that tanh bends the scores and logits, a window of 6 over blocks of 4. */
    private static Architecture gemma2() {
        return Architecture.gemma2(64, 1f / (float) Math.sqrt(32), 1.5f, 3f, 6, 2, 10000f, 1f);
    }

    @Test
    void gemma2SoftcapsPostNormsAndSlidingLayersMatchTheReference() {
        var config = shape(TensorType.F32, 3, false, gemma2());
        var request = LlamaRequest.batch(new int[][] {prompt(1, 1), prompt(7, 2), prompt(20, 3)}, 16);
        assertMatchesReference(config, 31, request, new LlamaModel.Options(4, 2048, 3));
    }

    @Test
    void gemma2Q8_0MatchesTheReference() {
        var config = shape(TensorType.Q8_0, 2, false, gemma2());
        var request = LlamaRequest.batch(new int[][] {prompt(9, 4), prompt(3, 5)}, 12);
        assertMatchesReference(config, 32, request, new LlamaModel.Options(4, 2048, 2));
    }

    /** Gemma 3: q/k norms, two sliding layers to one global, their own rope base, the global layers' positions scaled. */
    @Test
    void gemma3TwoRopeBasesAndSlidingLayersMatchTheReference() {
        var arch = Architecture.gemma3(64, 1f / (float) Math.sqrt(32), 0f, 5, 3, 10000f, 0.125f);
        var config = shape(TensorType.F32, 3, true, arch).withVariants(false, true, true);
        config = new LlamaConfig(config.dim(), config.layers(), config.heads(), config.kvHeads(), config.headDim(),
                config.ffnDim(), config.vocab(), config.contextLength(), 1_000_000f, config.ropeStyle(), false,
                config.normEps(), config.weightType(), false, true, true, arch);
        var request = LlamaRequest.batch(new int[][] {prompt(2, 6), prompt(13, 7)}, 14);
        assertMatchesReference(config, 33, request, new LlamaModel.Options(4, 2048, 2));
    }

    /**
     * A context of several attention partitions (more than {@code PagedAttention.PARTITION_POSITIONS}
     * positions) whose window starts inside a block: the partitions cover the window only.
     */
    @Test
    void aLongContextSlidesPastWholePartitions() {
        var arch = Architecture.gemma2(64, 1f / (float) Math.sqrt(32), 20f, 30f, 300, 2, 10000f, 1f);
        var config = shape(TensorType.F32, 2, false, arch).withContextLength(640);
        var request = LlamaRequest.batch(new int[][] {prompt(530, 8), prompt(40, 9)}, 6);
        assertMatchesReference(config, 34, request, new LlamaModel.Options(16, 2048, 2));
    }

    /** Phi-3: LongRoPE factors divide the frequencies, its attention factor multiplies every rotation. */
    @Test
    void phi3RopeFactorsAndAttentionFactorMatchTheReference() {
        var config = new LlamaConfig(64, 2, 4, 4, 16, 128, ByteTokenizer.VOCAB, 96, 10000f, RopeStyle.NEOX, true, 1e-5f,
                TensorType.Q8_0, false, false, false, Architecture.phi3(1.19f));
        var request = LlamaRequest.batch(new int[][] {prompt(5, 10), prompt(11, 11)}, 16);
        assertMatchesReference(config, 35, request, new LlamaModel.Options(8, 2048, 2));
    }

    @Test
    void layersSlideByLlamaCppsPattern() {
        Architecture gemma2 = Architecture.gemma2(64, 0.1f, 50f, 30f, 4096, 2, 10000f, 1f);
        assertThat(gemma2.sliding(0)).isTrue();
        assertThat(gemma2.sliding(1)).isFalse();
        Architecture gemma3 = Architecture.gemma3(64, 0.1f, 0f, 512, 6, 10000f, 1f);
        assertThat(java.util.stream.IntStream.range(0, 12).filter(gemma3::sliding).toArray())
                .containsExactly(0, 1, 2, 3, 4, 6, 7, 8, 9, 10);
        assertThat(gemma3.window(5)).isZero();
        assertThat(Architecture.gemma3(64, 0.1f, 0f, 0, 6, 10000f, 1f).sliding(0)).isFalse();
        assertThat(Architecture.LLAMA.attentionScale(64)).isEqualTo(0.125f);
    }

    @Test
    void aNegativeCapIsRefusedByName() {
        assertThatThrownBy(() -> Architecture.gemma2(64, 0.1f, -1f, 30f, 4096, 2, 10000f, 1f))
                .hasMessageContaining("attentionSoftcap = -1.0");
    }
}
