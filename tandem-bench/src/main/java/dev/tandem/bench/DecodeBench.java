package dev.tandem.bench;

import dev.tandem.CpuDeviceConfig;
import dev.tandem.Outcome;
import dev.tandem.RequestOptions;
import dev.tandem.RunOptions;
import dev.tandem.Session;
import dev.tandem.SessionConfig;
import dev.tandem.Status;
import dev.tandem.Token;
import dev.tandem.TokenStream;
import dev.tandem.Worker;
import dev.tandem.kernels.Ops;
import dev.tandem.kernels.TensorType;
import dev.tandem.llm.model.KvType;
import dev.tandem.llm.model.LlamaConfig;
import dev.tandem.llm.model.LlamaModel;
import dev.tandem.llm.model.LlamaRequest;
import dev.tandem.llm.reference.ByteTokenizer;
import dev.tandem.llm.reference.LlamaReference;
import dev.tandem.llm.reference.PagedAttentionWorkload;
import dev.tandem.llm.reference.RandomWeights;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;

/**
 * The flagship workloads at speed: the Llama decoder (one request of batch 1, one of batch 8,
 * four concurrent requests of batch 1; runAhead 1 and 2), the paged-attention bench shape, the
 * same model's scalar reference as the floor, and a plain copy of as many bytes as the weights,
 * which bounds what a batch-1 matvec can reach (for the q8_0 model and for the same shape in f32).
 *
 * <p>Tokens/s counts every sequence's tokens from submission to the end of the last stream
 * (prefill of the short prompts included); ms/step is the mean time between two tokens of one
 * request.
 */
public final class DecodeBench {

