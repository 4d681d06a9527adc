package dev.tandem.llm.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;

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
                n -> Tokenizer.of(Vocabulary.fromGguf(SharedModels.file("vocab/" + n + ".gguf"))));
    }

    static Stream<Arguments> cases() throws IOException {
        Stream.Builder<Arguments> all = Stream.builder();
        for (String name : List.of("ggml-vocab-llama-spm", "ggml-vocab-llama-bpe", "ggml-vocab-gpt-2")) {
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

    static String pieces(Tokenizer tokenizer, int[] ids) {
        return Arrays.toString(Arrays.stream(ids).mapToObj(id -> id + "'" + tokenizer.piece(id) + "'").toArray());
    }
}
