package dev.tandem.server;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.llm.Completion;
import dev.tandem.llm.FinishReason;
import dev.tandem.llm.GenerateOptions;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import java.io.UncheckedIOException;
import java.time.Instant;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code POST /v1/responses}, OpenAI's Responses API for text: the conversation of
 * {@code instructions} and {@code input} rendered through the model's chat template, answered
 * as one {@code response} object, or streamed as the API's named events.
 *
 * <p><b>The stream</b> is {@code response.created}, {@code response.in_progress},
 * {@code response.output_item.added} (the assistant message), {@code response.content_part.added}
 * (its {@code output_text} part), one {@code response.output_text.delta} per piece of text,
 * {@code response.output_text.done}, {@code response.content_part.done},
 * {@code response.output_item.done}, then {@code response.completed}, or
 * {@code response.incomplete} (reason {@code max_output_tokens}) when the token limit or the
 * context ended it. Every event carries its {@code sequence_number}; there is no {@code [DONE]}.
 * A generation that fails after the stream began ends with a {@code response.failed} event
 * (and an {@code error} event before it, as OpenAI sends).
 */
final class ResponsesApi {
    private static final Logger log = LoggerFactory.getLogger(ResponsesApi.class);
    private static final String OPERATION = "chat";

    private final Generations generations;
    private final ModelNames names;
    private final Replies replies;
    private final ServerMetrics metrics;
    private final ServerConfig config;

    ResponsesApi(Generations generations, ModelNames names, Replies replies, ServerMetrics metrics,
            ServerConfig config) {
        this.generations = generations;
        this.names = names;
        this.replies = replies;
        this.metrics = metrics;
        this.config = config;
    }

    void create(ServerRequest req, ServerResponse res) {
        long start = System.nanoTime();
        ResponsesRequest[] parsed = new ResponsesRequest[1];
        String[] model = new String[1];
        Completion completion = generations.<Completion>admit(req, res, OPERATION, () -> {
            ResponsesRequest request = ResponsesRequest.parse(replies.readBody(req), config.maxTokens());
            ModelNames.Target target = names.resolve(request.model());
            parsed[0] = request;
            model[0] = target.id();
            int[] prompt;
            try {
                prompt = target.model().encodeChat(request.messages());
            } catch (RuntimeException e) {
                throw ApiException.badParameter("input", "the chat template rejects these messages: " + e.getMessage());
            }
            GenerateOptions options = GenerateOptions.defaults().withSampler(request.sampler());
            return generations.submit(target.engine(), prompt, request.maxTokens(),
                    request.grammar() == null ? options : options.withGrammar(request.grammar()), "input");
        });
        if (completion == null) {
            return;
        }
        Ids ids = new Ids("resp_" + CompletionsApi.randomId(), "msg_" + CompletionsApi.randomId(),
                Instant.now().getEpochSecond(), model[0]);
        try {
            if (parsed[0].stream()) {
                stream(req, res, parsed[0], completion, ids, start);
            } else {
                whole(req, res, parsed[0], completion, ids, start);
            }
        } finally {
            generations.release(completion);
        }
    }

    /** The response's ids, and the id of the model that answers it. */
    private record Ids(String response, String message, long created, String model) {}

    private void whole(ServerRequest req, ServerResponse res, ResponsesRequest request, Completion completion, Ids ids,
            long start) {
        long first = 0;
        for (Completion.Delta delta : completion) {
            if (delta.token() >= 0 && first == 0) {
                first = System.nanoTime();
            }
        }
        FinishReason finish = completion.finishReason();
        int promptTokens = completion.promptTokens().length;
        int outputTokens = completion.tokens().length;
        if (finish == FinishReason.ABORTED) {
            metrics.request(ids.model(), OPERATION, "aborted", promptTokens, outputTokens, start, first,
                    System.nanoTime());
            replies.error(req, res, generations.aborted(completion));
            return;
        }
        metrics.request(ids.model(), OPERATION, finish.wire(), promptTokens, outputTokens, start, first,
                System.nanoTime());
        Replies.json(res, response(request, ids, finish, completion.text(), completion));
    }

