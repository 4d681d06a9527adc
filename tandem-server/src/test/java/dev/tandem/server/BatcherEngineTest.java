package dev.tandem.server;

import dev.tandem.llm.sampling.SamplerConfig;
import dev.tandem.llm.chat.ChatMessage;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.StreamResponse;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import dev.tandem.CpuDeviceConfig;
import dev.tandem.Worker;
import dev.tandem.llm.BatcherConfig;
import dev.tandem.llm.BatcherStats;
import dev.tandem.llm.Completion;
import dev.tandem.llm.EmbeddedModel;
import dev.tandem.llm.GenerateOptions;
import dev.tandem.llm.LanguageModel;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The server on the continuous batcher: its requests share steps, and through HTTP each still
 * gets exactly the tokens the model alone yields; a disconnect gives its KV blocks back; an
 * overload answers 429 and loses no stream.
 */
@Timeout(120)
class BatcherEngineTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String[] PROMPTS = {"Once upon a time", "Lily and Ben went to the park.", "The cat",
        "Tom had a dog.", "There was a big tree in the garden.", "Mia wanted to fly like a bird.",
        "The sun was shining and", "Sam had a red ball."};
    private static Worker worker;
    private static LanguageModel model;
    private static BatcherEngine engine;
    private static TandemServer server;
    private static long baseline;

    @BeforeAll
    static void start() {
        worker = Worker.create(CpuDeviceConfig.withCores(2));
        model = LanguageModel.load(worker, EmbeddedModel.path());
        long weights = worker.memoryInUse();
        engine = BatcherEngine.start(worker, model, BatcherConfig.builder().maxBatch(8).maxQueued(64).build());
        server = TandemServer.start(engine, ServerConfig.builder().port(0).build());
        // The batch program allocates its pool and step buffers when it starts: idle is after one request.
        engine.submit(model.encode("Hi"), GenerateOptions.defaults().withMaxTokens(2), null).await();
        assertThat(Served.eventually(Duration.ofSeconds(10), () -> engine.batcher().stats().active() == 0)).isTrue();
        baseline = worker.memoryInUse();
        assertThat(baseline - weights).isEqualTo(engine.batcher().deviceBytes());
    }

    @AfterAll
    static void stop() {
        server.close();
        engine.close();
        worker.close();
    }

    private static URI uri(String path) {
        return URI.create("http://127.0.0.1:" + server.port() + path);
    }

    /** The model alone, without server or batcher. */
    private static Completion alone(String prompt, int maxTokens) {
        int[] tokens = model.encode(prompt);
        GenerateOptions options = GenerateOptions.defaults().withMaxTokens(maxTokens);
        Completion c = model.start(worker.run(model.program(), model.request(tokens, options),
                model.runOptions(options)), tokens, options);
        c.await();
        return c;
    }

    private static void assertIdle() {
        assertThat(Served.eventually(Duration.ofSeconds(10), () -> {
            BatcherStats s = engine.batcher().stats();
            return s.active() == 0 && s.queued() == 0 && s.kvBlocksInUse() == 0 && s.kvBlocksReserved() == 0;
        })).as("every member gone, every block back").isTrue();
        assertThat(worker.memoryInUse()).isEqualTo(baseline);
    }

    @Test
    void aSharedSystemPromptIsTakenFromThePrefixCacheAndReportedAsCachedTokens() throws Exception {
        int block = model.model().options().kvBlockSize();
        StringBuilder system = new StringBuilder();
        while (model.encode(system.toString()).length < block + 16) {
            system.append("You are a kind storyteller who tells short stories about animals to small children. ");
        }
        HttpClient http = HttpClient.newHttpClient();
        int[] cached = new int[2];
        String[] contents = new String[2];
        for (int i = 0; i < 2; i++) {
            String body = JSON.writeValueAsString(JSON.createObjectNode().put("max_tokens", 8).put("temperature", 0)
                    .set("messages", JSON.createArrayNode()
                            .add(JSON.createObjectNode().put("role", "system").put("content", system.toString()))
                            .add(JSON.createObjectNode().put("role", "user").put("content", PROMPTS[i]))));
            HttpResponse<String> response = http.send(HttpRequest.newBuilder(uri("/v1/chat/completions"))
                    .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
            JsonNode answer = JSON.readTree(response.body());
            cached[i] = answer.at("/usage/prompt_tokens_details/cached_tokens").asInt(-1);
            contents[i] = answer.at("/choices/0/message/content").asText();
        }
        assertThat(cached[1]).isPositive().isEqualTo(cached[1] / block * block);
        int[] prompt = model.encodeChat(List.of(ChatMessage.system(system.toString()), ChatMessage.user(PROMPTS[1])));
        GenerateOptions greedy = GenerateOptions.defaults().withMaxTokens(8).withSampler(SamplerConfig.GREEDY);
        Completion reference = model.start(worker.run(model.program(), model.request(prompt, greedy),
                model.runOptions(greedy)), prompt, greedy);
        assertThat(contents[1]).isEqualTo(reference.await());
        String metrics = http.send(HttpRequest.newBuilder(uri("/metrics")).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        assertThat(metrics).containsPattern("tandem_engine_prefix_cache_hits_tokens_total [1-9]")
                .containsPattern("tandem_engine_kv_blocks_cached [1-9]")
                // where the first tokens' time went: counted for both requests, each phase a total
                .containsPattern("tandem_engine_first_tokens_total [2-9]")
                .containsPattern("tandem_engine_first_token_queue_seconds_total [0-9]")
                .containsPattern("tandem_engine_first_token_schedule_seconds_total [0-9]")
                .containsPattern("tandem_engine_first_token_step_seconds_total [0-9.]*[1-9]");
        assertIdle();
    }

    @Test
    void theOpenAiClientStreamsAChatCompletionFromTheBatch() {
        OpenAIClient client = OpenAIOkHttpClient.builder().baseUrl("http://127.0.0.1:" + server.port() + "/v1")
                .apiKey("unused").maxRetries(0).timeout(Duration.ofSeconds(60)).build();
        try {
            StringBuilder story = new StringBuilder();
            try (StreamResponse<ChatCompletionChunk> stream = client.chat().completions().createStreaming(
                    ChatCompletionCreateParams.builder().model(server.modelName())
                            .addUserMessage("Tell me a story about a dog.").maxCompletionTokens(48).seed(3).build())) {
                stream.stream().forEach(chunk -> chunk.choices().forEach(
                        c -> c.delta().content().ifPresent(story::append)));
            }
            assertThat(story.toString()).matches("(?s).*\\p{L}{3,}.*"); // words of a story
        } finally {
            client.close();
        }
        assertIdle();
    }

    @Test
    void thirtyTwoClientsShareStepsAndEachGetsTheTokensOfTheModelAlone() throws Exception {
        int clients = 32;
        int maxTokens = 40;
        List<String> expected = new ArrayList<>();
        for (String p : PROMPTS) {
            expected.add(alone(p, maxTokens).text());
        }
        long stepsBefore = engine.batcher().stats().steps();
        long rowsBefore = engine.batcher().stats().decodeRows();
        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        List<CompletableFuture<HttpResponse<String>>> responses = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            String body = JSON.createObjectNode().put("prompt", PROMPTS[i % PROMPTS.length]).put("max_tokens", maxTokens)
                    .put("temperature", 0).put("stream", true).toString();
            responses.add(http.sendAsync(HttpRequest.newBuilder(uri("/v1/completions"))
                    .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString()));
        }
        for (int i = 0; i < clients; i++) {
            HttpResponse<String> response = responses.get(i).get(90, TimeUnit.SECONDS);
            assertThat(response.statusCode()).isEqualTo(200);
            List<String> data = WireTest.events(response.body());
            assertThat(data.getLast()).isEqualTo("[DONE]");
            StringBuilder text = new StringBuilder();
            for (String d : data.subList(0, data.size() - 2)) {
                text.append(JSON.readTree(d).at("/choices/0/text").asText());
            }
            assertThat(text.toString()).as("client %d", i).isEqualTo(expected.get(i % PROMPTS.length));
        }
        BatcherStats s = engine.batcher().stats();
        assertThat((double) (s.decodeRows() - rowsBefore) / (s.steps() - stepsBefore))
                .as("decoding rows a step: the clients shared steps").isGreaterThan(2.0);
        assertIdle();
    }

    @Test
    void aClientThatDisconnectsGivesItsBlocksBack() throws Exception {
        String body = """
                {"prompt":"Once upon a time","max_tokens":400,"ignore_eos":true,"temperature":0,"stream":true}""";
        long closedAt = Served.streamThenDisconnect(server.port(), body,
                () -> assertThat(engine.batcher().stats().kvBlocksInUse()).isPositive());
        assertIdle();
        long millis = (System.nanoTime() - closedAt) / 1_000_000;
        org.slf4j.LoggerFactory.getLogger(BatcherEngineTest.class).info("blocks back {} ms after the disconnect", millis);
    }

    @Test
    void anOverloadAnswers429AndLosesNoStream() throws Exception {
        try (Worker small = Worker.create(CpuDeviceConfig.withCores(2))) {
            LanguageModel m = LanguageModel.load(small, EmbeddedModel.path());
            try (BatcherEngine tight = BatcherEngine.start(small, m, BatcherConfig.builder().maxBatch(2).maxQueued(2)
                    .build()); TandemServer s = TandemServer.start(tight, ServerConfig.builder().port(0).build())) {
                HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
                String body = """
                        {"prompt":"Once upon a time","max_tokens":64,"ignore_eos":true,"temperature":0,"stream":true}""";
                List<CompletableFuture<HttpResponse<String>>> responses = new ArrayList<>();
                for (int i = 0; i < 24; i++) {
                    responses.add(http.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s.port()
                            + "/v1/completions")).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                            HttpResponse.BodyHandlers.ofString()));
                }
                int ok = 0;
                int rejected = 0;
                for (CompletableFuture<HttpResponse<String>> f : responses) {
                    HttpResponse<String> r = f.get(90, TimeUnit.SECONDS);
                    if (r.statusCode() == 429) {
                        rejected++;
                        assertThat(r.headers().firstValue("retry-after")).isPresent();
                        JsonNode error = JSON.readTree(r.body()).path("error");
                        assertThat(error.path("message").asText()).isNotEmpty();
                    } else {
                        assertThat(r.statusCode()).isEqualTo(200);
                        List<String> data = WireTest.events(r.body());
                        assertThat(data.getLast()).isEqualTo("[DONE]");
                        assertThat(data.get(data.size() - 2)).contains("\"finish_reason\":\"length\"");
                        ok++;
                    }
                }
                assertThat(ok).isGreaterThanOrEqualTo(2);
                assertThat(rejected).isPositive();
                assertThat(ok + rejected).isEqualTo(24);
                assertThat(Served.eventually(Duration.ofSeconds(10), () -> tight.batcher().stats().kvBlocksInUse() == 0))
                        .isTrue();
            }
        }
    }
}
