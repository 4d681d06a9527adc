package dev.tandem.device;

import dev.tandem.Kernel;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReference;
import org.jetbrains.kotlinx.lincheck.Actor;
import org.jetbrains.kotlinx.lincheck.execution.ExecutionScenario;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Validate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Model checking of the readiness protocol (DESIGN.md, "Readiness") with Lincheck.
 *
 * <p>The host side of a request is single-threaded by contract, so each scenario has one
 * thread that runs the whole host sequence (wire edges, then publish) and one thread per
 * predecessor that finishes it. A task runs only after its publication, so the predecessors
 * that the other threads finish are published in the scenario's initial state, as tasks of an
 * earlier batch; {@link Batch} models a batch published last task first. Lincheck explores the interleavings of their shared-memory
 * accesses. The invariants, checked in the validation function after every interleaving:
 * <ul>
 *   <li>every published task becomes ready exactly once — counted over the three ways a task
 *       can become ready: {@code publish()} returned true, {@code finish} returned it, or
 *       {@code finish} handed it to its {@link TaskNode.ReadySink};
 *   <li>a task never becomes ready before its publication, nor while a predecessor whose edge
 *       {@code wireTo} reported as wired is unfinished (its successor stack not yet closed);
 *   <li>when everything is done, every pending counter is 0.
 * </ul>
 *
 * <p>The scenarios are fixed (custom scenarios, no random generation): the operations are not
 * meaningful in arbitrary combinations, e.g. finishing a task twice breaks its contract. All
 * operations return nothing, so the linearizability check is trivially satisfied and the
 * validation function carries the whole specification.
 *
 * <p>Notes on Lincheck (3.7 on JDK 25): it instruments bytecode through a Java agent that it
 * attaches to the running JVM, which needs {@code -XX:+EnableDynamicAgentLoading} (in the
 * parent POM's {@code tandem.test.argLine}); code that runs under Lincheck must not use
 * AssertJ, whose assertion objects throw from {@code equals}, which Lincheck's trace
 * collection calls. Model checking assumes sequential consistency: the memory-ordering side
 * of the protocol is left to {@link TaskNodeStressTest} on real threads.
 */
@Timeout(value = 30, unit = TimeUnit.MINUTES) // for -Dtandem.long=true; Lincheck detects hangs itself
class TaskNodeLincheckTest {

    static final Kernel NOOP = Kernel.of("noop", c -> { });

    /** Invocations (explored interleavings) per scenario. */
    static final int INVOCATIONS = Boolean.getBoolean("tandem.long") ? 100_000 : 3_000;

    /**
     * Two predecessors, one successor: host wires p1→t, p2→t, publishes t; two threads finish
     * p1 and p2.
     */
    public static class Join {
        final TaskNode p1 = new TaskNode(NOOP, null, null, null, 1, null);
        final TaskNode p2 = new TaskNode(NOOP, null, null, null, 2, null);
        final TaskNode t = new TaskNode(NOOP, null, null, null, 3, null);

        {
            publishedEarlier(p1, p2);
        }

        final Readiness readiness = new Readiness(t) {
            @Override
            boolean predecessorsDone(TaskNode task) {
                return (!wired1 || p1.isFinished()) && (!wired2 || p2.isFinished());
            }
        };

        volatile boolean wired1;
        volatile boolean wired2;

        @Operation
        public void host() {
            wired1 = p1.wireTo(t);
            wired2 = p2.wireTo(t);
            readiness.publishing(t);
            if (t.publish()) {
                readiness.ready(t);
            }
        }

        @Operation
        public void finishP1() {
            readiness.finish(p1);
        }

        @Operation
        public void finishP2() {
            readiness.finish(p2);
        }


        @Validate
        public void check() {
            readiness.check();
            require(p1.isFinished() && p2.isFinished(), "both predecessors finished");
        }
    }

    /**
     * Two predecessors, two successors, each depending on both, and a publication between the
     * wirings: host wires p1→t, p2→t, publishes t, wires p1→u, p2→u, publishes u. A
     * predecessor that releases both successors returns one and hands the other to its sink.
     */
    public static class Crossed {
        final TaskNode p1 = new TaskNode(NOOP, null, null, null, 1, null);
        final TaskNode p2 = new TaskNode(NOOP, null, null, null, 2, null);
        final TaskNode t = new TaskNode(NOOP, null, null, null, 3, null);
        final TaskNode u = new TaskNode(NOOP, null, null, null, 4, null);

        {
            publishedEarlier(p1, p2);
        }

        final Readiness readiness = new Readiness(t, u) {
            @Override
            boolean predecessorsDone(TaskNode task) {
                return task == t
                        ? (!wired1t || p1.isFinished()) && (!wired2t || p2.isFinished())
                        : (!wired1u || p1.isFinished()) && (!wired2u || p2.isFinished());
            }
        };

        volatile boolean wired1t;
        volatile boolean wired2t;
        volatile boolean wired1u;
        volatile boolean wired2u;

        @Operation
        public void host() {
            wired1t = p1.wireTo(t);
            wired2t = p2.wireTo(t);
            readiness.publishing(t);
            if (t.publish()) {
                readiness.ready(t);
            }
            wired1u = p1.wireTo(u);
            wired2u = p2.wireTo(u);
            readiness.publishing(u);
            if (u.publish()) {
                readiness.ready(u);
            }
        }

        @Operation
        public void finishP1() {
            readiness.finish(p1);
        }

        @Operation
        public void finishP2() {
            readiness.finish(p2);
        }

        @Validate
        public void check() {
            readiness.check();
        }
    }

    /**
     * A chain racing its own wiring: host wires a→b, publishes b, wires b→c, publishes c;
     * one thread finishes a, then finishes b if (and only if) that thread made b ready — the
     * "finishing core runs one ready successor itself" path of the design. A second thread
     * finishes b if it got b from the host's publication. So b's finish and the wiring of b→c
     * race too.
     */
    public static class Chain {
        final TaskNode a = new TaskNode(NOOP, null, null, null, 1, null);
        final TaskNode b = new TaskNode(NOOP, null, null, null, 2, null);
        final TaskNode c = new TaskNode(NOOP, null, null, null, 3, null);

        {
            publishedEarlier(a);
        }

        final Readiness readiness = new Readiness(b, c) {
            @Override
            boolean predecessorsDone(TaskNode task) {
                return task == b ? !wiredAb || a.isFinished() : !wiredBc || b.isFinished();
            }
        };

        volatile boolean wiredAb;
        volatile boolean wiredBc;
        /** Set when b became ready through the host's publication; that thread then runs b. */
        volatile boolean bReadyOnHost;

        @Operation
        public void host() {
            wiredAb = a.wireTo(b);
            readiness.publishing(b);
            if (b.publish()) {
                readiness.ready(b);
                bReadyOnHost = true;
            }
            wiredBc = b.wireTo(c);
            readiness.publishing(c);
            if (c.publish()) {
                readiness.ready(c);
            }
        }

        @Operation
        public void finishAThenB() {
            TaskNode next = readiness.finish(a);
            if (next == b) {
                readiness.finish(b);
            }
        }

        /** The core that picks b from the ready queue when the host made b ready. */
        @Operation
        public void finishBIfHostMadeItReady() {
            if (bReadyOnHost) {
                readiness.finish(b);
            }
        }

        @Validate
        public void check() {
            // b is finished only if some thread saw it ready; with the host's publication and
            // the third thread racing, b may stay unfinished in an interleaving where the third
            // thread looked before the host published. Then c is still waiting, correctly.
            if (b.isFinished()) {
                readiness.check();
            } else {
                require(readiness.readyCount(b) == 1, "b ready once, got " + readiness.readyCount(b));
                require(readiness.readyCount(c) == 0, "c waits for b");
                require(wiredBc && c.pendingCount() == 1, "c counts b as its one pending predecessor");
                require(readiness.violations().isEmpty(), readiness.violations());
            }
        }
    }

    /**
     * A batch published last task first, racing the finish of an earlier batch's task: q is
     * published (and running); the host wires q→p, p→t, q→u and p→u, then publishes u, t, p in
     * that order, as the runtime publishes a batch [p, t, u]. t is wired only to p, of its own
     * batch, so its guard is dropped with a plain write; p and u, wired to the published q,
     * drop theirs atomically. One thread finishes q, then p if that made p ready; another
     * finishes p if the host's publication made it ready.
     */
    public static class Batch {
        final TaskNode q = new TaskNode(NOOP, null, null, null, 1, null);
        final TaskNode p = new TaskNode(NOOP, null, null, null, 2, null);
        final TaskNode t = new TaskNode(NOOP, null, null, null, 3, null);
        final TaskNode u = new TaskNode(NOOP, null, null, null, 4, null);

        {
            publishedEarlier(q);
        }

        final Readiness readiness = new Readiness(p, t, u) {
            @Override
            boolean predecessorsDone(TaskNode task) {
                return task == p ? !wiredQp || q.isFinished()
                        : task == t ? p.isFinished()
                        : (!wiredQu || q.isFinished()) && p.isFinished();
            }
        };

        volatile boolean wiredQp;
        volatile boolean wiredQu;
        volatile boolean pReadyOnHost;

        @Operation
        public void host() {
            wiredQp = q.wireTo(p);
            require(p.wireTo(t), "p is unpublished: the edge is wired");
            wiredQu = q.wireTo(u);
            require(p.wireTo(u), "p is unpublished: the edge is wired");
            for (TaskNode task : order()) {
                readiness.publishing(task);
                if (task.publish()) {
                    readiness.ready(task);
                    if (task == p) {
                        pReadyOnHost = true;
                    }
                }
            }
        }

        /** The batch's publication order. */
        TaskNode[] order() {
            return new TaskNode[] {u, t, p};
        }

        @Operation
        public void finishQThenP() {
            if (readiness.finish(q) == p) {
                readiness.finish(p);
            }
        }

        @Operation
        public void finishPIfHostMadeItReady() {
            if (pReadyOnHost) {
                readiness.finish(p);
            }
        }

        @Validate
        public void check() {
            if (p.isFinished()) {
                readiness.check();
            } else {
                // the third thread looked before the host made p ready: p ready once, t and u wait for it
                require(readiness.readyCount(p) == 1, "p ready once, got " + readiness.readyCount(p));
                require(readiness.readyCount(t) == 0 && readiness.readyCount(u) == 0, "t and u wait for p");
                require(t.pendingCount() == 1 && u.pendingCount() == 1, "t and u count p as pending");
                require(readiness.violations().isEmpty(), readiness.violations());
            }
        }
    }

    /** {@link Batch} published first task first, which the runtime must not do. */
    public static class BatchInSubmissionOrder extends Batch {
        @Override
        TaskNode[] order() {
            return new TaskNode[] {p, t, u};
        }
    }

    /** Tasks of an earlier batch, published before the scenario starts (they run in it). */
    static void publishedEarlier(TaskNode... tasks) {
        for (TaskNode task : tasks) {
            require(task.publish(), "a task nothing was wired to is ready at its publication");
        }
    }

    /**
     * Records readiness: how often each tracked task became ready, and whether the invariants
     * held at that moment. Lock-free itself (an AtomicInteger per task, a CAS-appended list of
     * violations), so that the obstruction-freedom check applies to the protocol alone.
     */
    abstract static class Readiness implements TaskNode.ReadySink {
        final TaskNode[] tracked;
        final AtomicIntegerArray readyCounts;
        final AtomicIntegerArray published;
        final AtomicReference<String> violations = new AtomicReference<>("");
        /** Whether every predecessor that {@code wireTo} reported as wired has finished. */
        abstract boolean predecessorsDone(TaskNode task);

        Readiness(TaskNode... tracked) {
            this.tracked = tracked;
            this.readyCounts = new AtomicIntegerArray(tracked.length);
            this.published = new AtomicIntegerArray(tracked.length);
        }

        int slot(TaskNode task) {
            for (int i = 0; i < tracked.length; i++) {
                if (tracked[i] == task) {
                    return i;
                }
            }
            throw new AssertionError("untracked task became ready: " + task);
        }

        /** Host, immediately before {@code task.publish()}. */
        void publishing(TaskNode task) {
            published.set(slot(task), 1);
        }

        @Override
        public void ready(TaskNode task) {
            int i = slot(task);
            readyCounts.incrementAndGet(i);
            if (published.get(i) == 0) {
                violation(task.index() + " ready before its publication");
            }
            if (!predecessorsDone(task)) {
                violation(task.index() + " ready while a wired predecessor is unfinished");
            }
        }

        private void violation(String what) {
            while (true) {
                String all = violations.get();
                if (violations.compareAndSet(all, all + what + "; ")) {
                    return;
                }
            }
        }

        /** Finishes {@code task} the way a core does, recording what became ready. */
        TaskNode finish(TaskNode task) {
            TaskNode next = task.finish(this);
            if (next != null) {
                ready(next);
            }
            return next;
        }

        int readyCount(TaskNode task) {
            return readyCounts.get(slot(task));
        }

        String violations() {
            return violations.get();
        }

        void check() {
            require(violations().isEmpty(), violations());
            for (int i = 0; i < tracked.length; i++) {
                require(readyCounts.get(i) == 1,
                        "task " + tracked[i].index() + " became ready " + readyCounts.get(i) + " times");
                require(tracked[i].pendingCount() == 0,
                        "task " + tracked[i].index() + " has pending " + tracked[i].pendingCount());
            }
        }
    }

    /**
     * Assertion for code that runs under Lincheck: AssertJ's assertion objects throw from
     * {@code equals}, which Lincheck's trace collection calls.
     */
    static void require(boolean condition, String message) {
        if (!condition) {
            throw new AssertionError(message);
        }
    }

    static ExecutionScenario threeThreads(Class<?> test, String host, String finisher1, String finisher2) {
        return new ExecutionScenario(
                List.of(),
                List.of(List.of(actor(test, host)), List.of(actor(test, finisher1)), List.of(actor(test, finisher2))),
                List.of(),
                null);
    }

    static Actor actor(Class<?> test, String method) {
        try {
            return new Actor(test.getMethod(method), List.of());
        } catch (NoSuchMethodException e) {
            throw new AssertionError(e);
        }
    }

    static ModelCheckingOptions options() {
        return new ModelCheckingOptions()
                .iterations(0) // only the custom scenario
                .invocationsPerIteration(INVOCATIONS)
                .checkObstructionFreedom(true);
    }

    @Test
    void joinBecomesReadyExactlyOnceAndOnlyAfterBothPredecessors() {
        options().addCustomScenario(threeThreads(Join.class, "host", "finishP1", "finishP2")).check(Join.class);
    }

    @Test
    void twoSuccessorsOfTwoPredecessorsEachBecomeReadyExactlyOnce() {
        options().addCustomScenario(threeThreads(Crossed.class, "host", "finishP1", "finishP2")).check(Crossed.class);
    }

    @Test
    void aBatchPublishedLastTaskFirstMakesEachTaskReadyOnce() {
        options().addCustomScenario(threeThreads(Batch.class, "host", "finishQThenP", "finishPIfHostMadeItReady"))
                .check(Batch.class);
    }

    /**
     * The same batch published first task first: p can run, and release t, before t's guard is
     * dropped with a plain write, which then overwrites the release. Lincheck must find that
     * interleaving, or the scenario above would prove nothing about the order.
     */
    @Test
    void aBatchPublishedFirstTaskFirstCanLoseARelease() {
        Throwable failure = null;
        try {
            options().addCustomScenario(
                    threeThreads(BatchInSubmissionOrder.class, "host", "finishQThenP", "finishPIfHostMadeItReady"))
                    .check(BatchInSubmissionOrder.class);
        } catch (AssertionError e) {
            failure = e;
        }
        require(failure != null, "publishing first task first lost no release in any interleaving");
        require(String.valueOf(failure.getMessage()).contains("task 3 became ready 0 times"),
                "unexpected failure: " + failure.getMessage());
    }

    @Test
    void chainWiredWhileItsHeadRuns() {
        options().addCustomScenario(threeThreads(Chain.class, "host", "finishAThenB", "finishBIfHostMadeItReady"))
                .check(Chain.class);
    }
}
