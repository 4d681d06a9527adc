package dev.tandem.cli;

import dev.tandem.CpuDeviceConfig;
import dev.tandem.RequestOptions;
import dev.tandem.Session;
import dev.tandem.SessionConfig;
import dev.tandem.Token;
import dev.tandem.TokenStream;
import dev.tandem.Worker;
import dev.tandem.kernels.Ops;
import dev.tandem.llm.Batcher;
import dev.tandem.llm.BatcherConfig;
import dev.tandem.llm.BatcherStats;
import dev.tandem.llm.Completion;
import dev.tandem.llm.EmbeddedModel;
import dev.tandem.llm.GenerateOptions;
import dev.tandem.llm.LanguageModel;
import dev.tandem.llm.gguf.GgufModel;
import dev.tandem.llm.model.KvType;
import dev.tandem.llm.model.LlamaConfig;
import dev.tandem.llm.model.LlamaModel;
import dev.tandem.llm.model.LlamaRequest;
import dev.tandem.llm.model.LlamaWeights;
import dev.tandem.llm.reference.ByteTokenizer;
import dev.tandem.llm.reference.LlamaReference;
import dev.tandem.llm.reference.PagedAttentionWorkload;
import dev.tandem.llm.reference.RandomWeights;
import dev.tandem.llm.safetensors.SafetensorsModel;
import dev.tandem.llm.sampling.TextStreamer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.stream.IntStream;

/**
 * What {@code tandem demo} runs: the requests of one workload through one session, how their
 * tokens read as text, and how to check them against the workload's scalar reference. Built and
 * validated before anything is printed, so bad input fails with one line and no partial output.
 */
abstract sealed class DemoWorkload implements AutoCloseable {

    /** Names {@link #of} knows. */
    static final String NAMES = "llama, paged-attention";

    /** A request's tokens as people read them. */
    interface Text {
        void append(Token token);

        String shown();
    }

    /**
     * @param name     {@code llama} or {@code paged-attention}
     * @param model    a named shape ({@code tiny} or {@code small})
     * @param kvType   the llama workload's KV cache type; null for the default (the paged-attention
     *                 workload's cache is its own f32 one, and takes none)
     * @throws IllegalArgumentException for an unknown name or shape, requests that do not fit, or
     *                                  a KV cache type for the paged-attention workload
     */
    static DemoWorkload of(String name, String model, int requests, int tokens, long seed, KvType kvType) {
        KvType llamaKv = kvType == null ? LlamaModel.Options.DEFAULT_KV_TYPE : kvType;
        return switch (name == null ? "" : name.toLowerCase(Locale.ROOT)) {
            case "llama" -> isShape(model) ? new Llama(LlamaConfig.named(model), requests, tokens, seed, llamaKv)
                    : new Checkpoint(checkpointPath(model), requests, tokens, llamaKv);
            case "paged-attention" -> {
                if (kvType != null) {
                    throw new IllegalArgumentException("--kv-type is the llama workload's: paged-attention runs its"
                            + " own f32 cache");
                }
                yield new PagedAttention(model, tokens, seed);
            }
            default -> throw new IllegalArgumentException("workload = " + name + " is not known; known: " + NAMES);
        };
    }

    Session<?> session;

    /** Whether {@code model} names a random-weights shape ({@link LlamaConfig#NAMES}). */
    static boolean isShape(String model) {
        return model != null && List.of("tiny", "small").contains(model.toLowerCase(Locale.ROOT));
    }

    /** The checkpoint {@code model} names: the embedded model, or a GGUF file that exists. */
    static Path checkpointPath(String model) {
        Path path = EmbeddedModel.resolve(model);
        if (!Files.isRegularFile(path) && !Files.isRegularFile(path.resolve("config.json"))) {
            throw new IllegalArgumentException("model = " + model + " is neither a GGUF file, a model directory nor a"
                    + " known name; known: " + EmbeddedModel.NAME + ", " + LlamaConfig.NAMES);
        }
        return path;
    }

    /** The weights of a GGUF file or a Hugging Face directory, to read a config or build a reference. */
    static WeightsFile openWeights(Path path, int maxContext) {
        if (Files.isDirectory(path)) {
            SafetensorsModel m = SafetensorsModel.open(path, maxContext);
            return new WeightsFile(m, m.modelType(), m);
        }
        GgufModel m = GgufModel.open(path, maxContext);
        return new WeightsFile(m, m.architecture(), m);
    }

    /** Opened weights, their architecture, and what closes them. */
    record WeightsFile(LlamaWeights weights, String architecture, AutoCloseable closer) implements AutoCloseable {
        @Override
        public void close() {
            try {
                closer.close();
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }
    }

    /** One line saying what runs. */
    abstract String describe();

