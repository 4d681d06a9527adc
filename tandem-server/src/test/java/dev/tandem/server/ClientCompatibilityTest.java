package dev.tandem.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The requests real clients send, header for header, and the routes and errors local servers
 * share. The header lists were recorded from the official SDKs (openai for Python 3.22.1 and for
 * Node 6.49.0) against a socket that printed what it received; both send
 * {@code Accept: application/json} on every request, streams included.
 */
@Timeout(60)
class ClientCompatibilityTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static Served served;

    static final List<String> PYTHON_SDK = List.of("Host: 127.0.0.1", "Accept-Encoding: gzip, deflate",
            "Connection: keep-alive", "authorization: Bearer sk-x", "accept: application/json",
            "content-type: application/json", "user-agent: OpenAI/Python 3.22.1", "x-stainless-lang: python",
            "x-stainless-package-version: 3.22.1", "x-stainless-os: Linux", "x-stainless-arch: x64",
            "x-stainless-runtime: CPython", "x-stainless-runtime-version: 3.11.7", "x-stainless-async: false",
            "x-stainless-retry-count: 0", "x-stainless-read-timeout: 600");
    static final List<String> NODE_SDK = List.of("host: 127.0.0.1", "connection: keep-alive",
            "accept: application/json", "user-agent: OpenAI/JS 6.49.0", "x-stainless-retry-count: 0",
            "x-stainless-lang: js", "x-stainless-package-version: 6.49.0", "x-stainless-os: Linux",
            "x-stainless-arch: x64", "x-stainless-runtime: node", "x-stainless-runtime-version: v20.20.2",
            "authorization: Bearer sk-x", "content-type: application/json", "accept-language: *",
            "sec-fetch-mode: cors", "accept-encoding: gzip, deflate");

    @BeforeAll
    static void start() {
        served = Served.start(ServerConfig.builder().maxTokens(64), b -> b);
    }

    @AfterAll
    static void stop() {
        served.close();
    }

    static Stream<Arguments> clients() {
        List<String> plain = List.of("Host: 127.0.0.1", "Content-Type: application/json");
        return Stream.of(Arguments.of("python sdk", PYTHON_SDK), Arguments.of("node sdk", NODE_SDK),
                Arguments.of("no accept", plain), Arguments.of("accept */*", with(plain, "Accept: */*")),
                Arguments.of("accept a list", with(plain, "Accept: application/json, text/event-stream;q=0.9")),
                Arguments.of("accept text/html", with(plain, "Accept: text/html")),
                Arguments.of("accept event-stream", with(plain, "Accept: text/event-stream")));
    }

    private static List<String> with(List<String> headers, String header) {
        List<String> all = new ArrayList<>(headers);
        all.add(header);
        return all;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("clients")
    void streamsAChatWhateverTheAcceptHeaderSays(String client, List<String> headers) throws Exception {
        RawHttp.Response response = RawHttp.exchange(served.server.port(), "POST", "/v1/chat/completions", headers,
                """
                {"model":"gpt-4o-mini","messages":[{"role":"user","content":"Tell me a story"}],
                 "max_tokens":12,"temperature":0,"stream":true}""");
        assertThat(response.status()).as(response.body()).isEqualTo(200);
        assertThat(response.header("content-type")).startsWith("text/event-stream");
        assertThat(response.header("content-encoding")).isNull();
        List<String> data = WireTest.events(response.body());
        assertThat(data.getLast()).isEqualTo("[DONE]");
        assertThat(JSON.readTree(data.getFirst()).at("/choices/0/delta/role").asText()).isEqualTo("assistant");
        assertThat(JSON.readTree(data.get(data.size() - 2)).at("/choices/0/finish_reason").asText())
                .isIn("stop", "length");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("clients")
    void answersWholeAsJsonWhateverTheAcceptHeaderSays(String client, List<String> headers) throws Exception {
        RawHttp.Response response = RawHttp.exchange(served.server.port(), "POST", "/v1/completions", headers, """
                {"model":"gpt-4o-mini","prompt":"Once upon a time","max_tokens":8,"temperature":0}""");
        assertThat(response.status()).as(response.body()).isEqualTo(200);
        assertThat(response.header("content-type")).startsWith("application/json");
        assertThat(JSON.readTree(response.body()).at("/usage/completion_tokens").asInt()).isBetween(1, 8);
    }

    @Test
    void theRoutesAnswerWithoutTheV1Prefix() throws Exception {
        List<String> h = List.of("Host: 127.0.0.1", "Content-Type: application/json");
        RawHttp.Response chat = RawHttp.exchange(served.server.port(), "POST", "/chat/completions", h,
                "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"max_tokens\":4}");
        assertThat(chat.status()).as(chat.body()).isEqualTo(200);
        assertThat(JSON.readTree(chat.body()).get("object").asText()).isEqualTo("chat.completion");
        RawHttp.Response completion = RawHttp.exchange(served.server.port(), "POST", "/completions", h,
                "{\"prompt\":\"Once\",\"max_tokens\":4}");
        assertThat(JSON.readTree(completion.body()).get("object").asText()).isEqualTo("text_completion");
        RawHttp.Response models = RawHttp.exchange(served.server.port(), "GET", "/models", h, null);
        assertThat(JSON.readTree(models.body()).at("/data/0/id").asText()).isEqualTo("stories260K");
    }

    @Test
    void unknownRoutesAndMethodsAnswerOpenAiErrorObjects() throws Exception {
        List<String> h = List.of("Host: 127.0.0.1");
        RawHttp.Response missing = RawHttp.exchange(served.server.port(), "GET", "/v1/assistants", h, null);
        assertThat(missing.status()).isEqualTo(404);
        assertThat(missing.header("content-type")).startsWith("application/json");
        JsonNode error = JSON.readTree(missing.body()).get("error");
        assertThat(error.get("code").asText()).isEqualTo("not_found");
        assertThat(error.get("message").asText()).contains("/v1/assistants");

        RawHttp.Response wrongMethod = RawHttp.exchange(served.server.port(), "GET", "/v1/chat/completions", h, null);
        assertThat(wrongMethod.status()).isEqualTo(405);
        assertThat(wrongMethod.header("allow")).isEqualTo("POST");
        assertThat(JSON.readTree(wrongMethod.body()).at("/error/code").asText()).isEqualTo("method_not_allowed");
        RawHttp.Response postModels = RawHttp.exchange(served.server.port(), "POST", "/v1/models", h, "{}");
        assertThat(postModels.status()).isEqualTo(405);
        assertThat(postModels.header("allow")).isEqualTo("GET");

        String metrics = RawHttp.exchange(served.server.port(), "GET", "/metrics", h, null).body();
        assertThat(metrics).containsPattern("tandem_server_refusals_total\\{code=\"not_found\".*status=\"404\"\\} [1-9]")
                .containsPattern("tandem_server_refusals_total\\{code=\"method_not_allowed\".*status=\"405\"\\} [1-9]");
    }

    @Test
    void tokenizesAndDetokenizesAsLlamaServerDoes() throws Exception {
        List<String> h = List.of("Host: 127.0.0.1", "Content-Type: application/json");
        int port = served.server.port();
        String text = "What is the capital of France ?";
        JsonNode tokens = JSON.readTree(RawHttp.exchange(port, "POST", "/tokenize", h,
                "{\"content\":\"" + text + "\"}").body()).get("tokens");
        int[] expected = served.model.tokenizer().encode(text, false, true);
        assertThat(tokens).hasSize(expected.length);
        for (int i = 0; i < expected.length; i++) {
            assertThat(tokens.get(i).asInt()).isEqualTo(expected[i]);
        }
        JsonNode withBos = JSON.readTree(RawHttp.exchange(port, "POST", "/tokenize", h,
                "{\"content\":\"" + text + "\",\"add_special\":true}").body()).get("tokens");
        assertThat(withBos.get(0).asInt()).isEqualTo(served.model.tokenizer().bos());
        assertThat(withBos).hasSize(expected.length + 1);

        JsonNode pieces = JSON.readTree(RawHttp.exchange(port, "POST", "/tokenize", h,
                "{\"content\":\"" + text + "\",\"with_pieces\":true}").body()).get("tokens");
        StringBuilder joined = new StringBuilder();
        for (JsonNode p : pieces) {
            assertThat(p.get("id").isInt()).isTrue();
            joined.append(p.get("piece").asText());
        }
        assertThat(joined.toString().replace('\u2581', ' ').strip()).isEqualTo(text);

        JsonNode content = JSON.readTree(RawHttp.exchange(port, "POST", "/detokenize", h,
                "{\"tokens\":" + tokens + "}").body()).get("content");
        assertThat(content.asText().strip()).isEqualTo(text);

        RawHttp.Response bad = RawHttp.exchange(port, "POST", "/detokenize", h, "{\"tokens\":[1,-4]}");
        assertThat(bad.status()).isEqualTo(400);
        assertThat(JSON.readTree(bad.body()).at("/error/param").asText()).isEqualTo("tokens");
        assertThat(RawHttp.exchange(port, "POST", "/tokenize", h, "{\"content\":3}").status()).isEqualTo(400);
    }
}
