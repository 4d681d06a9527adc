package dev.tandem.server;

import static dev.tandem.server.WireTest.events;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.Outcome;
import dev.tandem.Status;
import dev.tandem.TokenStream;
import dev.tandem.llm.Completion;
import dev.tandem.llm.GenerateOptions;
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

/** Clients that go away mid-stream, and many streaming at once. */
@Timeout(150)
class StreamingLoadTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String PROMPT = "Once upon a time";
    private static GatedStreams streams;
    private static Served served;
    private static long baseline;

    @BeforeAll
    static void start() {
        streams = GatedStreams.passThrough();
        served = Served.start(ServerConfig.builder(), b -> b.maxActive(8).maxQueued(64), streams);
        baseline = served.worker.memoryInUse();
    }

    @AfterAll
    static void stop() {
        served.close();
    }

    /** The greedy completion of the model itself, on the worker, without the server. */
    static Completion direct(Served served, String prompt, int maxTokens) {
        return direct(served, served.model.encode(prompt), maxTokens);
    }

    /** The greedy completion of {@code tokens} by the model itself. */
    static Completion direct(Served served, int[] tokens, int maxTokens) {
        GenerateOptions options = GenerateOptions.defaults().withMaxTokens(maxTokens);
        Completion completion = served.model.start(served.worker.run(served.model.program(),
                served.model.request(tokens, options), served.model.runOptions(options)), tokens, options);
        completion.await();
        return completion;
    }

    @Test
    void aClientThatDisconnectsMidStreamCancelsItsRequestAndItsMemoryComesBack() throws Exception {
        int before = streams.streams.size();
        String body = """
                {"prompt":"Once upon a time","max_tokens":1500,"ignore_eos":true,"temperature":0,"stream":true}""";
        long closedAt = Served.streamThenDisconnect(served.server.port(), body, () -> {});
        assertThat(streams.streams).hasSize(before + 1);
        TokenStream stream = streams.streams.getLast();
        Outcome outcome = stream.completion().get(10, TimeUnit.SECONDS);
        long cancelMillis = (System.nanoTime() - closedAt) / 1_000_000;
        assertThat(outcome.status()).isEqualTo(Status.CANCELLED);
        assertThat(outcome.tokens()).as("tokens before the cancel").isLessThan(1500);
        assertThat(cancelMillis).as("ms from the disconnect to the request's end").isLessThan(5_000);
        assertThat(Served.eventually(Duration.ofSeconds(10), () -> served.worker.memoryInUse() == baseline))
                .as("memory back to its idle level").isTrue();
        assertThat(Served.eventually(Duration.ofSeconds(10), () -> served.engine.stats().active() == 0)).isTrue();
    }

    @Test
    void thirtyTwoConcurrentStreamsEachGetEveryTokenOnceInOrder() throws Exception {
        int clients = 32;
        int maxTokens = 24;
        Completion reference = direct(served, PROMPT, maxTokens);
        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        String body = "{\"prompt\":\"" + PROMPT + "\",\"max_tokens\":" + maxTokens
                + ",\"temperature\":0,\"stream\":true,\"stream_options\":{\"include_usage\":true}}";
        List<CompletableFuture<HttpResponse<String>>> responses = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            responses.add(http.sendAsync(HttpRequest.newBuilder(served.uri("/v1/completions"))
                    .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString()));
        }
        for (CompletableFuture<HttpResponse<String>> future : responses) {
            HttpResponse<String> response = future.get(120, TimeUnit.SECONDS);
            assertThat(response.statusCode()).isEqualTo(200);
            List<String> data = events(response.body());
            assertThat(data.getLast()).isEqualTo("[DONE]");
            StringBuilder text = new StringBuilder();
            for (String d : data.subList(0, data.size() - 3)) {
                text.append(JSON.readTree(d).at("/choices/0/text").asText());
            }
            JsonNode finish = JSON.readTree(data.get(data.size() - 3));
            JsonNode usage = JSON.readTree(data.get(data.size() - 2));
            assertThat(text.toString()).isEqualTo(reference.text());
            assertThat(finish.at("/choices/0/finish_reason").asText()).isEqualTo(reference.finishReason().wire());
            assertThat(usage.at("/usage/completion_tokens").asInt()).isEqualTo(reference.tokens().length);
        }
        assertThat(Served.eventually(Duration.ofSeconds(10), () -> served.worker.memoryInUse() == baseline))
                .as("memory back to its idle level").isTrue();
        assertThat(served.engine.stats().active() + served.engine.stats().queued()).isZero();
    }
}
