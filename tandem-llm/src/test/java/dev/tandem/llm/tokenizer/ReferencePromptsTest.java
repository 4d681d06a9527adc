package dev.tandem.llm.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.llm.gguf.GgufVocabulary;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.stream.StreamSupport;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The prompts of the real models' reference outputs (llama.cpp's server): each encodes, with BOS,
 * to its {@code prompt_tokens}, and the greedy continuation's tokens stream to its {@code greedy_text}.
 */
class ReferencePromptsTest {

    @ParameterizedTest
    @ValueSource(strings = {"stories260K", "llama-2-tiny-random"})
    void promptsEncodeToTheReferenceTokensWithBos(String model) throws IOException {
        Tokenizer tokenizer = Tokenizer.of(GgufVocabulary.read(SharedModels.file(model + ".gguf")));
        JsonNode cases = new ObjectMapper().readTree(SharedModels.file(model + ".greedy.json").toFile()).path("cases");
        assertThat(cases.size()).isPositive();
        for (JsonNode c : cases) {
            String prompt = c.path("prompt").asText();
            int[] expected = ints(c.path("prompt_tokens"));
            assertThat(tokenizer.encode(prompt, true, false)).as("%s %s", model, prompt).isEqualTo(expected);
            assertThat(tokenizer.decode(java.util.Arrays.copyOfRange(expected, 1, expected.length))).isEqualTo(prompt);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"stories260K", "llama-2-tiny-random"})
    void greedyTokensStreamToTheReferenceText(String model) throws IOException {
        Tokenizer tokenizer = Tokenizer.of(GgufVocabulary.read(SharedModels.file(model + ".gguf")));
        JsonNode cases = new ObjectMapper().readTree(SharedModels.file(model + ".greedy.json").toFile()).path("cases");
        for (JsonNode c : cases) {
            ByteArrayOutputStream streamed = new ByteArrayOutputStream();
            for (int id : ints(c.path("greedy_tokens"))) {
                streamed.writeBytes(tokenizer.tokenBytes(id));
            }
            String text = streamed.toString(StandardCharsets.UTF_8);
            String expected = c.path("greedy_text").asText();
            // The server holds back a character whose UTF-8 is not complete when the limit cuts it.
            assertThat(text).as("%s %s", model, c.path("prompt").asText()).startsWith(expected);
            assertThat(text.length() - expected.length()).isLessThanOrEqualTo(1);
        }
    }

    private static int[] ints(JsonNode array) {
        return StreamSupport.stream(array.spliterator(), false).mapToInt(JsonNode::asInt).toArray();
    }
}
