package dev.tandem.llm.chat;

/**
 * A chat template that cannot be used: a syntax error (thrown when the template is built), an
 * error while rendering, or the template's own {@code raise_exception(message)}. The message is one
 * line and names the template's line where Jinja reported one.
 */
public final class ChatTemplateException extends RuntimeException {

    private final String raised;

    ChatTemplateException(String message, String raised) {
        super(message);
        this.raised = raised;
    }

    /** The message the template passed to {@code raise_exception}, or null for any other error. */
    public String raisedMessage() {
        return raised;
    }
}
