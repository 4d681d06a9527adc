package dev.tandem.cli;

import dev.tandem.TraceConfig;
import dev.tandem.bench.Json;
import dev.tandem.bench.OverheadBench;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code tandem bench overhead}: the runtime's cost per task against ForkJoin and oneTBB, measured
 * in a child JVM with a fixed heap ({@link OverheadBench}).
 */
@Command(name = "overhead", mixinStandardHelpOptions = true,
        description = "ns per task, submit to completion, empty kernels: tandem vs CompletableFuture/ForkJoinPool vs oneTBB.")
final class BenchOverheadCommand implements Runnable {
    @picocli.CommandLine.Mixin
    BenchCommand.Common common = new BenchCommand.Common();

    @Option(names = "--tasks", description = "Tasks per DAG (default: ${DEFAULT-VALUE}).", defaultValue = "100000")
    int tasks;

    @Option(names = "--seed", description = "Seed of the random DAG (default: ${DEFAULT-VALUE}).", defaultValue = "42")
    long seed;

    /** Set in the child JVM that runs the measurement (see {@link #run}). */
    static final String CHILD_PROPERTY = "tandem.bench.overhead.child";

    /**
     * The heap the measurement runs with: fixed and touched up front, as the JMH benchmarks'
     * forks have. With a heap left to grow (this launcher's JVM), one run put tandem's 1-core
     * fan-out at 810 ns a task and random at 1523, the next with these flags at 252 and 360:
     * the rows measured the young generation's new pages being faulted in and zeroed.
     */
    static final List<String> HEAP_FLAGS = List.of("-Xms2g", "-Xmx2g", "-XX:+AlwaysPreTouch");

    /**
     * Conditional card marks, as the launcher runs (see the launcher's comment): without them the
     * program thread's and the core's per-task reference stores can share a line of the parallel
     * collector's card table, which doubled the chain's cost per task in some runs and not in others.
     */
    static final String CARD_FLAG = "-XX:+UseCondCardMark";

    @Override
    public void run() {
        if (tasks < 1) {
            throw new IllegalArgumentException("--tasks must be >= 1, was " + tasks);
        }
        if (System.getProperty(CHILD_PROPERTY) == null) {
            runInChild();
            return;
        }
        int rounds = common.quick ? 3 : 5;
        PrintStream out = System.out;
        out.printf(Locale.ROOT, "overhead: %d tasks per DAG, median of %d rounds alternating the three"
                + " (each the best of %d runs after a warm-up), each row after %.1f s or more of tandem and ForkJoin"
                + " until the JIT is quiet, in a JVM with a fixed, pre-touched heap (%s) and %s%n",
                tasks, rounds, OverheadBench.RUNS_PER_ROUND,
                OverheadBench.WARM_UP_NANOS / 1e9, String.join(" ", HEAP_FLAGS),
                ChildJvm.flags().stream().filter(f -> f.contains("UseCondCardMark")).reduce((first, last) -> last)
                        .orElse("unconditional card marks (the JVM's default)"));
        List<Path> traces = new ArrayList<>();
        List<OverheadBench.Row> rows = OverheadBench.run(tasks, new int[] {1, 2}, rounds, seed,
                common.trace == null ? null : (shape, cores) -> {
                    Path file = common.traceFile(shape + "-" + cores + "c");
                    traces.add(file);
                    return TraceConfig.toFile(file);
                });
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
        out.println("(oneTBB's flow graph is built whole before any node runs, so on 1 core its build and run share"
                + " one thread, where tandem and ForkJoin build on the program's thread while the core runs: its 1-core"
                + " rows are no like-for-like peer)");
        for (Path file : traces) {
            out.println("trace: wrote " + file);
        }
        if (common.json) {
            out.println(Json.write(OverheadBench.toJson(rows)));
        }
    }

    /**
     * Runs this command again in a child JVM with {@link #HEAP_FLAGS} (and this JVM's own flags,
     * so a profiler agent or an AOT cache carries over), its output passed through. A heap flag
     * of this JVM's own (TANDEM_JAVA_OPTS) replaces them.
     */
    private void runInChild() {
        List<String> command = childCommand(ChildJvm.java(), ChildJvm.flags(), ChildJvm.classPath());
        int exit;
        try {
            Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
            process.getOutputStream().close();
            try (var in = process.getInputStream()) {
                in.transferTo(System.out); // as it comes: the table's rows appear as they are measured
            }
            exit = process.waitFor();
        } catch (IOException e) {
            throw new UncheckedIOException("could not start the overhead bench's JVM: " + command, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while the overhead bench ran", e);
        }
        if (exit != 0) {
            throw new IllegalStateException("the overhead bench's JVM exited with " + exit + ": " + String.join(" ", command));
        }
    }

    /**
     * The child's command line: {@link #HEAP_FLAGS} unless the JVM's own flags size the heap, and
     * {@link #CARD_FLAG} unless they set it either way, then those flags.
     */
    List<String> childCommand(String java, List<String> inheritedFlags, String classPath) {
        List<String> flags = new ArrayList<>();
        if (inheritedFlags.stream().noneMatch(f -> f.startsWith("-Xms") || f.startsWith("-Xmx")
                || f.contains("AlwaysPreTouch"))) {
            flags.addAll(HEAP_FLAGS);
        }
        if (inheritedFlags.stream().noneMatch(f -> f.contains("UseCondCardMark"))) {
            flags.add(CARD_FLAG);
        }
        flags.addAll(inheritedFlags);
        flags.add("-D" + CHILD_PROPERTY + "=true");
        List<String> args = new ArrayList<>(List.of("bench", "overhead",
                "--tasks", Integer.toString(tasks), "--seed", Long.toString(seed)));
        if (common.quick) {
            args.add("--quick");
        }
        if (common.json) {
            args.add("--json");
        }
        if (common.trace != null) {
            args.addAll(List.of("--trace", common.trace.toString()));
        }
        return ChildJvm.command(java, flags, classPath, args);
    }
}
