package dev.tandem.server;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.llm.Completion;
import dev.tandem.llm.FinishReason;
import dev.tandem.llm.GenerateOptions;
import dev.tandem.llm.LanguageModel;
import dev.tandem.llm.chat.ToolCall;
import dev.tandem.llm.grammar.Grammar;
import dev.tandem.llm.grammar.GrammarException;
import dev.tandem.llm.sampling.TokenLogprobs;
import java.util.ArrayList;
import java.util.List;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.util.HexFormat;
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
    private final LanguageModel model;

    CompletionsApi(Generations generations, ModelNames names, Replies replies, ServerMetrics metrics,
            ServerConfig config) {
        this.generations = generations;
        this.names = names;
        this.replies = replies;
        this.metrics = metrics;
        this.config = config;
        this.model = generations.model();
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
        Completion completion = generations.admit(req, res, operation, () -> {
            GenerationRequest request = GenerationRequest.parse(replies.readBody(req), chat, config.maxTokens());
            names.check(request.model());
            parsed[0] = request;
            GenerateOptions options = options(request);
            return generations.submit(encode(request), request.maxTokens(), options, chat ? "messages" : "prompt");
        });
        if (completion == null) {
            return;
        }
        try {
            if (parsed[0].stream()) {
                stream(req, res, parsed[0], completion, operation, start);
            } else {
                whole(req, res, parsed[0], completion, operation, start);
            }
        } finally {
            generations.release(completion);
        }
    }

    /** The generation a request asks for: sampler, stop strings, grammar, log-probabilities. */
    private GenerateOptions options(GenerationRequest request) {
        GenerateOptions options = GenerateOptions.defaults().withSampler(request.sampler()).withStop(request.stop())
                .withIgnoreEos(request.ignoreEos());
        Grammar grammar = request.responseFormat();
        if (request.forcesToolCall()) {
            try {
                grammar = model.toolSyntax().forcedCall(request.tools(),
                        request.toolChoice().equals("required") ? null : request.toolChoice());
            } catch (GrammarException e) {
                throw new ApiException(400, "invalid_request_error", "tools", "unsupported_parameter",
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

    private int[] encode(GenerationRequest request) {
        if (!request.chat()) {
            return model.encode(request.prompt());
        }
        try {
            return model.encodeChat(request.messages(), request.tools());
        } catch (RuntimeException e) {
            // The template rejects the conversation (e.g. roles that do not alternate).
            throw ApiException.badParameter("messages", "the chat template rejects these messages: " + e.getMessage());
        }
    }

    private void stream(ServerRequest req, ServerResponse res, GenerationRequest request, Completion completion,
            String operation, long start) {
        String id = (request.chat() ? "chatcmpl-" : "cmpl-") + randomId();
        long created = Instant.now().getEpochSecond();
        long first = 0;
        int promptTokens = completion.promptTokens().length;
        String outcome;
        metrics.streamOpened();
        SseWriter events = null;
        try {
            events = new SseWriter(res, config.keepAlive(), completion::cancel);
            if (request.chat()) {
                events.data(chunk(request, id, created, null, true, null));
            }
            ToolCallFilter tools = new ToolCallFilter(model.toolSyntax(), request.usesTools(),
                    request.parallelToolCalls());
            List<TokenLogprobs> pending = new ArrayList<>();
            for (Completion.Delta delta : completion) {
                if (delta.token() >= 0 && first == 0) {
                    first = System.nanoTime();
                }
                if (delta.logprobs() != null) {
                    pending.add(delta.logprobs());
                }
                String out = tools.accept(delta.text());
                if (!out.isEmpty()) {
                    events.data(withLogprobs(chunk(request, id, created, out, false, null), request, pending));
                }
            }
            FinishReason finish = completion.finishReason();
            ToolCallFilter.End end = finish == FinishReason.ABORTED ? null : tools.end();
            if (events.clientGone()) {
                outcome = "disconnected";
            } else if (finish == FinishReason.ABORTED) {
                ApiException error = generations.aborted(completion);
                replies.refused(req, error);
                events.data(Replies.errorBody(error));
                events.data("[DONE]");
                outcome = "aborted";
            } else {
                if (!end.content().isEmpty() || !pending.isEmpty() && end.calls().isEmpty()) {
                    events.data(withLogprobs(chunk(request, id, created, end.content(), false, null), request,
                            pending));
                }
                for (int i = 0; i < end.calls().size(); i++) {
                    ToolCall call = end.calls().get(i);
                    ObjectNode opening = chunk(request, id, created, null, false, null);
                    ObjectNode entry = ((ObjectNode) opening.at("/choices/0/delta")).putArray("tool_calls").addObject()
                            .put("index", i).put("id", call.id()).put("type", "function");
                    entry.putObject("function").put("name", call.name()).put("arguments", "");
                    events.data(opening);
                    ObjectNode arguments = chunk(request, id, created, null, false, null);
                    ((ObjectNode) arguments.at("/choices/0/delta")).putArray("tool_calls").addObject().put("index", i)
                            .putObject("function").put("arguments", call.arguments());
                    events.data(arguments);
                }
                events.data(chunk(request, id, created, null, false,
                        end.calls().isEmpty() ? finish.wire() : "tool_calls"));
                if (request.includeUsage()) {
                    ObjectNode usage = envelope(request, id, created, true);
                    usage.putArray("choices");
                    usage.set("usage", usage(promptTokens, completion.tokens().length,
                            completion.cachedPromptTokens()));
                    events.data(usage);
                }
                events.data("[DONE]");
                outcome = finish.wire();
            }
        } catch (UncheckedIOException e) {
            // The client went away: stop generating for it at once.
            completion.cancel();
            outcome = "disconnected";
            log.debug("client disconnected from {}: {}", id, e.getMessage());
        } finally {
            metrics.streamClosed();
            if (events != null) {
                events.close();
            }
        }
        metrics.request(operation, outcome, promptTokens, completion.tokens().length, start, first, System.nanoTime());
    }

    private void whole(ServerRequest req, ServerResponse res, GenerationRequest request, Completion completion,
            String operation, long start) {
        long first = 0;
        for (Completion.Delta delta : completion) {
            if (delta.token() >= 0 && first == 0) {
                first = System.nanoTime();
            }
        }
        int promptTokens = completion.promptTokens().length;
        int completionTokens = completion.tokens().length;
        FinishReason finish = completion.finishReason();
        if (finish == FinishReason.ABORTED) {
            metrics.request(operation, "aborted", promptTokens, completionTokens, start, first, System.nanoTime());
            replies.error(req, res, generations.aborted(completion));
            return;
        }
        String id = (request.chat() ? "chatcmpl-" : "cmpl-") + randomId();
        long created = Instant.now().getEpochSecond();
        ObjectNode body = envelope(request, id, created, false);
        ObjectNode choice = body.putArray("choices").addObject().put("index", 0);
        String finishReason = finish.wire();
        if (request.chat()) {
            ToolCallFilter.End end = ToolCallFilter.whole(completion.text(), model.toolSyntax(), request.usesTools(),
                    request.parallelToolCalls());
            ObjectNode message = choice.putObject("message").put("role", "assistant");
            if (end.calls().isEmpty()) {
                message.put("content", end.content());
            } else {
                if (end.content().isEmpty()) {
                    message.putNull("content");
                } else {
                    message.put("content", end.content());
                }
                ArrayNode calls = message.putArray("tool_calls");
                for (ToolCall call : end.calls()) {
                    ObjectNode entry = calls.addObject().put("id", call.id()).put("type", "function");
                    entry.putObject("function").put("name", call.name()).put("arguments", call.arguments());
                }
                finishReason = "tool_calls";
            }
            message.putNull("refusal");
        } else {
            choice.put("text", completion.text());
        }
        if (request.logprobs() >= 0) {
            choice.set("logprobs", logprobs(completion.logprobs(), request));
        } else {
            choice.putNull("logprobs");
        }
        choice.put("finish_reason", finishReason);
        body.set("usage", usage(promptTokens, completionTokens, completion.cachedPromptTokens()));
        metrics.request(operation, finish.wire(), promptTokens, completionTokens, start, first, System.nanoTime());
        Replies.json(res, body);
    }

    private ObjectNode envelope(GenerationRequest request, String id, long created, boolean chunk) {
        String object = request.chat() ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
        return Replies.JSON.createObjectNode().put("id", id).put("object", object).put("created", created)
                .put("model", names.id());
    }

    /** A chunk of a stream: {@code text} (or none), the assistant's role on a chat's first chunk, a finish reason. */
    private ObjectNode chunk(GenerationRequest request, String id, long created, String text, boolean role,
            String finish) {
        ObjectNode chunk = envelope(request, id, created, true);
        ArrayNode choices = chunk.putArray("choices");
        ObjectNode choice = choices.addObject().put("index", 0);
        if (request.chat()) {
            ObjectNode delta = choice.putObject("delta");
            if (role) {
                delta.put("role", "assistant").putNull("content"); // as llama-server's first chunk
            }
            if (text != null) {
                delta.put("content", text);
            }
        } else {
            choice.put("text", text == null ? "" : text);
        }
        choice.putNull("logprobs");
        if (finish == null) {
            choice.putNull("finish_reason");
        } else {
            choice.put("finish_reason", finish);
        }
        return chunk;
    }

    /** OpenAI's usage, with the prompt tokens taken from the prefix cache in {@code prompt_tokens_details}. */
    /** {@code chunk} carrying the log-probabilities of {@code pending} (then cleared) when the request asked. */
    private ObjectNode withLogprobs(ObjectNode chunk, GenerationRequest request, List<TokenLogprobs> pending) {
        if (request.logprobs() >= 0) {
            ((ObjectNode) chunk.at("/choices/0")).set("logprobs", logprobs(pending, request));
            pending.clear();
        }
        return chunk;
    }

    /**
     * OpenAI's {@code logprobs} of {@code tokens}: chat's {@code {"content": [{token, logprob,
     * bytes, top_logprobs}], "refusal": null}}, or completions' {@code {tokens, token_logprobs,
     * top_logprobs, text_offset}}. The figures are the model's own distribution (the log-softmax
     * of its logits, before penalties, temperature and any grammar).
     */
    private ObjectNode logprobs(List<TokenLogprobs> tokens, GenerationRequest request) {
        ObjectNode node = Replies.JSON.createObjectNode();
        if (request.chat()) {
            ArrayNode content = node.putArray("content");
            for (TokenLogprobs lp : tokens) {
                ObjectNode entry = tokenEntry(content.addObject(), lp.token(), lp.logprob());
                ArrayNode top = entry.putArray("top_logprobs");
                for (int i = 0; i < Math.min(request.logprobs(), lp.topTokens().length); i++) {
                    tokenEntry(top.addObject(), lp.topTokens()[i], lp.topLogprobs()[i]);
                }
            }
            node.putNull("refusal");
            return node;
        }
        ArrayNode texts = node.putArray("tokens");
        ArrayNode values = node.putArray("token_logprobs");
        ArrayNode tops = node.putArray("top_logprobs");
        ArrayNode offsets = node.putArray("text_offset");
        int offset = 0;
        for (TokenLogprobs lp : tokens) {
            String text = piece(lp.token());
            texts.add(text);
            values.add(lp.logprob());
            ObjectNode top = tops.addObject();
            for (int i = 0; i < Math.min(request.logprobs(), lp.topTokens().length); i++) {
                top.put(piece(lp.topTokens()[i]), lp.topLogprobs()[i]);
            }
            offsets.add(offset);
            offset += text.length();
        }
        return node;
    }

    private ObjectNode tokenEntry(ObjectNode entry, int token, float logprob) {
        entry.put("token", piece(token)).put("logprob", logprob);
        ArrayNode bytes = entry.putArray("bytes");
        for (byte b : model.tokenizer().tokenBytes(token)) {
            bytes.add(b & 0xff);
        }
        return entry;
    }

    /** A token's text (its bytes as UTF-8, a broken character replaced). */
    private String piece(int token) {
        return new String(model.tokenizer().tokenBytes(token), java.nio.charset.StandardCharsets.UTF_8);
    }

    static ObjectNode usage(int prompt, int completion, int cached) {
        ObjectNode usage = Replies.JSON.createObjectNode().put("prompt_tokens", prompt)
                .put("completion_tokens", completion).put("total_tokens", prompt + completion);
        usage.putObject("prompt_tokens_details").put("cached_tokens", cached);
        return usage;
    }

    static String randomId() {
        byte[] bytes = new byte[12];
        ThreadLocalRandom.current().nextBytes(bytes);
        return HexFormat.of().formatHex(bytes);
    }
}
