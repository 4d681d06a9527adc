package dev.tandem.server;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.function.ToLongFunction;

import dev.tandem.Worker;
import dev.tandem.llm.Batcher;
import dev.tandem.llm.BatcherConfig;
import dev.tandem.llm.BatcherStats;
import dev.tandem.llm.Completion;
import dev.tandem.llm.GenerateOptions;
import dev.tandem.llm.LanguageModel;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.function.ToLongFunction;

/**
 * The {@link Engine} of continuous batching: every admitted request is a member of one
 * {@link Batcher}, so all running requests share each step and the weights are read once per
 * step for all of them. The batcher's admission is the engine's: {@code maxQueued} members
 * waiting ({@code QUEUE_FULL}), a context the KV pool could never hold ({@code TOO_LARGE}), a
 * closing batcher ({@code CLOSED}); a running member never runs out of KV blocks.
 *
 * <p>The worker and the model belong to the caller; closing the engine closes its batcher (whose
 * program then returns all its memory) and nothing else.
 */
public final class BatcherEngine implements Engine {
    private final Worker worker;
    private final Batcher batcher;

    private BatcherEngine(Worker worker, Batcher batcher) {
        this.worker = worker;
        this.batcher = batcher;
    }

    /** Starts a batcher of {@code model} (loaded onto {@code worker}) behind an engine. */
    public static BatcherEngine start(Worker worker, LanguageModel model, BatcherConfig config) {
        Objects.requireNonNull(worker, "worker");
        return new BatcherEngine(worker, Batcher.start(worker, model, config));
    }

    /** The batcher behind this engine. */
    public Batcher batcher() {
        return batcher;
    }

    @Override
    public LanguageModel model() {
        return batcher.model();
    }

    @Override
    public Completion submit(int[] prompt, GenerateOptions options, Duration deadline) {
        return batcher.submit(prompt, options, deadline);
    }

    /**
     * Where a first token's time goes inside the engine (the rest of a client's time to first
     * token is the server's and the network's): {@code tandem.engine.first.tokens}, and the
     * seconds summed over them of {@code tandem.engine.first.token.queue} (waiting to join),
     * {@code .schedule} (joined until the step of its last prompt row was planned) and {@code .step}
     * (that step until its token was delivered).
     */
    @Override
    public void bindMeters(MeterRegistry registry) {
        FunctionCounter.builder("tandem.engine.first.tokens", batcher, b -> b.stats().firstTokens())
                .description("Members whose first token was delivered").register(registry);
        firstTokenPhase(registry, "queue", "waiting to join the batch", BatcherStats::firstTokenQueueNanos);
        firstTokenPhase(registry, "schedule", "joined until the step of its last prompt row was planned",
                BatcherStats::firstTokenScheduleNanos);
        firstTokenPhase(registry, "step", "that step planned until its token was delivered",
                BatcherStats::firstTokenStepNanos);
    }

    private void firstTokenPhase(MeterRegistry registry, String phase, String description,
            ToLongFunction<BatcherStats> nanos) {
        FunctionCounter.builder("tandem.engine.first.token." + phase, batcher,
                        b -> nanos.applyAsLong(b.stats()) / 1e9)
                .description("Time to first token, summed over members: " + description).baseUnit("seconds")
                .register(registry);
    }

    @Override
    public EngineStats stats() {
        BatcherStats s = batcher.stats();
        return new EngineStats(s.active(), s.queued(), s.maxBatch(), s.kvBlocksInUse(), s.kvBlocks(),
                worker.memoryInUse(), s.kvBlocksCached(), s.cachedPromptTokens(), s.computedPromptTokens());
    }

    @Override
    public void close() {
        batcher.close();
    }

    @Override
    public List<Long> close(Duration drain) {
        return batcher.close(drain);
    }

    @Override
    public String toString() {
        return "BatcherEngine[" + batcher + "]";
    }
}
