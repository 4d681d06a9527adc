package dev.tandem;

import static dev.tandem.Access.readWrite;
import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * User code and the runtime's own threads: callbacks never run on a core, a slow callback
 * holds up nothing but its own request, and {@code close()} is safe from every callback and
 * from many threads at once.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CallbackSafetyTest {

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

    final List<CountDownLatch> gates = new CopyOnWriteArrayList<>();
    final List<Worker> workers = new CopyOnWriteArrayList<>();

    Worker worker(int cores) {
        Worker worker = Worker.create(CpuDeviceConfig.withCores(cores).withMemoryBudget(1 << 20));
        workers.add(worker);
        return worker;
    }

    /** A program whose first kernel parks until {@code gate} opens. */
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

    @AfterEach
    void stop() {
        gates.forEach(CountDownLatch::countDown);
        for (Worker worker : workers) {
            worker.close();
            assertThat(worker.memoryInUse()).isZero();
            for (Thread thread : worker.runtimeThreads()) {
                try {
                    thread.join(10_000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            assertThat(worker.runtimeThreads()).as("runtime threads after close").isEmpty();
        }
    }

    static SessionConfig config() {
        return SessionConfig.defaults().memoryPerRequest(1024);
    }

    // ---- close() from a completion dependent -------------------------------------------------

    @Test
    void closeFromACompletionDependentOfARequestThatCompletes() throws Exception {
        Worker worker = worker(2);
        CountDownLatch gate = new CountDownLatch(1);
        Session<Integer> session = worker.openSession(gated(gate, new CountDownLatch(1)), config());
        TokenStream stream = session.submit(3);
        CompletableFuture<Void> closed = stream.completion().thenRun(session::close);
        gate.countDown();
        closed.get(20, TimeUnit.SECONDS);
        assertThat(stream.completion().join().status()).isEqualTo(Status.COMPLETED);
        assertThat(session.close(Duration.ofSeconds(20))).as("still running after close").isEmpty();
    }

    /** The program retires the request's last step, so teardown runs on the program's thread. */
    @Test
    void closeFromACompletionDependentRunOnTheProgramThread() throws Exception {
        Worker worker = worker(2);
        CountDownLatch returnNow = new CountDownLatch(1);
        gates.add(returnNow);
        Program<Integer> lingering = (o, n) -> {
            COUNTER.run(o, n);
            returnNow.await(); // every step is handed over before the program returns
        };
        Session<Integer> session = worker.openSession(lingering, config());
        TokenStream stream = session.submit(3);
        Iterator<Token> tokens = stream.iterator();
        for (int i = 0; i < 3; i++) {
            tokens.next(); // all three tokens: every step has been handed over
        }
        CompletableFuture<Void> closed = stream.completion().thenRun(session::close);
        returnNow.countDown();
        closed.get(20, TimeUnit.SECONDS);
        assertThat(stream.completion().join().status()).isEqualTo(Status.COMPLETED);
    }

    @Test
    void cancelOfAQueuedRequestReturnsWhenItsCompletionDependentClosesTheSession() throws Exception {
        Worker worker = worker(2);
        CountDownLatch gate = new CountDownLatch(1);
        CountDownLatch entered = new CountDownLatch(1);
        Session<Integer> session = worker.openSession(gated(gate, entered), config().maxActive(1));
        TokenStream running = session.submit(3);
        TokenStream queued = session.submit(3);
        entered.await();
        CompletableFuture<Void> closed = queued.completion().thenRun(session::close);
        CompletableFuture<Void> cancelled = CompletableFuture.runAsync(queued::cancel);
        cancelled.get(20, TimeUnit.SECONDS);
        closed.get(20, TimeUnit.SECONDS);
        gate.countDown();
        assertThat(running.completion().get(20, TimeUnit.SECONDS).status()).isEqualTo(Status.CANCELLED);
        assertThat(queued.completion().join().status()).isEqualTo(Status.CANCELLED);
    }

    @Test
    void workerCloseFromTheCompletionDependentOfAQueuedRequestPastItsDeadline() throws Exception {
        Worker worker = worker(2);
        CountDownLatch gate = new CountDownLatch(1);
        CountDownLatch entered = new CountDownLatch(1);
        Session<Integer> session = worker.openSession(gated(gate, entered), config().maxActive(1));
        session.submit(3);
        entered.await();
        // The deadline is far enough off for the dependent to be attached first, so it runs
        // in the request's teardown, started by the timer.
        TokenStream late = session.submit(3, RequestOptions.defaults().deadline(Duration.ofMillis(500)));
        CompletableFuture<Outcome> completion = late.completion();
        assertThat(completion).as("ended before its dependent was attached").isNotDone();
        CompletableFuture<Void> closed = completion.thenRun(worker::close);
        closed.get(20, TimeUnit.SECONDS);
        assertThat(late.completion().join().status()).isEqualTo(Status.DEADLINE_EXCEEDED);
    }

    // ---- close() from every other callback, and from many threads --------------------------

    @Test
    void closeFromAKernelAStopWhenPredicateAndADeadlineReturns() throws Exception {
        Worker worker = worker(2);
        AtomicReference<Session<Integer>> self = new AtomicReference<>();
        CountDownLatch kernelClosed = new CountDownLatch(1);
        Kernel closing = Kernel.of("close", c -> {
            self.get().close();
            kernelClosed.countDown();
        });
        Program<Integer> program = (o, n) -> {
            Buffer b = o.allocate(8);
            o.submit(closing, readWrite(b));
            o.endStep(b.region());
        };
        Session<Integer> first = worker.openSession(program, config());
        self.set(first);
        TokenStream closedByKernel = first.submit(1);
        assertThat(kernelClosed.await(20, TimeUnit.SECONDS)).isTrue();
        assertThat(closedByKernel.completion().get(20, TimeUnit.SECONDS).status()).isEqualTo(Status.CANCELLED);

        Session<Integer> second = worker.openSession(COUNTER, config());
        CountDownLatch predicateClosed = new CountDownLatch(1);
        TokenStream closedByPredicate = second.submit(1_000_000, RequestOptions.defaults().stopWhen(token -> {
            second.close();
            predicateClosed.countDown();
            return false;
        }));
        assertThat(predicateClosed.await(20, TimeUnit.SECONDS)).isTrue();
        assertThat(closedByPredicate.completion().get(20, TimeUnit.SECONDS).status()).isEqualTo(Status.CANCELLED);
    }

    @Test
    void closeFromManyThreadsAtOnceReturnsEverywhere() throws Exception {
        Worker worker = worker(2);
        Session<Integer> session = worker.openSession(COUNTER, config().maxActive(2).maxQueued(8));
        List<TokenStream> streams = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            streams.add(session.submit(1_000_000));
        }
        CountDownLatch go = new CountDownLatch(1);
        List<CompletableFuture<?>> closers = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            boolean bounded = i % 2 == 0;
            closers.add(CompletableFuture.runAsync(() -> {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
                if (bounded) {
                    session.close(Duration.ofSeconds(20));
                } else {
                    session.close();
                }
            }, runnable -> Thread.ofVirtual().start(runnable)));
        }
        go.countDown();
        CompletableFuture.allOf(closers.toArray(CompletableFuture[]::new)).get(20, TimeUnit.SECONDS);
        for (TokenStream stream : streams) {
            assertThat(stream.completion().join().status()).isEqualTo(Status.CANCELLED);
        }
        assertThat(session.stats().active()).isZero();
    }

    @Test
    void boundedCloseReportsAProgramThatIgnoresItsInterrupt() throws Exception {
        Worker worker = worker(2);
        CountDownLatch release = new CountDownLatch(1);
        gates.add(release);
        CountDownLatch started = new CountDownLatch(1);
        Program<Integer> stubborn = (o, n) -> {
            started.countDown();
            while (true) {
                try {
                    release.await();
                    return;
                } catch (InterruptedException ignored) {
                    // deliberately ignored: the program keeps its request alive
                }
            }
        };
        Session<Integer> session = worker.openSession(stubborn, config());
        TokenStream stream = session.submit(1);
        started.await();
        assertThat(session.close(Duration.ofMillis(50))).containsExactly(stream.requestId());
        assertThat(worker.close(Duration.ofMillis(50))).containsExactly(stream.requestId());
        release.countDown();
        assertThat(worker.close(Duration.ofSeconds(20))).isEmpty();
        assertThat(session.close(Duration.ofSeconds(20))).isEmpty();
        assertThat(stream.completion().join().status()).isEqualTo(Status.CANCELLED);
    }

    // ---- callbacks off the cores -------------------------------------------------------------

    @Test
    void callbacksRunOnVirtualThreadsNeverOnACore() throws Exception {
        Worker worker = worker(1);
        // A stream buffer of 1: the request cannot end before the dependent is attached.
        Session<Integer> session = worker.openSession(COUNTER, config().streamBuffer(1));
        List<String> threads = new CopyOnWriteArrayList<>();
        TokenStream stream = session.submit(5, RequestOptions.defaults().stopWhen(token -> {
            threads.add(Thread.currentThread().getName());
            return false;
        }));
        CompletableFuture<Void> dependent = stream.completion()
                .thenRun(() -> threads.add(Thread.currentThread().getName()));
        for (Token ignored : stream) {
            // drain
        }
        dependent.get(20, TimeUnit.SECONDS);
        assertThat(threads).hasSize(6).noneMatch(name -> name.contains("-core-"));
    }

    /**
     * A 2 s completion dependent, a slow {@code stopWhen} and a slow subscriber of other
     * requests leave a streaming request's inter-token latency where it was: on a one-core
     * worker, each would otherwise stall that core — and every request on it — for 2 s.
     */
    @Test
    void slowCallbacksOfOneRequestLeaveAnothersInterTokenLatencyUnchanged() throws Exception {
        Worker worker = worker(1);
        Session<Integer> session = worker.openSession(COUNTER, config());
        TokenStream steady = session.submit(Integer.MAX_VALUE);
        Iterator<Token> tokens = steady.iterator();
        long baseline = maxGapNanos(tokens, 50);

        // A stopWhen predicate that takes 2 s.
        CountDownLatch inPredicate = new CountDownLatch(1);
        AtomicBoolean predicateDone = new AtomicBoolean();
        session.submit(1, RequestOptions.defaults().stopWhen(token -> {
            inPredicate.countDown();
            slowly();
            predicateDone.set(true);
            return false;
        }));
        inPredicate.await();
        long duringPredicate = maxGapNanos(tokens, 20);
        assertThat(predicateDone).as("measured while the predicate ran").isFalse();

        // A subscriber whose onNext takes 2 s.
        CountDownLatch inOnNext = new CountDownLatch(1);
        AtomicBoolean onNextDone = new AtomicBoolean();
        session.submit(3).subscribe(new Flow.Subscriber<>() {
            @Override
            public void onSubscribe(Flow.Subscription s) {
                s.request(Long.MAX_VALUE);
            }

            @Override
            public void onNext(Token item) {
                inOnNext.countDown();
                slowly();
                onNextDone.set(true);
            }

            @Override
            public void onError(Throwable t) {}

            @Override
            public void onComplete() {}
        });
        inOnNext.await();
        long duringOnNext = maxGapNanos(tokens, 20);
        assertThat(onNextDone).as("measured while onNext ran").isFalse();

        // A completion dependent that takes 2 s.
        CountDownLatch inDependent = new CountDownLatch(1);
        AtomicBoolean dependentDone = new AtomicBoolean();
        // A stream buffer of 1 holds the request until its token is taken, so the dependent is
        // attached before the request can end and runs in its teardown.
        Session<Integer> held = worker.openSession(COUNTER, config().streamBuffer(1));
        TokenStream ending = held.submit(1);
        ending.completion().thenRun(() -> {
            inDependent.countDown();
            slowly();
            dependentDone.set(true);
        });
        ending.iterator().next();
        inDependent.await();
        long duringDependent = maxGapNanos(tokens, 20);
        assertThat(dependentDone).as("measured while the dependent ran").isFalse();

        long bound = Math.max(TimeUnit.MILLISECONDS.toNanos(500), 20 * baseline);
        assertThat(List.of(duringPredicate, duringOnNext, duringDependent))
                .as("longest inter-token gap (ns) of the steady request; baseline %d ns", baseline)
                .allMatch(gap -> gap < bound);
        steady.cancel();
    }

    private static void slowly() {
        try {
            Thread.sleep(2_000); // the workload: a callback that takes 2 s
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static long maxGapNanos(Iterator<Token> tokens, int count) {
        tokens.next();
        long last = System.nanoTime();
        long max = 0;
        for (int i = 0; i < count; i++) {
            tokens.next();
            long now = System.nanoTime();
            max = Math.max(max, now - last);
            last = now;
        }
        return max;
    }

    // ---- a scheduling policy that misbehaves on a core ----------------------------------------

    @Test
    void aPolicyReturningABadLaneOnACoreFailsItsRequestAndTheCoreLivesOn() throws Exception {
        Worker worker = worker(1);
        SchedulingPolicy bad = (request, step) ->
                Thread.currentThread().getName().contains("-core-") ? 99 : SchedulingPolicy.NORMAL_LANE;
        SchedulingPolicy throwing = (request, step) -> {
            if (Thread.currentThread().getName().contains("-core-")) {
                throw new IllegalArgumentException("policy bug");
            }
            return SchedulingPolicy.NORMAL_LANE;
        };
        for (SchedulingPolicy policy : List.of(bad, throwing)) {
            // A write, then two reads of it: the core that finishes the write runs one read
            // itself and queues the other, asking the policy for its lane.
            Kernel read = Kernel.of("read", c -> c.region(0).get(ValueLayout.JAVA_INT, 0));
            Program<Integer> chain = (o, n) -> {
                Buffer b = o.allocate(ValueLayout.JAVA_INT, 1);
                o.submit(INCREMENT, readWrite(b));
                o.submit(read, Access.read(b.region()));
                o.submit(read, Access.read(b.region()));
                o.endStep(b.region());
            };
            try (Session<Integer> session = worker.openSession(chain, config().policy(policy))) {
                Outcome outcome = session.submit(1).completion().get(20, TimeUnit.SECONDS);
                assertThat(outcome.status()).isEqualTo(Status.FAILED);
                assertThat(outcome.cause()).hasMessageContaining("scheduling policy");
            }
        }
        // The only core survived both.
        TokenStream after = worker.run(COUNTER, 3);
        assertThat(after.completion().get(20, TimeUnit.SECONDS).status()).isEqualTo(Status.COMPLETED);
    }
}
