package dev.tandem.llm.gguf;

/**
 * A GGUF file that cannot be read: its message names the file and what is wrong with it, in one
 * line (a truncated file, a wrong magic, an unsupported version, a count or a tensor that does
 * not fit the file, a missing key).
 */
public final class GgufException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public GgufException(String message) {
        super(message);
    }

    public GgufException(String message, Throwable cause) {
        super(message, cause);
    }
}
