package dev.tandem.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.CpuDeviceConfig;
import dev.tandem.Worker;
import dev.tandem.llm.BatcherConfig;
import dev.tandem.llm.Completion;
import dev.tandem.llm.EmbeddedModel;
import dev.tandem.llm.GenerateOptions;
import dev.tandem.llm.LanguageModel;
import dev.tandem.server.BatcherEngine;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * The reported hang of {@code Batcher.close()} during a cluster soak: more prompts than the batch
 * holds (32 greedy prompts of 400 tokens through batches of 8), closed after every member ended
 * (the reported case), while they run, and with {@code close(drain)} first and then
 * {@code close()} (what a worker's SIGTERM and {@code ClusterNode.close()} do); each must return
 * within 20 s, else the test fails with a thread dump. Opt-in
 * ({@code -Dtandem.cluster.batcherClose=true}): a reproducer for tandem-llm, whose owner fixes it
 * there. It has not failed here (3 runs of each case returned at once), so it guards nothing in CI.
 */
@EnabledIfSystemProperty(named = "tandem.cluster.batcherClose", matches = "true")
@Timeout(value = 300, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class BatcherCloseReproducerTest {
    private static final String[] OPENINGS = {"Once upon a time", "Lily and Ben went to the park.", "The cat",
        "Tom had a dog.", "There was a big tree in the garden.", "Mia wanted to fly like a bird.",
        "The sun was shining and", "Sam had a red ball."};

    /** How the batcher is closed once its 32 members were submitted. */
    enum Close {
        /** After every member ended: close(). */
        AFTER_ALL_ENDED,
        /** While they run: close(drain) with a short drain (a worker's SIGTERM), then close() (ClusterNode.close()). */
        DRAIN_THEN_CLOSE,
        /** While they run: close(). */
        WHILE_RUNNING
    }

    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.EnumSource(Close.class)
    void closeReturnsPromptly(Close how) throws Exception {
        for (int i = 0; i < 3; i++) {
            closeOnce(how);
        }
    }

    private void closeOnce(Close how) throws Exception {
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(1))) {
            LanguageModel model = LanguageModel.load(worker, EmbeddedModel.path());
            BatcherEngine engine = BatcherEngine.start(worker, model, BatcherConfig.builder().maxBatch(8).build());
            GenerateOptions options = GenerateOptions.defaults().withMaxTokens(400).withIgnoreEos(true);
            List<Completion> running = new ArrayList<>();
            for (int i = 0; i < 32; i++) {
                String p = OPENINGS[i % OPENINGS.length] + (i < OPENINGS.length ? "" : " " + (i / OPENINGS.length));
                running.add(engine.submit(model.encode(p), options, null));
            }
            if (how == Close.AFTER_ALL_ENDED) {
                for (Completion c : running) {
                    c.await();
                }
            } else {
                running.getFirst().stream().iterator().next(); // the batch is decoding
            }
            CompletableFuture<Void> closed = CompletableFuture.runAsync(() -> {
                if (how == Close.DRAIN_THEN_CLOSE) {
                    engine.close(java.time.Duration.ofMillis(200));
                }
                engine.close();
            }, r -> Thread.ofPlatform().daemon().name("close").start(r));
            try {
                closed.get(20, TimeUnit.SECONDS);
            } catch (java.util.concurrent.TimeoutException e) {
                StringBuilder dump = new StringBuilder();
                Thread.getAllStackTraces().forEach((t, stack) -> {
                    dump.append('\n').append(t).append('\n');
                    for (StackTraceElement s : stack) {
                        dump.append("    at ").append(s).append('\n');
                    }
                });
                throw new AssertionError("Batcher.close() (" + how + ") did not return within 20 s:" + dump, e);
            }
            assertThat(closed).isDone();
        }
    }
}
