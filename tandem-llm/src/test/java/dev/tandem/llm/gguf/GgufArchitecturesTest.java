package dev.tandem.llm.gguf;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tandem.CpuDeviceConfig;
import dev.tandem.Worker;
import dev.tandem.kernels.TensorType;
import dev.tandem.llm.model.Architecture;
import dev.tandem.llm.model.LlamaConfig;
import dev.tandem.llm.model.LlamaWeights.Tensor;
import dev.tandem.llm.model.RopeStyle;
import dev.tandem.llm.reference.RandomWeights;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Gemma 2, Gemma 3 and Phi-3 files as llama.cpp's converter writes them load with the features
 * llama.cpp derives from them, and decode as the reference does on the same weights.
 */
class GgufArchitecturesTest {
    @TempDir
    Path dir;

    private static LlamaConfig gemma(String arch, int layers, boolean qkNorm, Architecture a, float theta) {
        return new LlamaConfig(256, layers, 4, 2, 64, 512, 256, 64, theta, RopeStyle.NEOX, false, 1e-6f,
                TensorType.F32, false, qkNorm, true, a);
    }

    @Test
    void aGemma2FileLoadsWithLlamaCppsDefaultsAndDecodesAsTheReference() throws IOException {
        // No softcap or window keys: llama.cpp's defaults (50, 30, 4096 every other layer).
        LlamaConfig expected = gemma("gemma2", 2, false,
                Architecture.gemma2(256, 1f / 8f, 50f, 30f, 4096, 2, 10000f, 1f), 10000f);
        Path p = dir.resolve("gemma2.gguf");
        new GgufCheckpointWriter(new RandomWeights(expected, 5)).architecture("gemma2").matrixType(GgmlType.Q8_0)
                .write(p);
        try (GgufModel weights = GgufModel.open(p); Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
            assertThat(weights.config()).isEqualTo(expected.withWeightType(TensorType.Q8_0));
            GgufTensorTypesTest.checkAgainstTheReference(worker, weights);
        }
    }

    @Test
    void aGemma3FileSlidesFiveLayersInSixWithItsOwnRopeBase() throws IOException {
        Architecture a = Architecture.gemma3(256, 1f / 8f, 0f, 4, 6, 10000f, 0.125f);
        LlamaConfig expected = gemma("gemma3", 7, true, a, 1_000_000f);
        Path p = dir.resolve("gemma3.gguf");
        new GgufCheckpointWriter(new RandomWeights(expected, 6)).architecture("gemma3")
                .metadata("gemma3.attention.sliding_window", 4)
                .metadata("gemma3.rope.scaling.type", "linear").metadata("gemma3.rope.scaling.factor", 8f)
                .write(p);
        try (GgufModel weights = GgufModel.open(p); Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
            assertThat(weights.config()).isEqualTo(expected);
            assertThat(weights.config().architecture().sliding(5)).isFalse();
            GgufTensorTypesTest.checkAgainstTheReference(worker, weights);
        }
    }

    /** Fused q/k/v and gate/up split by rows; the short factors up to the original context, the long ones past it. */
    @Test
    void aPhi3FileSplitsItsFusedMatricesAndPicksItsRopeFactorsByContext() throws IOException {
        LlamaConfig expected = new LlamaConfig(256, 2, 4, 4, 64, 512, 256, 64, 10000f, RopeStyle.NEOX, true, 1e-5f,
                TensorType.F32, false, false, false, Architecture.phi3(1.19f));
        RandomWeights random = new RandomWeights(expected, 7);
        float[] longFactors = new float[32];
        Arrays.fill(longFactors, 3f);
        Path p = dir.resolve("phi3.gguf");
        new GgufCheckpointWriter(random).architecture("phi3").fusedLikePhi3(longFactors)
                .metadata("phi3.rope.scaling.original_context_length", 32)
                .metadata("phi3.rope.scaling.attn_factor", 1.19f).write(p);
        try (GgufModel weights = GgufModel.open(p, 32); Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
            assertThat(weights.config()).isEqualTo(expected.withContextLength(32));
            assertThat(weights.file().tensor("blk.0.attn_q.weight")).isEmpty();
            for (Tensor t : new Tensor[] {Tensor.WQ, Tensor.WK, Tensor.WV, Tensor.W1, Tensor.W3, Tensor.ROPE_FREQS}) {
                assertThat(weights.tensor(t, 1).toArray(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED))
                        .as("%s", t).containsExactly(random.tensor(t, t.perLayer() ? 1 : 0).toArray(
                                java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED));
            }
            GgufTensorTypesTest.checkAgainstTheReference(worker, weights);
        }
        try (GgufModel weights = GgufModel.open(p)) {
            assertThat(weights.config().contextLength()).isEqualTo(64);
            assertThat(weights.tensor(Tensor.ROPE_FREQS, 0).toArray(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED))
                    .containsOnly(3f);
        }
    }

    @Test
    void aSlidingPatternThatIsNotOneIntegerIsRefusedByName() throws IOException {
        LlamaConfig c = gemma("gemma3", 1, true, Architecture.gemma3(256, 1f / 8f, 0f, 4, 6, 10000f, 1f), 1e6f);
        Path p = dir.resolve("pattern.gguf");
        new GgufCheckpointWriter(new RandomWeights(c, 8)).architecture("gemma3")
                .metadata("gemma3.attention.sliding_window", 4)
                .metadata("gemma3.attention.sliding_window_pattern", "per layer").write(p);
        assertThatThrownBy(() -> GgufModel.open(p)).isInstanceOf(GgufException.class)
                .hasMessageContaining("gemma3.attention.sliding_window_pattern is a STRING, expected an integer");
    }
}
