package dev.tandem.llm.chat;

import java.time.Clock;
import java.util.List;
import java.util.Map;

/**
 * Turns a conversation into the prompt text a model was trained on.
 *
 * <p>{@link #jinja} renders a model's own {@code tokenizer.chat_template} (GGUF metadata or
 * {@code tokenizer_config.json}) as Hugging Face does; {@link #plain} and {@link #completion} are the
 * fallbacks for a model that has none ({@link #forModel} picks). The text may begin with the BOS
 * token when the template writes {@code bos_token}: encode it without adding another.
 *
 * <p>Implementations are immutable and safe to use from several threads at once.
 */
public interface ChatTemplate {

    /**
     * The prompt for {@code messages}; with {@code addGenerationPrompt}, followed by the header of
     * the assistant turn the model is to write.
     *
     * @throws ChatTemplateException if the template fails or raises an exception of its own
     */
    default String render(List<ChatMessage> messages, boolean addGenerationPrompt) {
        return render(messages, addGenerationPrompt, Map.of());
    }

    /**
     * {@link #render(List, boolean)} with extra template variables, such as {@code enable_thinking}
     * for Qwen 3 and SmolLM3, or {@code date_string} for Llama 3.1. Names that the renderer sets
     * itself ({@code messages}, {@code add_generation_prompt}, {@code bos_token},
     * {@code eos_token}) cannot be overridden.
     */
    String render(List<ChatMessage> messages, boolean addGenerationPrompt, Map<String, ?> variables);

    /**
     * A Jinja chat template rendered with Hugging Face's settings; "today" is the system clock's.
     *
     * @throws ChatTemplateException on a syntax error in the tags (an expression's syntax error
     *     surfaces when it is rendered), naming the line
     */
    static ChatTemplate jinja(String source, String bosToken, String eosToken) {
        return jinja(source, bosToken, eosToken, Clock.systemDefaultZone());
    }

    /**
     * A Jinja chat template whose {@code strftime_now} and {@code date_string} read {@code clock}.
     *
     * @throws ChatTemplateException on a syntax error, naming the line
     */
    static ChatTemplate jinja(String source, String bosToken, String eosToken, Clock clock) {
        return new JinjaChatTemplate(source, bosToken, eosToken, clock);
    }

    /**
     * The fallback for a chat model without a template: a line {@code role: content} per message,
     * and {@code assistant:} as the generation prompt.
     */
    static ChatTemplate plain() {
        return PlainChatTemplate.ROLE_LINES;
    }

    /**
     * The fallback for a base (completion) model: the messages' contents concatenated in order,
     * with nothing around them; the generation prompt adds nothing.
     */
    static ChatTemplate completion() {
        return PlainChatTemplate.COMPLETION;
    }

    /**
     * The model's template when it has one ({@code source} neither null nor blank), else
     * {@link #plain()}.
     */
    static ChatTemplate forModel(String source, String bosToken, String eosToken) {
        if (source == null || source.isBlank()) {
            return plain();
        }
        return jinja(source, bosToken, eosToken);
    }
}
