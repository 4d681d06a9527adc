package dev.tandem.cli;

import dev.tandem.bench.Json;
import dev.tandem.bench.ServeBench;
import dev.tandem.bench.ServeLoad;
import dev.tandem.llm.EmbeddedModel;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code tandem bench serve}: tandem's server and llama.cpp's, each its own process started as
 * its users start it, under closed-loop streaming clients ({@link ServeBench}).
 */
@Command(name = "serve", mixinStandardHelpOptions = true,
        description = "Closed-loop streaming clients over HTTP on loopback against tandem's server and llama.cpp's"
                + " (--peer llama.cpp), each its own process, on the same GGUF; workloads of unique prompts, a shared"
                + " prefix and multi-turn chats; one row re-measured by an independent client.")
final class BenchServeCommand implements Runnable {
    @picocli.CommandLine.Mixin
    BenchCommand.Common common = new BenchCommand.Common();

    @Option(names = "--model", paramLabel = "PATH|SHAPE",
            description = "A GGUF file, stories260K, or a random shape (small, large, 0.5b) written in each of --types"
                    + " (default: small).")
    String model;

    @Option(names = "--types", split = ",", defaultValue = "Q8_0",
            description = "For a random shape: its matrix types, or Q4_K_M (written by llama-quantize)"
                    + " (default: ${DEFAULT-VALUE}).")
    List<String> types;

    @Option(names = "--workloads", split = ",", defaultValue = "unique,shared-prefix,multi-turn",
            description = "unique, shared-prefix (~500 shared tokens, then a user turn), multi-turn (conversations"
                    + " resent with each turn) (default: ${DEFAULT-VALUE}).")
    List<String> workloads;

    @Option(names = "--clients", split = ",", defaultValue = "1,8,16",
            description = "Concurrent clients per level (default: ${DEFAULT-VALUE}).")
    List<Integer> clients;

    @Option(names = "--tokens", defaultValue = "64", description = "Tokens per completion (default: ${DEFAULT-VALUE}).")
    int tokens;

    @Option(names = "--seconds", defaultValue = "10", description = "Seconds per measured run (default: ${DEFAULT-VALUE};"
            + " --quick: 4).")
    double seconds;

    @Option(names = "--rounds", defaultValue = "2", description = "Alternating rounds per row (default: ${DEFAULT-VALUE};"
            + " --quick: 1).")
    int rounds;

    @Option(names = "--peer", paramLabel = "llama.cpp", description = "Run llama.cpp's server too (built on first use).")
    String peer;

    @Option(names = "--peer-slots", defaultValue = "8", description = "llama-server's -np (default: ${DEFAULT-VALUE}).")
    int peerSlots;

    @Option(names = {"-c", "--ctx-size"}, defaultValue = "2048",
            description = "Context per sequence: tandem's --ctx-size, llama-server's -c divided by -np; both hold"
                    + " --peer-slots times this many KV positions (tandem's --kv-cells) (default: ${DEFAULT-VALUE}).")
    int context;

    @Option(names = "--unbatched", description = "Also run tandem's server without batching (--no-batching).")
    boolean unbatched;

    @Option(names = "--cores", description = "Device cores and llama.cpp threads (default: available processors).",
            defaultValue = "0")
    int cores;

