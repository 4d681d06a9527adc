package dev.tandem.server;

import dev.tandem.AdmissionRejectedException;
import dev.tandem.Status;
import dev.tandem.llm.Completion;
import dev.tandem.llm.GenerateOptions;
import dev.tandem.llm.LanguageModel;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The server's generations in flight: admits each into the engine (or refuses it as the error a
 * client understands), holds it until its handler has written its last byte, and drains them at
 * shutdown.
 *
 * <p>{@code inFlight} holds a completion from just after {@code submit} until {@link #finished};
 * admission happens under its monitor with {@code draining} checked there, so the drain never
 * misses a request admitted as it starts. The drain waits on the same monitor, which every
 * removal notifies. Completions cancelled by the drain are remembered in
 * {@code cancelledByShutdown} so that their streams end with {@code shutting_down}.
 */
final class Generations {
    private static final Logger log = LoggerFactory.getLogger(Generations.class);

    private final ServerConfig config;
    private final Replies replies;
    private final ServerMetrics metrics;
    private final Set<Completion> inFlight = ConcurrentHashMap.newKeySet();
    private final Set<Completion> cancelledByShutdown = ConcurrentHashMap.newKeySet();
    private final AtomicBoolean draining = new AtomicBoolean();

    Generations(ServerConfig config, Replies replies, ServerMetrics metrics) {
        this.config = config;
        this.replies = replies;
        this.metrics = metrics;
    }

    boolean isDraining() {
        return draining.get();
    }

    /** 503 when the server is draining. */
    void checkOpen() {
        if (draining.get()) {
            throw shuttingDown();
        }
    }

    /**
     * Admits a generation from {@code prompt} into {@code engine}: at most {@code maxTokens} tokens (0 for the
     * server's limit), capped by the room the context leaves.
     *
     * @param param the request's parameter that holds the prompt, named by a context error
     * @throws ApiException 400 {@code context_length_exceeded}, 429, 503, 413
     */
    Completion submit(Engine engine, int[] prompt, int maxTokens, GenerateOptions options, String param) {
        LanguageModel model = engine.model();
        int context = model.config().contextLength();
        int maxPromptTokens = config.maxPromptTokens() == 0 ? context - 1
                : Math.min(config.maxPromptTokens(), context - 1);
        if (prompt.length > maxPromptTokens) {
            throw contextExceeded(param, "This model's maximum context length is " + context + " tokens and at most "
                    + maxPromptTokens + " of them may be prompt; the prompt has " + prompt.length + " tokens");
        }
        int limit = model.limits().maxTokens(prompt.length, maxTokens > 0 ? maxTokens : config.maxTokens());
        GenerateOptions withLimit = options.withMaxTokens(limit);
        Completion completion;
        synchronized (inFlight) {
            checkOpen();
            try {
                completion = engine.submit(prompt, withLimit, config.requestTimeout());
            } catch (AdmissionRejectedException e) {
                throw switch (e.reason()) {
                    case QUEUE_FULL -> new ApiException(429, "rate_limit_exceeded", null, "queue_full",
                            "The server is at capacity; retry later");
                    case CLOSED -> shuttingDown();
                    case TOO_LARGE -> new ApiException(413, "invalid_request_error", param, "request_too_large",
                            "the request needs more memory than the device has");
                    case DUPLICATE_ID -> new ApiException(500, "server_error", null, "internal_error", e.getMessage());
                };
            } catch (IllegalArgumentException e) {
                throw contextExceeded(param, e.getMessage());
            } catch (UnsupportedOperationException e) {
                throw ApiException.unsupported(null, e.getMessage());
            }
            inFlight.add(completion);
        }
        return completion;
    }

    /**
     * Starts the generation {@code start} parses, checks and submits (through {@link #submit}):
     * what it returns (its completions), or null when it was refused, the refusal then answered
     * and counted under {@code operation}.
     */
    <T> T admit(ServerRequest req, ServerResponse res, String operation, Supplier<T> start) {
        try {
            checkOpen();
            return start.get();
        } catch (ApiException e) {
            metrics.rejected(operation, switch (e.status()) {
                case 429 -> "rejected";
                case 503 -> "unavailable";
                default -> "invalid";
            });
            replies.error(req, res, e);
        } catch (RuntimeException e) {
            log.warn("cannot start a generation", e);
            metrics.rejected(operation, "error");
            replies.error(req, res, new ApiException(500, "server_error", null, "internal_error",
                    "The server failed to start the generation"));
        }
        return null;
    }

    /**
     * Its handler is done with {@code completion}: cancelled if it has not finished (the handler
     * ended early, writing failed), then no longer in flight.
     */
    void release(Completion completion) {
        if (completion.finishReason() == null) {
            completion.cancel();
        }
        finished(completion);
    }

    /** Its handler has written its last byte. */
    private void finished(Completion completion) {
        synchronized (inFlight) {
            inFlight.remove(completion);
            cancelledByShutdown.remove(completion);
            inFlight.notifyAll();
        }
    }

    /**
     * Refuses new generations, lets those in flight finish within the drain timeout, cancels the
     * rest and waits briefly for their handlers.
     *
     * @return false, at once, when another caller drains (or drained) already
     */
    boolean drain() {
        if (!draining.compareAndSet(false, true)) {
            return false;
        }
        if (!awaitDrained(config.drainTimeout())) {
            log.info("{} streams still running after the drain of {}; cancelling them", inFlight.size(),
                    config.drainTimeout());
            for (Completion c : inFlight) {
                cancelledByShutdown.add(c);
                c.cancel();
            }
            awaitDrained(Duration.ofSeconds(5));
        }
        return true;
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

    /** Why a completion was aborted, as the error the client sees. */
    ApiException aborted(Completion completion) {
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

    static ApiException shuttingDown() {
        return new ApiException(503, "server_error", null, "shutting_down", "The server is shutting down");
    }

    /** 400 with OpenAI's {@code context_length_exceeded}, as its SDKs and LangChain recognise it. */
    static ApiException contextExceeded(String param, String message) {
        return new ApiException(400, "invalid_request_error", param, "context_length_exceeded", message);
    }
}
