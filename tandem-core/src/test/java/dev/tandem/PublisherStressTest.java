package dev.tandem;

import static dev.tandem.Access.readWrite;
import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The publisher's signal protocol under races: threads request demand, request(0) and cancel
 * at once while tokens flow. Signals must never overlap, none may follow a terminal one, at
 * most one terminal signal arrives, the end a cancel caused is never signalled back, and tokens
 * arrive in order without gaps.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PublisherStressTest {
    static final int ROUNDS = Boolean.getBoolean("tandem.long") ? 2000 : 200;

    static final Kernel INCREMENT = Kernel.of("increment", c -> {
        var x = c.region(0);
        x.set(ValueLayout.JAVA_INT, 0, x.get(ValueLayout.JAVA_INT, 0) + 1);
    });

    static final Program<Integer> COUNTER = (o, n) -> {
        Buffer counter = o.allocate(ValueLayout.JAVA_INT, 1);
        for (int i = 0; i < n; i++) {
            o.submit(INCREMENT, readWrite(counter));
            o.endStep(counter.region());
        }
    };

    /** Records protocol violations instead of throwing them into the publisher. */
    static final class Checker implements Flow.Subscriber<Token> {
        final AtomicInteger inSignal = new AtomicInteger();
        final AtomicInteger terminals = new AtomicInteger();
        final AtomicReference<String> violation = new AtomicReference<>();
        final AtomicReference<Flow.Subscription> subscription = new AtomicReference<>();
        final CountDownLatch subscribed = new CountDownLatch(1);
        final CountDownLatch ended = new CountDownLatch(1);
        int expected = 1; // next token value; written inside signals only

        void enter(String what) {
            if (inSignal.getAndIncrement() != 0) {
                violation.compareAndSet(null, what + " overlapped another signal");
            }
            if (terminals.get() > 0) {
                violation.compareAndSet(null, what + " after the terminal signal");
            }
        }

        void exit() {
            inSignal.decrementAndGet();
        }

        @Override
        public void onSubscribe(Flow.Subscription s) {
            enter("onSubscribe");
            subscription.set(s);
            exit();
            subscribed.countDown();
        }

        @Override
        public void onNext(Token item) {
            enter("onNext");
            if (item.asInt() != expected) {
                violation.compareAndSet(null, "token " + item.asInt() + " where " + expected + " was due");
            }
            expected++;
            exit();
        }

        @Override
        public void onError(Throwable throwable) {
            enter("onError");
            if (throwable instanceof StreamTerminatedException ended && ended.status() == Status.CANCELLED) {
                // Only the subscriber cancels here: its own cancel must not come back as an error (rule 1.8).
                violation.compareAndSet(null, "the subscriber's own cancel was signalled back: " + throwable);
            }
            terminals.incrementAndGet();
            exit();
            ended.countDown();
        }

        @Override
        public void onComplete() {
            enter("onComplete");
            terminals.incrementAndGet();
            exit();
            ended.countDown();
        }
    }

    @Test
    void racingRequestsAndCancelsNeverBreakTheSignalProtocol() throws Exception {
        SplittableRandom random = new SplittableRandom(0x5eed_f10eL);
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
            for (int round = 0; round < ROUNDS; round++) {
                int tokens = 1 + random.nextInt(60);
                int disruption = random.nextInt(3); // 0: none, 1: request(0), 2: cancel
                TokenStream stream = worker.run(COUNTER, tokens, RunOptions.defaults().withStreamBuffer(4));
                Checker checker = new Checker();
                stream.subscribe(checker);
                checker.subscribed.await();
                Flow.Subscription s = checker.subscription.get();
                CyclicBarrier start = new CyclicBarrier(3);
                List<Thread> threads = new ArrayList<>();
                for (int t = 0; t < 3; t++) {
                    long seed = random.nextLong();
                    boolean disrupts = t == 0 && disruption != 0;
                    threads.add(Thread.ofPlatform().start(() -> {
                        SplittableRandom r = new SplittableRandom(seed);
                        try {
                            start.await();
                        } catch (Exception e) {
                            throw new IllegalStateException(e);
                        }
                        for (int i = 0; i < 40; i++) {
                            if (disrupts && i == 5 + r.nextInt(10)) {
                                if (disruption == 1) {
                                    s.request(0);
                                } else {
                                    s.cancel();
                                }
                            }
                            s.request(1 + r.nextInt(3));
                            Thread.onSpinWait();
                        }
                    }));
                }
                for (Thread thread : threads) {
                    thread.join();
                }
                if (disruption == 2) {
                    // A cancelled subscription may or may not see its end; the request ends either way.
                    assertThat(stream.completion().get(20, TimeUnit.SECONDS).status()).isIn(Status.CANCELLED,
                            Status.COMPLETED);
                } else {
                    s.request(Long.MAX_VALUE); // enough for every token
                    assertThat(checker.ended.await(20, TimeUnit.SECONDS)).as("round %d ended", round).isTrue();
                    stream.completion().get(20, TimeUnit.SECONDS);
                }
                assertThat(checker.violation.get()).as("round %d (%d tokens, disruption %d)", round, tokens, disruption)
                        .isNull();
                assertThat(checker.terminals.get()).isLessThanOrEqualTo(1);
            }
        }
    }
}
