package dev.tandem.server;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.llm.Completion;
import dev.tandem.llm.FinishReason;
import dev.tandem.llm.GenerateOptions;
import dev.tandem.llm.LanguageModel;
import dev.tandem.llm.grammar.Grammar;
import dev.tandem.llm.grammar.GrammarException;
import dev.tandem.llm.sampling.TokenLogprobs;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code POST /v1/chat/completions} and {@code /v1/completions}: parses the request, admits it
 * through {@link Generations}, then writes its deltas as chunks of server-sent events
 * ({@code "stream": true}) or the whole answer with its usage.
 *
 * <p><b>Streaming.</b> Each delta is one {@code data: {chunk}} event, flushed at once; the final
 * chunk carries {@code finish_reason}, an optional usage chunk follows, then {@code data: [DONE]}.
 * A client that goes away makes the next write fail; the handler then cancels the completion,
 * which ends the request on the device and returns its memory. A non-streaming client that goes
 * away is noticed only when its answer is written; the request's deadline bounds it.
 */
final class CompletionsApi {
    private static final Logger log = LoggerFactory.getLogger(CompletionsApi.class);

    private final Generations generations;
    private final ModelNames names;
    private final Replies replies;
    private final ServerMetrics metrics;
    private final ServerConfig config;

    CompletionsApi(Generations generations, ModelNames names, Replies replies, ServerMetrics metrics,
            ServerConfig config) {
        this.generations = generations;
        this.names = names;
        this.replies = replies;
        this.metrics = metrics;
        this.config = config;
    }

    void chat(ServerRequest req, ServerResponse res) {
        generate(req, res, true);
    }

    void completions(ServerRequest req, ServerResponse res) {
        generate(req, res, false);
    }

    private void generate(ServerRequest req, ServerResponse res, boolean chat) {
        long start = System.nanoTime();
        String operation = chat ? "chat" : "text_completion";
        GenerationRequest[] parsed = new GenerationRequest[1];
        ModelNames.Target[] targets = new ModelNames.Target[1];
        List<Completion> choices = generations.admit(req, res, operation, () -> {
            GenerationRequest request = GenerationRequest.parse(replies.readBody(req), chat, config.maxTokens());
            ModelNames.Target target = names.resolve(request.model());
            parsed[0] = request;
            targets[0] = target;
            GenerateOptions options = options(request, target.model());
            List<int[]> prompts = encode(request, target.model());
            List<Completion> admitted = new ArrayList<>();
            try {
                // Choice p * n + i is prompt p's i-th; it draws with seed + i, so sampled choices of a
                // prompt differ, and the prefix cache shares the prompt's blocks among them.
                for (int[] prompt : prompts) {
                    for (int i = 0; i < request.n(); i++) {
                        GenerateOptions choice = i == 0 ? options : options.withSampler(
                                request.sampler().toBuilder().seed(request.sampler().seed() + i).build());
                        admitted.add(generations.submit(target.engine(), prompt, request.maxTokens(), choice,
                                chat ? "messages" : "prompt"));
                    }
                }
            } catch (RuntimeException e) {
                admitted.forEach(generations::release);
                throw e;
            }
            return admitted;
        });
        if (choices == null) {
            return;
        }
        GenerationRequest request = parsed[0];
        LanguageModel model = targets[0].model();
        CompletionShapes shapes = new CompletionShapes(request, model.tokenizer(), targets[0].id(),
                (chat ? "chatcmpl-" : "cmpl-") + randomId(), Instant.now().getEpochSecond());
        try {
            if (request.stream()) {
                stream(req, res, request, model, shapes, choices, operation, start);
            } else {
                whole(req, res, request, model, shapes, choices, operation, start);
            }
        } finally {
            choices.forEach(generations::release);
        }
    }

    /** The generation a request asks for: sampler, stop strings, grammar, log-probabilities. */
    private GenerateOptions options(GenerationRequest request, LanguageModel model) {
        GenerateOptions options = GenerateOptions.defaults().withSampler(request.sampler()).withStop(request.stop())
                .withIgnoreEos(request.ignoreEos());
        Grammar grammar = request.responseFormat();
        if (request.forcesToolCall()) {
            try {
                grammar = model.toolSyntax().forcedCall(request.tools(),
                        request.toolChoice().equals("required") ? null : request.toolChoice());
            } catch (GrammarException e) {
                throw ApiException.unsupported("tools",
                        "a tool's parameters cannot be served for a forced call: " + e.getMessage());
            }
        }
        try {
            if (grammar != null) {
                options = options.withGrammar(grammar);
            }
            if (request.logprobs() >= 0) {
                options = options.withLogprobs(request.logprobs());
            }
        } catch (IllegalArgumentException e) {
            throw ApiException.badParameter("ignore_eos", e.getMessage());
        }
        return options;
    }

