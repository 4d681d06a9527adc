package dev.tandem.llm.chat;

import java.util.List;

/**
 * One turn of a conversation, as chat templates see it: {@code message.role},
 * {@code message.content}, and for tool use {@code message.tool_calls} (an assistant turn's
 * calls), {@code message.tool_call_id} and {@code message.name} (a {@code tool} turn's answer).
 *
 * @param role       {@code system}, {@code user}, {@code assistant} or {@code tool} (templates may
 *                   know others); never blank
 * @param content    the text of the turn, possibly empty
 * @param toolCalls  the calls an assistant turn makes, empty for none
 * @param toolCallId the call a {@code tool} turn answers, or null
 */
public record ChatMessage(String role, String content, List<ToolCall> toolCalls, String toolCallId) {

    public ChatMessage {
        if (role == null || role.isBlank()) {
            throw new IllegalArgumentException("role must not be blank");
        }
        if (content == null) {
            throw new IllegalArgumentException("content of a " + role + " message must not be null");
        }
        toolCalls = toolCalls == null ? List.of() : List.copyOf(toolCalls);
    }

    /** A turn of text alone. */
    public ChatMessage(String role, String content) {
        this(role, content, List.of(), null);
    }

    public static ChatMessage system(String content) {
        return new ChatMessage("system", content);
    }

    public static ChatMessage user(String content) {
        return new ChatMessage("user", content);
    }

    public static ChatMessage assistant(String content) {
        return new ChatMessage("assistant", content);
    }
}
