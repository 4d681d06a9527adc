package dev.tandem.llm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tandem.CpuDeviceConfig;
import dev.tandem.RunOptions;
import dev.tandem.Token;
import dev.tandem.TokenStream;
import dev.tandem.Worker;
import dev.tandem.llm.chat.ChatMessage;
import dev.tandem.llm.gguf.GgufFile;
import dev.tandem.llm.gguf.GgufTensor;
import dev.tandem.llm.model.LlamaRequest;
import dev.tandem.llm.reference.GgufWriter;
import dev.tandem.llm.reference.SamplerReference;
import dev.tandem.llm.sampling.SamplerConfig;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The embedded model end to end: sampling on the device, stop strings, EOS, limits, chat fallback. */
class LanguageModelTest {
    static Worker worker;
    static LanguageModel model;

    @BeforeAll
    static void load() {
        worker = Worker.create(CpuDeviceConfig.withCores(2));
        model = LanguageModel.load(worker, EmbeddedModel.path(), 512);
    }

    @AfterAll
    static void close() {
        worker.close();
    }

    private static Completion run(String prompt, GenerateOptions options) {
        int[] tokens = model.encode(prompt);
        return model.start(worker.run(model.program(), model.request(tokens, options), model.runOptions(options)),
                tokens, options);
    }

    /**
     * {@code generate} is a batch of one through the engine: greedy, it yields what the plain
     * program yields for the same request, and once it ends (finished, or cancelled mid-stream)
     * its batcher is closed and the worker's memory and requests are back where they were.
     */
    @Test
    void generateIsABatchOfOneThatReturnsItsMemoryWhenItEnds() throws InterruptedException {
        try (Worker own = Worker.create(CpuDeviceConfig.withCores(2))) {
            LanguageModel m = LanguageModel.load(own, EmbeddedModel.path(), 512);
            long memory = own.memoryInUse();
            int requests = own.liveRequests();
            int[] prompt = m.encode("Once upon a time");
            GenerateOptions options = GenerateOptions.defaults().withMaxTokens(40).withIgnoreEos(true)
                    .withSampler(SamplerConfig.GREEDY);
            Completion one = m.generate(own, prompt, options);
            String text = one.await();
            String plain = m.start(own.run(m.program(), m.request(prompt, options), m.runOptions(options)), prompt,
                    options).await();
            assertThat(text).isEqualTo(plain);
            assertThat(one.tokens()).hasSize(40);
            awaitIdle(own, memory, requests);

            Completion cancelled = m.generate(own, prompt, options.withMaxTokens(400));
            var deltas = cancelled.iterator();
            deltas.next();
            // While it runs it holds about what the plain program's request would: a KV pool of its
            // context and a step as wide as its prompt, not a default batcher's 256 rows.
            long plainBytes = m.model().requestBytes(m.request(prompt, options.withMaxTokens(400)));
            assertThat(own.memoryInUse() - memory).isLessThan(2 * plainBytes);
            cancelled.cancel();
            while (deltas.hasNext()) {
                deltas.next();
            }
            assertThat(cancelled.finishReason()).isEqualTo(FinishReason.ABORTED);
            awaitIdle(own, memory, requests);
        }
    }

    /** Waits, up to 10 s, for the worker's memory and live requests to return to {@code memory} and {@code requests}. */
    private static void awaitIdle(Worker w, long memory, int requests) throws InterruptedException {
        long until = System.nanoTime() + 10_000_000_000L;
        while ((w.memoryInUse() != memory || w.liveRequests() != requests) && System.nanoTime() < until) {
            Thread.sleep(5);
        }
        assertThat(w.memoryInUse()).isEqualTo(memory);
        assertThat(w.liveRequests()).isEqualTo(requests);
    }

    /**
     * A model read for its text only is the loaded model less its weights: the same name,
     * configuration, tokens, chat rendering and limits, and text from a stream decoded by the
     * loaded one; asking it to decode says why it cannot.
     */
    @Test
    void aModelReadForItsTextOnlyTokenizesRendersAndDetokenizesAsTheLoadedOne() {
        LanguageModel text = LanguageModel.loadText(EmbeddedModel.path(), 512);
        assertThat(text.hasWeights()).isFalse();
        assertThat(model.hasWeights()).isTrue();
        assertThat(text.name()).isEqualTo(model.name());
        assertThat(text.config()).isEqualTo(model.config());
        assertThat(text.encode("Once upon a time")).containsExactly(model.encode("Once upon a time"));
        List<ChatMessage> chat = List.of(ChatMessage.user("Tell me a story"));
        assertThat(text.encodeChat(chat)).containsExactly(model.encodeChat(chat));
        assertThat(text.limits().maxTokens(500, 100)).isEqualTo(model.limits().maxTokens(500, 100));
        int[] prompt = model.encode("Once upon a time");
        GenerateOptions options = GenerateOptions.defaults().withMaxTokens(24);
        String loaded = model.generate(worker, prompt, options).await();
        String throughText = text.start(worker.run(model.program(), model.request(prompt, options),
                model.runOptions(options)), prompt, options).await();
        assertThat(throughText).isEqualTo(loaded);
        assertThatThrownBy(text::model).isInstanceOf(IllegalStateException.class).hasMessageContaining("loadText");
        assertThatThrownBy(() -> text.generate(worker, prompt, options))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("no weights");
    }

