package dev.tandem.server;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.llm.chat.ToolCall;
import dev.tandem.llm.sampling.TokenLogprobs;
import dev.tandem.llm.tokenizer.Tokenizer;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * OpenAI's JSON shapes of one chat or text completion response: the envelope, a streamed chunk of
 * one choice, a whole choice, tool calls, log-probabilities and usage. Knows nothing of HTTP or of
 * how the tokens were made.
 */
final class CompletionShapes {
    private final GenerationRequest request;
    private final Tokenizer tokenizer;
    private final String model;
    final String id;
    private final long created;

    CompletionShapes(GenerationRequest request, Tokenizer tokenizer, String model, String id, long created) {
        this.request = request;
        this.tokenizer = tokenizer;
        this.model = model;
        this.id = id;
        this.created = created;
    }

    /** The id of the model that answers. */
    String model() {
        return model;
    }

    ObjectNode envelope(boolean chunk) {
        String object = request.chat() ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
        return Replies.JSON.createObjectNode().put("id", id).put("object", object).put("created", created)
                .put("model", model);
    }

    /** A chunk of choice {@code index}: {@code text} (or none), the assistant's role on a chat's first chunk, a finish. */
    ObjectNode chunk(int index, String text, boolean role, String finish) {
        ObjectNode chunk = envelope(true);
        ObjectNode choice = chunk.putArray("choices").addObject().put("index", index);
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

    /** A text chunk carrying the log-probabilities of {@code pending} (then cleared) when the request asked. */
    ObjectNode textChunk(int index, String text, List<TokenLogprobs> pending) {
        ObjectNode chunk = chunk(index, text, false, null);
        if (request.logprobs() >= 0) {
            ((ObjectNode) chunk.at("/choices/0")).set("logprobs", logprobs(pending));
            pending.clear();
        }
        return chunk;
    }

    /** The two chunks of a streamed call: index, id, type and name with empty arguments, then the arguments. */
    List<ObjectNode> toolCallChunks(int index, int callIndex, ToolCall call) {
        ObjectNode opening = chunk(index, null, false, null);
        ObjectNode entry = ((ObjectNode) opening.at("/choices/0/delta")).putArray("tool_calls").addObject()
                .put("index", callIndex).put("id", call.id()).put("type", "function");
        entry.putObject("function").put("name", call.name()).put("arguments", "");
        ObjectNode arguments = chunk(index, null, false, null);
        ((ObjectNode) arguments.at("/choices/0/delta")).putArray("tool_calls").addObject().put("index", callIndex)
                .putObject("function").put("arguments", call.arguments());
        return List.of(opening, arguments);
    }

    /** A whole choice: its message (or text), log-probabilities and finish reason. */
    ObjectNode choice(int index, String text, ToolCallFilter.End end, List<TokenLogprobs> logprobs, String finish) {
        ObjectNode choice = Replies.JSON.createObjectNode().put("index", index);
        if (request.chat()) {
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
            }
            message.putNull("refusal");
        } else {
            choice.put("text", text);
        }
        if (request.logprobs() >= 0) {
            choice.set("logprobs", logprobs(logprobs));
        } else {
            choice.putNull("logprobs");
        }
        return choice.put("finish_reason", finish);
    }

    /**
     * OpenAI's {@code logprobs} of {@code tokens}: chat's {@code {"content": [{token, logprob,
     * bytes, top_logprobs}], "refusal": null}}, or completions' {@code {tokens, token_logprobs,
     * top_logprobs, text_offset}}. The figures are the model's own distribution (the log-softmax
     * of its logits, before penalties, temperature and any grammar).
     */
    ObjectNode logprobs(List<TokenLogprobs> tokens) {
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
        for (byte b : tokenizer.tokenBytes(token)) {
            bytes.add(b & 0xff);
        }
        return entry;
    }

    /** A token's text (its bytes as UTF-8, a broken character replaced). */
    private String piece(int token) {
        return new String(tokenizer.tokenBytes(token), StandardCharsets.UTF_8);
    }

    /** OpenAI's usage, with the prompt tokens taken from the prefix cache in {@code prompt_tokens_details}. */
    static ObjectNode usage(int prompt, int completion, int cached) {
        ObjectNode usage = Replies.JSON.createObjectNode().put("prompt_tokens", prompt)
                .put("completion_tokens", completion).put("total_tokens", prompt + completion);
        usage.putObject("prompt_tokens_details").put("cached_tokens", cached);
        return usage;
    }
}
