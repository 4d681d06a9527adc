package dev.tandem.server;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.AdmissionRejectedException;
import dev.tandem.Status;
import dev.tandem.llm.Completion;
import dev.tandem.llm.FinishReason;
import dev.tandem.llm.GenerateOptions;
import dev.tandem.llm.LanguageModel;
import io.helidon.common.media.type.MediaTypes;
import io.helidon.http.HeaderNames;
import io.helidon.http.HttpMediaType;
import io.helidon.http.sse.SseEvent;
import io.helidon.webserver.WebServer;
import io.helidon.webserver.http.HttpRouting;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import io.helidon.webserver.sse.SseSink;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An OpenAI-compatible HTTP server over one {@link Engine}: {@code POST /v1/chat/completions},
 * {@code POST /v1/completions} (both streaming as server-sent events with {@code "stream": true}),
 * {@code GET /v1/models}, {@code GET /health} and {@code GET /metrics} (Prometheus text).
 *
 * <pre>{@code
 * try (Worker worker = Worker.create(CpuDevice.withCores(2));
 *      SessionEngine engine = SessionEngine.builder(worker, LanguageModel.load(worker, EmbeddedModel.path())).build();
 *      TandemServer server = TandemServer.start(engine, ServerConfig.builder().port(0).build())) {
 *     System.out.println("listening on http://127.0.0.1:" + server.port());
 *     server.terminated().join();
 * }
 * }</pre>
 *
 * <p>The server does not own its engine: close the server first, then the engine.
 *
 * <h2>Implementation Overview</h2>
 * Helidon runs each HTTP request on its own virtual thread; that thread parses and checks the
 * body, tokenizes the prompt, submits it to the engine and then iterates the completion, which
 * blocks cheaply (a virtual thread parks; no core thread of the runtime ever waits on HTTP).
 * Everything that can be refused is refused before the engine allocates anything: the key
 * (401), the drain (503), the body size (413, read with a bound, never whole into memory), the
 * JSON and its parameters (400), the model (404), the prompt length (413), then the engine's
 * admission (429 with {@code Retry-After}, 503, 413).
 *
 * <p><b>Streaming.</b> Each delta is one SSE event {@code data: {chunk}} followed by a blank
 * line, flushed at once; the final chunk carries {@code finish_reason}, an optional usage chunk
 * follows, then {@code data: [DONE]}. Helidon's SSE writer puts no space after {@code data:}, so
 * each payload is given with the space in front, producing exactly OpenAI's framing.
 *
 * <p><b>Disconnect.</b> A client that goes away makes the next event's write fail (Helidon
 * throws an {@link UncheckedIOException}); the handler then cancels the completion, which ends
 * the request on the device and returns its memory. While a request produces nothing (queued,
 * or a long prefill) a keep-alive comment is written after {@code keepAlive} of silence, so a
 * client gone then is found out as well (see {@link EventStream}). A non-streaming client that
 * goes away is noticed only when its answer is written; the request's deadline bounds it.
 *
 * <p><b>Shutdown.</b> {@link #close()} sets {@code draining} (new {@code /v1} requests get 503,
 * {@code /health} turns 503), waits up to {@code drainTimeout} for the requests in
 * {@code inFlight} to finish, cancels the rest (their streams end with an error event
 * {@code shutting_down}), waits for their handlers to return, then stops the listener.
 * {@code inFlight} holds a completion from just after {@code submit} until its handler has
 * written its last byte; the drain waits on its monitor, which every removal notifies.
 */
