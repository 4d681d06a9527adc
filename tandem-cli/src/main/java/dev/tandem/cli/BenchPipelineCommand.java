package dev.tandem.cli;

import dev.tandem.TraceConfig;
import dev.tandem.bench.Json;
import dev.tandem.bench.PipelineBench;
import java.io.PrintStream;
import java.util.Locale;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code tandem bench pipeline}: how much of the host's step build the run-ahead hides behind the
 * device ({@link PipelineBench}).
 */
@Command(name = "pipeline", mixinStandardHelpOptions = true,
        description = "Host build of step N+1 overlapping device run of step N: serial baseline vs runAhead 2 and 4.")
final class BenchPipelineCommand implements Runnable {
    @picocli.CommandLine.Mixin
    BenchCommand.Common common = new BenchCommand.Common();

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
        PipelineBench.Result r = PipelineBench.run(steps, stepMillis, cores, repetitions,
                common.trace == null ? null : TraceConfig.toFile(common.trace));
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
        if (common.trace != null) {
            out.println("trace: wrote " + common.trace);
        }
        if (common.json) {
            out.println(Json.write(r.toJson()));
        }
    }
}
