package dev.tandem.llm;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.CpuDeviceConfig;
import dev.tandem.Worker;
import dev.tandem.kernels.TensorType;
import dev.tandem.llm.gguf.GgmlType;
import dev.tandem.llm.gguf.GgufCheckpointWriter;
import dev.tandem.llm.model.Architecture;
import dev.tandem.llm.model.LlamaConfig;
import dev.tandem.llm.model.LlamaModel;
import dev.tandem.llm.model.RopeStyle;
import dev.tandem.llm.reference.RandomWeights;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The {@link Batcher} builds its steps through {@link LlamaModel#forward}, so a family's features
 * (here Gemma 2's sliding layers, soft-caps and post-norms) hold in continuous batching too:
 * members, their prompts chunked across steps past the window, yield the tokens of requests of
 * their own.
 */
class BatcherArchitecturesTest {
    @TempDir
    Path dir;

    @Test
    void gemma2MembersWithChunkedPromptsPastTheWindowYieldTheTokensOfRequestsOfTheirOwn() throws Exception {
        Architecture gemma2 = Architecture.gemma2(128, 1f / 8f, 5f, 10f, 6, 2, 10000f, 1f);
        LlamaConfig shape = new LlamaConfig(128, 2, 4, 2, 64, 256, 512, 256, 10000f, RopeStyle.NEOX, false, 1e-6f,
                TensorType.F32, false, false, true, gemma2);
        Path file = dir.resolve("gemma2.gguf");
        new GgufCheckpointWriter(new RandomWeights(shape, 9)).architecture("gemma2").matrixType(GgmlType.Q8_0)
                .metadata("gemma2.attention.sliding_window", 6).metadata("gemma2.attn_logit_softcapping", 5f)
                .metadata("gemma2.final_logit_softcapping", 10f).vocabularyFrom(EmbeddedModel.path()).write(file);
        try (Worker w = Worker.create(CpuDeviceConfig.withCores(2))) {
            LanguageModel model = LanguageModel.load(w, file, 256);
            assertThat(model.config().architecture()).isEqualTo(gemma2);
            GenerateOptions options = GenerateOptions.defaults().withMaxTokens(20).withIgnoreEos(true);
            String[] prompts = {"Once upon a time there was a little girl who liked to play", "Hi", "The cat sat"};
            BatcherConfig config = BatcherConfig.builder().maxBatch(4).tokenBudget(8).build();
            try (Batcher batcher = Batcher.start(w, model, config)) {
                List<Completion> completions = new ArrayList<>();
                for (String p : prompts) {
                    completions.add(batcher.submit(model.encode(p), options, null));
                }
                for (int i = 0; i < prompts.length; i++) {
                    completions.get(i).await();
                    int[] prompt = model.encode(prompts[i]);
                    Completion alone = model.start(w.run(model.program(), model.request(prompt, options),
                            model.runOptions(options)), prompt, options);
                    alone.await();
                    assertThat(completions.get(i).tokens()).as(prompts[i]).containsExactly(alone.tokens());
                }
            }
        }
    }
}
