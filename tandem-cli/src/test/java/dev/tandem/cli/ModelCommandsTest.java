package dev.tandem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.llm.reference.SafetensorsWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** generate, tokenize and inspect on the embedded model and the shared real files. */
class ModelCommandsTest {
    @TempDir
    Path dir;

    private static CliRun.Run execute(String... args) {
        return CliRun.execute(args);
    }

    /** The shared real model files of the development and CI machines; fails, never skips, without them. */
    static Path shared(String name) {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            Path candidate = p.resolve("../shared/models").resolve(name).normalize();
            if (Files.exists(candidate)) {
                return candidate;
            }
        }
        throw new AssertionError("no ../shared/models/" + name + " above " + Path.of("").toAbsolutePath());
    }

    private static JsonNode lastJsonLine(String out) throws IOException {
        List<String> lines = out.lines().filter(l -> !l.isBlank()).toList();
        return new ObjectMapper().readTree(lines.getLast());
    }

    /** With either KV cache type (spelled in either case): llama.cpp's own run kept an f16 cache. */
    @ParameterizedTest
    @ValueSource(strings = {"f16", "F32"})
    void greedyGenerateOnTheEmbeddedModelPrintsLlamaCppsContinuation(String kvType) throws IOException {
        JsonNode reference = new ObjectMapper().readTree(shared("stories260K.greedy.json").toFile()).get("cases").get(0);
        assertThat(reference.get("prompt").asText()).isEqualTo("Once upon a time");
        int n = reference.get("greedy_tokens").size();
        CliRun.Run run = execute("generate", "--model", "stories260K", "--prompt", "Once upon a time", "--temperature", "0",
                "--max-tokens", Integer.toString(n), "--kv-type", kvType, "--json");
        assertThat(run.exitCode()).as("stderr: %s", run.err()).isZero();
        JsonNode json = lastJsonLine(run.out());
        assertThat(json.get("prompt_tokens")).isEqualTo(reference.get("prompt_tokens"));
        assertThat(json.get("tokens")).isEqualTo(reference.get("greedy_tokens"));
        assertThat(json.get("text").asText()).isEqualTo(reference.get("greedy_text").asText());
        assertThat(json.get("finish_reason").asText()).isEqualTo("length");
        assertThat(json.get("tokens_per_s").asDouble()).isPositive();
        assertThat(run.out()).startsWith(reference.get("greedy_text").asText());
    }

    @Test
    void aSeedMakesSampledGenerationReproducibleAndAStopStringEndsIt() throws IOException {
        String[] args = {"generate", "--prompt", "Lily and Ben", "--temperature", "0.9", "--seed", "42",
            "--max-tokens", "60", "--json"};
        JsonNode a = lastJsonLine(execute(args).out());
        JsonNode b = lastJsonLine(execute(args).out());
        assertThat(a.get("tokens")).isEqualTo(b.get("tokens"));
        JsonNode c = lastJsonLine(execute("generate", "--prompt", "Lily and Ben", "--temperature", "0.9", "--seed", "43",
                "--max-tokens", "60", "--json").out());
        assertThat(c.get("tokens")).isNotEqualTo(a.get("tokens"));
        // Stop at the first full stop of the greedy story: the text ends right before it.
        JsonNode greedy = lastJsonLine(execute("generate", "--prompt", "Once upon a time", "--temperature", "0",
                "--max-tokens", "40", "--json").out());
        String full = greedy.get("text").asText();
        JsonNode stopped = lastJsonLine(execute("generate", "--prompt", "Once upon a time", "--temperature", "0",
                "--max-tokens", "40", "--stop", ".", "--json").out());
        assertThat(stopped.get("finish_reason").asText()).isEqualTo("stop");
        assertThat(stopped.get("text").asText()).isEqualTo(full.substring(0, full.indexOf('.')));
    }

    @Test
    void tokenizeMatchesLlamaCppsVectorsFromAFileOfJsonStrings() throws IOException {
        for (String vocab : List.of("ggml-vocab-llama-spm.gguf", "ggml-vocab-llama-bpe.gguf", "ggml-vocab-gpt-2.gguf")) {
            String inp = Files.readString(shared("vocab/" + vocab + ".inp"), StandardCharsets.UTF_8);
            List<String> expected = Files.readAllLines(shared("vocab/" + vocab + ".out"), StandardCharsets.UTF_8);
            String[] texts = inp.split("\n__ggml_vocab_test__\n", -1);
            ObjectMapper mapper = new ObjectMapper();
            List<String> lines = new ArrayList<>();
            for (int i = 0; i < expected.size(); i++) {
                lines.add(mapper.writeValueAsString(texts[i]));
            }
            Path file = dir.resolve(vocab + ".jsonl");
            Files.write(file, lines, StandardCharsets.UTF_8);
            CliRun.Run run = execute("tokenize", "--model", shared("vocab/" + vocab).toString(), "--file", file.toString());
            assertThat(run.exitCode()).as("stderr: %s", run.err()).isZero();
            List<String> out = run.out().lines().toList();
            assertThat(out).hasSize(expected.size());
            for (int i = 0; i < expected.size(); i++) {
                int[] ids = mapper.readValue(out.get(i), int[].class);
                String want = expected.get(i).strip();
                String got = java.util.Arrays.stream(ids).mapToObj(Integer::toString)
                        .collect(java.util.stream.Collectors.joining(" "));
                assertThat(got).as("%s text %d %s", vocab, i, lines.get(i)).isEqualTo(want);
            }
        }
    }

    @Test
    void tokenizeTextAddsBosOnlyWhenAsked() {
        assertThat(execute("tokenize", "--model", "stories260K", "--text", "Once upon a time").out().strip())
                .isEqualTo("403 407 261 378");
        assertThat(execute("tokenize", "--model", "stories260K", "--text", "Once upon a time", "--bos", "--json")
                .out().strip()).isEqualTo("[1,403,407,261,378]");
    }

    @Test
    void inspectShowsTheShapeAndVocabularyOfModelsAndVocabularyOnlyFiles() {
        CliRun.Run run = execute("inspect", "--model", "stories260K");
        assertThat(run.exitCode()).as("stderr: %s", run.err()).isZero();
        assertThat(run.out()).contains("architecture  llama").contains("dim 64, 5 layers, 8 heads over 4 KV heads")
                .contains("512 tokens, llama").contains("F32 x");
        CliRun.Run vocab = execute("inspect", "--model", shared("vocab/ggml-vocab-llama-bpe.gguf").toString());
        assertThat(vocab.exitCode()).isZero();
        assertThat(vocab.out()).contains("gpt2 (pre llama-bpe)").doesNotContain("shape");
    }

    @Test
    void aMissingOrBrokenModelIsOneLine() throws IOException {
        CliRun.Run missing = execute("generate", "--model", dir.resolve("nope.gguf").toString(), "--prompt", "x");
        assertThat(missing.exitCode()).isNotZero();
        assertThat(missing.err().strip()).startsWith("tandem: ").contains("nope.gguf").doesNotContain("\n");
        Path junk = dir.resolve("junk.gguf");
        Files.writeString(junk, "this is not a model, only some text that is long enough");
        CliRun.Run broken = execute("inspect", "--model", junk.toString());
        assertThat(broken.err().strip()).contains("not a GGUF file").doesNotContain("\n");
    }

    @Test
    void inspectAndGenerateReadAHuggingFaceDirectory() throws IOException {
        // A random Qwen2-style model (q/k/v biases, tied embeddings) with the embedded model's vocabulary size.
        dev.tandem.llm.model.LlamaConfig c = new dev.tandem.llm.model.LlamaConfig(64, 2, 4, 2, 128, 512, 256, 10000f, 1e-6f,
                dev.tandem.kernels.TensorType.F32).withRope(dev.tandem.llm.model.RopeStyle.NEOX, false).withVariants(true, false, true);
        dev.tandem.llm.reference.RandomWeights weights = new dev.tandem.llm.reference.RandomWeights(c, 3);
        Path model = Files.createDirectories(dir.resolve("qwen2-random"));
        SafetensorsWriter w = new SafetensorsWriter();
        for (dev.tandem.llm.model.LlamaWeights.Tensor t : dev.tandem.llm.model.LlamaWeights.Tensor.values()) {
            if (!t.present(c) || t == dev.tandem.llm.model.LlamaWeights.Tensor.OUTPUT) {
                continue;
            }
            for (int l = 0; l < (t.perLayer() ? c.layers() : 1); l++) {
                long[] shape = t.norm() ? new long[] {t.cols(c)} : new long[] {t.rows(c), t.cols(c)};
                w.tensor(dev.tandem.llm.safetensors.SafetensorsModel.name(t, l),
                        dev.tandem.llm.safetensors.SafetensorsDtype.F32, shape, weights.tensor(t, l));
            }
        }
        w.write(model.resolve("model.safetensors"));
        Files.writeString(model.resolve("config.json"), """
                {"model_type": "qwen2", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                 "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 512,
                 "max_position_embeddings": 256, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
                 "tie_word_embeddings": true, "hidden_act": "silu"}
                """);
        CliRun.Run inspect = execute("inspect", "--model", model.toString());
        assertThat(inspect.exitCode()).as("stderr: %s", inspect.err()).isZero();
        assertThat(inspect.out()).contains("architecture  qwen2").contains("dim 64, 2 layers, 4 heads over 2 KV heads")
                .contains("q/k/v bias").contains("tied embeddings").contains("NEOX");
    }
}
