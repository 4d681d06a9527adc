package dev.tandem.llm.model;

/**
 * Which pairs of a head's values the rotary embedding rotates together.
 */
public enum RopeStyle {
    /**
     * Adjacent pairs {@code (x[2i], x[2i+1])}: llama.cpp's "normal" rope, what Llama-architecture
     * GGUF files are converted for (their query and key rows are permuted to match).
     */
    INTERLEAVED,
    /**
     * Halves {@code (x[i], x[i + rotated/2])}: GPT-NeoX's rope, used by Qwen2, Qwen3 and by Hugging
     * Face Llama checkpoints as published (rotate_half).
     */
    NEOX
}
