package dev.tandem.llm.safetensors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.kernels.TensorType;
import dev.tandem.llm.model.LlamaConfig;
import dev.tandem.llm.model.LlamaWeights.Tensor;
import dev.tandem.llm.model.LlamaWeights;
import dev.tandem.llm.model.RopeStyle;
import dev.tandem.llm.reference.RandomWeights;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/** Opening Hugging Face directories: what each {@code config.json} field becomes, shards, dtypes, and each error. */
class SafetensorsModelTest {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    @TempDir
    Path dir;

    static final LlamaConfig SHAPE = new LlamaConfig(32, 2, 4, 2, 8, 48, 64, 128, 10000f, RopeStyle.NEOX, false, 1e-5f,
            TensorType.F32, false, false, false);

    Path write(String name, LlamaConfig c, Consumer<HuggingFaceDirectoryWriter> setup) throws IOException {
        HuggingFaceDirectoryWriter w = new HuggingFaceDirectoryWriter(new RandomWeights(c, 7));
        setup.accept(w);
        return w.write(dir.resolve(name));
    }

    Path edited(String name, Consumer<ObjectNode> edit) throws IOException {
        return write(name, SHAPE, w -> w.config(edit));
    }

    @Test
    void readsEveryHyperParameterFromConfigJson() throws IOException {
        Path d = write("llama", SHAPE, w -> { });
        try (SafetensorsModel m = SafetensorsModel.open(d)) {
            assertThat(m.config()).isEqualTo(SHAPE);
            assertThat(m.modelType()).isEqualTo("llama");
            assertThat(m.files()).hasSize(1);
        }
        try (SafetensorsModel m = SafetensorsModel.open(d, 16)) {
            assertThat(m.config().contextLength()).isEqualTo(16);
        }
    }

    @Test
    void aShardedCheckpointReadsTheSameTensors() throws IOException {
        LlamaConfig c = SHAPE.withVariants(true, false, true);
        Path single = write("single", c, w -> w.modelType("qwen2"));
        Path sharded = write("sharded", c, w -> w.modelType("qwen2").shards(3));
        assertThat(sharded.resolve("model-00002-of-00003.safetensors")).exists();
        try (SafetensorsModel a = SafetensorsModel.open(single); SafetensorsModel b = SafetensorsModel.open(sharded)) {
            assertThat(b.files()).hasSize(3);
            assertThat(b.config()).isEqualTo(a.config()).isEqualTo(c);
            for (Tensor t : Tensor.values()) {
                if (t.present(c)) {
                    assertThat(b.tensor(t, 1).toArray(F32)).as("%s", t).containsExactly(a.tensor(t, 1).toArray(F32));
                }
            }
        }
    }

    @Test
    void qwen3ReadsItsHeadWidthAndQkNorms() throws IOException {
        LlamaConfig c = new LlamaConfig(32, 1, 4, 2, 16, 48, 64, 128, 1_000_000f, RopeStyle.NEOX, false, 1e-6f,
                TensorType.F32, false, true, true);
        try (SafetensorsModel m = SafetensorsModel.open(write("qwen3", c, w -> w.modelType("qwen3")))) {
            assertThat(m.config()).isEqualTo(c);
            assertThat(m.config().qDim()).isEqualTo(64).isNotEqualTo(m.config().dim());
        }
    }

    /**
     * A checkpoint of one dtype keeps its matrices as stored (BF16 and F16 models: the kernels
     * widen them), and its norms widened exactly to f32.
     */
    @ParameterizedTest
    @EnumSource(SafetensorsDtype.class)
    void matricesStayAsStoredAndNormsWidenExactly(SafetensorsDtype dtype) throws IOException {
        // write() draws the weights with seed 7; the file holds them rounded to the dtype.
        LlamaWeights random = new RandomWeights(SHAPE, 7);
        Path d = write(dtype.name(), SHAPE, w -> w.dtype(dtype));
        try (SafetensorsModel m = SafetensorsModel.open(d)) {
            assertThat(m.config().weightType()).isEqualTo(TensorType.valueOf(dtype.name()));
            for (Tensor t : new Tensor[] {Tensor.TOKEN_EMBEDDING, Tensor.WQ, Tensor.W2}) {
                MemorySegment stored = dtype == SafetensorsDtype.F32 ? random.tensor(t, 1)
                        : HuggingFaceDirectoryWriter.encode(random.tensor(t, 1), dtype);
                assertThat(m.tensor(t, 1).mismatch(stored)).as("%s %s", dtype, t).isEqualTo(-1L);
            }
            float[] loaded = m.tensor(Tensor.ATTENTION_NORM, 1).toArray(F32);
            float[] original = random.tensor(Tensor.ATTENTION_NORM, 1).toArray(F32);
            short[] stored = dtype == SafetensorsDtype.F32 ? null
                    : HuggingFaceDirectoryWriter.encode(random.tensor(Tensor.ATTENTION_NORM, 1), dtype).toArray(I16);
            for (int i = 0; i < loaded.length; i++) {
                float expected = switch (dtype) {
                    case F32 -> original[i];
                    case F16 -> Float.float16ToFloat(stored[i]);
                    case BF16 -> Float.intBitsToFloat(stored[i] << 16);
                };
                assertThat(loaded[i]).as("%s norm[%d]", dtype, i).isEqualTo(expected);
            }
        }
    }

