package dev.tandem.cli;

import dev.tandem.bench.Stats;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code tandem bench first-run}: the demo's overall tokens per second in a fresh JVM, without
 * and with the JDK's ahead-of-time cache (JEP 514/515: parsed classes and method profiles from
 * a training run; not linked ahead of time while the Vector API's incubator module is in the
 * boot layer, see docs/architecture.md), against the same demo warm in one JVM.
 *
 * <p>Each fresh JVM is a child process started like this one (its java, class path and JVM
 * flags, minus any AOT, logging or recording flags) running {@code tandem demo}; its figure is
 * read from the demo's {@code overall:} line. The cache is made by one training run of the same
 * demo into a scratch directory, as the launcher makes its own after a build, and the cached
 * runs use it with {@code -XX:AOTMode=on}, so a cache the JVM cannot map fails the bench
 * instead of measuring a cold run twice. The warm figure is the same demo run in this JVM after
 * warm-up runs. Rounds alternate cold, cached and warm; the figures are medians.
 */
final class FirstRunBench {
    private static final Pattern OVERALL = Pattern.compile("overall: (\\d+) tokens in [\\d.]+ ms = ([\\d.]+) tokens/s");

    /** A JVM flag a child must not inherit: it would make or use a cache, log or record. */
    static boolean inherited(String flag) {
        return !(flag.startsWith("-XX:AOT") || flag.startsWith("-XX:SharedArchiveFile") || flag.startsWith("-Xshare")
                || flag.startsWith("-Xlog") || flag.startsWith("-XX:StartFlightRecording")
                || flag.startsWith("-XX:FlightRecorderOptions") || flag.startsWith("-agentlib")
                || flag.startsWith("-javaagent") || flag.startsWith("-XX:+AutoCreateSharedArchive"));
    }

    /** The overall tokens per second on a demo's output, or an exception saying what was printed. */
    static double overallTokensPerSecond(String demoOutput) {
        Matcher m = OVERALL.matcher(demoOutput);
        if (!m.find()) {
            throw new IllegalStateException("the demo printed no overall line; its output was:\n" + demoOutput);
        }
        return Double.parseDouble(m.group(2));
    }

    /** One fresh JVM's run: its figure and its wall time from start to exit. */
    record ChildRun(double tokensPerSecond, double wallSeconds) {}

    record Result(
            List<String> demoArgs,
            List<ChildRun> cold,
            List<ChildRun> cached,
            List<Double> warm,
            double trainingSeconds,
            long cacheBytes) {

        double coldMedian() {
            return Stats.median(cold.stream().mapToDouble(ChildRun::tokensPerSecond).toArray());
        }

        double cachedMedian() {
            return Stats.median(cached.stream().mapToDouble(ChildRun::tokensPerSecond).toArray());
        }

        double warmMedian() {
            return Stats.median(warm);
        }

        double coldWallMedian() {
            return Stats.median(cold.stream().mapToDouble(ChildRun::wallSeconds).toArray());
        }

        double cachedWallMedian() {
            return Stats.median(cached.stream().mapToDouble(ChildRun::wallSeconds).toArray());
        }

        Map<String, Object> toJson() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("bench", "first-run");
            m.put("demo_args", demoArgs);
            m.put("rounds", cold.size());
            m.put("cold_tokens_per_s", coldMedian());
            m.put("cached_tokens_per_s", cachedMedian());
            m.put("warm_tokens_per_s", warmMedian());
            m.put("cold_vs_warm", coldMedian() / warmMedian());
            m.put("cached_vs_warm", cachedMedian() / warmMedian());
            m.put("cold_wall_s", coldWallMedian());
            m.put("cached_wall_s", cachedWallMedian());
            m.put("training_s", trainingSeconds);
            m.put("aot_cache_bytes", cacheBytes);
            return m;
        }
    }

    private final List<String> demoArgs;
    private final Supplier<DemoCommand> warmDemo;

    /**
     * @param demoArgs the arguments after {@code demo} for every child
     * @param warmDemo a demo configured as {@code demoArgs} say, run in this JVM for the warm figure
     */
    FirstRunBench(List<String> demoArgs, Supplier<DemoCommand> warmDemo) {
        this.demoArgs = List.copyOf(demoArgs);
        this.warmDemo = warmDemo;
    }

    /** Trains a cache in a scratch directory (removed afterwards), then runs the rounds. */
    Result run(int rounds, int warmUpRuns) {
        if (rounds < 1 || warmUpRuns < 0) {
            throw new IllegalArgumentException("rounds must be >= 1 and warm-up runs >= 0 (were " + rounds + ", "
                    + warmUpRuns + ")");
        }
        Path scratch;
        try {
            scratch = Files.createTempDirectory("tandem-first-run");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot make a scratch directory for the AOT cache", e);
        }
        try {
            return run(rounds, warmUpRuns, scratch.resolve("tandem-first-run.aot"));
        } finally {
            try (var paths = Files.walk(scratch)) {
                paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            } catch (IOException e) {
                // a scratch directory left behind in the temporary directory
            }
        }
    }

    private Result run(int rounds, int warmUpRuns, Path cache) {
        long trainStart = System.nanoTime();
        child(List.of("-XX:AOTCacheOutput=" + cache), false);
        double trainingSeconds = (System.nanoTime() - trainStart) / 1e9;
        long cacheBytes;
        try {
            cacheBytes = Files.size(cache);
        } catch (IOException e) {
            throw new IllegalStateException("the training run made no AOT cache at " + cache, e);
        }
        PrintStream discard = new PrintStream(OutputStream.nullOutputStream(), false, StandardCharsets.UTF_8);
        for (int i = 0; i < warmUpRuns; i++) {
            warmDemo.get().run(discard);
        }
        List<ChildRun> cold = new ArrayList<>();
        List<ChildRun> cached = new ArrayList<>();
        List<Double> warm = new ArrayList<>();
        for (int round = 0; round < rounds; round++) {
            cold.add(child(List.of(), true));
            cached.add(child(List.of("-XX:AOTCache=" + cache, "-XX:AOTMode=on"), true));
            warm.add(warmDemo.get().run(discard));
        }
        return new Result(demoArgs, cold, cached, warm, trainingSeconds, cacheBytes);
    }

    /** Runs {@code tandem demo} in a fresh JVM with {@code extraFlags}; parses its figure if asked. */
    private ChildRun child(List<String> extraFlags, boolean measure) {
        List<String> flags = new ArrayList<>(ChildJvm.flags().stream().filter(FirstRunBench::inherited).toList());
        flags.addAll(extraFlags);
        List<String> args = new ArrayList<>(List.of("demo"));
        args.addAll(demoArgs);
        List<String> command = ChildJvm.command(ChildJvm.java(), flags, ChildJvm.classPath(), args);
        long start = System.nanoTime();
        String output;
        int exit;
        try {
            Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
            process.getOutputStream().close();
            output = readAll(process.getInputStream()); // until the child exits: stderr is merged into it
            exit = process.waitFor();
        } catch (IOException e) {
            throw new UncheckedIOException("could not start " + command, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while " + command + " ran", e);
        }
        double wall = (System.nanoTime() - start) / 1e9;
        if (exit != 0) {
            throw new IllegalStateException("a first-run child exited with " + exit + ": " + String.join(" ", command)
                    + "\n" + output);
        }
        return new ChildRun(measure ? overallTokensPerSecond(output) : Double.NaN, wall);
    }

    private static String readAll(InputStream in) {
        try (in) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
