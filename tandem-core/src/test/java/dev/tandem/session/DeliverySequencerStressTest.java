package dev.tandem.session;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.graph.Step;
import dev.tandem.graph.StepOwner;
import dev.tandem.device.Races;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Stress tests of {@link DeliverySequencer} on real platform threads: steps finish on several
 * threads in random order; the consumer must see every step exactly once, in index order, and
 * never two calls at once (it detects overlap with an {@link AtomicInteger}).
 *
 * <p>Two kinds: long runs (100,000 steps on four threads), where the producers respect the
 * sequencer's contract — a step is finished only while it is fewer than {@code inFlight} steps
 * ahead of the next step to hand over — by waiting on {@link DeliverySequencer#next()}, as the
 * request's run-ahead gate does in the runtime; and jcstress-style races on fresh sequencers
 * ({@link Races}), whose outcomes are classified ACCEPTABLE or FORBIDDEN.
 *
 * <p>{@code -Dtandem.long=true} multiplies the step and race counts by 10.
 */
@Timeout(value = 30, unit = TimeUnit.MINUTES) // a last resort: the tests' own deadlines fail them first
class DeliverySequencerStressTest {

    static final boolean LONG = Boolean.getBoolean("tandem.long");
    static final int SCALE = LONG ? 10 : 1;
    /** How long a test may wait for progress before it fails (rather than hangs). */
    static final long PATIENCE_NANOS = LONG ? TimeUnit.MINUTES.toNanos(10) : TimeUnit.SECONDS.toNanos(60);
    static final int THREADS = 4;

    /** The consumer: checks order and exclusion; records the first violation. */
    static final class OrderChecker implements Consumer<Step> {
        final AtomicInteger inConsumer = new AtomicInteger();
        final AtomicReference<String> failure = new AtomicReference<>();
        /** Written only inside the consumer, which the sequencer never calls concurrently. */
        long expected;
        final int slowEvery;

        OrderChecker(int slowEvery) {
            this.slowEvery = slowEvery;
        }

        @Override
        public void accept(Step step) {
            if (inConsumer.getAndIncrement() != 0) {
                failure.compareAndSet(null, "consumer called concurrently at step " + step.index());
            }
            if (step.index() != expected) {
                failure.compareAndSet(null, "step " + step.index() + " delivered when step " + expected + " was due");
            }
            expected = step.index() + 1;
            if (slowEvery > 0 && ThreadLocalRandom.current().nextInt(slowEvery) == 0) {
                spin(200); // a slow consumer: more steps finish while one thread is draining
            }
            inConsumer.getAndDecrement();
        }
    }

    static void spin(int iterations) {
        for (int i = 0; i < iterations; i++) {
            Thread.onSpinWait();
        }
    }

    /** Steps 0..n-1 in an order shuffled within consecutive windows of {@code window} steps. */
    static int[] windowShuffled(int n, int window, SplittableRandom random) {
        int[] order = new int[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        for (int from = 0; from < n; from += window) {
            int to = Math.min(n, from + window);
            for (int i = to - 1; i > from; i--) {
                int j = from + random.nextInt(i - from + 1);
                int tmp = order[i];
                order[i] = order[j];
                order[j] = tmp;
            }
        }
        return order;
    }

    /**
     * Runs {@code order} through a sequencer on {@link #THREADS} threads: each thread takes the
     * next entry of {@code order} from a shared cursor, waits until that step is within
     * {@code inFlight} of delivery, and finishes it.
     */
    static OrderChecker deliver(int[] order, int inFlight, int slowEvery) throws InterruptedException {
        return deliver(order, inFlight, slowEvery, null);
    }

    /**
     * As above, with each drain handed to a fresh virtual thread when {@code handOff} is set
     * (as a request does when a core finishes a step), counting drains so the checks below
     * run after the last one returned.
     */
    static OrderChecker deliver(int[] order, int inFlight, int slowEvery, AtomicInteger handOff)
            throws InterruptedException {
        StepOwner owner = DeliverySequencerLincheckTest.noOwner();
        Step[] steps = new Step[order.length];
        for (int i = 0; i < steps.length; i++) {
            steps[i] = new Step(owner, i);
        }
        OrderChecker checker = new OrderChecker(slowEvery);
        DeliverySequencer sequencer = handOff == null
                ? new DeliverySequencer(inFlight, checker)
                : new DeliverySequencer(inFlight, checker, drain -> {
                    handOff.incrementAndGet();
                    Thread.ofVirtual().start(() -> {
                        try {
                            drain.run();
                        } finally {
                            handOff.decrementAndGet();
                        }
                    });
                });
        AtomicInteger cursor = new AtomicInteger();
        CyclicBarrier start = new CyclicBarrier(THREADS);
        long deadline = System.nanoTime() + PATIENCE_NANOS;
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            threads.add(Thread.ofPlatform().name("finisher-" + t).daemon().start(() -> {
                try {
                    start.await();
                    for (int i = cursor.getAndIncrement(); i < order.length; i = cursor.getAndIncrement()) {
                        int index = order[i];
                        while (index - sequencer.next() >= inFlight) { // the run-ahead gate
                            if (checker.failure.get() != null) {
                                return;
                            }
                            if (System.nanoTime() - deadline > 0) {
                                checker.failure.compareAndSet(null, "step " + index + " waited in vain for delivery to reach "
                                        + (index - inFlight + 1) + "; it is at " + sequencer.next());
                                return;
                            }
                            Thread.yield(); // wait for delivery to catch up
                        }
                        sequencer.finished(steps[index]);
                    }
                } catch (InterruptedException | BrokenBarrierException | RuntimeException e) {
                    checker.failure.compareAndSet(null, Thread.currentThread().getName() + ": " + e);
                }
            }));
        }
        for (Thread thread : threads) {
            thread.join(TimeUnit.NANOSECONDS.toMillis(PATIENCE_NANOS) + 10_000);
            assertThat(thread.isAlive()).as("%s finished", thread.getName()).isFalse();
        }
        while (handOff != null && handOff.get() > 0 && System.nanoTime() - deadline < 0) {
            Thread.yield(); // the last drain runs on its own thread
        }
        assertThat(checker.failure.get()).isNull();
        assertThat(checker.expected).isEqualTo(order.length);
        assertThat(sequencer.next()).isEqualTo(order.length);
        assertThat(checker.inConsumer.get()).isZero();
        return checker;
    }

    /** A small ring wrapped thousands of times: every slot is reused while neighbours race. */
    @Test
    void fourThreadsFinishingStepsInRandomOrderThroughASmallRing() throws InterruptedException {
        SplittableRandom random = new SplittableRandom(0xde11_7e5L);
        int steps = 100_000 * SCALE;
        deliver(windowShuffled(steps, 4, random), 4, 64);
    }

    /** The same with every drain on a thread of its own: one drain at a time, in order, none lost. */
    @Test
    void drainsHandedToOtherThreadsKeepOrderAndLoseNothing() throws InterruptedException {
        SplittableRandom random = new SplittableRandom(0x0ff_c0deL);
        int steps = 50_000 * SCALE;
        AtomicInteger drains = new AtomicInteger();
        deliver(windowShuffled(steps, 4, random), 4, 64, drains);
        assertThat(drains.get()).isZero();
    }

    /** No wrap-around, but any step may finish first: arbitrary order across all steps. */
    @Test
    void fourThreadsFinishingStepsInAnyOrder() throws InterruptedException {
        SplittableRandom random = new SplittableRandom(0x0dd_0dd5L);
        int steps = 100_000 * SCALE;
        deliver(windowShuffled(steps, steps, random), steps, 0);
    }

    static final int RACES = 20_000 * SCALE;

    /**
     * One race: a fresh sequencer over fresh steps; the consumer records the order of
     * delivery, which actor delivered each step, and any overlap of two consumer calls.
     */
    static final class SequencerRace {
        final Step[] steps;
        final DeliverySequencer sequencer;
        final StringBuilder order = new StringBuilder();
        final StringBuilder deliverers = new StringBuilder();
        final AtomicInteger inConsumer = new AtomicInteger();
        volatile boolean overlap;

        SequencerRace(int stepCount, int inFlight) {
            StepOwner owner = DeliverySequencerLincheckTest.noOwner();
            steps = new Step[stepCount];
            for (int i = 0; i < stepCount; i++) {
                steps[i] = new Step(owner, i);
            }
            sequencer = new DeliverySequencer(inFlight, step -> {
                if (inConsumer.getAndIncrement() != 0) {
                    overlap = true;
                }
                order.append(step.index());
                String name = Thread.currentThread().getName();
                deliverers.append(name.startsWith("actor-") ? name.substring("actor-".length()) : "m");
                inConsumer.getAndDecrement();
            });
        }

        void finish(int index) {
            sequencer.finished(steps[index]);
        }

        /** The delivery order, then which actor delivered each step (m: the main thread). */
        String outcome() {
            return (overlap ? "OVERLAP " : "") + order + " by " + deliverers;
        }
    }

    /** ACCEPTABLE: steps 0..n-1 in order, whoever delivered them. FORBIDDEN: anything else. */
    static Predicate<String> inOrder(String steps) {
        return outcome -> outcome.startsWith(steps + " by ");
    }

    /**
     * Three actors finish steps 2, 1 and 0 of a fresh sequencer at once.
     * <ul>
     *   <li>ACCEPTABLE {@code 012 by ...}: in order, each step delivered once, by any actor
     *       (the one that finished it, or the drainer of another);
     *   <li>FORBIDDEN: a step missing (a lost signal: nobody drained it), repeated, out of
     *       order, or two consumer calls overlapping.
     * </ul>
     * The outcomes must include a step delivered by an actor other than its finisher (any
     * outcome but {@code 012 by 210}): otherwise the drain race was not exercised.
     */
    @Test
    void threeActorsFinishThreeSteps() throws InterruptedException {
        // fewer: three actors on two cores rendezvous slowly, by turns when the cores are busy
        Map<String, Long> outcomes = Races.run(RACES / 4, PATIENCE_NANOS, () -> new SequencerRace(3, 2),
                SequencerRace::outcome, inOrder("012"),
                race -> race.finish(2),
                race -> race.finish(1),
                race -> race.finish(0));
        assertThat(outcomes.keySet()).anyMatch(outcome -> !outcome.equals("012 by 210"));
    }

    /**
     * Two actors finish two steps each: one 1 then 3, the other 0 then 2 — steps arrive
     * while the other actor is draining, which must pick them up through its missed count.
     * ACCEPTABLE {@code 0123 by ...}; FORBIDDEN as above.
     */
    @Test
    void twoActorsFinishTwoStepsEach() throws InterruptedException {
        Races.run(RACES, PATIENCE_NANOS, () -> new SequencerRace(4, 2),
                SequencerRace::outcome, inOrder("0123"),
                race -> {
                    race.finish(1);
                    race.finish(3);
                },
                race -> {
                    race.finish(0);
                    race.finish(2);
                });
    }

    /**
     * A ring of two slots that has wrapped once (steps 0 and 1 delivered before the race);
     * two actors finish steps 3 and 2, which reuse the slots of 1 and 0.
     * ACCEPTABLE {@code 0123 by mm...}; FORBIDDEN as above.
     */
    @Test
    void twoActorsFinishStepsInAWrappedRing() throws InterruptedException {
        Races.run(RACES, PATIENCE_NANOS,
                () -> {
                    SequencerRace race = new SequencerRace(4, 1);
                    race.finish(0);
                    race.finish(1);
                    return race;
                },
                SequencerRace::outcome, inOrder("0123"),
                race -> race.finish(3),
                race -> race.finish(2));
    }
}
