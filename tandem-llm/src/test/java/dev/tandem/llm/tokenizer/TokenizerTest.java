package dev.tandem.llm.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tandem.llm.gguf.GgufValue;
import dev.tandem.llm.gguf.GgufVocabulary;
import dev.tandem.llm.reference.GgufWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The algorithms on small vocabularies built by hand, special tokens, and bad input. */
class TokenizerTest {
    private static final int BYTES = 3; // <0x00> is id 3 in the SPM vocabularies here

    /** {@code <unk> <s> </s>}, 256 byte tokens, then the given normal pieces and user-defined ones. */
    static Vocabulary spm(List<String> normal, float[] normalScores, List<String> userDefined) {
        List<String> tokens = new ArrayList<>(List.of("<unk>", "<s>", "</s>"));
        List<Integer> types = new ArrayList<>(List.of(2, 3, 3));
        for (int b = 0; b < 256; b++) {
            tokens.add(String.format("<0x%02X>", b));
            types.add(6);
        }
        tokens.addAll(normal);
        normal.forEach(t -> types.add(1));
        tokens.addAll(userDefined);
        userDefined.forEach(t -> types.add(4));
        float[] scores = new float[tokens.size()];
        System.arraycopy(normalScores, 0, scores, 3 + 256, normalScores.length);
        return new Vocabulary(ModelKind.SPM, tokens, scores, types.stream().mapToInt(Integer::intValue).toArray(),
                null, null, 1, 2, 0, -1, true, false, true);
    }

    private static int id(Tokenizer t, String piece) {
        return t.id(piece).orElseThrow();
    }

    @Test
    void spmMergesTheBestScoredPairFirst() {
        List<String> pieces = List.of("▁", "a", "b", "▁a", "ab", "▁b");
        Tokenizer abFirst = Tokenizer.of(spm(pieces, new float[] {-5, -5, -5, -2, -1, -3}, List.of()));
        assertThat(abFirst.encode("ab", false, false)).containsExactly(id(abFirst, "▁"), id(abFirst, "ab"));
        Tokenizer spaceFirst = Tokenizer.of(spm(pieces, new float[] {-5, -5, -5, -1, -2, -3}, List.of()));
        assertThat(spaceFirst.encode("ab", false, false)).containsExactly(id(spaceFirst, "▁a"), id(spaceFirst, "b"));
        // on a tie the leftmost pair merges first
        Tokenizer tie = Tokenizer.of(spm(pieces, new float[] {-5, -5, -5, -1, -1, -3}, List.of()));
        assertThat(tie.encode("ab", false, false)).containsExactly(id(tie, "▁a"), id(tie, "b"));
    }

    @Test
    void spmFallsBackToBytesAndAddsTheSpacePrefix() {
        Tokenizer t = Tokenizer.of(spm(List.of("▁", "a", "▁a"), new float[] {-3, -2, -1}, List.of()));
        int[] ids = t.encode("a é", true, false);
        assertThat(ids).containsExactly(1, id(t, "▁a"), id(t, "▁"), BYTES + 0xC3, BYTES + 0xA9);
        assertThat(t.decode(ids)).isEqualTo("<s> a é"); // BOS is first: llama.cpp drops no space then
        assertThat(t.decode(Arrays.copyOfRange(ids, 1, ids.length))).isEqualTo("a é");
        assertThat(t.tokenBytes(BYTES + 0xC3)).containsExactly(0xC3);
        assertThat(t.tokenBytes(id(t, "▁a"))).isEqualTo(" a".getBytes(StandardCharsets.UTF_8));
        assertThat(t.encode("", true, false)).containsExactly(1);
        assertThat(t.encode("", false, false)).isEmpty();
    }

    @Test
    void specialsSplitOutLongestFirstAndUserDefinedAlways() {
        Tokenizer t = Tokenizer.of(spm(List.of("▁", "a", "b", "▁a", "▁b"), new float[] {-5, -5, -5, -1, -1},
                List.of("<|sep|>", "<|sep|>!")));
        int sep = id(t, "<|sep|>");
        int sepBang = id(t, "<|sep|>!");
        // after a special token the text gets the space prefix again, as llama.cpp does
        assertThat(t.encode("a<s>b", false, true)).containsExactly(id(t, "▁a"), 1, id(t, "▁b"));
        assertThat(t.encode("a<s>b", false, false)).doesNotContain(1);
        assertThat(t.encode("a<|sep|>b<|sep|>!", false, false))
                .containsExactly(id(t, "▁a"), sep, id(t, "▁b"), sepBang);
        assertThat(t.decode(new int[] {id(t, "▁a"), sep, id(t, "▁b")})).isEqualTo("a<|sep|> b");
    }

