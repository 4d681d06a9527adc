package dev.tandem.session;

import dev.tandem.graph.Step;
import dev.tandem.graph.StepOwner;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.jetbrains.kotlinx.lincheck.Actor;
import org.jetbrains.kotlinx.lincheck.execution.ExecutionScenario;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Validate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Model checking of {@link DeliverySequencer} with Lincheck: threads call {@code finished} for
 * distinct step indices in every interleaving Lincheck explores; the consumer must see each
 * step exactly once, in index order, and never two calls at once.
 *
 * <p>The consumer detects overlap itself: it increments an {@link AtomicInteger} on entry and
 * decrements it on exit; any entry that does not find 0 is a violation. The delivered
 * sequence and the violations are checked by the validation function at the end of each
 * interleaving.
 *
 * <p>Every scenario respects the sequencer's contract: a step is finished only while it is
 * fewer than {@code capacity} steps ahead of the next step to hand over, whatever the
 * interleaving (the request's run-ahead gate guarantees that in the runtime).
 */
@Timeout(value = 30, unit = TimeUnit.MINUTES) // for -Dtandem.long=true; Lincheck detects hangs itself
class DeliverySequencerLincheckTest {

    static final int INVOCATIONS = Boolean.getBoolean("tandem.long") ? 100_000 : 2_000;

    /** One sequencer with a recording consumer; subclasses fix the ring size. */
    public abstract static class Sequencing {
        final StepOwner owner = noOwner();
        final List<Step> steps = new ArrayList<>();
        final int[] delivered = new int[16];
        final AtomicInteger deliveredCount = new AtomicInteger();
        final AtomicInteger inConsumer = new AtomicInteger();
        final AtomicReference<String> violations = new AtomicReference<>("");
        final DeliverySequencer sequencer;

        Sequencing(int inFlight) {
            for (int i = 0; i < delivered.length; i++) {
                steps.add(new Step(owner, i));
            }
            sequencer = new DeliverySequencer(inFlight, new Consumer<>() {
                @Override
                public void accept(Step step) {
                    if (inConsumer.getAndIncrement() != 0) {
                        violation("consumer called concurrently at step " + step.index());
                    }
                    delivered[deliveredCount.getAndIncrement()] = (int) step.index();
                    inConsumer.getAndDecrement();
                }
            });
        }

        private void violation(String what) {
            while (true) {
                String all = violations.get();
                if (violations.compareAndSet(all, all + what + "; ")) {
                    return;
                }
            }
        }

        @Operation
        public void finish(int index) {
            sequencer.finished(steps.get(index));
        }

        /** Expects steps 0..n-1 delivered, where n is the number of distinct finishes. */
        @Validate
        public void check() {
            String v = violations.get();
            if (!v.isEmpty()) {
                throw new AssertionError(v);
            }
            int n = deliveredCount.get();
            for (int i = 0; i < n; i++) {
                if (delivered[i] != i) {
                    throw new AssertionError("delivery " + i + " was step " + delivered[i] + "; order " + order(n));
                }
            }
            if (n != expected() || sequencer.next() != expected()) {
                throw new AssertionError("delivered " + order(n) + " (next() = " + sequencer.next()
                        + "), expected steps 0.." + (expected() - 1));
            }
        }

        private String order(int n) {
            StringBuilder s = new StringBuilder("[");
            for (int i = 0; i < n; i++) {
                s.append(i == 0 ? "" : ", ").append(delivered[i]);
            }
            return s.append(']').toString();
        }

        /** The number of steps the scenario finishes. */
        abstract int expected();
    }

    /** Ring of 4: three threads finish steps 0, 1, 2. */
    public static class ThreeSteps extends Sequencing {
        public ThreeSteps() {
            super(2);
        }

        @Override
        int expected() {
            return 3;
        }
    }

    /** Ring of 2, already wrapped once: steps 0 and 1 delivered up front, then 2 and 3 race. */
    public static class Wrapped extends Sequencing {
        public Wrapped() {
            super(1);
        }

        @Override
        int expected() {
            return 4;
        }
    }

    /**
     * Ring of 8: one thread finishes 1 then 3, another 0 then 2, a third 4 — so steps arrive
     * while a drainer is mid-loop and the drainer must pick them up through its missed count.
     */
    public static class Interleaved extends Sequencing {
        public Interleaved() {
            super(4);
        }

        @Override
        int expected() {
            return 5;
        }
    }

    static Actor finish(int index) {
        try {
            return new Actor(Sequencing.class.getMethod("finish", int.class), List.of(index));
        } catch (NoSuchMethodException e) {
            throw new AssertionError(e);
        }
    }

    static ModelCheckingOptions options(ExecutionScenario scenario) {
        return new ModelCheckingOptions()
                .iterations(0) // only the custom scenario
                .invocationsPerIteration(INVOCATIONS)
                .checkObstructionFreedom(true)
                .addCustomScenario(scenario);
    }

    @Test
    void threeStepsFinishingOnThreeThreadsAreDeliveredInOrder() {
        options(new ExecutionScenario(
                List.of(),
                List.of(List.of(finish(2)), List.of(finish(1)), List.of(finish(0))),
                List.of(),
                null)).check(ThreeSteps.class);
    }

    @Test
    void stepsRacingInAWrappedRingAreDeliveredInOrder() {
        options(new ExecutionScenario(
                List.of(finish(0), finish(1)),
                List.of(List.of(finish(3)), List.of(finish(2))),
                List.of(),
                null)).check(Wrapped.class);
    }

    @Test
    void stepsArrivingWhileAnotherThreadDrainsAreDeliveredInOrder() {
        options(new ExecutionScenario(
                List.of(),
                List.of(List.of(finish(1), finish(3)), List.of(finish(0), finish(2)), List.of(finish(4))),
                List.of(),
                null)).check(Interleaved.class);
    }

    /**
     * A step owner that nothing reports to: the sequencer reads only the steps' indices. A
     * proxy, so that the test does not depend on the owner interface's other methods.
     */
    static StepOwner noOwner() {
        return (StepOwner) Proxy.newProxyInstance(StepOwner.class.getClassLoader(), new Class<?>[] {StepOwner.class},
                (proxy, method, args) -> switch (method.getName()) {
                    case "requestId" -> 1L;
                    case "toString" -> "no owner";
                    case "hashCode" -> 0;
                    case "equals" -> proxy == args[0];
                    default -> throw new AssertionError("unexpected call of " + method.getName());
                });
    }
}
