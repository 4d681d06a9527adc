package dev.tandem.cli;

import dev.tandem.TraceConfig;
import dev.tandem.bench.DecodeBench;
import dev.tandem.bench.PeerDecodeBench;
import dev.tandem.bench.Json;
import dev.tandem.bench.KernelBench;
import dev.tandem.bench.OverheadBench;
import dev.tandem.bench.PipelineBench;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code tandem bench ...}: the benchmarks, each with a table for people and a JSON last line. */
@Command(
        name = "bench",
        mixinStandardHelpOptions = true,
        description = "Run a benchmark. The last line printed with --json is one JSON object.",
        subcommands = {BenchCommand.Overhead.class, BenchCommand.Pipeline.class, BenchCommand.Requests.class,
                BenchCommand.Decode.class, BenchServeCommand.class,
                BenchCommand.Batch.class, BenchCommand.Kernels.class, BenchCommand.FirstRun.class,
                BenchCommand.GrammarCost.class})
public final class BenchCommand implements Runnable {

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }

    /** A {@code --types} entry: a ggml type the GGUF loader reads. */
    static dev.tandem.llm.gguf.GgmlType matrixType(String name) {
        dev.tandem.llm.gguf.GgmlType type = dev.tandem.llm.gguf.GgmlType.byName(name);
        if (type == null || !dev.tandem.llm.gguf.GgufModel.TENSOR_TYPES.contains(type.name())) {
            throw new IllegalArgumentException("--types: " + name + " is not one of "
                    + dev.tandem.llm.gguf.GgufModel.TENSOR_TYPES);
        }
        return type;
    }

    /** Options every benchmark takes. */
    static final class Common {
        @Option(names = "--quick", description = "A short run (at most about a minute on 2 cores).")
        boolean quick;

        @Option(names = "--json", description = "Print the results as one JSON object on the last line.")
        boolean json;

        @Option(names = "--trace", paramLabel = "FILE", description = "Write a Perfetto trace of the bench's tandem worker"
                + " to FILE (one file per worker where a bench runs several: FILE with the configuration in its name).")
        Path trace;

        /** {@code FILE} with {@code -suffix} before its extension. */
        Path traceFile(String suffix) {
            String name = trace.getFileName().toString();
            int dot = name.lastIndexOf('.');
            String stem = dot > 0 ? name.substring(0, dot) : name;
            String extension = dot > 0 ? name.substring(dot) : "";
            return trace.resolveSibling(stem + "-" + suffix + extension);
        }
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

    @Command(name = "requests", mixinStandardHelpOptions = true,
            description = "1, 2, 4, 8 concurrent requests sharing the device, Poisson arrivals, FIFO vs FIRST_TOKEN_FIRST.")
    static final class Requests implements Runnable {
        @picocli.CommandLine.Mixin
        Common common = new Common();

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

    @Command(name = "decode", mixinStandardHelpOptions = true,
            description = "The Llama decoder (batch 1, batch 8, 4 concurrent requests; runAhead 1 and 2), the"
                    + " paged-attention bench shape, the scalar reference floor and the memory-copy bound.")
    static final class Decode implements Runnable {
        /** Measured requests in the warm trace of {@code --trace}. */
        static final int TRACED_REQUESTS = 3;

        @picocli.CommandLine.Mixin
        Common common = new Common();

        @Option(names = "--model", paramLabel = "SHAPE|PATH",
                description = "A random-weights shape (tiny or small), or a GGUF file (or stories260K) to measure"
                        + " against llama.cpp with --peer (default: ${DEFAULT-VALUE}).",
                defaultValue = "small")
        String model;

        @Option(names = "--peer", paramLabel = "llama.cpp",
                description = "Measure llama.cpp on the same GGUF in the same run (built on first use).")
        String peer;

        @Option(names = "--shapes", split = ",", defaultValue = "small,large",
                description = "With --peer and no file: the random shapes to write as GGUF (default: ${DEFAULT-VALUE}).")
        List<String> shapes;

        @Option(names = "--types", split = ",", defaultValue = "Q8_0,F32,Q4_0,Q4_K",
                description = "With --peer and no file: the matrix types (default: ${DEFAULT-VALUE}).")
        List<String> types;

        @Option(names = "--cores", description = "Device cores (default: available processors).", defaultValue = "0")
        int cores;

        private static String kilobytes(double bytes) {
            return Double.isNaN(bytes) ? "n/a" : String.format(Locale.ROOT, "%.1f KB", bytes / 1024);
        }

        private void comparePeer(boolean file) {
            int coreCount = cores == 0 ? Runtime.getRuntime().availableProcessors() : cores;
            int tokens = common.quick ? 32 : 64;
            // Five rounds: with three, one busy moment of this shared machine moved a ratio by 0.2 between
            // runs of the same build (small Q8_0: 0.73 and 0.98 on one day); a full run of both shapes
            // and four types, prompt processing included, takes about three minutes.
            int rounds = common.quick ? 2 : 5;
            // The same warm-up in --quick: with 3 s, C2 was still compiling the kernels, and quick
            // batch-1 figures were 0.72 of the full run's (two pairs of runs, small Q8_0); with 5 s,
            // 0.85-0.93. Quick saves rounds and tokens instead.
            long warmUp = DecodeBench.WARM_UP_NANOS;
            boolean withPeer = peer != null;
            PrintStream out = System.out;
            List<PeerDecodeBench.Row> rows = new java.util.ArrayList<>();
            out.printf(Locale.ROOT,
                    "decode vs %s: batch 1, %d tokens, %d core(s), median of %d alternating rounds after %.0f s of"
                            + " warm-up per file, longer while the JIT is busy (up to %.0f s)%n",
                    withPeer ? "llama.cpp" : "(no peer)", tokens, coreCount, rounds, warmUp / 1e9,
                    dev.tandem.bench.WarmUp.MAX_FACTOR * warmUp / 1e9);
            if (file) {
                java.nio.file.Path path = dev.tandem.llm.EmbeddedModel.resolve(model);
                String label = dev.tandem.llm.EmbeddedModel.isEmbedded(path) ? dev.tandem.llm.EmbeddedModel.NAME
                        : path.getFileName().toString();
                rows.add(PeerDecodeBench.run(label, path, coreCount, tokens, rounds, withPeer, warmUp));
            } else {
                List<dev.tandem.llm.gguf.GgmlType> ggml = new java.util.ArrayList<>();
                for (String t : types) {
                    ggml.add(matrixType(t));
                }
                java.nio.file.Path dir = java.nio.file.Path.of(System.getProperty("java.io.tmpdir"), "tandem-bench-models");
                rows = PeerDecodeBench.runAll(dir, shapes, ggml, coreCount, tokens, rounds, withPeer, warmUp);
            }
            // The machine's bandwidth on a buffer well beyond the caches, whatever the models' size.
            long largest = Math.max(256L << 20, rows.stream().mapToLong(PeerDecodeBench.Row::fileBytes).max().orElse(0));
            double copy = DecodeBench.copyBandwidth(largest, coreCount, 7);
            out.printf(Locale.ROOT, "%-28s %-5s %9s %9s %9s %9s %9s %7s %8s %8s %8s %9s %9s %8s %7s%n", "model", "type", "tandem",
                    "ra1", "ra2", "batch8", "4 req", "llama", "ratio", "GB/s", "heap/tok", "prompt", "llama pp", "pp ratio",
                    "warm s");
            for (PeerDecodeBench.Row r : rows) {
                out.printf(Locale.ROOT, "%-28s %-5s %9.1f %9.1f %9.1f %9.1f %9.1f %7.1f %8.2f %8.2f %8s %9.1f %9.1f %8.2f %6.1f%s%n",
                        r.model(), r.type(), r.tandemBest(), r.tandemRa1(), r.tandemRa2(), r.tandemBatch8(),
                        r.tandemFourRequests(), r.llamaCpp(), r.ratio(), r.tandemBytes() * r.tandemBest() / 1e9,
                        kilobytes(r.heapBytesPerToken()), r.tandemPrompt(), r.llamaCppPrompt(), r.promptRatio(),
                        r.warmUp().seconds(), r.warmUp().quiet() ? "" : "!");
                if (r.llamaCppMissing() != null && withPeer) {
                    out.println("  llama.cpp: " + r.llamaCppMissing());
                }
            }
            out.printf(Locale.ROOT, "machine: a plain copy of %.1f MB reads at %.2f GB/s%n", largest / 1e6, copy);
            out.println("(tandem, ra1, ra2, batch8: from a request's step rate, first token to last, as llama-bench times"
                    + " its steps alone; 4 req: whole requests; the JSON has batch 8 over the whole request too)");
            out.println("(heap/tok: bytes the JVM allocated per batch-1 token, runAhead 2: the step's tasks and"
                    + " region views, plus whatever a kernel C2 compiled without its vector intrinsics boxed)");
            out.printf(Locale.ROOT, "(prompt: tokens/s of a %d-token prompt to its first token; llama pp: llama-bench -p %d"
                    + " -n 0)%n", PeerDecodeBench.PROMPT_TOKENS, PeerDecodeBench.PROMPT_TOKENS);
            out.printf(Locale.ROOT, "(warm s: the file's warm-up; ! where the JIT was still compiling for more than %.0f%% of"
                    + " a warm-up round when it ended)%n", 100 * dev.tandem.bench.WarmUp.QUIET_SHARE);
            PeerDecodeBench.TracedRun traced = null;
            if (common.trace != null) {
                traced = PeerDecodeBench.tracedWarmRun(dev.tandem.llm.EmbeddedModel.resolve(model), coreCount, tokens,
                        TRACED_REQUESTS, warmUp, common.trace);
                out.printf(Locale.ROOT, "warm trace: %d batch-1 requests of %d tokens at %.1f tokens/s (traced): device busy"
                        + " %.1f%% over their %.1f ms; wrote %s (tandem trace report on it covers loading and warm-up too)%n",
                        traced.requests(), traced.tokens(), traced.tokensPerSecond(), 100 * traced.report().deviceBusy(),
                        traced.report().runMs(), traced.trace());
                TraceCommand.Report.printIdle(out, traced.report(), 8);
            }
            if (common.json) {
                java.util.Map<String, Object> json = new java.util.LinkedHashMap<>();
                json.put("rows", rows.stream().map(PeerDecodeBench.Row::toJson).toList());
                json.put("cores", coreCount);
                json.put("tokens", tokens);
                json.put("rounds", rounds);
                json.put("warm_up_s_per_file", warmUp / 1e9);
                json.put("copy_gb_per_s", copy);
                if (traced != null) {
                    java.util.Map<String, Object> t = new java.util.LinkedHashMap<>();
                    t.put("file", traced.trace().toString());
                    t.put("requests", traced.requests());
                    t.put("tokens_per_s", traced.tokensPerSecond());
                    t.put("device_busy", traced.report().deviceBusy());
                    t.put("run_ms", traced.report().runMs());
                    json.put("warm_trace", t);
                }
                out.println(Json.write(json));
            }
        }

        @Override
        public void run() {
            if (cores < 0) {
                throw new IllegalArgumentException("--cores must be >= 0, was " + cores);
            }
            if (peer != null && !peer.equals("llama.cpp")) {
                throw new IllegalArgumentException("--peer = " + peer + " is not known; known: llama.cpp");
            }
            boolean file = model.equalsIgnoreCase(dev.tandem.llm.EmbeddedModel.NAME)
                    || java.nio.file.Files.isRegularFile(java.nio.file.Path.of(model));
            if (common.trace != null && !file) {
                throw new IllegalArgumentException("bench decode --trace needs --model PATH.gguf (or "
                        + dev.tandem.llm.EmbeddedModel.NAME + "): it traces warm batch-1 requests on that file");
            }
            if (!file && peer == null) {
                dev.tandem.llm.LlamaConfig.named(model); // neither a file nor a shape: fails naming the shapes
            }
            if (peer != null || file) {
                comparePeer(file);
                return;
            }
            dev.tandem.llm.LlamaConfig.named(model); // a bad name fails here, before anything runs
            int coreCount = cores == 0 ? Runtime.getRuntime().availableProcessors() : cores;
            int tokens = common.quick ? 32 : 128;
            int repetitions = common.quick ? 2 : 5;
            PrintStream out = System.out;
            out.printf(Locale.ROOT, "decode: model %s, %d tokens per request, %d device core(s), best of %d%n", model,
                    tokens, coreCount, repetitions);
            DecodeBench.Result r = DecodeBench.run(model, coreCount, tokens, repetitions);
            out.printf(Locale.ROOT, "%-12s %8s %5s %9s %10s %10s%n", "workload", "requests", "batch", "runAhead", "tokens/s",
                    "ms/step");
            for (DecodeBench.Row row : r.rows()) {
                out.printf(Locale.ROOT, "%-12s %8d %5d %9d %10.1f %10.3f%n", row.workload(), row.requests(), row.batch(),
                        row.runAhead(), row.tokensPerSecond(), row.msPerStep());
            }
            out.printf(Locale.ROOT, "paged attention (16 x 16 heads x 128, blocks of 128, context 8192): %.2f ms per layer,"
                    + " %.1f GFLOP/s%n", r.attentionMsPerLayer(), r.attentionGflops());
            out.printf(Locale.ROOT, "scalar reference (the floor): %.1f tokens/s%n", r.referenceTokensPerSecond());
            out.printf(Locale.ROOT, "weights %.1f MB: batch-1 matvecs read them at %.2f GB/s; a plain copy of as many bytes"
                    + " reads at %.2f GB/s (%.0f%%)%n", r.weightBytes() / 1e6, r.matvecGbPerSecond(),
                    r.copyGbPerSecond(), 100 * r.matvecGbPerSecond() / r.copyGbPerSecond());
            out.printf(Locale.ROOT, "same shape in f32, %.1f MB: %.3f ms/step, matvecs at %.2f GB/s; a copy reads at %.2f GB/s"
                    + " (%.0f%%)%n", r.f32WeightBytes() / 1e6, r.f32().msPerStep(), r.f32MatvecGbPerSecond(),
                    r.f32CopyGbPerSecond(), 100 * r.f32MatvecGbPerSecond() / r.f32CopyGbPerSecond());
            if (common.json) {
                out.println(Json.write(r.toJson()));
            }
        }
    }

    @Command(name = "batch", mixinStandardHelpOptions = true,
            description = "The batcher's prefill orders: time to first token of short prompts that arrive with a long"
                    + " one while others decode.")
    static final class Batch implements Runnable {
        @picocli.CommandLine.Mixin
        Common common = new Common();

        @Option(names = "--model", paramLabel = "PATH", defaultValue = "stories260K",
                description = "A GGUF file or stories260K (default: ${DEFAULT-VALUE}).")
        String model;

        @Option(names = "--decoders", defaultValue = "4", description = "Members decoding meanwhile (default: ${DEFAULT-VALUE}).")
        int decoders;

        @Option(names = "--shorts", defaultValue = "3", description = "Short prompts arriving (default: ${DEFAULT-VALUE}).")
        int shorts;

        @Option(names = "--long", defaultValue = "480", description = "Tokens of the long prompt (default: ${DEFAULT-VALUE}).")
        int longPrompt;

        @Option(names = "--budget", defaultValue = "64", description = "Rows a step (default: ${DEFAULT-VALUE}).")
        int budget;

        @Option(names = "--cores", defaultValue = "0", description = "Device cores (default: available processors).")
        int cores;

        @Override
        public void run() {
            if (decoders < 0 || shorts < 1 || longPrompt < 1 || budget <= decoders + shorts + 1 || cores < 0) {
                throw new IllegalArgumentException("--decoders >= 0, --shorts >= 1, --long >= 1, --cores >= 0 and"
                        + " --budget > decoders + shorts + 1 are needed");
            }
            java.nio.file.Path path = dev.tandem.llm.EmbeddedModel.resolve(model);
            int coreCount = cores == 0 ? Runtime.getRuntime().availableProcessors() : cores;
            int rounds = common.quick ? 3 : 7;
            PrintStream out = System.out;
            out.printf(Locale.ROOT, "batch: %d decoding; a %d-token prompt then %d short ones arrive; %d rows a step;"
                    + " %d core(s); median of %d alternating rounds%n", decoders, longPrompt, shorts, budget, coreCount,
                    rounds);
            List<dev.tandem.bench.BatchBench.Row> rows;
            try {
                rows = dev.tandem.bench.BatchBench.run(path, coreCount, decoders, shorts, longPrompt, budget, rounds);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            }
            out.printf(Locale.ROOT, "%-15s %16s %15s %18s%n", "prefill order", "short ttft ms", "long ttft ms",
                    "decode tokens/s");
            for (dev.tandem.bench.BatchBench.Row r : rows) {
                out.printf(Locale.ROOT, "%-15s %16.1f %15.1f %18.1f%n", r.order(), r.shortTtftMs(), r.longTtftMs(),
                        r.decodeTokensPerSecond());
            }
            if (common.json) {
                java.util.Map<String, Object> json = new java.util.LinkedHashMap<>();
                json.put("rows", rows.stream().map(dev.tandem.bench.BatchBench.Row::toJson).toList());
                json.put("cores", coreCount);
                out.println(Json.write(json));
            }
        }
    }

    @Command(name = "grammar", mixinStandardHelpOptions = true,
            description = "Constrained decoding's per-token cost: the sample step with and without a JSON Schema"
                    + " grammar (and json_object) over each vocabulary, and whole greedy decoding of the embedded model;"
                    + " contenders alternate, medians, ratio constrained/plain.")
    static final class GrammarCost implements Runnable {
        @picocli.CommandLine.Mixin
        Common common = new Common();

        @Option(names = "--vocab", paramLabel = "GGUF", split = ",", description = "Vocabulary-only (or full) GGUF"
                + " files whose vocabularies to measure besides the embedded one (default: none).")
        List<java.nio.file.Path> vocabularies = List.of();

        @Override
        public void run() {
            if (common.trace != null) {
                throw new IllegalArgumentException("bench grammar does not write traces");
            }
            dev.tandem.bench.GrammarBench.Result r = dev.tandem.bench.GrammarBench.run(vocabularies,
                    common.quick ? 3 : 7);
            PrintStream out = System.out;
            out.print(r.markdown());
            if (common.json) {
                out.println(Json.write(r.toJson()));
            }
        }
    }

    @Command(name = "kernels", mixinStandardHelpOptions = true,
            description = "The matmul kernels (f32, f16, bf16, q8_0, q8_0_x16, q4_0, q4_0_x16, q4_K, q4_K_x16, q6_K, q6_K_x16;"
                    + " batch 1 and 8;"
                    + " 1 and 2 threads) in GB/s of weights read, against a plain read of as many bytes in the same"
                    + " run. Under a minute.")
    static final class Kernels implements Runnable {
        @picocli.CommandLine.Mixin
        Common common = new Common();

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

    @Command(name = "first-run", mixinStandardHelpOptions = true,
            description = "tandem demo's tokens/s in a fresh JVM, without and with the JDK's ahead-of-time cache,"
                    + " against the same demo warm in one JVM; rounds alternate the three.")
    static final class FirstRun implements Runnable {
        @picocli.CommandLine.Mixin
        Common common = new Common();

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
}
