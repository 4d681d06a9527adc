package dev.tandem.llm.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * A vocabulary read from Hugging Face's {@code tokenizer.json} (a byte-level BPE model) and,
 * optionally, {@code tokenizer_config.json}, mapped to what llama.cpp's converter would write to GGUF:
 * added tokens are control tokens when special and user-defined otherwise, ids the files leave
 * out are unused {@code [PADn]} tokens, and the pre-tokenizer is named by its regex.
 */
final class HuggingFaceVocabulary {
    private static final ObjectMapper JSON = new ObjectMapper();

    private HuggingFaceVocabulary() {}

    static Vocabulary read(Path tokenizerJson, Path tokenizerConfigJson) {
        JsonNode root = parse(tokenizerJson);
        JsonNode config = tokenizerConfigJson == null ? null : parse(tokenizerConfigJson);
        JsonNode model = root.path("model");
        String type = model.path("type").asText("");
        if (!type.equals("BPE")) {
            throw new IllegalArgumentException(tokenizerJson + ": unsupported model type '" + type + "'; supported: BPE");
        }
        PreTokenizer pre = preTokenizer(tokenizerJson, root.path("pre_tokenizer"));

        Map<Integer, String> byId = new HashMap<>();
        Map<Integer, TokenType> types = new HashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = model.path("vocab").properties().iterator(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            byId.put(e.getValue().asInt(), e.getKey());
        }
        for (JsonNode added : root.path("added_tokens")) {
            int id = added.path("id").asInt();
            byId.put(id, added.path("content").asText());
            types.put(id, added.path("special").asBoolean(false) ? TokenType.CONTROL : TokenType.USER_DEFINED);
        }
        if (byId.isEmpty()) {
            throw new IllegalArgumentException(tokenizerJson + ": vocabulary has no tokens");
        }
        int size = byId.keySet().stream().mapToInt(Integer::intValue).max().orElseThrow() + 1;
        if (byId.keySet().stream().anyMatch(id -> id < 0)) {
            throw new IllegalArgumentException(tokenizerJson + ": a token has a negative id");
        }
        List<String> tokens = new ArrayList<>(size);
        int[] typeCodes = new int[size];
        for (int id = 0; id < size; id++) {
            String piece = byId.get(id);
            tokens.add(piece != null ? piece : "[PAD" + id + "]");
            typeCodes[id] = (piece == null ? TokenType.UNUSED : types.getOrDefault(id, TokenType.NORMAL)).code();
        }

        List<String> merges = new ArrayList<>();
        for (JsonNode merge : model.path("merges")) {
            if (merge.isArray() && merge.size() == 2) {
                merges.add(merge.get(0).asText() + " " + merge.get(1).asText());
            } else if (merge.isTextual()) {
                merges.add(merge.asText());
            } else {
                throw new IllegalArgumentException(tokenizerJson + ": merge " + merges.size() + " is neither \"a b\" nor [\"a\", \"b\"]");
            }
        }

        Map<String, Integer> ids = new HashMap<>();
        for (int id = 0; id < size; id++) {
            ids.putIfAbsent(tokens.get(id), id);
        }
        int bos = -1;
        boolean addBos = false;
        JsonNode single = root.path("post_processor").path("single");
        if (single.isArray() && !single.isEmpty() && single.get(0).has("SpecialToken")) {
            bos = ids.getOrDefault(single.get(0).path("SpecialToken").path("id").asText(), -1);
            addBos = bos >= 0;
        }
        int eos = -1;
        int unk = -1;
        int pad = -1;
        boolean addEos = false;
        if (config != null) {
            bos = special(config, "bos_token", ids, bos);
            eos = special(config, "eos_token", ids, eos);
            unk = special(config, "unk_token", ids, unk);
            pad = special(config, "pad_token", ids, pad);
            addBos = config.has("add_bos_token") ? config.path("add_bos_token").asBoolean() : addBos || (pre.addsBosByDefault() && bos >= 0);
            addEos = config.path("add_eos_token").asBoolean(false);
        }
        return new Vocabulary(ModelKind.BPE, tokens, null, typeCodes, merges, name(pre), bos, eos, unk, pad,
                addBos && bos >= 0, addEos && eos >= 0, false);
    }

    private static String name(PreTokenizer pre) {
        return switch (pre) {
            case GPT2 -> "gpt-2";
            case LLAMA3 -> "llama-bpe";
            case QWEN2 -> "qwen2";
        };
    }

    /** The pre-tokenizer of a {@code ByteLevel} one (with its own regex) or a {@code Split} regex before a byte-level one. */
    private static PreTokenizer preTokenizer(Path file, JsonNode node) {
        String type = node.path("type").asText("");
        if (type.equals("ByteLevel")) {
            if (!node.path("use_regex").asBoolean(true)) {
                throw new IllegalArgumentException(file + ": a ByteLevel pre-tokenizer without its regex is unsupported");
            }
            return PreTokenizer.GPT2;
        }
        if (type.equals("Sequence")) {
            String regex = null;
            boolean byteLevel = false;
            for (JsonNode step : node.path("pretokenizers")) {
                String stepType = step.path("type").asText("");
                if (stepType.equals("Split") && step.path("pattern").has("Regex") && regex == null) {
                    regex = step.path("pattern").path("Regex").asText();
                } else if (stepType.equals("ByteLevel")) {
                    byteLevel = true;
                } else {
                    throw new IllegalArgumentException(file + ": unsupported pre-tokenizer step '" + stepType + "'");
                }
            }
            if (regex != null && byteLevel) {
                PreTokenizer pre = PreTokenizer.ofRegex(regex);
                if (pre == null) {
                    throw new IllegalArgumentException(file + ": unsupported pre-tokenizer regex '" + regex
                            + "'; supported: those of GPT-2, Llama 3 and Qwen 2");
                }
                return pre;
            }
        }
        throw new IllegalArgumentException(file + ": unsupported pre-tokenizer '" + (type.isEmpty() ? node : type)
                + "'; supported: ByteLevel, or a Split regex then ByteLevel");
    }

    /** A special token of tokenizer_config.json, written as its content or as {"content": ...}. */
    private static int special(JsonNode config, String key, Map<String, Integer> ids, int fallback) {
        JsonNode node = config.path(key);
        String content = node.isTextual() ? node.asText() : node.path("content").isTextual() ? node.path("content").asText() : null;
        if (content == null) {
            return fallback;
        }
        Integer id = ids.get(content);
        if (id == null) {
            throw new IllegalArgumentException("tokenizer_config.json: " + key + " '" + content + "' is not a token");
        }
        return id;
    }

    private static JsonNode parse(Path file) {
        try {
            return JSON.readTree(file.toFile());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file + ": " + e.getMessage(), e);
        }
    }
}
