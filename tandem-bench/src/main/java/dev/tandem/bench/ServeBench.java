package dev.tandem.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.bench.peers.LlamaCppPeer;
import dev.tandem.llm.gguf.GgmlType;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.ToDoubleFunction;

/**
 * {@code tandem bench serve}: closed-loop streaming clients over HTTP on loopback against
 * tandem's server and, with the peer, {@code llama-server} on the same file, each server a
 * process of its own started as its users start it, the clients in the bench's process. Per
 * workload and concurrency the servers take turns for several rounds (the others idle) and each
 * figure is the median of its rounds. Then an independent client ({@code bin/serve-load.py},
 * Python, no code shared) measures one row of every server again, and the report says whether
 * the bench's figure is within 10% of it. Each server's time to ready and resident memory
 * (after load, after the run) come with the rows.
 */
public final class ServeBench {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** What one server did at one concurrency of one workload, medians over the rounds. */
    /**
     * @param firstTokenPhasesMs for tandem: where the mean time to first token went inside the
     *        engine (queue, schedule, step; from its {@code /metrics}) and the rest ({@code server}:
     *        the client's mean less the three, the HTTP path both ways); null for a server without them
     */
    public record Row(String model, String workload, String engine, int clients, int completions,
            double promptTokensMean, double tokensPerSecond, double ttftMeanMs, double ttftP50Ms, double ttftP99Ms,
            double itlP50Ms, double itlP99Ms, int errors, Map<String, Double> firstTokenPhasesMs, String note) {

        public Map<String, Object> toJson() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("model", model);
            out.put("workload", workload);
            out.put("engine", engine);
            out.put("clients", clients);
            out.put("completions", completions);
            out.put("prompt_tokens_mean", promptTokensMean);
            out.put("tokens_per_s", tokensPerSecond);
            out.put("ttft_mean_ms", ttftMeanMs);
            out.put("ttft_p50_ms", ttftP50Ms);
            out.put("ttft_p99_ms", ttftP99Ms);
            out.put("itl_p50_ms", itlP50Ms);
            out.put("itl_p99_ms", itlP99Ms);
            out.put("errors", errors);
            if (firstTokenPhasesMs != null) {
                out.put("ttft_phases_ms", firstTokenPhasesMs);
            }
            if (note != null) {
                out.put("note", note);
            }
            return out;
        }
    }

    /** A server's start and memory: seconds from its process's start to a healthy answer, resident KB. */
    public record Footprint(String model, String engine, String command, double readySeconds, long rssAfterLoadKb,
            long rssAfterRunKb) {

        public Map<String, Object> toJson() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("model", model);
            out.put("engine", engine);
            out.put("command", command);
            out.put("ready_s", readySeconds);
            out.put("rss_after_load_mb", rssAfterLoadKb / 1024.0);
            out.put("rss_after_run_mb", rssAfterRunKb / 1024.0);
            return out;
        }
    }

    /**
     * One row measured again by the independent client, right after the bench's rounds of it.
     *
     * @param independentTokensPerSecond NaN with a note when the client could not run
     */
    public record CrossCheck(String model, String workload, String engine, int clients, double benchTokensPerSecond,
            double independentTokensPerSecond, double independentTtftP50Ms, String note) {

        /** The independent client's figure over the bench's. */
        public double ratio() {
            return independentTokensPerSecond / benchTokensPerSecond;
        }

        /** Whether the two agree within 10%. */
        public boolean agrees() {
            return Math.abs(ratio() - 1) <= 0.10;
        }

        public Map<String, Object> toJson() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("model", model);
            out.put("workload", workload);
            out.put("engine", engine);
            out.put("clients", clients);
            out.put("bench_tokens_per_s", benchTokensPerSecond);
            out.put("independent_client", "bin/serve-load.py");
            out.put("independent_tokens_per_s", independentTokensPerSecond);
            out.put("independent_ttft_p50_ms", independentTtftP50Ms);
            out.put("independent_over_bench", ratio());
            out.put("within_10_percent", agrees());
            if (note != null) {
                out.put("note", note);
            }
            return out;
        }
    }

    /** Everything one run measured. */
    public record Report(List<Row> rows, List<Footprint> footprints, List<CrossCheck> checks, List<String> missing) {}

    /**
     * How to start one contender.
     *
     * @param engine  its name in the report
     * @param command the command that serves {@code model} on {@code port}; null for llama.cpp's
     *                server, which {@link LlamaCppPeer} builds and starts
     */
    public record Contender(String engine, CommandLine command) {}

    /** The command line of a server of {@code model} on {@code port}. */
    @FunctionalInterface
    public interface CommandLine {
        List<String> of(Path model, int port);
    }

    /**
     * The settings of one run.
     *
     * @param peerSlots     llama-server's {@code -np}
     * @param slotContext   llama-server's context per slot ({@code -c} is {@code peerSlots * slotContext})
     * @param crossCheck    the independent client's command, e.g. {@code python3 bin/serve-load.py}; null for none
     */
    public record Settings(List<ServeLoad.Workload> workloads, List<Integer> clients, int cores, int maxTokens,
            double secondsPerRun, int rounds, int peerSlots, int slotContext, List<String> crossCheck) {}

    private ServeBench() {}

    /** The random GGUF of shape {@code shape} ({@link PeerDecodeBench#shapes()}) whose greedy output is printable. */
    public static Path printableFile(Path dir, String shape, GgmlType type) {
        var config = PeerDecodeBench.shapes().get(shape);
        if (config == null) {
            throw new IllegalArgumentException("shape = " + shape + " is not known; known: "
                    + PeerDecodeBench.shapes().keySet());
        }
        return RandomGguf.cached(dir.resolve("tandem-serve-" + shape + "-" + type.name().toLowerCase(Locale.ROOT)
                + ".gguf"), config, type, 7, true);
    }

    /** A started server. */
    private record Running(String engine, URI base, Process process, String command, double readySeconds,
            long rssAfterLoadKb, AutoCloseable stop) {}

    /** Measures {@code path} with every contender (and llama.cpp's server when {@code peer}). */
    public static Report run(String label, Path path, List<Contender> contenders, boolean peer, Settings s,
            Consumer<String> progress) throws Exception {
        List<Running> servers = new ArrayList<>();
        List<String> missing = new ArrayList<>();
        List<Row> rows = new ArrayList<>();
        List<Footprint> footprints = new ArrayList<>();
        List<CrossCheck> checks = new ArrayList<>();
        String model = path.getFileName().toString();
        try {
            for (Contender c : contenders) {
                servers.add(start(c, path));
                progress.accept("  " + c.engine() + " ready in " + servers.getLast().readySeconds() + " s");
            }
            if (peer) {
                long t0 = System.nanoTime();
                Object started = LlamaCppPeer.startServer(path, s.cores(), s.peerSlots(), s.slotContext());
                if (started instanceof LlamaCppPeer.Server server) {
                    double ready = (System.nanoTime() - t0) / 1e9;
                    servers.add(new Running("llama.cpp", server.base(), server.process(), "llama-server -m " + model
                            + " -t " + s.cores() + " -np " + s.peerSlots() + " -c " + s.peerSlots() * s.slotContext(),
                            ready, rssKb(server.process()), server));
                    progress.accept("  llama.cpp ready in " + ready + " s");
                } else {
                    missing.add("llama.cpp: " + started);
                }
            }
            for (Running r : servers) { // warm-up: the JIT (batch shapes of 8 and of 1), the servers' first requests
                ServeLoad.run(r.base(), model, ServeLoad.Workload.UNIQUE, Math.min(8, maxOf(s.clients())),
                        s.maxTokens(), Math.min(8, 2 * s.secondsPerRun()));
                ServeLoad.run(r.base(), model, ServeLoad.Workload.UNIQUE, 1, s.maxTokens(),
                        Math.min(4, s.secondsPerRun()));
            }
            for (ServeLoad.Workload workload : s.workloads()) {
                for (int c : s.clients()) {
                    List<List<ServeLoad.Result>> results = new ArrayList<>();
                    for (int i = 0; i < servers.size(); i++) {
                        results.add(new ArrayList<>());
                    }
                    double[][] phases = new double[servers.size()][];
                    for (int round = 0; round < s.rounds(); round++) {
                        for (int k = 0; k < servers.size(); k++) {
                            int i = (k + round) % servers.size(); // alternate who goes first
                            Running r = servers.get(i);
                            double[] before = firstTokenTotals(r.base());
                            ServeLoad.Result result = ServeLoad.run(r.base(), model, workload, c, s.maxTokens(),
                                    s.secondsPerRun());
                            double[] after = firstTokenTotals(r.base());
                            if (before != null && after != null) {
                                phases[i] = phases[i] == null ? new double[4] : phases[i];
                                for (int p = 0; p < 4; p++) {
                                    phases[i][p] += after[p] - before[p];
                                }
                            }
                            results.get(i).add(result);
                            progress.accept(String.format(Locale.ROOT,
                                    "  %s, %s, %d clients, round %d: %.1f tokens/s, ttft p50 %.0f ms",
                                    r.engine(), workload.label(), c, round + 1, result.tokensPerSecond(),
                                    result.ttftP50Ms()));
                        }
                    }
                    for (int i = 0; i < servers.size(); i++) {
                        rows.add(row(label, workload, servers.get(i).engine(), c, results.get(i), phases[i]));
                    }
                }
            }
            if (s.crossCheck() != null && !s.workloads().isEmpty()) {
                ServeLoad.Workload workload = s.workloads().getFirst();
                int c = maxOf(s.clients());
                for (Running r : servers) {
                    double bench = rows.stream().filter(x -> x.engine().equals(r.engine()) && x.clients() == c
                            && x.workload().equals(workload.label())).mapToDouble(Row::tokensPerSecond).findFirst()
                            .orElse(Double.NaN);
                    checks.add(crossCheck(s, label, workload, r, model, c, bench));
                    progress.accept("  cross-check " + r.engine() + ": " + checks.getLast().toJson());
                }
            }
            for (Running r : servers) {
                footprints.add(new Footprint(label, r.engine(), r.command(), r.readySeconds(), r.rssAfterLoadKb(),
                        rssKb(r.process())));
            }
        } finally {
            for (Running r : servers) {
                try {
                    r.stop().close();
                } catch (Exception e) {
                    progress.accept("  closing " + r.engine() + ": " + e);
                }
            }
        }
        return new Report(rows, footprints, checks, missing);
    }

    private static int maxOf(List<Integer> values) {
        return values.stream().mapToInt(Integer::intValue).max().orElse(1);
    }

    private static Row row(String label, ServeLoad.Workload workload, String engine, int clients,
            List<ServeLoad.Result> rs, double[] phases) {
        String note = rs.stream().map(ServeLoad.Result::firstError).filter(e -> e != null).findFirst().orElse(null);
        int completions = rs.stream().mapToInt(ServeLoad.Result::completions).sum();
        double promptMean = completions == 0 ? Double.NaN
                : rs.stream().mapToLong(ServeLoad.Result::promptTokens).sum() / (double) completions;
        double ttftMean = completions == 0 ? Double.NaN
                : rs.stream().mapToDouble(r -> r.ttftMeanMs() * r.completions()).sum() / completions;
        Map<String, Double> phasesMs = null;
        if (phases != null && phases[0] > 0) {
            phasesMs = new LinkedHashMap<>();
            double inEngine = 0;
            String[] names = {"queue", "schedule", "step"};
            for (int p = 0; p < 3; p++) {
                double ms = phases[p + 1] / phases[0] * 1000;
                phasesMs.put(names[p], ms);
                inEngine += ms;
            }
            phasesMs.put("server", ttftMean - inEngine);
        }
        return new Row(label, workload.label(), engine, clients, completions, promptMean,
                median(rs, ServeLoad.Result::tokensPerSecond), ttftMean, median(rs, ServeLoad.Result::ttftP50Ms),
                median(rs, ServeLoad.Result::ttftP99Ms), median(rs, ServeLoad.Result::itlP50Ms),
                median(rs, ServeLoad.Result::itlP99Ms), rs.stream().mapToInt(ServeLoad.Result::errors).sum(), phasesMs,
                note);
    }

    private static final String[] FIRST_TOKEN_METRICS = {"tandem_engine_first_tokens_total",
        "tandem_engine_first_token_queue_seconds_total", "tandem_engine_first_token_schedule_seconds_total",
        "tandem_engine_first_token_step_seconds_total"};

    /** tandem's first-token count and phase totals (seconds) from {@code /metrics}; null where it has none. */
    static double[] firstTokenTotals(URI base) {
        try (Socket socket = new Socket(base.getHost(), base.getPort())) {
            socket.setSoTimeout(5000);
            socket.getOutputStream().write(("GET /metrics HTTP/1.1\r\nHost: " + base.getHost()
                    + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            ServeLoad.HttpBody body = new ServeLoad.HttpBody(socket.getInputStream());
            String status = body.headerLine();
            if (status == null || !status.startsWith("HTTP/1.1 200")) {
                return null;
            }
            return parseFirstTokenTotals(body);
        } catch (IOException e) {
            return null;
        }
    }

    static double[] parseFirstTokenTotals(ServeLoad.HttpBody body) throws IOException {
        double[] totals = new double[FIRST_TOKEN_METRICS.length];
        int found = 0;
        String line;
        while ((line = body.line()) != null) {
            for (int i = 0; i < FIRST_TOKEN_METRICS.length; i++) {
                if (line.startsWith(FIRST_TOKEN_METRICS[i] + " ") || line.startsWith(FIRST_TOKEN_METRICS[i] + "{")) {
                    totals[i] = Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
                    found++;
                }
            }
        }
        return found == FIRST_TOKEN_METRICS.length ? totals : null;
    }

    /** Starts {@code c}'s process and waits for its {@code /health}; the time counts from the process's start. */
    private static Running start(Contender c, Path model) throws IOException, InterruptedException {
        int port;
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = probe.getLocalPort();
        }
        List<String> command = c.command().of(model, port);
        Path log = Files.createTempFile("tandem-bench-serve-" + c.engine(), ".log");
        long t0 = System.nanoTime();
        Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        URI base = URI.create("http://127.0.0.1:" + port);
        long until = t0 + TimeUnit.MINUTES.toNanos(5);
        while (!healthy(base)) {
            if (!process.isAlive()) {
                throw new IOException(c.engine() + " exited " + process.exitValue() + " (log: " + log + ")");
            }
            if (System.nanoTime() > until) {
                process.destroyForcibly();
                throw new IOException(c.engine() + " was not healthy within 5 minutes (log: " + log + ")");
            }
            Thread.sleep(20);
        }
        double ready = (System.nanoTime() - t0) / 1e9;
        AutoCloseable stop = () -> {
            process.destroy();
            if (!process.waitFor(20, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        };
        String shown = String.join(" ", command.subList(command.indexOf("serve"), command.size()));
        return new Running(c.engine(), base, process, "tandem " + shown, ready, rssKb(process), stop);
    }

    private static boolean healthy(URI base) {
        try (Socket socket = new Socket(base.getHost(), base.getPort())) {
            socket.setSoTimeout(2000);
            socket.getOutputStream().write(("GET /health HTTP/1.1\r\nHost: " + base.getHost()
                    + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            String status = new ServeLoad.HttpBody(socket.getInputStream()).headerLine();
            return status != null && status.startsWith("HTTP/1.1 200");
        } catch (IOException notYet) {
            return false;
        }
    }

    /** The resident memory of {@code process} in KB (VmRSS), or -1 where it cannot be read. */
    static long rssKb(Process process) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/" + process.pid() + "/status"))) {
                if (line.startsWith("VmRSS:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", ""));
                }
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return -1;
    }

    private static CrossCheck crossCheck(Settings s, String label, ServeLoad.Workload workload, Running r,
            String model, int clients, double bench) throws InterruptedException {
        List<String> command = new ArrayList<>(s.crossCheck());
        command.addAll(List.of("--url", r.base().toString(), "--clients", Integer.toString(clients), "--seconds",
                Double.toString(s.secondsPerRun()), "--tokens", Integer.toString(s.maxTokens()), "--workload",
                workload.label(), "--model", model));
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (p.waitFor() != 0) {
                return new CrossCheck(label, workload.label(), r.engine(), clients, bench, Double.NaN, Double.NaN,
                        "the independent client failed: " + out.strip());
            }
            String last = out.strip().lines().reduce((a, b) -> b).orElse("{}");
            JsonNode result = JSON.readTree(last);
            String note = result.path("errors").asInt() > 0 ? "errors: " + result.path("first_error").asText() : null;
            return new CrossCheck(label, workload.label(), r.engine(), clients, bench,
                    result.path("tokens_per_s").asDouble(Double.NaN), result.path("ttft_p50_ms").asDouble(Double.NaN),
                    note);
        } catch (IOException e) {
            return new CrossCheck(label, workload.label(), r.engine(), clients, bench, Double.NaN, Double.NaN,
                    "the independent client could not start: " + e.getMessage());
        }
    }

    private static double median(List<ServeLoad.Result> rs, ToDoubleFunction<ServeLoad.Result> f) {
        double[] v = rs.stream().mapToDouble(f).sorted().toArray();
        if (v.length == 0) {
            return Double.NaN;
        }
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }
}
