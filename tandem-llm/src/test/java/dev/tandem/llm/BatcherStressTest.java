package dev.tandem.llm;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.AdmissionRejectedException;
import dev.tandem.CpuDeviceConfig;
import dev.tandem.Outcome;
import dev.tandem.Status;
import dev.tandem.StreamTerminatedException;
import dev.tandem.Token;
import dev.tandem.Worker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A randomized stress of the batcher: rounds of members with random prompts and token limits,
 * fast, slow, subscribing and never-reading consumers, cancels after a random token, random
 * deadlines, on batchers of random size, budget, stream buffer and run-ahead, with some
 * members rejected by a small queue. Afterwards every stream ended exactly once with a status
 * its plan allows, every stream's tokens are a prefix of the greedy tokens of its prompt alone
 * (all of them up to its limit or EOS when it completed), and every block, slot, feed and byte
 * is back.
 *
 * <p>CI runs {@value #CI_ROUNDS} rounds; {@code -Dtandem.long=true} runs 10 times more.
 */
@Timeout(value = 600, unit = TimeUnit.SECONDS)
class BatcherStressTest {
    static final int CI_ROUNDS = 12;
    static final int LIMIT = 48;

    static Worker worker;
    static LanguageModel model;
    static int[][] prompts;
    static int[][] references;

    enum Consumer { FAST, SLOW, SUBSCRIBER, NEVER_READS }

    record Plan(int prompt, int maxTokens, Consumer consumer, int cancelAfter, long deadlineMillis) {}

    @BeforeAll
    static void load() {
        worker = Worker.create(CpuDeviceConfig.withCores(2));
        model = LanguageModel.load(worker, EmbeddedModel.path(), 512);
        prompts = new int[BatcherTest.PROMPTS.length][];
        references = new int[prompts.length][];
        GenerateOptions options = GenerateOptions.defaults().withMaxTokens(LIMIT);
        for (int i = 0; i < prompts.length; i++) {
            prompts[i] = model.encode(BatcherTest.PROMPTS[i]);
            Completion c = model.start(worker.run(model.program(), model.request(prompts[i], options),
                    model.runOptions(options)), prompts[i], options);
            c.await();
            references[i] = c.tokens();
        }
    }

    @AfterAll
    static void close() {
        worker.close();
    }

    @Test
    void everyMemberEndsOnceWithAPrefixOfItsOwnTokensAndNothingLeaks() throws Exception {
        int rounds = Boolean.getBoolean("tandem.long") ? CI_ROUNDS * 10 : CI_ROUNDS;
        SplittableRandom random = new SplittableRandom(20261201L);
        long idle = worker.memoryInUse();
        Set<Status> seen = EnumSet.noneOf(Status.class);
        int rejected = 0;
        for (int round = 0; round < rounds; round++) {
            int maxBatch = 1 + random.nextInt(8);
            BatcherConfig config = BatcherConfig.builder().maxBatch(maxBatch).maxQueued(random.nextInt(16))
                    .tokenBudget(maxBatch + 1 + random.nextInt(48)).streamBuffer(1 + random.nextInt(8))
                    .runAhead(1 + random.nextInt(3)).prefill(random.nextBoolean()
                            ? BatcherConfig.PrefillOrder.SHORTEST_FIRST : BatcherConfig.PrefillOrder.ARRIVAL)
                    .build();
            List<Plan> plans = new ArrayList<>();
            int members = 4 + random.nextInt(20);
            for (int i = 0; i < members; i++) {
                Consumer consumer = Consumer.values()[random.nextInt(Consumer.values().length)];
                int cancelAfter = random.nextInt(4) == 0 ? random.nextInt(LIMIT) : -1;
                long deadline = consumer == Consumer.NEVER_READS || random.nextInt(5) == 0
                        ? 5 + random.nextInt(200) : 0;
                plans.add(new Plan(random.nextInt(prompts.length), 1 + random.nextInt(LIMIT), consumer, cancelAfter,
                        deadline));
            }
            Batcher batcher = Batcher.start(worker, model, config);
            List<CompletableFuture<Void>> checks = new ArrayList<>();
            Set<Long> ended = ConcurrentHashMap.newKeySet();
            for (Plan plan : plans) {
                Completion c;
                try {
                    c = batcher.submit(prompts[plan.prompt()], GenerateOptions.defaults().withMaxTokens(
                            plan.maxTokens()), plan.deadlineMillis() > 0 ? Duration.ofMillis(plan.deadlineMillis())
                            : null);
                } catch (AdmissionRejectedException e) {
                    assertThat(e.reason()).isEqualTo(AdmissionRejectedException.Reason.QUEUE_FULL);
                    rejected++;
                    continue;
                }
                CompletableFuture<Void> check = new CompletableFuture<>();
                checks.add(check);
                Thread.ofVirtual().start(() -> {
                    try {
                        List<Integer> got = consume(c, plan);
                        Outcome outcome = c.stream().completion().get(60, TimeUnit.SECONDS);
                        assertThat(ended.add(outcome.requestId())).as("one end per stream").isTrue();
                        verify(plan, got, outcome);
                        seen.add(outcome.status());
                        check.complete(null);
                    } catch (Throwable t) {
                        check.completeExceptionally(new AssertionError(plan + ": " + t, t));
                    }
                });
            }
            for (CompletableFuture<Void> check : checks) {
                check.get(120, TimeUnit.SECONDS);
            }
            BatcherStats s = batcher.stats();
            assertThat(s.active()).isZero();
            assertThat(s.queued()).isZero();
            assertThat(s.kvBlocksInUse()).isZero();
            assertThat(s.kvBlocksReserved()).isZero();
            batcher.close();
            assertThat(worker.memoryInUse()).as("device memory after round %d", round).isEqualTo(idle);
            assertThat(worker.liveFeeds()).isZero();
        }
        assertThat(seen).contains(Status.COMPLETED, Status.CANCELLED, Status.DEADLINE_EXCEEDED);
        assertThat(rejected).as("the queue bound was exercised").isPositive();
    }

    /** The raw token ids the consumer received, EOS included. */
    private static List<Integer> consume(Completion c, Plan plan) throws Exception {
        List<Integer> got = new ArrayList<>();
        switch (plan.consumer()) {
            case FAST, SLOW -> {
                try {
                    for (Token t : c.stream()) {
                        got.add(t.asInt());
                        if (got.size() == plan.cancelAfter()) {
                            c.cancel();
                        }
                        if (plan.consumer() == Consumer.SLOW) {
                            Thread.sleep(1); // a slow reader, not a synchronisation
                        }
                    }
                } catch (StreamTerminatedException expected) {
                    // checked through the outcome
                }
            }
            case SUBSCRIBER -> {
                CompletableFuture<Void> done = new CompletableFuture<>();
                SplittableRandom demand = new SplittableRandom(plan.hashCode());
                c.stream().subscribe(new Flow.Subscriber<Token>() {
                    Flow.Subscription s;
                    long left;

                    @Override
                    public void onSubscribe(Flow.Subscription subscription) {
                        s = subscription;
                        left = 1 + demand.nextInt(4);
                        s.request(left);
                    }

                    @Override
                    public void onNext(Token item) {
                        got.add(item.asInt());
                        if (got.size() == plan.cancelAfter()) {
                            s.cancel(); // no signal follows a cancel (rule 3.13)
                            done.complete(null);
                            return;
                        }
                        if (--left == 0) {
                            left = 1 + demand.nextInt(4);
                            s.request(left);
                        }
                    }

                    @Override
                    public void onError(Throwable throwable) {
                        done.complete(null);
                    }

                    @Override
                    public void onComplete() {
                        done.complete(null);
                    }
                });
                done.get(120, TimeUnit.SECONDS);
            }
            case NEVER_READS -> c.stream().completion().get(120, TimeUnit.SECONDS); // its deadline ends it
        }
        return got;
    }

    private static void verify(Plan plan, List<Integer> got, Outcome outcome) {
        int[] reference = references[plan.prompt()];
        int eos = model.eos();
        // What this member alone yields: the reference up to its limit, then EOS if the reference ended there.
        List<Integer> expected = new ArrayList<>();
        for (int i = 0; i < Math.min(plan.maxTokens(), reference.length); i++) {
            expected.add(reference[i]);
        }
        if (reference.length < LIMIT && plan.maxTokens() > reference.length) {
            expected.add(eos);
        }
        assertThat(got.size()).isLessThanOrEqualTo(expected.size());
        assertThat(got).as("a prefix of its own tokens").isEqualTo(expected.subList(0, got.size()));
        assertThat(outcome.tokens()).as("the outcome counts what the reader received")
                .isEqualTo(plan.consumer() == Consumer.NEVER_READS ? outcome.tokens() : got.size());
        switch (outcome.status()) {
            case COMPLETED -> {
                if (plan.consumer() != Consumer.NEVER_READS) {
                    assertThat(got).as("a completed member got everything").isEqualTo(expected);
                }
            }
            case CANCELLED -> assertThat(plan.cancelAfter()).as("only a cancelling consumer is cancelled")
                    .isPositive();
            case DEADLINE_EXCEEDED -> assertThat(plan.deadlineMillis()).isPositive();
            case FAILED -> throw new AssertionError("failed: " + outcome.cause(), outcome.cause());
        }
        assertThat(Arrays.asList(Status.values())).contains(outcome.status());
    }
}
