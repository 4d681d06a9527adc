package dev.tandem.bench.peers;

import java.util.Arrays;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;

/**
 * The JDK baseline for per-task overhead: a {@link SyntheticDag}'s explicit form run as
 * {@link CompletableFuture}s on a {@code new ForkJoinPool(threads)}, written the way a Java
 * developer would write it without tandem.
 *
 * <p>Task {@code t} becomes {@code runAsync(body)} with no predecessor,
 * {@code p.thenRunAsync(body)} with one, {@code p.runAfterBothAsync(q, body)} with two and
 * {@code allOf(preds).thenRunAsync(body)} with more, always on the pool. Its body writes one
 * slot of an {@code int[]}, which the harness checks afterwards, so no task is optimised away.
 *
 * <p>A run is timed from the first future built to the completion of all sinks. The calling
 * thread builds the futures while the pool already runs the ready ones, as in tandem, where the
 * host builds while the cores run; the pool's {@code threads} workers are the cores.
 */
public final class ForkJoinPeer {

    private ForkJoinPeer() {}

    /**
     * Runs {@code dag} once to warm up, then {@code repetitions} timed times, each on the same
     * fresh pool of {@code threads} workers, and returns the best run's nanoseconds per task.
     */
    public static double nsPerTask(SyntheticDag dag, int threads, int repetitions) {
        checkArguments(dag, threads);
        if (repetitions < 1) {
            throw new IllegalArgumentException("repetitions must be at least 1, got " + repetitions);
        }
        int[] sinks = dag.sinks();
        int[] slots = new int[dag.taskCount()];
        try (ForkJoinPool pool = new ForkJoinPool(threads)) {
            long best = Long.MAX_VALUE;
            for (int run = 0; run <= repetitions; run++) {
                int stamp = run + 1;
                long start = System.nanoTime();
                runToCompletion(dag, sinks, pool, task -> () -> slots[task] = stamp);
                long elapsed = System.nanoTime() - start;
                checkAllRan(dag, slots, stamp);
                if (run > 0) {
                    best = Math.min(best, elapsed);
                }
            }
            return (double) best / dag.taskCount();
        }
    }

    /**
     * Runs {@code dag} once on a fresh pool, stamping each task's body with a sequence number as
     * it starts and as it ends, so a test can check that every task ran after all its
     * predecessors had finished.
     */
    static ExecutionRecord runRecording(SyntheticDag dag, int threads) {
        checkArguments(dag, threads);
        int taskCount = dag.taskCount();
        ExecutionRecord record = new ExecutionRecord(new int[taskCount], new int[taskCount]);
        Arrays.fill(record.started(), -1);
        Arrays.fill(record.finished(), -1);
        AtomicInteger sequence = new AtomicInteger();
        try (ForkJoinPool pool = new ForkJoinPool(threads)) {
            runToCompletion(dag, dag.sinks(), pool, task -> () -> {
                record.started()[task] = sequence.getAndIncrement();
                record.finished()[task] = sequence.getAndIncrement();
            });
        }
        return record;
    }

    /**
     * Sequence numbers, from one counter shared by all tasks, taken as each task's body started
     * and finished; -1 for a task that never ran.
     */
    record ExecutionRecord(int[] started, int[] finished) {}

    /**
     * Builds one future per task and waits for the sinks. Every task is an ancestor of a sink,
     * so when this returns every body has run and its writes are visible to the caller.
     */
    private static void runToCompletion(
            SyntheticDag dag, int[] sinks, ForkJoinPool pool, IntFunction<Runnable> bodies) {
        CompletableFuture<?>[] futures = new CompletableFuture<?>[dag.taskCount()];
        for (int task = 0; task < futures.length; task++) {
            futures[task] = schedule(dag, task, futures, bodies.apply(task), pool);
        }
        CompletableFuture<?>[] sinkFutures = new CompletableFuture<?>[sinks.length];
        for (int i = 0; i < sinks.length; i++) {
            sinkFutures[i] = futures[sinks[i]];
        }
        CompletableFuture.allOf(sinkFutures).join();
    }

    private static CompletableFuture<Void> schedule(
            SyntheticDag dag, int task, CompletableFuture<?>[] futures, Runnable body, ForkJoinPool pool) {
        int count = dag.predecessorCount(task);
        switch (count) {
            case 0 -> {
                return CompletableFuture.runAsync(body, pool);
            }
            case 1 -> {
                return futures[dag.predecessor(task, 0)].thenRunAsync(body, pool);
            }
            case 2 -> {
                CompletableFuture<?> first = futures[dag.predecessor(task, 0)];
                return first.runAfterBothAsync(futures[dag.predecessor(task, 1)], body, pool);
            }
            default -> {
                CompletableFuture<?>[] predecessors = new CompletableFuture<?>[count];
                for (int k = 0; k < count; k++) {
                    predecessors[k] = futures[dag.predecessor(task, k)];
                }
                return CompletableFuture.allOf(predecessors).thenRunAsync(body, pool);
            }
        }
    }

    private static void checkAllRan(SyntheticDag dag, int[] slots, int stamp) {
        for (int task = 0; task < slots.length; task++) {
            if (slots[task] != stamp) {
                throw new IllegalStateException("ForkJoinPeer run " + stamp + " of " + dag + " finished without running task "
                        + task);
            }
        }
    }

    private static void checkArguments(SyntheticDag dag, int threads) {
        Objects.requireNonNull(dag, "dag");
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be at least 1, got " + threads);
        }
    }
}
