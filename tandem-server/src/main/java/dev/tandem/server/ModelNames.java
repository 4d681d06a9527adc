package dev.tandem.server;

import dev.tandem.llm.LanguageModel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The names a request's {@code model} may give, and the engine each one reaches.
 *
 * <p><b>One model</b> (an engine whose {@link Engine#models()} is null): it answers to the
 * configured names (the first is the id every response reports) and its own name. A request
 * naming any other model is served by the same model, as llama-server does, so that applications
 * with a hard-coded OpenAI model name work against a local server unchanged; with
 * {@code strict}, as vLLM does, it is a 404.
 *
 * <p><b>Several models</b> (a router, e.g. a cluster's gateway): a request without a model, or
 * naming one of the engine's own model's names, goes to that engine as above; one naming another
 * model the router serves now goes to that model's engine and reports that name; any other name
 * is a 404 {@code model_not_found} whatever {@code strict} says, since serving it with the default
 * model would answer a misspelt model with another one. A model the router serves but is still
 * making ready ({@link Engine#pendingModel}) is waited for, at most {@link #PENDING_WAIT}; still
 * not ready, it is a 503 {@code model_loading} with {@code Retry-After}, and one that cannot be
 * made ready a 503 {@code model_unavailable}: never a 404 for a model that is served.
 */
final class ModelNames {
    /** How long a request waits for a model that is being made ready before it gets a 503. */
    static final Duration PENDING_WAIT = Duration.ofSeconds(10);

    private final Engine engine;
    private final List<String> names;
    private final boolean strict;
    private final Duration pendingWait;

    /** A request's engine and the model id its responses report. */
    record Target(String id, Engine engine) {
        LanguageModel model() {
            return engine.model();
        }
    }

    ModelNames(List<String> configured, Engine engine, boolean strict) {
        this(configured, engine, strict, PENDING_WAIT);
    }

    /** @param pendingWait how long a request waits for a model being made ready */
    ModelNames(List<String> configured, Engine engine, boolean strict, Duration pendingWait) {
        this.engine = engine;
        Set<String> all = new LinkedHashSet<>(configured);
        all.add(engine.model().name());
        this.names = List.copyOf(all);
        this.strict = strict;
        this.pendingWait = pendingWait;
    }

    /** The id responses of the engine's own model report, and {@code /v1/models} lists first. */
    String id() {
        return names.getFirst();
    }

    /** Every name of the engine's own model, the id first. */
    List<String> all() {
        return names;
    }

    /** Whether {@code name} reaches a model ({@code /v1/models/{name}}), one being made ready included. */
    boolean isKnown(String name) {
        if (names.contains(name)) {
            return true;
        }
        Map<String, ? extends Engine> routed = engine.models();
        return routed != null && (routed.containsKey(name) || engine.pendingModel(name) != null);
    }

    /** The ids {@code /v1/models} lists: the own model's id, then (on a router) the others served now. */
    List<String> listed() {
        Map<String, ? extends Engine> routed = engine.models();
        if (routed == null) {
            return List.of(id());
        }
        List<String> out = new ArrayList<>();
        if (routed.containsKey(engine.model().name())) {
            out.add(id());
        }
        routed.keySet().stream().filter(name -> !names.contains(name)).sorted().forEach(out::add);
        return out;
    }

    /**
     * The engine of a request's {@code model} (null when it named none).
     *
     * @throws ApiException 404 {@code model_not_found} for a name no model answers to, 503 for a
     *                      model not ready within {@link #PENDING_WAIT} (see the class comment)
     */
    Target resolve(String requested) {
        if (requested == null || names.contains(requested)) {
            return new Target(id(), engine);
        }
        Map<String, ? extends Engine> routed = engine.models();
        if (routed == null) {
            if (strict) {
                throw unknown(requested);
            }
            return new Target(id(), engine);
        }
        Engine other = routed.get(requested);
        if (other == null) {
            other = awaitPending(requested);
        }
        return new Target(requested, other);
    }

    /** The engine of {@code name}, a model being made ready, once it is (see the class comment). */
    private Engine awaitPending(String name) {
        CompletableFuture<? extends Engine> pending = engine.pendingModel(name);
        if (pending == null) {
            throw unknown(name);
        }
        try {
            return pending.get(pendingWait.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw new ApiException(503, "server_error", "model", "model_loading", "The model '" + name
                    + "' is being loaded; retry shortly", true);
        } catch (ExecutionException | java.util.concurrent.CancellationException e) {
            throw new ApiException(503, "server_error", "model", "model_unavailable", "The model '" + name
                    + "' is served, but this server cannot load it: " + (e.getCause() == null ? e : e.getCause())
                            .getMessage(), true);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ApiException(503, "server_error", "model", "model_loading", "The model '" + name
                    + "' is being loaded; retry shortly", true);
        }
    }

    static ApiException unknown(String id) {
        return new ApiException(404, "invalid_request_error", "model", "model_not_found",
                "The model '" + id + "' does not exist");
    }
}