    private void stream(ServerRequest req, ServerResponse res, ResponsesRequest request, Completion completion,
            Ids ids, long start) {
        long first = 0;
        String outcome;
        metrics.streamOpened();
        Events events = null;
        try {
            events = new Events(new SseWriter(res, config.keepAlive(), completion::cancel));
            ObjectNode pending = response(request, ids, null, null, null);
            events.send("response.created", o -> o.set("response", pending));
            events.send("response.in_progress", o -> o.set("response", pending));
            events.send("response.output_item.added", o -> o.put("output_index", 0).set("item",
                    message(ids, "in_progress", null)));
            events.send("response.content_part.added", o -> part(o, ids).set("part", textPart("")));
            for (Completion.Delta delta : completion) {
                if (delta.token() >= 0 && first == 0) {
                    first = System.nanoTime();
                }
                if (!delta.text().isEmpty()) {
                    events.send("response.output_text.delta", o -> part(o, ids).put("delta", delta.text())
                            .set("logprobs", Replies.JSON.createArrayNode()));
                }
            }
            FinishReason finish = completion.finishReason();
            if (events.sse.clientGone()) {
                outcome = "disconnected";
            } else if (finish == FinishReason.ABORTED) {
                ApiException error = generations.aborted(completion);
                replies.refused(req, error);
                events.send("error", o -> o.put("code", error.code()).put("message", error.getMessage())
                        .putNull("param"));
                ObjectNode failed = response(request, ids, finish, completion.text(), completion);
                failed.put("status", "failed").putObject("error").put("code", "server_error")
                        .put("message", error.getMessage());
                events.send("response.failed", o -> o.set("response", failed));
                outcome = "aborted";
            } else {
                String text = completion.text();
                events.send("response.output_text.done", o -> part(o, ids).put("text", text)
                        .set("logprobs", Replies.JSON.createArrayNode()));
                events.send("response.content_part.done", o -> part(o, ids).set("part", textPart(text)));
                events.send("response.output_item.done", o -> o.put("output_index", 0).set("item",
                        message(ids, "completed", text)));
                ObjectNode done = response(request, ids, finish, text, completion);
                events.send(finish == FinishReason.LENGTH ? "response.incomplete" : "response.completed",
                        o -> o.set("response", done));
                outcome = finish.wire();
            }
        } catch (UncheckedIOException e) {
            completion.cancel();
            outcome = "disconnected";
            log.debug("client disconnected from {}: {}", ids.response(), e.getMessage());
        } finally {
            metrics.streamClosed();
            if (events != null) {
                events.sse.close();
            }
        }
        metrics.request(ids.model(), OPERATION, outcome, completion.promptTokens().length, completion.tokens().length,
                start, first, System.nanoTime());
    }

    /** A stream's events, numbered in order. */
    private static final class Events {
        final SseWriter sse;
        int sequence;

        Events(SseWriter sse) {
            this.sse = sse;
        }

        void send(String type, java.util.function.Consumer<ObjectNode> fields) {
            ObjectNode event = Replies.JSON.createObjectNode().put("type", type).put("sequence_number", sequence++);
            fields.accept(event);
            sse.event(type, event);
        }
    }

    private static ObjectNode part(ObjectNode event, Ids ids) {
        return event.put("item_id", ids.message()).put("output_index", 0).put("content_index", 0);
    }

    private static ObjectNode textPart(String text) {
        ObjectNode part = Replies.JSON.createObjectNode().put("type", "output_text").put("text", text);
        part.putArray("annotations");
        part.putArray("logprobs");
        return part;
    }

    private static ObjectNode message(Ids ids, String status, String text) {
        ObjectNode item = Replies.JSON.createObjectNode().put("id", ids.message()).put("type", "message")
                .put("status", status).put("role", "assistant");
        ArrayNode content = item.putArray("content");
        if (text != null) {
            content.add(textPart(text));
        }
        return item;
    }

    /**
     * The response object: in progress (no finish yet: empty output, no usage), completed, or
     * incomplete when the token limit or the context ended it.
     */
    private ObjectNode response(ResponsesRequest request, Ids ids, FinishReason finish, String text,
            Completion completion) {
        ObjectNode r = Replies.JSON.createObjectNode().put("id", ids.response()).put("object", "response")
                .put("created_at", ids.created());
        boolean incomplete = finish == FinishReason.LENGTH;
        r.put("status", finish == null ? "in_progress" : incomplete ? "incomplete" : "completed");
        r.putNull("error");
        if (incomplete) {
            r.putObject("incomplete_details").put("reason", "max_output_tokens");
        } else {
            r.putNull("incomplete_details");
        }
        if (request.instructions() == null) {
            r.putNull("instructions");
        } else {
            r.put("instructions", request.instructions());
        }
        if (request.maxTokens() > 0) {
            r.put("max_output_tokens", request.maxTokens());
        } else {
            r.putNull("max_output_tokens");
        }
        r.put("model", ids.model());
        ArrayNode output = r.putArray("output");
        if (finish != null && text != null) {
            output.add(message(ids, incomplete ? "incomplete" : "completed", text));
        }
        r.put("parallel_tool_calls", true).putNull("previous_response_id");
        r.putObject("reasoning").putNull("effort").putNull("summary");
        r.put("store", false).put("temperature", request.sampler().temperature());
        if (request.format() == null) {
            r.putObject("text").putObject("format").put("type", "text");
        } else {
            r.putObject("text").set("format", request.format());
        }
        r.put("tool_choice", "auto");
        r.putArray("tools");
        r.put("top_p", request.sampler().topP()).put("truncation", "disabled");
        if (completion != null && finish != null) {
            int input = completion.promptTokens().length;
            int outputTokens = completion.tokens().length;
            ObjectNode usage = r.putObject("usage").put("input_tokens", input);
            usage.putObject("input_tokens_details").put("cached_tokens", completion.cachedPromptTokens())
                    .put("cache_write_tokens", 0);
            usage.put("output_tokens", outputTokens);
            usage.putObject("output_tokens_details").put("reasoning_tokens", 0);
            usage.put("total_tokens", input + outputTokens);
        } else {
            r.putNull("usage");
        }
        if (request.user() == null) {
            r.putNull("user");
        } else {
            r.put("user", request.user());
        }
        r.set("metadata", request.metadata() == null ? Replies.JSON.createObjectNode() : request.metadata());
        return r;
    }
}
