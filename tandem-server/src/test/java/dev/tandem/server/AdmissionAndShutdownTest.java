package dev.tandem.server;

import static dev.tandem.server.WireTest.error;
import static dev.tandem.server.WireTest.events;
import static dev.tandem.server.WireTest.get;
import static dev.tandem.server.WireTest.post;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.Status;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import dev.tandem.Outcome;
import java.util.concurrent.TimeUnit;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Admission (429 with Retry-After), the API key (401), and the graceful shutdown (503, drain, cancel). */
@Timeout(60)
class AdmissionAndShutdownTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    private static final String CHAT = """
            {"messages":[{"role":"user","content":"Tell me a story"}],"max_tokens":16,"temperature":0,"stream":true}""";
    /**
     * A stream held by the gate keeps its slot only while its program waits for its reader: it must
     * want more tokens than the stream buffer (64) holds, so it never ends on its own while held.
     */
    private static final String LONG_CHAT = """
            {"messages":[{"role":"user","content":"Tell me a story"}],"max_tokens":100,"ignore_eos":true,
             "temperature":0,"stream":true}""";

    /** Opens a streaming chat and returns its body once the first event (the role chunk) has arrived. */
    private static BufferedReader openStream(Served served) throws Exception {
        HttpRequest request = HttpRequest.newBuilder(served.uri("/v1/chat/completions"))
                .POST(HttpRequest.BodyPublishers.ofString(LONG_CHAT)).build();
        HttpResponse<InputStream> response = HTTP.send(request, HttpResponse.BodyHandlers.ofInputStream());
        assertThat(response.statusCode()).isEqualTo(200);
        BufferedReader reader = new BufferedReader(new InputStreamReader(response.body(), StandardCharsets.UTF_8));
        assertThat(reader.readLine()).startsWith("data: {").contains("\"role\":\"assistant\"");
        assertThat(reader.readLine()).isEmpty();
        return reader;
    }

    private static String rest(BufferedReader reader) {
        return reader.lines().collect(Collectors.joining("\n", "", "\n"));
    }

    @Test
    void aFullQueueIs429WithRetryAfterAndNothingIsLost() throws Exception {
        GatedStreams gate = new GatedStreams();
        try (Served served = Served.start(ServerConfig.builder().retryAfter(Duration.ofSeconds(2)),
                b -> b.maxActive(1).maxQueued(0), gate)) {
            BufferedReader held = openStream(served); // holds the only slot until the gate opens
            for (String path : new String[] {"/v1/chat/completions", "/v1/completions"}) {
                HttpResponse<String> rejected = post(served, path, path.contains("chat") ? CHAT
                        : "{\"prompt\":\"Once\",\"max_tokens\":4}");
                JsonNode e = error(rejected, 429);
                assertThat(e.get("code").asText()).isEqualTo("queue_full");
                assertThat(rejected.headers().firstValue("retry-after")).hasValue("2");
            }
            assertThat(gate.streams).hasSize(1); // nothing was submitted for the rejected ones
            gate.open();
            String body = rest(held);
            assertThat(events(body).getLast()).isEqualTo("[DONE]");
            // The slot is free again once the held request has drained.
            assertThat(Served.eventually(Duration.ofSeconds(10), () -> served.engine.stats().active() == 0)).isTrue();
            assertThat(post(served, "/v1/completions", "{\"prompt\":\"Once\",\"max_tokens\":4}").statusCode())
                    .isEqualTo(200);
            String metrics = get(served, "/metrics").body();
            for (String operation : new String[] {"chat", "text_completion"}) {
                assertThat(metrics).containsPattern("tandem_server_requests_total\\{gen_ai_operation_name=\""
                        + operation + "\"[^}]*outcome=\"rejected\"} 1.0");
            }
        }
    }

    @Test
    void aClientGoneWhileItsRequestIsQueuedIsFoundByTheKeepAliveAndCancelled() throws Exception {
        GatedStreams gate = new GatedStreams();
        try (Served served = Served.start(ServerConfig.builder().keepAlive(Duration.ofMillis(100)),
                b -> b.maxActive(1).maxQueued(4), gate)) {
            BufferedReader held = openStream(served); // holds the only slot
            String body = "{\"prompt\":\"Once\",\"max_tokens\":8,\"stream\":true}";
            try (Socket socket = new Socket("127.0.0.1", served.server.port())) {
                OutputStream out = socket.getOutputStream();
                out.write(("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                        + "Content-Length: " + body.length() + "\r\n\r\n" + body).getBytes(StandardCharsets.US_ASCII));
                out.flush();
                BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(),
                        StandardCharsets.UTF_8));
                assertThat(in.readLine()).isEqualTo("HTTP/1.1 200 OK");
                String line;
                while ((line = in.readLine()) != null && !line.startsWith(":")) {
                    assertThat(line).doesNotStartWith("data:"); // queued: nothing generated
                }
                assertThat(line).isEqualTo(": keep-alive");
                assertThat(served.engine.stats().queued()).isEqualTo(1);
            }
            Outcome outcome = gate.streams.get(1).completion().get(10, TimeUnit.SECONDS);
            assertThat(outcome.status()).isEqualTo(Status.CANCELLED);
            assertThat(outcome.tokens()).isZero();
            assertThat(served.engine.stats().queued()).isZero();
            assertThat(gate.streams.getFirst().isDone()).as("the held request goes on").isFalse();
            gate.open();
            assertThat(events(rest(held)).getLast()).isEqualTo("[DONE]");
        }
    }

    @Test
    void anApiKeyIsRequiredOnV1CallsOnly() throws Exception {
        try (Served served = Served.start(ServerConfig.builder().apiKey("s3cret"), b -> b)) {
            String body = "{\"prompt\":\"Once\",\"max_tokens\":2}";
            assertThat(error(post(served, "/v1/completions", body), 401).get("code").asText())
                    .isEqualTo("invalid_api_key");
            error(post(served, "/v1/completions", body, "Authorization", "Bearer wrong"), 401);
            error(post(served, "/v1/completions", body, "Authorization", "Bearer s3cret0"), 401);
            error(post(served, "/v1/completions", body, "Authorization", "s3cret"), 401);
            error(post(served, "/v1/chat/completions", CHAT), 401);
            error(get(served, "/v1/models"), 401);
            // A body too large is refused before it is read, and so is one without the key.
            error(post(served, "/v1/completions", "x".repeat(2 << 20)), 401);
            assertThat(served.engine.stats().active() + served.engine.stats().queued()).isZero();

            assertThat(post(served, "/v1/completions", body, "Authorization", "Bearer s3cret").statusCode())
                    .isEqualTo(200);
            assertThat(get(served, "/v1/models", "Authorization", "bearer s3cret").statusCode()).isEqualTo(200);
            assertThat(get(served, "/health").statusCode()).isEqualTo(200);
            assertThat(get(served, "/metrics").statusCode()).isEqualTo(200);
        }
    }

    @Test
    void shutdownRefusesNewRequestsAndDrainsTheStreamsInFlight() throws Exception {
        GatedStreams gate = new GatedStreams();
        Served served = Served.start(ServerConfig.builder().drainTimeout(Duration.ofSeconds(30)), b -> b, gate);
        try {
            BufferedReader held = openStream(served);
            CompletableFuture<Void> closing = CompletableFuture.runAsync(served.server::close);
            assertThat(Served.eventually(Duration.ofSeconds(10), served.server::isDraining)).isTrue();
            HttpResponse<String> health = get(served, "/health");
            assertThat(health.statusCode()).isEqualTo(503);
            assertThat(error(post(served, "/v1/completions", "{\"prompt\":\"Once\"}"), 503).get("code").asText())
                    .isEqualTo("shutting_down");
            assertThat(closing).isNotDone(); // it waits for the held stream
            gate.open();
            String body = rest(held);
            JsonNode last = JSON.readTree(events(body).get(events(body).size() - 2));
            assertThat(last.at("/choices/0/finish_reason").asText()).isIn("stop", "length");
            assertThat(events(body).getLast()).isEqualTo("[DONE]");
            closing.get(10, java.util.concurrent.TimeUnit.SECONDS);
            assertThat(served.server.terminated()).isDone();
        } finally {
            served.close();
        }
    }

    @Test
    void aStreamStillRunningAfterTheDrainIsCancelledWithAnErrorEvent() throws Exception {
        GatedStreams gate = new GatedStreams(); // never opened
        Served served = Served.start(ServerConfig.builder().drainTimeout(Duration.ofMillis(200)), b -> b, gate);
        try {
            long baseline = served.worker.memoryInUse();
            BufferedReader held = openStream(served);
            served.server.close();
            String body = rest(held);
            java.util.List<String> events = events(body);
            assertThat(events.getLast()).isEqualTo("[DONE]");
            JsonNode error = JSON.readTree(events.get(events.size() - 2));
            assertThat(error.at("/error/code").asText()).as(body).isEqualTo("shutting_down");
            assertThat(gate.streams.getFirst().completion().get(10, java.util.concurrent.TimeUnit.SECONDS).status())
                    .isEqualTo(Status.CANCELLED);
            assertThat(Served.eventually(Duration.ofSeconds(10), () -> served.worker.memoryInUse() == baseline))
                    .isTrue();
        } finally {
            served.close();
        }
    }
}
