package dev.tandem.llm.chat;

/**
 * One call of a tool (a function) that an assistant turn makes.
 *
 * @param id        the call's id, which the {@code tool} message answering it names
 * @param name      the function's name
 * @param arguments the arguments, as the text of a JSON object
 */
public record ToolCall(String id, String name, String arguments) {

    public ToolCall {
        if (id == null || name == null || name.isBlank() || arguments == null) {
            throw new IllegalArgumentException("a tool call needs an id, a name and arguments");
        }
    }
}
