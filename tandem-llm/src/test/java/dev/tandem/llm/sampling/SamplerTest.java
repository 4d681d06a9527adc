package dev.tandem.llm.sampling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** Each knob on logits whose outcome is worked out by hand. */
class SamplerTest {

    static final float[] HALF_THIRTY_TWENTY = {(float) Math.log(0.5), (float) Math.log(0.3), (float) Math.log(0.2)};

    static SamplerConfig.Builder neutral() {
        return SamplerConfig.builder().temperature(1).topK(0).topP(1).minP(0);
    }

    static int draw(SamplerConfig config, float[] logits) {
        return new Sampler(config, logits.length).sample(logits, 0);
    }

    /** How often each token is drawn over {@code n} seeds. */
    static double[] frequencies(SamplerConfig.Builder config, float[] logits, int n) {
        int[] counts = new int[logits.length];
        for (int seed = 0; seed < n; seed++) {
            counts[draw(config.seed(seed).build(), logits)]++;
        }
        double[] frequencies = new double[logits.length];
        for (int i = 0; i < counts.length; i++) {
            frequencies[i] = (double) counts[i] / n;
        }
        return frequencies;
    }

    @Test
    void greedyTakesTheLargestLogitAndTheFirstOnTies() {
        assertThat(draw(SamplerConfig.GREEDY, new float[] {1, 3, 3, 2})).isEqualTo(1);
        assertThat(draw(SamplerConfig.GREEDY, new float[] {Float.NEGATIVE_INFINITY, -5, -7})).isEqualTo(1);
    }

    @Test
    void temperatureOneDrawsTheSoftmax() {
        double[] f = frequencies(neutral(), HALF_THIRTY_TWENTY, 20_000);
        assertThat(f[0]).isCloseTo(0.5, within(0.015));
        assertThat(f[1]).isCloseTo(0.3, within(0.015));
        assertThat(f[2]).isCloseTo(0.2, within(0.015));
    }

    @Test
    void temperatureTwoFlattens() {
        // p_i ∝ sqrt(q_i): sqrt(.5), sqrt(.3), sqrt(.2) normalised = 0.420, 0.325, 0.265
        double[] f = frequencies(neutral().temperature(2), HALF_THIRTY_TWENTY, 20_000);
        assertThat(f[0]).isCloseTo(0.410, within(0.015));
        assertThat(f[1]).isCloseTo(0.318, within(0.015));
        assertThat(f[2]).isCloseTo(0.260, within(0.015));
    }

    @Test
    void topKKeepsTheKLargest() {
        double[] f = frequencies(neutral().topK(2), HALF_THIRTY_TWENTY, 10_000);
        assertThat(f[2]).isZero();
        assertThat(f[0]).isCloseTo(0.5 / 0.8, within(0.02));
        assertThat(frequencies(neutral().topK(1).temperature(5), HALF_THIRTY_TWENTY, 200)[0]).isEqualTo(1.0);
    }

    @Test
    void topPKeepsTheShortestPrefixReachingP() {
        // cumulative 0.5, 0.8, 1.0: p = 0.6 keeps two tokens, p = 0.5 keeps one, p = 0.81 keeps all
        assertThat(frequencies(neutral().topP(0.6f), HALF_THIRTY_TWENTY, 5_000)[2]).isZero();
        assertThat(frequencies(neutral().topP(0.6f), HALF_THIRTY_TWENTY, 5_000)[1]).isGreaterThan(0.3);
        assertThat(frequencies(neutral().topP(0.5f), HALF_THIRTY_TWENTY, 500)[0]).isEqualTo(1.0);
        assertThat(frequencies(neutral().topP(0.81f), HALF_THIRTY_TWENTY, 5_000)[2]).isGreaterThan(0.15);
    }

    @Test
    void topPMeasuresTheMassAtTemperatureOne() {
        // at temperature 100 the three would be near uniform, but the cut is made before it
        assertThat(frequencies(neutral().topP(0.6f).temperature(100), HALF_THIRTY_TWENTY, 5_000)[2]).isZero();
    }

