/**
 * Hugging Face checkpoints: {@link dev.tandem.llm.safetensors.SafetensorsFile} reads (memory-maps)
 * one safetensors file, {@code SafetensorsWriter} (the reference package, for tests and benches) writes one, and
 * {@link dev.tandem.llm.safetensors.SafetensorsModel} opens a model directory ({@code config.json}
 * and one or more safetensors files) as the {@link dev.tandem.llm.model.LlamaWeights} of a Llama-family
 * decoder. Errors are {@link dev.tandem.llm.safetensors.SafetensorsException}s naming the file and
 * what is wrong, in one line.
 */
package dev.tandem.llm.safetensors;
