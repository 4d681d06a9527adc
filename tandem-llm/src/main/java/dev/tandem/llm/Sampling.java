package dev.tandem.llm;

/**
 * How the next token is picked from the logits: greedy (temperature 0, the largest logit, the
 * first on ties) or temperature and top-p sampling drawn from a seed, as
 * {@link dev.tandem.kernels.SamplingOps#sample} defines it.
 *
 * @param temperature 0 for greedy, else the softmax temperature
 * @param topP        the nucleus mass, in (0, 1]
 * @param seed        the request's seed; the draw of token {@code k} of sequence {@code b} uses
 *                    {@link #seedFor seedFor(k, b)}
 */
public record Sampling(float temperature, float topP, long seed) {

    public static final Sampling GREEDY = new Sampling(0f, 1f, 0);

    public Sampling {
        if (!(temperature >= 0) || Float.isInfinite(temperature)) {
            throw new IllegalArgumentException("temperature = " + temperature + " must be finite and >= 0");
        }
        if (!(topP > 0 && topP <= 1)) {
            throw new IllegalArgumentException("topP = " + topP + " must be in (0, 1]");
        }
    }

    public static Sampling seeded(float temperature, float topP, long seed) {
        return new Sampling(temperature, topP, seed);
    }

    public boolean greedy() {
        return temperature == 0f;
    }

    /** The seed of the draw of token {@code token} (0 is the first generated) of sequence {@code sequence}. */
    public long seedFor(long token, int sequence) {
        return seedFor(seed, token, sequence);
    }

    /** {@link #seedFor(long, int)} of a request seed. */
    public static long seedFor(long seed, long token, int sequence) {
        long z = seed ^ (token * 0x9E3779B97F4A7C15L) ^ ((sequence + 1L) * 0xC2B2AE3D27D4EB4FL);
        z = (z ^ (z >>> 33)) * 0xFF51AFD7ED558CCDL;
        z = (z ^ (z >>> 33)) * 0xC4CEB9FE1A85EC53L;
        return z ^ (z >>> 33);
    }
}
