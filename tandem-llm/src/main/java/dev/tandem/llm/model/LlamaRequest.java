package dev.tandem.llm.model;

import dev.tandem.Token;
import dev.tandem.llm.grammar.TokenGrammar;
import dev.tandem.llm.sampling.SamplerConfig;
import dev.tandem.llm.sampling.TokenLogprobs;
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
 * step as f32 ({@code [batch, vocab]}), for checks. With {@link #withLogprobs(int) logprobs},
 * the ints are followed first by one {@link TokenLogprobs} record per sequence, each
 * {@link TokenLogprobs#bytes bytes(topLogprobs)} long ({@link #logprobsAt(int)}), then the logits.
 *
 * <p>Limits ({@link LlamaModel#check} names the one broken): every prompt has at least one token,
 * each in {@code [0, vocab)}, and {@code prompt length + maxTokens <= contextLength}.
 *
 * @param prompts    per sequence, its prompt tokens
 * @param maxTokens  steps of the request: tokens per sequence, the stop token included
 * @param stopToken  a token that ends its sequence, or -1 for none
 * @param logits     whether each token carries the step's logits too
 * @param sampler    how tokens are picked: the {@link dev.tandem.llm.sampling.Sampler} chain
 *                   (penalties, top-k, top-p, min-p, temperature, seed), one sampler per sequence
 *                   fed its prompt; sequence {@code b} draws with seed {@code sampler.seed() + b}
 * @param grammar    when not null, the grammar every sequence's tokens keep to (each sequence with
 *                   a matcher of its own), applied in the sample task before the sampler chain
 * @param topLogprobs -1 for none, else each token carries its {@link TokenLogprobs} with this many
 *                   alternatives
 */
public record LlamaRequest(int[][] prompts, int maxTokens, int stopToken, boolean logits, SamplerConfig sampler,
        TokenGrammar grammar, int topLogprobs) {

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
        if (sampler == null) {
            throw new IllegalArgumentException("sampler must not be null");
        }
        if (topLogprobs < -1 || topLogprobs > TokenLogprobs.MAX_TOP) {
            throw new IllegalArgumentException("topLogprobs = " + topLogprobs + " must be in [-1, "
                    + TokenLogprobs.MAX_TOP + "] (-1: none)");
        }
    }


    /** One sequence, greedy, no stop token. */
    public static LlamaRequest of(int[] prompt, int maxTokens) {
        return new LlamaRequest(new int[][] {prompt}, maxTokens, -1, false, SamplerConfig.GREEDY, null, -1);
    }

    /** A batch of sequences, greedy, no stop token. */
    public static LlamaRequest batch(int[][] prompts, int maxTokens) {
        return new LlamaRequest(prompts, maxTokens, -1, false, SamplerConfig.GREEDY, null, -1);
    }

    public LlamaRequest withStopToken(int value) {
        return new LlamaRequest(prompts, maxTokens, value, logits, sampler, grammar, topLogprobs);
    }

    public LlamaRequest withLogits(boolean value) {
        return new LlamaRequest(prompts, maxTokens, stopToken, value, sampler, grammar, topLogprobs);
    }

    /** Picks tokens with the sampler chain of {@code value}. */
    public LlamaRequest withSampler(SamplerConfig value) {
        return new LlamaRequest(prompts, maxTokens, stopToken, logits, value, grammar, topLogprobs);
    }

    /** Keeps every sequence's tokens in {@code value} (null: unconstrained). */
    public LlamaRequest withGrammar(TokenGrammar value) {
        return new LlamaRequest(prompts, maxTokens, stopToken, logits, sampler, value, topLogprobs);
    }

    /** Each token carries its log-probabilities with {@code top} alternatives (-1: none). */
    public LlamaRequest withLogprobs(int top) {
        return new LlamaRequest(prompts, maxTokens, stopToken, logits, sampler, grammar, top);
    }

    /** Bytes of one sequence's logprobs record in a step's token; 0 without logprobs. */
    public int logprobsBytes() {
        return topLogprobs < 0 ? 0 : TokenLogprobs.bytes(topLogprobs);
    }

    /** Where sequence {@code b}'s logprobs record starts in a step's token bytes. */
    public long logprobsAt(int b) {
        return (long) prompts.length * Integer.BYTES + (long) b * logprobsBytes();
    }

    public LlamaRequest withMaxTokens(int value) {
        return new LlamaRequest(prompts, value, stopToken, logits, sampler, grammar, topLogprobs);
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
                && stopToken == r.stopToken && logits == r.logits && sampler.equals(r.sampler)
                && java.util.Objects.equals(grammar, r.grammar)
                && topLogprobs == r.topLogprobs;
    }

    @Override
    public int hashCode() {
        return Arrays.deepHashCode(prompts) * 31 + maxTokens;
    }

    @Override
    public String toString() {
        return "LlamaRequest[batch=" + prompts.length + ", maxTokens=" + maxTokens + ", stopToken=" + stopToken
                + ", sampler=" + sampler + ", logits=" + logits
                + (grammar != null ? ", grammar=" + grammar.grammar() : "")
                + (topLogprobs >= 0 ? ", topLogprobs=" + topLogprobs : "") + "]";
    }
}
