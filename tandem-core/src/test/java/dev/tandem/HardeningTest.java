package dev.tandem;

import static dev.tandem.Access.readWrite;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Bounds and edges a new user runs into: the stream buffer's exact bound, the outcome's token
 * count after an abnormal end, allocation errors that fail their request, the bound on a
 * step's tasks in flight, kernels that see their request end, and what the scheduling
 * policies and session statistics are computed from.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class HardeningTest {

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

    final List<CountDownLatch> gates = new CopyOnWriteArrayList<>();
    Worker worker;

    @BeforeEach
    void start() {
        worker = Worker.create(CpuDeviceConfig.withCores(2).withMemoryBudget(1 << 20));
    }

    @AfterEach
    void stop() {
        gates.forEach(CountDownLatch::countDown);
        worker.close();
        assertThat(worker.memoryInUse()).isZero();
    }

    CountDownLatch gate() {
        CountDownLatch gate = new CountDownLatch(1);
        gates.add(gate);
        return gate;
    }

    /** Waits for a condition that an event of the runtime makes true (no fixed sleep). */
    static void awaitUntil(String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting until " + what);
            }
            Thread.onSpinWait();
            Thread.yield();
        }
    }

    static boolean parked(AtomicReference<Thread> thread) {
        Thread t = thread.get();
        return t != null && (t.getState() == Thread.State.WAITING || t.getState() == Thread.State.TIMED_WAITING);
    }

    // ---- stream buffer ------------------------------------------------------------------------

    @Test
    void theStreamBufferHoldsExactlyItsBoundOfUntakenTokens() throws Exception {
        CountDownLatch open = gate();
        Kernel slow = Kernel.of("slow", c -> open.await());
        AtomicInteger begun = new AtomicInteger();
        AtomicReference<Thread> programThread = new AtomicReference<>();
        Program<Integer> program = (o, n) -> {
            programThread.set(Thread.currentThread());
            Buffer counter = o.allocate(ValueLayout.JAVA_INT, 1);
            for (int i = 0; i < n; i++) {
                begun.incrementAndGet();
                o.submit(slow, readWrite(counter));
                o.endStep(counter.region());
            }
        };
        Session<Integer> session = worker.openSession(program,
                SessionConfig.defaults().memoryPerRequest(1024).runAhead(8).streamBuffer(3));
        TokenStream stream = session.submit(100);
        // While no step can finish, the program is held by the smaller of its two gates.
        awaitUntil("the program waits for its first step", () -> parked(programThread) && begun.get() > 0);
        open.countDown();
        awaitUntil("every step built is delivered and the program waits for its reader",
                () -> parked(programThread) && session.stats().tokensDelivered() == begun.get());
        assertThat(session.stats().tokensDelivered()).as("tokens delivered and not taken").isEqualTo(3);
        stream.cancel();
    }

    @Test
    void pollCountsTheTokensItTakes() throws Exception {
        Session<Integer> session = worker.openSession(COUNTER,
                SessionConfig.defaults().memoryPerRequest(1024).streamBuffer(2));
        TokenStream stream = session.submit(10);
        for (int i = 1; i <= 10; i++) {
            Token token = stream.poll(Duration.ofSeconds(20));
            assertThat(token).as("token %d (the program waits unless poll counts what it takes)", i).isNotNull();
            assertThat(token.asInt()).isEqualTo(i);
        }
        assertThat(stream.poll(Duration.ofSeconds(20))).isNull();
        assertThat(stream.completion().get(20, TimeUnit.SECONDS).tokens()).isEqualTo(10);
    }

    // ---- the outcome's token count ------------------------------------------------------------

    @Test
    void afterAnAbnormalEndTheOutcomeCountsOnlyTheTokensTheReaderReceived() throws Exception {
        CountDownLatch hold = gate();
        Program<Integer> program = (o, n) -> {
            Buffer counter = o.allocate(ValueLayout.JAVA_INT, 1);
            for (int i = 0; i < n; i++) {
                o.submit(INCREMENT, readWrite(counter));
                o.endStep(counter.region());
            }
            hold.await(); // keeps the request running with its tokens queued
        };
        Session<Integer> session = worker.openSession(program, SessionConfig.defaults().memoryPerRequest(1024));
        TokenStream stream = session.submit(10);
        awaitUntil("10 tokens delivered", () -> session.stats().tokensDelivered() == 10);
        Iterator<Token> tokens = stream.iterator();
        for (int i = 0; i < 3; i++) {
            tokens.next();
        }
        stream.cancel();
        assertThatThrownBy(tokens::hasNext).isInstanceOf(StreamTerminatedException.class);
        Outcome outcome = stream.completion().get(20, TimeUnit.SECONDS);
        assertThat(outcome.status()).isEqualTo(Status.CANCELLED);
        assertThat(outcome.tokens()).as("tokens the reader received").isEqualTo(3);
    }

    // ---- allocation errors fail the request ----------------------------------------------------

    @Test
    void anOverflowingAllocationFailsItsRequestWithContext() throws Exception {
        AtomicReference<Throwable> seen = new AtomicReference<>();
        Program<Integer> program = (o, n) -> {
            try {
                o.allocate(ValueLayout.JAVA_INT, 1L << 62);
            } catch (RuntimeException e) {
                seen.set(e);
            }
            Buffer b = o.allocate(8); // the request has failed: this throws and unwinds
            o.endStep(b.region());
        };
        Outcome outcome = worker.run(program, 1).completion().get(20, TimeUnit.SECONDS);
        assertThat(seen.get()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("request " + outcome.requestId()).hasMessageContaining("overflows");
        assertThat(outcome.status()).isEqualTo(Status.FAILED);
        assertThat(outcome.cause()).isSameAs(seen.get());
    }

    @Test
    void aCaughtOutOfMemoryStillFailsTheRequestLikeACaughtInvalidTask() throws Exception {
        AtomicReference<Throwable> seen = new AtomicReference<>();
        Program<Integer> program = (o, n) -> {
            try {
                o.allocate(1 << 16); // more than memoryPerRequest
            } catch (DeviceOutOfMemoryException e) {
                seen.set(e);
            }
            Buffer b = o.allocate(8);
            o.endStep(b.region());
        };
        try (Session<Integer> session = worker.openSession(program, SessionConfig.defaults().memoryPerRequest(1024))) {
            Outcome outcome = session.submit(1).completion().get(20, TimeUnit.SECONDS);
            assertThat(outcome.status()).isEqualTo(Status.FAILED);
            assertThat(outcome.cause()).isInstanceOf(DeviceOutOfMemoryException.class).isSameAs(seen.get());
        }
        // Without a session the budget itself runs out; same rule.
        Outcome direct = worker.run(program, 1).completion().get(20, TimeUnit.SECONDS);
        assertThat(direct.status()).isEqualTo(Status.COMPLETED); // 64 KiB fits a 1 MiB budget
        Program<Integer> huge = (o, n) -> {
            try {
                o.allocate(1 << 21);
            } catch (DeviceOutOfMemoryException ignored) {
                // caught: the request has failed anyway
            }
            o.endStep(o.allocate(8).region());
        };
        Outcome failed = worker.run(huge, 1).completion().get(20, TimeUnit.SECONDS);
        assertThat(failed.status()).isEqualTo(Status.FAILED);
        assertThat(failed.cause()).isInstanceOf(DeviceOutOfMemoryException.class);
    }

    // ---- bound on a step's tasks in flight -------------------------------------------------------

    @Test
    void anEndlessStepNeverHasMoreTasksInFlightThanItsBound() throws Exception {
        int bound = 1024;
        int tasks = 300_000;
        AtomicLong finished = new AtomicLong();
        AtomicLong maxInFlight = new AtomicLong();
        Kernel count = Kernel.of("count", c -> finished.incrementAndGet());
        Program<Integer> endless = (o, n) -> {
            Buffer[] buffers = new Buffer[64];
            for (int i = 0; i < buffers.length; i++) {
                buffers[i] = o.allocate(8);
            }
            for (int i = 0; i < n; i++) {
                o.submit(count, Access.write(buffers[i % buffers.length].region()));
                // Tasks counted finished by their kernel are at most those the runtime counts.
                maxInFlight.accumulateAndGet(i + 1 - finished.get(), Math::max);
            }
        };
        Outcome outcome = worker.run(endless, tasks, RunOptions.defaults().withMaxTasksInFlight(bound))
                .completion().get(60, TimeUnit.SECONDS);
        assertThat(outcome.status()).isEqualTo(Status.COMPLETED);
        assertThat(finished.get()).isEqualTo(tasks);
        assertThat(maxInFlight.get()).as("tasks submitted and not finished, at most").isLessThanOrEqualTo(bound);
    }

    @Test
    void afterALookBelowTheBoundTheNextLookComesBeforeTheBoundCanBePassed() throws Exception {
        // Bound 16, tasks published one by one: 8 that finish, then tasks that block. The look at
        // the 16th submit finds 8 + k unfinished, k of the 8 finished but not yet counted by the
        // core (0 to 8), so the next look, where the program parks, is at its (24 - k)th submit:
        // never with more than 16 unfinished. Looking later (the look's distance miscounted)
        // would let it submit past the bound.
        CountDownLatch open = gate();
        AtomicInteger quickDone = new AtomicInteger();
        Kernel quick = Kernel.of("quick", c -> quickDone.incrementAndGet());
        Kernel blocked = Kernel.of("blocked", c -> open.await());
        AtomicInteger submitted = new AtomicInteger();
        AtomicReference<Thread> programThread = new AtomicReference<>();
        Program<Integer> program = (o, n) -> {
            programThread.set(Thread.currentThread());
            Buffer b = o.allocate(8);
            for (int i = 0; i < 8; i++) {
                o.submit(quick, Access.write(o.allocate(8).region()));
                submitted.incrementAndGet();
            }
            while (quickDone.get() < 8) {
                Thread.onSpinWait();
            }
            for (int i = 8; i < n; i++) {
                o.submit(blocked, Access.read(b.region()));
                submitted.incrementAndGet();
            }
        };
        TokenStream stream = worker.run(program, 1000,
                RunOptions.defaults().withMaxTasksInFlight(16).withPublishBatch(1));
        awaitUntil("the program parks at the bound", () -> submitted.get() >= 15 && parked(programThread));
        assertThat(submitted.get()).as("submitted when parked").isBetween(15, 23);
        stream.cancel();
        open.countDown();
        assertThat(stream.completion().get(20, TimeUnit.SECONDS).status()).isEqualTo(Status.CANCELLED);
    }

    @Test
    void aProgramParkedAtTheBoundIsWokenByCancel() throws Exception {
        CountDownLatch open = gate();
        Kernel blocked = Kernel.of("blocked", c -> open.await());
        AtomicInteger submitted = new AtomicInteger();
        AtomicReference<Thread> programThread = new AtomicReference<>();
        Program<Integer> program = (o, n) -> {
            programThread.set(Thread.currentThread());
            Buffer b = o.allocate(8);
            for (int i = 0; i < n; i++) {
                o.submit(blocked, Access.read(b.region()));
                submitted.incrementAndGet();
            }
        };
        TokenStream stream = worker.run(program, 1000, RunOptions.defaults().withMaxTasksInFlight(16));
        awaitUntil("the program parks at the bound", () -> submitted.get() == 15 && parked(programThread));
        stream.cancel();
        programThread.get().join(TimeUnit.SECONDS.toMillis(20));
        assertThat(programThread.get().isAlive()).as("program woken by the cancel").isFalse();
        assertThat(submitted.get()).isEqualTo(15); // its 16th submit parked and then threw
        open.countDown();
        assertThat(stream.completion().get(20, TimeUnit.SECONDS).status()).isEqualTo(Status.CANCELLED);
    }

    @Test
    void theBoundIsConfigurableAndValidated() {
        assertThat(RunOptions.defaults().maxTasksInFlight()).isEqualTo(65_536);
        assertThat(SessionConfig.defaults().maxTasksInFlight()).isEqualTo(65_536);
        assertThat(SessionConfig.defaults().maxTasksInFlight(7).maxTasksInFlight()).isEqualTo(7);
        assertThatThrownBy(() -> RunOptions.defaults().withMaxTasksInFlight(0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> SessionConfig.defaults().maxTasksInFlight(0)).isInstanceOf(IllegalArgumentException.class);
    }

    // ---- kernels see their request end ---------------------------------------------------------

    @Test
    void aLongKernelThatPollsCancelledEndsItsRequestSoonAfterCancel() throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        AtomicBoolean sawCancel = new AtomicBoolean();
        Kernel longRunning = Kernel.of("five-seconds", c -> {
            entered.countDown();
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (System.nanoTime() < end) {
                if (c.cancelled()) {
                    sawCancel.set(true);
                    return;
                }
                Thread.onSpinWait();
            }
        });
        Program<Integer> program = (o, n) -> {
            Buffer b = o.allocate(8);
            o.submit(longRunning, readWrite(b));
            o.endStep(b.region());
        };
        TokenStream stream = worker.run(program, 1);
        entered.await();
        long cancelledAt = System.nanoTime();
        stream.cancel();
        Outcome outcome = stream.completion().get(20, TimeUnit.SECONDS);
        long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - cancelledAt);
        assertThat(outcome.status()).isEqualTo(Status.CANCELLED);
        assertThat(sawCancel).isTrue();
        assertThat(tookMillis).as("ms from cancel() to completion (the kernel would run 5 s)").isLessThan(1_000);
    }

    @Test
    void aCancelledProgramBlockedOutsideTheRuntimeIsInterrupted() throws Exception {
        CountDownLatch never = gate();
        CountDownLatch waiting = new CountDownLatch(1);
        Program<Integer> program = (o, n) -> {
            waiting.countDown();
            never.await(); // only an interrupt ends this wait
        };
        TokenStream stream = worker.run(program, 1);
        waiting.await();
        stream.cancel();
        assertThat(stream.completion().get(20, TimeUnit.SECONDS).status()).isEqualTo(Status.CANCELLED);
        assertThat(never.getCount()).as("the program was interrupted, not released").isEqualTo(1);
    }

    // ---- policies, admission, outcome durations, stats ----------------------------------------

    record View(boolean awaitingFirstToken, long deadlineNanos, int priority) implements SchedulingPolicy.RequestView {}

    @Test
    void builtInPoliciesChooseLanesFromWhatTheyLookAt() {
        assertThat(SchedulingPolicy.FIFO.lane(new View(true, 0, 9), 0)).isEqualTo(SchedulingPolicy.NORMAL_LANE);
        assertThat(SchedulingPolicy.FIRST_TOKEN_FIRST.lane(new View(true, Long.MAX_VALUE, 0), 3))
                .isEqualTo(SchedulingPolicy.NORMAL_LANE - 2);
        assertThat(SchedulingPolicy.FIRST_TOKEN_FIRST.lane(new View(false, Long.MAX_VALUE, 0), 3))
                .isEqualTo(SchedulingPolicy.NORMAL_LANE);
        SchedulingPolicy edf = SchedulingPolicy.EARLIEST_DEADLINE;
        assertThat(edf.lane(new View(true, Long.MAX_VALUE, 0), 0)).isEqualTo(SchedulingPolicy.LANES - 1);
        long now = System.nanoTime();
        assertThat(edf.lane(new View(false, now - 1_000_000, 0), 0)).as("past").isEqualTo(0);
        long us = 1_000;
        // Lanes by the binary magnitude of the whole milliseconds left: [1, 2) ms is lane 1,
        // [2, 4) lane 2, [4, 8) lane 3, [8, 16) lane 4; each deadline sits just below its
        // bucket's top, so the time the call takes only moves it further inside.
        assertThat(edf.lane(new View(false, System.nanoTime() + 1_950 * us, 0), 0)).as("1.95 ms").isEqualTo(1);
        assertThat(edf.lane(new View(false, System.nanoTime() + 3_900 * us, 0), 0)).as("3.9 ms").isEqualTo(2);
        assertThat(edf.lane(new View(false, System.nanoTime() + 7_900 * us, 0), 0)).as("7.9 ms").isEqualTo(3);
        assertThat(edf.lane(new View(false, System.nanoTime() + 15_900 * us, 0), 0)).as("15.9 ms").isEqualTo(4);
        assertThat(edf.lane(new View(false, System.nanoTime() + 10_000_000 * us, 0), 0)).as("10 s")
                .isEqualTo(SchedulingPolicy.LANES - 2);
    }

    @Test
    void maxQueuedZeroAdmitsOnlyWhatStartsAtOnce() throws Exception {
        CountDownLatch open = gate();
        CountDownLatch entered = new CountDownLatch(1);
        Kernel wait = Kernel.of("wait", c -> {
            entered.countDown();
            open.await();
        });
        Program<Integer> gated = (o, n) -> {
            Buffer b = o.allocate(8);
            o.submit(wait, readWrite(b));
            o.endStep(b.region());
        };
        try (Session<Integer> session = worker.openSession(gated,
                SessionConfig.defaults().maxActive(1).maxQueued(0).memoryPerRequest(1024))) {
            TokenStream first = session.submit(1);
            entered.await();
            assertThatThrownBy(() -> session.submit(1)).isInstanceOfSatisfying(AdmissionRejectedException.class,
                    e -> assertThat(e.reason()).isEqualTo(AdmissionRejectedException.Reason.QUEUE_FULL));
            open.countDown();
            assertThat(first.completion().get(20, TimeUnit.SECONDS).status()).isEqualTo(Status.COMPLETED);
            assertThat(session.submit(1).completion().get(20, TimeUnit.SECONDS).status()).isEqualTo(Status.COMPLETED);
        }
    }

    @Test
    void outcomeDurationsAndSessionStatsAddUp() throws Exception {
        CountDownLatch open = gate();
        CountDownLatch entered = new CountDownLatch(1);
        Kernel wait = Kernel.of("wait", c -> {
            entered.countDown();
            open.await();
        });
        Program<Integer> program = (o, n) -> {
            Buffer counter = o.allocate(ValueLayout.JAVA_INT, 1);
            if (n < 0) {
                o.submit(wait, readWrite(counter));
            }
            for (int i = 0; i < Math.abs(n); i++) {
                o.submit(INCREMENT, readWrite(counter));
                o.endStep(counter.region());
            }
        };
        try (Session<Integer> session = worker.openSession(program,
                SessionConfig.defaults().maxActive(1).maxQueued(4).memoryPerRequest(1024))) {
            TokenStream holder = session.submit(-2);
            entered.await();
            long beforeSubmit = System.nanoTime();
            TokenStream queued = session.submit(4);
            long afterSubmit = System.nanoTime();
            TokenStream cancelled = session.submit(4);
            SessionStats during = session.stats();
            assertThat(during.active()).isEqualTo(1);
            assertThat(during.queued()).isEqualTo(2);
            assertThat(during.bytesInUse()).isEqualTo(1024);
            cancelled.cancel();
            long released = System.nanoTime();
            open.countDown();
            Outcome outcome = queued.completion().get(20, TimeUnit.SECONDS);
            long finishedAt = System.nanoTime();
            assertThat(holder.completion().get(20, TimeUnit.SECONDS).tokens()).isEqualTo(2);
            assertThat(cancelled.completion().get(20, TimeUnit.SECONDS).status()).isEqualTo(Status.CANCELLED);

            assertThat(outcome.status()).isEqualTo(Status.COMPLETED);
            assertThat(outcome.tokens()).isEqualTo(4);
            assertThat(outcome.queued().toNanos()).as("queued at least while the holder ran")
                    .isGreaterThanOrEqualTo(released - afterSubmit)
                    .isLessThanOrEqualTo(finishedAt - beforeSubmit);
            assertThat(outcome.timeToFirstToken()).isNotNull();
            assertThat(outcome.timeToFirstToken()).isGreaterThanOrEqualTo(outcome.queued())
                    .isLessThanOrEqualTo(outcome.total());
            assertThat(outcome.total().toNanos()).isLessThanOrEqualTo(finishedAt - beforeSubmit);

            SessionStats after = session.stats();
            assertThat(after.active()).isZero();
            assertThat(after.queued()).isZero();
            assertThat(after.bytesInUse()).isZero();
            assertThat(after.finished()).isEqualTo(Map.of(Status.COMPLETED, 2L, Status.CANCELLED, 1L));
            assertThat(after.tokensDelivered()).isEqualTo(6);
        }
    }
}
