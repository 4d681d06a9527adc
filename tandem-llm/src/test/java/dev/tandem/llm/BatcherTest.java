package dev.tandem.llm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tandem.AdmissionRejectedException;
import dev.tandem.CpuDeviceConfig;
import dev.tandem.Outcome;
import dev.tandem.Status;
import dev.tandem.Token;
import dev.tandem.Worker;
import dev.tandem.kernels.TensorType;
import dev.tandem.llm.model.LlamaConfig;
import dev.tandem.llm.reference.RandomWeights;
import dev.tandem.llm.sampling.SamplerConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The continuous batcher on the embedded model: every member's tokens equal what a request of
 * its own yields, whatever joins, leaves, pauses or is chunked around it, and every block, slot
 * and byte comes back.
 */
class BatcherTest {
    static Worker worker;
    static LanguageModel model;
    static long idleMemory;

    static final String[] PROMPTS = {
        "Once upon a time",
        "Lily and Ben went to the park.",
        "The cat",
        "One day, a little girl named Sue found a big red ball in the garden. She wanted to show it to her mom",
        "Tom had a dog.",
        "There was a big tree in the garden.",
        "Mia wanted to fly like a bird.",
        "The sun was shining and",
        "Ben and his mom went to the store to buy some milk.",
    };

    @BeforeAll
    static void load() {
        worker = Worker.create(CpuDeviceConfig.withCores(2));
        model = LanguageModel.load(worker, EmbeddedModel.path(), 512);
        idleMemory = worker.memoryInUse();
    }

    @AfterAll
    static void close() {
        worker.close();
    }

    /** What a request of its own yields: the reference for every member. */
    static int[] alone(int[] prompt, GenerateOptions options) {
        return alone(prompt, options, worker, model);
    }

    static int[] alone(int[] prompt, GenerateOptions options, Worker worker, LanguageModel model) {
        Completion c = model.start(worker.run(model.program(), model.request(prompt, options),
                model.runOptions(options)), prompt, options);
        c.await();
        return c.tokens();
    }