    @Override
    public void run() {
        if (peer != null && !peer.equals("llama.cpp")) {
            throw new IllegalArgumentException("--peer = " + peer + " is not known; known: llama.cpp");
        }
        if (tokens < 1 || cores < 0 || seconds <= 0 || rounds < 1 || peerSlots < 1 || context < 2
                || clients.stream().anyMatch(c -> c < 1)) {
            throw new IllegalArgumentException("--tokens, --clients, --rounds and --peer-slots must be >= 1, --seconds"
                    + " > 0, --ctx-size >= 2 and --cores >= 0");
        }
        if (common.trace != null) {
            throw new IllegalArgumentException("bench serve does not write traces; use tandem demo --trace FILE");
        }
        List<ServeLoad.Workload> chosen = workloads.stream().map(ServeLoad.Workload::of).toList();
        int coreCount = cores == 0 ? Runtime.getRuntime().availableProcessors() : cores;
        double perRun = common.quick ? Math.min(4, seconds) : seconds;
        int roundCount = common.quick ? 1 : rounds;
        List<Path> files = new ArrayList<>();
        List<String> labels = new ArrayList<>();
        String shape = model == null ? "small" : model;
        if (model != null && !dev.tandem.bench.PeerDecodeBench.shapes().containsKey(model)) {
            Path path = EmbeddedModel.resolve(model);
            if (!Files.isRegularFile(path)) {
                throw new IllegalArgumentException("--model = " + model + " is neither a GGUF file nor a shape of "
                        + dev.tandem.bench.PeerDecodeBench.shapes().keySet());
            }
            files.add(path);
            labels.add(EmbeddedModel.isEmbedded(path) ? EmbeddedModel.NAME : path.getFileName().toString());
        } else {
            Path dir = Path.of(System.getProperty("java.io.tmpdir"), "tandem-bench-models");
            for (String t : types) {
                if (t.equals("Q4_K_M")) {
                    // the scheme users download: llama-quantize's mix (Q4_K, Q6_K, and Q5_0/Q8_0 where a row
                    // is not a multiple of 256) from a random F16 file of the shape
                    Path f16 = ServeBench.printableFile(dir, shape, dev.tandem.llm.gguf.GgmlType.F16);
                    Path q4km = dir.resolve(f16.getFileName().toString().replace("-f16.gguf", "-q4_k_m.gguf"));
                    String failed = dev.tandem.bench.peers.LlamaCppPeer.quantize(f16, q4km, "Q4_K_M");
                    if (failed != null) {
                        throw new IllegalArgumentException("--types Q4_K_M needs llama-quantize: " + failed);
                    }
                    files.add(q4km);
                    labels.add(shape + "-Q4_K_M");
                    continue;
                }
                dev.tandem.llm.gguf.GgmlType type = BenchCommand.matrixType(t);
                files.add(ServeBench.printableFile(dir, shape, type));
                labels.add(shape + "-" + type.name());
            }
        }
        List<ServeBench.Contender> contenders = new ArrayList<>();
        contenders.add(new ServeBench.Contender("tandem", (file, port) -> tandemServe(file, port, coreCount, false)));
        if (unbatched) {
            contenders.add(new ServeBench.Contender("tandem-unbatched",
                    (file, port) -> tandemServe(file, port, coreCount, true)));
        }
        Path script = Path.of("bin", "serve-load.py");
        List<String> crossCheck = Files.isRegularFile(script) ? List.of("python3", script.toString()) : null;
        ServeBench.Settings settings = new ServeBench.Settings(chosen, clients, coreCount, tokens, perRun, roundCount,
                peerSlots, context, crossCheck);
        PrintStream out = System.out;
        out.printf(Locale.ROOT, "serve: closed-loop streaming /v1/completions, %d tokens each (ignore_eos), greedy, %d"
                + " core(s); workloads %s; clients %s; median of %d alternating round(s) of %.0f s; each server its own"
                + " process%n", tokens, coreCount, workloads, clients, roundCount, perRun);
        List<ServeBench.Report> reports = new ArrayList<>();
        for (int i = 0; i < files.size(); i++) {
            try {
                reports.add(ServeBench.run(labels.get(i), files.get(i), contenders, peer != null, settings,
                        System.err::println));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            } catch (Exception e) {
                throw new IllegalStateException("bench serve on " + files.get(i) + ": " + e.getMessage(), e);
            }
        }
        print(out, reports);
    }

