package dev.tandem.llm.model;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.CpuDeviceConfig;
import dev.tandem.Outcome;
import dev.tandem.RequestOptions;
import dev.tandem.RunOptions;
import dev.tandem.Session;
import dev.tandem.SessionConfig;
import dev.tandem.Status;
import dev.tandem.Token;
import dev.tandem.TokenStream;
import dev.tandem.Worker;
import dev.tandem.kernels.Ops;
import dev.tandem.kernels.TensorType;
import dev.tandem.llm.reference.ByteTokenizer;
import dev.tandem.llm.reference.LlamaReference;
import dev.tandem.llm.reference.RandomWeights;
import dev.tandem.llm.sampling.SamplerConfig;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class LlamaModelTest {

    /** What a request's stream showed: per sequence its tokens (until FINISHED), per step its logits. */
    record Streamed(List<List<Integer>> tokens, List<float[][]> logits, Outcome outcome) {}

    static Streamed collect(TokenStream stream, LlamaRequest request, int vocab) {
        int batch = request.batch();
        List<List<Integer>> tokens = new ArrayList<>();
        for (int b = 0; b < batch; b++) {
            tokens.add(new ArrayList<>());
        }
        List<float[][]> logits = new ArrayList<>();
        for (Token token : stream) {
            ByteBuffer bytes = ByteBuffer.wrap(token.bytes()).order(ByteOrder.LITTLE_ENDIAN);
            for (int b = 0; b < batch; b++) {
                int value = bytes.getInt();
                if (value != LlamaRequest.FINISHED) {
                    tokens.get(b).add(value);
                }
            }
            if (request.logits()) {
                float[][] step = new float[batch][vocab];
                for (int b = 0; b < batch; b++) {
                    for (int i = 0; i < vocab; i++) {
                        step[b][i] = bytes.getFloat();
                    }
                }
                logits.add(step);
            }
        }
        return new Streamed(tokens, logits, stream.completion().join());
    }

    static Streamed run(LlamaConfig config, long seed, LlamaRequest request, LlamaModel.Options options) {
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
            LlamaModel model = LlamaModel.load(worker, new RandomWeights(config, seed), Ops.preferred(), options);
            TokenStream stream = worker.run(model.program(), request,
                    RunOptions.defaults().withMaxTokens(request.maxTokens()));
            return collect(stream, request, config.vocab());
        }
    }

    static void assertMatchesReference(LlamaConfig config, long seed, LlamaRequest request,
            LlamaModel.Options options) {
        Streamed streamed = run(config, seed, request.withLogits(true), options);
        assertThat(streamed.outcome().status()).as("%s", streamed.outcome()).isEqualTo(Status.COMPLETED);
        LlamaReference reference = new LlamaReference(new RandomWeights(config, seed), options.kvType());
        for (int b = 0; b < request.batch(); b++) {
            LlamaReference.Generation expected = reference.generate(request, b);
            assertThat(streamed.tokens().get(b)).as("tokens of sequence %d", b)
                    .containsExactly(Arrays.stream(expected.tokens()).boxed().toArray(Integer[]::new));
            for (int k = 0; k < expected.tokens().length; k++) {
                float[] want = expected.logits()[k];
                float[] got = streamed.logits().get(k)[b];
                double tolerance = reference.logitTolerance() * LlamaReference.maxMagnitude(want);
                for (int i = 0; i < want.length; i++) {
                    assertThat((double) got[i]).as("logit %d of token %d of sequence %d", i, k, b)
                            .isCloseTo(want[i], org.assertj.core.data.Offset.offset(tolerance));
                }
            }
        }
    }

    private static int[] prompt(int length, int salt) {
        int[] tokens = new int[length];
        for (int i = 0; i < length; i++) {
            tokens[i] = (i * 37 + salt * 11 + 3) % 256;
        }
        return tokens;
    }

    @Test
    void f32MultiHeadMatchesTheReferenceAcrossSeveralKvBlocks() {
        var config = new LlamaConfig(64, 2, 4, 4, 96, ByteTokenizer.VOCAB, 128, 10000f, 1e-5f, TensorType.F32);
        assertMatchesReference(config, 11, LlamaRequest.of(prompt(5, 1), 40), new LlamaModel.Options(16, 4096, 0));
    }

    /** The f32 cache, kept as the option for whoever wants the keys and values unrounded, still matches the reference. */
    @Test
    void anF32CacheMatchesTheReference() {
        var config = new LlamaConfig(64, 2, 8, 2, 192, ByteTokenizer.VOCAB, 96, 10000f, 1e-5f, TensorType.Q8_0);
        var request = LlamaRequest.batch(new int[][] {prompt(1, 1), prompt(7, 2), prompt(20, 3)}, 24);
        assertMatchesReference(config, 12, request, new LlamaModel.Options(8, 2048, 3).withKvType(KvType.F32));
    }

    /**
     * The f16 cache's logits differ from the f32 cache's by at most this fraction of the largest
     * f32 logit, step by step while both pick the same tokens. Measured 1.2e-4 to 1.5e-4 on the
     * random models of dim 64 and 256 (GQA 8 over 2 heads, contexts up to 100, seeds 20 to 23),
     * where each picked the same 120 tokens; a cache read at a wrong offset or widened wrong moves
     * logits by their own magnitude.
     */
    static final double F16_CACHE_LOGIT_TOLERANCE = 1e-3;

    @ParameterizedTest(name = "dim {0}")
    @ValueSource(ints = {64, 256})
    void anF16CacheStaysCloseToAnF32Cache(int dim) {
        var config = new LlamaConfig(dim, 2, 8, 2, 2 * dim, ByteTokenizer.VOCAB, 128, 10000f, 1e-5f, TensorType.F32);
        var request = LlamaRequest.batch(new int[][] {prompt(1, 1), prompt(7, 2), prompt(60, 3)}, 40).withLogits(true)
                .withSampler(SamplerConfig.GREEDY);
        var options = new LlamaModel.Options(16, 2048, 3);
        Streamed half = run(config, 21, request, options.withKvType(KvType.F16));
        Streamed full = run(config, 21, request, options.withKvType(KvType.F32));
        for (int b = 0; b < request.batch(); b++) {
            int agreed = 0;
            for (int k = 0; k < full.tokens().get(b).size(); k++) {
                float[] f32 = full.logits().get(k)[b];
                float[] f16 = half.logits().get(k)[b];
                double tolerance = F16_CACHE_LOGIT_TOLERANCE * LlamaReference.maxMagnitude(f32);
                for (int i = 0; i < f32.length; i++) {
                    assertThat((double) f16[i]).as("logit %d of token %d of sequence %d", i, k, b)
                            .isCloseTo(f32[i], org.assertj.core.data.Offset.offset(tolerance));
                }
                if (!full.tokens().get(b).get(k).equals(half.tokens().get(b).get(k))) {
                    break;
                }
                agreed++;
            }
            assertThat(agreed).as("tokens of sequence %d both caches pick", b).isGreaterThanOrEqualTo(8);
        }
    }

    @Test
    void q8GroupedQueryRaggedBatchMatchesTheReference() {
        var config = new LlamaConfig(64, 2, 8, 2, 192, ByteTokenizer.VOCAB, 96, 10000f, 1e-5f, TensorType.Q8_0);
        var request = LlamaRequest.batch(new int[][] {prompt(1, 1), prompt(7, 2), prompt(20, 3)}, 24);
        assertMatchesReference(config, 12, request, new LlamaModel.Options(8, 2048, 3));
    }

    /**
     * Matmul tasks split into parts of a few rows (several per row block, and a q/k/v task whose
     * parts span three matrices): a ragged q8_0 batch decodes as the reference.
     */
    @Test
    void matmulsSplitIntoManyPartsMatchTheReference() {
        var config = new LlamaConfig(64, 2, 8, 2, 192, ByteTokenizer.VOCAB, 96, 10000f, 1e-5f, TensorType.Q8_0);
        var request = LlamaRequest.batch(new int[][] {prompt(1, 1), prompt(7, 2), prompt(20, 3)}, 24);
        assertMatchesReference(config, 13, request, new LlamaModel.Options(8, 2048, 3, 3 * 68));
    }

    /** q4_0 weights run as stored: a ragged batch whose prefill takes the kernels' four-input path. */
    @Test
    void q4_0GroupedQueryRaggedBatchMatchesTheReference() {
        var config = new LlamaConfig(64, 2, 8, 2, 192, ByteTokenizer.VOCAB, 96, 10000f, 1e-5f, TensorType.Q4_0);
        var request = LlamaRequest.batch(new int[][] {prompt(1, 1), prompt(7, 2), prompt(20, 3)}, 24);
        assertMatchesReference(config, 12, request, new LlamaModel.Options(8, 2048, 3));
    }

    /**
     * q4_0 matrices wide enough for whole interleaved groups ({@code Q4_0_X16}): a tied classifier
     * of 258 rows (16 groups and 2 rows in the q4_0 layout), row blocks and parts of a few
     * kilobytes that must start on groups, and a ragged batch through the two-input path.
     */
    @Test
    void q4_0InterleavedTiedClassifierWithSmallPartsMatchesTheReference() {
        var config = new LlamaConfig(512, 1, 8, 2, 768, ByteTokenizer.VOCAB, 32, 10000f, 1e-5f, TensorType.Q4_0)
                .withVariants(false, false, true);
        var request = LlamaRequest.batch(new int[][] {prompt(3, 4), prompt(6, 5), prompt(1, 6)}, 6);
        assertMatchesReference(config, 21, request, new LlamaModel.Options(16, 40 << 10, 2, 5000));
    }

    @Test
    void f32GroupedQueryLongPrefillMatchesTheReference() {
        var config = new LlamaConfig(96, 3, 6, 3, 160, ByteTokenizer.VOCAB, 128, 500000f, 1e-6f, TensorType.F32);
        var request = LlamaRequest.batch(new int[][] {prompt(37, 4), prompt(3, 5)}, 12);
        assertMatchesReference(config, 13, request, LlamaModel.Options.defaults());
    }

    @Test
    void tinyNamedShapeMatchesTheReference() {
        assertMatchesReference(LlamaConfig.named("tiny"), 14, LlamaRequest.of(ByteTokenizer.encode("Hello"), 20),
                LlamaModel.Options.defaults());
    }

    @Test
    void seededSamplingMatchesTheReferenceAndRepeats() {
        var config = new LlamaConfig(64, 2, 4, 2, 128, ByteTokenizer.VOCAB, 64, 10000f, 1e-5f, TensorType.Q8_0);
        var request = LlamaRequest.batch(new int[][] {prompt(4, 6), prompt(9, 7)}, 16)
                .withSampler(SamplerConfig.builder().temperature(0.9f).topP(0.9f).seed(99).build());
        assertMatchesReference(config, 15, request, LlamaModel.Options.defaults());
        Streamed first = run(config, 15, request, LlamaModel.Options.defaults());
        Streamed second = run(config, 15, request, LlamaModel.Options.defaults());
        assertThat(first.tokens()).isEqualTo(second.tokens());
        Streamed greedy = run(config, 15, request.withSampler(SamplerConfig.GREEDY), LlamaModel.Options.defaults());
        assertThat(first.tokens()).isNotEqualTo(greedy.tokens());
    }

    /**
     * Only a plain greedy configuration samples with the kernels' argmax: a greedy one with a
     * penalty or a bias takes the sampler chain (the reference applies them, and they change the
     * tokens), and one asking for log-probabilities, even with no alternatives, gets each token's
     * record.
     */
    @Test
    void greedyWithPenaltiesBiasesOrLogprobsTakesTheSamplerChain() {
        var config = LlamaConfig.named("tiny");
        var greedy = LlamaRequest.batch(new int[][] {prompt(5, 2), prompt(8, 3)}, 24);
        Streamed plain = run(config, 17, greedy, LlamaModel.Options.defaults());
        var penalised = greedy.withSampler(SamplerConfig.GREEDY.toBuilder().repetitionPenalty(1.8f).repeatLastN(64).build());
        assertMatchesReference(config, 17, penalised, LlamaModel.Options.defaults());
        assertThat(run(config, 17, penalised, LlamaModel.Options.defaults()).tokens()).isNotEqualTo(plain.tokens());
        int first = plain.tokens().get(0).get(0);
        var biased = greedy.withSampler(SamplerConfig.GREEDY.toBuilder().logitBias(java.util.Map.of(first, -1000f)).build());
        assertMatchesReference(config, 17, biased, LlamaModel.Options.defaults());
        assertThat(run(config, 17, biased, LlamaModel.Options.defaults()).tokens().get(0)).doesNotContain(first);
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
            LlamaModel model = LlamaModel.load(worker, new RandomWeights(config, 17));
            var logprobs = greedy.withLogprobs(0);
            TokenStream stream = worker.run(model.program(), logprobs, RunOptions.defaults().withMaxTokens(24));
            for (Token token : stream) {
                for (int b = 0; b < 2; b++) {
                    var record = dev.tandem.llm.sampling.TokenLogprobs.readFrom(
                            java.lang.foreign.MemorySegment.ofArray(token.bytes()), logprobs.logprobsAt(b));
                    assertThat(record.token()).as("step %d sequence %d", token.step(), b).isEqualTo(token.asInts()[b]);
                    assertThat(record.logprob()).isFinite().isLessThanOrEqualTo(0f);
                    assertThat(record.topTokens()).isEmpty();
                }
            }
        }
    }

    @Test
    void aSequenceEndsAtItsStopTokenAndTheRequestWhenAllHave() {
        var config = LlamaConfig.named("tiny");
        long seed = 16;
        var base = LlamaRequest.batch(new int[][] {prompt(3, 8), prompt(6, 9)}, 30);
        LlamaReference reference = new LlamaReference(new RandomWeights(config, seed), LlamaModel.Options.DEFAULT_KV_TYPE);
        int[] first = reference.generate(base, 0).tokens();
        int at = 4;
        while (firstIndexOf(first, first[at]) < at) {
            at++; // a token that sequence 0 yields first at step `at`, so that it stops there
        }
        int stop = first[at];
        var request = base.withStopToken(stop);
        int[][] expected = {reference.generate(request, 0).tokens(), reference.generate(request, 1).tokens()};
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
            LlamaModel model = LlamaModel.load(worker, new RandomWeights(config, seed));
            TokenStream stream = worker.run(model.program(), request,
                    RunOptions.defaults().withMaxTokens(request.maxTokens()));
            // stopWhen is a session option; with worker.run every step arrives, FINISHED after the stop.
            Streamed streamed = collect(stream, request, config.vocab());
            assertThat(streamed.tokens().get(0)).containsExactly(box(expected[0]));
            assertThat(streamed.tokens().get(0)).hasSize(at + 1).last().isEqualTo(stop);
            assertThat(streamed.tokens().get(1)).containsExactly(box(expected[1]));
        }
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(2));
                Session<LlamaRequest> session = worker.openSession(
                        LlamaModel.load(worker, new RandomWeights(config, seed)).program(), SessionConfig.defaults())) {
            TokenStream stream = session.submit(request,
                    RequestOptions.defaults().maxTokens(request.maxTokens()).stopWhen(request.stopWhen()));
            Streamed streamed = collect(stream, request, config.vocab());
            assertThat(streamed.outcome().status()).isEqualTo(Status.COMPLETED);
            int steps = Math.max(expected[0].length, expected[1].length);
            boolean bothStop = expected[0][expected[0].length - 1] == stop && expected[1][expected[1].length - 1] == stop;
            assertThat(streamed.outcome().tokens()).isEqualTo(bothStop ? steps : request.maxTokens());
        }
    }

    private static int firstIndexOf(int[] values, int value) {
        for (int i = 0; i < values.length; i++) {
            if (values[i] == value) {
                return i;
            }
        }
        return -1;
    }

    private static Integer[] box(int[] values) {
        return Arrays.stream(values).boxed().toArray(Integer[]::new);
    }

    @Test
    void concurrentRequestsThroughASessionEachMatchTheReference() {
        var config = LlamaConfig.named("tiny");
        long seed = 17;
        LlamaReference reference = new LlamaReference(new RandomWeights(config, seed), LlamaModel.Options.DEFAULT_KV_TYPE);
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
            LlamaModel model = LlamaModel.load(worker, new RandomWeights(config, seed));
            List<LlamaRequest> requests = new ArrayList<>();
            long memory = 0;
            for (int i = 0; i < 4; i++) {
                LlamaRequest request = LlamaRequest.of(ByteTokenizer.encode("request " + i), 24 + i);
                requests.add(request);
                memory = Math.max(memory, model.requestBytes(request));
            }
            try (Session<LlamaRequest> session = worker.openSession(model.program(),
                    SessionConfig.defaults().maxActive(4).memoryPerRequest(memory))) {
                List<TokenStream> streams = new ArrayList<>();
                for (LlamaRequest request : requests) {
                    streams.add(session.submit(request, RequestOptions.defaults().maxTokens(request.maxTokens())));
                }
                for (int i = 0; i < requests.size(); i++) {
                    Streamed streamed = collect(streams.get(i), requests.get(i), config.vocab());
                    assertThat(streamed.outcome().status()).isEqualTo(Status.COMPLETED);
                    assertThat(streamed.tokens().getFirst())
                            .containsExactly(box(reference.generate(requests.get(i), 0).tokens()));
                }
            }
        }
    }

    @Test
    void scalarKernelsGiveTheSameTokens() {
        var config = LlamaConfig.named("tiny");
        var request = LlamaRequest.of(ByteTokenizer.encode("scalar"), 12);
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
            LlamaModel model = LlamaModel.load(worker, new RandomWeights(config, 18), Ops.scalar(),
                    LlamaModel.Options.defaults());
            Streamed streamed = collect(worker.run(model.program(), request,
                    RunOptions.defaults().withMaxTokens(12)), request, config.vocab());
            LlamaReference reference = new LlamaReference(new RandomWeights(config, 18), model.options().kvType());
            assertThat(streamed.tokens().getFirst()).containsExactly(box(reference.generate(request, 0).tokens()));
        }
    }

    /**
     * The accesses of a pass's own buffers come from a cache of 256 slots: asked for the same
     * access again, it returns the same object; asked for 2,000 different ones (so that slots
     * collide), every access it returns is exactly the buffer, range and mode asked for.
     */
    @Test
    void activationAccessesAreMadeOnceAndAlwaysWhatWasAskedFor() {
        var config = new LlamaConfig(64, 2, 4, 4, 96, ByteTokenizer.VOCAB, 128, 10000f, 1e-5f, TensorType.F32);
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(1))) {
            LlamaModel model = LlamaModel.load(worker, new RandomWeights(config, 3));
            LlamaModel.Activations a = model.new Activations(4, 1, worker::allocate);
            dev.tandem.Access first = a.read(a.x, 0, 64);
            assertThat(a.read(a.x, 0, 64)).isSameAs(first);
            assertThat(a.write(a.x, 0, 64)).isNotSameAs(first).satisfies(
                    w -> assertThat(w.mode()).isEqualTo(dev.tandem.AccessMode.WRITE));
            dev.tandem.Buffer[] buffers = {a.x, a.xn, a.q, a.hb};
            java.util.Random random = new java.util.Random(7);
            for (int i = 0; i < 2000; i++) {
                dev.tandem.Buffer buffer = buffers[random.nextInt(buffers.length)];
                long offset = 4L * random.nextInt(16);
                long length = 4L * (1 + random.nextInt(16));
                int mode = random.nextInt(3);
                dev.tandem.Access access = mode == 0 ? a.read(buffer, offset, length)
                        : mode == 1 ? a.write(buffer, offset, length) : a.readWrite(buffer, offset, length);
                assertThat(access.region()).as("access %d", i).isEqualTo(new dev.tandem.Region(buffer, offset, length));
                assertThat(access.mode()).as("access %d", i).isEqualTo(dev.tandem.AccessMode.values()[mode]);
            }
        }
    }
}
