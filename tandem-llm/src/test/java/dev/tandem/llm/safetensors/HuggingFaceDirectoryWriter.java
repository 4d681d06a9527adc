package dev.tandem.llm.safetensors;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.kernels.Ops;
import dev.tandem.kernels.TensorType;
import dev.tandem.llm.model.LlamaConfig;
import dev.tandem.llm.model.LlamaWeights.Tensor;
import dev.tandem.llm.model.LlamaWeights;
import dev.tandem.llm.reference.SafetensorsWriter;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * Writes f32 {@link LlamaWeights}, taken to be in Hugging Face's layout, as a Hugging Face model
 * directory: {@code config.json} as transformers writes it for the model type, the tensors in one
 * dtype in {@code model.safetensors} or in shards with {@code model.safetensors.index.json}, and
 * small {@code tokenizer.json}, {@code tokenizer_config.json} and {@code generation_config.json}.
 */
public final class HuggingFaceDirectoryWriter {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final LlamaWeights weights;
    private final LlamaConfig c;
    private String modelType = "llama";
    private SafetensorsDtype dtype = SafetensorsDtype.F32;
    private int shards = 1;
    private final List<Consumer<ObjectNode>> edits = new ArrayList<>();

    public HuggingFaceDirectoryWriter(LlamaWeights weights) {
        if (weights.config().weightType() != TensorType.F32) {
            throw new IllegalArgumentException("the writer converts f32 weights, given " + weights.config().weightType());
        }
        this.weights = weights;
        this.c = weights.config();
    }

    public HuggingFaceDirectoryWriter modelType(String value) {
        this.modelType = value;
        return this;
    }

    public HuggingFaceDirectoryWriter dtype(SafetensorsDtype value) {
        this.dtype = value;
        return this;
    }

    /** Splits the tensors over this many shard files (1: a single {@code model.safetensors}). */
    public HuggingFaceDirectoryWriter shards(int value) {
        this.shards = value;
        return this;
    }

    /** Edits {@code config.json} after it is built (to add rope scaling, remove a field, ...). */
    public HuggingFaceDirectoryWriter config(Consumer<ObjectNode> edit) {
        edits.add(edit);
        return this;
    }

    public ObjectNode configJson() {
        ObjectNode n = JSON.createObjectNode();
        n.putArray("architectures").add(switch (modelType) {
            case "mistral" -> "MistralForCausalLM";
            case "qwen2" -> "Qwen2ForCausalLM";
            case "qwen3" -> "Qwen3ForCausalLM";
            default -> "LlamaForCausalLM";
        });
        n.put("model_type", modelType);
        n.put("hidden_act", "silu");
        n.put("hidden_size", c.dim());
        n.put("intermediate_size", c.ffnDim());
        n.put("num_hidden_layers", c.layers());
        n.put("num_attention_heads", c.heads());
        n.put("num_key_value_heads", c.kvHeads());
        if (c.headDim() * c.heads() != c.dim() || modelType.equals("qwen3")) {
            n.put("head_dim", c.headDim());
        }
        n.put("vocab_size", c.vocab());
        n.put("max_position_embeddings", c.contextLength());
        n.put("rms_norm_eps", c.normEps());
        n.put("rope_theta", c.ropeTheta());
        n.putNull("rope_scaling");
        n.put("tie_word_embeddings", c.tiedEmbeddings());
        if (modelType.equals("llama")) {
            n.put("attention_bias", c.attentionBias());
            n.put("mlp_bias", false);
        }
        if (modelType.startsWith("qwen")) {
            n.put("use_sliding_window", false);
            n.put("sliding_window", 4096);
        }
        if (modelType.equals("mistral")) {
            n.putNull("sliding_window");
        }
        n.put("torch_dtype", switch (dtype) {
            case F32 -> "float32";
            case F16 -> "float16";
            case BF16 -> "bfloat16";
        });
        n.put("bos_token_id", 1);
        n.put("eos_token_id", 2);
        n.put("transformers_version", "4.51.0");
        for (Consumer<ObjectNode> e : edits) {
            e.accept(n);
        }
        return n;
    }

