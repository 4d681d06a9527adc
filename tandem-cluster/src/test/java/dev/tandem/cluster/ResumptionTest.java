package dev.tandem.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tandem.CpuDeviceConfig;
import dev.tandem.Worker;
import dev.tandem.llm.BatcherConfig;
import dev.tandem.llm.Completion;
import dev.tandem.llm.EmbeddedModel;
import dev.tandem.llm.GenerateOptions;
import dev.tandem.llm.LanguageModel;
import dev.tandem.llm.sampling.Sampler;
import dev.tandem.llm.sampling.SamplerConfig;
import dev.tandem.server.BatcherEngine;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A generation cut after {@code d} tokens and resumed as {@link Resumption} says (the prompt plus
 * the delivered tokens, the seed shifted, the limit reduced) yields exactly the tokens of the
 * uninterrupted one, on the continuous batcher that workers run, greedy and sampled.
 */
@Timeout(120)
class ResumptionTest {
    private static final int MAX_TOKENS = 96;
    private static Worker worker;
    private static LanguageModel model;
    private static BatcherEngine engine;

    @BeforeAll
    static void start() {
        worker = Worker.create(CpuDeviceConfig.withCores(2));
        model = LanguageModel.load(worker, EmbeddedModel.path());
        engine = BatcherEngine.start(worker, model, BatcherConfig.builder().maxBatch(4).maxQueued(16).build());
    }

    @AfterAll
    static void stop() {
        engine.close();
        worker.close();
    }

    @Test
    void theShiftedSeedDrawsTheOriginalsBitsForEveryLaterToken() {
        long seed = 0x1234_5678_9abcL;
        for (int d : new int[] {0, 1, 7, 300}) {
            long shifted = Resumption.options(GenerateOptions.defaults()
                    .withSampler(SamplerConfig.builder().seed(seed).build()).withMaxTokens(1000), d).sampler().seed();
            for (int j = 0; j < 50; j++) {
                assertThat(Sampler.drawBits(shifted, j)).as("draw %d after %d delivered", j, d)
                        .isEqualTo(Sampler.drawBits(seed, d + j));
            }
        }
    }

    @Test
    void greedyGenerationResumedAtAnyPointIsTheUninterruptedOne() {
        checkResumed("Once upon a time", GenerateOptions.defaults().withMaxTokens(MAX_TOKENS).withIgnoreEos(true));
    }

    @Test
    void seededSamplingWithPenaltiesResumedIsTheUninterruptedOne() {
        SamplerConfig sampler = SamplerConfig.builder().temperature(0.9f).topP(0.95f).presencePenalty(0.4f)
                .frequencyPenalty(0.3f).seed(42).build();
        checkResumed("Lily and Ben went to the park.",
                GenerateOptions.defaults().withMaxTokens(MAX_TOKENS).withSampler(sampler).withIgnoreEos(true));
    }

    @Test
    void aGenerationWithStopStringsAndEosEndsWhereTheUninterruptedOneDoes() {
        GenerateOptions options = GenerateOptions.defaults().withMaxTokens(200).withStop(List.of("park"));
        int[] prompt = model.encode("Tom had a dog.");
        Completion whole = engine.submit(prompt, options, null);
        String text = whole.await();
        int[] tokens = whole.tokens();
        int d = tokens.length / 2;
        Completion rest = engine.submit(Resumption.prompt(prompt, Arrays.copyOf(tokens, d)),
                Resumption.options(options, d), null);
        rest.await();
        assertThat(concat(Arrays.copyOf(tokens, d), rest.tokens())).isEqualTo(tokens);
        assertThat(rest.finishReason()).isEqualTo(whole.finishReason());
        assertThat(text).isNotEmpty();
    }

    @Test
    void nothingLeftOrAnUnresumableSamplerIsRefusedWithTheReason() {
        assertThatThrownBy(() -> Resumption.options(GenerateOptions.defaults().withMaxTokens(5), 5))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("nothing to resume");
        SamplerConfig unresumable = SamplerConfig.builder().presencePenalty(0.5f).penalizePrompt(false).build();
        assertThatThrownBy(() -> Resumption.options(GenerateOptions.defaults().withSampler(unresumable), 3))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("cannot be resumed exactly");
    }

    private static void checkResumed(String text, GenerateOptions options) {
        int[] prompt = model.encode(text);
        Completion whole = engine.submit(prompt, options, null);
        whole.await();
        int[] expected = whole.tokens();
        assertThat(expected).hasSize(MAX_TOKENS);
        for (int d : new int[] {1, 2, 17, 48, MAX_TOKENS - 1}) {
            Completion rest = engine.submit(Resumption.prompt(prompt, Arrays.copyOf(expected, d)),
                    Resumption.options(options, d), null);
            rest.await();
            assertThat(concat(Arrays.copyOf(expected, d), rest.tokens())).as("resumed after %d tokens", d)
                    .isEqualTo(expected);
        }
    }

    private static int[] concat(int[] a, int[] b) {
        int[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
