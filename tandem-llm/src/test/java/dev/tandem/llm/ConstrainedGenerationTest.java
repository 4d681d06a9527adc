package dev.tandem.llm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.SpecVersion;
import dev.tandem.CpuDeviceConfig;
import dev.tandem.Outcome;
import dev.tandem.RunOptions;
import dev.tandem.Status;
import dev.tandem.Token;
import dev.tandem.TokenStream;
import dev.tandem.Worker;
import dev.tandem.llm.gguf.GgufCheckpointWriter;
import dev.tandem.llm.gguf.GgufFile;
import dev.tandem.llm.gguf.GgufTensor;
import dev.tandem.llm.gguf.GgufValue;
import dev.tandem.llm.gguf.GgufValueType;
import dev.tandem.llm.grammar.Grammar;
import dev.tandem.llm.grammar.GrammarException;
import dev.tandem.llm.grammar.GrammarMatcher;
import dev.tandem.llm.model.LlamaRequest;
import dev.tandem.llm.reference.GgufWriter;
import dev.tandem.llm.reference.RandomWeights;
import dev.tandem.llm.sampling.SamplerConfig;
import dev.tandem.llm.sampling.TokenLogprobs;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Constrained decoding and log-probabilities end to end on the embedded model, through both decode
 * paths: a request of its own ({@link LanguageModel#request}) and the continuous {@link Batcher}.
 */
class ConstrainedGenerationTest {
    static final ObjectMapper JSON = new ObjectMapper();
    static final String WEATHER = """
            {"type":"object","properties":{
              "city":{"type":"string","maxLength":12},
              "unit":{"enum":["celsius","fahrenheit"]},
              "days":{"type":"integer"},
              "tags":{"type":"array","items":{"type":"string","maxLength":5},"maxItems":3},
              "alert":{"anyOf":[{"type":"boolean"},{"type":"null"}]}},
             "required":["city","unit","days","tags","alert"],"additionalProperties":false}""";

    static Worker worker;
    static LanguageModel model;

    @BeforeAll
    static void load() {
        worker = Worker.create(CpuDeviceConfig.withCores(2));
        model = LanguageModel.load(worker, EmbeddedModel.path(), 2048);
    }

    @AfterAll
    static void close() {
        worker.close();
    }

    static Completion run(String prompt, GenerateOptions options) {
        int[] tokens = model.encode(prompt);
        return model.start(worker.run(model.program(), model.request(tokens, options), model.runOptions(options)),
                tokens, options);
    }

    static void assertValid(String schema, String output) throws Exception {
        JsonNode value = JSON.readTree(output);
        var errors = JsonSchemaFactory.getInstance(SpecVersion.VersionFlag.V202012).getSchema(schema).validate(value);
        assertThat(errors).as(output).isEmpty();
    }

    static GenerateOptions sampled(long seed) {
        return GenerateOptions.defaults().withMaxTokens(1000)
                .withSampler(SamplerConfig.builder().temperature(1.0f).topK(0).topP(1).minP(0).seed(seed).build());
    }

    @Test
    void aSchemaRequestOfItsOwnYieldsValidJsonWhateverTheSeed() throws Exception {
        for (long seed = 0; seed < 6; seed++) {
            Completion c = run("Once upon a time", sampled(seed).withGrammar(Grammar.jsonSchema(WEATHER)));
            String text = c.await();
            assertThat(c.finishReason()).as(text).isEqualTo(FinishReason.STOP);
            assertValid(WEATHER, text);
        }
    }

    @Test
    void greedyUnderAGrammarIsValidToo() throws Exception {
        Completion c = run("Once upon a time", GenerateOptions.defaults().withMaxTokens(1000)
                .withGrammar(Grammar.jsonSchema(WEATHER)));
        assertThat(c.await()).isNotEmpty();
        assertThat(c.finishReason()).isEqualTo(FinishReason.STOP);
        assertValid(WEATHER, c.text());
    }

    @Test
    void randomSchemasThroughTheBatcherAllValidate() throws Exception {
        List<String> schemas = new ArrayList<>();
        List<Completion> completions = new ArrayList<>();
        try (Batcher batcher = Batcher.start(worker, model, BatcherConfig.builder().maxBatch(4).build())) {
            for (long seed = 0; seed < 12; seed++) {
                String schema = new dev.tandem.llm.grammar.RandomSchemasAccess(seed).root();
                schemas.add(schema);
                completions.add(batcher.submit(model.encode("Lily"), sampled(seed).withGrammar(Grammar.jsonSchema(schema)),
                        null));
            }
            for (int i = 0; i < completions.size(); i++) {
                Completion c = completions.get(i);
                String text = c.await();
                assertThat(c.finishReason()).as(schemas.get(i) + " gave " + text).isEqualTo(FinishReason.STOP);
                assertValid(schemas.get(i), text);
            }
        }
    }

    @Test
    void jsonObjectOutputsParseOrAreAValidBeginningWhenCutByTheLimit() throws Exception {
        try (Batcher batcher = Batcher.start(worker, model, BatcherConfig.builder().maxBatch(4).build())) {
            List<Completion> completions = new ArrayList<>();
            for (long seed = 0; seed < 4; seed++) {
                completions.add(batcher.submit(model.encode("Tom"), sampled(seed).withMaxTokens(300)
                        .withGrammar(Grammar.jsonObject()), null));
            }
            for (Completion c : completions) {
                String text = c.await();
                if (c.finishReason() == FinishReason.STOP) {
                    assertThat(JSON.readTree(text).isObject()).as(text).isTrue();
                } else {
                    assertThat(c.finishReason()).isEqualTo(FinishReason.LENGTH);
                    GrammarMatcher m = model.compile(Grammar.jsonObject()).matcher();
                    for (int t : c.tokens()) {
                        m.accept(t); // throws if the text left the grammar
                    }
                }
            }
        }
    }

    @Test
    void aForcedToolCallParsesWithValidArguments() throws Exception {
        String prefix = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": ";
        Grammar call = Grammar.sequence(Grammar.literal(prefix), Grammar.jsonSchema(WEATHER),
                Grammar.literal("}\n</tool_call>"));
        try (Batcher batcher = Batcher.start(worker, model, BatcherConfig.defaults())) {
            String text = batcher.submit(model.encode("Once"), sampled(11).withGrammar(call), null).await();
            assertThat(text).startsWith(prefix).endsWith("}\n</tool_call>");
            JsonNode wrapped = JSON.readTree(text.substring("<tool_call>\n".length(),
                    text.length() - "\n</tool_call>".length()));
            assertValid(WEATHER, wrapped.get("arguments").toString());
        }
    }

    @Test
    void badConstraintOptionsFailClearly() {
        assertThat(GenerateOptions.defaults().withGrammar(Grammar.jsonObject()).withGrammar(null).grammar()).isNull();
        assertThatThrownBy(() -> Grammar.jsonSchema("{\"type\":\"string\",\"pattern\":\"a*\"}"))
                .isInstanceOf(GrammarException.class).hasMessageContaining("pattern");
        assertThatThrownBy(() -> GenerateOptions.defaults().withIgnoreEos(true).withGrammar(Grammar.jsonObject()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ignoreEos");
        assertThatThrownBy(() -> GenerateOptions.defaults().withLogprobs(21))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("logprobs");
    }

    @Test
    void logprobsOfARequestOfItsOwnAreTheLogSoftmaxOfItsLogits() {
        int[] prompt = model.encode("Lily and Ben");
        int top = 5;
        LlamaRequest request = LlamaRequest.of(prompt, 16).withSampler(SamplerConfig.GREEDY).withLogprobs(top)
                .withLogits(true);
        TokenStream stream = worker.run(model.program(), request, RunOptions.defaults().withMaxTokens(16));
        int vocab = model.config().vocab();
        ValueLayout.OfFloat f32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
        int steps = 0;
        for (Token t : stream) {
            MemorySegment bytes = MemorySegment.ofArray(t.bytes());
            int token = t.asInts()[0];
            TokenLogprobs lp = TokenLogprobs.readFrom(bytes, request.logprobsAt(0));
            long logitsAt = request.logprobsAt(1);
            double max = Double.NEGATIVE_INFINITY;
            for (int i = 0; i < vocab; i++) {
                max = Math.max(max, bytes.get(f32, logitsAt + 4L * i));
            }
            double sum = 0;
            for (int i = 0; i < vocab; i++) {
                sum += Math.exp(bytes.get(f32, logitsAt + 4L * i) - max);
            }
            double lse = max + Math.log(sum);
            assertThat(lp.token()).isEqualTo(token);
            assertThat(lp.logprob()).isCloseTo((float) (bytes.get(f32, logitsAt + 4L * token) - lse), within(1e-4f));
            assertThat(lp.topTokens()).hasSize(top);
            assertThat(lp.topTokens()[0]).as("greedy draws the most likely").isEqualTo(token);
            steps++;
        }
        assertThat(steps).isEqualTo(16);
    }

    @Test
    void logprobsReachTheCompletionInBothPathsAndAgree() {
        GenerateOptions options = GenerateOptions.defaults().withMaxTokens(24).withLogprobs(3)
                .withGrammar(Grammar.jsonSchema(WEATHER));
        Completion alone = run("Tom", options);
        List<TokenLogprobs> fromDeltas = new ArrayList<>();
        for (Completion.Delta d : alone) {
            if (d.token() >= 0 && !model.endsGeneration(d.token())) {
                assertThat(d.logprobs()).isNotNull();
                assertThat(d.logprobs().token()).isEqualTo(d.token());
                fromDeltas.add(d.logprobs());
            }
        }
        assertThat(alone.logprobs()).isEqualTo(fromDeltas).hasSize(alone.tokens().length);
        try (Batcher batcher = Batcher.start(worker, model, BatcherConfig.defaults())) {
            Completion batched = batcher.submit(model.encode("Tom"), options, null);
            batched.await();
            assertThat(batched.tokens()).isEqualTo(alone.tokens());
            assertThat(batched.logprobs()).hasSize(alone.logprobs().size());
            for (int i = 0; i < alone.logprobs().size(); i++) {
                TokenLogprobs a = alone.logprobs().get(i);
                TokenLogprobs b = batched.logprobs().get(i);
                assertThat(b.topTokens()).isEqualTo(a.topTokens());
                assertThat(b.logprob()).isCloseTo(a.logprob(), within(1e-4f));
            }
        }
        Completion plain = run("Tom", GenerateOptions.defaults().withMaxTokens(4));
        for (Completion.Delta d : plain) {
            assertThat(d.logprobs()).isNull();
        }
        assertThat(plain.logprobs()).isEmpty();
    }

    @Test
    void randomWeightModelsKeepToRandomSchemas(@TempDir Path dir) throws Exception {
        for (long weights = 1; weights <= 2; weights++) {
            Path file = dir.resolve("random-" + weights + ".gguf");
            new GgufCheckpointWriter(RandomWeights.forText(model.config(), weights)).vocabularyFrom(EmbeddedModel.path())
                    .write(file);
            try (Worker own = Worker.create(CpuDeviceConfig.withCores(2))) {
                LanguageModel random = LanguageModel.load(own, file, 2048);
                try (Batcher batcher = Batcher.start(own, random, BatcherConfig.builder().maxBatch(4).build())) {
                    List<String> schemas = new ArrayList<>();
                    List<Completion> completions = new ArrayList<>();
                    for (long seed = 0; seed < 6; seed++) {
                        String schema = new dev.tandem.llm.grammar.RandomSchemasAccess(weights * 100 + seed).root();
                        schemas.add(schema);
                        completions.add(batcher.submit(random.encode("Lily"),
                                sampled(seed).withGrammar(Grammar.jsonSchema(schema)), null));
                    }
                    for (int i = 0; i < completions.size(); i++) {
                        Completion c = completions.get(i);
                        String text = c.await();
                        assertThat(c.finishReason()).as(schemas.get(i) + " gave " + text).isEqualTo(FinishReason.STOP);
                        assertValid(schemas.get(i), text);
                    }
                }
            }
        }
    }

    /**
     * A copy of the embedded model whose byte token for 0x01 is a control token: nothing else spells
     * that byte, so a grammar that needs it cannot go on.
     */
    private static Path withoutByte01(Path dir) throws Exception {
        Path copy = dir.resolve("no-0x01.gguf");
        try (GgufFile source = GgufFile.open(EmbeddedModel.path())) {
            GgufWriter w = new GgufWriter().version(source.version());
            source.metadata().asMap().forEach(w::put);
            List<String> tokens = source.metadata().strings("tokenizer.ggml.tokens");
            int id = tokens.indexOf("<0x01>");
            assertThat(id).as("the embedded vocabulary has byte tokens").isPositive();
            long[] types = Arrays.stream(source.metadata().ints("tokenizer.ggml.token_type")).asLongStream().toArray();
            types[id] = 3; // CONTROL
            w.put("tokenizer.ggml.token_type", GgufValue.integers(GgufValueType.INT32, types));
            for (GgufTensor t : source.tensors()) {
                w.tensor(t.name(), t.type(), t.dims(), source.data(t));
            }
            w.write(copy);
        }
        return copy;
    }

    @Test
    void aMemberWhoseGrammarTheVocabularyCannotContinueFailsAloneInTheBatch(@TempDir Path dir) throws Exception {
        try (Worker own = Worker.create(CpuDeviceConfig.withCores(2))) {
            LanguageModel m = LanguageModel.load(own, withoutByte01(dir), 512);
            Grammar needs01 = Grammar.literal("a\u0001b");
            try (Batcher batcher = Batcher.start(own, m, BatcherConfig.builder().maxBatch(4).build())) {
                Completion plain = batcher.submit(m.encode("Once"), GenerateOptions.defaults().withMaxTokens(40)
                        .withIgnoreEos(true), null);
                Completion stuck = batcher.submit(m.encode("Once"), GenerateOptions.defaults().withMaxTokens(40)
                        .withGrammar(needs01), null);
                stuck.await();
                assertThat(stuck.finishReason()).isEqualTo(FinishReason.ABORTED);
                Outcome outcome = stuck.outcome();
                assertThat(outcome.status()).isEqualTo(Status.FAILED);
                assertThat(outcome.cause()).hasMessageContaining("cannot spell");
                // "a" was delivered before the failure; a failed stream may end before its reader takes it
                assertThat("a").startsWith(stuck.text());
                plain.await();
                assertThat(plain.finishReason()).isEqualTo(FinishReason.LENGTH);
                assertThat(plain.tokens()).hasSize(40);
                Completion after = batcher.submit(m.encode("Once"), GenerateOptions.defaults().withMaxTokens(5), null);
                after.await();
                assertThat(after.tokens()).hasSize(5);
            }
            // A request of its own fails the same way.
            GenerateOptions options = GenerateOptions.defaults().withMaxTokens(40).withGrammar(needs01);
            int[] prompt = m.encode("Once");
            Completion alone = m.start(own.run(m.program(), m.request(prompt, options), m.runOptions(options)), prompt,
                    options);
            alone.await();
            assertThat(alone.finishReason()).isEqualTo(FinishReason.ABORTED);
            assertThat(alone.outcome().status()).isEqualTo(Status.FAILED);
        }
    }
}