    /** {@code tandem serve} on this JVM's flags and class path, as the launcher would start it. */
    private List<String> tandemServe(Path file, int port, int coreCount, boolean noBatching) {
        List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current().info().command().orElse("java"));
        command.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), Main.class.getName(), "serve", "--model",
                file.toString(), "--port", Integer.toString(port), "--ctx-size", Integer.toString(context), "--cores",
                Integer.toString(coreCount), "--kv-cells", Integer.toString(peerSlots * context)));
        if (noBatching) {
            command.add("--no-batching");
        }
        return command;
    }

    private void print(PrintStream out, List<ServeBench.Report> reports) {
        out.printf(Locale.ROOT, "%-14s %-13s %-16s %7s %7s %10s %9s %9s %8s %8s %6s%n", "model", "workload", "engine",
                "clients", "prompt", "tokens/s", "ttft p50", "ttft p99", "itl p50", "itl p99", "errors");
        List<Map<String, Object>> ratios = new ArrayList<>();
        for (ServeBench.Report report : reports) {
            for (ServeBench.Row r : report.rows()) {
                out.printf(Locale.ROOT, "%-14s %-13s %-16s %7d %7.0f %10.1f %9.1f %9.1f %8.2f %8.2f %6d%n", r.model(),
                        r.workload(), r.engine(), r.clients(), r.promptTokensMean(), r.tokensPerSecond(), r.ttftP50Ms(),
                        r.ttftP99Ms(), r.itlP50Ms(), r.itlP99Ms(), r.errors());
                if (r.firstTokenPhasesMs() != null) {
                    out.printf(Locale.ROOT, "  first token, mean %.1f ms: %s%n", r.ttftMeanMs(),
                            r.firstTokenPhasesMs().entrySet().stream().map(e -> String.format(Locale.ROOT, "%s %.1f",
                                    e.getKey(), e.getValue())).collect(java.util.stream.Collectors.joining(", ")));
                }
                if (r.note() != null) {
                    out.println("  " + r.engine() + ": " + r.note());
                }
                if (r.engine().equals("tandem")) {
                    report.rows().stream().filter(p -> p.engine().equals("llama.cpp") && p.clients() == r.clients()
                            && p.workload().equals(r.workload())).findFirst().ifPresent(p -> {
                                Map<String, Object> ratio = new LinkedHashMap<>();
                                ratio.put("model", r.model());
                                ratio.put("workload", r.workload());
                                ratio.put("clients", r.clients());
                                ratio.put("throughput_tandem_over_llamacpp", r.tokensPerSecond() / p.tokensPerSecond());
                                ratio.put("ttft_p50_tandem_over_llamacpp", r.ttftP50Ms() / p.ttftP50Ms());
                                ratio.put("ttft_p99_tandem_over_llamacpp", r.ttftP99Ms() / p.ttftP99Ms());
                                ratios.add(ratio);
                            });
                }
            }
        }
        for (Map<String, Object> ratio : ratios) {
            out.printf(Locale.ROOT, "%-14s %-13s %3d clients: tandem / llama.cpp throughput %.2f, ttft p50 %.2f, ttft"
                    + " p99 %.2f%n", ratio.get("model"), ratio.get("workload"), (Integer) ratio.get("clients"),
                    (Double) ratio.get("throughput_tandem_over_llamacpp"), (Double) ratio.get("ttft_p50_tandem_over_llamacpp"),
                    (Double) ratio.get("ttft_p99_tandem_over_llamacpp"));
        }
        for (ServeBench.Report report : reports) {
            for (ServeBench.Footprint f : report.footprints()) {
                out.printf(Locale.ROOT, "%-14s %-16s ready %.2f s, resident %.0f MB after load, %.0f MB after the run"
                        + " (%s)%n", f.model(), f.engine(), f.readySeconds(), f.rssAfterLoadKb() / 1024.0,
                        f.rssAfterRunKb() / 1024.0, f.command());
            }
            for (ServeBench.CrossCheck c : report.checks()) {
                out.printf(Locale.ROOT, "%-14s %-16s cross-check at %d clients (%s): bench %.1f tokens/s, independent"
                        + " client %.1f (%.2f)%s%n", c.model(), c.engine(), c.clients(), c.workload(),
                        c.benchTokensPerSecond(), c.independentTokensPerSecond(), c.ratio(),
                        c.note() != null ? ": " + c.note() : c.agrees() ? "" : ": MORE THAN 10% APART");
            }
            for (String m : report.missing()) {
                out.println("missing: " + m);
            }
        }
        if (common.json) {
            Map<String, Object> json = new LinkedHashMap<>();
            json.put("rows", reports.stream().flatMap(r -> r.rows().stream()).map(ServeBench.Row::toJson).toList());
            json.put("ratios", ratios);
            json.put("footprints", reports.stream().flatMap(r -> r.footprints().stream())
                    .map(ServeBench.Footprint::toJson).toList());
            json.put("cross_checks", reports.stream().flatMap(r -> r.checks().stream()).map(ServeBench.CrossCheck::toJson)
                    .toList());
            json.put("missing", reports.stream().flatMap(r -> r.missing().stream()).toList());
            json.put("tokens", tokens);
            json.put("rounds", common.quick ? 1 : rounds);
            out.println(Json.write(json));
        }
    }
}
