package dev.tandem.llm.safetensors;

/**
 * A safetensors file or Hugging Face model directory that cannot be read: its message names the
 * file and what is wrong with it, in one line (a header that does not fit the file, a tensor out
 * of bounds, overlapping or misaligned, an unsupported dtype, a missing {@code config.json} field).
 */
public final class SafetensorsException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public SafetensorsException(String message) {
        super(message);
    }

    public SafetensorsException(String message, Throwable cause) {
        super(message, cause);
    }
}
