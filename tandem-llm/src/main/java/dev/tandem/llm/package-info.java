/**
 * Programs that run on tandem: the flagship workloads and what they need.
 *
 * <ul>
 *   <li>{@link dev.tandem.llm.reference.PagedAttentionWorkload}: multi-layer batched paged attention over
 *       ragged contexts, a token per {@code layersPerStep} layers;
 *   <li>{@link dev.tandem.llm.model.LlamaModel}: a Llama-style decoder (grouped-query attention, its
 *       matrices in the checkpoint's own type: f32, f16, bf16 or one of the GGUF block types) on a
 *       worker: its weights in frozen worker buffers ({@code WorkerWeights}, the loader's result),
 *       the tasks of one forward pass over a list of rows ({@code forward}) with their kernels
 *       ({@code LlamaKernels}), and the plain per-request program ({@code LlamaProgram}: one
 *       {@link dev.tandem.llm.model.LlamaRequest}, a batch of sequences fixed when it starts, with its own
 *       paged KV cache); its weights come through {@link dev.tandem.llm.model.LlamaWeights}: a GGUF file,
 *       a safetensors directory, or {@link dev.tandem.llm.reference.RandomWeights} for the benchmarks' and
 *       the demo's random shapes;
 *   <li>{@link dev.tandem.llm.Batcher}: continuous batching of many completions in one program,
 *       with a prefix-cached KV pool; its rooms (scheduler, block pool, step builder) are in the
 *       unexported {@code dev.tandem.llm.engine}, and {@link dev.tandem.llm.SequenceLimits} says when
 *       a generation ends. {@link dev.tandem.llm.LanguageModel} is the facade: its
 *       {@code generate} is a batch of one through a {@code Batcher};
 *   <li>{@link dev.tandem.llm.reference.ByteTokenizer}: bytes as tokens, decoded incrementally for display;
 *   <li>{@link dev.tandem.llm.reference.LlamaReference} and {@code PagedAttentionWorkload.reference()}: plain
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

import dev.tandem.llm.model.PagedAttention;
import dev.tandem.llm.reference.PagedAttentionWorkload;
