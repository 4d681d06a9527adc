package dev.tandem.server;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * How a {@link TandemServer} listens and what it accepts. Immutable; build it with
 * {@link #builder()}.
 *
 * @param host            the address to bind ({@code 127.0.0.1} by default: loopback only)
 * @param port            the port; 0 for an ephemeral one ({@link TandemServer#port()} tells which)
 * @param apiKey          when not null, every {@code /v1} call needs {@code Authorization: Bearer apiKey}
 * @param modelNames      the names clients may give the model, the first being the id every
 *                        response reports; empty for the model's own name alone (which is
 *                        accepted in any case)
 * @param strictModelNames whether a request naming another model is refused (404
 *                        {@code model_not_found}, as vLLM does) instead of served by the one
 *                        model (as llama-server does, the default)
 * @param corsOrigins     origins a browser may call from ({@code Access-Control-Allow-Origin}),
 *                        {@code *} for any; empty (the default) for no CORS headers at all
 * @param maxBodyBytes    largest request body read; a larger one is answered 413
 * @param maxPromptTokens longest prompt accepted (400 {@code context_length_exceeded} beyond it); 0 for the
 *                        model's context less one
 * @param maxTokens       largest {@code max_tokens} accepted (400 beyond it), and the limit of a
 *                        request that names none (then also capped by the room in the context)
 * @param requestTimeout  the deadline of every generation, or null for none
 * @param drainTimeout    how long {@link TandemServer#close()} lets running streams finish
 * @param retryAfter      the {@code Retry-After} of a 429
 * @param keepAlive       a stream that has sent nothing for this long gets an SSE comment
 *                        ({@code : keep-alive}), so that a client gone while its request waits
 *                        (queued, or a long prefill) is noticed and its request cancelled
 */
public record ServerConfig(String host, int port, String apiKey, List<String> modelNames, boolean strictModelNames,
        List<String> corsOrigins, int maxBodyBytes, int maxPromptTokens, int maxTokens, Duration requestTimeout,
        Duration drainTimeout, Duration retryAfter, Duration keepAlive) {

    public ServerConfig {
        Objects.requireNonNull(host, "host");
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port must be in [0, 65535], was " + port);
        }
        if (apiKey != null && apiKey.isEmpty()) {
            throw new IllegalArgumentException("an API key must not be empty");
        }
        modelNames = List.copyOf(modelNames);
        for (String name : modelNames) {
            if (name.isBlank()) {
                throw new IllegalArgumentException("a model name must not be blank");
            }
        }
        corsOrigins = List.copyOf(corsOrigins);
        for (String origin : corsOrigins) {
            if (!origin.equals("*") && !origin.matches("https?://[^/\\s]+")) {
                throw new IllegalArgumentException("a CORS origin is * or scheme://host[:port], was '" + origin + "'");
            }
        }
        if (maxBodyBytes < 1) {
            throw new IllegalArgumentException("maxBodyBytes must be >= 1, was " + maxBodyBytes);
        }
        if (maxPromptTokens < 0) {
            throw new IllegalArgumentException("maxPromptTokens must be >= 0, was " + maxPromptTokens);
        }
        if (maxTokens < 1) {
            throw new IllegalArgumentException("maxTokens must be >= 1, was " + maxTokens);
        }
        if (requestTimeout != null && !requestTimeout.isPositive()) {
            throw new IllegalArgumentException("requestTimeout must be positive, was " + requestTimeout);
        }
        Objects.requireNonNull(drainTimeout, "drainTimeout");
        Objects.requireNonNull(retryAfter, "retryAfter");
        if (!keepAlive.isPositive()) {
            throw new IllegalArgumentException("keepAlive must be positive, was " + keepAlive);
        }
    }

    /**
     * A builder with the defaults: {@code 127.0.0.1:8080}, no key, bodies up to 1 MiB, prompts up
     * to the context, {@code max_tokens} up to 4096, a 10-minute deadline per generation, a
     * 30-second drain, {@code Retry-After: 1}, a keep-alive comment after 5 seconds of silence.
     */
    public static Builder builder() {
        return new Builder();
    }

    /** Collects the fields; {@link #build} validates them. */
    public static final class Builder {
        private String host = "127.0.0.1";
        private int port = 8080;
        private String apiKey;
        private final List<String> modelNames = new ArrayList<>();
        private boolean strictModelNames;
        private final List<String> corsOrigins = new ArrayList<>();
        private int maxBodyBytes = 1 << 20;
        private int maxPromptTokens;
        private int maxTokens = 4096;
        private Duration requestTimeout = Duration.ofMinutes(10);
        private Duration drainTimeout = Duration.ofSeconds(30);
        private Duration retryAfter = Duration.ofSeconds(1);
        private Duration keepAlive = Duration.ofSeconds(5);

        private Builder() {}

        public Builder host(String value) {
            host = value;
            return this;
        }

        public Builder port(int value) {
            port = value;
            return this;
        }

        public Builder apiKey(String value) {
            apiKey = value;
            return this;
        }

        /** Serves the model as {@code value} alone (besides its own name). */
        public Builder modelName(String value) {
            modelNames.clear();
            modelNames.add(value);
            return this;
        }

        /** One more name of the model; the first one given is the id responses report. */
        public Builder alias(String value) {
            modelNames.add(value);
            return this;
        }

        public Builder strictModelNames(boolean value) {
            strictModelNames = value;
            return this;
        }

        /** An origin browsers may call from, or {@code *}. */
        public Builder corsOrigin(String value) {
            corsOrigins.add(value);
            return this;
        }

        public Builder maxBodyBytes(int value) {
            maxBodyBytes = value;
            return this;
        }

        public Builder maxPromptTokens(int value) {
            maxPromptTokens = value;
            return this;
        }

        public Builder maxTokens(int value) {
            maxTokens = value;
            return this;
        }

        public Builder requestTimeout(Duration value) {
            requestTimeout = value;
            return this;
        }

        public Builder drainTimeout(Duration value) {
            drainTimeout = value;
            return this;
        }

        public Builder retryAfter(Duration value) {
            retryAfter = value;
            return this;
        }

        public Builder keepAlive(Duration value) {
            keepAlive = value;
            return this;
        }

        public ServerConfig build() {
            return new ServerConfig(host, port, apiKey, modelNames, strictModelNames, corsOrigins, maxBodyBytes,
                    maxPromptTokens, maxTokens, requestTimeout, drainTimeout, retryAfter, keepAlive);
        }
    }
}
