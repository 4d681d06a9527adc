package dev.tandem.bench;

import dev.tandem.CpuDeviceConfig;
import dev.tandem.TraceConfig;
import dev.tandem.TraceEvent;
import dev.tandem.Worker;
import dev.tandem.bench.peers.LlamaCppPeer;
import dev.tandem.bench.trace.PerfettoTraceReader;
import dev.tandem.bench.trace.TraceAnalysis;
import dev.tandem.kernels.Ops;
import dev.tandem.llm.gguf.GgmlType;
import dev.tandem.llm.gguf.GgufModel;
import dev.tandem.llm.gguf.GgufTensor;
import dev.tandem.llm.model.KvType;
import dev.tandem.llm.model.LlamaConfig;
import dev.tandem.llm.model.LlamaModel;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Decode speed of one GGUF file in tandem and in llama.cpp, measured side by side in one run:
 * rounds that alternate the contenders, medians of the rounds, ratios. tandem's rows are one
 * request of batch 1 at runAhead 1 and 2, one request of batch 8, and 4 concurrent requests of
 * batch 1; llama.cpp's is {@code llama-bench -p 0 -n tokens -t cores} (batch 1, generation only).
 * Batch 1 and batch 8 are step rates (a request's steps from its first token to its last, as
 * llama-bench times only its generation steps), so their ratio compares steps alone; the JSON
 * also has batch 8 over the whole request (session, memory, prompt and steps), as the 4
 * concurrent requests are.
 * Each row also has prompt processing: a request of {@link #PROMPT_TOKENS} prompt tokens to its
 * first token against {@code llama-bench -p PROMPT_TOKENS -n 0}.
 *
 * <p>Bytes per token are the weight bytes each engine reads per step (tandem's as it holds them on
 * the worker, llama.cpp's as they are in the file); GB/s is that over the median step time.
 */
public final class PeerDecodeBench {

    /** One file's figures. */
    public record Row(String model, String type, long tandemBytes, long fileBytes, double tandemRa1, double tandemRa2,
            double tandemBatch8, double tandemBatch8Request, double tandemFourRequests, double heapBytesPerToken,
            double deviceBusy, double hostMicrosPerStep, double llamaCpp, String llamaCppMissing, double tandemPrompt,
            double llamaCppPrompt, WarmUp.Result warmUp, double loadAverage) {

        /**
         * Whether the machine was busy with other work while this row ran: a 1-minute load average
         * ({@code loadAverage}, the highest seen at the start of a round) above 1.5 times the cores
         * the bench runs on. The bench's own engines keep those cores busy, so a load near their
         * count is the bench itself; well above it, both engines share their cores with other work,
         * llama.cpp's spinning threads worst (a llama-bench figure 1,000x below its own repeat was
         * seen so), and the row's ratios are not ones a reader should trust.
         */
        public boolean busy(int cores) {
            return loadAverage > 1.5 * cores;
        }

        public double tandemBest() {
            return Math.max(tandemRa1, tandemRa2);
        }

        public double ratio() {
            return Double.isNaN(llamaCpp) ? Double.NaN : tandemBest() / llamaCpp;
        }

        /** tandem's prompt processing over llama.cpp's, NaN without the peer. */
        public double promptRatio() {
            return Double.isNaN(llamaCppPrompt) ? Double.NaN : tandemPrompt / llamaCppPrompt;
        }

        public Map<String, Object> toJson() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("model", model);
            out.put("type", type);
            out.put("tandem_tokens_per_s", tandemBest());
            out.put("llamacpp_tokens_per_s", Double.isNaN(llamaCpp) ? null : llamaCpp);
            out.put("ratio", Double.isNaN(llamaCpp) ? null : ratio());
            out.put("tandem_run_ahead_1_tokens_per_s", tandemRa1);
            out.put("tandem_run_ahead_2_tokens_per_s", tandemRa2);
            out.put("tandem_batch_8_tokens_per_s", tandemBatch8);
            out.put("tandem_batch_8_request_tokens_per_s", tandemBatch8Request);
            out.put("tandem_4_requests_tokens_per_s", tandemFourRequests);
            out.put("tandem_bytes_per_token", tandemBytes);
            out.put("tandem_heap_bytes_per_token", Double.isNaN(heapBytesPerToken) ? null : heapBytesPerToken);
            out.put("tandem_device_busy", deviceBusy);
            out.put("tandem_host_us_per_step", hostMicrosPerStep);
            out.put("tandem_gb_per_s", tandemBytes * tandemBest() / 1e9);
            out.put("llamacpp_bytes_per_token", fileBytes);
            out.put("llamacpp_gb_per_s", Double.isNaN(llamaCpp) ? null : fileBytes * llamaCpp / 1e9);
            out.put("prompt_tokens", PROMPT_TOKENS);
            out.put("tandem_prompt_tokens_per_s", tandemPrompt);
            out.put("llamacpp_prompt_tokens_per_s", Double.isNaN(llamaCppPrompt) ? null : llamaCppPrompt);
            out.put("prompt_ratio", Double.isNaN(llamaCppPrompt) ? null : promptRatio());
            out.put("tandem_warm_up_s", warmUp.seconds());
            out.put("tandem_warm_up_jit_quiet", warmUp.quiet());
            out.put("load_average_1m_max", Double.isNaN(loadAverage) ? null : loadAverage);
            if (llamaCppMissing != null) {
                out.put("llamacpp_missing", llamaCppMissing);
            }
            return out;
        }
    }

    private PeerDecodeBench() {}

    /**
     * The prompt of the prompt-processing figures: tandem's time to the first token of a request
     * with this many prompt tokens, llama.cpp's {@code llama-bench -p} of as many.
     */
    public static final int PROMPT_TOKENS = 128;

    /** The named benchmark shapes: the decode issue's {@code small} and a larger one. */
    public static Map<String, LlamaConfig> shapes() {
        Map<String, LlamaConfig> shapes = new LinkedHashMap<>();
        shapes.put("small", RandomGguf.shape(512, 8, 8, 4, 1536));
        shapes.put("large", RandomGguf.shape(1024, 8, 16, 8, 2816));
        // Qwen2.5-0.5B's shape (its vocabulary aside): the size class most served on small machines
        shapes.put("0.5b", RandomGguf.shape(896, 24, 14, 2, 4864).withContextLength(4096));
        return shapes;
    }

    /** Writes (once, into {@code dir}) the random GGUF of {@code shape} in {@code type}. */
    public static Path file(Path dir, String shapeName, LlamaConfig shape, GgmlType type) {
        return RandomGguf.cached(dir.resolve("tandem-bench-" + shapeName + "-" + type.name().toLowerCase() + ".gguf"),
                shape, type, 7, false);
    }

    /**
     * Measures {@code path}.
     *
     * @param peer         whether to run llama.cpp too
     * @param warmUpNanos  the least time tandem runs this file (batch 1 and batch 8) before the
     *                     measured rounds, so that they measure compiled code, not the JIT: on 2
     *                     cores C2 is still compiling the kernels 4 s into a run, and a small-shape
     *                     Q8_0 decode after a 64-token warm-up measured 211 tokens/s against 580
     *                     steady; after it, the warm-up goes on while the JIT is busy
     *                     ({@link WarmUp}), up to {@link WarmUp#MAX_FACTOR} times as long
     * @param kvType       tandem's KV cache type (llama.cpp's is its default, f16)
     */
    public static Row run(String label, Path path, int cores, int tokens, int rounds, boolean peer,
            long warmUpNanos, KvType kvType) {
        String missing = peer ? LlamaCppPeer.ensureBuilt() : "not asked for (--peer llama.cpp)";
        double[][] tandem = new double[6][rounds];
        double[] llamaPrompt = new double[rounds];
        Arrays.fill(llamaPrompt, Double.NaN);
        double[] heap = new double[rounds];
        double[] busy = new double[rounds];
        double[] host = new double[rounds];
        double[] llama = new double[rounds];
        Arrays.fill(llama, Double.NaN);
        long tandemBytes;
        long fileBytes = 0;
        String type;
        WarmUp.Result warmUp;
        double load = Double.NaN;
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(cores)); GgufModel weights = GgufModel.open(path, 1024)) {
            for (GgufTensor t : weights.file().tensors()) {
                fileBytes += t.bytes();
            }
            type = dominantType(weights);
            LlamaModel model = LlamaModel.load(worker, weights, Ops.preferred(),
                    LlamaModel.Options.defaults().withKvType(kvType));
            tandemBytes = model.weightBytes();
            warmUp = WarmUp.run(() -> {
                DecodeBench.measure(worker, model, 1, 1, 2, tokens);
                DecodeBench.measure(worker, model, 1, 8, 2, Math.max(8, tokens / 2));
                DecodeBench.prefillTokensPerSecond(worker, model, PROMPT_TOKENS);
            }, warmUpNanos);
            for (int r = 0; r < rounds; r++) {
                load = maxOf(load, ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
                tandem[0][r] = 1e3 / DecodeBench.measure(worker, model, 1, 1, 1, tokens).msPerStep();
                long allocated = allocatedBytes();
                DecodeBench.Row batch1 = DecodeBench.measure(worker, model, 1, 1, 2, tokens);
                tandem[1][r] = 1e3 / batch1.msPerStep();
                busy[r] = batch1.deviceBusy();
                host[r] = batch1.hostMicrosPerStep();
                heap[r] = allocated < 0 ? Double.NaN : (allocatedBytes() - allocated) / (double) tokens;
                DecodeBench.Row batch8 = DecodeBench.measure(worker, model, 1, 8, 2, tokens);
                tandem[2][r] = 8 * 1e3 / batch8.msPerStep();
                tandem[5][r] = batch8.tokensPerSecond();
                tandem[3][r] = DecodeBench.measure(worker, model, 4, 1, 2, tokens).tokensPerSecond();
                tandem[4][r] = DecodeBench.prefillTokensPerSecond(worker, model, PROMPT_TOKENS);
                if (missing == null) {
                    LlamaCppPeer.Result decode = LlamaCppPeer.benchDecode(path, tokens, cores, 1);
                    LlamaCppPeer.Result prompt = decode instanceof LlamaCppPeer.Result.Measured
                            ? LlamaCppPeer.benchPrompt(path, PROMPT_TOKENS, cores, 1) : decode;
                    if (decode instanceof LlamaCppPeer.Result.Measured d && prompt instanceof LlamaCppPeer.Result.Measured p) {
                        llama[r] = d.tokensPerSecond();
                        llamaPrompt[r] = p.tokensPerSecond();
                    } else {
                        missing = ((LlamaCppPeer.Result.Unavailable) (decode instanceof LlamaCppPeer.Result.Unavailable
                                ? decode : prompt)).reason();
                    }
                }
            }
        }
        return new Row(label, type, tandemBytes, fileBytes, Stats.median(tandem[0]), Stats.median(tandem[1]),
                Stats.median(tandem[2]), Stats.median(tandem[5]), Stats.median(tandem[3]), Stats.median(heap),
                Stats.median(busy), Stats.median(host), Stats.median(llama), missing, Stats.median(tandem[4]),
                Stats.median(llamaPrompt), warmUp, load);
    }

    /** The larger of a running maximum and a load average; a negative average means the OS gives none. */
    static double maxOf(double max, double loadAverage) {
        if (loadAverage < 0) {
            return max;
        }
        return Double.isNaN(max) ? loadAverage : Math.max(max, loadAverage);
    }

    /**
     * Bytes the JVM's threads have allocated so far; -1 where the JVM does not count them (the
     * row's figure is then NaN, not a measured zero).
     * Across one batch-1 run per token, this is how a kernel that C2 compiled without its vector
     * intrinsics shows (kilobytes of boxed vectors a token) where the tokens per second alone
     * would only look slow.
     */
    private static long allocatedBytes() {
        if (ManagementFactory.getThreadMXBean() instanceof com.sun.management.ThreadMXBean threads
                && threads.isThreadAllocatedMemorySupported() && threads.isThreadAllocatedMemoryEnabled()) {
            return threads.getTotalThreadAllocatedBytes();
        }
        return -1;
    }

    /** What {@link #tracedWarmRun} measured: the trace's figures over the measured requests only. */
    public record TracedRun(Path trace, int requests, int tokens, double tokensPerSecond, TraceAnalysis.Report report) {}

    /**
     * A warm batch-1 trace of {@code path}: a fresh traced worker loads the model and decodes
     * batch-1 requests for {@code warmUpNanos} (at least one), then {@code requests} measured
     * requests of {@code tokens} tokens one after another (runAhead 2). The warm-up is needed even
     * after {@link #run} has warmed the JIT: with tracing on, C2 recompiles the paths that record,
     * and after a single warm-up request the measured ones ran at half the untraced rate. The
     * report covers only the measured requests' events, so neither loading nor warm-up dilutes
     * device busy.
     */
    public static TracedRun tracedWarmRun(Path path, int cores, int tokens, int requests, long warmUpNanos,
            Path trace, KvType kvType) {
        double[] rates = new double[requests];
        try (Worker worker = Worker.builder().device(CpuDeviceConfig.withCores(cores)).trace(TraceConfig.toFile(trace)).build();
                GgufModel weights = GgufModel.open(path, 1024)) {
            LlamaModel model = LlamaModel.load(worker, weights, Ops.preferred(),
                    LlamaModel.Options.defaults().withKvType(kvType));
            WarmUp.run(() -> DecodeBench.measure(worker, model, 1, 1, 2, tokens), warmUpNanos);
            for (int r = 0; r < requests; r++) {
                rates[r] = DecodeBench.measure(worker, model, 1, 1, 2, tokens).tokensPerSecond();
            }
        }
        PerfettoTraceReader.TraceFile file = PerfettoTraceReader.read(trace);
        List<TraceEvent> spans = new ArrayList<>();
        for (TraceEvent e : file.events()) {
            if (e.kind() == TraceEvent.Kind.REQUEST) {
                spans.add(e);
            }
        }
        spans.sort(java.util.Comparator.comparingLong(TraceEvent::start));
        if (spans.size() < requests) {
            throw new IllegalStateException("trace " + trace + " holds " + spans.size() + " requests, expected at least "
                    + requests);
        }
        java.util.Set<Long> measured = new java.util.HashSet<>();
        for (TraceEvent e : spans.subList(spans.size() - requests, spans.size())) {
            measured.add(e.requestId());
        }
        List<TraceEvent> kept = new ArrayList<>();
        for (TraceEvent e : file.events()) {
            if (measured.contains(e.requestId())) {
                kept.add(e);
            }
        }
        return new TracedRun(trace, requests, tokens, Stats.median(rates), TraceAnalysis.analyze(kept, cores));
    }

    private static String dominantType(GgufModel weights) {
        Map<String, Long> bytes = new LinkedHashMap<>();
        for (GgufTensor t : weights.file().tensors()) {
            if (t.dims().length >= 2) {
                bytes.merge(t.type().name(), t.bytes(), Long::sum);
            }
        }
        return bytes.entrySet().stream().max(Map.Entry.comparingByValue()).map(Map.Entry::getKey).orElse("?");
    }

    /** Every shape in every type, in order. */
    public static List<Row> runAll(Path dir, List<String> shapeNames, List<GgmlType> types, int cores, int tokens,
            int rounds, boolean peer, long warmUpNanos, KvType kvType) {
        List<Row> rows = new ArrayList<>();
        for (String name : shapeNames) {
            LlamaConfig shape = shapes().get(name);
            if (shape == null) {
                throw new IllegalArgumentException("shape = " + name + " is not known; known: " + shapes().keySet());
            }
            for (GgmlType type : types) {
                rows.add(run(name, file(dir, name, shape, type), cores, tokens, rounds, peer, warmUpNanos, kvType));
            }
        }
        return rows;
    }
}