    /** The prompts' tokens: the chat's rendering, or each prompt's text encoded, or its ids as given. */
    private List<int[]> encode(GenerationRequest request, LanguageModel model) {
        if (!request.chat()) {
            List<int[]> prompts = new ArrayList<>();
            for (GenerationRequest.Prompt p : request.prompts()) {
                if (p.tokens() == null) {
                    prompts.add(model.encode(p.text()));
                    continue;
                }
                for (int t : p.tokens()) {
                    if (t >= model.tokenizer().vocabSize()) {
                        throw ApiException.badParameter("prompt", "token id " + t + " is not in the vocabulary of "
                                + model.tokenizer().vocabSize());
                    }
                }
                prompts.add(p.tokens());
            }
            return prompts;
        }
        try {
            return List.of(model.encodeChat(request.messages(), request.tools()));
        } catch (RuntimeException e) {
            // The template rejects the conversation (e.g. roles that do not alternate).
            throw ApiException.badParameter("messages", "the chat template rejects these messages: " + e.getMessage());
        }
    }

    /** When a choice's first token came, or 0: the handlers of several choices set it, the earliest wins. */
    private static final class FirstToken {
        private long nanos;

        synchronized void seen() {
            if (nanos == 0) {
                nanos = System.nanoTime();
            }
        }

        synchronized long nanos() {
            return nanos;
        }
    }

