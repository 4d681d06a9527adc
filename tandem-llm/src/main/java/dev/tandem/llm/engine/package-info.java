/**
 * The serving engine's rooms, behind the {@link dev.tandem.llm.Batcher} facade: the
 * {@link dev.tandem.llm.engine.Scheduler} (who takes part in each step, with which rows; a plain
 * function of its state), the {@link dev.tandem.llm.engine.KvBlockPool} (KV blocks with
 * reference counts and content identity, for prefix caching), the
 * {@link dev.tandem.llm.engine.Sequence} (one sequence's tokens, blocks and progress), the
 * {@link dev.tandem.llm.engine.StepPlan}, the {@link dev.tandem.llm.engine.StepBuilder} (a plan
 * into tasks) and the {@link dev.tandem.llm.engine.ForwardPass} seam to the model.
 *
 * <p>Not exported. It knows neither the facade nor the model: the arrow goes from
 * {@code dev.tandem.llm} to here, never back (ArchUnit-checked).
 */
package dev.tandem.llm.engine;
