package dev.tandem.kernels;

import static dev.tandem.kernels.Tensors.PAD;
import static dev.tandem.kernels.Tensors.SCALAR;
import static dev.tandem.kernels.Tensors.VECTOR;
import static dev.tandem.kernels.Tensors.read;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.lang.foreign.MemorySegment;
import java.util.HashSet;
import java.util.Set;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class SamplingOpsTest {

    private static final KernelOps[] BOTH = {SCALAR, VECTOR};

    @Property(tries = 200)
    void argmaxIsTheFirstIndexOfTheMaximumInBothImplementations(
            @ForAll long seed,
            @ForAll @IntRange(min = 1, max = 300) int n,
            @ForAll @IntRange(min = 1, max = 5) int distinct) {
        try (Tensors t = new Tensors(seed)) {
            // Few distinct values, so ties are common.
            float[] values = new float[n];
            for (int i = 0; i < n; i++) {
                values[i] = t.random.nextInt(distinct) - 2f;
            }
            int expected = 0;
            for (int i = 1; i < n; i++) {
                if (values[i] > values[expected]) {
                    expected = i;
                }
            }
            MemorySegment s = t.f32(values);
            for (KernelOps ops : BOTH) {
                assertThat(ops.argmax(s, PAD, n))
                        .as("%s argmax of n = %d", ops.name(), n)
                        .isEqualTo(expected);
            }
        }
    }

    @ParameterizedTest(name = "n = {0}")
    @ValueSource(ints = {1, 7, 31, 33, 127, 4096})
    void argmaxFindsTheMaximumInTheScalarTailAndInNegativeValues(int n) {
        try (Tensors t = new Tensors(n)) {
            float[] values = t.uniform(n, -100f, -1f);
            values[n - 1] = -0.5f;
            MemorySegment s = t.f32(values);
            for (KernelOps ops : BOTH) {
                assertThat(ops.argmax(s, PAD, n)).as(ops.name()).isEqualTo(n - 1);
            }
        }
    }

    @ParameterizedTest(name = "NaN at {0} of 300")
    @ValueSource(ints = {0, 35, 130, 290, 299})
    void argmaxRejectsNaNNamingItsFirstIndex(int index) {
        try (Tensors t = new Tensors(index)) {
            float[] values = t.uniform(300, 0f, 1f);
            values[index] = Float.NaN;
            values[Math.min(index + 3, 299)] = Float.NaN;
            MemorySegment s = t.f32(values);
            for (KernelOps ops : BOTH) {
                assertThatThrownBy(() -> ops.argmax(s, PAD, 300))
                        .as(ops.name())
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessage("argmax: values[" + index + "] is NaN");
            }
        }
    }

    @Test
    void temperatureZeroIsArgmaxAndLeavesProbsUntouched() {
        try (Tensors t = new Tensors(2)) {
            float[] logits = t.uniform(1000, -5f, 5f);
            MemorySegment s = t.f32(logits);
            for (KernelOps ops : BOTH) {
                MemorySegment probs = t.f32(new float[1000]);
                int expected = ops.argmax(s, PAD, 1000);
                for (long seed = 0; seed < 20; seed++) {
                    assertThat(ops.sample(s, PAD, probs, PAD, 1000, 0f, 0.9f, seed))
                            .isEqualTo(expected);
                }
                assertThat(read(probs, 1000)).as("probs after temperature 0").containsOnly(0f);
            }
        }
    }

    @Test
    void sameSeedSameTokenAndDifferentSeedsSpreadOverTokens() {
        try (Tensors t = new Tensors(3)) {
            MemorySegment logits = t.f32(t.uniform(500, -1f, 1f));
            for (KernelOps ops : BOTH) {
                MemorySegment probs = t.allocate(500 * Float.BYTES);
                Set<Integer> tokens = new HashSet<>();
                for (long seed = 0; seed < 50; seed++) {
                    int first = ops.sample(logits, PAD, probs, PAD, 500, 0.8f, 0.95f, seed);
                    int again = ops.sample(logits, PAD, probs, PAD, 500, 0.8f, 0.95f, seed);
                    assertThat(again)
                            .as("%s token for seed %d, drawn twice", ops.name(), seed)
                            .isEqualTo(first);
                    tokens.add(first);
                }
                assertThat(tokens)
                        .as("%s distinct tokens over 50 seeds on nearly flat logits", ops.name())
                        .hasSizeGreaterThan(30);
            }
        }
    }

    @Test
    void tinyTopPKeepsOnlyTheTopToken() {
        try (Tensors t = new Tensors(4)) {
            MemorySegment logits = t.f32(t.uniform(4096, -2f, 2f));
            for (KernelOps ops : BOTH) {
                MemorySegment probs = t.allocate(4096 * Float.BYTES);
                int top = ops.argmax(logits, PAD, 4096);
                for (long seed = 0; seed < 100; seed++) {
                    assertThat(ops.sample(logits, PAD, probs, PAD, 4096, 1.5f, 1e-6f, seed))
                            .as("%s token with topP 1e-6, seed %d", ops.name(), seed)
                            .isEqualTo(top);
                }
            }
        }
    }

    @Test
    void drawsFollowTheProbabilitiesAndTopPCutsTheTail() {
        try (Tensors t = new Tensors(5)) {
            // Probabilities 0.1, 0.2, 0.3, 0.4 at temperature 1.
            MemorySegment logits =
                    t.f32((float) Math.log(1), (float) Math.log(2), (float) Math.log(3), (float) Math.log(4));
            int draws = 4000;
            for (KernelOps ops : BOTH) {
                MemorySegment probs = t.allocate(4 * Float.BYTES);
                int[] all = new int[4];
                int[] nucleus = new int[4];
                for (long seed = 0; seed < draws; seed++) {
                    all[ops.sample(logits, PAD, probs, PAD, 4, 1f, 1f, seed)]++;
                    // 0.4 < 0.6 <= 0.4 + 0.3: the nucleus is tokens 3 and 2.
                    nucleus[ops.sample(logits, PAD, probs, PAD, 4, 1f, 0.6f, seed)]++;
                }
                assertThat(read(probs, 4)).containsExactly(new float[] {0.1f, 0.2f, 0.3f, 0.4f}, within(1e-6f));
                for (int token = 0; token < 4; token++) {
                    assertThat(all[token] / (double) draws)
                            .as("%s frequency of token %d with topP 1", ops.name(), token)
                            .isCloseTo((token + 1) / 10.0, within(0.03));
                }
                assertThat(nucleus[0] + nucleus[1])
                        .as("%s draws outside the nucleus", ops.name())
                        .isZero();
                assertThat(nucleus[3] / (double) draws)
                        .as("%s share of token 3 in the nucleus", ops.name())
                        .isCloseTo(4 / 7.0, within(0.03));
            }
        }
    }

    @ParameterizedTest(name = "n = {0}")
    @ValueSource(ints = {1, 7, 31, 33, 127, 4096})
    void vectorSamplingMatchesScalarProbabilitiesAndTokens(int n) {
        try (Tensors t = new Tensors(n)) {
            MemorySegment logits = t.f32(t.uniform(n, -8f, 8f));
            MemorySegment scalarProbs = t.allocate((long) n * Float.BYTES);
            MemorySegment vectorProbs = t.allocate((long) n * Float.BYTES);
            for (float topP : new float[] {1f, 0.9f, 0.5f}) {
                for (long seed = 0; seed < 20; seed++) {
                    int scalar = SCALAR.sample(logits, PAD, scalarProbs, PAD, n, 0.7f, topP, seed);
                    int vector = VECTOR.sample(logits, PAD, vectorProbs, PAD, n, 0.7f, topP, seed);
                    assertThat(vector)
                            .as("vector token, n %d topP %s seed %d", n, topP, seed)
                            .isEqualTo(scalar);
                }
                float[] ones = new float[n];
                java.util.Arrays.fill(ones, 1f);
                Tensors.assertWithin(
                        "vector probs, n " + n,
                        read(vectorProbs, n),
                        read(scalarProbs, n),
                        ones,
                        SamplingOps.SAMPLE_PROBABILITY_TOLERANCE);
            }
        }
    }

    @Test
    void probsMayOverwriteTheLogits() {
        try (Tensors t = new Tensors(6)) {
            float[] logits = t.uniform(300, -3f, 3f);
            for (KernelOps ops : BOTH) {
                MemorySegment separate = t.allocate(300 * Float.BYTES);
                MemorySegment inPlace = t.f32(logits);
                int expected = ops.sample(t.f32(logits), PAD, separate, PAD, 300, 1f, 0.9f, 7);
                assertThat(ops.sample(inPlace, PAD, inPlace, PAD, 300, 1f, 0.9f, 7))
                        .isEqualTo(expected);
                Tensors.assertIdentical(ops.name() + " probs in place", read(inPlace, 300), read(separate, 300));
            }
        }
    }

    @Test
    void samplingRejectsLogitsWithoutAFiniteMaximum() {
        try (Tensors t = new Tensors(7)) {
            MemorySegment nan = t.f32(1f, Float.NaN, 2f);
            MemorySegment infinite = t.f32(1f, Float.POSITIVE_INFINITY, 2f);
            MemorySegment allMasked = t.f32(Float.NEGATIVE_INFINITY, Float.NEGATIVE_INFINITY);
            MemorySegment probs = t.allocate(3 * Float.BYTES);
            for (KernelOps ops : BOTH) {
                assertThatThrownBy(() -> ops.sample(nan, PAD, probs, PAD, 3, 1f, 1f, 0))
                        .hasMessageStartingWith("sample: largest logit = NaN must be finite");
                assertThatThrownBy(() -> ops.sample(infinite, PAD, probs, PAD, 3, 1f, 1f, 0))
                        .hasMessageStartingWith("sample: largest logit = Infinity must be finite");
                assertThatThrownBy(() -> ops.sample(allMasked, PAD, probs, PAD, 2, 1f, 1f, 0))
                        .hasMessageStartingWith("sample: largest logit = -Infinity must be finite");
            }
        }
    }

    @Test
    void maskedLogitsAreNeverDrawn() {
        try (Tensors t = new Tensors(8)) {
            float[] logits = t.uniform(64, -1f, 1f);
            for (int i = 0; i < 64; i += 2) {
                logits[i] = Float.NEGATIVE_INFINITY;
            }
            MemorySegment s = t.f32(logits);
            MemorySegment probs = t.allocate(64 * Float.BYTES);
            for (KernelOps ops : BOTH) {
                for (long seed = 0; seed < 200; seed++) {
                    assertThat(ops.sample(s, PAD, probs, PAD, 64, 1f, 1f, seed) % 2)
                            .as("%s token parity", ops.name())
                            .isOne();
                }
            }
        }
    }
}
