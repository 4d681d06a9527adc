package dev.tandem.cli;

import dev.tandem.CpuDeviceConfig;
import dev.tandem.Worker;
import dev.tandem.llm.EmbeddedModel;
import dev.tandem.llm.LanguageModel;
import dev.tandem.llm.model.KvType;
import dev.tandem.server.ServerConfig;
import dev.tandem.llm.BatcherConfig;
import dev.tandem.server.BatcherEngine;
import dev.tandem.server.Engine;
import dev.tandem.server.SessionEngine;
import dev.tandem.server.TandemServer;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import java.util.logging.Level;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code tandem serve}: the OpenAI-compatible server on a model until the process is stopped
 * (SIGINT/SIGTERM drain the streams in flight, then exit).
 */
@Command(
        name = "serve",
        mixinStandardHelpOptions = true,
        description = "Serve a model over an OpenAI-compatible HTTP API (chat and text completions, responses, "
                + "streaming; llama-server's tokenize and detokenize).")
public final class ServeCommand implements Runnable {
    /** Helidon logs through java.util.logging; held so that the level set here sticks. */
    private static final java.util.logging.Logger HELIDON = java.util.logging.Logger.getLogger("io.helidon");

    /** Told of the server once it accepts requests: by tests, and by the ahead-of-time cache's training run. */
    static volatile Consumer<TandemServer> onStart;

    @Spec
    CommandSpec spec;

    @Option(names = "--model", paramLabel = "PATH|" + EmbeddedModel.NAME, defaultValue = EmbeddedModel.NAME,
            description = "A GGUF file or Hugging Face directory, or " + EmbeddedModel.NAME + " (default).")
    String model;

    @Option(names = "--host", defaultValue = "127.0.0.1",
            description = "Address to bind (default: ${DEFAULT-VALUE}, loopback only).")
    String host;

    @Option(names = "--port", defaultValue = "8080", description = "Port; 0 for any free one (default: ${DEFAULT-VALUE}).")
    int port;

    // 16, not the library's 8: sixteen clients on a small model waited for a first token behind a batch of
    // eight while llama-server served them all. A slot costs a row of logits; what bounds a batch is
    // the KV pool, whose reservations already hold back members that would not fit.
    @Option(names = "--max-batch", defaultValue = "16", description = "Requests decoding together in one batch, at "
            + "most; fewer when the KV pool cannot hold their contexts (default: ${DEFAULT-VALUE}).")
    int maxBatch;

    @Option(names = "--max-queued", defaultValue = "64",
            description = "Requests that may wait for a slot; beyond them the answer is 429 (default: ${DEFAULT-VALUE}).")
    int maxQueued;

    @Option(names = {"-b", "--batch-size"}, paramLabel = "ROWS", defaultValue = "256",
            description = "Rows of one step at most, as llama-server's -b counts them: one per decoding request, the"
                    + " rest for the prompts of joining ones; more than --max-batch (default: ${DEFAULT-VALUE}).")
    int batchSize;

    // 64, not the library's 0 (no bound): under 8 and 16 closed-loop clients on the 0.5B shape it
    // halved the median first token and cut the 99th-percentile gap between tokens to a third, at
    // the same throughput (notes, Continuous batching).
    @Option(names = "--prompt-rows", paramLabel = "ROWS", defaultValue = "64",
            description = "Prompt rows of a step in which requests decode, at most; 0: all that --batch-size leaves"
                    + " them. A joining prompt then takes several shorter steps, and the streams decoding beside it"
                    + " wait less at each; a step with none decoding takes the whole --batch-size"
                    + " (default: ${DEFAULT-VALUE}).")
    int promptRows;

    @Option(names = "--api-key", paramLabel = "KEY",
            description = "Require Authorization: Bearer KEY on /v1 calls (default: $TANDEM_API_KEY, else none).")
    String apiKey;

    @Option(names = "--max-tokens", defaultValue = "4096",
            description = "Largest max_tokens accepted, and the limit when a request names none (default: ${DEFAULT-VALUE}).")
    int maxTokens;

    @Option(names = "--max-body", defaultValue = "1048576", description = "Largest request body in bytes (default: ${DEFAULT-VALUE}).")
    int maxBody;

    @Option(names = "--drain-seconds", defaultValue = "30",
            description = "On shutdown, how long streams in flight may finish (default: ${DEFAULT-VALUE}).")
    int drainSeconds;

    @Option(names = {"-c", "--ctx-size"}, paramLabel = "TOKENS", defaultValue = "0",
            description = "Context length of every request, at most the model's (default: the model's).")
    int contextSize;

    @Option(names = "--alias", paramLabel = "NAME",
            description = "Another name of the model (repeatable); the first is the id responses report. Requests "
                    + "naming any other model are served by it too, unless --strict-model-name.")
    List<String> aliases = new ArrayList<>();

    @Option(names = "--strict-model-name",
            description = "Answer 404 model_not_found to requests naming a model other than the file's name or an alias.")
    boolean strictModelName;

