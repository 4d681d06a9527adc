package dev.tandem.server;

import com.code_intelligence.jazzer.junit.FuzzTest;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.llm.GenerateOptions;
import java.util.Arrays;

/**
 * Fuzzes what the server does with a request body before anything is admitted: JSON parsing,
 * {@link GenerationRequest#parse} for chat and for completions, and the generation options built
 * from the result. The only acceptable outcomes are a request or a client error (malformed JSON,
 * an {@link ApiException} of status 400 naming its reason); anything else — an exception the
 * server would turn into a 500, an {@code OutOfMemoryError}, a stack overflow — is a finding.
 *
 * <p>In a normal build Jazzer runs in regression mode, once on each seed in
 * {@code src/test/resources/dev/tandem/server/GenerationRequestFuzzTestInputs/fuzzParse/} (the
 * first byte picks chat or completion). To fuzz for {@code maxDuration}:
 *
 * <pre>
 *   JAZZER_FUZZ=1 JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64 ./mvnw -pl tandem-server -am test \
 *       -Dtest=GenerationRequestFuzzTest -Dsurefire.failIfNoSpecifiedTests=false
 * </pre>
 */
class GenerationRequestFuzzTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @FuzzTest(maxDuration = "5m")
    void fuzzParse(byte[] data) {
        if (data.length == 0) {
            return;
        }
        boolean chat = (data[0] & 1) == 1;
        JsonNode body;
        try {
            body = JSON.readTree(Arrays.copyOfRange(data, 1, data.length));
        } catch (JsonProcessingException malformed) {
            return; // 400: malformed JSON
        } catch (java.io.IOException e) {
            return; // 400 too
        }
        GenerationRequest request;
        try {
            request = GenerationRequest.parse(body, chat, 4096);
        } catch (ApiException e) {
            if (e.status() != 400 || e.getMessage() == null || e.getMessage().isEmpty()) {
                throw new AssertionError("a bad body must be a 400 with a message, was " + e.status(), e);
            }
            return;
        }
        GenerateOptions.defaults().withMaxTokens(Math.max(1, request.maxTokens())).withSampler(request.sampler())
                .withStop(request.stop()).withIgnoreEos(request.ignoreEos());
        if (chat && request.messages().isEmpty()) {
            throw new AssertionError("a chat request without messages was accepted");
        }
        if (!chat && request.prompt() == null) {
            throw new AssertionError("a completion without a prompt was accepted");
        }
    }
}
