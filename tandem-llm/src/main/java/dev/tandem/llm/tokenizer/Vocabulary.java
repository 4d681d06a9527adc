package dev.tandem.llm.tokenizer;

import dev.tandem.llm.gguf.GgufFile;
import dev.tandem.llm.gguf.GgufMetadata;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * A tokenizer's vocabulary as GGUF's {@code tokenizer.ggml.*} keys carry it: everything a
 * {@link Tokenizer} needs, and nothing about how it was read.
 *
 * @param kind            the algorithm
 * @param tokens          the piece of each id; none empty, none twice
 * @param scores          SentencePiece merge scores per id (higher merges first); null means all 0
 * @param tokenTypes      {@link TokenType} codes per id; null means all {@link TokenType#NORMAL}
 * @param merges          byte-level BPE merges {@code "left right"}, rank = index; empty for SPM
 * @param preTokenizer    the byte-level BPE pre-tokenizer name ({@code gpt-2}, {@code llama-bpe}, {@code qwen2}, ...);
 *                        ignored for SPM
 * @param bosId           beginning of sequence, -1 for none
 * @param eosId           end of sequence, -1 for none
 * @param unkId           unknown token, -1 for none
 * @param padId           padding token, -1 for none
 * @param addBos          whether encoding with specials adds BOS
 * @param addEos          whether encoding with specials adds EOS
 * @param addSpacePrefix  whether SPM text gets a leading space (and decoding drops the first one)
 */
public record Vocabulary(
        ModelKind kind,
        List<String> tokens,
        float[] scores,
        int[] tokenTypes,
        List<String> merges,
        String preTokenizer,
        int bosId,
        int eosId,
        int unkId,
        int padId,
        boolean addBos,
        boolean addEos,
        boolean addSpacePrefix) {

    /** The check of each field; arrays are copied so that the vocabulary cannot change under a tokenizer. */
    public Vocabulary {
        Objects.requireNonNull(kind, "kind");
        if (tokens == null || tokens.isEmpty()) {
            throw new IllegalArgumentException("vocabulary has no tokens");
        }
        tokens = List.copyOf(tokens);
        int n = tokens.size();
        if (scores == null) {
            scores = new float[n];
        } else if (scores.length < n) {
            throw new IllegalArgumentException("vocabulary has " + scores.length + " scores for " + n + " tokens");
        } else {
            scores = Arrays.copyOf(scores, n);
        }
        if (tokenTypes == null) {
            tokenTypes = new int[n];
            Arrays.fill(tokenTypes, TokenType.NORMAL.code());
        } else if (tokenTypes.length < n) {
            throw new IllegalArgumentException("vocabulary has " + tokenTypes.length + " token types for " + n + " tokens");
        } else {
            tokenTypes = Arrays.copyOf(tokenTypes, n);
        }
        merges = merges == null ? List.of() : List.copyOf(merges);
        if (kind == ModelKind.BPE) {
            if (merges.isEmpty()) {
                throw new IllegalArgumentException("gpt2 vocabulary has no merges");
            }
            PreTokenizer.named(preTokenizer); // fails naming an unknown one
        }
        checkId("bosId", bosId, n);
        checkId("eosId", eosId, n);
        checkId("unkId", unkId, n);
        checkId("padId", padId, n);
        if (addBos && bosId < 0) {
            throw new IllegalArgumentException("addBos is true, but the vocabulary has no BOS token");
        }
        if (addEos && eosId < 0) {
            throw new IllegalArgumentException("addEos is true, but the vocabulary has no EOS token");
        }
    }

    /**
     * The vocabulary of a Hugging Face byte-level BPE {@code tokenizer.json} (merges as {@code "a b"}
     * strings or {@code ["a", "b"]} pairs; a {@code ByteLevel} pre-tokenizer or a {@code Split} regex of
     * GPT-2, Llama 3 or Qwen 2 before one), with BOS, EOS, unknown and padding tokens and the
     * add-BOS/EOS flags of {@code tokenizer_config.json} when it is given. Without it, BOS is the
     * special token the post-processor puts first, if any.
     *
     * @param tokenizerConfigJson null for none
     * @throws IllegalArgumentException for another model type, an unsupported pre-tokenizer (naming it), no tokens or merges
     * @throws java.io.UncheckedIOException when a file cannot be read or parsed
     */
    public static Vocabulary fromHuggingFace(Path tokenizerJson, Path tokenizerConfigJson) {
        return HuggingFaceVocabulary.read(tokenizerJson, tokenizerConfigJson);
    }

    /** The vocabulary of a GGUF file. */
    public static Vocabulary fromGguf(Path gguf) {
        try (GgufFile file = GgufFile.open(gguf)) {
            return fromGguf(file.metadata());
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
    public static Vocabulary fromGguf(GgufMetadata metadata) {
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
        boolean addBos = spm || PreTokenizer.named(pre).addsBosByDefault();
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

    private static void checkId(String field, int id, int size) {
        if (id < -1 || id >= size) {
            throw new IllegalArgumentException(field + " = " + id + " is outside the vocabulary of " + size
                    + " tokens (-1 for none)");
        }
    }

    /** The number of tokens. */
    public int size() {
        return tokens.size();
    }

    /** The type of token {@code id}. */
    public TokenType tokenType(int id) {
        return TokenType.ofCode(tokenTypes[id]);
    }

    @Override
    public float[] scores() {
        return scores.clone();
    }

    @Override
    public int[] tokenTypes() {
        return tokenTypes.clone();
    }

    float score(int id) {
        return scores[id];
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Vocabulary v && kind == v.kind && tokens.equals(v.tokens)
                && Arrays.equals(scores, v.scores) && Arrays.equals(tokenTypes, v.tokenTypes)
                && merges.equals(v.merges) && Objects.equals(preTokenizer, v.preTokenizer)
                && bosId == v.bosId && eosId == v.eosId && unkId == v.unkId && padId == v.padId
                && addBos == v.addBos && addEos == v.addEos && addSpacePrefix == v.addSpacePrefix;
    }

    @Override
    public int hashCode() {
        return Objects.hash(kind, tokens, Arrays.hashCode(scores), Arrays.hashCode(tokenTypes), merges,
                preTokenizer, bosId, eosId, unkId, padId, addBos, addEos, addSpacePrefix);
    }

    @Override
    public String toString() {
        return "Vocabulary[" + kind + ", " + tokens.size() + " tokens, " + merges.size() + " merges, pre="
                + preTokenizer + ", bos=" + bosId + ", eos=" + eosId + ", unk=" + unkId + ", pad=" + padId
                + ", addBos=" + addBos + ", addEos=" + addEos + ", addSpacePrefix=" + addSpacePrefix + "]";
    }
}
