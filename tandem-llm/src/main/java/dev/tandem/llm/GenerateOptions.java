package dev.tandem.llm;

import dev.tandem.llm.grammar.Grammar;
import dev.tandem.llm.sampling.SamplerConfig;
import dev.tandem.llm.sampling.TokenLogprobs;
import java.util.List;

/**
 * What to generate: how many tokens at most, how to pick them, and what ends a completion
 * early. Immutable; each {@code withX} returns a copy.
 *
 * @param maxTokens tokens to generate at most (the stop token included); the completion ends with
 *                  {@link FinishReason#LENGTH} there
 * @param sampler   how tokens are picked
 * @param stop      strings that end the completion where they appear in its text (not included
 *                  in it), also when one is split across tokens
 * @param ignoreEos whether the model's end-of-sequence token is an ordinary token
 * @param grammar   when not null, the output keeps to it: each step masks the tokens it forbids
 *                  before the sampler chain, and the end of generation is allowed only where its
 *                  text is complete ({@link Grammar#jsonSchema}, {@link Grammar#jsonObject}, ...)
 * @param logprobs  -1 for none; else each {@link Completion.Delta} carries its token's
 *                  {@link TokenLogprobs} with this many alternatives (at most
 *                  {@link TokenLogprobs#MAX_TOP})
 */
public record GenerateOptions(int maxTokens, SamplerConfig sampler, List<String> stop, boolean ignoreEos,
        Grammar grammar, int logprobs) {

    public GenerateOptions {
        if (maxTokens < 1) {
            throw new IllegalArgumentException("maxTokens = " + maxTokens + " must be >= 1");
        }
        if (sampler == null) {
            throw new IllegalArgumentException("sampler must not be null");
        }
        stop = List.copyOf(stop);
        for (String s : stop) {
            if (s.isEmpty()) {
                throw new IllegalArgumentException("a stop string must not be empty");
            }
        }
        if (grammar != null && ignoreEos) {
            throw new IllegalArgumentException("a grammar and ignoreEos exclude each other: a constrained output ends"
                    + " with the end token where its grammar's text is complete");
        }
        if (logprobs < -1 || logprobs > TokenLogprobs.MAX_TOP) {
            throw new IllegalArgumentException("logprobs = " + logprobs + " must be in [-1, " + TokenLogprobs.MAX_TOP
                    + "] (-1: none)");
        }
    }

    /** Options without a grammar or logprobs. */
    public GenerateOptions(int maxTokens, SamplerConfig sampler, List<String> stop, boolean ignoreEos) {
        this(maxTokens, sampler, stop, ignoreEos, null, -1);
    }

    /** 128 tokens, greedy, no stop strings, stopping at EOS. */
    public static GenerateOptions defaults() {
        return new GenerateOptions(128, SamplerConfig.GREEDY, List.of(), false);
    }

    public GenerateOptions withMaxTokens(int value) {
        return new GenerateOptions(value, sampler, stop, ignoreEos, grammar, logprobs);
    }

    public GenerateOptions withSampler(SamplerConfig value) {
        return new GenerateOptions(maxTokens, value, stop, ignoreEos, grammar, logprobs);
    }

    public GenerateOptions withStop(List<String> value) {
        return new GenerateOptions(maxTokens, sampler, value, ignoreEos, grammar, logprobs);
    }

    public GenerateOptions withIgnoreEos(boolean value) {
        return new GenerateOptions(maxTokens, sampler, stop, value, grammar, logprobs);
    }

    /** Keeps the output in {@code value} (null: unconstrained). */
    public GenerateOptions withGrammar(Grammar value) {
        return new GenerateOptions(maxTokens, sampler, stop, ignoreEos, value, logprobs);
    }

    /** Each token's log-probabilities with {@code top} alternatives (-1: none; 0: the token's own only). */
    public GenerateOptions withLogprobs(int top) {
        return new GenerateOptions(maxTokens, sampler, stop, ignoreEos, grammar, top);
    }
}