    private void stream(ServerRequest req, ServerResponse res, GenerationRequest request, LanguageModel model,
            CompletionShapes shapes, List<Completion> choices, String operation, long start) {
        FirstToken first = new FirstToken();
        int promptTokens = promptTokens(choices, request);
        String outcome;
        metrics.streamOpened();
        SseWriter events = null;
        try {
            events = new SseWriter(res, config.keepAlive(), () -> choices.forEach(Completion::cancel));
            SseWriter writer = events;
            if (choices.size() == 1) {
                streamChoice(writer, request, model, shapes, 0, choices.getFirst(), first);
            } else {
                // Each choice on a virtual thread of its own: the batcher makes them together, and a
                // reader that took one choice at a time would hold the others back at their stream buffer.
                List<Thread> threads = new ArrayList<>();
                List<RuntimeException> failures = java.util.Collections.synchronizedList(new ArrayList<>());
                for (int i = 0; i < choices.size(); i++) {
                    int index = i;
                    threads.add(Thread.ofVirtual().name("tandem-server-choice").start(() -> {
                        try {
                            streamChoice(writer, request, model, shapes, index, choices.get(index), first);
                        } catch (RuntimeException e) {
                            choices.forEach(Completion::cancel);
                            failures.add(e);
                        }
                    }));
                }
                for (Thread t : threads) {
                    t.join();
                }
                if (!failures.isEmpty()) {
                    throw failures.getFirst();
                }
            }
            Completion aborted = choices.stream().filter(c -> c.finishReason() == FinishReason.ABORTED).findFirst()
                    .orElse(null);
            if (events.clientGone()) {
                outcome = "disconnected";
            } else if (aborted != null) {
                ApiException error = generations.aborted(aborted);
                replies.refused(req, error);
                events.data(Replies.errorBody(error));
                events.data("[DONE]");
                outcome = "aborted";
            } else {
                if (request.includeUsage()) {
                    ObjectNode usage = shapes.envelope(true);
                    usage.putArray("choices");
                    usage.set("usage", CompletionShapes.usage(promptTokens, completionTokens(choices),
                            choices.getFirst().cachedPromptTokens()));
                    events.data(usage);
                }
                events.data("[DONE]");
                outcome = choices.getFirst().finishReason().wire();
            }
        } catch (UncheckedIOException e) {
            // The client went away: stop generating for it at once.
            choices.forEach(Completion::cancel);
            outcome = "disconnected";
            log.debug("client disconnected from {}: {}", shapes.id, e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            choices.forEach(Completion::cancel);
            outcome = "aborted";
        } finally {
            metrics.streamClosed();
            if (events != null) {
                events.close();
            }
        }
        metrics.request(shapes.model(), operation, outcome, promptTokens, completionTokens(choices), start,
                first.nanos(), System.nanoTime());
    }

    /** The chunks of one choice, through its finish; nothing after its tokens when it was aborted. */
    private void streamChoice(SseWriter events, GenerationRequest request, LanguageModel model, CompletionShapes shapes,
            int index, Completion completion, FirstToken first) {
        if (request.chat()) {
            events.data(shapes.chunk(index, null, true, null));
        }
        ToolCallFilter tools = new ToolCallFilter(model.toolSyntax(), request.usesTools(), request.parallelToolCalls());
        List<TokenLogprobs> pending = new ArrayList<>();
        for (Completion.Delta delta : completion) {
            if (delta.token() >= 0) {
                first.seen();
            }
            if (delta.logprobs() != null) {
                pending.add(delta.logprobs());
            }
            String out = tools.accept(delta.text());
            if (!out.isEmpty()) {
                events.data(shapes.textChunk(index, out, pending));
            }
        }
        FinishReason finish = completion.finishReason();
        if (finish == FinishReason.ABORTED || events.clientGone()) {
            return;
        }
        ToolCallFilter.End end = tools.end();
        if (!end.content().isEmpty() || !pending.isEmpty() && end.calls().isEmpty()) {
            events.data(shapes.textChunk(index, end.content(), pending));
        }
        for (int i = 0; i < end.calls().size(); i++) {
            for (ObjectNode chunk : shapes.toolCallChunks(index, i, end.calls().get(i))) {
                events.data(chunk);
            }
        }
        events.data(shapes.chunk(index, null, false, end.calls().isEmpty() ? finish.wire() : "tool_calls"));
    }

    /** The prompts' tokens, each counted once however many choices it has. */
    private static int promptTokens(List<Completion> choices, GenerationRequest request) {
        int total = 0;
        for (int i = 0; i < choices.size(); i += request.n()) {
            total += choices.get(i).promptTokens().length;
        }
        return total;
    }

    private static int completionTokens(List<Completion> choices) {
        return choices.stream().mapToInt(c -> c.tokens().length).sum();
    }

    private void whole(ServerRequest req, ServerResponse res, GenerationRequest request, LanguageModel model,
            CompletionShapes shapes, List<Completion> choices, String operation, long start) {
        FirstToken first = new FirstToken();
        List<java.util.concurrent.CompletableFuture<Void>> done = new ArrayList<>();
        for (Completion c : choices) {
            done.add(java.util.concurrent.CompletableFuture.runAsync(() -> {
                for (Completion.Delta delta : c) {
                    if (delta.token() >= 0) {
                        first.seen();
                    }
                }
            }, r -> Thread.ofVirtual().name("tandem-server-choice").start(r)));
        }
        done.forEach(java.util.concurrent.CompletableFuture::join);
        int promptTokens = promptTokens(choices, request);
        int completionTokens = completionTokens(choices);
        for (Completion c : choices) {
            if (c.finishReason() == FinishReason.ABORTED) {
                metrics.request(shapes.model(), operation, "aborted", promptTokens, completionTokens, start,
                        first.nanos(), System.nanoTime());
                replies.error(req, res, generations.aborted(c));
                return;
            }
        }
        ObjectNode body = shapes.envelope(false);
        ArrayNode array = body.putArray("choices");
        for (int i = 0; i < choices.size(); i++) {
            Completion c = choices.get(i);
            ToolCallFilter.End end = request.chat() ? ToolCallFilter.whole(c.text(), model.toolSyntax(),
                    request.usesTools(), request.parallelToolCalls()) : new ToolCallFilter.End(c.text(), List.of());
            String finish = end.calls().isEmpty() ? c.finishReason().wire() : "tool_calls";
            array.add(shapes.choice(i, c.text(), end, c.logprobs(), finish));
        }
        body.set("usage", CompletionShapes.usage(promptTokens, completionTokens, choices.getFirst().cachedPromptTokens()));
        metrics.request(shapes.model(), operation, choices.getFirst().finishReason().wire(), promptTokens,
                completionTokens, start, first.nanos(), System.nanoTime());
        Replies.json(res, body);
    }

    static String randomId() {
        byte[] bytes = new byte[12];
        ThreadLocalRandom.current().nextBytes(bytes);
        return HexFormat.of().formatHex(bytes);
    }
}
