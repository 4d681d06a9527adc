package dev.tandem.cli;

import dev.tandem.bench.Json;
import dev.tandem.bench.KernelBench;
import java.io.PrintStream;
import java.util.Locale;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code tandem bench kernels}: the matmul kernels' read bandwidth against a plain read ({@link
 * KernelBench}).
 */
@Command(name = "kernels", mixinStandardHelpOptions = true,
        description = "The matmul kernels (f32_x16, f16_x16, bf16_x16, q8_0_x16, q4_0_x16, q5_0_x16, q4_K_x16, q6_K_x16;"
                + " batch 1 and 8;"
                + " 1 and 2 threads) in GB/s of weights read, against a plain read of as many bytes in the same"
                + " run. Under a minute.")
final class BenchKernelsCommand implements Runnable {
    @picocli.CommandLine.Mixin
    BenchCommand.Common common = new BenchCommand.Common();

    @Option(names = "--mb", description = "Weight bytes per matrix in MB, beyond the last-level cache"
            + " (default: ${DEFAULT-VALUE}).", defaultValue = "160")
    int megabytes;

    @Override
    public void run() {
        if (megabytes < 1) {
            throw new IllegalArgumentException("--mb must be >= 1, was " + megabytes);
        }
        if (common.trace != null) {
            throw new IllegalArgumentException("bench kernels does not write traces");
        }
        int rounds = common.quick ? 3 : 7; // about 35 s on 2 cores, more when they are shared
        int[] threads = Runtime.getRuntime().availableProcessors() > 1 ? new int[] {1, 2} : new int[] {1};
        KernelBench.Result r = KernelBench.run((long) megabytes * 1_000_000, 2, rounds, threads, new int[] {1, 8});
        PrintStream out = System.out;
        out.printf(Locale.ROOT, "kernels: %s, %d cols, %.0f MB per matrix, median (best) of %d rounds after 2 of"
                + " warm-up%n", r.ops(), KernelBench.COLS, r.bytes() / 1e6, r.rounds());
        for (int t : r.readGbPerSecond().keySet()) {
            out.printf(Locale.ROOT, "machine, %d thread(s): a plain read %.2f GB/s, a copy reads %.2f GB/s%n", t,
                    r.readGbPerSecond().get(t), r.copyGbPerSecond().get(t));
        }
        out.printf(Locale.ROOT, "%-12s %5s %7s %9s %9s %9s%n", "kernel", "batch", "threads", "GB/s", "best", "of read");
        for (KernelBench.Row row : r.rows()) {
            out.printf(Locale.ROOT, "%-12s %5d %7d %9.2f %9.2f %8.0f%%%n", row.kernel(), row.batch(), row.threads(),
                    row.gbPerSecond(), row.bestGbPerSecond(), 100 * row.fractionOfRead());
        }
        out.println("(GB/s = weight bytes read per second; a batch-8 row does 8x the work per byte)");
        if (common.json) {
            out.println(Json.write(r.toJson()));
        }
    }
}