    /** Waits until every member that ended has left at a step boundary (the program drops them there). */
    static void awaitIdle(Batcher batcher) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            BatcherStats s = batcher.stats();
            if (s.active() == 0 && s.queued() == 0 && s.kvBlocksInUse() == 0) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("the batcher did not become idle: " + s);
            }
            java.util.concurrent.locks.LockSupport.parkNanos(1_000_000); // a poll interval, not a synchronisation
        }
    }

    static void assertIdle(Batcher batcher) {
        BatcherStats s = batcher.stats();
        assertThat(s.active()).isZero();
        assertThat(s.queued()).isZero();
        assertThat(s.kvBlocksInUse()).isZero();
        assertThat(s.kvBlocksReserved()).isZero();
    }

    @Test
    void concurrentMembersYieldTheTokensOfRequestsOfTheirOwn() throws Exception {
        GenerateOptions options = GenerateOptions.defaults().withMaxTokens(60);
        try (Batcher batcher = Batcher.start(worker, model, BatcherConfig.builder().maxBatch(8).build())) {
            List<Completion> completions = new ArrayList<>();
            for (String p : PROMPTS) {
                completions.add(batcher.submit(model.encode(p), options, null)); // 9 > maxBatch: one waits
            }
            List<CompletableFuture<String>> texts = new ArrayList<>();
            for (Completion c : completions) {
                texts.add(CompletableFuture.supplyAsync(c::await, r -> Thread.ofVirtual().start(r)));
            }
            for (int i = 0; i < PROMPTS.length; i++) {
                texts.get(i).get(60, TimeUnit.SECONDS);
                int[] prompt = model.encode(PROMPTS[i]);
                assertThat(completions.get(i).tokens()).as(PROMPTS[i]).containsExactly(alone(prompt, options));
                assertThat(completions.get(i).outcome().status()).isEqualTo(Status.COMPLETED);
            }
            BatcherStats s = batcher.stats();
            assertThat(s.decodeRows()).as("steps were shared").isGreaterThan(s.steps());
            assertIdle(batcher);
        }
        assertThat(worker.memoryInUse()).isEqualTo(idleMemory);
        assertThat(worker.liveFeeds()).isZero();
    }

    @Test
    void aLongPromptIsChunkedAlongsideRunningDecodes() throws Exception {
        GenerateOptions options = GenerateOptions.defaults().withMaxTokens(40).withIgnoreEos(true);
        int[] longPrompt = model.encode(PROMPTS[3] + " " + PROMPTS[1] + " " + PROMPTS[3]);
        assertThat(longPrompt.length).isGreaterThan(40);
        BatcherConfig config = BatcherConfig.builder().maxBatch(2).tokenBudget(8).build();
        try (Batcher batcher = Batcher.start(worker, model, config)) {
            Completion first = batcher.submit(model.encode(PROMPTS[0]), options, null);
            Iterator<Completion.Delta> it = first.iterator();
            it.next(); // the first member decodes
            Completion second = batcher.submit(longPrompt, options, null);
            List<Integer> firstTokens = new ArrayList<>(List.of(first.tokens()[0]));
            while (it.hasNext()) {
                Completion.Delta d = it.next();
                if (d.token() >= 0) {
                    firstTokens.add(d.token());
                }
            }
            second.await();
            assertThat(first.tokens()).containsExactly(alone(model.encode(PROMPTS[0]), options));
            assertThat(second.tokens()).containsExactly(alone(longPrompt, options));
            BatcherStats s = batcher.stats();
            assertThat(s.mixedSteps()).as("prompt chunks rode along with decodes").isGreaterThanOrEqualTo(
                    (longPrompt.length - 7) / 7);
            assertThat(s.prefillRows()).isEqualTo(longPrompt.length + model.encode(PROMPTS[0]).length);
            assertIdle(batcher);
        }
    }

    @Test
    void aCancelledMemberLeavesAtOnceAndGivesItsBlocksBack() throws Exception {
        GenerateOptions options = GenerateOptions.defaults().withMaxTokens(400).withIgnoreEos(true);
        try (Batcher batcher = Batcher.start(worker, model, BatcherConfig.builder().maxBatch(2).build())) {
            Completion doomed = batcher.submit(model.encode(PROMPTS[1]), options, null);
            GenerateOptions shortOptions = GenerateOptions.defaults().withMaxTokens(50);
            Completion other = batcher.submit(model.encode(PROMPTS[2]), shortOptions, null);
            Iterator<Completion.Delta> it = doomed.iterator();
            for (int i = 0; i < 5; i++) {
                it.next();
            }
            assertThat(batcher.stats().kvBlocksInUse()).isPositive();
            doomed.cancel();
            Outcome outcome = doomed.stream().completion().get(10, TimeUnit.SECONDS);
            assertThat(outcome.status()).isEqualTo(Status.CANCELLED);
            assertThat(outcome.tokens()).isEqualTo(5);
            assertThat(other.await()).isNotEmpty();
            assertThat(other.tokens()).containsExactly(alone(model.encode(PROMPTS[2]), shortOptions));
            assertIdle(batcher);
        }
    }

    @Test
    void aSlowReaderPausesOnlyItsOwnMember() throws Exception {
        GenerateOptions options = GenerateOptions.defaults().withMaxTokens(80).withIgnoreEos(true);
        BatcherConfig config = BatcherConfig.builder().maxBatch(2).streamBuffer(4).build();
        try (Batcher batcher = Batcher.start(worker, model, config)) {
            Completion idle = batcher.submit(model.encode(PROMPTS[4]), options, null); // never read until the end
            Completion busy = batcher.submit(model.encode(PROMPTS[0]), options, null);
            busy.await(); // all 80 tokens while the other holds at most 4 unread
            assertThat(busy.tokens()).hasSize(80);
            assertThat(batcher.stats().pausedRows()).isPositive();
            assertThat(idle.stream().isDone()).isFalse();
            idle.await();
            assertThat(idle.tokens()).containsExactly(alone(model.encode(PROMPTS[4]), options));
            assertIdle(batcher);
        }
    }

    @Test
    void theSameSeedGivesTheSameTextAndMatchesARequestOfItsOwn() throws Exception {
        SamplerConfig sampler = SamplerConfig.builder().temperature(0.8f).topK(40).topP(0.9f).seed(42).build();
        GenerateOptions options = GenerateOptions.defaults().withMaxTokens(50).withSampler(sampler);
        int[] prompt = model.encode(PROMPTS[0]);
        try (Batcher batcher = Batcher.start(worker, model, BatcherConfig.defaults())) {
            Completion a = batcher.submit(prompt, options, null);
            Completion b = batcher.submit(prompt, options, null);
            Completion other = batcher.submit(prompt, options.withSampler(sampler.toBuilder().seed(7).build()), null);
            assertThat(a.await()).isEqualTo(b.await());
            assertThat(a.tokens()).containsExactly(alone(prompt, options));
            other.await();
            assertThat(other.tokens()).isNotEqualTo(a.tokens());
        }
    }

    @Test
    void aMemberAtTheEndOfTheContextFinishesWithLength() throws Exception {
        try (Worker small = Worker.create(CpuDeviceConfig.withCores(1))) {
            LanguageModel shortModel = LanguageModel.load(small, EmbeddedModel.path(), 48);
            try (Batcher batcher = Batcher.start(small, shortModel, BatcherConfig.builder().maxBatch(2).build())) {
                int[] prompt = shortModel.encode(PROMPTS[1]);
                Completion c = batcher.submit(prompt, GenerateOptions.defaults().withMaxTokens(1000)
                        .withIgnoreEos(true), null);
                c.await();
                assertThat(c.finishReason()).isEqualTo(FinishReason.LENGTH);
                assertThat(c.tokens()).hasSize(48 - prompt.length);
            }
        }
    }

    @Test
    void admissionQueuesThenRejectsWithAReason() throws Exception {
        GenerateOptions options = GenerateOptions.defaults().withMaxTokens(200).withIgnoreEos(true);
        BatcherConfig config = BatcherConfig.builder().maxBatch(1).maxQueued(1).build();
        try (Batcher batcher = Batcher.start(worker, model, config)) {
            Completion running = batcher.submit(model.encode(PROMPTS[0]), options, null);
            running.iterator().next(); // it holds the one slot
            Completion queued = batcher.submit(model.encode(PROMPTS[1]), options, null);
            assertThat(batcher.stats().queued()).isEqualTo(1);
            assertThatThrownBy(() -> batcher.submit(model.encode(PROMPTS[2]), options, null))
                    .isInstanceOfSatisfying(AdmissionRejectedException.class,
                            e -> assertThat(e.reason()).isEqualTo(AdmissionRejectedException.Reason.QUEUE_FULL));
            queued.cancel();
            assertThat(queued.stream().completion().get(10, TimeUnit.SECONDS).status()).isEqualTo(Status.CANCELLED);
            running.cancel();
            running.stream().completion().get(10, TimeUnit.SECONDS);
            assertIdle(batcher);
        }
        BatcherConfig tiny = BatcherConfig.builder().kvBlocks(1).build();
        int blockSize = model.model().options().kvBlockSize();
        try (Batcher batcher = Batcher.start(worker, model, tiny)) {
            GenerateOptions beyondOneBlock = options.withMaxTokens(blockSize + 1);
            assertThatThrownBy(() -> batcher.submit(model.encode(PROMPTS[0]), beyondOneBlock, null))
                    .isInstanceOfSatisfying(AdmissionRejectedException.class,
                            e -> assertThat(e.reason()).isEqualTo(AdmissionRejectedException.Reason.TOO_LARGE))
                    .hasMessageContaining("the pool has 1");
            assertThatThrownBy(() -> batcher.submit(new int[0], options, null))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("empty");
            assertThatThrownBy(() -> batcher.submit(new int[] {1, 1_000_000}, options, null))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("prompt token 1");
            assertThatThrownBy(() -> batcher.submit(new int[600], options, null))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no room");
        }
    }

    @Test
    void aDeadlineEndsAMemberQueuedOrRunning() throws Exception {
        GenerateOptions options = GenerateOptions.defaults().withMaxTokens(400).withIgnoreEos(true);
        BatcherConfig config = BatcherConfig.builder().maxBatch(1).streamBuffer(2).build();
        try (Batcher batcher = Batcher.start(worker, model, config)) {
            Completion running = batcher.submit(model.encode(PROMPTS[0]), options, Duration.ofMillis(300));
            Completion queued = batcher.submit(model.encode(PROMPTS[1]), options, Duration.ofMillis(100));
            assertThat(queued.stream().completion().get(10, TimeUnit.SECONDS).status())
                    .isEqualTo(Status.DEADLINE_EXCEEDED);
            assertThat(running.stream().completion().get(10, TimeUnit.SECONDS).status())
                    .isEqualTo(Status.DEADLINE_EXCEEDED); // its reader never read: it paused, then its deadline passed
            assertIdle(batcher);
        }
    }

    @Test
    void closingEndsEveryMemberAndRefusesNewOnes() throws Exception {
        GenerateOptions options = GenerateOptions.defaults().withMaxTokens(400).withIgnoreEos(true);
        Batcher batcher = Batcher.start(worker, model, BatcherConfig.builder().maxBatch(1).build());
        Completion running = batcher.submit(model.encode(PROMPTS[0]), options, null);
        Completion queued = batcher.submit(model.encode(PROMPTS[1]), options, null);
        running.iterator().next();
        batcher.close();
        assertThat(running.stream().completion().get(10, TimeUnit.SECONDS).status()).isEqualTo(Status.CANCELLED);
        assertThat(queued.stream().completion().get(10, TimeUnit.SECONDS).status()).isEqualTo(Status.CANCELLED);
        assertThatThrownBy(() -> batcher.submit(model.encode(PROMPTS[2]), options, null))
                .isInstanceOfSatisfying(AdmissionRejectedException.class,
                        e -> assertThat(e.reason()).isEqualTo(AdmissionRejectedException.Reason.CLOSED));
        assertThat(batcher.programCompletion().get(10, TimeUnit.SECONDS).status()).isEqualTo(Status.COMPLETED);
        assertThat(worker.memoryInUse()).isEqualTo(idleMemory);
    }

    @Test
    void aDrainingCloseLetsMembersFinish() throws Exception {
        GenerateOptions options = GenerateOptions.defaults().withMaxTokens(30).withIgnoreEos(true);
        Batcher batcher = Batcher.start(worker, model, BatcherConfig.builder().maxBatch(1).build());
        Completion a = batcher.submit(model.encode(PROMPTS[0]), options, null);
        Completion b = batcher.submit(model.encode(PROMPTS[1]), options, null);
        CompletableFuture<String> readA = CompletableFuture.supplyAsync(a::await, r -> Thread.ofVirtual().start(r));
        CompletableFuture<String> readB = CompletableFuture.supplyAsync(b::await, r -> Thread.ofVirtual().start(r));
        assertThat(batcher.close(Duration.ofSeconds(30))).isEmpty();
        readA.get(10, TimeUnit.SECONDS);
        readB.get(10, TimeUnit.SECONDS);
        assertThat(a.tokens()).hasSize(30);
        assertThat(b.tokens()).hasSize(30);
        assertThat(a.outcome().status()).isEqualTo(Status.COMPLETED);
    }

    @Test
    void aDrainThatRunsOutCancelsAndNamesWhatWasLeft() throws Exception {
        GenerateOptions options = GenerateOptions.defaults().withMaxTokens(400).withIgnoreEos(true);
        Batcher batcher = Batcher.start(worker, model, BatcherConfig.builder().maxBatch(1).streamBuffer(2).build());
        Completion stuck = batcher.submit(model.encode(PROMPTS[0]), options, null); // never read: it pauses
        Completion queued = batcher.submit(model.encode(PROMPTS[1]), options, null);
        List<Long> cut = batcher.close(Duration.ofMillis(200));
        assertThat(cut).containsExactly(stuck.stream().requestId(), queued.stream().requestId());
        assertThat(stuck.stream().completion().get(10, TimeUnit.SECONDS).status()).isEqualTo(Status.CANCELLED);
        assertThat(queued.stream().completion().get(10, TimeUnit.SECONDS).status()).isEqualTo(Status.CANCELLED);
        assertThat(worker.memoryInUse()).isEqualTo(idleMemory);
    }

    @Test
    void aMemberStreamIsAPublisherWithDemand() throws Exception {
        GenerateOptions options = GenerateOptions.defaults().withMaxTokens(20).withIgnoreEos(true);
        try (Batcher batcher = Batcher.start(worker, model, BatcherConfig.defaults())) {
            Completion c = batcher.submit(model.encode(PROMPTS[0]), options, null);
            List<Integer> got = new ArrayList<>();
            CompletableFuture<Void> done = new CompletableFuture<>();
            c.stream().subscribe(new java.util.concurrent.Flow.Subscriber<Token>() {
                java.util.concurrent.Flow.Subscription s;

                @Override
                public void onSubscribe(java.util.concurrent.Flow.Subscription subscription) {
                    s = subscription;
                    s.request(1);
                }

                @Override
                public void onNext(Token item) {
                    got.add(item.asInt());
                    s.request(1);
                }

                @Override
                public void onError(Throwable throwable) {
                    done.completeExceptionally(throwable);
                }

                @Override
                public void onComplete() {
                    done.complete(null);
                }
            });
            done.get(30, TimeUnit.SECONDS);
            assertThat(got).containsExactlyElementsOf(
                    java.util.Arrays.stream(alone(model.encode(PROMPTS[0]), options)).boxed().toList());
            Outcome outcome = c.stream().completion().get(10, TimeUnit.SECONDS);
            assertThat(outcome.tokens()).isEqualTo(20);
            assertThat(outcome.timeToFirstToken()).isNotNull();
        }
    }

    @Test
    void aStopStringEndsItsMemberWithStopAndFreesItsBlocks() throws Exception {
        int[] prompt = model.encode(PROMPTS[0]);
        String full = model.start(worker.run(model.program(), model.request(prompt,
                GenerateOptions.defaults().withMaxTokens(60)), model.runOptions(GenerateOptions.defaults()
                .withMaxTokens(60))), prompt, GenerateOptions.defaults().withMaxTokens(60)).await();
        String stop = full.substring(full.length() / 2, full.length() / 2 + 4);
        try (Batcher batcher = Batcher.start(worker, model, BatcherConfig.defaults())) {
            Completion c = batcher.submit(prompt, GenerateOptions.defaults().withMaxTokens(60)
                    .withStop(List.of(stop)), null);
            String text = c.await();
            assertThat(c.finishReason()).isEqualTo(FinishReason.STOP);
            assertThat(c.stopString()).isEqualTo(stop);
            assertThat(full).startsWith(text);
            assertThat(text).doesNotContain(stop);
            c.stream().completion().get(10, TimeUnit.SECONDS);
            assertIdle(batcher);
        }
    }

    @Test
    void q8MembersYieldTheTokensOfRequestsOfTheirOwn(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws Exception {
        LlamaConfig shape = new LlamaConfig(128, 2, 4, 2, 256, 512, 256, 10000f, 1e-5f, TensorType.F32);
        java.nio.file.Path file = dir.resolve("q8.gguf");
        new dev.tandem.llm.gguf.GgufCheckpointWriter(new RandomWeights(shape, 5))
                .matrixType(dev.tandem.llm.gguf.GgmlType.Q8_0).vocabularyFrom(EmbeddedModel.path()).write(file);
        try (Worker w = Worker.create(CpuDeviceConfig.withCores(2))) {
            LanguageModel q8 = LanguageModel.load(w, file, 256);
            assertThat(q8.config().weightType()).isEqualTo(TensorType.Q8_0);
            GenerateOptions options = GenerateOptions.defaults().withMaxTokens(24).withIgnoreEos(true);
            try (Batcher batcher = Batcher.start(w, q8, BatcherConfig.builder().maxBatch(8).build())) {
                List<Completion> completions = new ArrayList<>();
                for (int i = 0; i < 8; i++) {
                    completions.add(batcher.submit(q8.encode(PROMPTS[i]), options, null));
                }
                for (int i = 0; i < 8; i++) {
                    completions.get(i).await();
                    int[] prompt = q8.encode(PROMPTS[i]);
                    Completion alone = q8.start(w.run(q8.program(), q8.request(prompt, options),
                            q8.runOptions(options)), prompt, options);
                    alone.await();
                    assertThat(completions.get(i).tokens()).as(PROMPTS[i]).containsExactly(alone.tokens());
                }
            }
        }
    }
}
