package dev.tandem.llm;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.CpuDeviceConfig;
import dev.tandem.Status;
import dev.tandem.Worker;
import dev.tandem.llm.sampling.SamplerConfig;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Prefix caching in the batcher, on the embedded model: a member whose prompt begins with blocks
 * another member computed takes them and computes only the rest, and its tokens are exactly
 * those of a request of its own, whether the blocks come from a member still running, one gone,
 * or the cache was evicted under pressure; every round ends with every block free or cached.
 */
class PrefixCacheTest {
    static Worker worker;
    static LanguageModel model;
    static int blockSize;

    @BeforeAll
    static void load() {
        worker = Worker.create(CpuDeviceConfig.withCores(2));
        model = LanguageModel.load(worker, EmbeddedModel.path(), 1024);
        blockSize = model.model().options().kvBlockSize();
    }

    @AfterAll
    static void close() {
        worker.close();
    }

    static final String STORY = "One day, a little girl named Sue found a big red ball in the garden. She wanted to "
            + "show it to her mom, so she ran into the house. Her mom was in the kitchen making a cake. ";

    /** A shared prefix of at least {@code blocks} full blocks, then {@code suffix}. */
    static int[] prompt(int blocks, String suffix) {
        StringBuilder text = new StringBuilder();
        while (model.encode(text.toString()).length < blocks * blockSize + 8) {
            text.append(STORY);
        }
        return model.encode(text + suffix);
    }

    static int[] alone(int[] prompt, GenerateOptions options) {
        return BatcherTest.alone(prompt, options, worker, model);
    }

    static void assertIdle(Batcher batcher) {
        BatcherStats s = batcher.stats();
        assertThat(s.active()).isZero();
        assertThat(s.kvBlocksInUse()).isZero();
        assertThat(s.kvBlocksReserved()).isZero();
        batcher.checkPoolIdle();
    }

    @Test
    void aPromptThatBeginsWithAnotherTakesItsBlocksAndYieldsTheSameTokens() {
        GenerateOptions options = GenerateOptions.defaults().withMaxTokens(24).withSampler(SamplerConfig.GREEDY);
        int[] first = prompt(2, "Tom had a dog.");
        int[] second = prompt(2, "The sun was shining and");
        try (Batcher batcher = Batcher.start(worker, model, BatcherConfig.defaults())) {
            Completion a = batcher.submit(first, options, null);
            a.await();
            Completion b = batcher.submit(second, options, null);
            b.await();
            assertThat(a.cachedPromptTokens()).isZero();
            assertThat(b.cachedPromptTokens()).isEqualTo(2 * blockSize);
            assertThat(a.tokens()).containsExactly(alone(first, options));
            assertThat(b.tokens()).containsExactly(alone(second, options));
            BatcherStats s = batcher.stats();
            assertThat(s.cachedPromptTokens()).isEqualTo(2 * blockSize);
            assertThat(s.computedPromptTokens()).isEqualTo(first.length + second.length - 2L * blockSize);
            assertThat(s.kvBlocksCached()).isGreaterThanOrEqualTo(2);
            assertIdle(batcher);
        }
    }

    @Test
    void theSamePromptAgainComputesOnlyItsLastBlock() {
        GenerateOptions options = GenerateOptions.defaults().withMaxTokens(16).withSampler(SamplerConfig.GREEDY);
        int[] p = prompt(3, "");
        int[] exact = Arrays.copyOf(p, 3 * blockSize); // a prompt of whole blocks: its last must be recomputed
        try (Batcher batcher = Batcher.start(worker, model, BatcherConfig.defaults())) {
            batcher.submit(p, options, null).await();
            Completion again = batcher.submit(p, options, null);
            again.await();
            assertThat(again.cachedPromptTokens()).isEqualTo(3 * blockSize);
            assertThat(again.tokens()).containsExactly(alone(p, options));
            Completion whole = batcher.submit(exact, options, null);
            whole.await();
            assertThat(whole.cachedPromptTokens()).isEqualTo(2 * blockSize);
            assertThat(whole.tokens()).containsExactly(alone(exact, options));
            assertIdle(batcher);
        }
    }

