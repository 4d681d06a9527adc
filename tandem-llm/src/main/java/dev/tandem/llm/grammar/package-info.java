/**
 * Constrained decoding: grammars over bytes ({@link dev.tandem.llm.grammar.Grammar}: JSON Schema,
 * any JSON, literals and their sequences and alternatives), compiled for a model's vocabulary
 * ({@link dev.tandem.llm.grammar.GrammarVocabulary#compile} → {@link dev.tandem.llm.grammar.TokenGrammar})
 * into token masks that a {@link dev.tandem.llm.grammar.GrammarMatcher} applies to one sequence's
 * logits in its sample task, before any other sampler.
 */
package dev.tandem.llm.grammar;
