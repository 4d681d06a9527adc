/**
 * Tokenizers that match llama.cpp id for id: SentencePiece-style ({@code llama}) and byte-level BPE
 * ({@code gpt2}, with the GPT-2, Llama 3 and Qwen 2 pre-tokenizers), over a {@link
 * dev.tandem.llm.tokenizer.Vocabulary} read from GGUF metadata or a Hugging Face {@code tokenizer.json}.
 *
 * <pre>{@code
 * Tokenizer tokenizer = Tokenizer.of(dev.tandem.llm.gguf.GgufVocabulary.read(Path.of("model.gguf")));
 * int[] ids = tokenizer.encode("Hello world", true, false);   // BOS as the vocabulary asks, specials as text
 * String text = tokenizer.decode(ids);
 * byte[] piece = tokenizer.tokenBytes(ids[1]);                // raw bytes, for streaming UTF-8
 * }</pre>
 */
package dev.tandem.llm.tokenizer;
