package dev.tandem.llm.tokenizer;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

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

    /**
     * Whether a vocabulary of the byte-level BPE pre-tokenizer {@code name} adds BOS when its file
     * does not say (llama.cpp's default: the Llama 3 pre-tokenizer only).
     *
     * @throws IllegalArgumentException naming an unknown or unsupported pre-tokenizer
     */
    public static boolean addsBosByDefault(String preTokenizer) {
        return PreTokenizer.named(preTokenizer).addsBosByDefault();
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