    @Test
    void llama3RopeScalingBecomesRopeFactors() throws IOException {
        Path d = edited("llama3", n -> n.putObject("rope_scaling").put("rope_type", "llama3").put("factor", 32.0)
                .put("low_freq_factor", 1.0).put("high_freq_factor", 4.0).put("original_max_position_embeddings", 64));
        try (SafetensorsModel m = SafetensorsModel.open(d)) {
            assertThat(m.config().ropeFactors()).isTrue();
            assertThat(m.tensor(Tensor.ROPE_FREQS, 0).toArray(F32))
                    .containsExactly(SafetensorsModel.llama3RopeFactors(8, 10000, 32, 1, 4, 64));
        }
        Path plain = edited("default", n -> n.putObject("rope_scaling").put("rope_type", "default"));
        try (SafetensorsModel m = SafetensorsModel.open(plain)) {
            assertThat(m.config().ropeFactors()).isFalse();
        }
    }

    @Test
    void aSlidingWindowInForceCapsTheContext() throws IOException {
        Path d = write("mistral", SHAPE, w -> w.modelType("mistral").config(n -> n.put("sliding_window", 32)));
        try (SafetensorsModel m = SafetensorsModel.open(d)) {
            assertThat(m.config().contextLength()).isEqualTo(32);
        }
        Path q = write("qwen2", SHAPE.withVariants(true, false, false), w -> w.modelType("qwen2")
                .config(n -> n.put("sliding_window", 32)));
        try (SafetensorsModel m = SafetensorsModel.open(q)) {
            assertThat(m.config().contextLength()).isEqualTo(128);
        }
    }

    // ---- errors, each with its exact message ----------------------------------------------------------

    void rejects(Path d, String file, String message) {
        assertThatThrownBy(() -> SafetensorsModel.open(d)).isInstanceOf(SafetensorsException.class)
                .hasMessage(d.resolve(file) + ": " + message).hasMessageNotContaining("\n");
    }

    @ParameterizedTest
    @ValueSource(strings = {"model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
        "vocab_size", "max_position_embeddings", "rms_norm_eps"})
    void aMissingRequiredFieldIsNamed(String field) throws IOException {
        rejects(edited("no-" + field, n -> n.remove(field)), "config.json", "missing required field " + field);
    }

    @Test
    void optionalFieldsTakeTheTransformersDefaults() throws IOException {
        Path d = edited("defaults", n -> {
            n.remove("num_key_value_heads");
            n.remove("rope_theta");
            n.remove("tie_word_embeddings");
            n.remove("rope_scaling");
            n.remove("head_dim");
        });
        assertThatThrownBy(() -> SafetensorsModel.open(d)).isInstanceOf(SafetensorsException.class)
                // Without num_key_value_heads there are 4 KV heads, so the k_proj of 2 heads is the wrong shape.
                .hasMessage(d.resolve("model.safetensors") + ": tensor model.layers.0.self_attn.k_proj.weight has"
                        + " shape [16, 32], expected [32, 32] for llama (config.json)");
        Path ok = write("mha", new LlamaConfig(32, 1, 4, 4, 8, 48, 64, 128, 10000f, RopeStyle.NEOX, false, 1e-5f,
                TensorType.F32, false, false, false), w -> w.config(n -> {
                    n.remove("num_key_value_heads");
                    n.remove("rope_theta");
                    n.remove("tie_word_embeddings");
                }));
        try (SafetensorsModel m = SafetensorsModel.open(ok)) {
            assertThat(m.config().kvHeads()).isEqualTo(4);
            assertThat(m.config().ropeTheta()).isEqualTo(10000f);
            assertThat(m.config().tiedEmbeddings()).isFalse();
        }
    }