    @Option(names = "--cors-origin", paramLabel = "ORIGIN",
            description = "An origin browsers may call from, e.g. http://localhost:3000, or * for any (repeatable; "
                    + "default: none, no CORS headers).")
    List<String> corsOrigins = new ArrayList<>();

    @Option(names = "--cores", defaultValue = "0", description = "Device cores (default: available processors).")
    int cores;

    @Option(names = "--kv-cells", paramLabel = "POSITIONS", defaultValue = "0",
            description = "KV cache positions of the pool, all sequences together, as llama-server's -c counts them"
                    + " (default 0: --max-batch full contexts, at most 1 GiB of cache). The pool is resident as it"
                    + " is used, and the prefix cache keeps what it holds until it needs the room.")
    int kvCells;

    @Option(names = "--kv-type", paramLabel = "f16|f32", defaultValue = KvTypes.DEFAULT,
            converter = KvTypes.class, completionCandidates = KvTypes.class, description = KvTypes.DESCRIPTION)
    KvType kvType;

    @Option(names = "--no-prefix-cache",
            description = "Compute every prompt from its first token instead of taking the KV blocks of a prefix "
                    + "seen before.")
    boolean noPrefixCache;

    @Option(names = "--no-batching",
            description = "Run each request as its own program instead of sharing steps in one continuous batch.")
    boolean noBatching;

    /**
     * The batcher's configuration from the options, its pool aside (which needs the model's block
     * size); a usage error where the options contradict each other or a batcher-only option comes
     * with {@code --no-batching}.
     */
    BatcherConfig.Builder batcher() {
        CommandLine.ParseResult parsed = spec.commandLine().getParseResult();
        if (noBatching) {
            for (String batcherOnly : new String[] {"--batch-size", "--prompt-rows", "--kv-cells", "--no-prefix-cache"}) {
                if (parsed != null && parsed.hasMatchedOption(batcherOnly)) {
                    throw new CommandLine.ParameterException(spec.commandLine(), batcherOnly
                            + " sizes the continuous batcher, which --no-batching turns off");
                }
            }
        }
        BatcherConfig.Builder batcher = BatcherConfig.builder().maxBatch(maxBatch).maxQueued(maxQueued)
                .tokenBudget(batchSize).promptRows(promptRows).prefixCache(!noPrefixCache);
        try {
            batcher.build();
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--batch-size " + batchSize + ", --max-batch "
                    + maxBatch + " and --prompt-rows " + promptRows + ": " + e.getMessage());
        }
        return batcher;
    }

    @Override
    public void run() {
        HELIDON.setLevel(Level.WARNING);
        String key = apiKey != null ? apiKey : System.getenv("TANDEM_API_KEY");
        if (key != null && key.isEmpty()) {
            key = null;
        }
        ServerConfig.Builder builder = ServerConfig.builder().host(host).port(port).apiKey(key).maxTokens(maxTokens)
                .maxBodyBytes(maxBody).drainTimeout(Duration.ofSeconds(drainSeconds))
                .strictModelNames(strictModelName);
        aliases.forEach(builder::alias);
        corsOrigins.forEach(builder::corsOrigin);
        if (contextSize < 0 || kvCells < 0) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--ctx-size and --kv-cells must be >= 0");
        }
        ServerConfig config;
        try {
            config = builder.build();
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
        }
        BatcherConfig.Builder batcher = batcher();
        int coreCount = cores == 0 ? Runtime.getRuntime().availableProcessors() : cores;
        PrintStream out = System.out;
        CompletableFuture<Void> prepared = TandemServer.prepareAsync(); // beside the model's load
        Worker worker = Worker.create(CpuDeviceConfig.withCores(coreCount));
        try {
            LanguageModel lm = LanguageModel.load(worker, EmbeddedModel.resolve(model), contextSize, kvType);
            Engine engine = noBatching
                    ? SessionEngine.builder(worker, lm).maxActive(maxBatch).maxQueued(maxQueued).build()
                    : BatcherEngine.start(worker, lm,
                            batcher.kvBlocks(Math.ceilDiv(kvCells, lm.model().options().kvBlockSize())).build());
            prepared.join(); // what it has not done yet, start would do anyway
            TandemServer server = TandemServer.start(engine, config);
            Runnable shutdown = () -> {
                server.close(); // 503 to new requests, drain, stop listening
                engine.close();
                worker.close();
            };
            Thread hook = Thread.ofPlatform().name("tandem-serve-shutdown").unstarted(shutdown);
            Runtime.getRuntime().addShutdownHook(hook);
            out.println("listening on http://" + host + ":" + server.port());
            out.flush();
            Consumer<TandemServer> listener = onStart;
            if (listener != null) {
                listener.accept(server);
            }
            server.terminated().join();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException e) {
                // the JVM is shutting down: the hook is doing the rest
            }
            shutdown.run();
        } finally {
            worker.close();
        }
    }
}