    @Test
    void theDeviceSamplerDrawsWhatTheReferenceSamplerDrawsFromTheSameLogits() {
        SamplerConfig config = SamplerConfig.builder().temperature(0.9f).topK(40).topP(0.95f).minP(0.05f)
                .repetitionPenalty(1.1f).repeatLastN(16).presencePenalty(0.2f).frequencyPenalty(0.1f).seed(5).build();
        int[] prompt = model.encode("Lily and Ben went to the park.");
        LlamaRequest request = LlamaRequest.of(prompt, 48).withSampler(config).withLogits(true);
        TokenStream stream = worker.run(model.program(), request, RunOptions.defaults().withMaxTokens(48));
        int vocab = model.config().vocab();
        List<Integer> window = new ArrayList<>();
        for (int t : Arrays.copyOfRange(prompt, Math.max(0, prompt.length - 16), prompt.length)) {
            window.add(t);
        }
        long k = 0;
        for (Token t : stream) {
            ByteBuffer b = ByteBuffer.wrap(t.bytes()).order(ByteOrder.LITTLE_ENDIAN);
            int token = b.getInt();
            float[] logits = new float[vocab];
            for (int i = 0; i < vocab; i++) {
                logits[i] = b.getFloat();
            }
            int expected = SamplerReference.sample(logits, config,
                    window.stream().mapToInt(Integer::intValue).toArray(), k);
            assertThat(token).as("token %d", k).isEqualTo(expected);
            window.add(token);
            if (window.size() > 16) {
                window.removeFirst();
            }
            k++;
        }
        assertThat(k).isEqualTo(48);
    }

    @Test
    void aSeedReproducesTheTextAndAnotherSeedChangesIt() {
        GenerateOptions a = GenerateOptions.defaults().withMaxTokens(40)
                .withSampler(SamplerConfig.builder().temperature(1f).seed(11).build());
        String first = run("Once upon a time", a).await();
        assertThat(run("Once upon a time", a).await()).isEqualTo(first);
        assertThat(run("Once upon a time", a.withSampler(a.sampler().toBuilder().seed(12).build())).await())
                .isNotEqualTo(first);
    }

    /**
     * The embedded model as a copy whose EOS is {@code eos}: the stories model itself ends a story
     * with BOS rather than EOS, so a token it does write stands in for the end of a sequence.
     */
    private static Path withEos(Path dir, int eos) throws IOException {
        Path copy = dir.resolve("eos-" + eos + ".gguf");
        try (GgufFile source = GgufFile.open(EmbeddedModel.path())) {
            GgufWriter w = new GgufWriter().version(source.version());
            source.metadata().asMap().forEach(w::put);
            w.put("tokenizer.ggml.eos_token_id", eos);
            for (GgufTensor t : source.tensors()) {
                w.tensor(t.name(), t.type(), t.dims(), source.data(t));
            }
            w.write(copy);
        }
        return copy;
    }

    @Test
    void endsAtEosWithStopAndAtTheLimitWithLength(@TempDir Path dir) throws IOException {
        String greedy = run("Once upon a time", GenerateOptions.defaults().withMaxTokens(40)).await();
        int period = model.tokenizer().id(".").orElseThrow();
        try (Worker own = Worker.create(CpuDeviceConfig.withCores(2))) {
            LanguageModel m = LanguageModel.load(own, withEos(dir, period), 512);
            int[] prompt = m.encode("Once upon a time");
            GenerateOptions options = GenerateOptions.defaults().withMaxTokens(40);
            Completion c = m.start(own.run(m.program(), m.request(prompt, options), m.runOptions(options)), prompt,
                    options);
            String text = c.await();
            assertThat(c.finishReason()).isEqualTo(FinishReason.STOP);
            assertThat(c.stopString()).isNull();
            assertThat(text).isEqualTo(greedy.substring(0, greedy.indexOf('.')));
            assertThat(c.tokens()).doesNotContain(period);
            assertThat(text).isEqualTo(m.tokenizer().decode(c.tokens()));
            // Ignoring EOS, the same model writes on to the limit.
            GenerateOptions ignoring = options.withIgnoreEos(true);
            Completion all = m.start(own.run(m.program(), m.request(prompt, ignoring), m.runOptions(ignoring)), prompt,
                    ignoring);
            assertThat(all.await()).isEqualTo(greedy);
            assertThat(all.finishReason()).isEqualTo(FinishReason.LENGTH);
            assertThat(all.tokens()).hasSize(40);
        }
        Completion short_ = run("Once upon a time", GenerateOptions.defaults().withMaxTokens(10));
        short_.await();
        assertThat(short_.finishReason()).isEqualTo(FinishReason.LENGTH);
        assertThat(short_.tokens()).hasSize(10);
    }

