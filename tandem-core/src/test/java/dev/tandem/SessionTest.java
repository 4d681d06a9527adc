package dev.tandem;

import static dev.tandem.Access.readWrite;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 30, unit = TimeUnit.SECONDS)
class SessionTest {

    static final Kernel INCREMENT = Kernel.of("increment", c -> {
        var x = c.region(0);
        x.set(ValueLayout.JAVA_INT, 0, x.get(ValueLayout.JAVA_INT, 0) + 1);
    });

    /** Counts 1..n, one step per token. */
    static final Program<Integer> COUNTER = (o, n) -> {
        Buffer counter = o.allocate(ValueLayout.JAVA_INT, 1);
        for (int i = 0; i < n; i++) {
            o.submit(INCREMENT, readWrite(counter));
            o.endStep(counter.region());
        }
    };

    /** Latches a test may leave closed when it fails; opened after each test so close() can drain. */
    final List<CountDownLatch> gates = new CopyOnWriteArrayList<>();

    /** A program that parks in its first kernel until the latch opens. */
    Program<Integer> gated(CountDownLatch gate, CountDownLatch entered) {
        gates.add(gate);
        Kernel wait = Kernel.of("wait", c -> {
            entered.countDown();
            gate.await();
        });
        return (o, n) -> {
            Buffer counter = o.allocate(ValueLayout.JAVA_INT, 1);
            o.submit(wait, readWrite(counter));
            for (int i = 0; i < n; i++) {
                o.submit(INCREMENT, readWrite(counter));
                o.endStep(counter.region());
            }
        };
    }

    Worker worker;

    @BeforeEach
    void start() {
        worker = Worker.create(CpuDeviceConfig.withCores(2).withMemoryBudget(1 << 20));
    }

    @AfterEach
    void stop() {
        gates.forEach(CountDownLatch::countDown);
        worker.close();
        assertThat(worker.memoryInUse()).as("device memory after the worker closed").isZero();
    }

    static List<Integer> values(TokenStream stream) {
        List<Integer> out = new ArrayList<>();
        for (Token t : stream) {
            out.add(t.asInt());
        }
        return out;
    }

    @Test
    void requestsOfOneSessionStreamTheirOwnTokens() {
        try (Session<Integer> session = worker.openSession(COUNTER, SessionConfig.defaults().memoryPerRequest(4096))) {
            List<TokenStream> streams = new ArrayList<>();
            for (int i = 1; i <= 6; i++) {
                streams.add(session.submit(i * 5));
            }
            for (int i = 1; i <= 6; i++) {
                List<Integer> expected = new ArrayList<>();
                for (int k = 1; k <= i * 5; k++) {
                    expected.add(k);
                }
                assertThat(values(streams.get(i - 1))).as("request %d", i).isEqualTo(expected);
                Outcome outcome = streams.get(i - 1).completion().join();
                assertThat(outcome.status()).isEqualTo(Status.COMPLETED);
                assertThat(outcome.timeToFirstToken()).isNotNull();
            }
            SessionStats stats = session.stats();
            assertThat(stats.finished()).containsEntry(Status.COMPLETED, 6L);
            assertThat(stats.tokensDelivered()).isEqualTo(5 + 10 + 15 + 20 + 25 + 30);
            assertThat(stats.active()).isZero();
            assertThat(stats.bytesInUse()).isZero();
        }
    }

    @Test
    void admissionIsBoundedAndRejectionsSayWhy() throws Exception {
        CountDownLatch gate = new CountDownLatch(1);
        CountDownLatch entered = new CountDownLatch(1);
        SessionConfig config = SessionConfig.defaults().maxActive(1).maxQueued(2).memoryPerRequest(1024);
        try (Session<Integer> session = worker.openSession(gated(gate, entered), config)) {
            TokenStream running = session.submit(3, RequestOptions.defaults().id("a"));
            entered.await();
            TokenStream queued1 = session.submit(3, RequestOptions.defaults().id("b"));
            TokenStream queued2 = session.submit(3);
            assertThat(session.stats().queued()).isEqualTo(2);
            assertThat(session.stats().active()).isEqualTo(1);
            assertThatThrownBy(() -> session.submit(3))
                    .isInstanceOfSatisfying(AdmissionRejectedException.class,
                            e -> assertThat(e.reason()).isEqualTo(AdmissionRejectedException.Reason.QUEUE_FULL));
            queued2.cancel(); // frees a queue place without ever starting
            assertThat(queued2.completion().join().status()).isEqualTo(Status.CANCELLED);
            assertThat(queued2.completion().join().timeToFirstToken()).isNull();
            assertThatThrownBy(() -> session.submit(3, RequestOptions.defaults().id("b")))
                    .isInstanceOfSatisfying(AdmissionRejectedException.class,
                            e -> assertThat(e.reason()).isEqualTo(AdmissionRejectedException.Reason.DUPLICATE_ID));
            gate.countDown();
            assertThat(values(running)).containsExactly(1, 2, 3);
            assertThat(values(queued1)).containsExactly(1, 2, 3);
            running.completion().join();
            // The id is free again once its request has ended.
            TokenStream again = session.submit(3, RequestOptions.defaults().id("a"));
            assertThat(values(again)).containsExactly(1, 2, 3);
        }
    }

