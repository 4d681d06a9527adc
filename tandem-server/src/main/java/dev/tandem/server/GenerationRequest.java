package dev.tandem.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.tandem.llm.chat.ChatMessage;
import dev.tandem.llm.sampling.SamplerConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The body of {@code POST /v1/chat/completions} or {@code /v1/completions}, parsed and checked.
 * Unknown fields are ignored; a known field of the wrong type or out of range is a 400 naming it.
 *
 * <p>Sampling fields left out take llama.cpp's defaults (as llama-server does): temperature
 * 0.8, top-p 0.95, top-k 40, min-p 0.05; {@code seed} left out is random.
 *
 * @param chat         whether it is a chat completion (messages) or a completion (prompt)
 * @param model        the model named, or null
 * @param messages     the chat's messages (chat only)
 * @param prompt       the prompt text (completion only)
 * @param maxTokens    {@code max_completion_tokens} / {@code max_tokens}, or 0 when not given
 * @param sampler      the sampler of the request
 * @param stop         stop strings (at most 4)
 * @param stream       whether to answer with server-sent events
 * @param includeUsage {@code stream_options.include_usage}
 * @param ignoreEos    llama-server's {@code ignore_eos}: generate through the end-of-sequence token
 */
record GenerationRequest(boolean chat, String model, List<ChatMessage> messages, String prompt, int maxTokens,
        SamplerConfig sampler, List<String> stop, boolean stream, boolean includeUsage, boolean ignoreEos) {

    static final int MAX_STOP_STRINGS = 4;

    /** Parses {@code body}; {@code maxTokensLimit} bounds {@code max_tokens}. */
    static GenerationRequest parse(JsonNode body, boolean chat, int maxTokensLimit) {
        if (body == null || !body.isObject()) {
            throw ApiException.badParameter(null, "the request body must be a JSON object");
        }
        String model = Params.optionalString(body, "model");
        List<ChatMessage> messages = chat ? messages(body) : List.of();
        String prompt = chat ? null : prompt(body);

        int maxTokens = 0;
        for (String name : chat ? List.of("max_completion_tokens", "max_tokens") : List.of("max_tokens")) {
            JsonNode n = body.get(name);
            if (n != null && !n.isNull()) {
                if (!n.canConvertToInt() || !n.isIntegralNumber()) {
                    throw ApiException.badParameter(name, name + " must be an integer");
                }
                int value = n.intValue();
                if (value < 1 || value > maxTokensLimit) {
                    throw ApiException.badParameter(name, name + " must be in [1, " + maxTokensLimit + "], was " + value);
                }
                maxTokens = value;
                break;
            }
        }

        JsonNode n = body.get("n");
        if (n != null && !n.isNull() && !(n.isIntegralNumber() && n.intValue() == 1)) {
            throw ApiException.badParameter("n", "only n = 1 is supported");
        }

        SamplerConfig.Builder sampler = Params.sampling(body, SamplerConfig.builder());
        Double presence = Params.optionalNumber(body, "presence_penalty", -2, 2);
        if (presence != null) {
            sampler.presencePenalty(presence.floatValue());
        }
        Double frequency = Params.optionalNumber(body, "frequency_penalty", -2, 2);
        if (frequency != null) {
            sampler.frequencyPenalty(frequency.floatValue());
        }

        boolean stream = optionalBoolean(body, "stream");
        boolean includeUsage = false;
        JsonNode streamOptions = body.get("stream_options");
        if (streamOptions != null && !streamOptions.isNull()) {
            if (!streamOptions.isObject()) {
                throw ApiException.badParameter("stream_options", "stream_options must be an object");
            }
            includeUsage = optionalBoolean(streamOptions, "include_usage", "stream_options.include_usage");
        }
        JsonNode user = body.get("user");
        if (user != null && !user.isNull() && !user.isTextual()) {
            throw ApiException.badParameter("user", "user must be a string");
        }
        return new GenerationRequest(chat, model, messages, prompt, maxTokens, sampler.build(), stop(body), stream,
                includeUsage, optionalBoolean(body, "ignore_eos"));
    }

    private static final Map<String, String> ROLES = Map.of("system", "system", "developer", "system", "user", "user",
            "assistant", "assistant", "tool", "tool");

    private static List<ChatMessage> messages(JsonNode body) {
        JsonNode array = body.get("messages");
        if (array == null || array.isNull()) {
            throw ApiException.badParameter("messages", "messages is required");
        }
        if (!array.isArray() || array.isEmpty()) {
            throw ApiException.badParameter("messages", "messages must be a non-empty array");
        }
        List<ChatMessage> messages = new ArrayList<>();
        for (int i = 0; i < array.size(); i++) {
            JsonNode m = array.get(i);
            String at = "messages[" + i + "]";
            if (!m.isObject()) {
                throw ApiException.badParameter(at, at + " must be an object");
            }
            JsonNode role = m.get("role");
            String mapped = role != null && role.isTextual() ? ROLES.get(role.asText()) : null;
            if (mapped == null) {
                throw ApiException.badParameter(at + ".role", at + ".role must be one of " + ROLES.keySet());
            }
            messages.add(new ChatMessage(mapped, content(m.get("content"), at + ".content")));
        }
        return messages;
    }

    /** A message's content: a string, null (an assistant turn of tool calls), or text parts. */
    private static String content(JsonNode content, String param) {
        if (content == null || content.isNull()) {
            return "";
        }
        if (content.isTextual()) {
            return content.asText();
        }
        if (content.isArray()) {
            StringBuilder text = new StringBuilder();
            for (int j = 0; j < content.size(); j++) {
                JsonNode part = content.get(j);
                if (!part.isObject() || !"text".equals(part.path("type").asText()) || !part.path("text").isTextual()) {
                    throw ApiException.badParameter(param + "[" + j + "]", "only text content parts are supported");
                }
                text.append(part.get("text").asText());
            }
            return text.toString();
        }
        throw ApiException.badParameter(param, param + " must be a string or an array of text parts");
    }

    private static String prompt(JsonNode body) {
        JsonNode prompt = body.get("prompt");
        if (prompt == null || prompt.isNull()) {
            throw ApiException.badParameter("prompt", "prompt is required");
        }
        if (prompt.isTextual()) {
            return prompt.asText();
        }
        if (prompt.isArray() && prompt.size() == 1 && prompt.get(0).isTextual()) {
            return prompt.get(0).asText();
        }
        throw ApiException.badParameter("prompt", "prompt must be a string (or an array of one string)");
    }

    private static List<String> stop(JsonNode body) {
        JsonNode stop = body.get("stop");
        if (stop == null || stop.isNull()) {
            return List.of();
        }
        List<String> strings = new ArrayList<>();
        if (stop.isTextual()) {
            strings.add(stop.asText());
        } else if (stop.isArray()) {
            for (JsonNode s : stop) {
                if (!s.isTextual()) {
                    throw ApiException.badParameter("stop", "stop must be a string or an array of strings");
                }
                strings.add(s.asText());
            }
        } else {
            throw ApiException.badParameter("stop", "stop must be a string or an array of strings");
        }
        if (strings.size() > MAX_STOP_STRINGS) {
            throw ApiException.badParameter("stop", "at most " + MAX_STOP_STRINGS + " stop strings");
        }
        for (String s : strings) {
            if (s.isEmpty()) {
                throw ApiException.badParameter("stop", "a stop string must not be empty");
            }
        }
        return List.copyOf(strings);
    }

    private static boolean optionalBoolean(JsonNode body, String name) {
        return optionalBoolean(body, name, name);
    }

    private static boolean optionalBoolean(JsonNode body, String name, String param) {
        JsonNode n = body.get(name);
        if (n == null || n.isNull()) {
            return false;
        }
        if (!n.isBoolean()) {
            throw ApiException.badParameter(param, param + " must be a boolean");
        }
        return n.booleanValue();
    }
}
