package dev.tandem.server;

import dev.tandem.Worker;
import dev.tandem.llm.Batcher;
import dev.tandem.llm.BatcherConfig;
import dev.tandem.llm.BatcherStats;
import dev.tandem.llm.Completion;
import dev.tandem.llm.GenerateOptions;
import dev.tandem.llm.LanguageModel;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

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
