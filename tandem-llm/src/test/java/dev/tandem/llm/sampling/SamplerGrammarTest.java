package dev.tandem.llm.sampling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.tandem.llm.grammar.Grammar;
import dev.tandem.llm.grammar.GrammarMatcher;
import dev.tandem.llm.grammar.GrammarVocabulary;
import java.util.BitSet;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.junit.jupiter.api.Test;

/** The grammar's mask inside the sampler chain, and the log-probabilities a sampler records. */
class SamplerGrammarTest {
    /** Tokens 0..255 are the single bytes; 256 is EOS. */
    static final GrammarVocabulary BYTES = bytes();

    static GrammarVocabulary bytes() {
        byte[][] tokens = new byte[257][];
        for (int b = 0; b < 256; b++) {
            tokens[b] = new byte[] {(byte) b};
        }
        tokens[256] = new byte[0];
        BitSet ends = new BitSet();
        ends.set(256);
        return GrammarVocabulary.of(tokens, ends);
    }

    @Test
    void theMaskComesFirstSoTheLargestLogitOfAForbiddenTokenIsNeverDrawn() {
        GrammarMatcher m = BYTES.compile(Grammar.anyOf(Grammar.literal("yes"), Grammar.literal("no"))).matcher();
        SamplerConfig hot = SamplerConfig.builder().temperature(1.5f).topK(1).topP(1).minP(0).seed(3).build();
        Sampler sampler = new Sampler(hot, 257, m, -1);
        float[] logits = new float[257];
        logits['x'] = 50; // what the model wants most: forbidden
        logits['n'] = 2;
        logits['y'] = 1;
        assertThat(sampler.sample(logits, 0)).isEqualTo('n'); // top-k 1 over the allowed tokens only
        logits['o'] = -5;
        assertThat(sampler.sample(logits, 0)).isEqualTo('o');
        assertThat(sampler.sample(logits, 0)).as("only EOS may follow a complete text").isEqualTo(256);
    }

    @Test
    void penaltiesApplyAfterTheMask() {
        GrammarMatcher m = BYTES.compile(Grammar.repeat(Grammar.literal("a"), null, 0, -1)).matcher();
        SamplerConfig penalised = SamplerConfig.builder().temperature(0).topK(0).topP(1).minP(0)
                .repetitionPenalty(1).repeatLastN(8).presencePenalty(100).build();
        Sampler sampler = new Sampler(penalised, 257, m, -1);
        float[] logits = new float[257];
        logits['a'] = 10;
        logits[256] = 5;
        assertThat(sampler.sample(logits, 0)).isEqualTo('a');
        // 'a' is now penalised below EOS; the mask still allows both
        assertThat(sampler.sample(logits, 0)).isEqualTo(256);
    }

    @Test
    void aGrammarOfAnotherVocabularyIsRefused() {
        GrammarMatcher m = BYTES.compile(Grammar.literal("a")).matcher();
        assertThatThrownBy(() -> new Sampler(SamplerConfig.GREEDY, 300, m, -1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("257");
        assertThatThrownBy(() -> new Sampler(SamplerConfig.GREEDY, 257, null, 21))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("topLogprobs");
    }

    @Test
    void withoutLogprobsNothingIsRecorded() {
        Sampler sampler = new Sampler(SamplerConfig.GREEDY, 4);
        sampler.sample(new float[] {1, 2, 3, 4}, 0);
        assertThat(sampler.lastLogprobs()).isNull();
        assertThat(sampler.topLogprobs()).isEqualTo(-1);
    }

    /** The log-softmax of the raw logits, computed here in double, against what the sampler records. */
    @Property(tries = 200)
    void logprobsAreTheLogSoftmaxOfTheRawLogitsWithTheTopNInOrder(@ForAll long seed) {
        Random random = new Random(seed);
        int vocab = 257;
        int top = random.nextInt(TokenLogprobs.MAX_TOP + 1);
        boolean constrained = random.nextBoolean();
        GrammarMatcher m = constrained ? BYTES.compile(Grammar.jsonSchema("{\"type\":\"integer\"}")).matcher() : null;
        SamplerConfig config = SamplerConfig.builder().temperature(random.nextFloat() * 2).topK(random.nextInt(50))
                .topP(1).minP(0).seed(seed).build();
        Sampler sampler = new Sampler(config, vocab, m, top);
        for (int step = 0; step < 4; step++) {
            float[] logits = new float[vocab];
            for (int i = 0; i < vocab; i++) {
                logits[i] = (float) (random.nextGaussian() * 3);
            }
            logits[random.nextInt(vocab)] = logits[random.nextInt(vocab)]; // a tie now and then
            double max = Double.NEGATIVE_INFINITY;
            for (float l : logits) {
                max = Math.max(max, l);
            }
            double sum = 0;
            for (float l : logits) {
                sum += Math.exp(l - max);
            }
            double lse = max + Math.log(sum);
            int token = sampler.sample(logits, 0);
            TokenLogprobs lp = sampler.lastLogprobs();
            assertThat(lp.token()).isEqualTo(token);
            assertThat(lp.logprob()).isCloseTo((float) (logits[token] - lse), within(1e-4f));
            assertThat(lp.topTokens()).hasSize(top);
            double mass = 0;
            for (int i = 0; i < top; i++) {
                int t = lp.topTokens()[i];
                assertThat(lp.topLogprobs()[i]).isCloseTo((float) (logits[t] - lse), within(1e-4f));
                if (i > 0) {
                    float prev = logits[lp.topTokens()[i - 1]];
                    assertThat(prev > logits[t] || (prev == logits[t] && lp.topTokens()[i - 1] < t))
                            .as("order at %d", i).isTrue();
                }
                mass += Math.exp(lp.topLogprobs()[i]);
            }
            assertThat(mass).isLessThanOrEqualTo(1.0 + 1e-5);
            if (top > 0) {
                // no token outside the top is more likely than the last of it
                float last = logits[lp.topTokens()[top - 1]];
                for (int t = 0; t < vocab; t++) {
                    final int id = t;
                    if (java.util.Arrays.stream(lp.topTokens()).noneMatch(x -> x == id)) {
                        assertThat(logits[t] < last || (logits[t] == last && t > lp.topTokens()[top - 1])).isTrue();
                    }
                }
            }
            if (config.greedy() && !constrained && top > 0) {
                assertThat(token).isEqualTo(lp.topTokens()[0]);
            }
            if (constrained && m.isAccepting()) {
                break;
            }
        }
    }

    @Test
    void theEncodedFormRoundTrips() {
        TokenLogprobs lp = new TokenLogprobs(7, -0.5f, new int[] {7, 3}, new float[] {-0.5f, -1.25f});
        java.lang.foreign.MemorySegment seg = java.lang.foreign.MemorySegment.ofArray(new byte[4 + TokenLogprobs.bytes(2)]);
        lp.writeTo(seg, 4);
        assertThat(TokenLogprobs.readFrom(seg, 4)).isEqualTo(lp);
    }
}
