package dev.tandem.cli;

import dev.tandem.bench.Json;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code tandem bench requests}: concurrent requests sharing one device under two scheduling
 * policies ({@link dev.tandem.bench.RequestsBench}).
 */
@Command(name = "requests", mixinStandardHelpOptions = true,
        description = "1, 2, 4, 8 concurrent requests sharing the device, Poisson arrivals, FIFO vs FIRST_TOKEN_FIRST.")
final class BenchRequestsCommand implements Runnable {
    @picocli.CommandLine.Mixin
    BenchCommand.Common common = new BenchCommand.Common();

    @Option(names = "--cores", description = "Device cores (default: ${DEFAULT-VALUE}).", defaultValue = "2")
    int cores;

    @Option(names = "--seed", description = "Arrival seed (default: ${DEFAULT-VALUE}).", defaultValue = "11")
    long seed;

    @Override
    public void run() {
        if (cores < 1) {
            throw new IllegalArgumentException("--cores must be >= 1, was " + cores);
        }
        dev.tandem.bench.RequestsBench.Shape shape = common.quick
                ? new dev.tandem.bench.RequestsBench.Shape(24, 4, 200, 4)
                : new dev.tandem.bench.RequestsBench.Shape(64, 4, 250, 8);
        PrintStream out = System.out;
        out.printf(Locale.ROOT, "requests: %d tokens per request, a step = a chain of %d tasks x %d us, %d cores,"
                + " %d requests per concurrent slot, Poisson arrivals%n", shape.tokens(), shape.tasksPerStep(),
                shape.taskMicros(), cores, shape.requestsPerLevel());
        List<dev.tandem.bench.RequestsBench.Row> rows = dev.tandem.bench.RequestsBench.run(shape, cores,
                new int[] {1, 2, 4, 8},
                List.of(dev.tandem.SchedulingPolicy.FIFO, dev.tandem.SchedulingPolicy.FIRST_TOKEN_FIRST), seed);
        out.printf(Locale.ROOT, "%-18s %4s %9s %6s %6s %9s %9s %8s %8s%n", "policy", "reqs", "tok/s", "busy", "S||S",
                "ttft p50", "ttft p99", "itl p50", "itl p99");
        for (var r : rows) {
            out.printf(Locale.ROOT, "%-18s %4d %9.1f %6.2f %6.2f %9.2f %9.2f %8.3f %8.3f%n", r.policy(), r.requests(),
                    r.tokensPerSecond(), r.deviceBusy(), r.sParallelFraction(), r.ttftP50(), r.ttftP99(), r.itlP50(),
                    r.itlP99());
        }
        if (common.json) {
            List<Object> results = new ArrayList<>();
            rows.forEach(r -> results.add(r.toJson()));
            out.println(Json.write(java.util.Map.of("results", results)));
        }
    }
}
