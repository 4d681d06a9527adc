package dev.tandem.kernels;

import java.lang.foreign.MemorySegment;

/**
 * Picking the next token from logits.
 *
 * <h2>Sampling</h2>
 *
 * <p>{@link #sample} with {@code temperature > 0}:
 *
 * <ol>
 *   <li>{@code probs[i] = exp((logits[i] - max) / temperature) / sum}, written to {@code probs}
 *       (which may be {@code logits});
 *   <li>the nucleus is every token whose probability is at least the threshold {@code t}, where
 *       {@code t} is the largest value for which the nucleus holds at least {@code topP} of the
 *       mass. With distinct probabilities that is the smallest top set reaching {@code topP}; tokens
 *       tied at the threshold are all in. {@code t} is found by bisection on the bits of positive
 *       floats, so no index array is sorted or allocated;
 *   <li>{@code u} is the first {@code nextDouble()} of {@code new SplittableRandom(seed)}; the token
 *       is the first nucleus index, in index order, at which the running nucleus mass exceeds
 *       {@code u} times the nucleus mass.
 * </ol>
 *
 * <p>The same arguments give the same token on every run: a caller that wants a different draw
 * per step derives the seed from its request seed and the step.
 */
public interface SamplingOps {

    /** Vector and scalar {@code argmax} agree exactly. */
    float ARGMAX_TOLERANCE = 0f;

    /**
     * Vector and scalar {@code sample} write probabilities that agree within this absolute
     * tolerance. They draw the same token unless the draw falls within that tolerance of a
     * boundary between two tokens.
     */
    float SAMPLE_PROBABILITY_TOLERANCE = 1e-6f;

    /**
     * The index of the largest of {@code n >= 1} values; the first such index on ties.
     *
     * @throws IllegalArgumentException also if a value is NaN, naming its index
     */
    int argmax(MemorySegment values, long offset, int n);

    /**
     * A token drawn from {@code logits} by temperature and top-p (nucleus) sampling, deterministic in
     * {@code seed}; see the class documentation. {@code temperature == 0} is {@link #argmax} and
     * leaves {@code probs} untouched; {@code topP == 1} keeps every token.
     *
     * @throws IllegalArgumentException also if the largest logit is NaN or +Infinity, or every logit
     *     is -Infinity
     */
    int sample(
            MemorySegment logits,
            long logitsOffset,
            MemorySegment probs,
            long probsOffset,
            int n,
            float temperature,
            float topP,
            long seed);
}
