package dev.tandem.llm.chat;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The tools a chat offers, as chat templates see them (the {@code tools} variable: a list of
 * {@code {"type": "function", "function": {"name", "description", "parameters"}}}), and the
 * instructions a model whose template knows no tools gets instead.
 */
public final class ToolDefinitions {
    private static final ObjectMapper JSON = new ObjectMapper();

    private ToolDefinitions() {}

    /** JSON text as the maps, lists and scalars a template reads. */
    static Object parse(String json) {
        try {
            return JSON.readValue(json, Object.class);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("not JSON: " + e.getOriginalMessage());
        }
    }

    /**
     * The {@code tools} variable of a template: each tool as OpenAI's request gives it
     * (JSON text of {@code {"type": "function", "function": {…}}}).
     */
    public static List<Object> variable(List<String> tools) {
        return tools.stream().map(ToolDefinitions::parse).toList();
    }

    /**
     * For a model whose template knows no tools: a system turn that lists them (JSON) and asks
     * for a call as {@link ToolSyntax#GENERIC} reads it.
     */
    public static String instructions(List<String> tools) {
        StringBuilder text = new StringBuilder("You can call these functions:\n");
        for (String tool : tools) {
            text.append(tool).append('\n');
        }
        return text.append("To call one, reply with only a JSON object {\"name\": function name, \"arguments\": "
                + "object of its arguments}; otherwise reply in plain text.").toString();
    }

    /** The template variables for {@code tools}. */
    public static Map<String, Object> variables(List<String> tools) {
        Map<String, Object> variables = new LinkedHashMap<>();
        variables.put("tools", variable(tools));
        return variables;
    }
}