    @Test
    void aControlTokenThatEndsAChatTurnEndsTheCompletionLikeEos(@TempDir Path dir) throws IOException {
        String greedy = run("Once upon a time", GenerateOptions.defaults().withMaxTokens(40)).await();
        int period = model.tokenizer().id(".").orElseThrow();
        Path copy = dir.resolve("im-end.gguf");
        try (GgufFile source = GgufFile.open(EmbeddedModel.path())) {
            GgufWriter w = new GgufWriter().version(source.version());
            source.metadata().asMap().forEach(w::put);
            String[] tokens = source.metadata().strings("tokenizer.ggml.tokens").toArray(String[]::new);
            tokens[period] = "<|im_end|>";
            w.put("tokenizer.ggml.tokens", dev.tandem.llm.gguf.GgufValue.strings(tokens));
            int[] types = source.metadata().ints("tokenizer.ggml.token_type");
            long[] newTypes = Arrays.stream(types).asLongStream().toArray();
            newTypes[period] = 3; // CONTROL
            w.put("tokenizer.ggml.token_type", dev.tandem.llm.gguf.GgufValue.integers(
                    dev.tandem.llm.gguf.GgufValueType.INT32, newTypes));
            for (GgufTensor t : source.tensors()) {
                w.tensor(t.name(), t.type(), t.dims(), source.data(t));
            }
            w.write(copy);
        }
        try (Worker own = Worker.create(CpuDeviceConfig.withCores(2))) {
            LanguageModel m = LanguageModel.load(own, copy, 512);
            assertThat(m.endsGeneration(period)).isTrue();
            assertThat(m.eos()).isEqualTo(2);
            int[] prompt = m.encode("Once upon a time");
            GenerateOptions options = GenerateOptions.defaults().withMaxTokens(40);
            Completion c = m.start(own.run(m.program(), m.request(prompt, options), m.runOptions(options)), prompt,
                    options);
            assertThat(c.await()).isEqualTo(greedy.substring(0, greedy.indexOf('.')));
            assertThat(c.finishReason()).isEqualTo(FinishReason.STOP);
        }
    }

    @Test
    void aStopStringSplitAcrossTokensEndsTheTextBeforeIt() {
        String full = run("Once upon a time", GenerateOptions.defaults().withMaxTokens(60)).await();
        // A stop string that spans token boundaries in the greedy text: "little girl" is several tokens.
        int at = full.indexOf("little girl");
        assertThat(at).isPositive();
        Completion c = run("Once upon a time", GenerateOptions.defaults().withMaxTokens(60)
                .withStop(List.of("zzz", "little girl")));
        String text = c.await();
        assertThat(text).isEqualTo(full.substring(0, at));
        assertThat(c.finishReason()).isEqualTo(FinishReason.STOP);
        assertThat(c.stopString()).isEqualTo("little girl");
        assertThat(c.outcome()).isNotNull();
    }

    @Test
    void aContextThatWouldOverflowEndsWithLength() {
        int[] prompt = model.encode("Once upon a time");
        GenerateOptions options = GenerateOptions.defaults().withMaxTokens(10_000).withIgnoreEos(true);
        LlamaRequest request = model.request(prompt, options);
        assertThat(request.maxTokens()).isEqualTo(model.config().contextLength() - prompt.length);
        int[] tooLong = new int[model.config().contextLength()];
        Arrays.fill(tooLong, 1);
        assertThatThrownBy(() -> model.request(tooLong, options)).hasMessageContaining("leaves no room");
    }

    @Test
    void aModelWithoutATemplateChatsThroughThePlainFallback() {
        assertThat(model.hasChatTemplate()).isFalse();
        int[] tokens = model.encodeChat(List.of(ChatMessage.user("Hi")));
        assertThat(model.tokenizer().decode(Arrays.copyOfRange(tokens, 1, tokens.length)))
                .isEqualTo(model.chatTemplate().render(List.of(ChatMessage.user("Hi")), true));
        assertThat(tokens[0]).isEqualTo(model.tokenizer().bos());
    }

    @Test
    void cancellingACompletionEndsItAborted() {
        Completion c = run("Once upon a time", GenerateOptions.defaults().withMaxTokens(300).withIgnoreEos(true));
        int seen = 0;
        for (Completion.Delta d : c) {
            if (++seen == 3) {
                c.cancel();
            }
        }
        assertThat(c.finishReason()).isEqualTo(FinishReason.ABORTED);
        assertThat(c.outcome().status()).isEqualTo(dev.tandem.Status.CANCELLED);
        assertThat(c.tokens().length).isLessThan(300);
    }
}
