package dev.tandem.llm.tokenizer;

/** The type of a vocabulary entry, with the codes of GGUF's {@code tokenizer.ggml.token_type}. */
public enum TokenType {
    UNDEFINED(0),
    NORMAL(1),
    /** The unknown token, {@code <unk>}. */
    UNKNOWN(2),
    /** Markers such as BOS, EOS and chat delimiters: split out of text only when asked to parse specials. */
    CONTROL(3),
    /** Added tokens: always split out of text as a whole, never merged into. */
    USER_DEFINED(4),
    UNUSED(5),
    /** SentencePiece byte fallback, {@code <0xNN>}. */
    BYTE(6);

    private final int code;

    TokenType(int code) {
        this.code = code;
    }

    public int code() {
        return code;
    }

    /** The type of a GGUF code; codes past the known ones are {@link #UNDEFINED}, as llama.cpp reads them. */
    public static TokenType ofCode(int code) {
        return code >= 0 && code < values().length ? values()[code] : UNDEFINED;
    }

    /** Split out of text before the algorithm runs (when parsing specials, for the control ones). */
    boolean special() {
        return this == CONTROL || this == USER_DEFINED || this == UNKNOWN;
    }
}
