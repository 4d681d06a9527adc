package dev.tandem.llm.reference;

import dev.tandem.llm.sampling.Sampler;
import dev.tandem.llm.sampling.SamplerConfig;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The plain, obviously correct version of {@link Sampler}'s chain, the oracle of its tests: it
 * sorts the whole vocabulary, walks it once per cut, and shares no code with the sampler except
 * the definition of the random bits ({@link Sampler#drawBits}).
 */
public final class SamplerReference {

    private SamplerReference() {}

    /**
     * The token {@link Sampler} draws at position {@code k} from {@code logits} (not modified),
     * given the penalty window's tokens {@code window} (oldest first).
     */
    public static int sample(float[] logits, SamplerConfig config, int[] window, long k) {
        int vocab = logits.length;
        float[] l = logits.clone();
        for (Map.Entry<Integer, Float> bias : config.logitBias().entrySet()) {
            if (bias.getKey() < vocab) { // a bias past the vocabulary is ignored, as the sampler does
                l[bias.getKey()] += bias.getValue();
            }
        }
        check(l);
        if (config.repeatLastN() > 0) {
            Map<Integer, Integer> counts = new LinkedHashMap<>();
            for (int token : window) {
                counts.merge(token, 1, Integer::sum);
            }
            for (Map.Entry<Integer, Integer> entry : counts.entrySet()) {
                int token = entry.getKey();
                int count = entry.getValue();
                float x = l[token];
                x = x > 0 ? x / config.repetitionPenalty() : x * config.repetitionPenalty();
                x -= count * config.frequencyPenalty() + config.presencePenalty();
                l[token] = x;
            }
            check(l);
        }
        if (config.temperature() == 0f) {
            int best = 0;
            for (int i = 1; i < vocab; i++) {
                if (l[i] > l[best]) {
                    best = i;
                }
            }
            return best;
        }
        Integer[] order = new Integer[vocab];
        for (int i = 0; i < vocab; i++) {
            order[i] = i;
        }
        Arrays.sort(order, (a, b) -> {
            int byLogit = Float.compare(l[b], l[a]);
            return byLogit != 0 ? byLogit : Integer.compare(a, b);
        });
        float max = l[order[0]];
        int kept = config.topK() > 0 ? Math.min(config.topK(), vocab) : vocab;
        if (config.topP() < 1f) {
            long mass = 0;
            for (int j = 0; j < kept; j++) {
                mass += fixed(Math.exp((double) l[order[j]] - max));
            }
            long target = (long) Math.ceil((double) config.topP() * mass);
            long running = 0;
            for (int j = 0; j < kept; j++) {
                running += fixed(Math.exp((double) l[order[j]] - max));
                if (running >= target) {
                    kept = j + 1;
                    break;
                }
            }
        }
        if (config.minP() > 0f) {
            for (int j = 0; j < kept; j++) {
                if (Math.exp((double) l[order[j]] - max) < config.minP()) {
                    kept = j;
                    break;
                }
            }
        }
        boolean[] in = new boolean[vocab];
        for (int j = 0; j < kept; j++) {
            in[order[j]] = true;
        }
        double temperature = config.temperature();
        long total = 0;
        for (int i = 0; i < vocab; i++) {
            if (in[i]) {
                total += fixed(Math.exp(((double) l[i] - max) / temperature));
            }
        }
        long u = Math.unsignedMultiplyHigh(Sampler.drawBits(config.seed(), k), total);
        long running = 0;
        for (int i = 0; i < vocab; i++) {
            if (in[i]) {
                running += fixed(Math.exp(((double) l[i] - max) / temperature));
                if (running > u) {
                    return i;
                }
            }
        }
        throw new AssertionError("the draw fell past the kept mass");
    }

    private static long fixed(double x) {
        return (long) Math.floor(x * 0x1p40);
    }

    private static void check(float[] l) {
        boolean any = false;
        for (int i = 0; i < l.length; i++) {
            if (Float.isNaN(l[i]) || l[i] == Float.POSITIVE_INFINITY) {
                throw new IllegalArgumentException("logit " + i + " = " + l[i] + " must be finite or -Infinity");
            }
            any |= l[i] != Float.NEGATIVE_INFINITY;
        }
        if (!any) {
            throw new IllegalArgumentException("every logit is -Infinity: nothing to sample");
        }
    }
}