    @Test
    void aConversationThatResendsItsHistoryTakesTheBlocksOfTheReplyToo() {
        GenerateOptions options = GenerateOptions.defaults().withMaxTokens(blockSize + 8).withIgnoreEos(true)
                .withSampler(SamplerConfig.GREEDY);
        int[] turn1 = prompt(1, "Tom had a dog.");
        try (Batcher batcher = Batcher.start(worker, model, BatcherConfig.defaults())) {
            Completion reply = batcher.submit(turn1, options, null);
            reply.await();
            int[] history = IntStream.concat(Arrays.stream(turn1), Arrays.stream(reply.tokens())).toArray();
            int[] turn2 = IntStream.concat(Arrays.stream(history), Arrays.stream(model.tokenizer().encode(
                    " Then they went home.", false, true))).toArray();
            Completion next = batcher.submit(turn2, options.withMaxTokens(16), null);
            next.await();
            // Every full block of the history was written (its last token's keys are written when
            // it is the input of a step), so all of them but a block holding the history's end are cached.
            int written = history.length - 1;
            assertThat(next.cachedPromptTokens()).isEqualTo(written / blockSize * blockSize)
                    .isGreaterThan(turn1.length / blockSize * blockSize);
            assertThat(next.tokens()).containsExactly(alone(turn2, options.withMaxTokens(16)));
            assertIdle(batcher);
        }
    }

    @Test
    void membersRunningTogetherShareBlocksAndOneCancelledLeavesTheOthersWhole() throws Exception {
        GenerateOptions options = GenerateOptions.defaults().withMaxTokens(48).withIgnoreEos(true)
                .withSampler(SamplerConfig.GREEDY);
        int[] owner = prompt(2, "Tom had a dog.");
        List<int[]> sharers = List.of(prompt(2, "Mia wanted to fly like a bird."), prompt(2, "The cat"),
                prompt(2, "Ben and his mom went to the store."));
        try (Batcher batcher = Batcher.start(worker, model, BatcherConfig.builder().maxBatch(4).build())) {
            Completion first = batcher.submit(owner, options.withMaxTokens(400), null);
            Iterator<Completion.Delta> it = first.iterator();
            it.next(); // the owner's prompt is in the cache and it decodes
            List<Completion> others = new ArrayList<>();
            for (int[] p : sharers) {
                others.add(batcher.submit(p, options, null));
            }
            List<Iterator<Completion.Delta>> joined = new ArrayList<>();
            for (Completion c : others) {
                joined.add(c.iterator());
                joined.getLast().next(); // joined, and decoding beside the owner
            }
            first.cancel();
            while (it.hasNext()) {
                it.next();
            }
            assertThat(first.outcome().status()).isEqualTo(Status.CANCELLED);
            for (int i = 0; i < sharers.size(); i++) {
                while (joined.get(i).hasNext()) {
                    joined.get(i).next();
                }
                assertThat(others.get(i).cachedPromptTokens()).isEqualTo(2 * blockSize);
                assertThat(others.get(i).tokens()).containsExactly(alone(sharers.get(i), options));
            }
            BatcherTest.awaitIdle(batcher);
            assertIdle(batcher);
        }
    }

