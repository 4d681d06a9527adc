package dev.tandem.llm.chat;

/**
 * One turn of a conversation, as chat templates see it: {@code message.role} and
 * {@code message.content} (or {@code message['role']}).
 *
 * @param role    {@code system}, {@code user} or {@code assistant} (templates may know others, such
 *                as {@code tool}); never blank
 * @param content the text of the turn, possibly empty
 */
public record ChatMessage(String role, String content) {

    public ChatMessage {
        if (role == null || role.isBlank()) {
            throw new IllegalArgumentException("role must not be blank");
        }
        if (content == null) {
            throw new IllegalArgumentException("content of a " + role + " message must not be null");
        }
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
