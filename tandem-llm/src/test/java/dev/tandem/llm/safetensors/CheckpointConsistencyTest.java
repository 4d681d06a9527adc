package dev.tandem.llm.safetensors;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.CpuDeviceConfig;
import dev.tandem.RunOptions;
import dev.tandem.Token;
import dev.tandem.TokenStream;
import dev.tandem.Worker;
import dev.tandem.kernels.Ops;
import dev.tandem.kernels.TensorType;
import dev.tandem.llm.gguf.GgufCheckpointWriter;
import dev.tandem.llm.gguf.GgufModel;
import dev.tandem.llm.model.LlamaConfig;
import dev.tandem.llm.model.LlamaModel;
import dev.tandem.llm.model.LlamaRequest;
import dev.tandem.llm.model.LlamaWeights;
import dev.tandem.llm.model.RopeStyle;
import dev.tandem.llm.reference.RandomWeights;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The same random model written as a GGUF file (llama.cpp's layout: interleaved rope for llama
 * and mistral, its converter's q/k row permutation) and as a Hugging Face directory (rotate_half
 * rope, rows as trained), each loaded through its own loader into a {@link LlamaModel}: their
 * logits agree to f32 rounding at every step of a few prompts. This pins both loaders, both rope
 * styles and the permutation convention at once: a wrong permutation, rope style or tensor name
 * moves the logits by their own magnitude, not by {@link #TOLERANCE}.
 */
class CheckpointConsistencyTest {
    /** Fraction of the largest logit: the two differ only in the order of f32 sums inside attention. */
    static final double TOLERANCE = 1e-4;

    static final int[][] PROMPTS = {{1, 7, 42, 99}, {3}, {120, 5, 5, 5, 17, 64, 2, 88, 31}};

    @TempDir
    Path dir;

    /** A small shape of every variant: the Hugging Face layout (NeoX rope), f32. */
    static LlamaConfig hf(String variant) {
        LlamaConfig plain = new LlamaConfig(64, 2, 4, 2, 16, 96, 128, 64, 10000f, RopeStyle.NEOX, false, 1e-5f,
                TensorType.F32, false, false, false);
        return switch (variant) {
            case "llama", "mistral", "llama3-rope", "llama-bf16" -> plain;
            case "llama-bias-tied" -> plain.withVariants(true, false, true);
            case "qwen2" -> plain.withVariants(true, false, false);
            case "qwen3" -> new LlamaConfig(64, 2, 4, 2, 32, 96, 128, 64, 1_000_000f, RopeStyle.NEOX, false, 1e-6f,
                    TensorType.F32, false, true, true);
            default -> throw new AssertionError(variant);
        };
    }

    @ParameterizedTest
    @ValueSource(strings = {"llama", "llama-bias-tied", "mistral", "llama3-rope", "qwen2", "qwen3", "llama-bf16"})
    void ggufAndSafetensorsOfTheSameModelGiveTheSameLogits(String variant) throws IOException {
        LlamaConfig config = hf(variant);
        LlamaWeights random = new RandomWeights(config, 1234 + variant.hashCode());
        // The bf16 variant: every value rounded to bf16 first, so the GGUF's f32 norms hold what
        // the safetensors file's bf16 norms widen to, and both files hold one model.
        LlamaWeights weights = variant.equals("llama-bf16") ? bf16Rounded(random) : random;
        String arch = variant.startsWith("qwen") ? variant : variant.equals("mistral") ? "mistral" : "llama";
        boolean interleaved = !arch.startsWith("qwen");
        Path gguf = dir.resolve(variant + ".gguf");
        GgufCheckpointWriter g = new GgufCheckpointWriter(weights).architecture(arch).fromHuggingFace(interleaved);
        HuggingFaceDirectoryWriter h = new HuggingFaceDirectoryWriter(weights).modelType(arch);
        if (variant.equals("llama-bf16")) {
            // Both files in bf16, the usual checkpoint dtype: both models run their matrices as stored.
            g.matrixType(dev.tandem.llm.gguf.GgmlType.BF16);
            h.dtype(SafetensorsDtype.BF16);
        }
        if (variant.equals("llama3-rope")) {
            // A short original context so the 8 pairs of a 16-wide head cover all three regimes.
            g.ropeFactors(converterFactors(16, 10000, 8, 1, 4, 1024));
            h.config(n -> n.putObject("rope_scaling").put("rope_type", "llama3").put("factor", 8.0)
                    .put("low_freq_factor", 1.0).put("high_freq_factor", 4.0)
                    .put("original_max_position_embeddings", 1024));
        }
        g.write(gguf);
        Path hfDir = h.write(dir.resolve(variant));

        try (GgufModel a = GgufModel.open(gguf); SafetensorsModel b = SafetensorsModel.open(hfDir);
                Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
            assertThat(a.config().ropeStyle()).isEqualTo(interleaved ? RopeStyle.INTERLEAVED : RopeStyle.NEOX);
            assertThat(b.config().ropeStyle()).isEqualTo(RopeStyle.NEOX);
            assertThat(a.config().withRope(RopeStyle.NEOX, b.config().ropeFactors())).isEqualTo(b.config());
            assertThat(b.config().ropeFactors()).isEqualTo(variant.equals("llama3-rope"));
            TensorType stored = variant.equals("llama-bf16") ? TensorType.BF16 : TensorType.F32;
            assertThat(a.config().weightType()).isEqualTo(stored);
            assertThat(b.config().weightType()).isEqualTo(stored);
            LlamaModel ma = LlamaModel.load(worker, a, Ops.preferred(), LlamaModel.Options.defaults());
            LlamaModel mb = LlamaModel.load(worker, b, Ops.preferred(), LlamaModel.Options.defaults());
            for (int[] prompt : PROMPTS) {
                Run ra = run(worker, ma, prompt, 8);
                Run rb = run(worker, mb, prompt, 8);
                for (int k = 0; k < ra.tokens.size(); k++) {
                    float[] x = ra.logits.get(k);
                    float[] y = rb.logits.get(k);
                    double scale = 0;
                    double worst = 0;
                    for (int i = 0; i < x.length; i++) {
                        scale = Math.max(scale, Math.abs(x[i]));
                        worst = Math.max(worst, Math.abs(x[i] - y[i]));
                    }
                    assertThat(worst).as("%s, prompt of %d, step %d: largest logit difference (logits up to %f)",
                            variant, prompt.length, k, scale).isLessThanOrEqualTo(TOLERANCE * scale);
                    assertThat(rb.tokens.get(k)).as("%s step %d", variant, k).isEqualTo(ra.tokens.get(k));
                }
            }
        }
    }

    /** {@code source} with every value rounded to the nearest bf16 (kept as f32). */
    static LlamaWeights bf16Rounded(LlamaWeights source) {
        return new LlamaWeights() {
            @Override
            public LlamaConfig config() {
                return source.config();
            }

            @Override
            public java.lang.foreign.MemorySegment tensor(Tensor tensor, int layer) {
                float[] values = source.tensor(tensor, layer).toArray(java.lang.foreign.ValueLayout.JAVA_FLOAT);
                for (int i = 0; i < values.length; i++) {
                    short bits = HuggingFaceDirectoryWriter.encode(
                            java.lang.foreign.MemorySegment.ofArray(new float[] {values[i]}), SafetensorsDtype.BF16)
                            .get(java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED, 0);
                    values[i] = Float.intBitsToFloat(bits << 16);
                }
                return java.lang.foreign.MemorySegment.ofArray(values);
            }
        };
    }

    /** The check has teeth: the same GGUF written without the converter's permutation disagrees. */
    @Test
    void withoutThePermutationTheLogitsDisagree() throws IOException {
        LlamaWeights weights = new RandomWeights(hf("llama"), 99);
        Path gguf = dir.resolve("unpermuted.gguf");
        new GgufCheckpointWriter(weights).architecture("llama").fromHuggingFace(false).write(gguf);
        Path hfDir = new HuggingFaceDirectoryWriter(weights).write(dir.resolve("hf"));
        try (GgufModel a = GgufModel.open(gguf); SafetensorsModel b = SafetensorsModel.open(hfDir);
                Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
            Run ra = run(worker, LlamaModel.load(worker, a), PROMPTS[0], 2);
            Run rb = run(worker, LlamaModel.load(worker, b), PROMPTS[0], 2);
            double worst = 0;
            double scale = 0;
            for (int i = 0; i < ra.logits.get(0).length; i++) {
                scale = Math.max(scale, Math.abs(ra.logits.get(0)[i]));
                worst = Math.max(worst, Math.abs(ra.logits.get(0)[i] - rb.logits.get(0)[i]));
            }
            assertThat(worst).isGreaterThan(100 * TOLERANCE * scale);
        }
    }

    record Run(List<Integer> tokens, List<float[]> logits) {}

    static Run run(Worker worker, LlamaModel model, int[] prompt, int n) {
        int vocab = model.config().vocab();
        LlamaRequest request = LlamaRequest.of(prompt, n).withLogits(true);
        TokenStream stream = worker.run(model.program(), request, RunOptions.defaults().withMaxTokens(n));
        List<Integer> tokens = new ArrayList<>();
        List<float[]> logits = new ArrayList<>();
        for (Token t : stream) {
            ByteBuffer b = ByteBuffer.wrap(t.bytes()).order(ByteOrder.LITTLE_ENDIAN);
            tokens.add(b.getInt());
            float[] row = new float[vocab];
            for (int i = 0; i < vocab; i++) {
                row[i] = b.getFloat();
            }
            logits.add(row);
        }
        assertThat(tokens).hasSize(n);
        return new Run(tokens, logits);
    }

    /** llama.cpp's converter's rope factors, written out in double here, independent of the loader's f32 code. */
    static float[] converterFactors(int dim, double base, double factor, double low, double high, double original) {
        float[] out = new float[dim / 2];
        for (int i = 0; i < out.length; i++) {
            double freq = 1.0 / Math.pow(base, (2.0 * i) / dim);
            double wavelen = 2 * Math.PI / freq;
            if (wavelen < original / high) {
                out[i] = 1;
            } else if (wavelen > original / low) {
                out[i] = (float) factor;
            } else {
                double smooth = (original / wavelen - low) / (high - low);
                out[i] = (float) (1 / ((1 - smooth) / factor + smooth));
            }
        }
        return out;
    }

    @Test
    void llama3RopeFactorsFollowTheConverter() {
        // Llama 3.1 8B: head_dim 128, rope_theta 500000, factor 8, low 1, high 4, original 8192.
        float[] ours = SafetensorsModel.llama3RopeFactors(128, 500000, 8, 1, 4, 8192);
        float[] theirs = converterFactors(128, 500000, 8, 1, 4, 8192);
        assertThat(ours).hasSize(64);
        for (int i = 0; i < ours.length; i++) {
            assertThat((double) ours[i]).as("pair %d", i).isCloseTo(theirs[i], org.assertj.core.data.Offset.offset(
                    1e-5 * theirs[i]));
        }
        // The high frequencies are unscaled, the low ones divided by the factor, and between them
        // the divisor rises monotonically.
        assertThat(ours[0]).isEqualTo(1f);
        assertThat(ours[63]).isEqualTo(8f);
        for (int i = 1; i < ours.length; i++) {
            assertThat(ours[i]).isGreaterThanOrEqualTo(ours[i - 1]);
        }
        int between = 0;
        for (float f : ours) {
            between += f > 1f && f < 8f ? 1 : 0;
        }
        assertThat(between).isPositive();
    }

    @Test
    void thePermutationIsTheConvertersReshapeAndSwap() {
        // 2 heads of width 4, 1 column: rows [h0: 0 1 2 3, h1: 4 5 6 7]; per head, (2, 2) -> swapped.
        float[] w = {0, 1, 2, 3, 4, 5, 6, 7};
        assertThat(GgufCheckpointWriter.permuteRows(w, 2, 1)).containsExactly(0, 2, 1, 3, 4, 6, 5, 7);
        Random random = new Random(5);
        float[] m = new float[8 * 16 * 3];
        for (int i = 0; i < m.length; i++) {
            m[i] = random.nextFloat();
        }
        assertThat(GgufCheckpointWriter.unpermuteRows(GgufCheckpointWriter.permuteRows(m, 8, 3), 8, 3))
                .containsExactly(m);
    }
}
