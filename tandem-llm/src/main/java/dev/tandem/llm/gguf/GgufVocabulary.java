package dev.tandem.llm.gguf;

import dev.tandem.llm.tokenizer.ModelKind;
import dev.tandem.llm.tokenizer.Vocabulary;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalLong;

/**
 * The tokenizer's {@link Vocabulary} as a GGUF file stores it ({@code tokenizer.ggml.*}): the
 * checkpoint reader builds it, so the tokenizer knows no file format.
 */
public final class GgufVocabulary {
    private GgufVocabulary() {}

    /** The vocabulary of a GGUF file. */
    public static Vocabulary read(Path gguf) {
        try (GgufFile file = GgufFile.open(gguf)) {
            return read(file.metadata());
        }
    }

    /**
     * The vocabulary in GGUF metadata, with llama.cpp's defaults for what the file leaves out: for
     * {@code llama} (SPM) BOS 1, EOS 2, unknown 0, a space prefix and BOS added; for {@code gpt2}
     * (byte-level BPE) no space prefix, BOS added for the Llama 3 pre-tokenizer only. Special ids
     * outside the vocabulary (such as uint32 -1) count as absent, as llama.cpp ignores them.
     *
     * @throws IllegalArgumentException for a missing or unknown model, no tokens, a gpt2 vocabulary
     *                                  without merges or with an unknown pre-tokenizer
     */
    public static Vocabulary read(GgufMetadata metadata) {
        String model = metadata.string("tokenizer.ggml.model")
                .orElseThrow(() -> new IllegalArgumentException("GGUF metadata has no tokenizer.ggml.model"));
        ModelKind kind = ModelKind.fromGgufName(model);
        if (!metadata.contains("tokenizer.ggml.tokens")) {
            throw new IllegalArgumentException("vocabulary has no tokens (no tokenizer.ggml.tokens)");
        }
        List<String> tokens = metadata.strings("tokenizer.ggml.tokens");
        int n = tokens.size();
        float[] scores = null;
        if (metadata.contains("tokenizer.ggml.scores")) {
            var v = metadata.value("tokenizer.ggml.scores").orElseThrow();
            if (v.elementType() != null && v.elementType().integer()) {
                int[] ints = metadata.ints("tokenizer.ggml.scores");
                scores = new float[ints.length];
                for (int i = 0; i < ints.length; i++) {
                    scores[i] = ints[i];
                }
            } else {
                scores = metadata.floats("tokenizer.ggml.scores");
            }
        }
        int[] types = metadata.contains("tokenizer.ggml.token_type") ? metadata.ints("tokenizer.ggml.token_type") : null;
        List<String> merges = List.of();
        if (kind == ModelKind.BPE) {
            if (!metadata.contains("tokenizer.ggml.merges")) {
                throw new IllegalArgumentException("gpt2 vocabulary has no merges (no tokenizer.ggml.merges)");
            }
            merges = metadata.strings("tokenizer.ggml.merges");
        }
        String pre = metadata.string("tokenizer.ggml.pre").orElse(null);
        boolean spm = kind == ModelKind.SPM;
        int bos = specialId(metadata, "tokenizer.ggml.bos_token_id", spm ? 1 : 11, n);
        int eos = specialId(metadata, "tokenizer.ggml.eos_token_id", spm ? 2 : 11, n);
        int unk = specialId(metadata, "tokenizer.ggml.unknown_token_id", spm ? 0 : -1, n);
        int pad = specialId(metadata, "tokenizer.ggml.padding_token_id", -1, n);
        boolean addBos = spm || Vocabulary.addsBosByDefault(pre);
        boolean addSpacePrefix = metadata.bool("tokenizer.ggml.add_space_prefix").orElse(spm);
        addBos = metadata.bool("tokenizer.ggml.add_bos_token").orElse(addBos);
        boolean addEos = metadata.bool("tokenizer.ggml.add_eos_token").orElse(false);
        return new Vocabulary(kind, tokens, scores, types, merges, pre, bos, eos, unk, pad, addBos, addEos,
                addSpacePrefix);
    }

    private static int specialId(GgufMetadata metadata, String key, int fallback, int size) {
        int byDefault = fallback >= 0 && fallback < size ? fallback : -1;
        OptionalLong id = metadata.integer(key);
        if (id.isEmpty() || id.getAsLong() < 0 || id.getAsLong() >= size) {
            return byDefault;
        }
        return (int) id.getAsLong();
    }
}
