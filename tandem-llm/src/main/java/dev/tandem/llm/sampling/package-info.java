/**
 * Picking tokens and turning them into text, for one sequence at a time.
 *
 * <ul>
 *   <li>{@link dev.tandem.llm.sampling.Sampler}: llama.cpp's default chain (penalties, top-k,
 *       top-p, min-p, temperature, draw) configured by {@link dev.tandem.llm.sampling.SamplerConfig},
 *       allocation-free once built, so it can run inside a device task (the model's {@code sample}
 *       kernel) on a sequence's f32 logits in a {@link java.lang.foreign.MemorySegment} or a
 *       {@code float[]}; token {@code k}'s draw depends on {@code (seed, k)} only, so a sequence
 *       gives the same text alone or batched;
 *   <li>{@code dev.tandem.llm.reference.SamplerReference}: the same chain sorting the whole
 *       vocabulary, the oracle of the sampler's property tests;
 *   <li>{@link dev.tandem.llm.sampling.TextStreamer}: on the host, token bytes to text deltas that are
 *       valid UTF-8 at every token, ending at stop strings.
 * </ul>
 */
package dev.tandem.llm.sampling;
