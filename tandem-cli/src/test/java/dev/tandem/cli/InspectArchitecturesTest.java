package dev.tandem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.bench.EquivalenceBench;
import dev.tandem.bench.RandomGguf;
import dev.tandem.kernels.TensorType;
import dev.tandem.llm.gguf.GgmlType;
import dev.tandem.llm.model.Architecture;
import dev.tandem.llm.model.LlamaConfig;
import dev.tandem.llm.model.RopeStyle;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code tandem inspect} on files of Gemma 2, Gemma 3 and Phi-3 shapes, and on a family tandem does not run. */
class InspectArchitecturesTest {
    @TempDir
    Path dir;

    private CliRun.Run inspect(String name, LlamaConfig shape) {
        Path file = dir.resolve(name + ".gguf");
        RandomGguf.write(file, shape, GgmlType.Q8_0, 3);
        return CliRun.execute("inspect", "--model", file.toString());
    }

    @Test
    void gemma2Gemma3AndPhi3FilesAreRunnableAndSayWhatTheirFamilyDoes() {
        // Gemma 2 with llama.cpp's default caps; Gemma 3 and Phi-3 as the equivalence run has them.
        LlamaConfig gemma2Shape = new LlamaConfig(256, 2, 4, 2, 128, 512, 512, 128, 10000f, RopeStyle.NEOX, false,
                1e-6f, TensorType.F32, false, false, true,
                Architecture.gemma2(256, (float) (1 / Math.sqrt(128)), 50f, 30f, 8, 2, 10000f, 1f));
        CliRun.Run gemma2 = inspect("gemma2", gemma2Shape);
        assertThat(gemma2.exitCode()).as("stderr: %s", gemma2.err()).isZero();
        assertThat(gemma2.out()).contains("architecture  gemma2").contains("runnable      yes")
                .contains("family        gemma2: GELU gate, embeddings x 16, post-norms,"
                        + " soft-caps 50 (attention) 30 (logits), window 8 in 1 of every 2 layers");
        CliRun.Run gemma3 = inspect("gemma3", EquivalenceBench.shapes().get("gemma3-b"));
        assertThat(gemma3.out()).contains("runnable      yes").contains("q/k norm")
                .contains("window 8 in 2 of every 3 layers (rope theta 10000), linear rope scale 0.125");
        CliRun.Run phi3 = inspect("phi3", EquivalenceBench.shapes().get("phi3-a"));
        assertThat(phi3.out()).contains("runnable      yes").contains("with frequency factors")
                .contains("family        phi3: rope attention factor 1.19");
    }

    @Test
    void aFamilyTandemDoesNotRunIsOneLineNamingIt() {
        LlamaConfig moe = RandomGguf.shape(64, 1, 4, 2, 128).withArchitecture(Architecture.LLAMA.named("qwen2moe"));
        CliRun.Run run = inspect("qwen2moe", moe);
        assertThat(run.exitCode()).isZero();
        assertThat(run.out()).contains("architecture  qwen2moe").doesNotContain("runnable      yes")
                .containsPattern("runnable      no: [^\n]*unsupported architecture 'qwen2moe' \\(supported: llama,"
                        + " mistral, qwen2, qwen3, gemma2, gemma3, phi3\\)\n");
    }
}