    /**
     * One decoder configuration's figures.
     *
     * @param deviceBusy        the cores' time running tasks over their time, from the first
     *                          token delivered to the last (the steps alone, as {@code msPerStep})
     * @param hostMicrosPerStep the programs' step-build time ({@link Worker#hostBuildNanos()})
     *                          over the steps built, the prompt's step included
     */
    public record Row(String workload, int requests, int batch, int runAhead, double tokensPerSecond,
            double msPerStep, double deviceBusy, double hostMicrosPerStep) {

        public Map<String, Object> toJson() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("workload", workload);
            out.put("requests", requests);
            out.put("batch", batch);
            out.put("run_ahead", runAhead);
            out.put("tokens_per_s", tokensPerSecond);
            out.put("ms_per_step", msPerStep);
            out.put("device_busy", deviceBusy);
            out.put("host_us_per_step", hostMicrosPerStep);
            return out;
        }
    }

    /**
     * Everything one run measured.
     *
     * @param model            the decoder's shape name
     * @param weightBytes      bytes of its weights
     * @param rows             the decoder configurations
     * @param attentionMsPerLayer the paged-attention bench shape, ms per layer
     * @param attentionGflops  its achieved GFLOP/s
     * @param referenceTokensPerSecond the scalar reference, one sequence
     * @param copyGbPerSecond  a plain multi-threaded copy of {@code weightBytes}, bytes read per second
     */
    public record Result(String model, long weightBytes, int cores, List<Row> rows, double attentionMsPerLayer,
            double attentionGflops, double referenceTokensPerSecond, double copyGbPerSecond, Row f32,
            long f32WeightBytes, double f32CopyGbPerSecond) {

        /** Weight bytes per batch-1 step of one request at runAhead 2, per second: what the matvecs reached. */
        public double matvecGbPerSecond() {
            for (Row row : rows) {
                if (row.requests() == 1 && row.batch() == 1 && row.runAhead() == 2) {
                    return weightBytes / (row.msPerStep() / 1e3) / 1e9;
                }
            }
            return Double.NaN;
        }

        /** The same for the model with f32 weights. */
        public double f32MatvecGbPerSecond() {
            return f32WeightBytes / (f32.msPerStep() / 1e3) / 1e9;
        }

        public Map<String, Object> toJson() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("results", rows.stream().map(Row::toJson).toList());
            Map<String, Object> attention = new LinkedHashMap<>();
            attention.put("ms_per_layer", attentionMsPerLayer);
            attention.put("gflops", attentionGflops);
            out.put("paged_attention", attention);
            out.put("model", model);
            out.put("cores", cores);
            out.put("weight_bytes", weightBytes);
            out.put("reference_tokens_per_s", referenceTokensPerSecond);
            out.put("copy_gb_per_s", copyGbPerSecond);
            out.put("matvec_gb_per_s", matvecGbPerSecond());
            out.put("matvec_fraction_of_copy", matvecGbPerSecond() / copyGbPerSecond);
            Map<String, Object> f32Json = f32.toJson();
            f32Json.put("weight_bytes", f32WeightBytes);
            f32Json.put("matvec_gb_per_s", f32MatvecGbPerSecond());
            f32Json.put("copy_gb_per_s", f32CopyGbPerSecond);
            out.put("f32", f32Json);
            return out;
        }
    }

    private static final long SEED = 7;

    private DecodeBench() {}

    /**
     * @param modelName   a {@link LlamaConfig#named} shape
     * @param cores       device cores
     * @param tokens      tokens per request in each measured run
     * @param repetitions measured runs per configuration, best kept
     */
    /** The least wall time {@link #run} spends warming up before it measures. */
    public static final long WARM_UP_NANOS = 5_000_000_000L;

    public static Result run(String modelName, int cores, int tokens, int repetitions, KvType kvType) {
        LlamaConfig config = LlamaConfig.named(modelName);
        List<Row> rows = new ArrayList<>();
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(cores))) {
            LlamaModel model = LlamaModel.load(worker, new RandomWeights(config, SEED), Ops.preferred(),
                    LlamaModel.Options.forModel(config).withKvType(kvType));
            // Warm-up, batch 1 and batch 8, for at least WARM_UP_NANOS: C2 needs seconds of
            // wall time on two busy cores to compile the kernels, and a short run measured the
            // interpreter and C1 code at half the full run's figures. Then on while the JIT is busy.
            WarmUp.run(() -> {
                measure(worker, model, 1, 1, 2, Math.max(8, tokens / 2));
                measure(worker, model, 1, 8, 2, Math.max(8, tokens / 2));
            }, WARM_UP_NANOS);
            int[][] shapes = {{1, 1}, {1, 8}, {4, 1}};
            for (int[] shape : shapes) {
                for (int runAhead : new int[] {1, 2}) {
                    Row best = null;
                    for (int i = 0; i < repetitions; i++) {
                        Row row = measure(worker, model, shape[0], shape[1], runAhead, tokens);
                        if (best == null || row.tokensPerSecond() > best.tokensPerSecond()) {
                            best = row;
                        }
                    }
                    rows.add(best);
                }
            }
        }
        LlamaConfig f32Config = config.withWeightType(TensorType.F32);
        Row f32;
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(cores))) {
            LlamaModel model = LlamaModel.load(worker, new RandomWeights(f32Config, SEED), Ops.preferred(),
                    LlamaModel.Options.forModel(f32Config).withKvType(kvType));
            measure(worker, model, 1, 1, 2, Math.max(8, tokens / 2)); // warm-up
            f32 = measure(worker, model, 1, 1, 2, tokens);
        }
        double[] attention = attention(cores, repetitions);
        double reference = reference(config, Math.max(4, tokens / 4));
        double copy = copyBandwidth(config.weightBytes(), cores, 3 + 2 * repetitions);
        double f32Copy = copyBandwidth(f32Config.weightBytes(), cores, 3 + 2 * repetitions);
        return new Result(modelName, config.weightBytes(), cores, rows, attention[0], attention[1], reference, copy,
                f32, f32Config.weightBytes(), f32Copy);
    }

    /**
     * Prompt processing: one request of {@code promptTokens} tokens (seeded, spread over the
     * vocabulary) and one generated token; the prompt's tokens over the time from submit to that
     * token, which the prefill step's forward pass over every prompt row takes almost all of (as
     * {@code llama-bench -p N -n 0} times one batch of {@code N} prompt tokens).
     */
    static double prefillTokensPerSecond(Worker worker, LlamaModel model, int promptTokens) {
        int[] prompt = new int[promptTokens];
        Random random = new Random(promptTokens);
        int vocab = model.config().vocab();
        for (int i = 0; i < promptTokens; i++) {
            prompt[i] = random.nextInt(vocab);
        }
        LlamaRequest request = LlamaRequest.batch(new int[][] {prompt}, 1);
        SessionConfig config = SessionConfig.defaults().maxActive(1).maxQueued(1)
                .memoryPerRequest(model.requestBytes(request));
        try (Session<LlamaRequest> session = worker.openSession(model.program(), config)) {
            long start = System.nanoTime();
            TokenStream stream = session.submit(request, RequestOptions.defaults().maxTokens(1));
            for (Token token : stream) {
                // the first and only token ends the measurement
            }
            long nanos = System.nanoTime() - start;
            Outcome outcome = stream.completion().join();
            if (outcome.status() != Status.COMPLETED || outcome.tokens() != 1) {
                throw new IllegalStateException("prefill bench request did not complete: " + outcome);
            }
            return promptTokens / (nanos / 1e9);
        }
    }

    static Row measure(Worker worker, LlamaModel model, int requests, int batch, int runAhead, int tokens) {
        List<LlamaRequest> inputs = new ArrayList<>();
        long memory = 0;
        for (int i = 0; i < requests; i++) {
            int[][] prompts = new int[batch][];
            for (int b = 0; b < batch; b++) {
                prompts[b] = ByteTokenizer.encode("bench " + i + "." + b);
            }
            LlamaRequest request = LlamaRequest.batch(prompts, tokens);
            inputs.add(request);
            memory = Math.max(memory, model.requestBytes(request));
        }
        SessionConfig config = SessionConfig.defaults().maxActive(requests).maxQueued(requests).memoryPerRequest(memory)
                .runAhead(runAhead);
        long start = System.nanoTime();
        long buildBefore = worker.hostBuildNanos();
        double stepMillis = 0;
        long sequenceTokens = 0;
        long steps = 0;
        long windowStart = Long.MAX_VALUE;
        long windowEnd = Long.MIN_VALUE;
        long busyAtStart = 0;
        long busyAtEnd = 0;
        try (Session<LlamaRequest> session = worker.openSession(model.program(), config)) {
            List<TokenStream> streams = new ArrayList<>();
            for (LlamaRequest input : inputs) {
                streams.add(session.submit(input, RequestOptions.defaults().maxTokens(tokens)));
            }
            // One reader per stream; its first and last token bound the request's steps.
            long[] first = new long[requests];
            long[] last = new long[requests];
            long[] busyFirst = new long[requests];
            long[] busyLast = new long[requests];
            int[] counts = new int[requests];
            List<Thread> readers = new ArrayList<>();
            for (int i = 0; i < requests; i++) {
                int index = i;
                TokenStream stream = streams.get(i);
                readers.add(Thread.ofVirtual().start(() -> {
                    for (Token token : stream) {
                        long now = System.nanoTime();
                        long busy = worker.deviceBusyNanos();
                        if (counts[index]++ == 0) {
                            first[index] = now;
                            busyFirst[index] = busy;
                        }
                        last[index] = now;
                        busyLast[index] = busy;
                    }
                }));
            }
            for (int i = 0; i < requests; i++) {
                join(readers.get(i));
                Outcome outcome = streams.get(i).completion().join();
                if (outcome.status() != Status.COMPLETED || outcome.tokens() != tokens) {
                    throw new IllegalStateException("decode bench request did not complete: " + outcome);
                }
                stepMillis += (last[i] - first[i]) / 1e6 / Math.max(1, counts[i] - 1);
                sequenceTokens += (long) counts[i] * batch;
                steps += counts[i];
                if (first[i] < windowStart) {
                    windowStart = first[i];
                    busyAtStart = busyFirst[i];
                }
                if (last[i] > windowEnd) {
                    windowEnd = last[i];
                    busyAtEnd = busyLast[i];
                }
            }
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        int cores = worker.device().cores();
        double busy = windowEnd > windowStart
                ? (busyAtEnd - busyAtStart) / ((double) cores * (windowEnd - windowStart)) : Double.NaN;
        double hostMicros = (worker.hostBuildNanos() - buildBefore) / 1e3 / Math.max(1, steps);
        return new Row("llama-" + model.config().weightType().name().toLowerCase(Locale.ROOT), requests,
                batch, runAhead, sequenceTokens / seconds, stepMillis / requests, busy, hostMicros);
    }

    private static void join(Thread thread) {
        try {
            thread.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /** The paged-attention bench shape: {ms per layer, GFLOP/s}, best of {@code repetitions} after a warm-up. */
    static double[] attention(int cores, int repetitions) {
        PagedAttentionWorkload.Shape shape = PagedAttentionWorkload.Shape.bench();
        PagedAttentionWorkload workload = new PagedAttentionWorkload(shape);
        long bytes = shape.cacheBytesPerLayer() * shape.layers() + (64L << 20);
        double best = Double.MAX_VALUE;
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(cores).withMemoryBudget(
                Math.max(CpuDeviceConfig.DEFAULT_MEMORY_BUDGET, 2 * bytes)))) {
            workload.load(worker);
            for (int i = 0; i <= repetitions; i++) {
                long start = System.nanoTime();
                TokenStream stream = worker.run(workload.program(), PagedAttentionWorkload.Readback.DIGEST,
                        RunOptions.defaults());
                for (Token ignored : stream) {
                    // drain
                }
                Outcome outcome = stream.completion().join();
                if (outcome.status() != Status.COMPLETED) {
                    throw new IllegalStateException("paged attention bench did not complete: " + outcome);
                }
                double ms = (System.nanoTime() - start) / 1e6 / shape.layers();
                if (i > 0) { // the first run warms up
                    best = Math.min(best, ms);
                }
            }
        }
        return new double[] {best, shape.flopsPerLayer() / (best / 1e3) / 1e9};
    }

    /** Tokens per second of the scalar reference on one sequence, after its prompt. */
    static double reference(LlamaConfig config, int tokens) {
        LlamaReference reference = new LlamaReference(new RandomWeights(config, SEED));
        LlamaReference.Sequence sequence = reference.sequence();
        float[] logits = null;
        for (int token : ByteTokenizer.encode("bench")) {
            logits = sequence.forward(token);
        }
        long start = System.nanoTime();
        for (int i = 0; i < tokens; i++) {
            int next = 0;
            for (int v = 1; v < logits.length; v++) {
                next = logits[v] > logits[next] ? v : next;
            }
            logits = sequence.forward(next);
        }
        return tokens / ((System.nanoTime() - start) / 1e9);
    }

    /** A copy of {@code bytes} by {@code threads} platform threads, best of {@code runs}: bytes read per second, in GB/s. */
    public static double copyBandwidth(long bytes, int threads, int runs) {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment from = arena.allocate(bytes, 64);
            MemorySegment to = arena.allocate(bytes, 64);
            from.fill((byte) 1);
            to.fill((byte) 2);
            long share = Math.ceilDiv(bytes, threads);
            double best = Double.MAX_VALUE;
            for (int run = 0; run < runs; run++) {
                List<Thread> workers = new ArrayList<>();
                long start = System.nanoTime();
                for (int t = 0; t < threads; t++) {
                    long offset = t * share;
                    long length = Math.min(share, bytes - offset);
                    workers.add(Thread.ofPlatform().start(() -> MemorySegment.copy(from, offset, to, offset, length)));
                }
                for (Thread worker : workers) {
                    join(worker);
                }
                best = Math.min(best, (System.nanoTime() - start) / 1e9);
            }
            return bytes / best / 1e9;
        }
    }
}
