package dev.tandem.llm.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.llm.gguf.GgufVocabulary;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A tokenizer.json written from a GGUF vocabulary maps to the same tokenizer: the same ids on
 * llama.cpp's test vectors, from both merge spellings and both pre-tokenizer layouts.
 */
class HuggingFaceTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;

    @Test
    void gpt2WithByteLevelPreTokenizerAndStringMerges() throws IOException {
        Vocabulary gguf = GgufVocabulary.read(SharedModels.file("vocab/ggml-vocab-gpt-2.gguf"));
        ObjectNode preTokenizer = JSON.createObjectNode().put("type", "ByteLevel").put("add_prefix_space", false)
                .put("trim_offsets", true).put("use_regex", true);
        Path json = write("gpt2.json", tokenizerJson(gguf, preTokenizer, false));
        Path config = dir.resolve("tokenizer_config.json");
        Files.writeString(config, """
                {"add_bos_token": false, "bos_token": "<|endoftext|>",
                 "eos_token": {"content": "<|endoftext|>", "special": true}, "unk_token": null}""");

        Vocabulary hf = Vocabulary.fromHuggingFace(json, config);

        assertThat(hf.tokens()).isEqualTo(gguf.tokens());
        assertThat(hf.merges()).isEqualTo(gguf.merges());
        assertThat(hf.tokenTypes()).isEqualTo(gguf.tokenTypes());
        assertThat(hf.preTokenizer()).isEqualTo("gpt-2");
        assertThat(hf.bosId()).isEqualTo(gguf.bosId());
        assertThat(hf.eosId()).isEqualTo(gguf.eosId());
        assertSameIds(Tokenizer.of(hf), "ggml-vocab-gpt-2");
    }

    @Test
    void llama3WithSplitRegexAndPairMerges() throws IOException {
        Vocabulary gguf = GgufVocabulary.read(SharedModels.file("vocab/ggml-vocab-llama-bpe.gguf"));
        ObjectNode preTokenizer = JSON.createObjectNode().put("type", "Sequence");
        ArrayNode steps = preTokenizer.putArray("pretokenizers");
        ObjectNode split = steps.addObject().put("type", "Split");
        split.putObject("pattern").put("Regex", PreTokenizer.LLAMA3.regex());
        split.put("behavior", "Isolated").put("invert", false);
        steps.addObject().put("type", "ByteLevel").put("add_prefix_space", false).put("use_regex", false);
        ObjectNode root = tokenizerJson(gguf, preTokenizer, true);
        ObjectNode post = root.putObject("post_processor").put("type", "TemplateProcessing");
        post.putArray("single").addObject().putObject("SpecialToken").put("id", "<|begin_of_text|>").put("type_id", 0);
        Path json = write("llama3.json", root);

        Vocabulary hf = Vocabulary.fromHuggingFace(json, null);

        assertThat(hf.preTokenizer()).isEqualTo("llama-bpe");
        assertThat(hf.merges()).isEqualTo(gguf.merges());
        assertThat(hf.bosId()).isEqualTo(gguf.bosId());
        assertThat(hf.addBos()).isTrue();
        Tokenizer tokenizer = Tokenizer.of(hf);
        assertSameIds(tokenizer, "ggml-vocab-llama-bpe");
        assertThat(tokenizer.encode("<|begin_of_text|>Hello", true, true))
                .containsExactly(128000, 128000, 9906);
    }

    @Test
    void unsupportedInputIsNamed() throws IOException {
        Path unigram = dir.resolve("unigram.json");
        Files.writeString(unigram, "{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}");
        assertThatThrownBy(() -> Vocabulary.fromHuggingFace(unigram, null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'Unigram'");

        Path regex = dir.resolve("regex.json");
        Files.writeString(regex, """
                {"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]},
                 "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                   {"type": "Split", "pattern": {"Regex": "\\\\w+"}, "behavior": "Isolated"},
                   {"type": "ByteLevel", "use_regex": false}]}}""");
        assertThatThrownBy(() -> Vocabulary.fromHuggingFace(regex, null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'\\w+'");

        Path noMerges = dir.resolve("nomerges.json");
        Files.writeString(noMerges, """
                {"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "pre_tokenizer": {"type": "ByteLevel"}}""");
        assertThatThrownBy(() -> Vocabulary.fromHuggingFace(noMerges, null))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("gpt2 vocabulary has no merges");
    }

    private static void assertSameIds(Tokenizer tokenizer, String vectors) throws IOException {
        for (SharedModels.Case c : SharedModels.vectors(vectors)) {
            int[] ids = tokenizer.encode(c.text(), false, false);
            assertThat(ids).as("%s %s", vectors, c).isEqualTo(c.ids());
            assertThat(tokenizer.decode(ids)).as("%s %s", vectors, c).isEqualTo(c.text());
        }
    }

    /** A tokenizer.json of a GGUF vocabulary: its normal tokens as the vocab, its control tokens as added tokens. */
    private static ObjectNode tokenizerJson(Vocabulary v, ObjectNode preTokenizer, boolean pairMerges) {
        ObjectNode root = JSON.createObjectNode().put("version", "1.0");
        ArrayNode added = root.putArray("added_tokens");
        ObjectNode model = JSON.createObjectNode().put("type", "BPE").put("byte_fallback", false);
        ObjectNode vocab = model.putObject("vocab");
        for (int id = 0; id < v.size(); id++) {
            if (v.tokenType(id) == TokenType.CONTROL) {
                added.addObject().put("id", id).put("content", v.tokens().get(id)).put("special", true);
            } else {
                vocab.put(v.tokens().get(id), id);
            }
        }
        ArrayNode merges = model.putArray("merges");
        for (String merge : v.merges()) {
            if (pairMerges) {
                int space = merge.indexOf(' ', 1);
                merges.addArray().add(merge.substring(0, space)).add(merge.substring(space + 1));
            } else {
                merges.add(merge);
            }
        }
        root.putNull("normalizer");
        root.set("pre_tokenizer", preTokenizer);
        root.set("model", model);
        root.putObject("decoder").put("type", "ByteLevel");
        return root;
    }

    private Path write(String name, ObjectNode root) throws IOException {
        Path path = dir.resolve(name);
        JSON.writeValue(path.toFile(), root);
        return path;
    }

}
