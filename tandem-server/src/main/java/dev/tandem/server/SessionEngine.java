package dev.tandem.server;

import dev.tandem.AdmissionRejectedException;
import dev.tandem.RequestOptions;
import dev.tandem.Session;
import dev.tandem.SessionConfig;
import dev.tandem.SessionStats;
import dev.tandem.TokenStream;
import dev.tandem.Worker;
import dev.tandem.llm.Completion;
import dev.tandem.llm.GenerateOptions;
import dev.tandem.llm.LanguageModel;
import dev.tandem.llm.model.LlamaRequest;
import dev.tandem.llm.sampling.SamplerConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.UnaryOperator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An {@link Engine} that runs each request as its own program in one core {@link Session}: the
 * session's admission bounds how many generate at once ({@code maxActive}) and how many wait
 * ({@code maxQueued}), and reserves for every running request the device memory of the largest
 * request the context allows, so a running request never runs out of memory.
 *
 * <p>Requests do not share steps (each reads the weights for itself); a continuous batcher is the
 * faster engine. This one is the reference and the fallback. The worker and the model belong to
 * the caller; {@link #close()} closes only this engine's session.
 *
 * <h2>Implementation Overview</h2>
 * {@link #submit} builds the model's {@link LlamaRequest} (which rejects a prompt that leaves no
 * room in the context), submits it to the session (which throws {@link AdmissionRejectedException}
 * without reserving anything when its queue is full or it is closed) and wraps the stream in the
 * model's {@link Completion}. Every live stream is in {@code live} until its {@code completion()}
 * future completes, which happens after its memory is back. Closing flips {@code closed} first —
 * {@code submit} checks it before and after admission, so a request either sees it and is
 * rejected {@code CLOSED} or is in {@code live} before the drain reads the set — then waits for
 * the live streams' futures up to the drain bound, then closes the session, which cancels what is
 * left and waits for it to drain.
 */
public final class SessionEngine implements Engine {
    private static final Logger log = LoggerFactory.getLogger(SessionEngine.class);

    private final LanguageModel model;
    private final Worker worker;
    private final Session<LlamaRequest> session;
    private final int maxActive;
    private final UnaryOperator<TokenStream> streams;
    private final Set<TokenStream> live = ConcurrentHashMap.newKeySet();
    private final AtomicBoolean closed = new AtomicBoolean();

    private SessionEngine(Builder builder, UnaryOperator<TokenStream> streams) {
        this.model = builder.model;
        this.worker = builder.worker;
        this.maxActive = builder.maxActive;
        this.streams = streams;
        long memory = requestMemory(model);
        this.session = worker.openSession(model.program(), SessionConfig.defaults().maxActive(builder.maxActive)
                .maxQueued(builder.maxQueued).memoryPerRequest(memory));
        log.debug("session engine for {}: maxActive {}, maxQueued {}, {} bytes per request", model.name(),
                builder.maxActive, builder.maxQueued, memory);
    }

    /** A builder for an engine of {@code model}, which must be loaded on {@code worker}. */
    public static Builder builder(Worker worker, LanguageModel model) {
        return new Builder(worker, model);
    }

    /**
     * Device bytes of the largest request the model's context allows: a prompt of all but one
     * position and one token to generate (the KV cache of the whole context and the prefill's
     * activations), with a sampler.
     */
    static long requestMemory(LanguageModel model) {
        int context = model.config().contextLength();
        LlamaRequest largest = LlamaRequest.of(new int[Math.max(1, context - 1)], 1)
                .withSampler(SamplerConfig.builder().build());
        LlamaRequest longest = LlamaRequest.of(new int[1], Math.max(1, context - 1))
                .withSampler(SamplerConfig.builder().build());
        return Math.max(model.model().requestBytes(largest), model.model().requestBytes(longest));
    }

    @Override
    public LanguageModel model() {
        return model;
    }

    @Override
    public Completion submit(int[] prompt, GenerateOptions options, Duration deadline) {
        Objects.requireNonNull(prompt, "prompt");
        Objects.requireNonNull(options, "options");
        if (closed.get()) {
            throw new AdmissionRejectedException(AdmissionRejectedException.Reason.CLOSED, "the engine is closing");
        }
        LlamaRequest request = model.request(prompt, options);
        RequestOptions requestOptions = RequestOptions.defaults().maxTokens(request.maxTokens());
        if (deadline != null) {
            requestOptions = requestOptions.deadline(deadline);
        }
        TokenStream stream = session.submit(request, requestOptions);
        live.add(stream);
        stream.completion().whenComplete((outcome, error) -> live.remove(stream));
        if (closed.get()) {
            // Lost a race with close(): the drain may not have seen it; end it now.
            stream.cancel();
        }
        return model.start(streams.apply(stream), prompt, options);
    }

    @Override
    public EngineStats stats() {
        SessionStats s = session.stats();
        return new EngineStats(s.active(), s.queued(), maxActive, 0, 0, worker.memoryInUse(), 0, 0, 0);
    }

    @Override
    public void close() {
        close(Duration.ZERO);
        session.close();
    }

    @Override
    public List<Long> close(Duration drain) {
        Objects.requireNonNull(drain, "drain");
        closed.set(true);
        List<CompletableFuture<?>> pending = new ArrayList<>();
        for (TokenStream stream : live) {
            pending.add(stream.completion());
        }
        if (!pending.isEmpty() && drain.isPositive()) {
            try {
                CompletableFuture.allOf(pending.toArray(CompletableFuture[]::new))
                        .get(drain.toNanos(), TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                log.info("{} requests still running after the drain of {}; cancelling them", live.size(), drain);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (ExecutionException e) {
                throw new IllegalStateException(e.getCause()); // completion() never completes exceptionally
            }
        }
        return session.close(Duration.ofSeconds(5));
    }

    /** Configuration of a {@link SessionEngine}. */
    public static final class Builder {
        private final Worker worker;
        private final LanguageModel model;
        private int maxActive = 8;
        private int maxQueued = 64;

        private Builder(Worker worker, LanguageModel model) {
            this.worker = Objects.requireNonNull(worker, "worker");
            this.model = Objects.requireNonNull(model, "model");
        }

        /** Requests generating at once (default 8). */
        public Builder maxActive(int value) {
            if (value < 1) {
                throw new IllegalArgumentException("maxActive must be >= 1, was " + value);
            }
            maxActive = value;
            return this;
        }

        /** Admitted requests that may wait for a slot (default 64); beyond it, submit rejects. */
        public Builder maxQueued(int value) {
            if (value < 0) {
                throw new IllegalArgumentException("maxQueued must be >= 0, was " + value);
            }
            maxQueued = value;
            return this;
        }

        public SessionEngine build() {
            return new SessionEngine(this, UnaryOperator.identity());
        }

        /** For tests: each request's stream passes through {@code streams} before the completion wraps it. */
        SessionEngine build(UnaryOperator<TokenStream> streams) {
            return new SessionEngine(this, streams);
        }
    }
}
