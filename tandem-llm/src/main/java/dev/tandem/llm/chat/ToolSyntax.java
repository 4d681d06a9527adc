package dev.tandem.llm.chat;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * How a model family writes tool calls in its reply, and how to read them back. The family is
 * told by its chat template, which teaches the model the syntax:
 *
 * <ul>
 *   <li>{@link #HERMES} (Qwen 2.5, Qwen 3, Hermes, SmolLM3): each call as
 *       {@code <tool_call>{"name": …, "arguments": {…}}</tool_call>};</li>
 *   <li>{@link #MISTRAL}: {@code [TOOL_CALLS][{"name": …, "arguments": {…}}, …]};</li>
 *   <li>{@link #LLAMA3} (Llama 3.1, 3.2): the whole reply is {@code {"name": …, "parameters": {…}}},
 *       optionally after {@code <|python_tag|>}, several separated by {@code ;};</li>
 *   <li>{@link #GENERIC} (a model whose template knows no tools): the whole reply is
 *       {@code {"name": …, "arguments": {…}}}, as the tool instructions tandem adds ask.</li>
 * </ul>
 *
 * A reply that does not hold a well-formed call in its family's syntax is text: a call whose
 * JSON does not parse, or names no function, is left in the content rather than guessed at.
 */
public enum ToolSyntax {
    HERMES("<tool_call>"),
    MISTRAL("[TOOL_CALLS]"),
    LLAMA3("{"),
    GENERIC("{");

    private static final ObjectMapper JSON = new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
    private static final Pattern HERMES_CALL = Pattern.compile("<tool_call>\\s*(.*?)\\s*</tool_call>", Pattern.DOTALL);

    private final String opening;

    ToolSyntax(String opening) {
        this.opening = opening;
    }

    /** The syntax the template {@code source} teaches; {@link #GENERIC} for none or no template. */
    public static ToolSyntax of(String source) {
        if (source == null) {
            return GENERIC;
        }
        if (source.contains("<tool_call>")) {
            return HERMES;
        }
        if (source.contains("[TOOL_CALLS]")) {
            return MISTRAL;
        }
        if (source.contains("<|python_tag|>") || source.contains("\"parameters\": dictionary of argument name")) {
            return LLAMA3;
        }
        return GENERIC;
    }

    /**
     * The grammar of a reply that is exactly one call, in this syntax, of one of {@code tools}
     * (each the JSON text of {@code {"type": "function", "function": {"name", "parameters"}}}),
     * or of the one named {@code only} when it is not null: a forced call ({@code tool_choice}
     * {@code required} or a named function). A function without parameters takes an object.
     *
     * @throws dev.tandem.llm.grammar.GrammarException when a function's parameters cannot be compiled
     */
    public dev.tandem.llm.grammar.Grammar forcedCall(List<String> tools, String only) {
        List<dev.tandem.llm.grammar.Grammar> calls = new ArrayList<>();
        for (String tool : tools) {
            JsonNode function = tree(tool).path("function");
            String name = function.path("name").asText();
            if (only != null && !only.equals(name)) {
                continue;
            }
            JsonNode parameters = function.get("parameters");
            dev.tandem.llm.grammar.Grammar arguments = parameters == null || parameters.isNull()
                    ? dev.tandem.llm.grammar.Grammar.jsonObject()
                    : dev.tandem.llm.grammar.Grammar.jsonSchema(parameters);
            String key = this == LLAMA3 ? "parameters" : "arguments";
            calls.add(dev.tandem.llm.grammar.Grammar.sequence(
                    dev.tandem.llm.grammar.Grammar.literal("{\"name\": " + JSON.valueToTree(name) + ", \"" + key + "\": "),
                    arguments, dev.tandem.llm.grammar.Grammar.literal("}")));
        }
        if (calls.isEmpty()) {
            throw new IllegalArgumentException("no tool named " + only);
        }
        dev.tandem.llm.grammar.Grammar one = dev.tandem.llm.grammar.Grammar.anyOf(calls);
        return switch (this) {
            case HERMES -> dev.tandem.llm.grammar.Grammar.sequence(dev.tandem.llm.grammar.Grammar.literal(
                    "<tool_call>\n"), one, dev.tandem.llm.grammar.Grammar.literal("\n</tool_call>"));
            case MISTRAL -> dev.tandem.llm.grammar.Grammar.sequence(dev.tandem.llm.grammar.Grammar.literal(
                    "[TOOL_CALLS]["), one, dev.tandem.llm.grammar.Grammar.literal("]"));
            case LLAMA3, GENERIC -> one;
        };
    }

    /** What a reply says: its text, and the calls it makes (empty when it makes none). */
    public record Reply(String content, List<ToolCall> calls) {}

    /**
     * Whether a reply that begins with {@code text} may be (or become) a tool call, so that a
     * stream holds it back instead of sending it as content.
     */
    public boolean mayStartCall(String text) {
        String head = stripLeading(text);
        if (this == LLAMA3 && head.startsWith("<|python_tag|>")) {
            return true;
        }
        String tag = opening;
        if (this == HERMES) {
            int at = text.indexOf(tag);
            if (at >= 0) {
                return true;
            }
            // A partial tag at the end of the text may still become one.
            for (int k = Math.min(tag.length() - 1, text.length()); k > 0; k--) {
                if (text.endsWith(tag.substring(0, k))) {
                    return true;
                }
            }
            return false;
        }
        return head.isEmpty() || head.startsWith(tag) || tag.startsWith(head);
    }

    /** Reads {@code reply} in this syntax; ids for its calls come from {@code ids}. */
    public Reply parse(String reply, Supplier<String> ids) {
        List<ToolCall> calls = new ArrayList<>();
        switch (this) {
            case HERMES -> {
                Matcher m = HERMES_CALL.matcher(reply);
                StringBuilder content = new StringBuilder();
                int last = 0;
                while (m.find()) {
                    ToolCall call = call(m.group(1), "arguments", ids);
                    if (call == null) {
                        return new Reply(reply, List.of());
                    }
                    calls.add(call);
                    content.append(reply, last, m.start());
                    last = m.end();
                }
                content.append(reply.substring(last));
                return new Reply(calls.isEmpty() ? reply : content.toString().strip(), List.copyOf(calls));
            }
            case MISTRAL -> {
                int at = reply.indexOf(opening);
                if (at < 0) {
                    return new Reply(reply, List.of());
                }
                JsonNode array = tree(reply.substring(at + opening.length()).strip());
                if (array == null || !array.isArray() || array.isEmpty()) {
                    return new Reply(reply, List.of());
                }
                for (JsonNode item : array) {
                    ToolCall call = call(item, "arguments", ids);
                    if (call == null) {
                        return new Reply(reply, List.of());
                    }
                    calls.add(call);
                }
                return new Reply(reply.substring(0, at).strip(), List.copyOf(calls));
            }
            default -> {
                String body = stripLeading(reply);
                if (this == LLAMA3 && body.startsWith("<|python_tag|>")) {
                    body = body.substring("<|python_tag|>".length());
                }
                String key = this == LLAMA3 ? "parameters" : "arguments";
                for (String part : this == LLAMA3 ? body.split(";(?=\\s*\\{)") : new String[] {body}) {
                    ToolCall call = call(part.strip(), key, ids);
                    if (call == null) {
                        return new Reply(reply, List.of());
                    }
                    calls.add(call);
                }
                return new Reply("", List.copyOf(calls));
            }
        }
    }

    private static ToolCall call(String json, String argumentsKey, Supplier<String> ids) {
        JsonNode node = tree(json);
        return node == null ? null : call(node, argumentsKey, ids);
    }

    private static ToolCall call(JsonNode node, String argumentsKey, Supplier<String> ids) {
        if (!node.isObject() || !node.path("name").isTextual() || node.path("name").asText().isBlank()) {
            return null;
        }
        JsonNode arguments = node.has(argumentsKey) ? node.get(argumentsKey) : node.get("arguments");
        if (arguments == null || arguments.isNull()) {
            arguments = JSON.createObjectNode();
        }
        if (arguments.isTextual()) {
            arguments = tree(arguments.asText()); // some models write the arguments as a JSON string
        }
        if (arguments == null || !arguments.isObject()) {
            return null;
        }
        String id = node.path("id").isTextual() ? node.get("id").asText() : ids.get();
        return new ToolCall(id, node.get("name").asText(), arguments.toString());
    }

    private static JsonNode tree(String json) {
        try {
            return JSON.readTree(json);
        } catch (JsonProcessingException e) {
            return null;
        }
    }

    private static String stripLeading(String text) {
        return text.stripLeading();
    }
}
