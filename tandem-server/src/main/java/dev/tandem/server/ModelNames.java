package dev.tandem.server;

import dev.tandem.llm.LanguageModel;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

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
 * model would answer a misspelt model with another one.
 */
final class ModelNames {
    private final Engine engine;
    private final List<String> names;
    private final boolean strict;

    /** A request's engine and the model id its responses report. */
    record Target(String id, Engine engine) {
        LanguageModel model() {
            return engine.model();
        }
    }

    ModelNames(List<String> configured, Engine engine, boolean strict) {
        this.engine = engine;
        Set<String> all = new LinkedHashSet<>(configured);
        all.add(engine.model().name());
        this.names = List.copyOf(all);
        this.strict = strict;
    }

    /** The id responses of the engine's own model report, and {@code /v1/models} lists first. */
    String id() {
        return names.getFirst();
    }

    /** Every name of the engine's own model, the id first. */
    List<String> all() {
        return names;
    }

    /** Whether {@code name} reaches a model ({@code /v1/models/{name}}). */
    boolean isKnown(String name) {
        if (names.contains(name)) {
            return true;
        }
        Map<String, ? extends Engine> routed = engine.models();
        return routed != null && routed.containsKey(name);
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
     * @throws ApiException 404 {@code model_not_found} for a name no model answers to (see the class comment)
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
            throw unknown(requested);
        }
        return new Target(requested, other);
    }

    static ApiException unknown(String id) {
        return new ApiException(404, "invalid_request_error", "model", "model_not_found",
                "The model '" + id + "' does not exist");
    }
}
