package dev.tandem.llm;

import dev.tandem.Token;
import dev.tandem.llm.sampling.SamplerConfig;
import java.util.Arrays;
import java.util.function.Predicate;

/**
 * One request to a {@link LlamaModel}: a batch of sequences decoded together, each with its own
 * prompt (so its own context length), step by step. Step 0 reads every prompt (prefill) and
 * yields each sequence's first token; step {@code k} yields token {@code k}.
 *
 * <p>A step's token holds one little-endian int per sequence ({@link Token#asInts()}): the token
 * of that sequence, or {@link #FINISHED} once the sequence has yielded {@link #stopToken()}. With
 * {@link #withLogits(boolean) logits}, the ints are followed by each sequence's logits of that
 * step as f32 ({@code [batch, vocab]}), for checks.
 *
 * <p>Limits ({@link LlamaModel#check} names the one broken): every prompt has at least one token,
 * each in {@code [0, vocab)}, and {@code prompt length + maxTokens <= contextLength}.
 *
 * @param prompts    per sequence, its prompt tokens
 * @param maxTokens  steps of the request: tokens per sequence, the stop token included
 * @param stopToken  a token that ends its sequence, or -1 for none
 * @param sampling   how tokens are picked by the device's nucleus kernel (temperature, top-p, seed)
 * @param logits     whether each token carries the step's logits too
 * @param sampler    when not null, how tokens are picked instead of {@code sampling}: the full
 *                   {@link dev.tandem.llm.sampling.Sampler} chain (penalties, top-k, top-p, min-p,
 *                   temperature, seed), one sampler per sequence fed its prompt; sequence {@code b}
 *                   draws with seed {@code sampler.seed() + b}
 */
public record LlamaRequest(int[][] prompts, int maxTokens, int stopToken, Sampling sampling, boolean logits,
        SamplerConfig sampler) {

    /** The value of a sequence in a step after the step where it yielded its stop token. */
    public static final int FINISHED = -1;

    public LlamaRequest {
        if (prompts == null || prompts.length == 0) {
            throw new IllegalArgumentException("prompts must hold at least one sequence");
        }
        prompts = prompts.clone();
        for (int b = 0; b < prompts.length; b++) {
            if (prompts[b] == null || prompts[b].length == 0) {
                throw new IllegalArgumentException("prompt " + b + " is empty; a prompt needs at least one token");
            }
            prompts[b] = prompts[b].clone();
        }
        Checks.positive("maxTokens", maxTokens);
        if (sampling == null) {
            throw new IllegalArgumentException("sampling must not be null");
        }
    }

    /** One sequence, greedy, no stop token. */
    public static LlamaRequest of(int[] prompt, int maxTokens) {
        return new LlamaRequest(new int[][] {prompt}, maxTokens, -1, Sampling.GREEDY, false, null);
    }

    /** A batch of sequences, greedy, no stop token. */
    public static LlamaRequest batch(int[][] prompts, int maxTokens) {
        return new LlamaRequest(prompts, maxTokens, -1, Sampling.GREEDY, false, null);
    }

    public LlamaRequest withStopToken(int value) {
        return new LlamaRequest(prompts, maxTokens, value, sampling, logits, sampler);
    }

    public LlamaRequest withSampling(Sampling value) {
        return new LlamaRequest(prompts, maxTokens, stopToken, value, logits, sampler);
    }

    public LlamaRequest withLogits(boolean value) {
        return new LlamaRequest(prompts, maxTokens, stopToken, sampling, value, sampler);
    }

    /** Picks tokens with the full sampler chain of {@code value} (null: the nucleus kernel of {@link #sampling()}). */
    public LlamaRequest withSampler(SamplerConfig value) {
        return new LlamaRequest(prompts, maxTokens, stopToken, sampling, logits, value);
    }

    public LlamaRequest withMaxTokens(int value) {
        return new LlamaRequest(prompts, value, stopToken, sampling, logits, sampler);
    }

    /**
     * Checks that this request fits a model of {@code config}.
     *
     * @throws IllegalArgumentException naming the first limit broken
     */
    public void check(LlamaConfig config) {
        int context = config.contextLength();
        for (int b = 0; b < prompts.length; b++) {
            int length = prompts[b].length;
            String prompt = prompts.length == 1 ? "prompt" : "prompt " + b;
            if (length > context) {
                throw new IllegalArgumentException(prompt + " length = " + length + " must be <= contextLength = "
                        + context);
            }
            if (maxTokens > context - length) {
                throw new IllegalArgumentException("maxTokens = " + maxTokens + " must be <= contextLength - " + prompt
                        + " length = " + (context - length));
            }
            for (int i = 0; i < length; i++) {
                int token = prompts[b][i];
                if (token < 0 || token >= config.vocab()) {
                    throw new IllegalArgumentException(prompt + " token " + i + " = " + token
                            + " must be in [0, vocab = " + config.vocab() + ")");
                }
            }
        }
        if (stopToken >= config.vocab() || stopToken < -1) {
            throw new IllegalArgumentException("stopToken = " + stopToken + " must be -1 (none) or in [0, vocab = "
                    + config.vocab() + ")");
        }
    }

    public int batch() {
        return prompts.length;
    }

    @Override
    public int[][] prompts() {
        int[][] copy = prompts.clone();
        for (int b = 0; b < copy.length; b++) {
            copy[b] = copy[b].clone();
        }
        return copy;
    }

    public int[] prompt(int sequence) {
        return prompts[sequence].clone();
    }

    public int promptLength(int sequence) {
        return prompts[sequence].length;
    }

    /**
     * For {@link dev.tandem.RequestOptions#stopWhen}: true once every sequence has yielded its
     * stop token (the step's values are all the stop token or {@link #FINISHED}); never without
     * a stop token.
     */
    public Predicate<Token> stopWhen() {
        int stop = stopToken;
        int batch = prompts.length;
        return token -> {
            if (stop < 0) {
                return false;
            }
            int[] values = token.asInts();
            for (int b = 0; b < batch; b++) {
                if (values[b] != stop && values[b] != FINISHED) {
                    return false;
                }
            }
            return true;
        };
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof LlamaRequest r && Arrays.deepEquals(prompts, r.prompts) && maxTokens == r.maxTokens
                && stopToken == r.stopToken && sampling.equals(r.sampling) && logits == r.logits
                && java.util.Objects.equals(sampler, r.sampler);
    }

    @Override
    public int hashCode() {
        return Arrays.deepHashCode(prompts) * 31 + maxTokens;
    }

    @Override
    public String toString() {
        return "LlamaRequest[batch=" + prompts.length + ", maxTokens=" + maxTokens + ", stopToken=" + stopToken
                + ", sampling=" + (sampler != null ? sampler : sampling) + ", logits=" + logits + "]";
    }
}
