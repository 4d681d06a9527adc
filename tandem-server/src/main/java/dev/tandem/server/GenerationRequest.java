package dev.tandem.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.tandem.llm.chat.ChatMessage;
import dev.tandem.llm.chat.ToolCall;
import dev.tandem.llm.grammar.Grammar;
import dev.tandem.llm.grammar.GrammarException;
import dev.tandem.llm.sampling.TokenLogprobs;
import dev.tandem.llm.sampling.SamplerConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The body of {@code POST /v1/chat/completions} or {@code /v1/completions}, parsed and checked.
 * Every field is served, accepted and ignored by design ({@link #IGNORED_BY_DESIGN}), or refused
 * with a 400 naming it: an unknown field, or one whose value asks for what the server does not
 * do, never passes silently. A known field of the wrong type or out of range is a 400 naming it.
 *
 * <p>Sampling fields left out take llama.cpp's defaults (as llama-server does): temperature
 * 0.8, top-p 0.95, top-k 40, min-p 0.05; {@code seed} left out is random.
 *
 * @param chat         whether it is a chat completion (messages) or a completion (prompt)
 * @param model        the model named, or null
 * @param messages     the chat's messages (chat only)
 * @param prompts      the prompts (completion only): one, or several (a choice set each)
 * @param maxTokens    {@code max_completion_tokens} / {@code max_tokens}, or 0 when not given
 * @param sampler      the sampler of the request
 * @param stop         stop strings (at most 4)
 * @param stream       whether to answer with server-sent events
 * @param includeUsage {@code stream_options.include_usage}
 * @param ignoreEos    llama-server's {@code ignore_eos}: generate through the end-of-sequence token
 * @param tools        the tools offered (each the JSON text of {@code {"type": "function", …}}),
 *                     empty when none are, or when {@code tool_choice} is {@code none}
 * @param parallelToolCalls whether the reply may make several calls ({@code parallel_tool_calls})
 * @param toolChoice   {@code auto}, {@code required}, or the name of the one function to call
 * @param responseFormat the grammar the reply must follow ({@code response_format}
 *                     {@code json_object} or {@code json_schema}), or null for text
 * @param logprobs     how many alternatives to report with each token's log-probability
 *                     ({@code top_logprobs}, or completions' {@code logprobs}); -1 for none
 * @param n            how many choices to generate for the prompt
 */
record GenerationRequest(boolean chat, String model, List<ChatMessage> messages, List<Prompt> prompts, int maxTokens,
        SamplerConfig sampler, List<String> stop, boolean stream, boolean includeUsage, boolean ignoreEos,
        List<String> tools, boolean parallelToolCalls, String toolChoice, Grammar responseFormat, int logprobs,
        int n) {

    static final int MAX_CHOICES = 8;

    /** Whether the model must call a tool (required, or a named function). */
    boolean forcesToolCall() {
        return usesTools() && !toolChoice.equals("auto");
    }

    /** Whether the reply is read for tool calls. */
    boolean usesTools() {
        return !tools.isEmpty();
    }

    static final int MAX_STOP_STRINGS = 4;

    /** Fields that change nothing here, by design: who calls, and hints for OpenAI's own infrastructure. */
    static final Set<String> IGNORED_BY_DESIGN = Set.of("user", "service_tier", "store", "metadata",
            "prompt_cache_key", "safety_identifier");
    private static final Set<String> SERVED_BOTH = Set.of("model", "max_tokens", "n", "temperature", "top_p",
            "presence_penalty", "frequency_penalty", "seed", "stop", "stream", "stream_options", "ignore_eos",
            "top_k", "min_p", "repeat_penalty", "logit_bias", "logprobs");
    private static final Set<String> SERVED_CHAT = Set.of("messages", "max_completion_tokens", "top_logprobs",
            "response_format", "tools", "tool_choice", "parallel_tool_calls", "modalities", "functions",
            "function_call", "audio", "prediction", "reasoning_effort", "verbosity", "web_search_options");
    private static final Set<String> SERVED_COMPLETIONS = Set.of("prompt", "best_of", "echo", "suffix");

    /** Parses {@code body}; {@code maxTokensLimit} bounds {@code max_tokens}. */
    static GenerationRequest parse(JsonNode body, boolean chat, int maxTokensLimit) {
        if (body == null || !body.isObject()) {
            throw ApiException.badParameter(null, "the request body must be a JSON object");
        }
        checkFields(body, chat);
        String model = Params.optionalString(body, "model");
        List<ChatMessage> messages = chat ? messages(body) : List.of();
        List<Prompt> prompt = chat ? List.of() : prompts(body);

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

        JsonNode nNode = body.get("n");
        int n = 1;
        if (nNode != null && !nNode.isNull()) {
            if (!nNode.isIntegralNumber() || nNode.intValue() < 1 || nNode.intValue() > MAX_CHOICES) {
                throw ApiException.badParameter("n", "n must be an integer in [1, " + MAX_CHOICES + "]");
            }
            n = nNode.intValue();
        }

        SamplerConfig.Builder sampler = Params.sampling(body, SamplerConfig.builder());
        Double topK = Params.optionalNumber(body, "top_k", 0, Integer.MAX_VALUE);
        if (topK != null) {
            if (topK != Math.rint(topK)) {
                throw ApiException.badParameter("top_k", "top_k must be an integer");
            }
            sampler.topK(topK.intValue());
        }
        sampler.logitBias(logitBias(body));
        Double minP = Params.optionalNumber(body, "min_p", 0, 1);
        if (minP != null) {
            sampler.minP(minP.floatValue());
        }
        Double repeat = Params.optionalNumber(body, "repeat_penalty", 0, 10);
        if (repeat != null) {
            if (repeat == 0) {
                throw ApiException.badParameter("repeat_penalty", "repeat_penalty must be > 0 (1 is none)");
            }
            sampler.repetitionPenalty(repeat.floatValue());
        }
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
            for (var it = streamOptions.fieldNames(); it.hasNext();) {
                String name = it.next();
                if (!name.equals("include_usage") && !name.equals("include_obfuscation")) {
                    throw ApiException.unsupported("stream_options." + name, "stream_options." + name
                            + " is not supported");
                }
            }
            if (optionalBoolean(streamOptions, "include_obfuscation", "stream_options.include_obfuscation")) {
                throw ApiException.unsupported("stream_options.include_obfuscation",
                        "stream obfuscation is not supported; the server writes no padding");
            }
            includeUsage = optionalBoolean(streamOptions, "include_usage", "stream_options.include_usage");
        }
        JsonNode user = body.get("user");
        if (user != null && !user.isNull() && !user.isTextual()) {
            throw ApiException.badParameter("user", "user must be a string");
        }
        List<String> tools = chat ? tools(body) : List.of();
        JsonNode parallel = body.get("parallel_tool_calls");
        boolean parallelToolCalls = parallel == null || parallel.isNull() || parallel.booleanValue();
        String toolChoice = toolChoice(body, tools);
        Grammar responseFormat = chat ? responseFormat(body) : null;
        if (responseFormat != null && toolChoice != null && !toolChoice.equals("auto") && !tools.isEmpty()) {
            throw ApiException.unsupported("response_format", "response_format cannot be combined with a forced tool call");
        }
        return new GenerationRequest(chat, model, messages, prompt, maxTokens, sampler.build(), stop(body), stream,
                includeUsage, optionalBoolean(body, "ignore_eos"), tools, parallelToolCalls, toolChoice,
                responseFormat, logprobs(body, chat), checkedChoices(n, prompt.size()));
    }

    /**
     * Refuses a field this endpoint does not know, and a known one whose value asks for what the
     * server does not do (a 400 naming it); lets through the default or empty values clients
     * send for them.
     */
    private static void checkFields(JsonNode body, boolean chat) {
        for (var it = body.fieldNames(); it.hasNext();) {
            String name = it.next();
            boolean known = SERVED_BOTH.contains(name) || IGNORED_BY_DESIGN.contains(name)
                    || (chat ? SERVED_CHAT : SERVED_COMPLETIONS).contains(name);
            if (!known) {
                throw ApiException.unsupported(name, "the parameter " + name + " is not supported by this endpoint");
            }
        }
        refuseUnless(body, "response_format", v -> v.isObject()
                && java.util.Set.of("text", "json_object", "json_schema").contains(v.path("type").asText()),
                "response_format must be {\"type\": \"text\" | \"json_object\" | \"json_schema\"}");
        refuseUnless(body, "tools", JsonNode::isArray, "tools must be an array of functions");
        refuseUnless(body, "tool_choice", v -> v.isTextual() && java.util.Set.of("none", "auto", "required")
                .contains(v.asText()) || v.isObject() && "function".equals(v.path("type").asText())
                && v.path("function").path("name").isTextual(),
                "tool_choice must be none, auto, required or {\"type\": \"function\", \"function\": {\"name\": …}}");
        refuseUnless(body, "parallel_tool_calls", JsonNode::isBoolean, "parallel_tool_calls must be a boolean");
        refuseUnless(body, "functions", v -> v.isArray() && v.isEmpty(), "functions (deprecated) are not supported");
        refuseUnless(body, "function_call", v -> v.isTextual() && v.asText().equals("none"),
                "function_call (deprecated) is not supported");
        refuseUnless(body, "modalities", v -> v.isArray() && v.size() == 1 && "text".equals(v.get(0).asText()),
                "only the text modality is served");
        refuseUnless(body, "audio", v -> false, "audio output is not supported");
        refuseUnless(body, "prediction", v -> false, "predicted outputs are not supported");
        refuseUnless(body, "reasoning_effort", v -> false, "reasoning_effort is not supported by this model");
        refuseUnless(body, "verbosity", v -> false, "verbosity is not supported by this model");
        refuseUnless(body, "web_search_options", v -> false, "web search is not supported");
        refuseUnless(body, "best_of", v -> v.isIntegralNumber() && v.intValue() == 1, "only best_of = 1 is supported");
        refuseUnless(body, "echo", v -> v.isBoolean() && !v.booleanValue(), "echo is not supported");
        refuseUnless(body, "suffix", v -> v.isTextual() && v.asText().isEmpty(), "suffix (insertion) is not supported");
    }

    /** A 400 naming {@code name} when it is present, not null, and {@code accepted} refuses its value. */
    private static void refuseUnless(JsonNode body, String name, java.util.function.Predicate<JsonNode> accepted,
            String message) {
        JsonNode value = body.get(name);
        if (value != null && !value.isNull() && !accepted.test(value)) {
            throw ApiException.unsupported(name, message);
        }
    }


    /** {@code logit_bias}: token ids (as the object's keys) to a bias in [-100, 100]. */
    private static Map<Integer, Float> logitBias(JsonNode body) {
        JsonNode bias = body.get("logit_bias");
        if (bias == null || bias.isNull()) {
            return Map.of();
        }
        if (!bias.isObject()) {
            throw ApiException.badParameter("logit_bias", "logit_bias must be an object of token ids to numbers");
        }
        Map<Integer, Float> out = new java.util.HashMap<>();
        for (var it = bias.fields(); it.hasNext();) {
            var e = it.next();
            int token;
            try {
                token = Integer.parseInt(e.getKey());
            } catch (NumberFormatException x) {
                throw ApiException.badParameter("logit_bias", "logit_bias keys must be token ids, was " + e.getKey());
            }
            if (token < 0 || !e.getValue().isNumber() || Math.abs(e.getValue().doubleValue()) > 100) {
                throw ApiException.badParameter("logit_bias", "logit_bias maps token ids to numbers in [-100, 100]");
            }
            out.put(token, e.getValue().floatValue());
        }
        return out;
    }

    /** {@code tool_choice}: auto (also when no tools are offered), required, or a function's name. */
    private static String toolChoice(JsonNode body, List<String> tools) {
        JsonNode choice = body.get("tool_choice");
        if (choice == null || choice.isNull() || tools.isEmpty()) {
            return "auto";
        }
        if (choice.isTextual()) {
            return choice.asText().equals("required") ? "required" : "auto";
        }
        String name = choice.path("function").path("name").asText();
        for (String tool : tools) {
            try {
                if (name.equals(Replies.JSON.readTree(tool).path("function").path("name").asText())) {
                    return name;
                }
            } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
                throw new IllegalStateException(e); // tools() wrote it
            }
        }
        throw ApiException.badParameter("tool_choice", "tool_choice names " + name + ", which is not among the tools");
    }

    /** {@code response_format}: null for text, else the grammar of a JSON object or of the schema. */
    private static Grammar responseFormat(JsonNode body) {
        JsonNode format = body.get("response_format");
        if (format == null || format.isNull()) {
            return null;
        }
        return switch (format.path("type").asText()) {
            // llama-server's extension: json_object with a schema of its own.
            case "json_object" -> format.has("schema") ? schemaGrammar(format.get("schema"), "response_format.schema")
                    : Grammar.jsonObject();
            case "json_schema" -> schemaGrammar(format.path("json_schema").get("schema"),
                    "response_format.json_schema.schema");
            default -> null;
        };
    }

    private static Grammar schemaGrammar(JsonNode schema, String param) {
        if (schema == null || !schema.isObject()) {
            throw ApiException.badParameter(param, param + " must be a JSON Schema object");
        }
        try {
            return Grammar.jsonSchema(schema);
        } catch (GrammarException e) {
            throw ApiException.unsupported(param, "the schema cannot be served: " + e.getMessage());
        }
    }

    /** Chat's {@code logprobs} and {@code top_logprobs}, or completions' {@code logprobs: N}; -1 for none. */
    private static int logprobs(JsonNode body, boolean chat) {
        JsonNode logprobs = body.get("logprobs");
        if (chat) {
            JsonNode top = body.get("top_logprobs");
            boolean on = logprobs != null && logprobs.isBoolean() && logprobs.booleanValue();
            if (logprobs != null && !logprobs.isNull() && !logprobs.isBoolean()) {
                throw ApiException.badParameter("logprobs", "logprobs must be a boolean");
            }
            if (top != null && !top.isNull()) {
                if (!top.isIntegralNumber() || top.intValue() < 0 || top.intValue() > TokenLogprobs.MAX_TOP) {
                    throw ApiException.badParameter("top_logprobs", "top_logprobs must be an integer in [0, "
                            + TokenLogprobs.MAX_TOP + "]");
                }
                if (!on) {
                    throw ApiException.badParameter("top_logprobs", "top_logprobs needs logprobs: true");
                }
                return top.intValue();
            }
            return on ? 0 : -1;
        }
        if (logprobs == null || logprobs.isNull()) {
            return -1;
        }
        if (!logprobs.isIntegralNumber() || logprobs.intValue() < 0 || logprobs.intValue() > 5) {
            throw ApiException.badParameter("logprobs", "logprobs must be an integer in [0, 5]");
        }
        return logprobs.intValue();
    }

    private static final java.util.regex.Pattern FUNCTION_NAME = java.util.regex.Pattern.compile("[a-zA-Z0-9_-]{1,64}");

    /** The functions of {@code tools}, each as the JSON text templates get; none when tool_choice is none. */
    private static List<String> tools(JsonNode body) {
        JsonNode tools = body.get("tools");
        JsonNode choice = body.get("tool_choice");
        if (tools == null || tools.isNull() || tools.isEmpty()
                || choice != null && choice.isTextual() && choice.asText().equals("none")) {
            return List.of();
        }
        List<String> out = new ArrayList<>();
        java.util.Set<String> names = new java.util.HashSet<>();
        for (int i = 0; i < tools.size(); i++) {
            JsonNode tool = tools.get(i);
            String at = "tools[" + i + "]";
            if (!tool.isObject() || !"function".equals(tool.path("type").asText())) {
                throw ApiException.unsupported(at + ".type", "only tools of type function are supported");
            }
            JsonNode function = tool.get("function");
            if (function == null || !function.isObject()) {
                throw ApiException.badParameter(at + ".function", at + ".function must be an object");
            }
            String name = function.path("name").asText("");
            if (!FUNCTION_NAME.matcher(name).matches()) {
                throw ApiException.badParameter(at + ".function.name", at
                        + ".function.name must be 1 to 64 letters, digits, underscores or dashes");
            }
            if (!names.add(name)) {
                throw ApiException.badParameter(at + ".function.name", "two tools are named " + name);
            }
            JsonNode parameters = function.get("parameters");
            if (parameters != null && !parameters.isNull() && !parameters.isObject()) {
                throw ApiException.badParameter(at + ".function.parameters", at
                        + ".function.parameters must be a JSON Schema object");
            }
            out.add(tool.toString());
        }
        return List.copyOf(out);
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
            messages.add(new ChatMessage(mapped, content(m.get("content"), at + ".content"),
                    toolCalls(m, mapped, at), toolCallId(m, mapped, at)));
        }
        return messages;
    }

    /** An assistant turn's {@code tool_calls}: each {@code {id, type: function, function: {name, arguments}}}. */
    private static List<ToolCall> toolCalls(JsonNode m, String role, String at) {
        JsonNode calls = m.get("tool_calls");
        if (calls == null || calls.isNull()) {
            return List.of();
        }
        if (!role.equals("assistant") || !calls.isArray()) {
            throw ApiException.badParameter(at + ".tool_calls", "tool_calls must be an array, on an assistant message");
        }
        List<ToolCall> out = new ArrayList<>();
        for (int j = 0; j < calls.size(); j++) {
            JsonNode call = calls.get(j);
            String where = at + ".tool_calls[" + j + "]";
            JsonNode function = call.path("function");
            if (!call.path("id").isTextual() || !function.path("name").isTextual()
                    || !function.path("arguments").isTextual()) {
                throw ApiException.badParameter(where, where
                        + " needs an id, and a function with a name and arguments (a JSON string)");
            }
            try {
                if (!Replies.JSON.readTree(function.get("arguments").asText()).isObject()) {
                    throw ApiException.badParameter(where + ".function.arguments", "arguments must hold a JSON object");
                }
            } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
                throw ApiException.badParameter(where + ".function.arguments", "arguments are not JSON: "
                        + e.getOriginalMessage());
            }
            out.add(new ToolCall(call.get("id").asText(), function.get("name").asText(),
                    function.get("arguments").asText()));
        }
        return out;
    }

    /** A tool turn's {@code tool_call_id}, which it must have. */
    private static String toolCallId(JsonNode m, String role, String at) {
        JsonNode id = m.get("tool_call_id");
        if (!role.equals("tool")) {
            return null;
        }
        if (id == null || !id.isTextual()) {
            throw ApiException.badParameter(at + ".tool_call_id", "a tool message needs the tool_call_id it answers");
        }
        return id.asText();
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

    /** {@code n}, when the prompts times {@code n} stay within {@link #MAX_CHOICES}. */
    private static int checkedChoices(int n, int prompts) {
        if ((long) n * Math.max(1, prompts) > MAX_CHOICES) {
            throw ApiException.badParameter("n", "at most " + MAX_CHOICES + " choices in one request: " + prompts
                    + " prompts times n = " + n);
        }
        return n;
    }

    /** A completion's prompt: its text, or the token ids the client gave. */
    record Prompt(String text, int[] tokens) {}

    static final int MAX_PROMPTS = 8;

    /**
     * {@code prompt}: a string, token ids, or a list of either (each its own set of choices); a
     * list of one string is one prompt.
     */
    private static List<Prompt> prompts(JsonNode body) {
        JsonNode prompt = body.get("prompt");
        if (prompt == null || prompt.isNull()) {
            throw ApiException.badParameter("prompt", "prompt is required");
        }
        if (prompt.isTextual()) {
            return List.of(new Prompt(prompt.asText(), null));
        }
        if (!prompt.isArray() || prompt.isEmpty()) {
            throw ApiException.badParameter("prompt", "prompt must be a string, token ids, or a non-empty list of them");
        }
        if (prompt.get(0).isIntegralNumber()) {
            return List.of(new Prompt(null, tokenIds(prompt, "prompt")));
        }
        if (prompt.size() > MAX_PROMPTS) {
            throw ApiException.badParameter("prompt", "at most " + MAX_PROMPTS + " prompts in one request");
        }
        List<Prompt> prompts = new ArrayList<>();
        for (int i = 0; i < prompt.size(); i++) {
            JsonNode p = prompt.get(i);
            if (p.isTextual()) {
                prompts.add(new Prompt(p.asText(), null));
            } else if (p.isArray() && !p.isEmpty()) {
                prompts.add(new Prompt(null, tokenIds(p, "prompt[" + i + "]")));
            } else {
                throw ApiException.badParameter("prompt", "prompt[" + i + "] must be a string or token ids");
            }
        }
        return List.copyOf(prompts);
    }

    private static int[] tokenIds(JsonNode array, String param) {
        int[] ids = new int[array.size()];
        for (int i = 0; i < ids.length; i++) {
            JsonNode t = array.get(i);
            if (!t.isIntegralNumber() || !t.canConvertToInt() || t.intValue() < 0) {
                throw ApiException.badParameter("prompt", param + " must hold token ids (integers >= 0)");
            }
            ids[i] = t.intValue();
        }
        return ids;
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
