package dev.tandem.llm.sampling;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.llm.reference.SamplerReference;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/** The sampler draws, token for token, what the whole-vocabulary reference draws. */
class SamplerPropertyTest {

    /** One case: a vocabulary of logits per step, a configuration, a prompt, and steps to draw. */
    record Case(SamplerConfig config, int vocab, long logitsSeed, int[] prompt, int steps, int logitShape) {
        @Override
        public String toString() {
            return "Case[" + config + ", vocab=" + vocab + ", logitsSeed=" + logitsSeed + ", prompt="
                    + Arrays.toString(prompt) + ", steps=" + steps + ", shape=" + logitShape + "]";
        }
    }

    @Property(tries = 400)
    void samplerEqualsTheReference(@ForAll("cases") Case c) {
        Sampler sampler = new Sampler(c.config(), c.vocab());
        sampler.acceptPrompt(c.prompt());
        List<Integer> window = new ArrayList<>();
        if (c.config().penalizePrompt()) {
            for (int token : c.prompt()) {
                window.add(token);
            }
        }
        SplittableRandom random = new SplittableRandom(c.logitsSeed());
        for (int step = 0; step < c.steps(); step++) {
            float[] logits = logits(random, c.vocab(), c.logitShape());
            int[] last = lastN(window, c.config().repeatLastN());
            int expected = SamplerReference.sample(logits, c.config(), last, step);
            int actual = sampler.sample(logits, 0);
            assertThat(actual).as("step %d of %s", step, c).isEqualTo(expected);
            window.add(actual);
        }
    }

    @Provide
    Arbitrary<Case> cases() {
        Arbitrary<SamplerConfig> configs = Combinators.combine(
                        Arbitraries.of(0f, 0.1f, 0.7f, 1f, 1.5f, 10f),
                        Arbitraries.of(0, 1, 2, 5, 40, 1000),
                        Arbitraries.of(1f, 0.05f, 0.5f, 0.9f, 0.95f, 0.999f),
                        Arbitraries.of(0f, 0.01f, 0.05f, 0.3f, 1f),
                        Arbitraries.of(1f, 0.8f, 1.1f, 1.5f),
                        Arbitraries.of(0, 1, 3, 64),
                        Arbitraries.of(0f, 0.5f, -0.5f),
                        Arbitraries.of(0f, 0.2f, 1f))
                .as((t, k, p, m, rp, n, presence, frequency) -> SamplerConfig.builder()
                        .temperature(t).topK(k).topP(p).minP(m).repetitionPenalty(rp).repeatLastN(n)
                        .presencePenalty(presence).frequencyPenalty(frequency).build());
        return Combinators.combine(configs, Arbitraries.of(1, 2, 7, 50, 300, 3000), Arbitraries.longs(),
                        Arbitraries.of(true, false), Arbitraries.longs(), Arbitraries.integers().between(1, 6),
                        Arbitraries.integers().between(0, 4))
                .as((config, vocab, seed, penalizePrompt, logitsSeed, steps, shape) -> {
                    SplittableRandom random = new SplittableRandom(logitsSeed ^ 0x5DEECE66DL);
                    int[] prompt = new int[random.nextInt(1, 80)];
                    for (int i = 0; i < prompt.length; i++) {
                        prompt[i] = random.nextInt(Math.min(vocab, 8));
                    }
                    // A logit bias on a third of the cases: a few tokens, some past the vocabulary (ignored).
                    java.util.Map<Integer, Float> bias = new java.util.HashMap<>();
                    if (random.nextInt(3) == 0) {
                        for (int i = random.nextInt(1, 4); i > 0; i--) {
                            bias.put(random.nextInt(vocab + 2), (float) random.nextDouble(-100, 100));
                        }
                    }
                    SamplerConfig seeded = config.toBuilder().seed(seed).penalizePrompt(penalizePrompt).logitBias(bias)
                            .build();
                    return new Case(seeded, vocab, logitsSeed, prompt, steps, shape);
                });
    }

    /** Logits of several shapes: wide or peaked, with ties, with -Infinity, or all equal. */
    static float[] logits(SplittableRandom random, int vocab, int shape) {
        float[] logits = new float[vocab];
        for (int i = 0; i < vocab; i++) {
            logits[i] = switch (shape) {
                case 0 -> (float) (random.nextGaussian() * 3);
                case 1 -> random.nextInt(4) - 2f; // many ties, around zero (penalties on both signs)
                case 2 -> random.nextInt(10) == 0 ? Float.NEGATIVE_INFINITY : (float) random.nextGaussian();
                case 3 -> 1.25f;
                default -> (float) (random.nextGaussian() * 40); // very peaked: weights underflow
            };
        }
        if (shape == 2) {
            logits[random.nextInt(vocab)] = 0.5f;
        }
        return logits;
    }

    static int[] lastN(List<Integer> tokens, int n) {
        int from = Math.max(0, tokens.size() - n);
        return tokens.subList(from, tokens.size()).stream().mapToInt(Integer::intValue).toArray();
    }
}
