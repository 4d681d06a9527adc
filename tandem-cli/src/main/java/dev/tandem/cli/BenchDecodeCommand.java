package dev.tandem.cli;

import dev.tandem.bench.DecodeBench;
import dev.tandem.bench.Json;
import dev.tandem.bench.PeerDecodeBench;
import java.io.PrintStream;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code tandem bench decode}: the Llama decoder's tokens/s on random shapes, or on a GGUF file
 * against llama.cpp ({@link DecodeBench}, {@link PeerDecodeBench}).
 */
@Command(name = "decode", mixinStandardHelpOptions = true,
        description = "The Llama decoder (batch 1, batch 8, 4 concurrent requests; runAhead 1 and 2), the"
                + " paged-attention bench shape, the scalar reference floor and the memory-copy bound.")
final class BenchDecodeCommand implements Runnable {
    /** Measured requests in the warm trace of {@code --trace}. */
    static final int TRACED_REQUESTS = 3;

    /** What the busy and host columns mean. */
    static final String BUSY_LEGEND = "(busy: the device cores' time running tasks over their time, first token to"
            + " last; host us: the program's time building a step, per step; both batch 1, runAhead 2 in the file"
            + " table)";

    @picocli.CommandLine.Mixin
    BenchCommand.Common common = new BenchCommand.Common();

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

