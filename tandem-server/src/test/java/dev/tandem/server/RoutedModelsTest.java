package dev.tandem.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.CpuDeviceConfig;
import dev.tandem.Worker;
import dev.tandem.llm.Completion;
import dev.tandem.llm.EmbeddedModel;
import dev.tandem.llm.GenerateOptions;
import dev.tandem.llm.LanguageModel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A server over an engine that routes among several models ({@link Engine#models()}, as a
 * cluster's gateway does): a request's {@code model} picks the engine, responses report that
 * model, {@code /v1/models} lists what is served now, and a name none serves is a 404.
 */
@Timeout(60)
class RoutedModelsTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final List<String> H = List.of("Host: 127.0.0.1", "Content-Type: application/json");

    /** An engine that counts its admissions; the default one routes to the others by {@link #served}. */
    private static final class Counting implements Engine {
        final Engine inner;
        final AtomicInteger submitted = new AtomicInteger();
        final Map<String, Engine> served;
        final Map<String, java.util.concurrent.CompletableFuture<Engine>> pending = new ConcurrentHashMap<>();

        Counting(Engine inner, Map<String, Engine> served) {
            this.inner = inner;
            this.served = served;
        }

        @Override
        public LanguageModel model() {
            return inner.model();
        }

        @Override
        public Map<String, ? extends Engine> models() {
            return served;
        }

        @Override
        public java.util.concurrent.CompletableFuture<? extends Engine> pendingModel(String name) {
            return pending.get(name);
        }

        @Override
        public Completion submit(int[] prompt, GenerateOptions options, Duration deadline) {
            submitted.incrementAndGet();
            return inner.submit(prompt, options, deadline);
        }

        @Override
        public EngineStats stats() {
            return inner.stats();
        }

        @Override
        public void close() {
            inner.close();
        }

        @Override
        public List<Long> close(Duration drain) {
            return inner.close(drain);
        }
    }

    @Test
    void aRequestsModelPicksItsEngineAndAnUnknownOneIsA404() throws Exception {
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(2));
                SessionEngine engine = SessionEngine.builder(worker, LanguageModel.load(worker, EmbeddedModel.path()))
                        .build()) {
            Map<String, Engine> served = new ConcurrentHashMap<>();
            Counting own = new Counting(engine, served);
            Counting other = new Counting(engine, null);
            served.put(EmbeddedModel.NAME, own);
            served.put("second", other);
            TandemServer server = TandemServer.start(own, ServerConfig.builder().port(0).build());
            try {
                int port = server.port();
                assertThat(ids(port)).containsExactly(EmbeddedModel.NAME, "second");

                JsonNode answer = JSON.readTree(RawHttp.exchange(port, "POST", "/v1/completions", H,
                        "{\"model\":\"second\",\"prompt\":\"Once\",\"max_tokens\":2}").body());
                assertThat(answer.get("model").asText()).isEqualTo("second");
                assertThat(other.submitted.get()).isEqualTo(1);
                JsonNode response = JSON.readTree(RawHttp.exchange(port, "POST", "/v1/responses", H,
                        "{\"model\":\"second\",\"input\":\"x\",\"max_output_tokens\":2}").body());
                assertThat(response.get("model").asText()).isEqualTo("second");
                assertThat(other.submitted.get()).isEqualTo(2);

                for (String body : List.of("{\"prompt\":\"Once\",\"max_tokens\":2}",
                        "{\"model\":\"" + EmbeddedModel.NAME + "\",\"prompt\":\"Once\",\"max_tokens\":2}")) {
                    JsonNode own1 = JSON.readTree(RawHttp.exchange(port, "POST", "/v1/completions", H, body).body());
                    assertThat(own1.get("model").asText()).isEqualTo(EmbeddedModel.NAME);
                }
                assertThat(own.submitted.get()).isEqualTo(2);

                // Tokenizing names its model as a completion does: a served one answers, any other is a 404.
                String tokenized = RawHttp.exchange(port, "POST", "/tokenize", H,
                        "{\"content\":\"Once upon\"}").body();
                assertThat(RawHttp.exchange(port, "POST", "/tokenize", H,
                        "{\"model\":\"second\",\"content\":\"Once upon\"}").body()).isEqualTo(tokenized);
                var notServed = RawHttp.exchange(port, "POST", "/tokenize", H,
                        "{\"model\":\"gpt-4o\",\"content\":\"Once upon\"}");
                assertThat(notServed.status()).isEqualTo(404);
                assertThat(notServed.body()).contains("model_not_found");
                assertThat(RawHttp.exchange(port, "POST", "/detokenize", H,
                        "{\"model\":\"gpt-4o\",\"tokens\":[1]}").status()).isEqualTo(404);
                assertThat(RawHttp.exchange(port, "POST", "/tokenize", H,
                        "{\"model\":7,\"content\":\"x\"}").status()).isEqualTo(400);

                // Not strict, yet a router refuses a name it does not serve, as a strict single model does.
                ServerOptionsTest.assertGpt4oNotFound(port);
                assertThat(RawHttp.exchange(port, "GET", "/v1/models/second", H, null).status()).isEqualTo(200);
                assertThat(RawHttp.exchange(port, "GET", "/v1/models/gpt-4o", H, null).status()).isEqualTo(404);

                // A model being made ready is not a 404: a request waits for it (bounded); one that cannot be
                // made ready is a 503 with Retry-After.
                own.pending.put("third", java.util.concurrent.CompletableFuture.completedFuture(other));
                JsonNode third = JSON.readTree(RawHttp.exchange(port, "POST", "/v1/completions", H,
                        "{\"model\":\"third\",\"prompt\":\"Once\",\"max_tokens\":2}").body());
                assertThat(third.get("model").asText()).isEqualTo("third");
                assertThat(other.submitted.get()).as("served by the engine made ready").isEqualTo(3);
                own.pending.put("third", java.util.concurrent.CompletableFuture.failedFuture(
                        new IllegalStateException("its text cannot be read")));
                var unavailable = RawHttp.exchange(port, "POST", "/v1/completions", H,
                        "{\"model\":\"third\",\"prompt\":\"Once\",\"max_tokens\":2}");
                assertThat(unavailable.status()).isEqualTo(503);
                assertThat(unavailable.header("Retry-After")).isEqualTo("1");
                assertThat(unavailable.body()).contains("model_unavailable").contains("its text cannot be read");
                assertThat(RawHttp.exchange(port, "POST", "/tokenize", H,
                        "{\"model\":\"third\",\"content\":\"Once\"}").status()).isEqualTo(503);
                own.pending.clear();

                // A model no longer served leaves the list and is refused; the own model is listed only while served.
                served.remove("second");
                served.remove(EmbeddedModel.NAME);
                assertThat(ids(port)).isEmpty();
                assertThat(RawHttp.exchange(port, "POST", "/v1/completions", H,
                        "{\"model\":\"second\",\"prompt\":\"Once\",\"max_tokens\":2}").status()).isEqualTo(404);
                assertThat(other.submitted.get()).isEqualTo(3);

                String metrics = RawHttp.exchange(port, "GET", "/metrics", H, null).body();
                assertThat(metrics).contains("gen_ai_request_model=\"second\"");
            } finally {
                server.close();
            }
        }
    }

    private static List<String> ids(int port) throws Exception {
        List<String> ids = new ArrayList<>();
        JSON.readTree(RawHttp.exchange(port, "GET", "/v1/models", H, null).body()).get("data")
                .forEach(m -> ids.add(m.get("id").asText()));
        return ids;
    }
}
