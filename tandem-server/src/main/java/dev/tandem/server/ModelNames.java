package dev.tandem.server;

import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The names the one served model answers to: the configured ones (the first is the id every
 * response reports) and the model's own name. A request naming any other model is served by the
 * same model, as llama-server does, so that applications with a hard-coded OpenAI model name work
 * against a local server unchanged; with {@code strict}, as vLLM does, it is a 404.
 */
final class ModelNames {
    private final List<String> names;
    private final boolean strict;

    ModelNames(List<String> configured, String ownName, boolean strict) {
        Set<String> all = new LinkedHashSet<>(configured);
        all.add(ownName);
        this.names = List.copyOf(all);
        this.strict = strict;
    }

    /** The id responses report and {@code /v1/models} lists first. */
    String id() {
        return names.getFirst();
    }

    /** Every name, the id first. */
    List<String> all() {
        return names;
    }

    /** Whether {@code name} is one of the model's names. */
    boolean isKnown(String name) {
        return names.contains(name);
    }

    /**
     * Checks the {@code model} of a request (null when it named none).
     *
     * @throws ApiException 404 {@code model_not_found} when strict and the name is not known
     */
    void check(String requested) {
        if (strict && requested != null && !isKnown(requested)) {
            throw unknown(requested);
        }
    }

    static ApiException unknown(String id) {
        return new ApiException(404, "invalid_request_error", "model", "model_not_found",
                "The model '" + id + "' does not exist");
    }
}
