package dev.tandem.llm.chat;

import java.util.List;
import java.util.Map;

/** The two fallbacks of {@link ChatTemplate}: role lines, and bare concatenation for base models. */
enum PlainChatTemplate implements ChatTemplate {
    ROLE_LINES {
        @Override
        public String render(List<ChatMessage> messages, boolean addGenerationPrompt, Map<String, ?> variables) {
            StringBuilder text = new StringBuilder();
            for (ChatMessage message : checked(messages)) {
                text.append(message.role()).append(": ").append(message.content()).append('\n');
            }
            if (addGenerationPrompt) {
                text.append("assistant:");
            }
            return text.toString();
        }
    },
    COMPLETION {
        @Override
        public String render(List<ChatMessage> messages, boolean addGenerationPrompt, Map<String, ?> variables) {
            StringBuilder text = new StringBuilder();
            for (ChatMessage message : checked(messages)) {
                text.append(message.content());
            }
            return text.toString();
        }
    };

    static List<ChatMessage> checked(List<ChatMessage> messages) {
        if (messages == null) {
            throw new IllegalArgumentException("messages must not be null");
        }
        for (int i = 0; i < messages.size(); i++) {
            if (messages.get(i) == null) {
                throw new IllegalArgumentException("message " + i + " is null");
            }
        }
        return messages;
    }
}
