package dev.tandem.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.tandem.llm.chat.ChatMessage;
import dev.tandem.llm.sampling.SamplerConfig;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The body of {@code POST /v1/responses} (OpenAI's Responses API, for text), parsed and checked.
 * Every field is either served, accepted and ignored by design ({@code store}: nothing is
 * stored; {@code service_tier}, {@code prompt_cache_key}, {@code safety_identifier}: hints for
 * OpenAI's own infrastructure), or refused with a 400 naming it; an unknown field is a 400 too,
 * so a request never silently loses what it asked for.
 *
 * @param model       the model named, or null
 * @param messages    {@code instructions} as a system message, then {@code input}'s messages
 * @param instructions {@code instructions}, or null
 * @param maxTokens   {@code max_output_tokens}, or 0 when not given
 * @param grammar     the grammar of {@code text.format} {@code json_object} or {@code json_schema}, or null
 * @param format      {@code text.format} as given (echoed in the response), or null for text
 * @param sampler     the sampler: {@code temperature}, {@code top_p}, and tandem's {@code seed}
 * @param stream      whether to answer with the Responses API's server-sent events
 * @param metadata    {@code metadata}, echoed in the response (null when not given)
 * @param user        {@code user}, echoed (null when not given)
 */
record ResponsesRequest(String model, List<ChatMessage> messages, String instructions, int maxTokens,
        dev.tandem.llm.grammar.Grammar grammar, JsonNode format, SamplerConfig sampler, boolean stream, JsonNode metadata, String user) {

    private static final Set<String> SERVED = Set.of("model", "input", "instructions", "max_output_tokens",
            "temperature", "top_p", "seed", "stream", "metadata", "user", "tools", "tool_choice",
            "parallel_tool_calls", "text", "truncation", "reasoning", "previous_response_id", "include",
            "background");
    private static final Set<String> IGNORED_BY_DESIGN = Set.of("store", "service_tier", "prompt_cache_key",
            "safety_identifier");
    private static final Map<String, String> ROLES = Map.of("system", "system", "developer", "system", "user", "user",
            "assistant", "assistant");

    static ResponsesRequest parse(JsonNode body, int maxTokensLimit) {
        if (body == null || !body.isObject()) {
            throw ApiException.badParameter(null, "the request body must be a JSON object");
        }
        for (Iterator<String> it = body.fieldNames(); it.hasNext();) {
            String name = it.next();
            if (!SERVED.contains(name) && !IGNORED_BY_DESIGN.contains(name)) {
                throw ApiException.unsupported(name, "the parameter " + name + " is not supported by this server");
            }
        }
        if (present(body, "previous_response_id")) {
            throw ApiException.unsupported("previous_response_id", "previous_response_id is not supported: this server stores no "
                    + "responses; send the whole conversation in input");
        }
        if (present(body, "background") && body.get("background").asBoolean()) {
            throw ApiException.unsupported("background", "background responses are not supported");
        }
        if (present(body, "tools") && !(body.get("tools").isArray() && body.get("tools").isEmpty())) {
            throw ApiException.unsupported("tools", "tools are not supported on /v1/responses yet; use /v1/chat/completions");
        }
        JsonNode toolChoice = body.get("tool_choice");
        if (toolChoice != null && !toolChoice.isNull()
                && !(toolChoice.isTextual() && Set.of("none", "auto").contains(toolChoice.asText()))) {
            throw ApiException.unsupported("tool_choice", "tool_choice must be none or auto when no tools are given");
        }
        JsonNode parallel = body.get("parallel_tool_calls");
        if (parallel != null && !parallel.isNull() && !parallel.isBoolean()) {
            throw ApiException.badParameter("parallel_tool_calls", "parallel_tool_calls must be a boolean");
        }
        JsonNode text = body.get("text");
        JsonNode format = text == null ? null : text.path("format");
        if (text != null && !text.isNull() && (!text.isObject() || !(format.isMissingNode() || format.isNull()
                || java.util.Set.of("text", "json_object", "json_schema").contains(format.path("type").asText())))) {
            throw ApiException.unsupported("text.format", "text.format must be {\"type\": \"text\" | \"json_object\" | "
                    + "\"json_schema\"}");
        }
        JsonNode truncation = body.get("truncation");
        if (truncation != null && !truncation.isNull() && !"disabled".equals(truncation.asText())) {
            throw ApiException.unsupported("truncation", "only truncation \"disabled\" is supported: a conversation beyond the "
                    + "context is refused, never cut");
        }
        JsonNode reasoning = body.get("reasoning");
        if (reasoning != null && !reasoning.isNull() && !(reasoning.isObject() && allNull(reasoning))) {
            throw ApiException.unsupported("reasoning", "reasoning options are not supported by this model");
        }
        JsonNode include = body.get("include");
        if (include != null && !include.isNull() && !(include.isArray() && include.isEmpty())) {
            throw ApiException.unsupported("include", "include is not supported");
        }

        String model = Params.optionalString(body, "model");
        String instructions = Params.optionalString(body, "instructions");
        List<ChatMessage> messages = new ArrayList<>();
        if (instructions != null) {
            messages.add(ChatMessage.system(instructions));
        }
        messages.addAll(input(body));

        int maxTokens = 0;
        JsonNode max = body.get("max_output_tokens");
        if (max != null && !max.isNull()) {
            if (!max.isIntegralNumber() || !max.canConvertToInt() || max.intValue() < 1
                    || max.intValue() > maxTokensLimit) {
                throw ApiException.badParameter("max_output_tokens", "max_output_tokens must be an integer in [1, "
                        + maxTokensLimit + "]");
            }
            maxTokens = max.intValue();
        }
        SamplerConfig.Builder sampler = Params.sampling(body, SamplerConfig.builder());
        JsonNode stream = body.get("stream");
        if (stream != null && !stream.isNull() && !stream.isBoolean()) {
            throw ApiException.badParameter("stream", "stream must be a boolean");
        }
        JsonNode metadata = body.get("metadata");
        if (metadata != null && !metadata.isNull() && !metadata.isObject()) {
            throw ApiException.badParameter("metadata", "metadata must be an object");
        }
        return new ResponsesRequest(model, List.copyOf(messages), instructions, maxTokens, grammar(format),
                format == null || format.isMissingNode() || format.isNull() ? null : format, sampler.build(),
                stream != null && stream.asBoolean(), metadata == null || metadata.isNull() ? null : metadata,
                Params.optionalString(body, "user"));
    }

    /** The grammar {@code text.format} asks for: a JSON object, the schema's, or null for text. */
    private static dev.tandem.llm.grammar.Grammar grammar(JsonNode format) {
        if (format == null || format.isMissingNode() || format.isNull()) {
            return null;
        }
        return switch (format.path("type").asText()) {
            case "json_object" -> dev.tandem.llm.grammar.Grammar.jsonObject();
            case "json_schema" -> {
                JsonNode schema = format.get("schema");
                if (schema == null || !schema.isObject()) {
                    throw ApiException.badParameter("text.format.schema", "text.format.schema must be a JSON Schema");
                }
                try {
                    yield dev.tandem.llm.grammar.Grammar.jsonSchema(schema);
                } catch (dev.tandem.llm.grammar.GrammarException e) {
                    throw ApiException.unsupported("text.format.schema", "the schema cannot be served: " + e.getMessage());
                }
            }
            default -> null;
        };
    }

    /** {@code input}: a string (one user message) or a list of messages of text. */
    private static List<ChatMessage> input(JsonNode body) {
        JsonNode input = body.get("input");
        if (input == null || input.isNull()) {
            throw ApiException.badParameter("input", "input is required");
        }
        if (input.isTextual()) {
            return List.of(ChatMessage.user(input.asText()));
        }
        if (!input.isArray() || input.isEmpty()) {
            throw ApiException.badParameter("input", "input must be a string or a non-empty array of messages");
        }
        List<ChatMessage> messages = new ArrayList<>();
        for (int i = 0; i < input.size(); i++) {
            JsonNode item = input.get(i);
            String at = "input[" + i + "]";
            if (!item.isObject()) {
                throw ApiException.badParameter(at, at + " must be an object");
            }
            String type = item.path("type").asText("message");
            if (!type.equals("message")) {
                throw ApiException.unsupported(at + ".type", "input items of type " + type + " are not supported; only messages");
            }
            String role = ROLES.get(item.path("role").asText());
            if (role == null) {
                throw ApiException.badParameter(at + ".role", at + ".role must be one of " + ROLES.keySet());
            }
            messages.add(new ChatMessage(role, content(item.get("content"), at + ".content")));
        }
        return messages;
    }

    private static String content(JsonNode content, String param) {
        if (content != null && content.isTextual()) {
            return content.asText();
        }
        if (content == null || !content.isArray()) {
            throw ApiException.badParameter(param, param + " must be a string or an array of text parts");
        }
        StringBuilder text = new StringBuilder();
        for (int j = 0; j < content.size(); j++) {
            JsonNode part = content.get(j);
            String type = part.path("type").asText();
            if (!(type.equals("input_text") || type.equals("output_text") || type.equals("text"))
                    || !part.path("text").isTextual()) {
                throw ApiException.unsupported(param + "[" + j + "]", "only text content parts are supported, was " + type);
            }
            text.append(part.get("text").asText());
        }
        return text.toString();
    }

    private static boolean present(JsonNode body, String name) {
        JsonNode n = body.get(name);
        return n != null && !n.isNull();
    }

    private static boolean allNull(JsonNode object) {
        for (JsonNode value : object) {
            if (!value.isNull()) {
                return false;
            }
        }
        return true;
    }

}