    /** A byte-level vocabulary: the 256 byte characters (id = byte), then the merges' results. */
    static Vocabulary bpe(List<String> merges, String pre) {
        List<String> tokens = new ArrayList<>();
        for (int b = 0; b < 256; b++) {
            tokens.add(String.valueOf(ByteLevel.charOf(b)));
        }
        for (String merge : merges) {
            String joined = merge.replace(" ", "");
            if (!tokens.contains(joined)) {
                tokens.add(joined);
            }
        }
        tokens.add("<|endoftext|>");
        int[] types = new int[tokens.size()];
        Arrays.fill(types, 1);
        types[types.length - 1] = 3;
        return new Vocabulary(ModelKind.BPE, tokens, null, types, merges, pre, types.length - 1, types.length - 1,
                -1, -1, false, false, false);
    }

    @Test
    void bpeMergesByRank() {
        Tokenizer abFirst = Tokenizer.of(bpe(List.of("a b", "b c"), "gpt-2"));
        assertThat(abFirst.encode("abc", false, false)).containsExactly(id(abFirst, "ab"), 'c');
        Tokenizer bcFirst = Tokenizer.of(bpe(List.of("b c", "a b"), "gpt-2"));
        assertThat(bcFirst.encode("abc", false, false)).containsExactly('a', id(bcFirst, "bc"));
        Tokenizer words = Tokenizer.of(bpe(List.of("Ġ h", "h i", "Ġh i"), "gpt-2"));
        int[] ids = words.encode("hi hi", false, false);
        assertThat(ids).containsExactly(id(words, "hi"), id(words, "Ġhi"));
        assertThat(words.decode(ids)).isEqualTo("hi hi");
        assertThat(words.tokenBytes(id(words, "Ġhi"))).isEqualTo(" hi".getBytes(StandardCharsets.UTF_8));
        int eot = id(words, "<|endoftext|>");
        assertThat(words.encode("hi<|endoftext|>", false, true)).containsExactly(id(words, "hi"), eot);
        assertThat(words.encode("hi<|endoftext|>", false, false)).doesNotContain(eot);
    }

    @Test
    void badVocabulariesAreNamed() {
        assertThatThrownBy(() -> new Vocabulary(ModelKind.SPM, List.of(), null, null, null, null, -1, -1, -1, -1,
                false, false, true)).isInstanceOf(IllegalArgumentException.class).hasMessage("vocabulary has no tokens");
        assertThatThrownBy(() -> new Vocabulary(ModelKind.BPE, List.of("a"), null, null, List.of(), "gpt-2", -1, -1,
                -1, -1, false, false, false)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("gpt2 vocabulary has no merges");
        assertThatThrownBy(() -> bpe(List.of("a b"), "mystery")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("unknown pre-tokenizer 'mystery'");
        assertThatThrownBy(() -> ModelKind.fromGgufName("t5")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("unknown tokenizer model 't5'");
        assertThatThrownBy(() -> Tokenizer.of(new Vocabulary(ModelKind.SPM, List.of("a", "a"), null, null, null, null,
                -1, -1, -1, -1, false, false, true))).hasMessage("token 'a' appears twice, as 0 and 1");
    }

    @Test
    void idsOutsideTheVocabularyAreRejected() {
        Tokenizer t = Tokenizer.of(spm(List.of("▁"), new float[] {-1}, List.of()));
        int size = t.vocabSize();
        assertThatThrownBy(() -> t.decode(new int[] {1, size})).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("token id " + size + " is outside the vocabulary of " + size + " tokens");
        assertThatThrownBy(() -> t.tokenBytes(-1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("token id -1 is outside the vocabulary of " + size + " tokens");
    }

    @Test
    void badGgufMetadataIsNamed(@TempDir Path dir) throws IOException {
        Path unknown = dir.resolve("t5.gguf");
        new GgufWriter().put("tokenizer.ggml.model", "t5").put("tokenizer.ggml.tokens", GgufValue.strings("a"))
                .write(unknown);
        assertThatThrownBy(() -> GgufVocabulary.read(unknown)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("unknown tokenizer model 't5'");
        Path noTokens = dir.resolve("empty.gguf");
        new GgufWriter().put("tokenizer.ggml.model", "llama").write(noTokens);
        assertThatThrownBy(() -> GgufVocabulary.read(noTokens)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("vocabulary has no tokens");
        Path noMerges = dir.resolve("nomerges.gguf");
        new GgufWriter().put("tokenizer.ggml.model", "gpt2").put("tokenizer.ggml.pre", "gpt-2")
                .put("tokenizer.ggml.tokens", GgufValue.strings("a", "b")).write(noMerges);
        assertThatThrownBy(() -> GgufVocabulary.read(noMerges)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("gpt2 vocabulary has no merges");
        Path badPre = dir.resolve("badpre.gguf");
        new GgufWriter().put("tokenizer.ggml.model", "gpt2").put("tokenizer.ggml.pre", "mystery")
                .put("tokenizer.ggml.tokens", GgufValue.strings("a", "b", "ab"))
                .put("tokenizer.ggml.merges", GgufValue.strings("a b")).write(badPre);
        assertThatThrownBy(() -> GgufVocabulary.read(badPre)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("unknown pre-tokenizer 'mystery'");
    }
}
