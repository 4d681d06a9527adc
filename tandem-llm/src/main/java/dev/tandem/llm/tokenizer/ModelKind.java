package dev.tandem.llm.tokenizer;

/** The tokenizer algorithm a vocabulary is for, named as GGUF's {@code tokenizer.ggml.model} names it. */
public enum ModelKind {
    /** SentencePiece-style: score-driven merges over characters, byte fallback ({@code llama}). */
    SPM("llama"),
    /** Byte-level BPE: pre-tokenizer words, merges by rank over byte characters ({@code gpt2}). */
    BPE("gpt2");

    private final String ggufName;

    ModelKind(String ggufName) {
        this.ggufName = ggufName;
    }

    /** The name GGUF files give this kind. */
    public String ggufName() {
        return ggufName;
    }

    /**
     * The kind GGUF's {@code tokenizer.ggml.model} names.
     *
     * @throws IllegalArgumentException naming an unknown kind
     */
    public static ModelKind fromGgufName(String name) {
        for (ModelKind kind : values()) {
            if (kind.ggufName.equals(name)) {
                return kind;
            }
        }
        throw new IllegalArgumentException("unknown tokenizer model '" + name + "'; supported: llama, gpt2");
    }
}