    @Test
    void underPressureTheLeastRecentlyUsedPrefixesAreEvictedAndOutputsStayExact() throws Exception {
        GenerateOptions options = GenerateOptions.defaults().withMaxTokens(12).withIgnoreEos(true)
                .withSampler(SamplerConfig.GREEDY);
        Random random = new Random(7);
        String[] heads = {"Tom had a dog. ", "The cat sat. ", "Mia saw a bird. ", "Ben ran fast. ",
            "Sue had a ball. "};
        // Room for two members' contexts at a time: the cache of five families must be evicted over and over.
        int perMember = Math.ceilDiv(3 * blockSize + 64 + 12, blockSize);
        BatcherConfig config = BatcherConfig.builder().maxBatch(2).kvBlocks(2 * perMember).build();
        try (Batcher batcher = Batcher.start(worker, model, config)) {
            for (int round = 0; round < 3; round++) {
                List<int[]> prompts = new ArrayList<>();
                List<Completion> running = new ArrayList<>();
                for (int i = 0; i < 6; i++) {
                    String head = heads[random.nextInt(heads.length)];
                    int[] p = model.encode(prefixText(head, 2) + " Then " + i + " of round " + round + ".");
                    prompts.add(p);
                    running.add(batcher.submit(p, options, null));
                }
                for (int i = 0; i < prompts.size(); i++) {
                    running.get(i).await();
                    assertThat(running.get(i).tokens()).containsExactly(alone(prompts.get(i), options));
                }
                BatcherTest.awaitIdle(batcher);
                assertIdle(batcher);
            }
            BatcherStats s = batcher.stats();
            assertThat(s.kvBlocksEvicted()).isPositive();
            assertThat(s.cachedPromptTokens()).isPositive();
        }
    }

    /** A text of {@code head} repeated until it spans at least {@code blocks} blocks. */
    static String prefixText(String head, int blocks) {
        StringBuilder text = new StringBuilder(head);
        while (model.encode(text.toString()).length < blocks * blockSize + 4) {
            text.append(head);
        }
        return text.toString();
    }

    @Test
    void withTheCacheOffNothingIsTakenOrKept() {
        GenerateOptions options = GenerateOptions.defaults().withMaxTokens(8).withSampler(SamplerConfig.GREEDY);
        int[] p = prompt(2, "Tom had a dog.");
        try (Batcher batcher = Batcher.start(worker, model, BatcherConfig.builder().prefixCache(false).build())) {
            batcher.submit(p, options, null).await();
            Completion again = batcher.submit(p, options, null);
            again.await();
            assertThat(again.cachedPromptTokens()).isZero();
            assertThat(batcher.stats().kvBlocksCached()).isZero();
            assertThat(again.tokens()).containsExactly(alone(p, options));
            assertIdle(batcher);
        }
    }

    @Test
    void randomFamiliesOfPromptsConcurrentlyWithCancelsEndIdle() throws Exception {
        Random random = new Random(11);
        GenerateOptions options = GenerateOptions.defaults().withMaxTokens(10).withIgnoreEos(true)
                .withSampler(SamplerConfig.GREEDY);
        String[] families = {prefixText("Tom had a dog. ", 1), prefixText("The cat sat on a mat. ", 2), ""};
        try (Batcher batcher = Batcher.start(worker, model, BatcherConfig.builder().maxBatch(4).build())) {
            for (int round = 0; round < 4; round++) {
                List<int[]> prompts = new ArrayList<>();
                List<Completion> completions = new ArrayList<>();
                List<Boolean> cancelled = new ArrayList<>();
                for (int i = 0; i < 8; i++) {
                    int[] p = model.encode(families[random.nextInt(families.length)] + " Lily " + random.nextInt(50));
                    prompts.add(p);
                    completions.add(batcher.submit(p, options, null));
                    boolean cancel = random.nextInt(4) == 0;
                    cancelled.add(cancel);
                    if (cancel) {
                        completions.getLast().cancel();
                    }
                }
                List<CompletableFuture<String>> done = new ArrayList<>();
                for (Completion c : completions) {
                    done.add(CompletableFuture.supplyAsync(c::await, r -> Thread.ofVirtual().start(r)));
                }
                for (int i = 0; i < prompts.size(); i++) {
                    done.get(i).get(60, TimeUnit.SECONDS);
                    if (!cancelled.get(i)) {
                        assertThat(completions.get(i).tokens()).containsExactly(alone(prompts.get(i), options));
                    }
                }
                BatcherTest.awaitIdle(batcher);
                assertIdle(batcher);
            }
        }
    }
}
