package dev.tandem.cli;

import dev.tandem.CpuDeviceConfig;
import dev.tandem.Outcome;
import dev.tandem.Status;
import dev.tandem.Token;
import dev.tandem.TokenStream;
import dev.tandem.TraceConfig;
import dev.tandem.TraceEvent;
import dev.tandem.Worker;
import dev.tandem.bench.trace.TraceAnalysis;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code tandem demo}: several concurrent requests of the Llama decoder (or of batched paged
 * attention) through one session, each stream shown as it grows, then a summary of latency,
 * throughput and overlap; {@code --check} compares every stream with the scalar reference.
 */
@Command(
        name = "demo",
        mixinStandardHelpOptions = true,
        description = "Run concurrent streaming requests and show their tokens live, then TTFT, inter-token latency,"
                + " throughput and how much host build and device run overlapped.")
public final class DemoCommand implements Runnable {

    @Option(names = "--requests", description = "Concurrent requests (default: ${DEFAULT-VALUE}).", defaultValue = "4")
    int requests;

    @Option(names = "--tokens", description = "Tokens per request at most (default: ${DEFAULT-VALUE}).",
            defaultValue = "96")
    int tokens;

    @Option(names = "--cores", description = "Device cores (default: available processors).", defaultValue = "0")
    int cores;

    @Option(names = "--workload", description = "llama or paged-attention (default: ${DEFAULT-VALUE}).",
            defaultValue = "llama")
    String workload;

    @Option(names = "--model", paramLabel = "PATH|NAME",
            description = "A GGUF checkpoint, " + dev.tandem.llm.EmbeddedModel.NAME + " (the embedded story model), or a"
                    + " random-weights shape: tiny or small (default: " + dev.tandem.llm.EmbeddedModel.NAME
                    + "; tiny for the paged-attention workload, which runs shapes only).")
    String model;

    @Option(names = "--check", description = "Compare every stream with the scalar reference; exit 1 on any mismatch.")
    boolean check;

    @Option(names = "--trace", paramLabel = "FILE",
            description = "Write a Perfetto trace of the run to FILE: open it in ui.perfetto.dev, or run `tandem trace report FILE`.")
    Path trace;

    @Option(names = "--seed", description = "Weights seed (default: ${DEFAULT-VALUE}).", defaultValue = "7")
    long seed;

    @Option(names = "--kv-type", paramLabel = "f16|f32", converter = KvTypes.class,
            completionCandidates = KvTypes.class, description = "Element type of the llama workload's KV cache: f16"
                    + " (half the memory, llama.cpp's default) or f32 (default: f16).")
    dev.tandem.llm.model.KvType kvType;

    @Override
    public void run() {
        run(System.out);
    }

