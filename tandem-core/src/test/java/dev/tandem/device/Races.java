package dev.tandem.device;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * A small jcstress-style harness for the stress tests of the lock-free protocols: many races,
 * each on a fresh state, between two to four actor threads; after each race an arbiter names
 * its outcome, and the test classifies outcomes as ACCEPTABLE or FORBIDDEN.
 *
 * <p>A barrier per race would start the actors microseconds apart — far wider than the
 * nanosecond windows of a CAS race. So the actors are long-lived platform threads that meet
 * at a {@link CyclicBarrier} once per batch of fresh states, and then align on every single
 * state with a spin rendezvous (each increments the state's arrival counter and spins until
 * all have arrived) before acting: they enter each race within a cache-line transfer of each
 * other. On an oversubscribed machine the spin falls back to {@link Thread#yield()}. Since
 * whoever arrives last at a rendezvous leaves it first, by a cache-line transfer or so, every
 * other race each actor also spins a random few iterations before acting: otherwise the
 * narrow windows in the middle of an operation (between a CAS and the next step) are rarely
 * hit.
 *
 * <p>No sleeps anywhere; every wait is bounded by a deadline that fails the test instead of
 * hanging it.
 */
public final class Races {

    /** One actor's part of a race. */
    public interface Actor<S> {
        void act(S state) throws Exception;
    }

    private static final int BATCH = 256;
    private static final int SPINS_BEFORE_YIELD = 2_000;
    private static final int MAX_JITTER_SPINS = 64;

    private Races() {
    }

    /**
     * Runs {@code races} races of {@code actors} on states made by {@code fresh}, names each
     * outcome with {@code arbiter} and fails on the first outcome that {@code acceptable}
     * rejects.
     *
     * @return how often each outcome was seen, by name (sorted)
     */
    @SafeVarargs
    public static <S> Map<String, Long> run(int races, long patienceNanos, Supplier<S> fresh, Function<S, String> arbiter,
            Predicate<String> acceptable, Actor<S>... actors) throws InterruptedException {
        int parties = actors.length;
        long deadline = System.nanoTime() + patienceNanos;
        AtomicReference<List<Slot<S>>> batch = new AtomicReference<>();
        AtomicReference<String> failure = new AtomicReference<>();
        CyclicBarrier barrier = new CyclicBarrier(parties + 1);
        List<Thread> threads = new ArrayList<>();
        for (int a = 0; a < parties; a++) {
            Actor<S> actor = actors[a];
            threads.add(Thread.ofPlatform().name("actor-" + a).daemon().start(() -> {
                try {
                    while (true) {
                        barrier.await();
                        List<Slot<S>> slots = batch.get();
                        if (slots == null) {
                            return;
                        }
                        ThreadLocalRandom random = ThreadLocalRandom.current();
                        for (Slot<S> slot : slots) {
                            if (!rendezvous(slot.arrived, parties, deadline, failure)) {
                                break;
                            }
                            if (random.nextBoolean()) {
                                for (int spins = random.nextInt(MAX_JITTER_SPINS); spins > 0; spins--) {
                                    Thread.onSpinWait();
                                }
                            }
                            try {
                                actor.act(slot.state);
                            } catch (Exception | Error e) {
                                slot.thrown.compareAndSet(null, Thread.currentThread().getName() + " threw " + e);
                            }
                        }
                        barrier.await();
                    }
                } catch (InterruptedException | BrokenBarrierException e) {
                    failure.compareAndSet(null, Thread.currentThread().getName() + ": " + e);
                }
            }));
        }
        Map<String, Long> outcomes = new TreeMap<>();
        try {
            for (int done = 0; done < races; done += BATCH) {
                List<Slot<S>> slots = new ArrayList<>(BATCH);
                for (int i = 0; i < Math.min(BATCH, races - done); i++) {
                    slots.add(new Slot<>(fresh.get()));
                }
                batch.set(slots);
                barrier.await(remaining(deadline), TimeUnit.NANOSECONDS);
                barrier.await(remaining(deadline), TimeUnit.NANOSECONDS);
                if (failure.get() != null) {
                    throw new AssertionError(failure.get() + "; outcomes so far " + outcomes);
                }
                for (Slot<S> slot : slots) {
                    String outcome = slot.thrown.get() != null ? slot.thrown.get() : arbiter.apply(slot.state);
                    outcomes.merge(outcome, 1L, Long::sum);
                    if (!acceptable.test(outcome)) {
                        throw new AssertionError("FORBIDDEN outcome: " + outcome + "; outcomes so far " + outcomes);
                    }
                }
            }
        } catch (TimeoutException | BrokenBarrierException e) {
            throw new AssertionError("a batch of races did not complete: " + failure.get() + "; outcomes so far " + outcomes, e);
        } finally {
            batch.set(null);
            if (!barrier.isBroken()) {
                try {
                    barrier.await(remaining(deadline), TimeUnit.NANOSECONDS);
                } catch (TimeoutException | BrokenBarrierException e) {
                    // the actors are daemons stuck in a failed batch; the failure is reported already
                }
            }
            for (Thread thread : threads) {
                thread.join(TimeUnit.SECONDS.toMillis(10));
            }
        }
        return outcomes;
    }

    private static boolean rendezvous(AtomicInteger arrived, int parties, long deadline, AtomicReference<String> failure) {
        arrived.incrementAndGet();
        for (int spins = 0; arrived.get() < parties; spins++) {
            if (spins < SPINS_BEFORE_YIELD) {
                Thread.onSpinWait();
            } else {
                if (failure.get() != null) {
                    return false;
                }
                if (System.nanoTime() - deadline > 0) {
                    failure.compareAndSet(null, "timed out at a race rendezvous");
                    return false;
                }
                Thread.yield();
            }
        }
        return true;
    }

    private static long remaining(long deadline) {
        return Math.max(0, deadline - System.nanoTime()) + TimeUnit.SECONDS.toNanos(10);
    }

    private static final class Slot<S> {
        final S state;
        final AtomicInteger arrived = new AtomicInteger();
        final AtomicReference<String> thrown = new AtomicReference<>();

        Slot(S state) {
            this.state = state;
        }
    }
}
