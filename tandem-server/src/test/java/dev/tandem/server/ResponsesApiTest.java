package dev.tandem.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.StreamResponse;
import com.openai.models.responses.Response;
import com.openai.models.responses.ResponseCreateParams;
import com.openai.models.responses.ResponseStreamEvent;
import dev.tandem.llm.Completion;
import dev.tandem.llm.GenerateOptions;
import dev.tandem.llm.chat.ChatMessage;
import dev.tandem.llm.sampling.SamplerConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@code POST /v1/responses}: the official Java client, the event stream on the wire, and every refusal. */
@Timeout(60)
class ResponsesApiTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final List<String> H = List.of("Host: 127.0.0.1", "Content-Type: application/json",
            "Accept: application/json");
    private static Served served;
    private static OpenAIClient client;

    @BeforeAll
    static void start() {
        served = Served.start(ServerConfig.builder().maxTokens(64), b -> b);
        client = OpenAIOkHttpClient.builder().baseUrl(served.baseUrl()).apiKey("unused").maxRetries(0)
                .timeout(Duration.ofSeconds(60)).build();
    }

    @AfterAll
    static void stop() {
        client.close();
        served.close();
    }

    /** What the model itself generates greedily for the conversation. */
    private static Completion direct(List<ChatMessage> messages, int maxTokens) {
        Completion c = served.engine.submit(served.model.encodeChat(messages),
                GenerateOptions.defaults().withMaxTokens(maxTokens).withSampler(SamplerConfig.GREEDY), null);
        c.await();
        return c;
    }

    private static ResponseCreateParams.Builder params() {
        return ResponseCreateParams.builder().model("gpt-4o-mini").instructions("You tell short stories.")
                .input("Tell me about a cat.").temperature(0.0).maxOutputTokens(24L);
    }

    @Test
    void theJavaClientGetsTheModelsGreedyTextWhole() {
        Completion reference = direct(List.of(ChatMessage.system("You tell short stories."),
                ChatMessage.user("Tell me about a cat.")), 24);
        Response response = client.responses().create(params().build());
        response.validate();
        StringBuilder text = new StringBuilder();
        response.output().forEach(item -> item.message().ifPresent(m -> m.content()
                .forEach(c -> c.outputText().ifPresent(t -> text.append(t.text())))));
        assertThat(text.toString()).isEqualTo(reference.text());
        assertThat(response.id()).startsWith("resp_");
        assertThat(response.usage().orElseThrow().outputTokens()).isEqualTo(reference.tokens().length);
        assertThat(response.usage().orElseThrow().inputTokens()).isEqualTo(reference.promptTokens().length);
        assertThat(response.status().orElseThrow().asString())
                .isEqualTo(reference.tokens().length == 24 ? "incomplete" : "completed");
    }

    @Test
    void theJavaClientStreamsTheSameText() {
        Response whole = client.responses().create(params().build());
        StringBuilder deltas = new StringBuilder();
        List<Response> completed = new ArrayList<>();
        List<String> kinds = new ArrayList<>();
        try (StreamResponse<ResponseStreamEvent> stream = client.responses().createStreaming(params().build())) {
            stream.stream().forEach(event -> {
                event.outputTextDelta().ifPresent(d -> deltas.append(d.delta()));
                event.completed().ifPresent(c -> completed.add(c.response()));
                event.incomplete().ifPresent(c -> completed.add(c.response()));
                kinds.add(event.isCreated() ? "created" : event.isOutputTextDelta() ? "delta" : "other");
            });
        }
        String text = whole.output().getFirst().asMessage().content().getFirst().asOutputText().text();
        assertThat(deltas.toString()).isEqualTo(text);
        assertThat(completed).hasSize(1);
        completed.getFirst().validate();
        assertThat(kinds.getFirst()).isEqualTo("created");
    }

    @Test
    void theEventStreamOnTheWireIsNumberedAndNamed() throws Exception {
        RawHttp.Response response = RawHttp.exchange(served.server.port(), "POST", "/v1/responses", H,
                "{\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"Hi\"}]}],"
                        + "\"max_output_tokens\":6,\"temperature\":0,\"stream\":true,\"metadata\":{\"k\":\"v\"}}");
        assertThat(response.status()).as(response.body()).isEqualTo(200);
        assertThat(response.header("content-type")).startsWith("text/event-stream");
        List<String> types = new ArrayList<>();
        int sequence = 0;
        StringBuilder deltas = new StringBuilder();
        JsonNode last = null;
        for (String event : response.body().substring(0, response.body().length() - 2).split("\n\n")) {
            String[] lines = event.split("\n");
            assertThat(lines).hasSize(2);
            String type = lines[0].substring("event: ".length());
            JsonNode data = JSON.readTree(lines[1].substring("data: ".length()));
            assertThat(data.get("type").asText()).isEqualTo(type);
            assertThat(data.get("sequence_number").asInt()).isEqualTo(sequence++);
            if (type.equals("response.output_text.delta")) {
                deltas.append(data.get("delta").asText());
            }
            types.add(type);
            last = data;
        }
        assertThat(types.subList(0, 4)).containsExactly("response.created", "response.in_progress",
                "response.output_item.added", "response.content_part.added");
        assertThat(types.subList(types.size() - 4, types.size())).containsExactly("response.output_text.done",
                "response.content_part.done", "response.output_item.done", "response.incomplete");
        assertThat(last.at("/response/status").asText()).isEqualTo("incomplete");
        assertThat(last.at("/response/incomplete_details/reason").asText()).isEqualTo("max_output_tokens");
        assertThat(last.at("/response/output/0/content/0/text").asText()).isEqualTo(deltas.toString());
        assertThat(last.at("/response/usage/output_tokens").asInt()).isEqualTo(6);
        assertThat(last.at("/response/metadata/k").asText()).isEqualTo("v");
    }

    @Test
    void aJsonSchemaFormatComesBackValid() throws Exception {
        RawHttp.Response response = RawHttp.exchange(served.server.port(), "POST", "/v1/responses", H, """
                {"input":"A child.","max_output_tokens":60,"seed":4,"text":{"format":{"type":"json_schema",
                 "name":"child","strict":true,"schema":{"type":"object","properties":{"name":{"type":"string",
                 "enum":["Lily","Tom"]},"age":{"type":"integer"}},"required":["name","age"],
                 "additionalProperties":false}}}}""");
        assertThat(response.status()).as(response.body()).isEqualTo(200);
        JsonNode body = JSON.readTree(response.body());
        assertThat(body.get("status").asText()).isEqualTo("completed");
        JsonNode child = JSON.readTree(body.at("/output/0/content/0/text").asText());
        assertThat(child.get("name").asText()).isIn("Lily", "Tom");
        assertThat(child.get("age").isIntegralNumber()).isTrue();
        assertThat(body.at("/text/format/type").asText()).isEqualTo("json_schema");
    }

    @Test
    void refusesWhatItDoesNotServeNamingTheParameter() throws Exception {
        record Bad(String body, String param) {}
        for (Bad b : List.of(
                new Bad("{\"input\":\"x\",\"previous_response_id\":\"resp_1\"}", "previous_response_id"),
                new Bad("{\"input\":\"x\",\"tools\":[{\"type\":\"web_search\"}]}", "tools"),
                new Bad("{\"input\":\"x\",\"text\":{\"format\":{\"type\":\"xml\"}}}", "text.format"),
                new Bad("{\"input\":\"x\",\"text\":{\"format\":{\"type\":\"json_schema\",\"name\":\"s\","
                        + "\"schema\":{\"type\":\"object\",\"allOf\":[]}}}}", "text.format.schema"),
                new Bad("{\"input\":\"x\",\"truncation\":\"auto\"}", "truncation"),
                new Bad("{\"input\":\"x\",\"reasoning\":{\"effort\":\"high\"}}", "reasoning"),
                new Bad("{\"input\":\"x\",\"background\":true}", "background"),
                new Bad("{\"input\":\"x\",\"frobnicate\":1}", "frobnicate"),
                new Bad("{\"input\":[{\"type\":\"function_call_output\",\"call_id\":\"c\",\"output\":\"o\"}]}",
                        "input[0].type"),
                new Bad("{\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_image\"}]}]}",
                        "input[0].content[0]"),
                new Bad("{\"input\":[{\"role\":\"wizard\",\"content\":\"x\"}]}", "input[0].role"),
                new Bad("{\"max_output_tokens\":4}", "input"),
                new Bad("{\"input\":\"x\",\"max_output_tokens\":0}", "max_output_tokens"),
                new Bad("{\"input\":\"x\",\"temperature\":3}", "temperature"),
                new Bad("{\"input\":\"" + " a".repeat(served.model.config().contextLength() + 8) + "\"}", "input"))) {
            RawHttp.Response response = RawHttp.exchange(served.server.port(), "POST", "/v1/responses", H, b.body());
            assertThat(response.status()).as(b.body()).isEqualTo(400);
            assertThat(JSON.readTree(response.body()).at("/error/param").asText()).as(b.body()).isEqualTo(b.param());
        }
        RawHttp.Response stored = RawHttp.exchange(served.server.port(), "POST", "/v1/responses", H,
                "{\"input\":\"x\",\"store\":true,\"max_output_tokens\":2}");
        assertThat(stored.status()).isEqualTo(200);
        assertThat(JSON.readTree(stored.body()).get("store").asBoolean()).isFalse();
        assertThat(served.engine.stats().active() + served.engine.stats().queued()).isZero();
    }
}