    @Test
    void minPKeepsTokensAtLeastThatFractionOfTheLargest() {
        // relative to the largest: 1, 0.6, 0.4
        assertThat(frequencies(neutral().minP(0.5f), HALF_THIRTY_TWENTY, 5_000)[2]).isZero();
        assertThat(frequencies(neutral().minP(0.39f), HALF_THIRTY_TWENTY, 5_000)[2]).isGreaterThan(0.15);
        assertThat(frequencies(neutral().minP(0.61f), HALF_THIRTY_TWENTY, 500)[0]).isEqualTo(1.0);
    }

    @Test
    void repetitionPenaltyDividesPositiveAndMultipliesNegativeLogits() {
        SamplerConfig config = SamplerConfig.GREEDY.toBuilder().repetitionPenalty(2).build();
        Sampler positive = new Sampler(config, 3);
        positive.accept(0);
        assertThat(positive.sample(new float[] {2f, 1.5f, -1f}, 0)).isEqualTo(1); // 2 / 2 = 1 < 1.5
        Sampler negative = new Sampler(config, 2);
        negative.accept(0);
        assertThat(negative.sample(new float[] {-1f, -1.5f}, 0)).isEqualTo(1); // -1 * 2 = -2 < -1.5
    }

    @Test
    void presenceCountsOnceFrequencyPerOccurrence() {
        float[] logits = {3f, 2.5f, 0f};
        SamplerConfig frequency = SamplerConfig.GREEDY.toBuilder().frequencyPenalty(0.1f).presencePenalty(0.3f).build();
        Sampler thrice = new Sampler(frequency, 3);
        thrice.acceptPrompt(new int[] {0, 0, 0});
        assertThat(thrice.sample(logits, 0)).isEqualTo(1); // 3 - (3 * 0.1 + 0.3) = 2.4 < 2.5
        SamplerConfig presence = SamplerConfig.GREEDY.toBuilder().presencePenalty(0.4f).build();
        Sampler present = new Sampler(presence, 3);
        present.acceptPrompt(new int[] {0, 0, 0});
        assertThat(present.sample(logits, 0)).isEqualTo(0); // 3 - 0.4 = 2.6 > 2.5
    }

    @Test
    void onlyTheLastNTokensArePenalised() {
        SamplerConfig config = SamplerConfig.GREEDY.toBuilder().presencePenalty(10).repeatLastN(2).build();
        Sampler sampler = new Sampler(config, 4);
        sampler.accept(0);
        sampler.accept(1);
        sampler.accept(2); // the window is now [1, 2]: token 0 has left it
        assertThat(sampler.sample(new float[] {5, 6, 7, 4}, 0)).isEqualTo(0);
        assertThat(sampler.position()).isEqualTo(4);
    }

    @Test
    void thePromptFillsTheWindowOnlyWhenAsked() {
        float[] logits = {5, 4};
        SamplerConfig config = SamplerConfig.GREEDY.toBuilder().presencePenalty(2).build();
        Sampler penalised = new Sampler(config, 2);
        penalised.acceptPrompt(new int[] {0});
        assertThat(penalised.sample(logits, 0)).isEqualTo(1);
        Sampler free = new Sampler(config.toBuilder().penalizePrompt(false).build(), 2);
        free.acceptPrompt(new int[] {0});
        assertThat(free.sample(logits, 0)).isEqualTo(0);
        assertThat(free.position()).isEqualTo(1);
    }

    @Test
    void theDrawOfTokenKDependsOnTheSeedAndKOnly() {
        SamplerConfig config = neutral().seed(42).build();
        float[] flat = new float[1000];
        Sampler alone = new Sampler(config, flat.length);
        int[] tokens = new int[20];
        for (int k = 0; k < tokens.length; k++) {
            tokens[k] = alone.sample(flat, 0);
        }
        // another sequence of a batch, whose earlier tokens were forced rather than drawn
        Sampler batched = new Sampler(config, flat.length);
        for (int k = 0; k < 12; k++) {
            batched.accept(k);
        }
        assertThat(batched.sample(flat, 0)).isEqualTo(tokens[12]);
        assertThat(tokens).doesNotHaveDuplicates(); // 20 draws of 1000 would collide rarely; the seed varies by k
        assertThat(new Sampler(config.toBuilder().seed(43).build(), flat.length).sample(flat, 0)).isNotEqualTo(tokens[0]);
    }