    /**
     * Runs the demo once, printing to {@code out} (live lines only when {@code out} is the
     * terminal's standard output), and returns its overall tokens per second.
     */
    double run(PrintStream out) {
        if (requests < 1 || tokens < 1 || cores < 0) {
            throw new IllegalArgumentException("--requests and --tokens must be >= 1 and --cores >= 0 (was requests="
                    + requests + ", tokens=" + tokens + ", cores=" + cores + ")");
        }
        int coreCount = cores == 0 ? Runtime.getRuntime().availableProcessors() : cores;
        boolean live = out == System.out && System.console() != null && System.console().isTerminal();
        String chosen = model != null ? model
                : "paged-attention".equalsIgnoreCase(workload) ? "tiny" : dev.tandem.llm.EmbeddedModel.NAME;
        DemoWorkload demo = DemoWorkload.of(workload, chosen, requests, tokens, seed, kvType); // bad input fails here
        out.printf(Locale.ROOT, "tandem demo: %d requests x %d tokens on %d device cores; %s%n", requests, tokens,
                coreCount, demo.describe());

        Lane[] lanes = new Lane[requests];
        long start;
        List<TraceEvent> events;
        String batching;
        Outcome[] outcomes = new Outcome[requests];
        TraceConfig traceConfig = trace == null ? TraceConfig.inMemory() : TraceConfig.toFile(trace).withRetainEvents(true);
        try (Worker worker = Worker.builder().device(CpuDeviceConfig.withCores(coreCount)).trace(traceConfig).build();
                demo) {
            demo.start(worker, requests);
            CountDownLatch done = new CountDownLatch(requests);
            start = System.nanoTime();
            for (int i = 0; i < requests; i++) {
                TokenStream stream = demo.submit(i);
                Lane lane = new Lane(i, demo.text(i), stream, start, tokens);
                lanes[i] = lane;
                Thread.ofVirtual().name("demo-consumer-" + i).start(() -> {
                    try {
                        lane.consume();
                    } finally {
                        done.countDown();
                    }
                });
            }
            try {
                if (live) {
                    out.print("\n".repeat(requests));
                    while (!done.await(80, TimeUnit.MILLISECONDS)) {
                        redraw(out, lanes);
                    }
                    redraw(out, lanes);
                } else {
                    done.await();
                    for (Lane lane : lanes) {
                        out.println(lane.line());
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            }
            for (int i = 0; i < requests; i++) {
                outcomes[i] = lanes[i].stream.completion().join();
            }
            events = worker.traceEvents();
            batching = demo.summary();
        }
        long wall = System.nanoTime() - start;
        double tokensPerSecond = summary(out, lanes, outcomes, events, coreCount, wall);
        if (batching != null) {
            out.println(batching);
        }
        if (trace != null) {
            out.println("trace: wrote " + trace + " (open it in ui.perfetto.dev, or run: tandem trace report " + trace + ")");
        }
        if (check) {
            int mismatches = 0;
            List<List<Token>> streams = new ArrayList<>();
            for (Lane lane : lanes) {
                streams.add(lane.tokens());
            }
            List<String> problems = demo.checkAll(streams);
            for (int i = 0; i < lanes.length; i++) {
                if (outcomes[i].status() != Status.COMPLETED || problems.get(i) != null) {
                    mismatches++;
                    out.printf(Locale.ROOT, "check: request %d MISMATCH: %s%n", lanes[i].stream.requestId(),
                            problems.get(i) != null ? problems.get(i) : "it ended " + outcomes[i].status());
                }
            }
            out.printf(Locale.ROOT, "check: %d of %d streams equal the reference%n", requests - mismatches, requests);
            if (mismatches > 0) {
                throw new CheckFailed();
            }
        }
        return tokensPerSecond;
    }

    /** Exit code 1 without a stack trace. */
    static final class CheckFailed extends RuntimeException {
        CheckFailed() {
            super("streams differ from the reference", null, false, false);
        }
    }

    private static void redraw(PrintStream out, Lane[] lanes) {
        StringBuilder sb = new StringBuilder();
        sb.append("\033[").append(lanes.length).append('F');
        for (Lane lane : lanes) {
            sb.append("\033[2K").append(lane.line()).append('\n');
        }
        out.print(sb);
        out.flush();
    }

    /** Prints the per-request table and the overall figures; returns the overall tokens per second. */
    private static double summary(PrintStream out, Lane[] lanes, Outcome[] outcomes, List<TraceEvent> events, int cores,
            long wallNanos) {
        out.println();
        out.printf(Locale.ROOT, "%-8s %-10s %7s %9s %9s %9s %10s%n", "request", "status", "tokens", "ttft ms", "itl p50",
                "itl p99", "tok/s");
        long totalTokens = 0;
        for (int i = 0; i < lanes.length; i++) {
            Lane lane = lanes[i];
            Outcome o = outcomes[i];
            double[] itl = lane.interTokenMillis();
            double span = lane.count > 0 ? (lane.arrivals[lane.count - 1] - lane.start) / 1e9 : 0;
            out.printf(Locale.ROOT, "%-8d %-10s %7d %9.2f %9.3f %9.3f %10.1f%n", o.requestId(), o.status(), o.tokens(),
                    o.timeToFirstToken() == null ? Double.NaN : o.timeToFirstToken().toNanos() / 1e6,
                    percentile(itl, 50), percentile(itl, 99), span > 0 ? lane.count / span : 0);
            totalTokens += o.tokens();
        }
        TraceAnalysis.Report r = TraceAnalysis.analyze(events, cores);
        double wallMs = wallNanos / 1e6;
        double tokensPerSecond = totalTokens / (wallNanos / 1e9);
        out.printf(Locale.ROOT, "overall: %d tokens in %.1f ms = %.1f tokens/s%n", totalTokens, wallMs, tokensPerSecond);
        out.printf(Locale.ROOT, "overlap in a %.1f ms run: token-parallel %.1f ms (%.0f%%), request-parallel %.1f ms (%.0f%%),"
                        + " S||S %.1f ms (%.0f%%)%n", r.runMs(), r.tokenParallelMs(), 100 * r.fraction(r.tokenParallelMs()),
                r.requestParallelMs(), 100 * r.fraction(r.requestParallelMs()), r.sParallelMs(),
                100 * r.fraction(r.sParallelMs()));
        out.printf(Locale.ROOT, "device busy %.1f%% of %d cores; bubbles (all cores idle while a step is built): %d,"
                        + " %.2f ms in all, longest %.3f ms%n", 100 * r.deviceBusy(), r.cores(), r.bubbleCount(),
                r.bubbleMs(), r.bubbleLongestMs());
        return tokensPerSecond;
    }

    static double percentile(double[] values, double p) {
        if (values.length == 0) {
            return Double.NaN;
        }
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int index = (int) Math.ceil(p / 100 * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, index))];
    }

