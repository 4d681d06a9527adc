package dev.tandem.server;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.helidon.http.HeaderNames;
import io.helidon.http.HttpMediaType;
import io.helidon.http.Method;
import io.helidon.webserver.WebServer;
import io.helidon.webserver.http.Filter;
import io.helidon.webserver.http.FilterChain;
import io.helidon.webserver.http.Handler;
import io.helidon.webserver.http.HttpRouting;
import io.helidon.webserver.http.RoutingRequest;
import io.helidon.webserver.http.RoutingResponse;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An OpenAI-compatible HTTP server over one {@link Engine}: {@code POST /v1/chat/completions},
 * {@code /v1/completions} and {@code /v1/responses} (streaming as server-sent events with
 * {@code "stream": true}), {@code GET /v1/models}, llama-server's {@code POST /tokenize} and
 * {@code /detokenize}, {@code GET /health} and {@code GET /metrics} (Prometheus text). The
 * chat, completions, responses and models routes also answer without the {@code /v1} prefix, as
 * llama-server's do.
 *
 * <pre>{@code
 * try (Worker worker = Worker.create(CpuDeviceConfig.withCores(2));
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
 * This class is the server's lifecycle and its table of routes; each route's work is a room of
 * its own: {@link CompletionsApi} (chat and completions), {@link ResponsesApi},
 * {@link TokenizeApi}; {@link Generations} admits generations into the engine and drains them;
 * {@link SseWriter} writes event streams; {@link Replies} reads bodies and writes answers and
 * errors (every one OpenAI's error object, counted and logged); {@link ModelNames} says which
 * names the model answers to; {@link Cors} is the cross-origin filter.
 *
 * <p>Helidon runs each HTTP request on its own virtual thread; that thread parses and checks the
 * body, tokenizes the prompt, submits it to the engine and then iterates the completion, which
 * blocks cheaply (a virtual thread parks; no core thread of the runtime ever waits on HTTP).
 * Everything that can be refused is refused before the engine allocates anything: the key
 * (401), the drain (503), the body size (413, read with a bound, never whole into memory), the
 * JSON and its parameters (400), the model (404 only with strict model names), the prompt
 * length (400 {@code context_length_exceeded}), then the engine's admission (429 with
 * {@code Retry-After}, 503, 413). A path no route serves is a 404 error object, a route called
 * with another method a 405 with {@code Allow}.
 *
 * <p><b>Shutdown.</b> {@link #close()} makes {@link Generations} drain: new generations get 503
 * and {@code /health} turns 503, the requests in flight get up to {@code drainTimeout} to
 * finish, the rest are cancelled (their streams end with an error event {@code shutting_down})
 * and their handlers awaited; then the listener stops.
 */
public final class TandemServer implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(TandemServer.class);
    private static final HttpMediaType PROMETHEUS = HttpMediaType.create("text/plain; version=0.0.4; charset=utf-8");

    private final ServerConfig config;
    private final ModelNames names;
    private final byte[] apiKeyDigest;
    private final ServerMetrics metrics;
    private final Replies replies;
    private final Generations generations;
    private final CompletionsApi completions;
    private final ResponsesApi responses;
    private final TokenizeApi tokenize;
    private final long createdAt = Instant.now().getEpochSecond();
    private final CompletableFuture<Void> terminated = new CompletableFuture<>();
    private final WebServer server;

    private TandemServer(Engine engine, ServerConfig config) {
        Objects.requireNonNull(engine, "engine");
        this.config = Objects.requireNonNull(config, "config");
        this.names = new ModelNames(config.modelNames(), engine, config.strictModelNames());
        this.apiKeyDigest = config.apiKey() == null ? null : sha256(config.apiKey());
        this.metrics = new ServerMetrics(engine, names.id());
        this.replies = new Replies(config, metrics);
        this.generations = new Generations(config, replies, metrics);
        this.completions = new CompletionsApi(generations, names, replies, metrics, config);
        this.responses = new ResponsesApi(generations, names, replies, metrics, config);
        this.tokenize = new TokenizeApi(names, replies);
        this.server = WebServer.builder()
                .host(config.host())
                .port(config.port())
                .shutdownHook(false) // close() drains first; the owner decides when
                .routing(this::routes)
                .build()
                .start();
        log.info("serving {} on http://{}:{}", names.all(), config.host(), server.port());
    }

    /**
     * Starts a server over {@code engine}; it accepts requests when this returns.
     *
     * @throws RuntimeException when the address cannot be bound
     */
    public static TandemServer start(Engine engine, ServerConfig config) {
        return new TandemServer(engine, config);
    }

    /**
     * Starts, on a virtual thread, the one-time work of a first {@link #start} that needs no
     * engine — loading and initialising the HTTP server's, the JSON mapper's and the metrics
     * registry's classes, and Helidon's service registry — so that a caller can run it beside
     * the model's load (which leaves a core idle most of the time), and join it before
     * {@link #start}: in {@code tandem serve} of a 0.5B-shape file, the start after the load took
     * 0.5-0.6 s without it and 0.1-0.2 s with it. Binds no port; safe to call any number of
     * times. The future never completes exceptionally: a failure is only logged, since
     * {@link #start} does the same work and reports it.
     */
    public static CompletableFuture<Void> prepareAsync() {
        CompletableFuture<Void> done = new CompletableFuture<>();
        Thread.ofVirtual().name("tandem-server-prepare").start(() -> {
            try {
                WebServer.builder().host("127.0.0.1").port(0).shutdownHook(false)
                        .routing(routing -> routing.get("/", (req, res) -> res.send())).build();
                new PrometheusMeterRegistry(PrometheusConfig.DEFAULT).close();
                Replies.JSON.createObjectNode();
            } catch (RuntimeException | Error e) {
                log.debug("preparing the server's start failed; start will do that work", e);
            } finally {
                done.complete(null);
            }
        });
        return done;
    }

    /** The port it listens on (the real one when the configuration asked for 0); -1 once closed. */
    public int port() {
        return server.port();
    }

    /** The host it is bound to. */
    public String host() {
        return config.host();
    }

    /** The model id responses report (the first configured name, else the model's own). */
    public String modelName() {
        return names.id();
    }

    /** Completes once {@link #close()} has stopped the listener. */
    public CompletableFuture<Void> terminated() {
        return terminated.copy();
    }

    /** Whether it is draining or closed. */
    public boolean isDraining() {
        return generations.isDraining();
    }

    /**
     * Stops accepting generations (503), lets the streams in flight finish within the drain
     * timeout, cancels the rest, then stops listening. Idempotent; a second caller waits for the
     * first to finish. Does not close the engine.
     */
    @Override
    public void close() {
        if (!generations.drain()) {
            terminated.join(); // the first caller stops the listener
            return;
        }
        try {
            server.stop();
        } finally {
            terminated.complete(null);
        }
    }

    // ---- routes -------------------------------------------------------------------------------

    private void routes(HttpRouting.Builder routing) {
        if (!config.corsOrigins().isEmpty()) {
            routing.addFilter(new Cors(config.corsOrigins(), replies));
        }
        routing.addFilter(new Authorization());
        route(routing, Method.GET, "/health", this::health);
        route(routing, Method.GET, "/metrics", this::metrics);
        for (String prefix : new String[] {"/v1", ""}) {
            route(routing, Method.GET, prefix + "/models", this::models);
            route(routing, Method.GET, prefix + "/models/{id}", this::model);
            route(routing, Method.POST, prefix + "/chat/completions", completions::chat);
            route(routing, Method.POST, prefix + "/completions", completions::completions);
            route(routing, Method.POST, prefix + "/responses", responses::create);
        }
        route(routing, Method.POST, "/tokenize", tokenize::tokenize);
        route(routing, Method.POST, "/detokenize", tokenize::detokenize);
        routing.any((req, res) -> replies.error(req, res, new ApiException(404, "invalid_request_error", null,
                "not_found", "No route " + req.prologue().method().text() + " " + req.path().path()
                        + " on this server; see /v1/models, /v1/chat/completions, /v1/completions, /v1/responses")));
        routing.error(RuntimeException.class, (req, res, e) -> {
            log.warn("unexpected failure answering {} {}", req.prologue().method().text(), req.path().path(), e);
            if (!res.isSent()) {
                replies.error(req, res, new ApiException(500, "server_error", null, "internal_error",
                        "The server failed to answer the request"));
            }
        });
    }

    /** {@code path} answered by {@code handler} for {@code method}, and 405 for any other method. */
    private void route(HttpRouting.Builder routing, Method method, String path, Handler handler) {
        routing.route(method, path, handler);
        routing.any(path, (req, res) -> {
            res.header(HeaderNames.ALLOW, method.text());
            replies.error(req, res, new ApiException(405, "invalid_request_error", null, "method_not_allowed",
                    req.prologue().method().text() + " is not allowed on " + req.path().path() + "; use "
                            + method.text()));
        });
    }

    /**
     * Requires {@code Authorization: Bearer KEY} when a key is configured, on every route but
     * {@code /health} and {@code /metrics} (and CORS preflights, which {@link Cors} answers first).
     */
    private final class Authorization implements Filter {
        @Override
        public void filter(FilterChain chain, RoutingRequest req, RoutingResponse res) {
            String path = req.path().path();
            if (apiKeyDigest == null || path.equals("/health") || path.equals("/metrics")) {
                chain.proceed();
                return;
            }
            String header = req.headers().first(HeaderNames.AUTHORIZATION).orElse("");
            String given = header.regionMatches(true, 0, "Bearer ", 0, 7) ? header.substring(7).trim() : "";
            // Digests of equal length, compared in time independent of where they differ.
            if (!MessageDigest.isEqual(sha256(given), apiKeyDigest)) {
                replies.error(req, res, new ApiException(401, "invalid_request_error", null, "invalid_api_key",
                        header.isEmpty() ? "Missing API key: send Authorization: Bearer KEY" : "Incorrect API key"));
                return;
            }
            chain.proceed();
        }
    }

    private void health(ServerRequest req, ServerResponse res) {
        boolean draining = generations.isDraining();
        res.status(draining ? 503 : 200);
        Replies.json(res, Replies.JSON.createObjectNode().put("status", draining ? "draining" : "ok"));
    }

    private void metrics(ServerRequest req, ServerResponse res) {
        res.headers().contentType(PROMETHEUS);
        res.send(metrics.scrape().getBytes(StandardCharsets.UTF_8));
    }

    private void models(ServerRequest req, ServerResponse res) {
        // One model, one entry (as llama-server lists it): its id; /v1/models/{name} answers every name.
        // A router lists each model it serves now.
        ObjectNode body = Replies.JSON.createObjectNode().put("object", "list");
        com.fasterxml.jackson.databind.node.ArrayNode data = body.putArray("data");
        names.listed().forEach(id -> data.add(modelObject(id)));
        Replies.json(res, body);
    }

    private void model(ServerRequest req, ServerResponse res) {
        String id = req.path().pathParameters().get("id");
        if (!names.isKnown(id)) {
            replies.error(req, res, ModelNames.unknown(id));
            return;
        }
        Replies.json(res, modelObject(id));
    }

    private ObjectNode modelObject(String id) {
        return Replies.JSON.createObjectNode().put("id", id).put("object", "model").put("created", createdAt)
                .put("owned_by", "tandem");
    }

    private static byte[] sha256(String text) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