    @Test
    void aMemorySegmentAndAnArrayDrawTheSame() {
        float[] logits = SamplerPropertyTest.logits(new SplittableRandom(7), 5000, 0);
        SamplerConfig config = SamplerConfig.builder().seed(9).build();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment segment = arena.allocate(8 + logits.length * 4L);
            MemorySegment.copy(logits, 0, segment, ValueLayout.JAVA_FLOAT_UNALIGNED, 6, logits.length);
            Sampler fromSegment = new Sampler(config, logits.length);
            Sampler fromArray = new Sampler(config, logits.length);
            for (int k = 0; k < 10; k++) {
                assertThat(fromSegment.sample(segment, 6)).isEqualTo(fromArray.sample(logits, 0));
            }
        }
    }

    @Test
    void samplingAllocatesNothingOnceBuilt() {
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        float[] logits = SamplerPropertyTest.logits(new SplittableRandom(1), 32_000, 0);
        SamplerConfig[] configs = {
            SamplerConfig.builder().repetitionPenalty(1.1f).presencePenalty(0.2f).build(), // llama.cpp defaults: top-k
            SamplerConfig.builder().topK(0).build(), // top-p and min-p over the whole vocabulary
            SamplerConfig.builder().topK(0).topP(1).minP(0).build(), // the draw alone
            SamplerConfig.GREEDY.toBuilder().frequencyPenalty(0.5f).build(),
        };
        for (SamplerConfig config : configs) {
            Sampler sampler = new Sampler(config, logits.length);
            sampler.acceptPrompt(new int[] {1, 2, 3, 2, 1});
            for (int i = 0; i < 300; i++) {
                sampler.sample(logits, 0); // warm up: compile every path
            }
            long before = threads.getCurrentThreadAllocatedBytes();
            for (int i = 0; i < 100; i++) {
                sampler.sample(logits, 0);
            }
            long allocated = threads.getCurrentThreadAllocatedBytes() - before;
            assertThat(allocated).as("bytes allocated by 100 draws with %s", config).isLessThan(1024);
        }
    }

    @Test
    void badLogitsAreNamed() {
        Sampler sampler = new Sampler(SamplerConfig.builder().build(), 3);
        assertThatThrownBy(() -> sampler.sample(new float[] {0, Float.NaN, 1}, 0))
                .hasMessage("logit 1 = NaN must be finite or -Infinity");
        float negInf = Float.NEGATIVE_INFINITY;
        assertThatThrownBy(() -> sampler.sample(new float[] {negInf, negInf, negInf}, 0))
                .hasMessage("every logit is -Infinity: nothing to sample");
        assertThatThrownBy(() -> sampler.sample(new float[2], 0)).hasMessage("logits must hold vocab = 3 floats from offset 0");
        assertThatThrownBy(() -> sampler.accept(3)).hasMessage("token = 3 must be in [0, vocab = 3)");
    }

    @Test
    void configurationIsValidatedNamingTheField() {
        assertThatThrownBy(() -> SamplerConfig.builder().temperature(-1).build())
                .hasMessage("temperature = -1.0 must be finite and >= 0");
        assertThatThrownBy(() -> SamplerConfig.builder().topK(-1).build()).hasMessage("topK = -1 must be >= 0 (0 is off)");
        assertThatThrownBy(() -> SamplerConfig.builder().topP(0).build()).hasMessage("topP = 0.0 must be in (0, 1] (1 is off)");
        assertThatThrownBy(() -> SamplerConfig.builder().minP(1.5f).build())
                .hasMessage("minP = 1.5 must be in [0, 1] (0 is off)");
        assertThatThrownBy(() -> SamplerConfig.builder().repetitionPenalty(0).build())
                .hasMessage("repetitionPenalty = 0.0 must be finite and > 0 (1 is off)");
        assertThatThrownBy(() -> SamplerConfig.builder().repeatLastN(-1).build())
                .hasMessage("repeatLastN = -1 must be >= 0 (0 is off)");
        assertThatThrownBy(() -> SamplerConfig.builder().presencePenalty(Float.NaN).build())
                .hasMessage("presencePenalty = NaN must be finite");
        assertThatThrownBy(() -> SamplerConfig.builder().frequencyPenalty(Float.POSITIVE_INFINITY).build())
                .hasMessage("frequencyPenalty = Infinity must be finite");
        assertThatThrownBy(() -> new Sampler(SamplerConfig.GREEDY, 0)).hasMessage("vocab = 0 must be in [1, 4194304]");
    }
}
