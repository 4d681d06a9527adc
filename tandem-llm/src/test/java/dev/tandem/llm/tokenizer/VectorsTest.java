package dev.tandem.llm.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.llm.gguf.GgufVocabulary;
import java.io.IOException;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** llama.cpp's tokenizer test vectors: every text encodes to exactly its ids and decodes back to itself. */
class VectorsTest {
    private static final Map<String, Tokenizer> TOKENIZERS = new ConcurrentHashMap<>();

    static Tokenizer tokenizer(String name) {
        return TOKENIZERS.computeIfAbsent(name,
                n -> Tokenizer.of(GgufVocabulary.read(SharedModels.file("vocab/" + n + ".gguf"))));
    }

    static Stream<Arguments> cases() throws IOException {
        Stream.Builder<Arguments> all = Stream.builder();
        for (String name : List.of("ggml-vocab-llama-spm", "ggml-vocab-llama-bpe", "ggml-vocab-gpt-2",
                "ggml-vocab-phi-3")) {
            for (SharedModels.Case c : SharedModels.vectors(name)) {
                all.add(Arguments.of(name, c));
            }
        }
        return all.build();
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("cases")
    void encodesToTheReferenceIdsAndDecodesBack(String name, SharedModels.Case c) {
        Tokenizer tokenizer = tokenizer(name);
        int[] ids = tokenizer.encode(c.text(), false, false);
        assertThat(ids).as("%s %s: got %s", name, c, pieces(tokenizer, ids)).isEqualTo(c.ids());
        assertThat(tokenizer.decode(ids)).isEqualTo(c.text());
    }

    @org.junit.jupiter.api.Test
    void specialTokensInTextWhenParsed() {
        Tokenizer spm = tokenizer("ggml-vocab-llama-spm");
        assertThat(spm.encode("<s>Hello</s>", true, true)).containsExactly(1, 1, 15043, 2);
        assertThat(spm.encode("Hello", true, false)).containsExactly(1, 15043);
        assertThat(spm.decode(new int[] {15043, 2})).isEqualTo("Hello</s>");
        Tokenizer llama3 = tokenizer("ggml-vocab-llama-bpe");
        assertThat(llama3.encode("<|begin_of_text|>Hello<|eot_id|>", false, true)).containsExactly(128000, 9906, 128009);
        assertThat(llama3.encode("<|eot_id|>", false, false)).doesNotContain(128009);
        assertThat(llama3.encode("Hello", true, false)).containsExactly(128000, 9906);
        Tokenizer phi3 = tokenizer("ggml-vocab-phi-3");
        assertThat(phi3.encode("<|user|>\nHi<|end|>\n<|assistant|>\n", false, true))
                .as("Phi-3's chat tokens are single special tokens").startsWith(32010).contains(32007, 32001);
        Tokenizer gpt2 = tokenizer("ggml-vocab-gpt-2");
        assertThat(gpt2.encode("Hello", true, false)).containsExactly(15496); // GPT-2 adds no BOS
        assertThat(gpt2.encode("<|endoftext|>", false, true)).containsExactly(50256);
    }

    static String pieces(Tokenizer tokenizer, int[] ids) {
        return Arrays.toString(Arrays.stream(ids).mapToObj(id -> id + "'" + tokenizer.piece(id) + "'").toArray());
    }
}
