package dev.tandem.bench;

import static dev.tandem.Access.readWrite;

import dev.tandem.Buffer;
import dev.tandem.CpuDeviceConfig;
import dev.tandem.Kernel;
import dev.tandem.Orchestrator;
import dev.tandem.Outcome;
import dev.tandem.Program;
import dev.tandem.RunOptions;
import dev.tandem.Status;
import dev.tandem.Token;
import dev.tandem.TokenStream;
import dev.tandem.TraceConfig;
import dev.tandem.Worker;
import java.lang.foreign.ValueLayout;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Pipelining across tokens: a synthetic request whose host build time per step about equals
 * its device run time per step. The strictly serial baseline (runAhead 1, whole-step
 * publication) against runAhead 2 and 4 with default publication; the ideal speedup is
 * (build + run) / max(build, run).
 *
 * <p>A step is a chain of {@link #TASKS_PER_STEP} tasks on one state buffer, each spinning
 * for run/TASKS_PER_STEP on a core; the program spins build/TASKS_PER_STEP before submitting
 * each one. Build and run time per step are measured in the serial run, not assumed.
 */
public final class PipelineBench {
    public static final int TASKS_PER_STEP = 8;

    /** The figures of one bench run. */
    public record Result(
            int steps, int cores, double buildMsPerStep, double runMsPerStep, double serialMs, double pipelinedMs,
            double pipelined4Ms) {

        public double speedup() {
            return serialMs / pipelinedMs;
        }

        public double idealSpeedup() {
            return (buildMsPerStep + runMsPerStep) / Math.max(buildMsPerStep, runMsPerStep);
        }

        public Map<String, Object> toJson() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("steps", steps);
            out.put("cores", cores);
            out.put("build_ms_per_step", buildMsPerStep);
            out.put("run_ms_per_step", runMsPerStep);
            out.put("serial_ms", serialMs);
            out.put("pipelined_ms", pipelinedMs);
            out.put("pipelined_run_ahead_4_ms", pipelined4Ms);
            out.put("speedup", speedup());
            out.put("ideal_speedup", idealSpeedup());
            out.put("fraction_of_ideal", speedup() / idealSpeedup());
            return out;
        }
    }

    private static final Kernel SPIN = Kernel.of("spin", context -> {
        var state = context.region(0);
        Spin.spin(context.scalar(0));
        state.set(ValueLayout.JAVA_LONG, 0, state.get(ValueLayout.JAVA_LONG, 0) * 31 + context.scalar(1));
    });

    /** What a run measured. */
    private record Measured(long wallNanos, long buildNanos, long busyNanos, long lastToken) {}

    private PipelineBench() {}

    /**
     * @param steps        steps per request
     * @param stepMillis   target host build time and device run time per step
     * @param cores        device cores
     * @param repetitions  runs of each configuration; the best is kept
     */
    public static Result run(int steps, double stepMillis, int cores, int repetitions) {
        return run(steps, stepMillis, cores, repetitions, null);
    }

    /** As {@link #run(int, double, int, int)}, tracing the bench's worker as {@code trace} says (null: off). */
    public static Result run(int steps, double stepMillis, int cores, int repetitions, TraceConfig trace) {
        long perTaskNanos = (long) (stepMillis * 1e6 / TASKS_PER_STEP);
        try (Worker worker = Worker.builder().device(CpuDeviceConfig.withCores(cores)).trace(trace).build()) {
            measure(worker, steps / 4 + 1, perTaskNanos, RunOptions.defaults()); // warm-up
            Measured serial = best(worker, steps, perTaskNanos, RunOptions.serial(), repetitions);
            Measured pipelined = best(worker, steps, perTaskNanos, RunOptions.defaults().withRunAhead(2), repetitions);
            Measured pipelined4 = best(worker, steps, perTaskNanos, RunOptions.defaults().withRunAhead(4), repetitions);
            if (serial.lastToken != pipelined.lastToken || serial.lastToken != pipelined4.lastToken) {
                throw new IllegalStateException("pipelined runs computed different tokens than the serial run");
            }
            return new Result(
                    steps,
                    cores,
                    serial.buildNanos / 1e6 / steps,
                    serial.busyNanos / 1e6 / steps,
                    serial.wallNanos / 1e6,
                    pipelined.wallNanos / 1e6,
                    pipelined4.wallNanos / 1e6);
        }
    }

    private static Measured best(Worker worker, int steps, long perTaskNanos, RunOptions options, int repetitions) {
        Measured best = null;
        for (int i = 0; i < repetitions; i++) {
            Measured m = measure(worker, steps, perTaskNanos, options);
            if (best == null || m.wallNanos < best.wallNanos) {
                best = m;
            }
        }
        return best;
    }

    private static Measured measure(Worker worker, int steps, long perTaskNanos, RunOptions options) {
        long[] buildNanos = new long[1];
        Program<Integer> program = (o, n) -> {
            Buffer state = o.allocate(ValueLayout.JAVA_LONG, 1);
            for (int s = 0; s < n; s++) {
                long begin = System.nanoTime();
                for (int t = 0; t < TASKS_PER_STEP; t++) {
                    Spin.spin(perTaskNanos);
                    o.submit(SPIN, Orchestrator.scalars(perTaskNanos, s * TASKS_PER_STEP + t), readWrite(state));
                }
                buildNanos[0] += System.nanoTime() - begin;
                o.endStep(state.region());
            }
        };
        long busyBefore = worker.deviceBusyNanos();
        long start = System.nanoTime();
        TokenStream stream = worker.run(program, steps, options);
        long last = 0;
        for (Token token : stream) {
            last = token.asLong();
        }
        long wall = System.nanoTime() - start;
        Outcome outcome = stream.completion().join();
        if (outcome.status() != Status.COMPLETED || outcome.tokens() != steps) {
            throw new IllegalStateException("pipeline run did not complete: " + outcome);
        }
        return new Measured(wall, buildNanos[0], worker.deviceBusyNanos() - busyBefore, last);
    }
}
