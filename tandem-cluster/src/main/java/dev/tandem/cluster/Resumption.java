package dev.tandem.cluster;

import dev.tandem.llm.GenerateOptions;
import dev.tandem.llm.sampling.Sampler;
import dev.tandem.llm.sampling.SamplerConfig;
import java.util.Arrays;

/**
 * The request that continues a generation from the tokens already delivered, so that it produces
 * exactly what the uninterrupted request would have produced next.
 *
 * <p>A generation is a function of its prompt, its sampler and the tokens it drew: token
 * {@code k}'s draw uses {@link Sampler#drawBits drawBits(seed, k)} only, which is
 * {@code mix(seed + (k + 1) * G)} for the golden-ratio constant {@code G}. A resumed request
 * prefills {@code prompt ++ delivered} (so its KV cache and logits are those of the original at
 * token {@code d = delivered.length}) and starts its sampler at its own token 0; with the seed
 * {@code seed + d * G} its draw of token {@code j} is {@code mix(seed + (d + j + 1) * G)}, the
 * original's draw of token {@code d + j}. The penalty window is the original's as well when the
 * sampler penalises the prompt (the server's requests always do: their window of the last
 * {@code repeatLastN} tokens is filled from the prompt and the delivered tokens alike). Its token
 * limit is what the original had left.
 *
 * <p>{@code ResumptionTest} pins the identity on the sampler and checks whole generations split
 * at every point against uninterrupted ones.
 */
final class Resumption {
    /** The increment of {@link Sampler#drawBits}'s counter per token: 2^64 / phi. */
    static final long GOLDEN = 0x9E3779B97F4A7C15L;

    private Resumption() {}

    /** The prompt of the resumed request: the original's, then the delivered tokens. */
    static int[] prompt(int[] prompt, int[] delivered) {
        int[] resumed = Arrays.copyOf(prompt, prompt.length + delivered.length);
        System.arraycopy(delivered, 0, resumed, prompt.length, delivered.length);
        return resumed;
    }

    /**
     * The options of the resumed request after {@code delivered} tokens.
     *
     * @throws IllegalArgumentException when nothing is left to generate, or when the sampler
     *                                  penalises tokens without filling its window from the prompt
     *                                  (the resumed window would miss the delivered tokens)
     */
    static GenerateOptions options(GenerateOptions options, int delivered) {
        if (options.sampler().penalizes() && !options.sampler().penalizePrompt()) {
            throw new IllegalArgumentException("a sampler that penalises generated tokens but not the prompt cannot be"
                    + " resumed exactly: its window would lose the " + delivered + " delivered tokens");
        }
        if (delivered >= options.maxTokens()) {
            throw new IllegalArgumentException(delivered + " tokens delivered of at most " + options.maxTokens()
                    + ": nothing to resume");
        }
        SamplerConfig sampler = options.sampler();
        SamplerConfig shifted = sampler.toBuilder().seed(sampler.seed() + delivered * GOLDEN).build();
        return options.withMaxTokens(options.maxTokens() - delivered).withSampler(shifted);
    }
}