public final class TandemServer implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(TandemServer.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpMediaType EVENT_STREAM = HttpMediaType.create(MediaTypes.TEXT_EVENT_STREAM);
    private static final HttpMediaType APPLICATION_JSON = HttpMediaType.create(MediaTypes.APPLICATION_JSON);
    private static final HttpMediaType PROMETHEUS = HttpMediaType.create("text/plain; version=0.0.4; charset=utf-8");
    private static final byte[] DONE = " [DONE]".getBytes(StandardCharsets.US_ASCII);

    private final Engine engine;
    private final LanguageModel model;
    private final ServerConfig config;
    private final String modelName;
    private final int maxPromptTokens;
    private final byte[] apiKeyDigest;
    private final ServerMetrics metrics;
    private final long createdAt = Instant.now().getEpochSecond();
    private final Set<Completion> inFlight = ConcurrentHashMap.newKeySet();
    private final Set<Completion> cancelledByShutdown = ConcurrentHashMap.newKeySet();
    private final AtomicBoolean draining = new AtomicBoolean();
    private final CompletableFuture<Void> terminated = new CompletableFuture<>();
    private final WebServer server;

    private TandemServer(Engine engine, ServerConfig config) {
        this.engine = Objects.requireNonNull(engine, "engine");
        this.config = Objects.requireNonNull(config, "config");
        this.model = engine.model();
        this.modelName = config.modelName() != null ? config.modelName() : model.name();
        int context = model.config().contextLength();
        this.maxPromptTokens = config.maxPromptTokens() == 0 ? context - 1
                : Math.min(config.maxPromptTokens(), context - 1);
        this.apiKeyDigest = config.apiKey() == null ? null : sha256(config.apiKey());
        this.metrics = new ServerMetrics(engine, modelName);
        this.server = WebServer.builder()
                .host(config.host())
                .port(config.port())
                .shutdownHook(false) // close() drains first; the owner decides when
                .routing(this::routes)
                .build()
                .start();
        log.info("serving {} on http://{}:{}", modelName, config.host(), server.port());
    }

    /**
     * Starts a server over {@code engine}; it accepts requests when this returns.
     *
     * @throws RuntimeException when the address cannot be bound
     */
    public static TandemServer start(Engine engine, ServerConfig config) {
        return new TandemServer(engine, config);
    }

    /** The port it listens on (the real one when the configuration asked for 0); -1 once closed. */
    public int port() {
        return server.port();
    }

    /** The host it is bound to. */
    public String host() {
        return config.host();
    }

    /** The model id clients name in requests. */
    public String modelName() {
        return modelName;
    }

    /** Completes once {@link #close()} has stopped the listener. */
    public CompletableFuture<Void> terminated() {
        return terminated.copy();
    }

    /** Whether it is draining or closed. */
    public boolean isDraining() {
        return draining.get();
    }

    /**
     * Stops accepting generations (503), lets the streams in flight finish within the drain
     * timeout, cancels the rest, then stops listening. Idempotent; a second caller waits for the
     * first to finish. Does not close the engine.
     */
    @Override
    public void close() {
        if (!draining.compareAndSet(false, true)) {
            terminated.join();
            return;
        }
        try {
            if (!awaitDrained(config.drainTimeout())) {
                log.info("{} streams still running after the drain of {}; cancelling them", inFlight.size(),
                        config.drainTimeout());
                for (Completion c : inFlight) {
                    cancelledByShutdown.add(c);
                    c.cancel();
                }
                awaitDrained(Duration.ofSeconds(5));
            }
            server.stop();
        } finally {
            terminated.complete(null);
        }
    }

    private boolean awaitDrained(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (inFlight) {
            while (!inFlight.isEmpty()) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                try {
                    inFlight.wait(Math.max(1, left / 1_000_000));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return inFlight.isEmpty();
                }
            }
            return true;
        }
    }

    private void finished(Completion completion) {
        synchronized (inFlight) {
            inFlight.remove(completion);
            cancelledByShutdown.remove(completion);
            inFlight.notifyAll();
        }
    }

    // ---- routes -------------------------------------------------------------------------------

    private void routes(HttpRouting.Builder routing) {
        routing.get("/health", this::health)
                .get("/metrics", this::metrics)
                .get("/v1/models", this::models)
                .get("/v1/models/{id}", this::model)
                .post("/v1/chat/completions", (req, res) -> generate(req, res, true))
                .post("/v1/completions", (req, res) -> generate(req, res, false));
    }

    private void health(ServerRequest req, ServerResponse res) {
        ObjectNode body = JSON.createObjectNode().put("status", draining.get() ? "draining" : "ok");
        res.status(draining.get() ? 503 : 200);
        sendJson(res, body);
    }

    private void metrics(ServerRequest req, ServerResponse res) {
        res.headers().contentType(PROMETHEUS);
        res.send(metrics.scrape().getBytes(StandardCharsets.UTF_8));
    }

    private void models(ServerRequest req, ServerResponse res) {
        try {
            authorize(req);
            ObjectNode body = JSON.createObjectNode().put("object", "list");
            body.putArray("data").add(modelObject());
            sendJson(res, body);
        } catch (ApiException e) {
            sendError(res, e);
        }
    }

    private void model(ServerRequest req, ServerResponse res) {
        try {
            authorize(req);
            String id = req.path().pathParameters().get("id");
            if (!modelName.equals(id)) {
                throw unknownModel(id);
            }
            sendJson(res, modelObject());
        } catch (ApiException e) {
            sendError(res, e);
        }
    }

    private ObjectNode modelObject() {
        return JSON.createObjectNode().put("id", modelName).put("object", "model").put("created", createdAt)
                .put("owned_by", "tandem");
    }

    private static ApiException unknownModel(String id) {
        return new ApiException(404, "invalid_request_error", "model", "model_not_found",
                "The model '" + id + "' does not exist");
    }

    // ---- generation ---------------------------------------------------------------------------

    private void generate(ServerRequest req, ServerResponse res, boolean chat) {
        long start = System.nanoTime();
        String operation = chat ? "chat" : "text_completion";
        Completion completion;
        GenerationRequest request;
        try {
            authorize(req);
            if (draining.get()) {
                throw shuttingDown();
            }
            JsonNode body = readBody(req);
            request = GenerationRequest.parse(body, chat, config.maxTokens());
            if (request.model() != null && !request.model().equals(modelName)) {
                throw unknownModel(request.model());
            }
            int[] prompt = encode(request);
            if (prompt.length > maxPromptTokens) {
                throw contextExceeded(chat, "the prompt has " + prompt.length + " tokens; at most " + maxPromptTokens
                        + " are accepted (context " + model.config().contextLength() + ")");
            }
            int room = model.config().contextLength() - prompt.length;
            int maxTokens = request.maxTokens() > 0 ? request.maxTokens() : Math.min(config.maxTokens(), room);
            GenerateOptions options = GenerateOptions.defaults().withMaxTokens(maxTokens)
                    .withSampler(request.sampler()).withStop(request.stop()).withIgnoreEos(request.ignoreEos());
            completion = submit(prompt, options, chat);
        } catch (ApiException e) {
            metrics.rejected(operation, switch (e.status()) {
                case 429 -> "rejected";
                case 503 -> "unavailable";
                default -> "invalid";
            });
            sendError(res, e);
            return;
        } catch (RuntimeException e) {
            log.warn("cannot start a generation", e);
            metrics.rejected(operation, "error");
            sendError(res, new ApiException(500, "server_error", null, "internal_error",
                    "The server failed to start the generation"));
            return;
        }
        try {
            if (request.stream()) {
                stream(res, request, completion, operation, start);
            } else {
                whole(res, request, completion, operation, start);
            }
        } finally {
            if (completion.finishReason() == null) {
                completion.cancel(); // the handler ended early (a failure writing): never leave it running
            }
            finished(completion);
        }
    }

    private int[] encode(GenerationRequest request) {
        if (!request.chat()) {
            return model.encode(request.prompt());
        }
        try {
            return model.encodeChat(request.messages());
        } catch (RuntimeException e) {
            // The template rejects the conversation (e.g. roles that do not alternate).
            throw ApiException.badParameter("messages", "the chat template rejects these messages: " + e.getMessage());
        }
    }

    private Completion submit(int[] prompt, GenerateOptions options, boolean chat) {
        Completion completion;
        synchronized (inFlight) {
            // Under the monitor, so the drain never misses a request admitted as it starts.
            if (draining.get()) {
                throw shuttingDown();
            }
            try {
                completion = engine.submit(prompt, options, config.requestTimeout());
            } catch (AdmissionRejectedException e) {
                throw switch (e.reason()) {
                    case QUEUE_FULL -> new ApiException(429, "rate_limit_exceeded", null, "queue_full",
                            "The server is at capacity; retry later");
                    case CLOSED -> shuttingDown();
                    case TOO_LARGE -> contextExceeded(chat, "the request needs more memory than the device has");
                    case DUPLICATE_ID -> new ApiException(500, "server_error", null, "internal_error", e.getMessage());
                };
            } catch (IllegalArgumentException e) {
                throw contextExceeded(chat, e.getMessage());
            }
            inFlight.add(completion);
        }
        return completion;
    }

    private static ApiException shuttingDown() {
        return new ApiException(503, "server_error", null, "shutting_down", "The server is shutting down");
    }

    private static ApiException contextExceeded(boolean chat, String message) {
        return new ApiException(413, "invalid_request_error", chat ? "messages" : "prompt", "context_length_exceeded",
                message);
    }

    private void stream(ServerResponse res, GenerationRequest request, Completion completion, String operation,
            long start) {
        String id = (request.chat() ? "chatcmpl-" : "cmpl-") + randomId();
        long created = Instant.now().getEpochSecond();
        long first = 0;
        int promptTokens = completion.promptTokens().length;
        String outcome;
        metrics.streamOpened();
        EventStream events = null;
        try {
            res.status(200);
            res.headers().contentType(EVENT_STREAM);
            events = new EventStream(res.sink(SseSink.TYPE), completion);
            if (request.chat()) {
                events.emit(chunk(request, id, created, "", true, null));
            }
            for (Completion.Delta delta : completion) {
                if (delta.token() >= 0 && first == 0) {
                    first = System.nanoTime();
                }
                if (!delta.text().isEmpty()) {
                    events.emit(chunk(request, id, created, delta.text(), false, null));
                }
            }
            FinishReason finish = completion.finishReason();
            if (events.clientGone) {
                outcome = "disconnected";
            } else if (finish == FinishReason.ABORTED) {
                events.emit(errorBody(aborted(completion)));
                events.emit(DONE);
                outcome = "aborted";
            } else {
                events.emit(chunk(request, id, created, null, false, finish.wire()));
                if (request.includeUsage()) {
                    ObjectNode usage = envelope(request, id, created, true);
                    usage.putArray("choices");
                    usage.set("usage", usage(promptTokens, completion.tokens().length));
                    events.emit(usage);
                }
                events.emit(DONE);
                outcome = finish.wire();
            }
        } catch (UncheckedIOException e) {
            // The client went away: stop generating for it at once.
            completion.cancel();
            outcome = "disconnected";
            log.debug("client disconnected from {}: {}", id, e.getMessage());
        } finally {
            metrics.streamClosed();
            if (events != null) {
                events.close();
            }
        }
        metrics.request(operation, outcome, promptTokens, completion.tokens().length, start, first, System.nanoTime());
    }

    /**
     * One response's event stream. The handler's thread emits the chunks; a virtual thread sends
     * a keep-alive comment whenever nothing was written for {@code keepAlive}, so that a client
     * gone while its request produces nothing is found out (its write fails) and the request is
     * cancelled. Writes are serialised by {@code lock}; the heartbeat only tries it (the handler
     * writing is proof enough of life) and stops once {@code closed} is set, which {@link #close}
     * does before it takes the lock to close the sink.
     */
    private final class EventStream {
        private final SseSink sink;
        private final Completion completion;
        private final ReentrantLock lock = new ReentrantLock();
        private final Thread heartbeat;
        private volatile long lastWrite = System.nanoTime();
        private volatile boolean closed;
        /** Set by the heartbeat when its write failed: the client is gone and the completion cancelled. */
        volatile boolean clientGone;

        EventStream(SseSink sink, Completion completion) {
            this.sink = sink;
            this.completion = completion;
            this.heartbeat = Thread.ofVirtual().name("tandem-server-keepalive").start(this::beat);
        }

        void emit(JsonNode data) {
            try {
                byte[] json = JSON.writeValueAsBytes(data);
                byte[] payload = new byte[json.length + 1];
                payload[0] = ' ';
                System.arraycopy(json, 0, payload, 1, json.length);
                emit(payload);
            } catch (JsonProcessingException e) {
                throw new IllegalStateException(e);
            }
        }

        /** One event; the payload is written after {@code data:} as it is (so it starts with the space). */
        void emit(byte[] payload) {
            lock.lock();
            try {
                sink.emit(SseEvent.builder().data(payload).build());
                lastWrite = System.nanoTime();
            } finally {
                lock.unlock();
            }
        }

        private void beat() {
            long interval = config.keepAlive().toNanos();
            while (!closed) {
                long wait = lastWrite + interval - System.nanoTime();
                if (wait > 0) {
                    LockSupport.parkNanos(wait); // a timer: woken early only by close()
                    continue;
                }
                if (!lock.tryLock()) {
                    LockSupport.parkNanos(interval);
                    continue;
                }
                try {
                    if (closed) {
                        return;
                    }
                    sink.emit(SseEvent.builder().comment(" keep-alive").build());
                    lastWrite = System.nanoTime();
                } catch (RuntimeException e) {
                    clientGone = true;
                    completion.cancel();
                    log.debug("client gone while its request waited: {}", e.toString());
                    return;
                } finally {
                    lock.unlock();
                }
            }
        }

        void close() {
            closed = true;
            LockSupport.unpark(heartbeat);
            lock.lock();
            try {
                sink.close();
            } catch (RuntimeException e) {
                log.debug("closing an event stream: {}", e.toString());
            } finally {
                lock.unlock();
            }
        }
    }

    private void whole(ServerResponse res, GenerationRequest request, Completion completion, String operation,
            long start) {
        long first = 0;
        for (Completion.Delta delta : completion) {
            if (delta.token() >= 0 && first == 0) {
                first = System.nanoTime();
            }
        }
        int promptTokens = completion.promptTokens().length;
        int completionTokens = completion.tokens().length;
        FinishReason finish = completion.finishReason();
        if (finish == FinishReason.ABORTED) {
            metrics.request(operation, "aborted", promptTokens, completionTokens, start, first, System.nanoTime());
            sendError(res, aborted(completion));
            return;
        }
        String id = (request.chat() ? "chatcmpl-" : "cmpl-") + randomId();
        long created = Instant.now().getEpochSecond();
        ObjectNode body = JSON.createObjectNode().put("id", id)
                .put("object", request.chat() ? "chat.completion" : "text_completion").put("created", created)
                .put("model", modelName);
        ObjectNode choice = body.putArray("choices").addObject().put("index", 0);
        if (request.chat()) {
            choice.putObject("message").put("role", "assistant").put("content", completion.text()).putNull("refusal");
        } else {
            choice.put("text", completion.text());
        }
        choice.putNull("logprobs").put("finish_reason", finish.wire());
        body.set("usage", usage(promptTokens, completionTokens));
        metrics.request(operation, finish.wire(), promptTokens, completionTokens, start, first, System.nanoTime());
        sendJson(res, body);
    }

    /** Why a completion was aborted, as the error the client sees. */
    private ApiException aborted(Completion completion) {
        Status status = completion.outcome() == null ? Status.CANCELLED : completion.outcome().status();
        if (cancelledByShutdown.contains(completion) || status == Status.CANCELLED) {
            return shuttingDown();
        }
        if (status == Status.DEADLINE_EXCEEDED) {
            return new ApiException(504, "server_error", null, "timeout",
                    "The generation exceeded its time limit of " + config.requestTimeout());
        }
        log.warn("generation failed: {}", completion.outcome(), completion.outcome().cause());
        return new ApiException(500, "server_error", null, "internal_error", "The generation failed");
    }

    private ObjectNode envelope(GenerationRequest request, String id, long created, boolean chunk) {
        String object = request.chat() ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
        return JSON.createObjectNode().put("id", id).put("object", object).put("created", created)
                .put("model", modelName);
    }

    /** A chunk of a stream: {@code text} (or none), the assistant's role on a chat's first chunk, a finish reason. */
    private ObjectNode chunk(GenerationRequest request, String id, long created, String text, boolean role,
            String finish) {
        ObjectNode chunk = envelope(request, id, created, true);
        ArrayNode choices = chunk.putArray("choices");
        ObjectNode choice = choices.addObject().put("index", 0);
        if (request.chat()) {
            ObjectNode delta = choice.putObject("delta");
            if (role) {
                delta.put("role", "assistant");
            }
            if (text != null) {
                delta.put("content", text);
            }
        } else {
            choice.put("text", text == null ? "" : text);
        }
        choice.putNull("logprobs");
        if (finish == null) {
            choice.putNull("finish_reason");
        } else {
            choice.put("finish_reason", finish);
        }
        return chunk;
    }

    private static ObjectNode usage(int prompt, int completion) {
        return JSON.createObjectNode().put("prompt_tokens", prompt).put("completion_tokens", completion)
                .put("total_tokens", prompt + completion);
    }

    private static String randomId() {
        byte[] bytes = new byte[12];
        ThreadLocalRandom.current().nextBytes(bytes);
        return HexFormat.of().formatHex(bytes);
    }

    // ---- requests and errors ------------------------------------------------------------------

    private void authorize(ServerRequest req) {
        if (apiKeyDigest == null) {
            return;
        }
        String header = req.headers().first(HeaderNames.AUTHORIZATION).orElse("");
        String given = header.regionMatches(true, 0, "Bearer ", 0, 7) ? header.substring(7).trim() : "";
        // Digests of equal length, compared in time independent of where they differ.
        if (!MessageDigest.isEqual(sha256(given), apiKeyDigest)) {
            throw new ApiException(401, "invalid_request_error", null, "invalid_api_key",
                    header.isEmpty() ? "Missing API key: send Authorization: Bearer KEY" : "Incorrect API key");
        }
    }

    /** The body as JSON, read with a bound: never more than {@code maxBodyBytes + 1} bytes. */
    private JsonNode readBody(ServerRequest req) {
        int max = config.maxBodyBytes();
        OptionalLong length = req.headers().contentLength();
        if (length.isPresent() && length.getAsLong() > max) {
            throw tooLarge(length.getAsLong());
        }
        byte[] bytes;
        try (InputStream in = req.content().inputStream()) {
            bytes = in.readNBytes(max + 1);
        } catch (IOException | UncheckedIOException e) {
            throw ApiException.badParameter(null, "cannot read the request body: " + e.getMessage());
        }
        if (bytes.length > max) {
            throw tooLarge(-1);
        }
        return parseJson(bytes);
    }

    /**
     * A body's JSON: UTF-8 only (strictly decoded, so Jackson's guess of UTF-16 or UTF-32 from the
     * first bytes never applies), any syntax error a 400.
     */
    static JsonNode parseJson(byte[] bytes) {
        if (bytes.length == 0) {
            throw ApiException.badParameter(null, "the request body is empty; send a JSON object");
        }
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException e) {
            throw ApiException.badParameter(null, "the request body is not valid UTF-8");
        }
        try {
            return JSON.readTree(text);
        } catch (JsonProcessingException e) {
            throw ApiException.badParameter(null, "malformed JSON: " + e.getOriginalMessage());
        }
    }

    private ApiException tooLarge(long length) {
        return new ApiException(413, "invalid_request_error", null, "request_too_large",
                "the request body" + (length >= 0 ? " of " + length + " bytes" : "") + " is larger than "
                        + config.maxBodyBytes() + " bytes");
    }

    private static JsonNode errorBody(ApiException e) {
        ObjectNode body = JSON.createObjectNode();
        ObjectNode error = body.putObject("error").put("message", e.getMessage()).put("type", e.type());
        if (e.param() == null) {
            error.putNull("param");
        } else {
            error.put("param", e.param());
        }
        error.put("code", e.code());
        return body;
    }

    private void sendError(ServerResponse res, ApiException e) {
        res.status(e.status());
        if (e.status() == 429) {
            res.header(HeaderNames.RETRY_AFTER, Long.toString(Math.max(1, config.retryAfter().toSeconds())));
        }
        sendJson(res, errorBody(e));
    }

    private static void sendJson(ServerResponse res, JsonNode body) {
        res.headers().contentType(APPLICATION_JSON);
        try {
            res.send(JSON.writeValueAsBytes(body));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    private static byte[] sha256(String text) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
