package dev.tandem.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.code_intelligence.jazzer.junit.DictionaryEntries;
import com.code_intelligence.jazzer.junit.FuzzTest;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Fuzzes the request parser with Jazzer, from the body's bytes as the server reads them
 * ({@link Replies#parseJson}, then {@link GenerationRequest#parse}): for any body, the only
 * acceptable outcomes are a parsed request within its bounds or an {@link ApiException} (a 400);
 * any other throwable is a finding. The first run found that Jackson guessed UTF-32 from a body
 * starting {@code 7b 00 00 00} and threw a {@code CharConversionException}; the body is now
 * decoded as UTF-8 strictly ({@code finding-utf32-autodetect} is kept as a seed).
 *
 * <p>In a normal build it runs in Jazzer's regression mode on the seeds in
 * {@code src/test/resources/dev/tandem/server/GenerationRequestFuzzTestInputs/fuzzParse/}, with
 * Jazzer's hooks off ({@code jazzer.hooks=false} in the pom: installing them took 20 to 40 s here
 * and they only guide fuzzing); {@code JAZZER_FUZZ} turns them on. To fuzz for
 * {@code maxDuration}, from the repository root:
 *
 * <pre>
 *   JAZZER_FUZZ=1 JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64 ./mvnw -pl tandem-server test \
 *       -Dtest=GenerationRequestFuzzTest -Dsurefire.failIfNoSpecifiedTests=false
 * </pre>
 */
class GenerationRequestFuzzTest {
    private static final int MAX_TOKENS = 4096;

    @DictionaryEntries({"\"messages\"", "\"prompt\"", "\"role\"", "\"content\"", "\"user\"", "\"system\"",
        "\"assistant\"", "\"developer\"", "\"tool\"", "\"type\"", "\"text\"", "\"max_tokens\"",
        "\"max_completion_tokens\"", "\"temperature\"", "\"top_p\"", "\"stop\"", "\"seed\"", "\"n\"",
        "\"presence_penalty\"", "\"frequency_penalty\"", "\"stream\"", "\"stream_options\"", "\"include_usage\"",
        "\"ignore_eos\"", "\"model\"", "null", "true", "1e400", "-0", "9223372036854775808", "[]", "{}"})
    @FuzzTest(maxDuration = "2m")
    void fuzzParse(byte[] data) {
        for (boolean chat : new boolean[] {true, false}) {
            try {
                JsonNode body = Replies.parseJson(data);
                GenerationRequest request = GenerationRequest.parse(body, chat, MAX_TOKENS);
                assertThat(request.maxTokens()).isBetween(0, MAX_TOKENS);
                assertThat(request.stop()).hasSizeLessThanOrEqualTo(GenerationRequest.MAX_STOP_STRINGS)
                        .allSatisfy(s -> assertThat(s).isNotEmpty());
                if (chat) {
                    assertThat(request.messages()).isNotEmpty();
                } else {
                    assertThat(request.prompts()).isNotEmpty();
                }
            } catch (ApiException e) {
                assertThat(e.status()).isEqualTo(400);
                assertThat(e.getMessage()).isNotBlank();
            }
        }
    }

    /** The seeds stay requests the parser accepts. */
    @Test
    void everySeedParses() throws IOException {
        Path dir = Path.of("src/test/resources/dev/tandem/server/GenerationRequestFuzzTestInputs/fuzzParse");
        List<Path> seeds;
        try (Stream<Path> s = Files.list(dir)) {
            seeds = s.filter(p -> !p.getFileName().toString().startsWith("finding-")).toList();
        }
        assertThat(seeds).hasSizeGreaterThanOrEqualTo(3);
        for (Path seed : seeds) {
            JsonNode body = Replies.parseJson(Files.readAllBytes(seed));
            GenerationRequest.parse(body, body.has("messages"), MAX_TOKENS);
        }
    }

    /** The fuzzer's finding: a body Jackson took for UTF-32 is a 400, not an I/O failure. */
    @Test
    void aBodyThatLooksLikeUtf32IsABadRequest() {
        byte[] body = {'{', 0, 0, 0, '"', 'a', '"', ':', '1', '}'};
        assertThatThrownBy(() -> Replies.parseJson(body)).isInstanceOfSatisfying(ApiException.class,
                e -> assertThat(e.status()).isEqualTo(400));
        byte[] latin1 = {'{', '"', 'p', '"', ':', '"', (byte) 0xE9, '"', '}'};
        assertThatThrownBy(() -> Replies.parseJson(latin1)).isInstanceOf(ApiException.class)
                .hasMessageContaining("UTF-8");
    }
}