    /** One request's stream as the demo shows it. */
    private static final class Lane {
        /** Characters of text a live line shows: the end of the stream's text. */
        static final int SHOWN = 72;

        final int index;
        final DemoWorkload.Text text;
        final TokenStream stream;
        final long start;
        final long[] arrivals;
        final Token[] values;
        volatile int count;
        volatile String shown = "";
        volatile String state = "running";

        Lane(int index, DemoWorkload.Text text, TokenStream stream, long start, int tokens) {
            this.index = index;
            this.text = text;
            this.stream = stream;
            this.start = start;
            this.arrivals = new long[tokens];
            this.values = new Token[tokens];
        }

        void consume() {
            try {
                for (Token token : stream) {
                    int n = count;
                    arrivals[n] = System.nanoTime();
                    values[n] = token;
                    text.append(token);
                    shown = text.shown();
                    count = n + 1;
                }
                state = "done";
            } catch (RuntimeException e) {
                state = "ended: " + e.getMessage();
            }
        }

        List<Token> tokens() {
            return List.of(Arrays.copyOf(values, count));
        }

        double[] interTokenMillis() {
            int n = count;
            double[] out = new double[Math.max(0, n - 1)];
            for (int i = 1; i < n; i++) {
                out[i - 1] = (arrivals[i] - arrivals[i - 1]) / 1e6;
            }
            return out;
        }

        String line() {
            int n = count;
            String all = shown.replace('\n', '\u23CE');
            int from = Math.max(0, all.length() - SHOWN + 1);
            if (from < all.length() && Character.isLowSurrogate(all.charAt(from))) {
                from++; // never show half a character
            }
            String text = from == 0 ? all : "\u2026" + all.substring(from);
            double seconds = n > 0 ? (arrivals[n - 1] - start) / 1e9 : 0;
            return String.format(Locale.ROOT, "r%-2d %-8s %4d tok %8.1f tok/s | %s", index + 1, state, n,
                    seconds > 0 ? n / seconds : 0, text);
        }
    }
}