    public Path write(Path dir) throws IOException {
        Files.createDirectories(dir);
        JSON.writerWithDefaultPrettyPrinter().writeValue(dir.resolve("config.json").toFile(), configJson());
        List<String> names = new ArrayList<>();
        List<long[]> shapes = new ArrayList<>();
        List<MemorySegment> data = new ArrayList<>();
        for (Tensor t : Tensor.values()) {
            if (!t.present(c) || t == Tensor.ROPE_FREQS || (t == Tensor.OUTPUT && c.tiedEmbeddings())) {
                continue;
            }
            for (int l = 0; l < (t.perLayer() ? c.layers() : 1); l++) {
                names.add(SafetensorsModel.name(t, l));
                shapes.add(t.norm() ? new long[] {t.cols(c)} : new long[] {t.rows(c), t.cols(c)});
                data.add(encode(weights.tensor(t, l), dtype));
            }
        }
        if (shards == 1) {
            SafetensorsWriter w = new SafetensorsWriter().metadata("format", "pt");
            for (int i = 0; i < names.size(); i++) {
                w.tensor(names.get(i), dtype, shapes.get(i), data.get(i));
            }
            w.write(dir.resolve(SafetensorsModel.SINGLE_FILE));
        } else {
            ObjectNode index = JSON.createObjectNode();
            long total = 0;
            ObjectNode map = JSON.createObjectNode();
            for (int s = 0; s < shards; s++) {
                String file = String.format("model-%05d-of-%05d.safetensors", s + 1, shards);
                SafetensorsWriter w = new SafetensorsWriter().metadata("format", "pt");
                for (int i = s; i < names.size(); i += shards) {
                    w.tensor(names.get(i), dtype, shapes.get(i), data.get(i));
                    map.put(names.get(i), file);
                    total += data.get(i).byteSize();
                }
                w.write(dir.resolve(file));
            }
            index.putObject("metadata").put("total_size", total);
            index.set("weight_map", map);
            JSON.writerWithDefaultPrettyPrinter().writeValue(dir.resolve(SafetensorsModel.INDEX_FILE).toFile(), index);
        }
        Files.writeString(dir.resolve("tokenizer.json"), """
                {"version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
                 "normalizer": null, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false,
                 "trim_offsets": true, "use_regex": true}, "post_processor": null, "decoder": {"type": "ByteLevel"},
                 "model": {"type": "BPE", "dropout": null, "unk_token": null, "vocab": {"a": 0, "b": 1}, "merges": []}}
                """);
        Files.writeString(dir.resolve("tokenizer_config.json"), """
                {"bos_token": "<s>", "eos_token": "</s>", "model_max_length": %d, "tokenizer_class": "PreTrainedTokenizerFast"}
                """.formatted(c.contextLength()));
        Files.writeString(dir.resolve("generation_config.json"), """
                {"bos_token_id": 1, "eos_token_id": 2, "do_sample": false, "transformers_version": "4.51.0"}
                """);
        return dir;
    }

    /** f32 values in {@code dtype}, rounded to nearest even as the kernels' quantisers do. */
    static MemorySegment encode(MemorySegment f32, SafetensorsDtype dtype) {
        long elements = f32.byteSize() / Float.BYTES;
        MemorySegment src = Arena.ofAuto().allocate(f32.byteSize(), 64);
        for (long i = 0; i < elements; i++) {
            src.setAtIndex(F32, i, f32.getAtIndex(F32, i));
        }
        MemorySegment dst = Arena.ofAuto().allocate(elements * dtype.bytes(), 64);
        Ops.scalar().quantize(dtype.kernelType(), src, 0, dst, 0, elements);
        return dst;
    }
}
