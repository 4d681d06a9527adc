package dev.tandem.server;

import dev.tandem.AdmissionRejectedException;
import dev.tandem.llm.Completion;
import dev.tandem.llm.GenerateOptions;
import dev.tandem.llm.LanguageModel;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * What the server generates through: one model, and a {@link Completion} per admitted request.
 * The server knows nothing else of how generation runs, so a request-per-program engine
 * ({@link SessionEngine}) and a continuous batcher are interchangeable behind it.
 *
 * <h2>Contract</h2>
 * <ul>
 *   <li><b>Thread-safety.</b> Every method may be called from many threads at once (the
 *       server calls {@link #submit} from one virtual thread per HTTP request).</li>
 *   <li><b>{@link #submit} never blocks</b> on generation: it admits the request (or queues
 *       it) and returns its completion at once. It rejects by throwing, before anything of the
 *       request is allocated or runs:
 *       {@link AdmissionRejectedException} with {@code QUEUE_FULL} when no more requests can
 *       wait (the server answers 429 with {@code Retry-After}), {@code CLOSED} when the engine
 *       is closing (503), {@code TOO_LARGE} when the request can never fit the device (413);
 *       {@link IllegalArgumentException} for a prompt that leaves no room in the context (400
 *       {@code context_length_exceeded}); {@link UnsupportedOperationException} for options the
 *       engine cannot serve (400 {@code unsupported_parameter}, its message naming them).
 *       A request whose context fills while it runs ends with
 *       {@link dev.tandem.llm.FinishReason#LENGTH}, never with a failure.</li>
 *   <li><b>The completion</b> is iterated by exactly one caller thread (a virtual thread;
 *       blocking in {@code hasNext} must be cheap there and must never hold a device core).
 *       Its deltas are the request's tokens in order, each once; it ends STOP (EOS, an
 *       end-of-turn token, a stop string), LENGTH (the token limit or a full context) or
 *       ABORTED (cancelled, past {@code deadline}, failed, engine closed) with an
 *       {@link dev.tandem.Outcome} whose status says which.</li>
 *   <li><b>{@link Completion#cancel()}</b> may be called from any thread at any time, also
 *       while another thread iterates; it returns at once, the device stops working on the
 *       request, and its memory (or KV blocks) is returned when its running tasks end. The
 *       server calls it when a client disconnects or a drain times out.</li>
 *   <li><b>{@link #stats()}</b> is cheap (it backs {@code /metrics} gauges on every scrape).</li>
 *   <li><b>Close.</b> {@link #close(Duration)} stops admission ({@code CLOSED}), lets running
 *       requests finish for at most the timeout, then cancels what remains; the server never
 *       closes its engine, the engine's owner does (after the server).</li>
 * </ul>
 */
public interface Engine extends AutoCloseable {

    /** The model every request of this engine runs on (a router's: the one a request without a {@code model} gets). */
    LanguageModel model();

    /**
     * The models a request may name, when this engine routes requests among several by their
     * {@code model} (a cluster's gateway): each model served now, by its name, to the engine of
     * that model; {@link #model()} is among them while it is served. The server then answers a
     * request naming none of them, or none of {@link #model()}'s configured names, with 404
     * {@code model_not_found}, and lists these in {@code /v1/models}. Null, the default: this
     * engine serves {@link #model()} alone. Called per request (cheap); the answer may change
     * from call to call.
     */
    default Map<String, ? extends Engine> models() {
        return null;
    }

    /**
     * A model this router serves but has not made ready yet, so that {@link #models()} leaves it
     * out (a cluster's gateway reading the tokenizer of a model a worker just brought): the future
     * of its engine, complete once it is ready, failed when it cannot be made ready. Null, the
     * default: {@code name} is no such model. The server asks only for a name {@link #models()}
     * lacks; it waits for the future a few seconds, then answers 503 with {@code Retry-After}
     * (a failed one: 503 at once), so that a model that is coming is never a 404.
     */
    default java.util.concurrent.CompletableFuture<? extends Engine> pendingModel(String name) {
        return null;
    }

    /**
     * Registers this engine's own meters in the registry behind the server's {@code /metrics};
     * called once, when the server starts. By default none beyond what {@link #stats()} gives.
     */
    default void bindMeters(io.micrometer.core.instrument.MeterRegistry registry) {}

    /**
     * Admits a request that generates from {@code prompt}.
     *
     * @param prompt   the prompt's tokens (BOS included where the model adds one)
     * @param options  token limit, sampler, stop strings
     * @param deadline time from submission after which the request ends ABORTED
     *                 ({@code DEADLINE_EXCEEDED}), or null for none
     * @return its completion, at once
     * @throws AdmissionRejectedException when it is not admitted (see the class comment)
     * @throws IllegalArgumentException   when the prompt does not fit the context
     * @throws UnsupportedOperationException when the engine cannot serve {@code options}
     */
    Completion submit(int[] prompt, GenerateOptions options, Duration deadline);

    /** A snapshot of the engine's load. */
    EngineStats stats();

    /** Stops admission, cancels what runs and waits until it has drained. Idempotent. */
    @Override
    void close();

    /**
     * Stops admission, waits at most {@code drain} for running requests to end on their own,
     * then cancels the rest (and waits briefly for their teardown).
     *
     * @return ids of requests that had not drained when it returned; empty when fully closed
     */
    List<Long> close(Duration drain);
}
