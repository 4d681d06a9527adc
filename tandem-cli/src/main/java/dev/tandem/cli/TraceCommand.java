package dev.tandem.cli;

import dev.tandem.TraceEvent;
import dev.tandem.bench.Json;
import dev.tandem.bench.trace.PerfettoTraceReader;
import dev.tandem.bench.trace.PerfettoTraceReader.TraceFile;
import dev.tandem.bench.trace.SwimlaneChart;
import dev.tandem.bench.trace.TraceAnalysis;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code tandem trace ...}: work with the Perfetto traces that {@code --trace FILE} writes. */
@Command(
        name = "trace",
        mixinStandardHelpOptions = true,
        description = "Work with a Perfetto trace written by --trace FILE (open it in ui.perfetto.dev too).",
        subcommands = {TraceCommand.Report.class})
public final class TraceCommand implements Runnable {

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }

    @Command(name = "report", mixinStandardHelpOptions = true,
            description = "Per-request latency and the overlap of host build and device run, from a trace file."
                    + " The last line printed with --json is one JSON object. Exit 2 if the file cannot be reported on.")
    static final class Report implements Runnable {
        @Parameters(index = "0", paramLabel = "FILE", description = "A .pftrace written by tandem.")
        Path file;

        @Option(names = "--json", description = "Print the figures as one JSON object on the last line.")
        boolean json;

        @Option(names = "--png", paramLabel = "OUT.png", description = "Draw a swimlane picture of the run into OUT.png.")
        Path png;

        @Override
        public void run() {
            TraceFile trace = PerfettoTraceReader.read(file);
            long tasks = trace.events().stream().filter(e -> e.kind() == TraceEvent.Kind.TASK).count();
            if (tasks == 0) {
                throw new IllegalArgumentException(file + " holds no tasks (" + trace.packets() + " packets, "
                        + trace.events().size() + " events): nothing to report"
                        + (trace.damage() == null ? "" : "; the file is " + trace.damage()));
            }
            TraceAnalysis.Report report = TraceAnalysis.analyze(trace.events(), trace.cores());
            PrintStream out = System.out;
            print(out, trace, report);
            printKernels(out, report);
            if (png != null) {
                try {
                    SwimlaneChart.write(trace.events(), report, "tandem trace " + file.getFileName(), png);
                } catch (IOException | RuntimeException e) {
                    throw new IllegalArgumentException("cannot write " + png + ": " + e.getMessage(), e);
                }
                out.println("png: wrote " + png);
            }
            if (json) {
                Map<String, Object> object = new LinkedHashMap<>();
                object.put("file", file.toString());
                object.put("damage", trace.damage());
                object.putAll(report.toJson());
                out.println(Json.write(object));
            }
        }

        private void print(PrintStream out, TraceFile trace, TraceAnalysis.Report r) {
            out.printf(Locale.ROOT, "trace %s: %d request%s, %d tasks on %d core%s, run %.1f ms (%d packets)%n", file,
                    r.requests().size(), r.requests().size() == 1 ? "" : "s", r.tasks(), r.cores(),
                    r.cores() == 1 ? "" : "s", r.runMs(), trace.packets());
            if (trace.damage() != null) {
                out.printf(Locale.ROOT, "note: the file is %s; reporting what it holds (%d spans never ended)%n",
                        trace.damage(), trace.unfinishedSpans());
            }
            out.println();
            out.printf(Locale.ROOT, "%8s  %-10s %6s %9s %9s %9s %10s %10s%n", "request", "status", "tokens", "ttft ms",
                    "itl p50", "itl p99", "deliv p50", "deliv p99");
            StringBuilder anomalies = new StringBuilder();
            for (TraceAnalysis.RequestReport q : r.requests()) {
                out.printf(Locale.ROOT, "%8d  %-10s %6d %9s %9s %9s %10s %10s%n", q.request(), q.status(), q.tokens(),
                        ms(q.ttftMs()), ms(q.itlP50Ms()), ms(q.itlP99Ms()), ms(q.deliveryP50Ms()),
                        ms(q.deliveryP99Ms()));
                if (q.duplicateTokens() > 0 || q.outOfOrderTokens() > 0) {
                    anomalies.append(String.format(Locale.ROOT, "  request %d: %d duplicate and %d out-of-order deliveries%n",
                            q.request(), q.duplicateTokens(), q.outOfOrderTokens()));
                }
            }
            out.println("(ttft: submission to first token delivered; itl: between deliveries;"
                    + " deliv: step done to token taken by the caller)");
            if (!anomalies.isEmpty()) {
                out.println("deliveries that are not one per step, in step order:");
                out.print(anomalies);
            }
            out.println();
            out.printf(Locale.ROOT, "%-18s %10s %7s%n", "overall", "ms", "of run");
            line(out, r, "token-parallel", r.tokenParallelMs(), "a request builds a step while its earlier step runs");
            line(out, r, "request-parallel", r.requestParallelMs(), "a request builds while another's tasks run");
            line(out, r, "S||S", r.sParallelMs(), "tasks of two or more requests run at once");
            out.printf(Locale.ROOT, "%-18s %10.2f %6.1f%%   core time running tasks, of %d core%s x run%n",
                    "device busy", r.busyCoreMs(), 100 * r.deviceBusy(), r.cores(), r.cores() == 1 ? "" : "s");
            line(out, r, "bubbles", r.bubbleMs(), String.format(Locale.ROOT,
                    "%d, longest %.3f ms: all cores idle while a step is being built", r.bubbleCount(),
                    r.bubbleLongestMs()));
        }

        private static void printKernels(PrintStream out, TraceAnalysis.Report r) {
            out.println();
            out.printf(Locale.ROOT, "%-24s %8s %10s %7s %10s %7s%n", "kernel", "spans", "busy ms", "of busy", "alone ms",
                    "of run");
            for (TraceAnalysis.KernelReport k : r.kernels()) {
                out.printf(Locale.ROOT, "%-24s %8d %10.2f %6.1f%% %10.2f %6.1f%%%n", k.name(), k.spans(), k.busyMs(),
                        r.busyCoreMs() > 0 ? 100 * k.busyMs() / r.busyCoreMs() : 0, k.aloneMs(), 100 * r.fraction(k.aloneMs()));
            }
            out.println("(alone: the kernel's span was the only one running, every other core idle)");
            printIdle(out, r, IDLE_ROWS);
        }

        /** Rows of the idle table printed, most idle first. */
        static final int IDLE_ROWS = 12;

        /** The {@code rows} pairs of kernels around the most core idle time of {@code r}. */
        static void printIdle(PrintStream out, TraceAnalysis.Report r, int rows) {
            if (r.idle().isEmpty()) {
                return;
            }
            double idle = r.cores() * r.runMs() - r.busyCoreMs();
            out.println();
            out.printf(Locale.ROOT, "%-44s %8s %9s %7s %7s %9s%n", "core idle after -> before", "gaps", "idle ms",
                    "of idle", "us/gap", "long ms");
            for (TraceAnalysis.IdleReport i : r.idle().subList(0, Math.min(rows, r.idle().size()))) {
                out.printf(Locale.ROOT, "%-44s %8d %9.2f %6.1f%% %7.2f %9.2f%n", i.after() + " -> " + i.before(),
                        i.gaps(), i.idleMs(), idle > 0 ? 100 * i.idleMs() / idle : 0, 1e3 * i.idleMs() / i.gaps(),
                        i.longIdleMs());
            }
            out.printf(Locale.ROOT, "(a core's gaps between its tasks, by the kernels around them; long: gaps of %d us"
                    + " or more, a core with nothing to run or off its processor)%n",
                    TraceAnalysis.LONG_GAP_NANOS / 1000);
        }

        private static void line(PrintStream out, TraceAnalysis.Report r, String name, double ms, String meaning) {
            out.printf(Locale.ROOT, "%-18s %10.2f %6.1f%%   %s%n", name, ms, 100 * r.fraction(ms), meaning);
        }

        private static String ms(double value) {
            return Double.isNaN(value) ? "-" : String.format(Locale.ROOT, "%.3f", value);
        }
    }
}
