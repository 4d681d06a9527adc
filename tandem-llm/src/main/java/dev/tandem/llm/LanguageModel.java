package dev.tandem.llm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.Program;
import dev.tandem.TokenStream;
import dev.tandem.Worker;
import dev.tandem.kernels.Ops;
import dev.tandem.llm.chat.ChatMessage;
import dev.tandem.llm.chat.ChatTemplate;
import dev.tandem.llm.gguf.GgufModel;
import dev.tandem.llm.gguf.GgufVocabulary;
import dev.tandem.llm.grammar.Grammar;
import dev.tandem.llm.grammar.GrammarVocabulary;
import dev.tandem.llm.grammar.TokenGrammar;
import dev.tandem.llm.model.KvType;
import dev.tandem.llm.model.LlamaConfig;
import dev.tandem.llm.model.LlamaModel;
import dev.tandem.llm.model.LlamaRequest;
import dev.tandem.llm.safetensors.SafetensorsModel;
import dev.tandem.llm.tokenizer.Tokenizer;
import dev.tandem.llm.tokenizer.Vocabulary;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * A checkpoint loaded onto a worker, with everything that turns text into tokens and back: the
 * decoder ({@link LlamaModel}), its tokenizer, its chat template and its end-of-sequence token.
 * Thread-safe: many requests may use one model at once.
 *
 * <pre>{@code
 * try (Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
 *     LanguageModel model = LanguageModel.load(worker, EmbeddedModel.path());
 *     Completion completion = model.generate(worker, "Once upon a time", GenerateOptions.defaults().withMaxTokens(64));
 *     for (Completion.Delta d : completion) System.out.print(d.text());
 * }
 * }</pre>
 */
public final class LanguageModel {
    private final String name;
    private final String architecture;
    private final LlamaConfig config;
    /** Null when loaded for its text only ({@link #loadText}). */
    private final LlamaModel model;
    private final Tokenizer tokenizer;
    private final ChatTemplate template;
    private final boolean hasTemplate;
    private final boolean templateKnowsTools;
    private final dev.tandem.llm.chat.ToolSyntax toolSyntax;
    private final SequenceLimits limits;
    private volatile GrammarVocabulary grammarVocabulary;

    private LanguageModel(String name, String architecture, LlamaConfig config, LlamaModel model, Tokenizer tokenizer,
            String template) {
        this.name = name;
        this.architecture = architecture;
        this.config = config;
        this.model = model;
        this.tokenizer = tokenizer;
        this.hasTemplate = template != null && !template.isBlank();
        this.templateKnowsTools = hasTemplate && template.contains("tools");
        this.toolSyntax = templateKnowsTools ? dev.tandem.llm.chat.ToolSyntax.of(template)
                : dev.tandem.llm.chat.ToolSyntax.GENERIC;
        String bos = tokenizer.bos() >= 0 ? tokenizer.piece(tokenizer.bos()) : "";
        String eos = tokenizer.eos() >= 0 ? tokenizer.piece(tokenizer.eos()) : "";
        this.template = ChatTemplate.forModel(template, bos, eos);
        java.util.BitSet endOfGeneration = new java.util.BitSet();
        if (tokenizer.eos() >= 0) {
            endOfGeneration.set(tokenizer.eos());
        }
        for (String piece : END_OF_TURN) {
            tokenizer.id(piece).ifPresent(id -> {
                if (tokenizer.tokenType(id) == dev.tandem.llm.tokenizer.TokenType.CONTROL) {
                    endOfGeneration.set(id);
                }
            });
        }
        this.limits = new SequenceLimits(config.contextLength(), endOfGeneration);
    }

    /** When a generation of this model ends: the context room, token limits, end-of-generation tokens. */
    public SequenceLimits limits() {
        return limits;
    }

    /**
     * Control tokens that end an assistant's turn in the chat formats of the supported families
     * (Llama 3's {@code <|eot_id|>}, Qwen's {@code <|im_end|>}, ...): a completion ends at them as it
     * does at EOS, since a chat model's file often names another token as EOS.
     */
    private static final List<String> END_OF_TURN = List.of("<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|end|>",
            "<|endoftext|>", "<end_of_turn>", "<|end_of_text|>");

