/**
 * Programs that run on tandem: the flagship workloads and what they need.
 *
 * <ul>
 *   <li>{@link dev.tandem.llm.PagedAttentionWorkload}: multi-layer batched paged attention over
 *       ragged contexts, a token per {@code layersPerStep} layers;
 *   <li>{@link dev.tandem.llm.LlamaModel}: a Llama-style decoder (grouped-query attention, f32 or
 *       q8_0 weights) whose steps decode a batch of sequences, with a paged KV cache per request;
 *       its weights come through {@link dev.tandem.llm.LlamaWeights} ({@link
 *       dev.tandem.llm.RandomWeights} today);
 *   <li>{@link dev.tandem.llm.ByteTokenizer}: bytes as tokens, decoded incrementally for display;
 *   <li>{@link dev.tandem.llm.LlamaReference} and {@code PagedAttentionWorkload.reference()}: plain
 *       loops in double that share no code with the kernels, the oracles of the golden tests and
 *       of {@code tandem demo --check}.
 * </ul>
 *
 * <p>Both programs build their attention with one task builder ({@code PagedAttention}), and wrap
 * the kernels of {@code dev.tandem.kernels} as {@link dev.tandem.Kernel}s whose regions are
 * exactly what each task reads and writes; the runtime infers every dependency from them. This
 * package uses only the public API of the core ({@code dev.tandem}) and never prints.
 */
package dev.tandem.llm;