    /**
     * Loads the workload's data into {@code worker}, runs one short request so that the JIT has
     * compiled the kernels before anything is measured, and opens the session for
     * {@code requests} at once.
     */
    abstract void start(Worker worker, int requests);

    /**
     * Runs the tiny model, which takes the same kernels and code paths, on a worker of its own
     * (so the demo's trace holds the demo alone), until the JIT has compiled them.
     */
    static void warmUp(int cores) {
        LlamaConfig tiny = LlamaConfig.named("tiny");
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(cores))) {
            LlamaModel model = LlamaModel.load(worker, new RandomWeights(tiny, 1));
            String prompt = "a warm-up prompt as long as the demo's prompts";
            for (int i = 0; i < 8; i++) {
                drain(worker.run(model.program(), LlamaRequest.batch(new int[][] {
                    ByteTokenizer.encode(prompt.substring(i)), ByteTokenizer.encode(prompt.substring(2 * i))}, 64)));
            }
        }
    }

    static void drain(TokenStream stream) {
        for (Token ignored : stream) {
            // warm-up tokens are not shown
        }
        stream.completion().join();
    }

    /** Submits request {@code index}. */
    abstract TokenStream submit(int index);

    abstract Text text(int index);

    /** Null when request {@code index}'s tokens match the reference, else what differs, in one line. */
    abstract String check(int index, List<Token> tokens);

    /** Checks every request, in parallel; one entry per request. */
    List<String> checkAll(List<List<Token>> tokens) {
        return IntStream.range(0, tokens.size()).parallel().mapToObj(i -> check(i, tokens.get(i))).toList();
    }

    /**
     * Null when a greedy one-sequence stream's tokens are the reference's (ties allowed, see
     * {@link LlamaReference#verify}) and it ran to its limit or its stop token; else what differs.
     */
    static String checkGreedy(LlamaReference reference, LlamaRequest request, List<Token> tokens) {
        int[] actual = tokens.stream().mapToInt(Token::asInt).toArray();
        LlamaReference.Verdict verdict = reference.verify(request.prompt(0), actual, request.sampler(), 0);
        if (!verdict.ok()) {
            return String.format(Locale.ROOT, "token %d is %d, the reference's is %d", verdict.mismatch(),
                    actual[verdict.mismatch()], verdict.expected());
        }
        boolean stopped = actual.length > 0 && actual[actual.length - 1] == request.stopToken();
        if (actual.length != request.maxTokens() && !stopped) {
            return "the stream ended after " + actual.length + " of " + request.maxTokens()
                    + " tokens without the stop token";
        }
        return null;
    }

    /** A line about the run for the summary, or null. */
    String summary() {
        return null;
    }

    @Override
    public void close() {
        if (session != null) {
            session.close();
        }
    }

    /**
     * The Llama decoder on random weights tilted towards printable text, one sequence per
     * request, greedy, stopping at EOS.
     */
    static final class Llama extends DemoWorkload {
        private static final String[] PROMPTS = {
            "Once upon a time", "The quick brown fox", "In a hole in the ground", "It was a bright cold day",
            "Call me Ishmael.", "All happy families", "Far out in the uncharted", "The sky above the port"
        };

        private final LlamaConfig config;
        private final long seed;
        private final KvType kvType;
        private final List<LlamaRequest> requests = new ArrayList<>();
        private LlamaModel model;
        private Session<LlamaRequest> llamaSession;
        private LlamaReference reference;

        Llama(LlamaConfig config, int count, int tokens, long seed, KvType kvType) {
            this.config = config;
            this.seed = seed;
            this.kvType = kvType;
            for (int i = 0; i < count; i++) {
                String prompt = PROMPTS[i % PROMPTS.length] + (i < PROMPTS.length ? "" : " (" + i + ")");
                LlamaRequest request = LlamaRequest.of(ByteTokenizer.encode(prompt), tokens)
                        .withStopToken(ByteTokenizer.EOS);
                request.check(config);
                requests.add(request);
            }
        }

        @Override
        String describe() {
            return String.format(Locale.ROOT, "Llama decoder, random %s weights (seed %d): dim %d, %d layers, %d heads"
                    + " over %d KV heads, FFN %d, %.1f MB", config.weightType(), seed, config.dim(), config.layers(),
                    config.heads(), config.kvHeads(), config.ffnDim(), config.weightBytes() / 1e6);
        }

        @Override
        void start(Worker worker, int count) {
            warmUp(worker.device().cores());
            model = LlamaModel.load(worker, RandomWeights.forText(config, seed), Ops.preferred(),
                    LlamaModel.Options.forModel(config).withKvType(kvType));
            long memory = 0;
            for (LlamaRequest request : requests) {
                memory = Math.max(memory, model.requestBytes(request));
            }
            llamaSession = worker.openSession(model.program(),
                    SessionConfig.defaults().maxActive(count).maxQueued(count).memoryPerRequest(memory));
            session = llamaSession;
        }

        @Override
        TokenStream submit(int index) {
            LlamaRequest request = requests.get(index);
            return llamaSession.submit(request,
                    RequestOptions.defaults().maxTokens(request.maxTokens()).stopWhen(request.stopWhen()));
        }

        @Override
        Text text(int index) {
            ByteTokenizer.Decoder decoder = new ByteTokenizer.Decoder();
            StringBuilder shown = new StringBuilder();
            return new Text() {
                @Override
                public void append(Token token) {
                    shown.append(decoder.append(token.asInt()));
                }

                @Override
                public String shown() {
                    return shown.toString();
                }
            };
        }

        @Override
        List<String> checkAll(List<List<Token>> tokens) {
            reference = new LlamaReference(RandomWeights.forText(config, seed), model.options().kvType());
            return super.checkAll(tokens);
        }

        @Override
        String check(int index, List<Token> tokens) {
            return checkGreedy(reference, requests.get(index), tokens);
        }
    }

    /**
     * A real checkpoint (the embedded story model by default): one sequence per request, story
     * openings as prompts, greedy, stopping at the model's EOS; {@code --check} replays every
     * stream on the scalar reference over the same weights.
     */
    static final class Checkpoint extends DemoWorkload {
        private static final String[] PROMPTS = {
            "Once upon a time", "Lily and Ben went to the park.", "The little dog was sad because",
            "One day, a boy named Tim found a", "Sam had a red ball.", "There was a big tree in the garden.",
            "Mia wanted to fly like a bird.", "The sun was shining and"
        };

        private final Path path;
        private final int count;
        private final int tokens;
        private final KvType kvType;
        private final List<LlamaRequest> requests = new ArrayList<>();
        private LanguageModel model;
        private GenerateOptions options;
        private Batcher batcher;
        private BatcherStats before;
        private LlamaReference reference;

        Checkpoint(Path path, int count, int tokens, KvType kvType) {
            this.path = path;
            this.count = count;
            this.tokens = tokens;
            this.kvType = kvType;
        }

        @Override
        String describe() {
            String name = EmbeddedModel.isEmbedded(path) ? EmbeddedModel.NAME + " (the embedded model)"
                    : path.getFileName().toString();
            try (WeightsFile weights = openWeights(path, 0)) {
                LlamaConfig c = weights.weights().config();
                return String.format(Locale.ROOT, "%s: %s, dim %d, %d layers, %d heads over %d KV heads, vocabulary %d,"
                        + " %s %.1f MB; greedy, stopping at EOS", name, weights.architecture(), c.dim(), c.layers(),
                        c.heads(), c.kvHeads(), c.vocab(), c.weightType(), c.weightBytes() / 1e6);
            }
        }

        /** Loads the model and builds the requests, so that a prompt too long for the context fails before output. */
        Checkpoint prepare(Worker worker) {
            model = LanguageModel.load(worker, path, LanguageModel.DEFAULT_MAX_CONTEXT, kvType);
            options = GenerateOptions.defaults().withMaxTokens(tokens);
            for (int i = 0; i < count; i++) {
                String prompt = PROMPTS[i % PROMPTS.length];
                LlamaRequest request = model.request(model.encode(prompt), options);
                request.check(model.config());
                requests.add(request);
            }
            return this;
        }

        @Override
        void start(Worker worker, int count) {
            if (model == null) {
                prepare(worker);
            }
            batcher = Batcher.start(worker, model, BatcherConfig.builder().maxBatch(Math.min(count, 32))
                    .maxQueued(count).build());
            // Warm the JIT on the same model, kernels and batch shapes, so that the figures are not the
            // interpreter's. They are still short of a steady JVM's: on 2 cores C2 keeps compiling the
            // kernels for seconds (one stream of the embedded model: about 270 tokens/s in its first
            // half second, 4,500 after five).
            List<Completion> warmUp = new ArrayList<>();
            for (int i = 0; i < Math.min(count, 4); i++) {
                warmUp.add(batcher.submit(requests.get(i).prompt(0), options.withMaxTokens(
                        Math.min(32, requests.get(0).maxTokens())), null));
            }
            warmUp.forEach(Completion::await);
            before = batcher.stats();
        }

        @Override
        TokenStream submit(int index) {
            return batcher.submit(requests.get(index).prompt(0), options, null).stream();
        }

        @Override
        String summary() {
            BatcherStats s = batcher.stats();
            long steps = s.steps() - before.steps();
            long rows = s.decodeRows() - before.decodeRows() + s.prefillRows() - before.prefillRows();
            return String.format(Locale.ROOT, "batching: %d steps shared by %d streams, %.1f rows a step"
                    + " (%d decoding, %d of prompts), %d steps with prompt chunks beside decodes", steps,
                    requests.size(), steps == 0 ? 0.0 : (double) rows / steps, s.decodeRows() - before.decodeRows(),
                    s.prefillRows() - before.prefillRows(), s.mixedSteps() - before.mixedSteps());
        }

        @Override
        public void close() {
            if (batcher != null) {
                batcher.close();
            }
        }

        @Override
        Text text(int index) {
            TextStreamer decoder = new TextStreamer(model.tokenizer()::tokenBytes, List.of());
            StringBuilder shown = new StringBuilder();
            int eos = model.eos();
            return new Text() {
                @Override
                public void append(Token token) {
                    int id = token.asInt();
                    if (id != eos && id >= 0) {
                        shown.append(decoder.accept(id));
                    }
                }

                @Override
                public String shown() {
                    return shown.toString();
                }
            };
        }

        @Override
        List<String> checkAll(List<List<Token>> tokens) {
            try (WeightsFile weights = openWeights(path, model.config().contextLength())) {
                reference = new LlamaReference(weights.weights(), model.model().options().kvType());
                return super.checkAll(tokens);
            }
        }

        @Override
        String check(int index, List<Token> tokens) {
            return checkGreedy(reference, requests.get(index), tokens);
        }
    }

    /** Multi-layer batched paged attention; each request runs the same data, one layer per token. */
    static final class PagedAttention extends DemoWorkload {
        private final PagedAttentionWorkload workload;
        private Session<PagedAttentionWorkload.Readback> paSession;
        private PagedAttentionWorkload.Expected expected;

        PagedAttention(String model, int tokens, long seed) {
            PagedAttentionWorkload.Shape shape = switch (model == null ? "" : model.toLowerCase(Locale.ROOT)) {
                case "tiny" -> new PagedAttentionWorkload.Shape(8, 32, 16, new int[] {33, 64}, tokens, 1, seed);
                case "small" -> new PagedAttentionWorkload.Shape(16, 64, 32, new int[] {256, 512, 384, 128}, tokens, 1,
                        seed);
                default -> throw new IllegalArgumentException("model = " + model + " is not a known shape; known: "
                        + LlamaConfig.NAMES);
            };
            this.workload = new PagedAttentionWorkload(shape);
        }

        @Override
        String describe() {
            PagedAttentionWorkload.Shape s = workload.shape();
            return String.format(Locale.ROOT, "batched paged attention: %d sequences (contexts %s), %d heads x %d,"
                    + " KV blocks of %d, %d layers, a token per layer", s.batch(),
                    Arrays.toString(s.contexts()), s.heads(), s.headDim(), s.blockSize(), s.layers());
        }

        @Override
        void start(Worker worker, int count) {
            try (Worker warm = Worker.create(CpuDeviceConfig.withCores(worker.device().cores()))) {
                PagedAttentionWorkload small = new PagedAttentionWorkload(
                        new PagedAttentionWorkload.Shape(8, 32, 16, new int[] {40, 70}, 64, 1, 1)).load(warm);
                drain(warm.run(small.program(), PagedAttentionWorkload.Readback.DIGEST));
            }
            workload.load(worker);
            paSession = worker.openSession(workload.program(), SessionConfig.defaults().maxActive(count)
                    .maxQueued(count).memoryPerRequest(workload.requestBytes()));
            session = paSession;
        }

        @Override
        TokenStream submit(int index) {
            return paSession.submit(PagedAttentionWorkload.Readback.DIGEST,
                    RequestOptions.defaults().maxTokens(workload.shape().steps()));
        }

        @Override
        Text text(int index) {
            StringBuilder shown = new StringBuilder();
            return new Text() {
                @Override
                public void append(Token token) {
                    shown.setLength(0);
                    shown.append("digest");
                    for (float value : PagedAttentionWorkload.floats(token.bytes())) {
                        shown.append(String.format(Locale.ROOT, " %+.4f", value));
                    }
                }

                @Override
                public String shown() {
                    return shown.toString();
                }
            };
        }

        @Override
        List<String> checkAll(List<List<Token>> tokens) {
            expected = workload.reference();
            return super.checkAll(tokens);
        }

        @Override
        String check(int index, List<Token> tokens) {
            float[][] digests = expected.digests();
            if (tokens.size() != digests.length) {
                return "the stream has " + tokens.size() + " tokens, the reference " + digests.length;
            }
            for (int s = 0; s < digests.length; s++) {
                float[] actual = PagedAttentionWorkload.floats(tokens.get(s).bytes());
                int at = PagedAttentionWorkload.firstMismatch(actual, digests[s]);
                if (at >= 0) {
                    return String.format(Locale.ROOT, "token %d, sequence %d: %f, the reference's %f (rtol = atol = %g)",
                            s, at, actual[at], digests[s][at], PagedAttentionWorkload.RTOL);
                }
            }
            return null;
        }
    }
}
