package dev.tandem.llm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tandem.CpuDeviceConfig;
import dev.tandem.Outcome;
import dev.tandem.RunOptions;
import dev.tandem.Status;
import dev.tandem.Worker;
import dev.tandem.kernels.TensorType;
import dev.tandem.llm.model.LlamaConfig;
import dev.tandem.llm.model.LlamaModel;
import dev.tandem.llm.model.LlamaRequest;
import dev.tandem.llm.model.LlamaWeights;
import dev.tandem.llm.reference.RandomWeights;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class BadInputTest {

    private static LlamaConfig config(int dim, int layers, int heads, int kvHeads, int ffn, int vocab, int context,
            TensorType type) {
        return new LlamaConfig(dim, layers, heads, kvHeads, ffn, vocab, context, 10000f, 1e-5f, type);
    }

    @Test
    void aKernelLayoutIsNoStoredWeightType() {
        assertThatThrownBy(() -> config(64, 1, 4, 2, 64, 8, 8, TensorType.Q8_0_X16))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("weightType must be a stored type, one of [F32, ")
                .hasMessageEndingWith(", was Q8_0_X16")
                .hasMessageNotContaining("Q4_0_X16");
        assertThatThrownBy(() -> config(64, 1, 4, 2, 64, 8, 8, null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageEndingWith(", was null");
    }

    @ParameterizedTest(name = "{7}")
    @CsvSource(delimiter = '|', textBlock = """
            0   | 1 | 1 | 1 | 8 | 8 | 8 | dim = 0 must be >= 1
            64  | 0 | 4 | 2 | 8 | 8 | 8 | layers = 0 must be >= 1
            64  | 1 | 0 | 1 | 8 | 8 | 8 | heads = 0 must be >= 1
            64  | 1 | 4 | -2 | 8 | 8 | 8 | kvHeads = -2 must be >= 1
            64  | 1 | 4 | 2 | 0 | 8 | 8 | ffnDim = 0 must be >= 1
            64  | 1 | 4 | 2 | 8 | -1 | 8 | vocab = -1 must be >= 1
            64  | 1 | 4 | 2 | 8 | 8 | 0 | contextLength = 0 must be >= 1
            64  | 1 | 3 | 1 | 8 | 8 | 8 | heads = 3 must divide dim = 64
            64  | 1 | 4 | 3 | 8 | 8 | 8 | kvHeads = 3 must divide heads = 4
            12  | 1 | 4 | 2 | 8 | 8 | 8 | headDim = 3 must be even (rotary embedding rotates pairs)
            """)
    void impossibleConfigsFailWithOneLineNamingTheFieldAndTheLimit(int dim, int layers, int heads, int kvHeads,
            int ffn, int vocab, int context, String message) {
        assertThatThrownBy(() -> config(dim, layers, heads, kvHeads, ffn, vocab, context, TensorType.F32))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(message);
    }

    @Test
    void q8WeightsNeedRowsOfWholeBlocks() {
        assertThatThrownBy(() -> config(48, 1, 4, 2, 64, 8, 8, TensorType.Q8_0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("dim = 48 must be a multiple of 32 for Q8_0 weights");
        assertThatThrownBy(() -> config(64, 1, 4, 2, 80, 8, 8, TensorType.Q8_0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("ffnDim = 80 must be a multiple of 32 for Q8_0 weights");
        assertThatThrownBy(() -> config(256, 1, 4, 2, 320, 8, 8, TensorType.Q4_K))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("ffnDim = 320 must be a multiple of 256 for Q4_K weights");
        assertThatThrownBy(() -> config(48, 1, 4, 2, 64, 8, 8, TensorType.Q4_0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("dim = 48 must be a multiple of 32 for Q4_0 weights");
        LlamaConfig q4k = config(256, 1, 4, 2, 512, 8, 8, TensorType.Q4_K);
        assertThatThrownBy(() -> new RandomWeights(q4k, 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("RandomWeights: Q4_K has no quantizer here; write F32 random weights as a Q4_K GGUF instead");
    }

    /** f16 matrices run as f16_x16, which holds finite values only: a NaN weight fails the load by tensor, layer and place. */
    @Test
    void anF16WeightThatIsNaNFailsTheLoadNamingIt() {
        LlamaConfig f16 = config(64, 2, 4, 2, 128, 32, 16, TensorType.F16);
        RandomWeights random = new RandomWeights(f16, 3);
        LlamaWeights poisoned = new LlamaWeights() {
            @Override
            public LlamaConfig config() {
                return f16;
            }

            @Override
            public java.lang.foreign.MemorySegment tensor(Tensor tensor, int layer) {
                java.lang.foreign.MemorySegment bytes = random.tensor(tensor, layer);
                if (tensor == Tensor.W2 && layer == 1) {
                    java.lang.foreign.MemorySegment copy = java.lang.foreign.Arena.ofAuto().allocate(bytes.byteSize());
                    copy.copyFrom(bytes);
                    copy.set(java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED, 2L * (7 * 128 + 9), (short) 0x7e00);
                    return copy;
                }
                return bytes;
            }
        };
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(1))) {
            assertThatThrownBy(() -> LlamaModel.load(worker, poisoned))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("weights: W2 of layer 1: interleaveF16: row 7, column 9 is NaN (0x7e00); f16_x16"
                            + " holds finite values only");
            LlamaModel.load(worker, random).config(); // the same weights without the NaN load
        }
    }

    @Test
    void unknownShapeNamesTheKnownOnes() {
        assertThatThrownBy(() -> LlamaConfig.named("huge"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("model = huge is not a known shape; known: tiny, small");
    }

    @Test
    void requestsPastTheContextAreRejectedByCheckAndByTheProgram() {
        LlamaConfig config = LlamaConfig.named("tiny").withContextLength(16);
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(1))) {
            LlamaModel model = LlamaModel.load(worker, new RandomWeights(config, 1));
            LlamaRequest longPrompt = LlamaRequest.of(new int[17], 1);
            assertThatThrownBy(() -> model.check(longPrompt))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("prompt length = 17 must be <= contextLength = 16");
            LlamaRequest tooMany = LlamaRequest.of(new int[10], 7);
            assertThatThrownBy(() -> model.check(tooMany))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("maxTokens = 7 must be <= contextLength - prompt length = 6");
            assertThatThrownBy(() -> model.check(LlamaRequest.of(new int[] {1, 258}, 1)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("prompt token 1 = 258 must be in [0, vocab = 258)");
            assertThatThrownBy(() -> model.check(LlamaRequest.of(new int[] {1}, 1).withStopToken(300)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("stopToken = 300 must be -1 (none) or in [0, vocab = 258)");

            // The program checks before its first task: the request fails with the same message and
            // leaves no memory behind.
            Outcome outcome = worker.run(model.program(), tooMany, RunOptions.defaults()).completion().join();
            assertThat(outcome.status()).isEqualTo(Status.FAILED);
            assertThat(outcome.cause()).isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("maxTokens = 7 must be <= contextLength - prompt length = 6");
            assertThat(outcome.tokens()).isZero();
        }
    }

    @Test
    void emptyPromptsAndZeroTokensAreRejected() {
        assertThatThrownBy(() -> LlamaRequest.of(new int[0], 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("prompt 0 is empty; a prompt needs at least one token");
        assertThatThrownBy(() -> LlamaRequest.of(new int[] {1}, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("maxTokens = 0 must be >= 1");
        assertThatThrownBy(() -> LlamaRequest.of(new int[] {1}, 1).withSampler(null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("sampler must not be null");
    }
}
