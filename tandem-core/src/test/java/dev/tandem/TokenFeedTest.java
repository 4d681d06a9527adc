package dev.tandem;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class TokenFeedTest {
    private final Worker worker = Worker.create(CpuDeviceConfig.withCores(1));

    @AfterEach
    void close() {
        worker.close();
    }

    @Test
    void tokensArriveInOrderAndTheCompletionWaitsForRelease() throws Exception {
        TokenFeed feed = TokenFeed.builder(worker).name("ordered").build();
        feed.started();
        for (int i = 0; i < 5; i++) {
            assertThat(feed.offerInt(10 + i)).isEqualTo(i + 1);
        }
        assertThat(feed.complete()).isTrue();
        assertThat(feed.complete()).isFalse();
        List<Integer> seen = new ArrayList<>();
        List<Long> steps = new ArrayList<>();
        for (Token t : feed.stream()) {
            seen.add(t.asInt());
            steps.add(t.step());
            assertThat(t.requestId()).isEqualTo(feed.id());
        }
        assertThat(seen).containsExactly(10, 11, 12, 13, 14);
        assertThat(steps).containsExactly(0L, 1L, 2L, 3L, 4L);
        assertThat(feed.stream().isDone()).isTrue();
        assertThat(feed.completion()).isNotDone();
        assertThat(worker.liveFeeds()).isEqualTo(1);
        feed.release();
        Outcome outcome = feed.completion().get(5, TimeUnit.SECONDS);
        assertThat(outcome.status()).isEqualTo(Status.COMPLETED);
        assertThat(outcome.tokens()).isEqualTo(5);
        assertThat(outcome.timeToFirstToken()).isNotNull();
        assertThat(outcome.total()).isGreaterThanOrEqualTo(outcome.timeToFirstToken());
        assertThat(outcome.queued()).isLessThanOrEqualTo(outcome.timeToFirstToken());
        assertThat(worker.liveFeeds()).isZero();
        assertThat(feed.offerInt(99)).isEqualTo(-1);
    }

    @Test
    void aCancelByTheReaderTellsTheProducerAndDropsLaterTokens() throws Exception {
        CountDownLatch changed = new CountDownLatch(1);
        AtomicInteger changes = new AtomicInteger();
        TokenFeed feed = TokenFeed.builder(worker).onChange(() -> {
            changes.incrementAndGet();
            changed.countDown();
        }).build();
        feed.offerInt(1);
        feed.offerInt(2);
        var it = feed.stream().iterator();
        assertThat(it.next().asInt()).isEqualTo(1);
        assertThat(changes.get()).isEqualTo(1); // the take
        feed.stream().cancel();
        assertThat(feed.isEnded()).isTrue();
        assertThat(feed.status()).isEqualTo(Status.CANCELLED);
        assertThat(changes.get()).isEqualTo(2); // and the end
        assertThat(feed.offerInt(3)).isEqualTo(-1);
        assertThatThrownBy(it::hasNext).isInstanceOf(StreamTerminatedException.class);
        feed.release();
        Outcome outcome = feed.completion().get(5, TimeUnit.SECONDS);
        assertThat(outcome.status()).isEqualTo(Status.CANCELLED);
        assertThat(outcome.tokens()).as("only what the reader received").isEqualTo(1);
    }

    @Test
    void unreadCountsTokensTheReaderHasNotTaken() throws Exception {
        TokenFeed feed = TokenFeed.builder(worker).build();
        feed.offerInt(1);
        feed.offerInt(2);
        feed.offerInt(3);
        assertThat(feed.unread()).isEqualTo(3);
        assertThat(feed.stream().poll(Duration.ofSeconds(1)).asInt()).isEqualTo(1);
        assertThat(feed.unread()).isEqualTo(2);
        assertThat(feed.offered()).isEqualTo(3);
        feed.release();
    }

    @Test
    void theDeadlineEndsTheFeed() throws Exception {
        CountDownLatch changed = new CountDownLatch(1);
        TokenFeed feed = TokenFeed.builder(worker).deadline(Duration.ofMillis(20)).onChange(changed::countDown).build();
        assertThat(changed.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(feed.status()).isEqualTo(Status.DEADLINE_EXCEEDED);
        feed.release();
        assertThat(feed.completion().get(5, TimeUnit.SECONDS).status()).isEqualTo(Status.DEADLINE_EXCEEDED);
        assertThatThrownBy(() -> TokenFeed.builder(worker).deadline(Duration.ofMillis(-1)))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aFailureCarriesItsCause() throws Exception {
        TokenFeed feed = TokenFeed.builder(worker).build();
        IllegalStateException cause = new IllegalStateException("device lost");
        assertThat(feed.fail(cause)).isTrue();
        assertThatThrownBy(() -> feed.stream().iterator().hasNext())
                .isInstanceOfSatisfying(StreamTerminatedException.class,
                        e -> assertThat(e.outcome().cause()).isSameAs(cause));
        feed.release();
        assertThat(feed.completion().get(5, TimeUnit.SECONDS).status()).isEqualTo(Status.FAILED);
    }

    @Test
    void releaseDoesNotRunCompletionDependentsOnTheProducersThread() throws Exception {
        TokenFeed feed = TokenFeed.builder(worker).build();
        CountDownLatch blocker = new CountDownLatch(1);
        AtomicReference<Thread> ranOn = new AtomicReference<>();
        CountDownLatch ran = new CountDownLatch(1);
        feed.completion().thenRun(() -> {
            ranOn.set(Thread.currentThread());
            ran.countDown();
            try {
                blocker.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        feed.release(); // returns although the dependent blocks
        assertThat(ran.await(5, TimeUnit.SECONDS)).isTrue();
        assertThat(ranOn.get()).isNotSameAs(Thread.currentThread());
        assertThat(ranOn.get().getName()).startsWith(worker.name() + "-feed-");
        blocker.countDown();
    }

    @Test
    void closingTheWorkerCancelsLiveFeedsAndRefusesNewOnes() throws Exception {
        TokenFeed feed = TokenFeed.builder(worker).build();
        worker.close();
        assertThat(feed.status()).isEqualTo(Status.CANCELLED);
        feed.release();
        assertThat(feed.completion().get(5, TimeUnit.SECONDS).status()).isEqualTo(Status.CANCELLED);
        assertThatThrownBy(() -> TokenFeed.builder(worker).build()).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void aFeedCountsTowardsTheWorkersRequestIds() {
        long before = worker.run((o, x) -> {}, 0).requestId();
        TokenFeed feed = TokenFeed.builder(worker).build();
        assertThat(feed.id()).isGreaterThan(before);
        assertThat(feed.stream().requestId()).isEqualTo(feed.id());
        feed.release();
    }
}
