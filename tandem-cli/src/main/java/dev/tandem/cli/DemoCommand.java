package dev.tandem.cli;

import dev.tandem.CpuDevice;
import dev.tandem.Outcome;
import dev.tandem.RunOptions;
import dev.tandem.Status;
import dev.tandem.Token;
import dev.tandem.TokenStream;
import dev.tandem.TraceEvent;
import dev.tandem.Worker;
import dev.tandem.bench.SyntheticDecoder;
import dev.tandem.bench.TraceOverlap;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code tandem demo}: several concurrent requests of a decoder-shaped workload on one
 * worker, each stream shown as it grows, then a summary of latency, throughput and overlap.
 */
@Command(
        name = "demo",
        mixinStandardHelpOptions = true,
        description = "Run concurrent streaming requests and show their tokens live, then TTFT, inter-token latency,"
                + " throughput and how much host build and device run overlapped.")
public final class DemoCommand implements Runnable {

    @Option(names = "--requests", description = "Concurrent requests (default: ${DEFAULT-VALUE}).", defaultValue = "4")
    int requests;

    @Option(names = "--tokens", description = "Tokens per request (default: ${DEFAULT-VALUE}).", defaultValue = "64")
    int tokens;

    @Option(names = "--cores", description = "Device cores (default: available processors).", defaultValue = "0")
    int cores;

    @Option(names = "--dim", description = "Model width (default: ${DEFAULT-VALUE}).", defaultValue = "512")
    int dim;

    @Option(names = "--layers", description = "Layers per step (default: ${DEFAULT-VALUE}).", defaultValue = "8")
    int layers;

    @Option(names = "--check", description = "Compare every stream with a one-operation-at-a-time reference; exit 1 on any mismatch.")
    boolean check;

    @Option(names = "--seed", description = "Weights seed (default: ${DEFAULT-VALUE}).", defaultValue = "7")
    long seed;

    @Override
    public void run() {
        if (requests < 1 || tokens < 1 || cores < 0 || dim < 4 || dim % 4 != 0 || layers < 1) {
            throw new IllegalArgumentException("--requests, --tokens and --layers must be >= 1, --cores >= 0, and --dim a"
                    + " multiple of 4 (was requests=" + requests + ", tokens=" + tokens + ", cores=" + cores + ", dim=" + dim
                    + ", layers=" + layers + ")");
        }
        int coreCount = cores == 0 ? Runtime.getRuntime().availableProcessors() : cores;
        PrintStream out = System.out;
        boolean live = System.console() != null && System.console().isTerminal();
        SyntheticDecoder model = new SyntheticDecoder(dim, layers, 4, seed);
        out.printf(Locale.ROOT, "tandem demo: %d requests x %d tokens, decoder dim %d x %d layers (4 row-block tasks per layer),"
                + " %d device cores%n", requests, tokens, dim, layers, coreCount);

        Lane[] lanes = new Lane[requests];
        long start;
        List<TraceEvent> events;
        Outcome[] outcomes = new Outcome[requests];
        try (Worker worker = Worker.builder().device(CpuDevice.withCores(coreCount)).tracing(true).build()) {
            model.load(worker);
            CountDownLatch done = new CountDownLatch(requests);
            start = System.nanoTime();
            for (int i = 0; i < requests; i++) {
                var prompt = new SyntheticDecoder.Prompt(i * 7 % model.vocab(), tokens);
                TokenStream stream = worker.run(model.program(), prompt, RunOptions.defaults());
                Lane lane = new Lane(i, prompt, stream, start);
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
        }
        long wall = System.nanoTime() - start;
        summary(out, lanes, outcomes, events, wall);
        if (check) {
            int mismatches = 0;
            for (Lane lane : lanes) {
                int[] expected = model.reference(lane.prompt);
                int[] actual = lane.tokens();
                if (!Arrays.equals(expected, actual)) {
                    mismatches++;
                    out.printf(Locale.ROOT, "check: request %d MISMATCH: expected %s, got %s%n", lane.stream.requestId(),
                            text(expected), text(actual));
                }
            }
            out.printf(Locale.ROOT, "check: %d of %d streams equal the reference%n", requests - mismatches, requests);
            if (mismatches > 0) {
                throw new CheckFailed();
            }
        }
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

    private static void summary(PrintStream out, Lane[] lanes, Outcome[] outcomes, List<TraceEvent> events, long wallNanos) {
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
        TraceOverlap overlap = TraceOverlap.of(events);
        double wallMs = wallNanos / 1e6;
        out.printf(Locale.ROOT, "overall: %d tokens in %.1f ms = %.1f tokens/s%n", totalTokens, wallMs,
                totalTokens / (wallNanos / 1e9));
        out.printf(Locale.ROOT, "device busy %.1f%% of %d core-ms; host build overlapped device run (O||S) %.1f ms;"
                        + " tasks of 2+ requests ran at once (S||S) %.1f ms%n",
                100 * overlap.deviceBusyFraction(), Math.round(overlap.coreMillis()), overlap.buildWhileRunningMillis(),
                overlap.multiRequestMillis());
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

    private static String text(int[] tokens) {
        StringBuilder sb = new StringBuilder();
        for (int t : tokens) {
            sb.append(SyntheticDecoder.render(t));
        }
        return '"' + sb.toString() + '"';
    }

    /** One request's stream as the demo shows it. */
    private static final class Lane {
        final int index;
        final SyntheticDecoder.Prompt prompt;
        final TokenStream stream;
        final long start;
        final long[] arrivals;
        final int[] values;
        volatile int count;
        volatile String state = "running";

        Lane(int index, SyntheticDecoder.Prompt prompt, TokenStream stream, long start) {
            this.index = index;
            this.prompt = prompt;
            this.stream = stream;
            this.start = start;
            this.arrivals = new long[prompt.tokens()];
            this.values = new int[prompt.tokens()];
        }

        void consume() {
            try {
                for (Token token : stream) {
                    int n = count;
                    arrivals[n] = System.nanoTime();
                    values[n] = token.asInt();
                    count = n + 1;
                }
                state = "done";
            } catch (RuntimeException e) {
                state = "ended: " + e.getMessage();
            }
        }

        int[] tokens() {
            return Arrays.copyOf(values, count);
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
            StringBuilder text = new StringBuilder();
            for (int i = 0; i < n; i++) {
                text.append(SyntheticDecoder.render(values[i]));
            }
            double seconds = n > 0 ? (arrivals[n - 1] - start) / 1e9 : 0;
            return String.format(Locale.ROOT, "r%-2d %-8s %4d tok %8.1f tok/s | %s", index + 1, state, n,
                    seconds > 0 ? n / seconds : 0, text);
        }
    }
}