    @Test
    void tooLargeAndClosedAndNullAreRejected() {
        Session<Integer> big = worker.openSession(COUNTER, SessionConfig.defaults().memoryPerRequest(2 << 20));
        assertThatThrownBy(() -> big.submit(1))
                .isInstanceOfSatisfying(AdmissionRejectedException.class,
                        e -> assertThat(e.reason()).isEqualTo(AdmissionRejectedException.Reason.TOO_LARGE))
                .hasMessageContaining("budget");
        big.close();
        Session<Integer> session = worker.openSession(COUNTER, SessionConfig.defaults().memoryPerRequest(1024));
        assertThatThrownBy(() -> session.submit(null)).isInstanceOf(NullPointerException.class);
        session.close();
        session.close(); // idempotent
        assertThatThrownBy(() -> session.submit(1))
                .isInstanceOfSatisfying(AdmissionRejectedException.class,
                        e -> assertThat(e.reason()).isEqualTo(AdmissionRejectedException.Reason.CLOSED));
    }

    @Test
    void queuedRequestsWaitForMemoryFirstComeFirstServed() {
        // Budget 1 MiB: three requests of 400 KiB cannot run at once; the third waits for memory.
        SessionConfig config = SessionConfig.defaults().maxActive(8).memoryPerRequest(400 << 10);
        try (Session<Integer> session = worker.openSession(COUNTER, config)) {
            List<TokenStream> streams = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                streams.add(session.submit(20));
            }
            assertThat(session.stats().active()).isLessThanOrEqualTo(2);
            for (TokenStream s : streams) {
                assertThat(values(s)).hasSize(20);
            }
        }
    }

    @Test
    void allocatingPastTheRequestsMemoryFailsThatRequestOnly() {
        Program<Integer> greedy = (o, n) -> {
            o.allocate(512);
            o.allocate(1024); // over memoryPerRequest
        };
        try (Session<Integer> session = worker.openSession(greedy, SessionConfig.defaults().memoryPerRequest(1024));
                Session<Integer> good = worker.openSession(COUNTER, SessionConfig.defaults().memoryPerRequest(1024))) {
            TokenStream bad = session.submit(1);
            TokenStream fine = good.submit(5);
            Outcome outcome = bad.completion().join();
            assertThat(outcome.status()).isEqualTo(Status.FAILED);
            assertThat(outcome.cause()).isInstanceOf(DeviceOutOfMemoryException.class)
                    .hasMessageContaining("memoryPerRequest");
            assertThat(values(fine)).containsExactly(1, 2, 3, 4, 5);
        }
    }

    /**
     * Each request finds its memory zero-filled though the one before scribbled over the same
     * amount (the CPU device lends an ended request's blocks to the next).
     */
    @Test
    void aRequestsMemoryIsZeroFilledAfterAnEndedOneScribbledOverItsOwn() {
        long bytes = 256 << 10;
        Kernel scribble = Kernel.of("scribble", c -> {
            var data = c.region(0);
            int dirty = 0;
            for (long at = 0; at < data.byteSize(); at++) {
                if (data.get(ValueLayout.JAVA_BYTE, at) != 0) {
                    dirty++;
                }
            }
            c.region(1).set(ValueLayout.JAVA_INT, 0, dirty);
            data.fill((byte) 0x7f);
        });
        Program<Integer> program = (o, n) -> {
            Buffer data = o.allocate(bytes);
            Buffer dirty = o.allocate(ValueLayout.JAVA_INT, 1);
            o.submit(scribble, readWrite(data), Access.write(dirty.region()));
            o.endStep(dirty.region());
        };
        try (Session<Integer> session = worker.openSession(program,
                SessionConfig.defaults().memoryPerRequest(bytes + 64).maxActive(1))) {
            for (int i = 0; i < 5; i++) {
                assertThat(values(session.submit(1))).as("dirty bytes seen by request %d", i).containsExactly(0);
            }
        }
    }

    @Test
    void stopWhenMakesTheMatchingTokenTheLast() {
        try (Session<Integer> session = worker.openSession(COUNTER, SessionConfig.defaults().memoryPerRequest(1024))) {
            TokenStream stream = session.submit(1000, RequestOptions.defaults().stopWhen(t -> t.asInt() == 7));
            assertThat(values(stream)).containsExactly(1, 2, 3, 4, 5, 6, 7);
            Outcome outcome = stream.completion().join();
            assertThat(outcome.status()).isEqualTo(Status.COMPLETED);
            assertThat(outcome.tokens()).isEqualTo(7);
            TokenStream limited = session.submit(1000, RequestOptions.defaults().maxTokens(3));
            assertThat(values(limited)).containsExactly(1, 2, 3);
        }
    }

    @Test
    void aDeadlineEndsARunningRequestAndTheSessionGoesOn() throws Exception {
        CountDownLatch never = new CountDownLatch(1);
        CountDownLatch entered = new CountDownLatch(1);
        try (Session<Integer> session = worker.openSession(gated(never, entered),
                SessionConfig.defaults().memoryPerRequest(1024))) {
            TokenStream stream = session.submit(5, RequestOptions.defaults().deadline(Duration.ofMillis(50)));
            entered.await();
            assertThatThrownBy(() -> values(stream))
                    .isInstanceOfSatisfying(StreamTerminatedException.class,
                            e -> assertThat(e.status()).isEqualTo(Status.DEADLINE_EXCEEDED));
            assertThat(stream.isDone()).isTrue();
            // The kernel still blocks a core: completion waits for it, then memory is back.
            never.countDown();
            assertThat(stream.completion().join().status()).isEqualTo(Status.DEADLINE_EXCEEDED);
        }
        try (Session<Integer> session = worker.openSession(COUNTER, SessionConfig.defaults().memoryPerRequest(1024))) {
            assertThat(values(session.submit(4))).containsExactly(1, 2, 3, 4);
        }
    }

    @Test
    void aQueuedRequestPastItsDeadlineNeverStarts() throws Exception {
        CountDownLatch gate = new CountDownLatch(1);
        CountDownLatch entered = new CountDownLatch(1);
        SessionConfig config = SessionConfig.defaults().maxActive(1).memoryPerRequest(1024);
        try (Session<Integer> session = worker.openSession(gated(gate, entered), config)) {
            TokenStream first = session.submit(2);
            entered.await();
            TokenStream late = session.submit(2, RequestOptions.defaults().deadline(Duration.ofMillis(20)));
            Outcome outcome = late.completion().join();
            assertThat(outcome.status()).isEqualTo(Status.DEADLINE_EXCEEDED);
            assertThat(outcome.tokens()).isZero();
            gate.countDown();
            assertThat(values(first)).containsExactly(1, 2);
        }
    }

    @Test
    void publisherDeliversOnlyAgainstDemand() throws Exception {
        try (Session<Integer> session = worker.openSession(COUNTER,
                SessionConfig.defaults().memoryPerRequest(1024).streamBuffer(2))) {
            TokenStream stream = session.submit(10);
            List<Integer> received = new CopyOnWriteArrayList<>();
            AtomicReference<Flow.Subscription> subscription = new AtomicReference<>();
            CompletableFuture<Void> done = new CompletableFuture<>();
            CountDownLatch three = new CountDownLatch(3);
            stream.subscribe(new Flow.Subscriber<>() {
                @Override
                public void onSubscribe(Flow.Subscription s) {
                    subscription.set(s);
                    s.request(3);
                }

                @Override
                public void onNext(Token item) {
                    received.add(item.asInt());
                    three.countDown();
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
            three.await();
            // No demand: the program fills its stream buffer and waits; nothing more is delivered.
            assertThat(done).isNotDone();
            assertThat(received).containsExactly(1, 2, 3);
            subscription.get().request(Long.MAX_VALUE);
            done.get(30, TimeUnit.SECONDS);
            assertThat(received).containsExactly(1, 2, 3, 4, 5, 6, 7, 8, 9, 10);
            assertThat(stream.completion().join().status()).isEqualTo(Status.COMPLETED);
        }
    }

    @Test
    void aSecondSubscriberIsRefused() throws Exception {
        try (Session<Integer> session = worker.openSession(COUNTER, SessionConfig.defaults().memoryPerRequest(1024))) {
            TokenStream stream = session.submit(3);
            stream.subscribe(new CollectingSubscriber());
            CollectingSubscriber second = new CollectingSubscriber();
            stream.subscribe(second);
            assertThat(second.error.get(10, TimeUnit.SECONDS)).isInstanceOf(IllegalStateException.class);
        }
    }

    @Test
    void closeFromASubscriberCallbackDoesNotDeadlock() throws Exception {
        Session<Integer> session = worker.openSession(COUNTER, SessionConfig.defaults().memoryPerRequest(1024));
        TokenStream other = session.submit(1_000_000);
        TokenStream stream = session.submit(100);
        CountDownLatch closed = new CountDownLatch(1);
        stream.subscribe(new CollectingSubscriber() {
            @Override
            public void onNext(Token item) {
                if (item.asInt() == 2) {
                    session.close();
                    closed.countDown();
                }
            }
        });
        assertThat(closed.await(30, TimeUnit.SECONDS)).as("close() returned inside onNext").isTrue();
        assertThat(other.completion().get(30, TimeUnit.SECONDS).status()).isEqualTo(Status.CANCELLED);
        assertThat(stream.completion().get(30, TimeUnit.SECONDS).status()).isEqualTo(Status.CANCELLED);
    }

    @Test
    void closeFromAProgramThreadDoesNotDeadlock() throws Exception {
        AtomicReference<Session<Integer>> self = new AtomicReference<>();
        CountDownLatch ready = new CountDownLatch(1);
        Program<Integer> closing = (o, n) -> {
            ready.await();
            self.get().close();
            o.allocate(8); // the request was cancelled by the close: this throws and unwinds
        };
        Session<Integer> session = worker.openSession(closing, SessionConfig.defaults().memoryPerRequest(1024));
        self.set(session);
        TokenStream stream = session.submit(1);
        ready.countDown();
        assertThat(stream.completion().get(30, TimeUnit.SECONDS).status()).isEqualTo(Status.CANCELLED);
    }

    @Test
    void closeCancelsQueuedAndRunningAndWaitsForThemToDrain() throws Exception {
        CountDownLatch gate = new CountDownLatch(1);
        CountDownLatch entered = new CountDownLatch(1);
        Session<Integer> session = worker.openSession(gated(gate, entered),
                SessionConfig.defaults().maxActive(1).memoryPerRequest(1024));
        TokenStream running = session.submit(3);
        TokenStream queued = session.submit(3);
        entered.await();
        CompletableFuture<Void> closing = CompletableFuture.runAsync(session::close);
        assertThat(queued.completion().get(30, TimeUnit.SECONDS).status()).isEqualTo(Status.CANCELLED);
        // The running request ends at once (its reader sees the end) while its kernel still
        // holds a core; close waits for it to drain.
        assertThatThrownBy(() -> values(running)).isInstanceOfSatisfying(StreamTerminatedException.class,
                e -> assertThat(e.status()).isEqualTo(Status.CANCELLED));
        assertThat(closing).isNotDone();
        gate.countDown();
        closing.get(30, TimeUnit.SECONDS);
        assertThat(running.completion().join().status()).isEqualTo(Status.CANCELLED);
        assertThat(session.stats().active()).isZero();
    }

    @Test
    void aProgramThatReturnsWithoutAStepCompletesWithNoTokens() {
        Program<Integer> quiet = (o, n) -> {
            Buffer b = o.allocate(4);
            o.submit(INCREMENT, readWrite(b)); // a trailing task, no token
        };
        try (Session<Integer> session = worker.openSession(quiet, SessionConfig.defaults().memoryPerRequest(1024))) {
            TokenStream stream = session.submit(1);
            assertThat(values(stream)).isEmpty();
            assertThat(stream.completion().join().status()).isEqualTo(Status.COMPLETED);
        }
    }

    @Test
    void aProgramThatNeverEndsAStepIsEndedByItsDeadline() {
        AtomicInteger submitted = new AtomicInteger();
        Program<Integer> endless = (o, n) -> {
            Buffer b = o.allocate(4);
            while (true) {
                o.submit(INCREMENT, readWrite(b));
                submitted.incrementAndGet();
            }
        };
        try (Session<Integer> session = worker.openSession(endless, SessionConfig.defaults().memoryPerRequest(1024))) {
            TokenStream stream = session.submit(1, RequestOptions.defaults().deadline(Duration.ofMillis(300)));
            // completion() implies the program thread has returned: the endless loop was unwound.
            assertThat(stream.completion().join().status()).isEqualTo(Status.DEADLINE_EXCEEDED);
            long after = submitted.get();
            assertThat(submitted.get()).as("no submit succeeds after the end").isEqualTo(after);
        }
    }

    @Test
    void sessionsWithDifferentPoliciesShareOneWorker() {
        try (Session<Integer> fifo = worker.openSession(COUNTER,
                        SessionConfig.defaults().policy(SchedulingPolicy.FIFO).memoryPerRequest(1024));
                Session<Integer> edf = worker.openSession(COUNTER,
                        SessionConfig.defaults().policy(SchedulingPolicy.EARLIEST_DEADLINE).memoryPerRequest(1024))) {
            TokenStream a = fifo.submit(30);
            TokenStream b = edf.submit(30, RequestOptions.defaults().deadline(Duration.ofSeconds(30)));
            TokenStream c = edf.submit(30);
            assertThat(values(a)).hasSize(30);
            assertThat(values(b)).hasSize(30);
            assertThat(values(c)).hasSize(30);
        }
    }

    /** LESSONS #8: ids are reserved atomically at admission; of concurrent submits of one id exactly one wins. */
    @Test
    void concurrentSubmitsOfOneIdAdmitExactlyOne() throws Exception {
        // Each request counts to a million, so it is live until the test cancels it.
        try (Session<Integer> session = worker.openSession(COUNTER,
                SessionConfig.defaults().maxActive(64).maxQueued(64).memoryPerRequest(1024).streamBuffer(1))) {
            for (int round = 0; round < 20; round++) {
                int threads = 8;
                java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(threads);
                List<CompletableFuture<TokenStream>> attempts = new ArrayList<>();
                String id = "same-" + round;
                for (int t = 0; t < threads; t++) {
                    CompletableFuture<TokenStream> attempt = new CompletableFuture<>();
                    attempts.add(attempt);
                    Thread.ofPlatform().start(() -> {
                        try {
                            start.await();
                            attempt.complete(session.submit(1_000_000, RequestOptions.defaults().id(id)));
                        } catch (Throwable e) {
                            attempt.completeExceptionally(e);
                        }
                    });
                }
                int accepted = 0;
                TokenStream winner = null;
                for (CompletableFuture<TokenStream> attempt : attempts) {
                    try {
                        winner = attempt.get(30, TimeUnit.SECONDS);
                        accepted++;
                    } catch (java.util.concurrent.ExecutionException e) {
                        assertThat(e.getCause()).isInstanceOfSatisfying(AdmissionRejectedException.class,
                                r -> assertThat(r.reason()).isEqualTo(AdmissionRejectedException.Reason.DUPLICATE_ID));
                    }
                }
                assertThat(accepted).as("round %d: submits of id %s accepted", round, id).isEqualTo(1);
                winner.cancel();
                winner.completion().get(30, TimeUnit.SECONDS);
                // The id is free again at once after its request ended.
                TokenStream again = session.submit(1_000_000, RequestOptions.defaults().id(id));
                again.cancel();
                again.completion().get(30, TimeUnit.SECONDS);
            }
        }
    }

    /** LESSONS #6: per-worker state created on first use (the deadline timer) exists once under concurrent first use. */
    @Test
    void concurrentFirstUseOfDeadlinesCreatesOneTimer() throws Exception {
        try (Worker fresh = Worker.create(CpuDeviceConfig.withCores(1));
                Session<Integer> session = fresh.openSession(COUNTER, SessionConfig.defaults().maxActive(64)
                        .memoryPerRequest(1024))) {
            int threads = 16;
            java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(threads);
            List<CompletableFuture<Outcome>> outcomes = new CopyOnWriteArrayList<>();
            List<Thread> submitters = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                submitters.add(Thread.ofPlatform().start(() -> {
                    try {
                        start.await();
                        outcomes.add(session.submit(3, RequestOptions.defaults().deadline(Duration.ofSeconds(30)))
                                .completion());
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                }));
            }
            for (Thread t : submitters) {
                t.join();
            }
            for (CompletableFuture<Outcome> o : outcomes) {
                assertThat(o.get(30, TimeUnit.SECONDS).status()).isEqualTo(Status.COMPLETED);
            }
            long timers = Thread.getAllStackTraces().keySet().stream()
                    .filter(t -> t.getName().equals(fresh.name() + "-deadlines"))
                    .count();
            assertThat(timers).as("deadline timer threads of one worker").isEqualTo(1);
        }
    }

    static class CollectingSubscriber implements Flow.Subscriber<Token> {
        final CompletableFuture<Throwable> error = new CompletableFuture<>();

        @Override
        public void onSubscribe(Flow.Subscription subscription) {
            subscription.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(Token item) {}

        @Override
        public void onError(Throwable throwable) {
            error.complete(throwable);
        }

        @Override
        public void onComplete() {
            error.complete(null);
        }
    }
}
