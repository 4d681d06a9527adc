package dev.tandem.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** What {@code serve}'s options change on the wire: model names and their strictness, CORS, the key. */
@Timeout(60)
class ServerOptionsTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final List<String> H = List.of("Host: 127.0.0.1", "Content-Type: application/json");

    @Test
    void aliasesNameTheModelAndTheFirstIsTheIdResponsesReport() throws Exception {
        try (Served served = Served.start(ServerConfig.builder().alias("gpt-4o-mini").alias("local"), b -> b)) {
            int port = served.server.port();
            JsonNode models = JSON.readTree(RawHttp.exchange(port, "GET", "/v1/models", H, null).body());
            assertThat(models.get("data").findValuesAsText("id")).containsExactly("gpt-4o-mini");
            for (String name : List.of("gpt-4o-mini", "local", "stories260K")) {
                assertThat(RawHttp.exchange(port, "GET", "/v1/models/" + name, H, null).status()).isEqualTo(200);
            }
            assertThat(RawHttp.exchange(port, "GET", "/v1/models/other", H, null).status()).isEqualTo(404);
            JsonNode answer = JSON.readTree(RawHttp.exchange(port, "POST", "/v1/completions", H,
                    "{\"model\":\"stories260K\",\"prompt\":\"Once\",\"max_tokens\":2}").body());
            assertThat(answer.get("model").asText()).isEqualTo("gpt-4o-mini");
            // Not strict: a name it does not know is served by the one model.
            assertThat(RawHttp.exchange(port, "POST", "/v1/completions", H,
                    "{\"model\":\"claude\",\"prompt\":\"Once\",\"max_tokens\":2}").status()).isEqualTo(200);
        }
    }

    @Test
    void strictModelNamesRefuseOtherNamesWith404() throws Exception {
        try (Served served = Served.start(ServerConfig.builder().alias("local").strictModelNames(true), b -> b)) {
            int port = served.server.port();
            assertGpt4oNotFound(port);
            for (String name : List.of("local", "stories260K")) {
                assertThat(RawHttp.exchange(port, "POST", "/v1/completions", H,
                        "{\"model\":\"" + name + "\",\"prompt\":\"Once\",\"max_tokens\":2}").status()).isEqualTo(200);
            }
            assertThat(RawHttp.exchange(port, "POST", "/v1/responses", H,
                    "{\"model\":\"gpt-4o\",\"input\":\"x\"}").status()).isEqualTo(404);
        }
    }

    /** A chat naming {@code gpt-4o} is refused as OpenAI refuses an unknown model: 404 {@code model_not_found}. */
    static void assertGpt4oNotFound(int port) throws Exception {
        RawHttp.Response refused = RawHttp.exchange(port, "POST", "/v1/chat/completions", H,
                "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}");
        assertThat(refused.status()).isEqualTo(404);
        JsonNode error = JSON.readTree(refused.body()).get("error");
        assertThat(error.get("code").asText()).isEqualTo("model_not_found");
        assertThat(error.get("param").asText()).isEqualTo("model");
    }

    /**
     * {@link TandemServer#prepareAsync} twice at once (as a serving command runs it beside the
     * model's load) completes, binds nothing and leaves a server that starts and answers.
     */
    @Test
    void preparedTwiceAtOnceAServerStillStartsAndAnswers() throws Exception {
        CompletableFuture.allOf(TandemServer.prepareAsync(), TandemServer.prepareAsync()).get(60, TimeUnit.SECONDS);
        try (Served served = Served.start()) {
            assertThat(RawHttp.exchange(served.server.port(), "GET", "/health", H, null).status()).isEqualTo(200);
        }
    }

    @Test
    void withoutCorsOriginsNoCorsHeadersAreSent() throws Exception {
        try (Served served = Served.start()) {
            RawHttp.Response response = RawHttp.exchange(served.server.port(), "GET", "/v1/models",
                    List.of("Host: 127.0.0.1", "Origin: http://app.example"), null);
            assertThat(response.status()).isEqualTo(200);
            assertThat(response.header("access-control-allow-origin")).isNull();
        }
    }

    @Test
    void corsAllowsTheConfiguredOriginsOnlyAndAnswersPreflightsBeforeTheKey() throws Exception {
        try (Served served = Served.start(ServerConfig.builder().corsOrigin("http://app.example").apiKey("k"),
                b -> b)) {
            int port = served.server.port();
            RawHttp.Response preflight = RawHttp.exchange(port, "OPTIONS", "/v1/chat/completions",
                    List.of("Host: 127.0.0.1", "Origin: http://app.example", "Access-Control-Request-Method: POST",
                            "Access-Control-Request-Headers: authorization, content-type"), null);
            assertThat(preflight.status()).isEqualTo(204);
            assertThat(preflight.header("access-control-allow-origin")).isEqualTo("http://app.example");
            assertThat(preflight.header("access-control-allow-methods")).contains("POST");
            assertThat(preflight.header("access-control-allow-headers")).isEqualTo("authorization, content-type");

            RawHttp.Response allowed = RawHttp.exchange(port, "GET", "/v1/models",
                    List.of("Host: 127.0.0.1", "Origin: http://app.example", "Authorization: Bearer k"), null);
            assertThat(allowed.status()).isEqualTo(200);
            assertThat(allowed.header("access-control-allow-origin")).isEqualTo("http://app.example");
            assertThat(allowed.header("vary")).isEqualTo("Origin");

            RawHttp.Response other = RawHttp.exchange(port, "GET", "/v1/models",
                    List.of("Host: 127.0.0.1", "Origin: http://evil.example", "Authorization: Bearer k"), null);
            assertThat(other.header("access-control-allow-origin")).isNull();
            RawHttp.Response otherPreflight = RawHttp.exchange(port, "OPTIONS", "/v1/models",
                    List.of("Host: 127.0.0.1", "Origin: http://evil.example", "Access-Control-Request-Method: GET"),
                    null);
            assertThat(otherPreflight.status()).isEqualTo(403);

            RawHttp.Response noKey = RawHttp.exchange(port, "GET", "/v1/models",
                    List.of("Host: 127.0.0.1", "Origin: http://app.example"), null);
            assertThat(noKey.status()).isEqualTo(401);
            assertThat(noKey.header("access-control-allow-origin")).isEqualTo("http://app.example");
        }
    }

    @Test
    void theKeyGuardsEveryRouteButHealthAndMetrics() throws Exception {
        try (Served served = Served.start(ServerConfig.builder().apiKey("k"), b -> b)) {
            int port = served.server.port();
            for (String path : List.of("/v1/models", "/models", "/v1/nothing")) {
                assertThat(RawHttp.exchange(port, "GET", path, H, null).status()).as(path).isEqualTo(401);
            }
            assertThat(RawHttp.exchange(port, "POST", "/tokenize", H, "{\"content\":\"x\"}").status()).isEqualTo(401);
            assertThat(RawHttp.exchange(port, "GET", "/health", H, null).status()).isEqualTo(200);
            assertThat(RawHttp.exchange(port, "GET", "/metrics", H, null).status()).isEqualTo(200);
        }
    }

    @Test
    void badOptionsFailClearly() {
        assertThatThrownBy(() -> ServerConfig.builder().corsOrigin("app.example").build())
                .hasMessageContaining("CORS origin");
        assertThatThrownBy(() -> ServerConfig.builder().alias(" ").build()).hasMessageContaining("model name");
    }
}
