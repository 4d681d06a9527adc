package dev.tandem.cli;

import dev.tandem.bench.Json;
import java.io.PrintStream;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code tandem bench first-run}: the demo in a fresh JVM with and without the AOT cache, against
 * it warm ({@link FirstRunBench}).
 */
@Command(name = "first-run", mixinStandardHelpOptions = true,
        description = "tandem demo's tokens/s in a fresh JVM, without and with the JDK's ahead-of-time cache,"
                + " against the same demo warm in one JVM; rounds alternate the three.")
final class BenchFirstRunCommand implements Runnable {
    @picocli.CommandLine.Mixin
    BenchCommand.Common common = new BenchCommand.Common();

    @Option(names = "--model", paramLabel = "PATH|NAME", description = "The demo's --model (default: ${DEFAULT-VALUE}).",
            defaultValue = dev.tandem.llm.EmbeddedModel.NAME)
    String model;

    @Option(names = "--requests", description = "The demo's --requests (default: ${DEFAULT-VALUE}).", defaultValue = "4")
    int requests;

    @Option(names = "--tokens", description = "The demo's --tokens (default: ${DEFAULT-VALUE}).", defaultValue = "96")
    int tokens;

    @Option(names = "--rounds", description = "Rounds of cold, cached and warm runs (default: 5, 3 with --quick).")
    Integer rounds;

    @Override
    public void run() {
        if (common.trace != null) {
            throw new IllegalArgumentException("bench first-run does not write traces");
        }
        if (rounds != null && rounds < 1 || requests < 1 || tokens < 1) {
            throw new IllegalArgumentException("--rounds, --requests and --tokens must be >= 1 (were rounds="
                    + rounds + ", requests=" + requests + ", tokens=" + tokens + ")");
        }
        int n = rounds != null ? rounds : common.quick ? 3 : 5;
        List<String> demoArgs = List.of("--model", model, "--requests", Integer.toString(requests), "--tokens",
                Integer.toString(tokens));
        // The warm demo is parsed from the children's arguments, defaults and all.
        java.util.function.Supplier<DemoCommand> warmDemo = () ->
                picocli.CommandLine.populateCommand(new DemoCommand(), demoArgs.toArray(String[]::new));
        FirstRunBench.Result r = new FirstRunBench(demoArgs, warmDemo).run(n, common.quick ? 5 : 10);
        PrintStream out = System.out;
        out.printf(Locale.ROOT, "first-run: tandem demo %s; %d rounds, medians; the AOT cache is %.1f MB from a"
                + " %.1f s training run%n", String.join(" ", demoArgs), n, r.cacheBytes() / 1e6, r.trainingSeconds());
        out.printf(Locale.ROOT, "%-34s %12s %9s %12s%n", "run", "tokens/s", "of warm", "JVM wall s");
        out.printf(Locale.ROOT, "%-34s %12.1f %8.0f%% %12.2f%n", "fresh JVM, no AOT cache", r.coldMedian(),
                100 * r.coldMedian() / r.warmMedian(), r.coldWallMedian());
        out.printf(Locale.ROOT, "%-34s %12.1f %8.0f%% %12.2f%n", "fresh JVM, AOT cache (the launcher)",
                r.cachedMedian(), 100 * r.cachedMedian() / r.warmMedian(), r.cachedWallMedian());
        out.printf(Locale.ROOT, "%-34s %12.1f %8.0f%% %12s%n", "warm, in one JVM", r.warmMedian(), 100.0, "");
        if (common.json) {
            out.println(Json.write(r.toJson()));
        }
    }
}
