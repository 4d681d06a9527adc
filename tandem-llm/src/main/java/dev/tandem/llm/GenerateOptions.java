package dev.tandem.llm;

import dev.tandem.llm.sampling.SamplerConfig;
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
 */
public record GenerateOptions(int maxTokens, SamplerConfig sampler, List<String> stop, boolean ignoreEos) {

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
    }

    /** 128 tokens, greedy, no stop strings, stopping at EOS. */
    public static GenerateOptions defaults() {
        return new GenerateOptions(128, SamplerConfig.GREEDY, List.of(), false);
    }

    public GenerateOptions withMaxTokens(int value) {
        return new GenerateOptions(value, sampler, stop, ignoreEos);
    }

    public GenerateOptions withSampler(SamplerConfig value) {
        return new GenerateOptions(maxTokens, value, stop, ignoreEos);
    }

    public GenerateOptions withStop(List<String> value) {
        return new GenerateOptions(maxTokens, sampler, value, ignoreEos);
    }

    public GenerateOptions withIgnoreEos(boolean value) {
        return new GenerateOptions(maxTokens, sampler, stop, value);
    }
}