    /** The context {@link #load(Worker, Path)} caps a model's at. */
    public static final int DEFAULT_MAX_CONTEXT = 4096;

    /** Loads a GGUF checkpoint onto {@code worker}, its context as the file says (at most {@value #DEFAULT_MAX_CONTEXT}). */
    public static LanguageModel load(Worker worker, Path path) {
        return load(worker, path, DEFAULT_MAX_CONTEXT);
    }

    /**
     * Loads a checkpoint onto {@code worker}: a GGUF file (tokenizer and chat template from its
     * metadata) or a Hugging Face model directory (safetensors weights, {@code tokenizer.json},
     * the chat template of {@code tokenizer_config.json}). The weights go into frozen worker
     * buffers and the files are unmapped afterwards.
     *
     * @param maxContext caps the context length (0: the file's)
     */
    public static LanguageModel load(Worker worker, Path path, int maxContext) {
        return load(worker, path, maxContext, LlamaModel.Options.DEFAULT_KV_TYPE);
    }

    /**
     * {@link #load(Worker, Path, int)} with a KV cache of {@code kvType}: the element type of
     * every cache its program and the batchers built on it keep ({@link KvType}).
     */
    public static LanguageModel load(Worker worker, Path path, int maxContext, KvType kvType) {
        return read(java.util.Objects.requireNonNull(worker, "worker"), path, maxContext,
                java.util.Objects.requireNonNull(kvType, "kvType"));
    }

    /**
     * Reads a checkpoint's text side only: its name, configuration, tokenizer, chat template and
     * limits, not its weights (no worker, no memory for them). For a process that renders and
     * tokenizes prompts and turns token streams decoded elsewhere into text, such as a cluster's
     * gateway; {@link #model}, {@link #program} and {@link #generate} throw on such a model.
     *
     * @param maxContext caps the context length (0: the file's), as {@link #load(Worker, Path, int)} does
     */
    public static LanguageModel loadText(Path path, int maxContext) {
        return read(null, path, maxContext, LlamaModel.Options.DEFAULT_KV_TYPE);
    }

    /** {@link #loadText(Path, int)} with the context {@link #load(Worker, Path)} takes. */
    public static LanguageModel loadText(Path path) {
        return loadText(path, DEFAULT_MAX_CONTEXT);
    }

    /** A checkpoint with its weights on {@code worker}, or its text side only when {@code worker} is null. */
    private static LanguageModel read(Worker worker, Path path, int maxContext, KvType kvType) {
        if (Files.isDirectory(path)) {
            return readDirectory(worker, path, maxContext, kvType);
        }
        try (GgufModel weights = GgufModel.open(path, maxContext)) {
            Tokenizer tokenizer = Tokenizer.of(GgufVocabulary.read(weights.file().metadata()));
            if (tokenizer.vocabSize() != weights.config().vocab()) {
                throw new IllegalArgumentException(path + ": the vocabulary has " + tokenizer.vocabSize()
                        + " tokens but the embedding has " + weights.config().vocab() + " rows");
            }
            LlamaModel model = worker == null ? null : LlamaModel.load(worker, weights, Ops.preferred(),
                    LlamaModel.Options.forModel(weights.config()).withKvType(kvType));
            String name = EmbeddedModel.isEmbedded(path) ? EmbeddedModel.NAME
                    : weights.file().metadata().string("general.name")
                            .orElse(path.getFileName().toString().replaceFirst("\\.gguf$", ""));
            return new LanguageModel(name, weights.architecture(), weights.config(), model, tokenizer,
                    weights.file().metadata().string("tokenizer.chat_template").orElse(null));
        }
    }

