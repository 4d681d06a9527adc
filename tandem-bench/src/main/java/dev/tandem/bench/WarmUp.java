package dev.tandem.bench;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.util.function.LongSupplier;

/**
 * A bench's warm-up: rounds of the work it will measure, for at least a minimum time and then
 * until the JIT is quiet (a round during which the JVM compiled for at most {@link #QUIET_SHARE}
 * of the round's wall time), or a maximum time has passed. On 2 cores C2 competes with the cores
 * for seconds: a run of the large Q8_0 file still spent 600 ms of compiler time in its fifth
 * second and 215 ms in its sixth (JFR), so a fixed 5 s warm-up measured the first file of a run
 * while the JIT took a tenth of a processor.
 */
public final class WarmUp {
    /** The share of a round's wall time the JIT may compile for, and the round count as quiet. */
    public static final double QUIET_SHARE = 0.05;

    /**
     * What a warm-up did.
     *
     * @param seconds        its wall time
     * @param rounds         rounds run
     * @param lastCompileMs  the JIT's compile time during the last round (NaN where the JVM does not tell)
     * @param quiet          whether the last round was quiet; false when the maximum ended it, or
     *                       where the JVM does not tell compile time (then only the minimum applies)
     */
    public record Result(double seconds, int rounds, double lastCompileMs, boolean quiet) {}

    private WarmUp() {}

    /** A warm-up ends at this many times its least time, quiet JIT or not ({@link #run(Runnable, long)}). */
    public static final int MAX_FACTOR = 3;

    /** {@link #run(Runnable, long, long)} for at most {@link #MAX_FACTOR} times {@code minNanos}. */
    public static Result run(Runnable round, long minNanos) {
        return run(round, minNanos, MAX_FACTOR * minNanos);
    }

    /** {@link #run(Runnable, long, long, LongSupplier)} with this JVM's compile time. */
    public static Result run(Runnable round, long minNanos, long maxNanos) {
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        LongSupplier compileMillis = jit != null && jit.isCompilationTimeMonitoringSupported()
                ? jit::getTotalCompilationTime : null;
        return run(round, minNanos, maxNanos, compileMillis);
    }

    /**
     * Runs {@code round} at least once, until {@code minNanos} have passed and a round was quiet, or
     * until {@code maxNanos} have passed.
     *
     * @param compileMillis the JVM's accumulated compile time in milliseconds, or null where unknown
     */
    static Result run(Runnable round, long minNanos, long maxNanos, LongSupplier compileMillis) {
        if (minNanos < 0 || maxNanos < minNanos) {
            throw new IllegalArgumentException("warm-up: minNanos = " + minNanos + " must be >= 0 and maxNanos = "
                    + maxNanos + " >= minNanos");
        }
        long start = System.nanoTime();
        int rounds = 0;
        double compiled;
        boolean quiet;
        long now;
        do {
            long before = compileMillis == null ? 0 : compileMillis.getAsLong();
            long roundStart = System.nanoTime();
            round.run();
            rounds++;
            now = System.nanoTime();
            compiled = compileMillis == null ? Double.NaN : compileMillis.getAsLong() - before;
            quiet = compileMillis != null && compiled <= QUIET_SHARE * (now - roundStart) / 1e6;
        } while (now - start < minNanos || (!quiet && compileMillis != null && now - start < maxNanos));
        return new Result((now - start) / 1e9, rounds, compiled, quiet);
    }
}
