package dev.tandem.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.SpecVersion;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.JsonValue;
import com.openai.models.ResponseFormatJsonSchema;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What applications ask of the embedded model beyond prose: JSON that validates against a schema
 * (through the official client's structured outputs), any JSON object, a forced tool call that
 * parses with valid arguments, and log-probabilities in OpenAI's shapes.
 */
@Timeout(120)
class StructuredOutputTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final JsonSchemaFactory VALIDATORS = JsonSchemaFactory.getInstance(SpecVersion.VersionFlag.V202012);
    private static final List<String> H = List.of("Host: 127.0.0.1", "Content-Type: application/json");
    private static final String SCHEMA = """
            {"type":"object","properties":{"name":{"type":"string","enum":["Lily","Tom","Ben"]},
             "age":{"type":"integer"},"friends":{"type":"array","items":{"type":"string"},"maxItems":2},
             "happy":{"type":"boolean"}},"required":["name","age","friends","happy"],"additionalProperties":false}""";
    private static Served served;
    private static OpenAIClient client;

    @BeforeAll
    static void start() {
        served = Served.start(ServerConfig.builder().maxTokens(200), b -> b);
        client = OpenAIOkHttpClient.builder().baseUrl(served.baseUrl()).apiKey("unused").maxRetries(0)
                .timeout(Duration.ofSeconds(90)).build();
    }

    @AfterAll
    static void stop() {
        client.close();
        served.close();
    }

    @Test
    void theJavaClientsStructuredOutputValidatesAgainstItsSchema() throws Exception {
        JsonNode schema = JSON.readTree(SCHEMA);
        for (long seed = 1; seed <= 3; seed++) {
            ChatCompletion answer = client.chat().completions().create(ChatCompletionCreateParams.builder()
                    .model("gpt-4o-mini").addUserMessage("Tell me about a child.").maxCompletionTokens(150L)
                    .seed(seed).temperature(1.0)
                    .responseFormat(ResponseFormatJsonSchema.builder().jsonSchema(ResponseFormatJsonSchema.JsonSchema
                            .builder().name("child").strict(true).schema(ResponseFormatJsonSchema.JsonSchema.Schema
                                    .builder().putAllAdditionalProperties(JSON.convertValue(schema,
                                            new com.fasterxml.jackson.core.type.TypeReference<Map<String, JsonValue>>() {}))
                                    .build()).build()).build())
                    .build());
            String content = answer.choices().getFirst().message().content().orElseThrow();
            assertThat(answer.choices().getFirst().finishReason().asString()).isEqualTo("stop");
            assertThat(VALIDATORS.getSchema(schema).validate(JSON.readTree(content))).as(content).isEmpty();
        }
    }

    /** What the official client's class-based structured output asks for: its schema is made from the class. */
    public static class Kid {
        public String name;
        public long age;
        public boolean brave;
    }

    @Test
    void theJavaClientsClassBasedStructuredOutputParsesIntoTheClass() {
        var answer = client.chat().completions().create(ChatCompletionCreateParams.builder().model("gpt-4o-mini")
                .addUserMessage("Tell me about a kid.").maxCompletionTokens(150L).seed(2L).temperature(1.0)
                .responseFormat(Kid.class).build());
        Kid kid = answer.choices().getFirst().message().content().orElseThrow();
        assertThat(kid.name).isNotNull();
    }

    @Test
    void jsonObjectRepliesParseAndUnservableSchemasAreRefusedByName() throws Exception {
        RawHttp.Response object = RawHttp.exchange(served.server.port(), "POST", "/v1/chat/completions", H, """
                {"messages":[{"role":"user","content":"A cat."}],"response_format":{"type":"json_object"},
                 "max_tokens":120,"seed":5}""");
        assertThat(object.status()).as(object.body()).isEqualTo(200);
        JsonNode reply = JSON.readTree(object.body());
        String json = reply.at("/choices/0/message/content").asText();
        assertThat(json.strip()).startsWith("{"); // an object, whole or cut by the token limit
        if (reply.at("/choices/0/finish_reason").asText().equals("stop")) {
            assertThat(JSON.readTree(json).isObject()).isTrue();
        }
        // llama-server's extension: a schema on json_object is held to as json_schema's is.
        RawHttp.Response constant = RawHttp.exchange(served.server.port(), "POST", "/v1/chat/completions", H, """
                {"messages":[{"role":"user","content":"x"}],"max_tokens":8,
                 "response_format":{"type":"json_object","schema":{"const":"42"}}}""");
        assertThat(JSON.readTree(constant.body()).at("/choices/0/message/content").asText().strip())
                .isEqualTo("\"42\"");
        assertThat(RawHttp.exchange(served.server.port(), "POST", "/v1/chat/completions", H, """
                {"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object","schema":123}}""")
                .status()).isEqualTo(400);
        RawHttp.Response refused = RawHttp.exchange(served.server.port(), "POST", "/v1/chat/completions", H, """
                {"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema",
                 "json_schema":{"name":"s","schema":{"type":"object","properties":{"a":{"type":"string"}},
                 "oneOf":[{"required":["a"]}]}}}}""");
        assertThat(refused.status()).isEqualTo(400);
        JsonNode error = JSON.readTree(refused.body()).get("error");
        assertThat(error.get("param").asText()).isEqualTo("response_format.json_schema.schema");
        assertThat(error.get("message").asText()).contains("oneOf");
    }

    @Test
    void toolChoiceRequiredForcesACallWithValidArgumentsFromTheEmbeddedModel() throws Exception {
        String body = """
                {"messages":[{"role":"user","content":"What is the weather in Paris?"}],"tool_choice":"%s",
                 "tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
                   "properties":{"city":{"type":"string","enum":["Paris","Rome"]},"days":{"type":"integer"}},
                   "required":["city","days"],"additionalProperties":false}}},
                  {"type":"function","function":{"name":"get_time","parameters":{"type":"object",
                   "properties":{"zone":{"type":"string","enum":["UTC","CET"]}},"required":["zone"],
                   "additionalProperties":false}}}],"max_tokens":80,"seed":3%s}""";
        for (boolean stream : new boolean[] {false, true}) {
            RawHttp.Response response = RawHttp.exchange(served.server.port(), "POST", "/v1/chat/completions", H,
                    body.formatted("required", stream ? ",\"stream\":true" : ""));
            assertThat(response.status()).as(response.body()).isEqualTo(200);
            String name;
            String arguments;
            if (stream) {
                StringBuilder args = new StringBuilder();
                String found = null;
                String finish = null;
                for (String data : WireTest.events(response.body())) {
                    if (data.equals("[DONE]")) {
                        continue;
                    }
                    JsonNode chunk = JSON.readTree(data);
                    JsonNode call = chunk.at("/choices/0/delta/tool_calls/0");
                    if (!call.isMissingNode()) {
                        if (call.at("/function/name").isTextual()) {
                            found = call.at("/function/name").asText();
                        }
                        args.append(call.at("/function/arguments").asText());
                    }
                    if (chunk.at("/choices/0/finish_reason").isTextual()) {
                        finish = chunk.at("/choices/0/finish_reason").asText();
                    }
                }
                assertThat(finish).isEqualTo("tool_calls");
                name = found;
                arguments = args.toString();
            } else {
                JsonNode message = JSON.readTree(response.body()).at("/choices/0/message");
                assertThat(JSON.readTree(response.body()).at("/choices/0/finish_reason").asText())
                        .isEqualTo("tool_calls");
                name = message.at("/tool_calls/0/function/name").asText();
                arguments = message.at("/tool_calls/0/function/arguments").asText();
            }
            JsonNode args = JSON.readTree(arguments);
            if (name.equals("get_weather")) {
                assertThat(args.get("city").asText()).isIn("Paris", "Rome");
                assertThat(args.get("days").isIntegralNumber()).isTrue();
            } else {
                assertThat(name).isEqualTo("get_time");
                assertThat(args.get("zone").asText()).isIn("UTC", "CET");
            }
        }
        RawHttp.Response named = RawHttp.exchange(served.server.port(), "POST", "/v1/chat/completions", H,
                body.formatted("X", "").replace("\"tool_choice\":\"X\"",
                        "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"get_time\"}}"));
        JsonNode call = JSON.readTree(named.body()).at("/choices/0/message/tool_calls/0/function");
        assertThat(call.get("name").asText()).as(named.body()).isEqualTo("get_time");
        assertThat(JSON.readTree(call.get("arguments").asText()).get("zone").asText()).isIn("UTC", "CET");
    }

    @Test
    void nChoicesShareThePromptAndEachIsWholeStreamedOrNot() throws Exception {
        String body = "{\"prompt\":\"Once upon a time\",\"max_tokens\":6,\"n\":3,\"seed\":9%s}";
        JsonNode whole = JSON.readTree(RawHttp.exchange(served.server.port(), "POST", "/v1/completions", H,
                body.formatted("")).body());
        assertThat(whole.get("choices")).hasSize(3);
        assertThat(whole.get("choices").findValuesAsText("index")).containsExactly("0", "1", "2");
        for (JsonNode c : whole.get("choices")) {
            assertThat(c.get("text").asText()).isNotEmpty();
        }
        List<String> texts = whole.get("choices").findValuesAsText("text");
        assertThat(whole.at("/usage/completion_tokens").asInt()).isBetween(3, 18);
        StringBuilder[] streamed = {new StringBuilder(), new StringBuilder(), new StringBuilder()};
        int[] finishes = new int[3];
        for (String data : WireTest.events(RawHttp.exchange(served.server.port(), "POST", "/v1/completions", H,
                body.formatted(",\"stream\":true")).body())) {
            if (data.equals("[DONE]")) {
                continue;
            }
            JsonNode choice = JSON.readTree(data).at("/choices/0");
            int index = choice.get("index").asInt();
            streamed[index].append(choice.get("text").asText());
            if (choice.get("finish_reason").isTextual()) {
                finishes[index]++;
            }
        }
        for (int i = 0; i < 3; i++) {
            assertThat(streamed[i].toString()).as("choice " + i).isEqualTo(texts.get(i)); // same seeds, same texts
            assertThat(finishes[i]).isEqualTo(1);
        }
        assertThat(RawHttp.exchange(served.server.port(), "POST", "/v1/completions", H,
                "{\"prompt\":\"x\",\"n\":9}").status()).isEqualTo(400);
    }

    @Test
    void aPromptMayBeTokenIdsOrSeveralPromptsEachWithItsChoices() throws Exception {
        int[] ids = served.model.encode("Once upon a time");
        String asText = RawHttp.exchange(served.server.port(), "POST", "/v1/completions", H,
                "{\"prompt\":\"Once upon a time\",\"max_tokens\":6,\"temperature\":0}").body();
        String asIds = RawHttp.exchange(served.server.port(), "POST", "/v1/completions", H,
                "{\"prompt\":" + java.util.Arrays.toString(ids) + ",\"max_tokens\":6,\"temperature\":0}").body();
        assertThat(JSON.readTree(asIds).at("/choices/0/text").asText())
                .isEqualTo(JSON.readTree(asText).at("/choices/0/text").asText());
        JsonNode two = JSON.readTree(RawHttp.exchange(served.server.port(), "POST", "/v1/completions", H,
                "{\"prompt\":[\"Once upon a time\",\"The cat\"],\"max_tokens\":6,\"temperature\":0,\"n\":2}")
                .body());
        assertThat(two.get("choices")).hasSize(4);
        JsonNode cat = JSON.readTree(RawHttp.exchange(served.server.port(), "POST", "/v1/completions", H,
                "{\"prompt\":\"The cat\",\"max_tokens\":6,\"temperature\":0}").body());
        assertThat(two.at("/choices/0/text").asText()).isEqualTo(JSON.readTree(asText).at("/choices/0/text").asText());
        assertThat(two.at("/choices/2/text").asText()).isEqualTo(cat.at("/choices/0/text").asText());
        assertThat(two.at("/choices/3/index").asInt()).isEqualTo(3);
        assertThat(two.at("/usage/prompt_tokens").asInt())
                .isEqualTo(ids.length + served.model.encode("The cat").length);
        assertThat(RawHttp.exchange(served.server.port(), "POST", "/v1/completions", H,
                "{\"prompt\":[1,999999]}").status()).isEqualTo(400);
        assertThat(RawHttp.exchange(served.server.port(), "POST", "/v1/completions", H,
                "{\"prompt\":[\"a\",\"b\",\"c\"],\"n\":3}").status()).isEqualTo(400);
    }

    @Test
    void logitBiasBansAndForcesTokens() throws Exception {
        String body = "{\"prompt\":\"Once upon a time\",\"max_tokens\":4,\"temperature\":0,\"logprobs\":0%s}";
        JsonNode plain = JSON.readTree(RawHttp.exchange(served.server.port(), "POST", "/v1/completions", H,
                body.formatted("")).body());
        String firstPiece = plain.at("/choices/0/logprobs/tokens/0").asText();
        int first = served.model.tokenizer().id(firstPiece.replace(' ', '\u2581')).orElseThrow();
        JsonNode banned = JSON.readTree(RawHttp.exchange(served.server.port(), "POST", "/v1/completions", H,
                body.formatted(",\"logit_bias\":{\"" + first + "\":-100}")).body());
        assertThat(banned.at("/choices/0/logprobs/tokens/0").asText()).isNotEqualTo(firstPiece);
        int forced = served.model.tokenizer().encode(" dog", false, false)[0];
        String piece = new String(served.model.tokenizer().tokenBytes(forced), java.nio.charset.StandardCharsets.UTF_8);
        JsonNode all = JSON.readTree(RawHttp.exchange(served.server.port(), "POST", "/v1/completions", H,
                body.formatted(",\"logit_bias\":{\"" + forced + "\":100}")).body());
        assertThat(all.at("/choices/0/text").asText()).isEqualTo(piece.repeat(4));
    }

    @Test
    void logprobsComeInOpenAisShapes() throws Exception {
        RawHttp.Response chat = RawHttp.exchange(served.server.port(), "POST", "/v1/chat/completions", H, """
                {"messages":[{"role":"user","content":"A cat."}],"max_tokens":6,"temperature":0,
                 "logprobs":true,"top_logprobs":3}""");
        JsonNode choice = JSON.readTree(chat.body()).at("/choices/0");
        JsonNode content = choice.at("/logprobs/content");
        assertThat(content).hasSize(JSON.readTree(chat.body()).at("/usage/completion_tokens").asInt());
        StringBuilder text = new StringBuilder();
        for (JsonNode token : content) {
            assertThat(token.get("logprob").asDouble()).isLessThanOrEqualTo(0);
            assertThat(token.get("top_logprobs")).hasSize(3);
            // Greedy: the chosen token is the most likely one.
            assertThat(token.get("logprob").asDouble()).isEqualTo(token.at("/top_logprobs/0/logprob").asDouble());
            byte[] bytes = new byte[token.get("bytes").size()];
            for (int i = 0; i < bytes.length; i++) {
                bytes[i] = (byte) token.get("bytes").get(i).asInt();
            }
            text.append(new String(bytes, java.nio.charset.StandardCharsets.UTF_8));
        }
        assertThat(text.toString()).isEqualTo(choice.at("/message/content").asText());

        RawHttp.Response completion = RawHttp.exchange(served.server.port(), "POST", "/v1/completions", H, """
                {"prompt":"Once upon a time","max_tokens":5,"temperature":0,"logprobs":2,"stream":true}""");
        int tokens = 0;
        for (String data : WireTest.events(completion.body())) {
            if (data.equals("[DONE]")) {
                continue;
            }
            JsonNode lp = JSON.readTree(data).at("/choices/0/logprobs");
            if (lp.isObject()) {
                assertThat(lp.get("token_logprobs")).hasSameSizeAs(lp.get("tokens"));
                lp.get("top_logprobs").forEach(top -> assertThat(top.size()).isBetween(1, 2));
                tokens += lp.get("tokens").size();
            }
        }
        assertThat(tokens).isEqualTo(5);
        assertThat(RawHttp.exchange(served.server.port(), "POST", "/v1/completions", H,
                "{\"prompt\":\"x\",\"logprobs\":9}").status()).isEqualTo(400);
    }
}
