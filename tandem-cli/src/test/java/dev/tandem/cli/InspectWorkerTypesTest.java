package dev.tandem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.kernels.TensorType;
import dev.tandem.llm.model.LlamaConfig;
import dev.tandem.llm.model.LlamaWeights;
import dev.tandem.llm.reference.ByteTokenizer;
import dev.tandem.llm.reference.RandomWeights;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

/** The "on a worker" line of {@code tandem inspect}: one type, or each type with its matrices. */
class InspectWorkerTypesTest {

    private static final LlamaConfig SHAPE =
            new LlamaConfig(256, 2, 4, 2, 512, ByteTokenizer.VOCAB, 64, 10000f, 1e-5f, TensorType.Q8_0);

    @Test
    void oneTypeIsNamedOnceWithTheConfigsBytes() {
        assertThat(InspectCommand.workerTypes(new RandomWeights(SHAPE, 1)))
                .isEqualTo("Q8_0 weights, " + InspectCommand.bytes(SHAPE.weightBytes()));
    }

    @Test
    void aMixNamesEachTypesMatricesAndLayersAndCountsTheirOwnBytes() {
        RandomWeights random = new RandomWeights(SHAPE, 1);
        LlamaWeights mixed = new LlamaWeights() {
            @Override
            public LlamaConfig config() {
                return SHAPE;
            }

            @Override
            public MemorySegment tensor(Tensor tensor, int layer) {
                return random.tensor(tensor, layer);
            }

            @Override
            public TensorType type(Tensor tensor, int layer) {
                return (tensor == Tensor.W2 && layer == 1) || tensor == Tensor.OUTPUT ? TensorType.Q6_K : TensorType.Q4_K;
            }
        };
        long bytes = 0;
        for (LlamaWeights.Tensor t : LlamaWeights.Tensor.values()) {
            if (t.present(SHAPE)) {
                for (int l = 0; l < (t.perLayer() ? SHAPE.layers() : 1); l++) {
                    bytes += t.norm() ? t.bytes(SHAPE) : t.bytes(SHAPE, mixed.type(t, l));
                }
            }
        }
        assertThat(bytes).isLessThan(SHAPE.weightBytes());
        assertThat(InspectCommand.workerTypes(mixed)).isEqualTo(
                "Q4_K (token_embedding, wq, wk, wv, wo, w1, w2 in 1 of 2 layers, w3), Q6_K (w2 in 1 of 2 layers, output)"
                        + " weights, " + InspectCommand.bytes(bytes));
    }
}