    @Option(names = "--kv-type", paramLabel = "f16|f32", defaultValue = KvTypes.DEFAULT,
            converter = KvTypes.class, completionCandidates = KvTypes.class, description = KvTypes.DESCRIPTION)
    dev.tandem.llm.model.KvType kvType;

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
                "decode vs %s: batch 1, %d tokens, %d core(s), %s KV cache, median of %d alternating rounds after"
                        + " %.0f s of warm-up per file, longer while the JIT is busy (up to %.0f s)%n",
                withPeer ? "llama.cpp" : "(no peer)", tokens, coreCount, kvType.name().toLowerCase(Locale.ROOT), rounds,
                warmUp / 1e9,
                dev.tandem.bench.WarmUp.MAX_FACTOR * warmUp / 1e9);
        if (file) {
            java.nio.file.Path path = dev.tandem.llm.EmbeddedModel.resolve(model);
            String label = dev.tandem.llm.EmbeddedModel.isEmbedded(path) ? dev.tandem.llm.EmbeddedModel.NAME
                    : path.getFileName().toString();
            rows.add(PeerDecodeBench.run(label, path, coreCount, tokens, rounds, withPeer, warmUp, kvType));
        } else {
            List<dev.tandem.llm.gguf.GgmlType> ggml = new java.util.ArrayList<>();
            for (String t : types) {
                ggml.add(BenchCommand.matrixType(t));
            }
            java.nio.file.Path dir = java.nio.file.Path.of(System.getProperty("java.io.tmpdir"), "tandem-bench-models");
            rows = PeerDecodeBench.runAll(dir, shapes, ggml, coreCount, tokens, rounds, withPeer, warmUp, kvType);
        }
        // The machine's bandwidth on a buffer well beyond the caches, whatever the models' size.
        long largest = Math.max(256L << 20, rows.stream().mapToLong(PeerDecodeBench.Row::fileBytes).max().orElse(0));
        double copy = DecodeBench.copyBandwidth(largest, coreCount, 7);
        out.printf(Locale.ROOT, "%-28s %-5s %9s %9s %9s %9s %9s %7s %8s %8s %8s %6s %8s %9s %9s %8s %7s %6s%n", "model",
                "type", "tandem", "ra1", "ra2", "batch8", "4 req", "llama", "ratio", "GB/s", "heap/tok", "busy", "host us",
                "prompt", "llama pp", "pp ratio", "warm s", "load");
        for (PeerDecodeBench.Row r : rows) {
            out.printf(Locale.ROOT,
                    "%-28s %-5s %9.1f %9.1f %9.1f %9.1f %9.1f %7.1f %8.2f %8.2f %8s %5.1f%% %8.1f %9.1f %9.1f %8.2f %6.1f%s"
                            + " %5.1f%s%n",
                    r.model(), r.type(), r.tandemBest(), r.tandemRa1(), r.tandemRa2(), r.tandemBatch8(),
                    r.tandemFourRequests(), r.llamaCpp(), r.ratio(), r.tandemBytes() * r.tandemBest() / 1e9,
                    kilobytes(r.heapBytesPerToken()), 100 * r.deviceBusy(), r.hostMicrosPerStep(), r.tandemPrompt(),
                    r.llamaCppPrompt(), r.promptRatio(),
                    r.warmUp().seconds(), r.warmUp().quiet() ? "" : "!", r.loadAverage(), r.busy(coreCount) ? "!" : "");
            if (r.llamaCppMissing() != null && withPeer) {
                out.println("  llama.cpp: " + r.llamaCppMissing());
            }
        }
        out.printf(Locale.ROOT, "machine: a plain copy of %.1f MB reads at %.2f GB/s%n", largest / 1e6, copy);
        out.println("(tandem, ra1, ra2, batch8: from a request's step rate, first token to last, as llama-bench times"
                + " its steps alone; 4 req: whole requests; the JSON has batch 8 over the whole request too)");
        out.println(BUSY_LEGEND);
        out.println("(heap/tok: bytes the JVM allocated per batch-1 token, runAhead 2: the step's tasks and"
                + " region views, plus whatever a kernel C2 compiled without its vector intrinsics boxed)");
        out.printf(Locale.ROOT, "(prompt: tokens/s of a %d-token prompt to its first token; llama pp: llama-bench -p %d"
                + " -n 0)%n", PeerDecodeBench.PROMPT_TOKENS, PeerDecodeBench.PROMPT_TOKENS);
        out.printf(Locale.ROOT, "(warm s: the file's warm-up; ! where the JIT was still compiling for more than %.0f%% of"
                + " a warm-up round when it ended)%n", 100 * dev.tandem.bench.WarmUp.QUIET_SHARE);
        out.printf(Locale.ROOT, "(load: the highest 1-minute load average at the start of a round; ! above %.1f, 1.5x"
                + " the cores the bench runs on: other work shared them, and the row's ratios are not to be trusted)%n",
                1.5 * coreCount);
        PeerDecodeBench.TracedRun traced = null;
        if (common.trace != null) {
            traced = PeerDecodeBench.tracedWarmRun(dev.tandem.llm.EmbeddedModel.resolve(model), coreCount, tokens,
                    TRACED_REQUESTS, warmUp, common.trace, kvType);
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
            dev.tandem.llm.model.LlamaConfig.named(model); // neither a file nor a shape: fails naming the shapes
        }
        if (peer != null || file) {
            comparePeer(file);
            return;
        }
        dev.tandem.llm.model.LlamaConfig.named(model); // a bad name fails here, before anything runs
        int coreCount = cores == 0 ? Runtime.getRuntime().availableProcessors() : cores;
        int tokens = common.quick ? 32 : 128;
        int repetitions = common.quick ? 2 : 5;
        PrintStream out = System.out;
        out.printf(Locale.ROOT, "decode: model %s, %d tokens per request, %d device core(s), %s KV cache, best of %d%n",
                model, tokens, coreCount, kvType.name().toLowerCase(Locale.ROOT), repetitions);
        DecodeBench.Result r = DecodeBench.run(model, coreCount, tokens, repetitions, kvType);
        out.printf(Locale.ROOT, "%-12s %8s %5s %9s %10s %10s %6s %8s%n", "workload", "requests", "batch", "runAhead",
                "tokens/s", "ms/step", "busy", "host us");
        for (DecodeBench.Row row : r.rows()) {
            out.printf(Locale.ROOT, "%-12s %8d %5d %9d %10.1f %10.3f %5.1f%% %8.1f%n", row.workload(), row.requests(),
                    row.batch(), row.runAhead(), row.tokensPerSecond(), row.msPerStep(), 100 * row.deviceBusy(),
                    row.hostMicrosPerStep());
        }
        out.println(BUSY_LEGEND);
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
