package dev.tandem.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.JsonValue;
import com.openai.core.http.StreamResponse;
import com.openai.models.FunctionDefinition;
import com.openai.models.FunctionParameters;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.chat.completions.ChatCompletionFunctionTool;
import dev.tandem.CpuDeviceConfig;
import dev.tandem.TokenFeed;
import dev.tandem.Worker;
import dev.tandem.llm.Completion;
import dev.tandem.llm.EmbeddedModel;
import dev.tandem.llm.GenerateOptions;
import dev.tandem.llm.LanguageModel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Tool calls on the wire. The embedded model never writes a call of its own, so the replies
 * here are scripted: an engine whose completions carry given tokens (the tokenizer's encoding
 * of a reply) through a real token feed, the model's own detokenizer and the server as it is.
 * The tools and the history still go through the real chat path; the official Java client
 * reads the calls back, whole and streamed.
 */
@Timeout(60)
class ToolCallsTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static Worker worker;
    private static LanguageModel model;
    private static TandemServer server;
    private static OpenAIClient client;
    /** The reply the next request gets. */
    private static volatile String reply = "";

    /** An engine that answers every request with {@link #reply}'s tokens. */
    static final class ScriptedEngine implements Engine {
        @Override
        public LanguageModel model() {
            return model;
        }

        @Override
        public Completion submit(int[] prompt, GenerateOptions options, Duration deadline) {
            if (options.logprobs() >= 0) {
                throw new UnsupportedOperationException("a scripted reply has no log-probabilities");
            }
            TokenFeed feed = TokenFeed.builder(worker).name("scripted").build();
            feed.started();
            for (int token : model.tokenizer().encode(reply, false, false)) {
                feed.offerInt(token);
            }
            feed.complete();
            feed.release(); // the producer holds nothing more: the stream's outcome completes
            return model.start(feed.stream(), prompt, options);
        }

        @Override
        public EngineStats stats() {
            return new EngineStats(0, 0, 1, 0, 0, 0, 0, 0, 0);
        }

        @Override
        public void close() {}

        @Override
        public List<Long> close(Duration drain) {
            return List.of();
        }
    }

    @BeforeAll
    static void start() {
        worker = Worker.create(CpuDeviceConfig.withCores(1));
        model = LanguageModel.load(worker, EmbeddedModel.path());
        server = TandemServer.start(new ScriptedEngine(), ServerConfig.builder().port(0).build());
        client = OpenAIOkHttpClient.builder().baseUrl("http://127.0.0.1:" + server.port() + "/v1").apiKey("unused")
                .maxRetries(0).timeout(Duration.ofSeconds(30)).build();
    }

    @AfterAll
    static void stop() {
        client.close();
        server.close();
        worker.close();
    }

    /** The text a reply's tokens spell, piece after piece, as a completion streams it. */
    private static String spelled(String text) {
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        for (int token : model.tokenizer().encode(text, false, false)) {
            bytes.writeBytes(model.tokenizer().tokenBytes(token));
        }
        return bytes.toString(java.nio.charset.StandardCharsets.UTF_8);
    }

    private static ChatCompletionCreateParams.Builder weather() {
        return ChatCompletionCreateParams.builder().model("gpt-4o-mini").addUserMessage("Weather in Paris?")
                .addTool(ChatCompletionFunctionTool.builder().function(FunctionDefinition.builder().name("get_weather")
                        .parameters(FunctionParameters.builder().putAdditionalProperty("type", JsonValue.from("object"))
                                .putAdditionalProperty("properties", JsonValue.from(Map.of("city",
                                        Map.of("type", "string")))).build()).build()).build());
    }

    @Test
    void aReplyThatIsACallComesBackAsToolCallsWhole() {
        reply = "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}";
        ChatCompletion answer = client.chat().completions().create(weather().build());
        ChatCompletion.Choice choice = answer.choices().getFirst();
        assertThat(choice.finishReason().asString()).isEqualTo("tool_calls");
        assertThat(choice.message().content()).isEmpty();
        var call = choice.message().toolCalls().orElseThrow().getFirst().asFunction();
        assertThat(call.id()).startsWith("call_");
        assertThat(call.function().name()).isEqualTo("get_weather");
        assertThat(call.function().arguments()).isEqualTo("{\"city\":\"Paris\"}");
    }

    @Test
    void aCallStreamsAsOpenAiStreamsIt() {
        reply = "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}";
        StringBuilder content = new StringBuilder();
        StringBuilder arguments = new StringBuilder();
        List<String> names = new ArrayList<>();
        List<String> finishes = new ArrayList<>();
        try (StreamResponse<ChatCompletionChunk> stream = client.chat().completions().createStreaming(
                weather().build())) {
            stream.stream().forEach(chunk -> chunk.choices().forEach(c -> {
                c.delta().content().ifPresent(content::append);
                c.delta().toolCalls().ifPresent(calls -> calls.forEach(t -> {
                    assertThat(t.index()).isZero();
                    t.function().flatMap(f -> f.name()).ifPresent(names::add);
                    t.function().flatMap(f -> f.arguments()).ifPresent(arguments::append);
                }));
                c.finishReason().ifPresent(f -> finishes.add(f.asString()));
            }));
        }
        assertThat(content.toString()).isEmpty();
        assertThat(names).containsExactly("get_weather");
        assertThat(arguments.toString()).isEqualTo("{\"city\":\"Paris\"}");
        assertThat(finishes).containsExactly("tool_calls");
    }

    @Test
    void proseThatOnlyLooksLikeACallAtFirstIsSentAsContent() throws Exception {
        reply = "{not a call} but a story";
        ChatCompletion whole = client.chat().completions().create(weather().build());
        // The SentencePiece vocabulary writes a space before the first word: compare the text the model spelled.
        assertThat(whole.choices().getFirst().message().content()).hasValue(spelled(reply));
        assertThat(whole.choices().getFirst().message().toolCalls()).isEmpty();
        StringBuilder streamed = new StringBuilder();
        try (StreamResponse<ChatCompletionChunk> stream = client.chat().completions().createStreaming(
                weather().build())) {
            stream.stream().forEach(chunk -> chunk.choices().forEach(c -> c.delta().content().ifPresent(
                    streamed::append)));
        }
        assertThat(streamed.toString()).isEqualTo(spelled(reply));
    }

    @Test
    void withoutToolsAReplyShapedLikeACallIsText() {
        reply = "{\"name\": \"get_weather\", \"arguments\": {}}";
        ChatCompletion answer = client.chat().completions().create(ChatCompletionCreateParams.builder()
                .model("m").addUserMessage("x").build());
        assertThat(answer.choices().getFirst().message().content()).hasValue(spelled(reply));
        assertThat(answer.choices().getFirst().finishReason().asString()).isNotEqualTo("tool_calls");
        ChatCompletion none = client.chat().completions().create(weather().toolChoice(
                com.openai.models.chat.completions.ChatCompletionToolChoiceOption.Auto.NONE).build());
        assertThat(none.choices().getFirst().message().toolCalls()).isEmpty();
    }

    @Test
    void optionsAnEngineCannotServeAreA400NamingThem() throws Exception {
        RawHttp.Response response = RawHttp.exchange(server.port(), "POST", "/v1/chat/completions",
                List.of("Host: 127.0.0.1", "Content-Type: application/json"),
                "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"logprobs\":true}");
        assertThat(response.status()).isEqualTo(400);
        JsonNode error = JSON.readTree(response.body()).get("error");
        assertThat(error.get("code").asText()).isEqualTo("unsupported_parameter");
        assertThat(error.get("message").asText()).contains("log-probabilities");
    }

    @Test
    void onlyTheFirstCallWhenParallelCallsAreOff() throws Exception {
        reply = "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}";
        // The generic syntax holds one call; the Hermes syntax of Qwen-style models holds several.
        ToolCallFilter.End two = ToolCallFilter.whole("<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>"
                + "<tool_call>{\"name\": \"b\", \"arguments\": {}}</tool_call>",
                dev.tandem.llm.chat.ToolSyntax.HERMES, true, false);
        assertThat(two.calls()).extracting(dev.tandem.llm.chat.ToolCall::name).containsExactly("a");
    }

    @Test
    void aHistoryOfCallsAndAnswersIsAcceptedAndBadToolsAreRefusedByName() throws Exception {
        reply = "It is sunny.";
        String history = """
                {"model":"m","messages":[{"role":"user","content":"Weather?"},
                 {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",
                   "function":{"name":"get_weather","arguments":"{\\"city\\":\\"Paris\\"}"}}]},
                 {"role":"tool","tool_call_id":"call_1","content":"{\\"temperature\\":21}"}],
                 "tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}""";
        List<String> h = List.of("Host: 127.0.0.1", "Content-Type: application/json");
        RawHttp.Response ok = RawHttp.exchange(server.port(), "POST", "/v1/chat/completions", h, history);
        assertThat(ok.status()).as(ok.body()).isEqualTo(200);
        assertThat(JSON.readTree(ok.body()).at("/choices/0/message/content").asText()).isEqualTo(spelled(reply));
        record Bad(String body, String param) {}
        String user = "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]";
        for (Bad b : List.of(
                new Bad("{" + user + ",\"tools\":[{\"type\":\"retrieval\"}]}", "tools[0].type"),
                new Bad("{" + user + ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"a b\"}}]}",
                        "tools[0].function.name"),
                new Bad("{" + user + ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}},"
                        + "{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]}", "tools[1].function.name"),
                new Bad("{" + user + ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\","
                        + "\"parameters\":[]}}]}", "tools[0].function.parameters"),
                new Bad("{\"messages\":[{\"role\":\"tool\",\"content\":\"x\"}]}", "messages[0].tool_call_id"),
                new Bad("{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\",\"function\":"
                        + "{\"name\":\"f\",\"arguments\":\"{oops\"}}]}]}", "messages[0].tool_calls[0].function.arguments"),
                new Bad("{" + user + ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],"
                        + "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"g\"}}}", "tool_choice"))) {
            RawHttp.Response response = RawHttp.exchange(server.port(), "POST", "/v1/chat/completions", h, b.body());
            assertThat(response.status()).as(b.body()).isEqualTo(400);
            JsonNode error = JSON.readTree(response.body()).get("error");
            assertThat(error.get("param").asText()).as(b.body()).isEqualTo(b.param());
        }
    }
}
