package dev.tandem.cli;

import dev.tandem.bench.Json;
import dev.tandem.bench.OverheadBench;
import dev.tandem.bench.PipelineBench;
import java.io.PrintStream;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code tandem bench ...}: the benchmarks, each with a table for people and a JSON last line. */
@Command(
        name = "bench",
        mixinStandardHelpOptions = true,
        description = "Run a benchmark. The last line printed with --json is one JSON object.",
        subcommands = {BenchCommand.Overhead.class, BenchCommand.Pipeline.class})
public final class BenchCommand implements Runnable {

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }

    /** Options every benchmark takes. */
    static final class Common {
        @Option(names = "--quick", description = "A short run (at most about a minute on 2 cores).")
        boolean quick;

        @Option(names = "--json", description = "Print the results as one JSON object on the last line.")
        boolean json;
    }

    @Command(name = "overhead", mixinStandardHelpOptions = true,
            description = "ns per task, submit to completion, empty kernels: tandem vs CompletableFuture/ForkJoinPool vs oneTBB.")
    static final class Overhead implements Runnable {
        @picocli.CommandLine.Mixin
        Common common = new Common();

        @Option(names = "--tasks", description = "Tasks per DAG (default: ${DEFAULT-VALUE}).", defaultValue = "100000")
        int tasks;

        @Option(names = "--seed", description = "Seed of the random DAG (default: ${DEFAULT-VALUE}).", defaultValue = "42")
        long seed;

        @Override
        public void run() {
            if (tasks < 1) {
                throw new IllegalArgumentException("--tasks must be >= 1, was " + tasks);
            }
            int repetitions = common.quick ? 3 : 10;
            PrintStream out = System.out;
            out.printf(Locale.ROOT, "overhead: %d tasks per DAG, best of %d runs after a warm-up%n", tasks, repetitions);
            List<OverheadBench.Row> rows = OverheadBench.run(tasks, new int[] {1, 2}, repetitions, seed);
            out.printf(Locale.ROOT, "%-8s %5s %8s %12s %12s %12s %10s %10s%n", "shape", "cores", "edges", "tandem ns", "forkjoin ns",
                    "tbb ns", "vs fj", "vs tbb");
            for (OverheadBench.Row row : rows) {
                out.printf(Locale.ROOT, "%-8s %5d %8d %12.1f %12.1f %12s %10s %10s%n", row.shape(), row.cores(), row.edges(),
                        row.tandemNs(), row.forkJoinNs(),
                        row.tbbNs() == null ? "n/a" : String.format(Locale.ROOT, "%.1f", row.tbbNs()),
                        String.format(Locale.ROOT, "%.2fx", row.tandemNs() / row.forkJoinNs()),
                        row.tbbNs() == null ? "n/a" : String.format(Locale.ROOT, "%.2fx", row.tandemNs() / row.tbbNs()));
            }
            rows.stream().filter(r -> r.tbbNote() != null).findFirst()
                    .ifPresent(r -> out.println("tbb: " + r.tbbNote()));
            out.println("(vs = tandem time / peer time; below 1.00x means tandem is faster)");
            if (common.json) {
                out.println(Json.write(OverheadBench.toJson(rows)));
            }
        }
    }

    @Command(name = "pipeline", mixinStandardHelpOptions = true,
            description = "Host build of step N+1 overlapping device run of step N: serial baseline vs runAhead 2 and 4.")
    static final class Pipeline implements Runnable {
        @picocli.CommandLine.Mixin
        Common common = new Common();

        @Option(names = "--steps", description = "Steps per request (default: ${DEFAULT-VALUE}).", defaultValue = "200")
        int steps;

        @Option(names = "--step-ms", description = "Target build and run time per step (default: ${DEFAULT-VALUE}).",
                defaultValue = "1.0")
        double stepMillis;

        @Option(names = "--cores", description = "Device cores (default: ${DEFAULT-VALUE}).", defaultValue = "1")
        int cores;

        @Override
        public void run() {
            if (steps < 1 || stepMillis <= 0 || cores < 1) {
                throw new IllegalArgumentException("--steps, --step-ms and --cores must be positive");
            }
            int repetitions = common.quick ? 2 : 5;
            PipelineBench.Result r = PipelineBench.run(steps, stepMillis, cores, repetitions);
            PrintStream out = System.out;
            out.printf(Locale.ROOT, "pipeline: %d steps, %d tasks per step, %d device core(s), best of %d%n", r.steps(),
                    PipelineBench.TASKS_PER_STEP, r.cores(), repetitions);
            out.printf(Locale.ROOT, "  build %.3f ms/step, run %.3f ms/step (measured in the serial run)%n",
                    r.buildMsPerStep(), r.runMsPerStep());
            out.printf(Locale.ROOT, "  serial (runAhead 1, whole-step publication) %9.1f ms%n", r.serialMs());
            out.printf(Locale.ROOT, "  pipelined runAhead 2                        %9.1f ms%n", r.pipelinedMs());
            out.printf(Locale.ROOT, "  pipelined runAhead 4                        %9.1f ms%n", r.pipelined4Ms());
            out.printf(Locale.ROOT, "  speedup %.3f, ideal %.3f, %.1f%% of ideal%n", r.speedup(), r.idealSpeedup(),
                    100 * r.speedup() / r.idealSpeedup());
            if (common.json) {
                out.println(Json.write(r.toJson()));
            }
        }
    }
}
