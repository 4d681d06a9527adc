package dev.tandem.llm;

import java.util.Locale;

/** Why a completion ended, in OpenAI's words. */
public enum FinishReason {
    /** The model's end-of-sequence token, or a stop string. */
    STOP,
    /** {@link GenerateOptions#maxTokens()}, or the context is full. */
    LENGTH,
    /** Cancelled by its caller, past its deadline, or failed: see the outcome. */
    ABORTED;

    /** {@code "stop"}, {@code "length"} or {@code "aborted"}. */
    public String wire() {
        return name().toLowerCase(Locale.ROOT);
    }
}
