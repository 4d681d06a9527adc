package dev.tandem.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The protocol on the wire, through a plain HTTP client: SSE framing, bodies, every error's status and shape. */
@Timeout(60)
class WireTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static Served served;
    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    @BeforeAll
    static void start() {
        served = Served.start(ServerConfig.builder().maxBodyBytes(16384).maxTokens(256), b -> b);
    }

    @AfterAll
    static void stop() {
        served.close();
    }

    static HttpResponse<String> post(Served served, String path, String body, String... headers) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(served.uri(path))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body));
        if (headers.length > 0) {
            request.headers(headers);
        }
        return HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    static HttpResponse<String> get(Served served, String path, String... headers) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(served.uri(path)).GET();
        if (headers.length > 0) {
            request.headers(headers);
        }
        return HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** Asserts OpenAI's error shape and returns the error object. */
    static JsonNode error(HttpResponse<String> response, int status) throws IOException {
        assertThat(response.statusCode()).as(response.body()).isEqualTo(status);
        assertThat(response.headers().firstValue("content-type")).hasValueSatisfying(
                v -> assertThat(v).startsWith("application/json"));
        JsonNode body = JSON.readTree(response.body());
        assertThat(body.fieldNames()).toIterable().containsExactly("error");
        JsonNode error = body.get("error");
        assertThat(error.fieldNames()).toIterable().containsExactlyInAnyOrder("message", "type", "param", "code");
        assertThat(error.get("message").asText()).isNotBlank();
        assertThat(error.get("type").asText()).isNotBlank();
        return error;
    }

    /** The data payloads of an SSE body, checking the framing: every event is one {@code data: } line and a blank line. */
    static List<String> events(String body) {
        assertThat(body).endsWith("\n\n");
        List<String> data = new ArrayList<>();
        for (String event : body.substring(0, body.length() - 2).split("\n\n", -1)) {
            if (event.equals(": keep-alive")) {
                continue; // a comment, sent after a silence
            }
            assertThat(event).startsWith("data: ").doesNotContain("\n");
            data.add(event.substring("data: ".length()));
        }
        return data;
    }

    @Test
    void streamsACompletionAsServerSentEvents() throws Exception {
        HttpResponse<String> response = post(served, "/v1/completions", """
                {"model":"stories260K","prompt":"Once upon a time","max_tokens":24,"temperature":0,
                 "stream":true,"stream_options":{"include_usage":true}}""");
        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.headers().firstValue("content-type")).hasValueSatisfying(
                v -> assertThat(v).startsWith("text/event-stream"));
        assertThat(response.headers().firstValue("access-control-allow-origin")).isEmpty();
        List<String> data = events(response.body());
        assertThat(data.getLast()).isEqualTo("[DONE]");
        List<JsonNode> chunks = new ArrayList<>();
        for (String d : data.subList(0, data.size() - 1)) {
            chunks.add(JSON.readTree(d));
        }
        JsonNode usage = chunks.removeLast();
        assertThat(usage.get("choices")).isEmpty();
        assertThat(usage.at("/usage/prompt_tokens").asInt()).isEqualTo(served.model.encode("Once upon a time").length);
        int completionTokens = usage.at("/usage/completion_tokens").asInt();
        assertThat(usage.at("/usage/total_tokens").asInt())
                .isEqualTo(usage.at("/usage/prompt_tokens").asInt() + completionTokens);
        JsonNode last = chunks.removeLast();
        assertThat(last.at("/choices/0/finish_reason").asText()).isIn("stop", "length");
        StringBuilder text = new StringBuilder();
        String id = last.get("id").asText();
        assertThat(id).startsWith("cmpl-");
        for (JsonNode chunk : chunks) {
            assertThat(chunk.get("object").asText()).isEqualTo("text_completion");
            assertThat(chunk.get("id").asText()).isEqualTo(id);
            assertThat(chunk.get("model").asText()).isEqualTo("stories260K");
            assertThat(chunk.get("created").isIntegralNumber()).isTrue();
            assertThat(chunk.at("/choices/0/index").asInt()).isZero();
            assertThat(chunk.at("/choices/0/finish_reason").isNull()).isTrue();
            text.append(chunk.at("/choices/0/text").asText());
        }
        assertThat(chunks).hasSizeBetween(1, completionTokens);
        assertThat(text.toString()).isNotBlank();
    }

    @Test
    void streamsAChatWithTheRoleFirstAndAFinishReasonLast() throws Exception {
        HttpResponse<String> response = post(served, "/v1/chat/completions", """
                {"model":"stories260K","messages":[{"role":"user","content":"Tell me a story"}],
                 "max_tokens":16,"temperature":0,"stream":true}""");
        assertThat(response.statusCode()).isEqualTo(200);
        List<String> data = events(response.body());
        assertThat(data.getLast()).isEqualTo("[DONE]");
        JsonNode first = JSON.readTree(data.getFirst());
        assertThat(first.get("object").asText()).isEqualTo("chat.completion.chunk");
        assertThat(first.at("/choices/0/delta/role").asText()).isEqualTo("assistant");
        JsonNode last = JSON.readTree(data.get(data.size() - 2));
        assertThat(last.at("/choices/0/finish_reason").asText()).isIn("stop", "length");
        assertThat(last.at("/choices/0/delta").isObject()).isTrue();
        assertThat(last.at("/choices/0/delta").has("content")).isFalse();
        for (String d : data.subList(1, data.size() - 2)) {
            JsonNode chunk = JSON.readTree(d);
            assertThat(chunk.at("/choices/0/delta").has("role")).isFalse();
            assertThat(chunk.at("/choices/0/delta/content").asText()).isNotEmpty();
        }
    }

    @Test
    void answersWholeWithUsageWhenNotStreaming() throws Exception {
        HttpResponse<String> response = post(served, "/v1/chat/completions", """
                {"model":"stories260K","messages":[{"role":"system","content":"You tell stories."},
                 {"role":"user","content":[{"type":"text","text":"Once"}]}],"max_completion_tokens":8,
                 "temperature":0,"n":1,"user":"someone","logit_bias":{},"store":false,"metadata":{"k":"v"},
                 "tools":[],"tool_choice":"none","logprobs":false,"response_format":{"type":"text"}}""");
        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        JsonNode body = JSON.readTree(response.body());
        assertThat(body.get("object").asText()).isEqualTo("chat.completion");
        assertThat(body.get("id").asText()).startsWith("chatcmpl-");
        assertThat(body.at("/choices/0/message/role").asText()).isEqualTo("assistant");
        assertThat(body.at("/choices/0/finish_reason").asText()).isIn("stop", "length");
        assertThat(body.at("/usage/completion_tokens").asInt()).isBetween(1, 8);
    }

    @Test
    void listsTheModelAndReportsHealthAndMetrics() throws Exception {
        JsonNode models = JSON.readTree(get(served, "/v1/models").body());
        assertThat(models.get("object").asText()).isEqualTo("list");
        assertThat(models.at("/data/0/id").asText()).isEqualTo("stories260K");
        assertThat(models.at("/data/0/object").asText()).isEqualTo("model");
        assertThat(JSON.readTree(get(served, "/v1/models/stories260K").body()).get("id").asText())
                .isEqualTo("stories260K");
        assertThat(error(get(served, "/v1/models/gpt-4"), 404).get("code").asText()).isEqualTo("model_not_found");

        HttpResponse<String> health = get(served, "/health");
        assertThat(health.statusCode()).isEqualTo(200);
        assertThat(JSON.readTree(health.body()).get("status").asText()).isEqualTo("ok");

        post(served, "/v1/completions", "{\"prompt\":\"Once\",\"max_tokens\":4,\"temperature\":0}");
        HttpResponse<String> metrics = get(served, "/metrics");
        assertThat(metrics.statusCode()).isEqualTo(200);
        assertThat(metrics.headers().firstValue("content-type")).hasValueSatisfying(
                v -> assertThat(v).startsWith("text/plain"));
        assertThat(metrics.body()).contains("gen_ai_server_time_to_first_token_seconds_bucket",
                "gen_ai_server_time_per_output_token_seconds", "gen_ai_client_token_usage",
                "tandem_server_requests_total", "tandem_server_tokens_generated_total",
                "tandem_engine_requests_queued", "tandem_engine_requests_active", "tandem_engine_batch_occupancy",
                "tandem_engine_kv_blocks_used");
    }

    @Test
    void rejectsMalformedJsonAndBadParametersNamingThem() throws Exception {
        assertThat(error(post(served, "/v1/completions", "{\"prompt\": \"x\""), 400).get("type").asText())
                .isEqualTo("invalid_request_error");
        error(post(served, "/v1/completions", ""), 400);
        error(post(served, "/v1/completions", "[1,2]"), 400);
        record Bad(String path, String body, String param) {}
        List<Bad> bad = List.of(
                new Bad("/v1/completions", "{\"max_tokens\":4}", "prompt"),
                new Bad("/v1/completions", "{\"prompt\":7}", "prompt"),
                new Bad("/v1/completions", "{\"prompt\":\"x\",\"max_tokens\":0}", "max_tokens"),
                new Bad("/v1/completions", "{\"prompt\":\"x\",\"max_tokens\":100000}", "max_tokens"),
                new Bad("/v1/completions", "{\"prompt\":\"x\",\"max_tokens\":2.5}", "max_tokens"),
                new Bad("/v1/completions", "{\"prompt\":\"x\",\"temperature\":-1}", "temperature"),
                new Bad("/v1/completions", "{\"prompt\":\"x\",\"temperature\":\"hot\"}", "temperature"),
                new Bad("/v1/completions", "{\"prompt\":\"x\",\"top_p\":0}", "top_p"),
                new Bad("/v1/completions", "{\"prompt\":\"x\",\"top_p\":1.5}", "top_p"),
                new Bad("/v1/completions", "{\"prompt\":\"x\",\"n\":0}", "n"),
                new Bad("/v1/completions", "{\"prompt\":\"x\",\"seed\":\"s\"}", "seed"),
                new Bad("/v1/completions", "{\"prompt\":\"x\",\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}", "stop"),
                new Bad("/v1/completions", "{\"prompt\":\"x\",\"stop\":\"\"}", "stop"),
                new Bad("/v1/completions", "{\"prompt\":\"x\",\"stop\":3}", "stop"),
                new Bad("/v1/completions", "{\"prompt\":\"x\",\"presence_penalty\":3}", "presence_penalty"),
                new Bad("/v1/completions", "{\"prompt\":\"x\",\"frequency_penalty\":-3}", "frequency_penalty"),
                new Bad("/v1/completions", "{\"prompt\":\"x\",\"stream\":\"yes\"}", "stream"),
                new Bad("/v1/completions", "{\"prompt\":\"x\",\"stream_options\":{\"include_usage\":1}}",
                        "stream_options.include_usage"),
                new Bad("/v1/completions", "{\"prompt\":\"x\",\"model\":5}", "model"),
                new Bad("/v1/chat/completions", "{\"max_tokens\":4}", "messages"),
                new Bad("/v1/chat/completions", "{\"messages\":[]}", "messages"),
                new Bad("/v1/chat/completions", "{\"messages\":[{\"role\":\"wizard\",\"content\":\"x\"}]}",
                        "messages[0].role"),
                new Bad("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":5}]}",
                        "messages[0].content"),
                new Bad("/v1/chat/completions",
                        "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}",
                        "messages[0].content[0]"),
                new Bad("/v1/chat/completions",
                        "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_completion_tokens\":-1}",
                        "max_completion_tokens"),
                new Bad("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"unknown_field\":1}",
                        "unknown_field"),
                new Bad("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"logit_bias\":{\"five\":1}}",
                        "logit_bias"),
                new Bad("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"audio\":{}}",
                        "audio"),
                new Bad("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"prompt\":\"x\"}",
                        "prompt"),
                new Bad("/v1/completions", "{\"prompt\":\"x\",\"echo\":true}", "echo"),
                new Bad("/v1/completions", "{\"prompt\":\"x\",\"stream_options\":{\"frobnicate\":1}}",
                        "stream_options.frobnicate"),
                new Bad("/v1/completions", "{\"prompt\":\"x\",\"stream_options\":{\"include_obfuscation\":true}}",
                        "stream_options.include_obfuscation"),
                new Bad("/v1/completions", "{\"prompt\":\"x\",\"suffix\":\"y\"}", "suffix"),
                new Bad("/v1/completions", "{\"prompt\":\"x\",\"best_of\":3}", "best_of"),
                new Bad("/v1/completions", "{\"prompt\":\"x\",\"messages\":[]}", "messages"),
                new Bad("/v1/completions", "{\"prompt\":\"x\",\"top_k\":1.5}", "top_k"),
                new Bad("/v1/completions", "{\"prompt\":\"x\",\"repeat_penalty\":0}", "repeat_penalty"));
        for (Bad b : bad) {
            JsonNode error = error(post(served, b.path(), b.body()), 400);
            assertThat(error.get("param").asText()).as(b.body()).isEqualTo(b.param());
            assertThat(error.get("type").asText()).isEqualTo("invalid_request_error");
        }
    }

    @Test
    void anyModelNameIsServedByTheOneModel() throws Exception {
        HttpResponse<String> response = post(served, "/v1/completions",
                "{\"model\":\"gpt-4o-mini\",\"prompt\":\"x\",\"max_tokens\":2}");
        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        assertThat(JSON.readTree(response.body()).get("model").asText()).isEqualTo("stories260K");
    }

    @Test
    void aBodyBeyondTheLimitIs413() throws Exception {
        String big = "{\"prompt\":\"" + "a".repeat(20000) + "\"}";
        assertThat(error(post(served, "/v1/completions", big), 413).get("code").asText())
                .isEqualTo("request_too_large");
        // Chunked, with no Content-Length: the bounded read catches it.
        HttpRequest chunked = HttpRequest.newBuilder(served.uri("/v1/completions"))
                .POST(HttpRequest.BodyPublishers.ofInputStream(
                        () -> new java.io.ByteArrayInputStream(big.getBytes(java.nio.charset.StandardCharsets.UTF_8))))
                .build();
        error(HTTP.send(chunked, HttpResponse.BodyHandlers.ofString()), 413);
        assertThat(served.engine.stats().active()).isZero();
    }

    @Test
    void aPromptBeyondTheContextIs400ContextLengthExceeded() throws Exception {
        int context = served.model.config().contextLength();
        // Each " a" is at least one token; the body stays under the 16 KiB limit.
        String prompt = " a".repeat(context + 8);
        assertThat(served.model.encode(prompt).length).isGreaterThan(context - 1);
        JsonNode error = error(post(served, "/v1/completions", "{\"prompt\":\"" + prompt + "\"}"), 400);
        assertThat(error.get("code").asText()).isEqualTo("context_length_exceeded");
        assertThat(error.get("param").asText()).isEqualTo("prompt");
        JsonNode chat = error(post(served, "/v1/chat/completions",
                "{\"messages\":[{\"role\":\"user\",\"content\":\"" + prompt + "\"}]}"), 400);
        assertThat(chat.get("code").asText()).isEqualTo("context_length_exceeded");
        assertThat(chat.get("param").asText()).isEqualTo("messages");
        assertThat(served.engine.stats().active() + served.engine.stats().queued()).isZero();
    }
}