    private static LanguageModel readDirectory(Worker worker, Path dir, int maxContext, KvType kvType) {
        try (SafetensorsModel weights = SafetensorsModel.open(dir, maxContext)) {
            Path config = dir.resolve("tokenizer_config.json");
            Tokenizer tokenizer = Tokenizer.of(Vocabulary.fromHuggingFace(dir.resolve("tokenizer.json"),
                    Files.exists(config) ? config : null));
            String template = null;
            if (Files.exists(config)) {
                try {
                    JsonNode node = new ObjectMapper().readTree(config.toFile()).path("chat_template");
                    template = node.isTextual() ? node.asText() : null;
                } catch (IOException e) {
                    throw new IllegalArgumentException(config + ": " + e.getMessage(), e);
                }
            }
            LlamaModel model = worker == null ? null : LlamaModel.load(worker, weights, Ops.preferred(),
                    LlamaModel.Options.forModel(weights.config()).withKvType(kvType));
            return new LanguageModel(dir.getFileName().toString(), weights.modelType(), weights.config(), model,
                    tokenizer, template);
        }
    }

    public String name() {
        return name;
    }

    public String architecture() {
        return architecture;
    }

    /** The weights and the graph that decodes them. */
    public LlamaModel model() {
        if (model == null) {
            throw new IllegalStateException(name + " was loaded for its text only (loadText): it has no weights");
        }
        return model;
    }

    /** Whether this model has its weights (loaded by {@code load}, not {@link #loadText}). */
    public boolean hasWeights() {
        return model != null;
    }

    public LlamaConfig config() {
        return config;
    }

    public Tokenizer tokenizer() {
        return tokenizer;
    }

    /** The model's chat template, or the plain fallback ({@code role: content} lines) when it has none. */
    public ChatTemplate chatTemplate() {
        return template;
    }

    /** Whether the file carries a chat template of its own. */
    public boolean hasChatTemplate() {
        return hasTemplate;
    }

    /** The program that decodes this model's requests. */
    public Program<LlamaRequest> program() {
        return model().program();
    }

    /** The tokens of a plain prompt: BOS first when the vocabulary adds one, special-token text parsed. */
    public int[] encode(String prompt) {
        return tokenizer.encode(prompt, true, true);
    }

    /**
     * The tokens of a chat: the messages rendered by the chat template with the assistant's turn
     * opened; BOS is added only when the template did not write it.
     */
    public int[] encodeChat(List<ChatMessage> messages) {
        return encodeChat(messages, List.of());
    }

    /**
     * The tokens of a chat that offers {@code tools} (each the JSON text of OpenAI's
     * {@code {"type": "function", "function": {…}}}): given to the template as its {@code tools}
     * variable when it knows tools, else listed in a system turn put first, with instructions
     * to call them as {@link #toolSyntax()} reads.
     */
    public int[] encodeChat(List<ChatMessage> messages, List<String> tools) {
        String text;
        if (tools.isEmpty()) {
            text = template.render(messages, true);
        } else if (templateKnowsTools) {
            text = template.render(messages, true, dev.tandem.llm.chat.ToolDefinitions.variables(tools));
        } else {
            List<ChatMessage> withTools = new java.util.ArrayList<>();
            withTools.add(ChatMessage.system(dev.tandem.llm.chat.ToolDefinitions.instructions(tools)));
            withTools.addAll(messages);
            text = template.render(withTools, true);
        }
        boolean templateHasBos = tokenizer.bos() >= 0 && text.startsWith(tokenizer.piece(tokenizer.bos()));
        return tokenizer.encode(text, !templateHasBos, true);
    }

    /** How this model writes tool calls, as its chat template teaches it. */
    public dev.tandem.llm.chat.ToolSyntax toolSyntax() {
        return toolSyntax;
    }