    @Test
    void malformedFieldsAreNamed() throws IOException {
        rejects(edited("string", n -> n.put("hidden_size", "32")), "config.json",
                "hidden_size = \"32\" is not an integer in [0, 2^31)");
        rejects(edited("fraction", n -> n.put("num_hidden_layers", 2.5)), "config.json",
                "num_hidden_layers = 2.5 is not an integer in [0, 2^31)");
        rejects(edited("eps", n -> n.put("rms_norm_eps", "small")), "config.json",
                "rms_norm_eps = \"small\" is not a finite number");
        rejects(edited("tied", n -> n.put("tie_word_embeddings", 1)), "config.json",
                "tie_word_embeddings = 1 is not a boolean");
        rejects(edited("zero", n -> n.put("num_attention_heads", 0)), "config.json",
                "hyper-parameters do not form a model: heads = 0 must be >= 1");
    }

    @Test
    void anUnsupportedModelTypeOrScalingIsNamed() throws IOException {
        rejects(edited("gpt2", n -> n.put("model_type", "gpt2")), "config.json",
                "model_type = gpt2 is unsupported (supported: llama, mistral, qwen2, qwen3)");
        rejects(edited("yarn", n -> n.putObject("rope_scaling").put("rope_type", "yarn").put("factor", 4.0)),
                "config.json", "rope_scaling type yarn is unsupported (only llama3)");
        rejects(edited("gelu", n -> n.put("hidden_act", "gelu")), "config.json",
                "hidden_act = gelu is unsupported (only silu)");
    }

    @Test
    void missingFilesAndTensorsAreNamed() throws IOException {
        Path d = write("missing", SHAPE, w -> { });
        Files.delete(d.resolve("model.safetensors"));
        assertThatThrownBy(() -> SafetensorsModel.open(d)).isInstanceOf(SafetensorsException.class)
                .hasMessage(d + ": has neither model.safetensors nor model.safetensors.index.json");
        Path noConfig = write("noconfig", SHAPE, w -> { });
        Files.delete(noConfig.resolve("config.json"));
        rejects(noConfig, "config.json", "missing");
        Path notJson = write("notjson", SHAPE, w -> { });
        Files.writeString(notJson.resolve("config.json"), "{\"hidden_size\": ");
        assertThatThrownBy(() -> SafetensorsModel.open(notJson)).isInstanceOf(SafetensorsException.class)
                .hasMessageStartingWith(notJson.resolve("config.json") + ": is not valid JSON: ")
                .hasMessageNotContaining("\n");
        // Untied, but the checkpoint has no classifier.
        Path untied = write("untied", SHAPE.withVariants(false, false, true), w -> w.config(
                n -> n.put("tie_word_embeddings", false)));
        assertThatThrownBy(() -> SafetensorsModel.open(untied)).isInstanceOf(SafetensorsException.class)
                .hasMessage(untied + ": has no tensor lm_head.weight (model_type llama)");
    }

    @Test
    void aBadIndexIsNamed() throws IOException {
        Path d = write("index", SHAPE, w -> w.shards(2));
        Path index = d.resolve(SafetensorsModel.INDEX_FILE);
        String json = Files.readString(index);
        Files.writeString(index, json.replaceFirst("model-00001-of-00002.safetensors", "../escape.safetensors"));
        assertThatThrownBy(() -> SafetensorsModel.open(d)).isInstanceOf(SafetensorsException.class)
                .hasMessageStartingWith(index + ": weight_map.").hasMessageEndingWith(
                        " = ../escape.safetensors is not a file name in the directory");
        Files.writeString(index, json.replaceFirst(
                "\"model.embed_tokens.weight\" : \"model-00001-of-00002.safetensors\"",
                "\"model.embed_tokens.weight\" : \"model-00002-of-00002.safetensors\""));
        rejects(d, SafetensorsModel.INDEX_FILE, "maps tensor model.embed_tokens.weight to"
                + " model-00002-of-00002.safetensors, which does not hold it");
    }
}