    /**
     * The request that generates from {@code prompt}: at most {@code options.maxTokens()} tokens,
     * fewer when the context would overflow (the completion then ends with
     * {@link FinishReason#LENGTH}); EOS as the stop token unless ignored.
     *
     * @throws IllegalArgumentException when the prompt does not leave room for one token
     */
    public LlamaRequest request(int[] prompt, GenerateOptions options) {
        int maxTokens = limits.maxTokens(prompt.length, options.maxTokens());
        LlamaRequest request = LlamaRequest.of(prompt, maxTokens)
                .withSampler(options.sampler())
                .withGrammar(options.grammar() == null ? null : compile(options.grammar()))
                .withLogprobs(options.logprobs());
        return options.ignoreEos() || tokenizer.eos() < 0 ? request : request.withStopToken(tokenizer.eos());
    }

    /**
     * This model's vocabulary for constrained decoding (made on first use): the tokens' bytes, and
     * its end tokens ({@link #endsGeneration}) as the grammar's end.
     */
    public GrammarVocabulary grammarVocabulary() {
        GrammarVocabulary v = grammarVocabulary;
        if (v == null) {
            synchronized (this) {
                v = grammarVocabulary;
                if (v == null) {
                    v = GrammarVocabulary.of(tokenizer, this::endsGeneration);
                    grammarVocabulary = v;
                }
            }
        }
        return v;
    }

    /** {@code grammar} compiled for this model's vocabulary; cached per grammar. */
    public TokenGrammar compile(Grammar grammar) {
        return grammarVocabulary().compile(grammar);
    }

    /** Run options for a request of {@code options}: the token limit of its request. */
    public dev.tandem.RunOptions runOptions(GenerateOptions options) {
        return dev.tandem.RunOptions.defaults().withMaxTokens(options.maxTokens());
    }

    /**
     * Generates from {@code prompt} on {@code worker}, the worker this model was loaded onto, as a
     * batch of one: a {@link Batcher} of one member, its KV pool exactly the completion's context
     * and its step no wider than the prompt, closed (its memory returned) when the completion ends. Many concurrent completions share the
     * worker's cores; for many completions in one batch (each step reading the weights once for
     * all of them) submit them to one {@link Batcher}.
     *
     * @throws IllegalArgumentException when the prompt is empty, has a token outside the
     *         vocabulary or does not leave room for one token
     */
    public Completion generate(Worker worker, int[] prompt, GenerateOptions options) {
        int maxTokens = limits.maxTokens(prompt.length, options.maxTokens());
        int blockSize = model().options().kvBlockSize();
        // Its activations hold one step's rows: the whole prompt in one step, as the plain program
        // does, but no more rows than a batcher's default budget (a longer prompt is chunked).
        int rows = Math.max(2, Math.min(BatcherConfig.defaults().tokenBudget(), prompt.length + 1));
        Batcher one = Batcher.start(worker, this, BatcherConfig.builder().maxBatch(1).maxQueued(1).prefixCache(false)
                .tokenBudget(rows)
                .kvBlocks(dev.tandem.llm.engine.Sequence.blocksFor(prompt.length, maxTokens, blockSize)).build());
        Completion completion;
        try {
            completion = one.submit(prompt, options, null);
        } catch (RuntimeException e) {
            one.close();
            throw e;
        }
        // Closed off the delivery's thread, which close() waits for.
        completion.stream().completion().whenComplete((outcome, failure) -> Thread.ofVirtual()
                .name("batch-of-one-close").start(one::close));
        return completion;
    }

    /** {@link #generate(Worker, int[], GenerateOptions)} of {@code prompt}'s tokens ({@link #encode}). */
    public Completion generate(Worker worker, String prompt, GenerateOptions options) {
        return generate(worker, encode(prompt), options);
    }

    /** Wraps the stream of a {@link #request} into text. */
    public Completion start(TokenStream stream, int[] prompt, GenerateOptions options) {
        return new Completion(this, stream, prompt, options);
    }

    /** The end-of-sequence token, or -1. */
    public int eos() {
        return tokenizer.eos();
    }

    /** Whether {@code token} ends a completion: the EOS token, or a control token that ends a turn. */
    public boolean endsGeneration(int token) {
        return limits.endsGeneration(token);
    }

    @Override
    public String toString() {
        return name + " (" + architecture + ", " + config() + ")";
    }
}
