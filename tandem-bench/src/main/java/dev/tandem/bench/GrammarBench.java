package dev.tandem.bench;

import dev.tandem.CpuDeviceConfig;
import dev.tandem.Worker;
import dev.tandem.llm.Completion;
import dev.tandem.llm.EmbeddedModel;
import dev.tandem.llm.GenerateOptions;
import dev.tandem.llm.LanguageModel;
import dev.tandem.llm.gguf.GgufVocabulary;
import dev.tandem.llm.grammar.Grammar;
import dev.tandem.llm.grammar.GrammarVocabulary;
import dev.tandem.llm.grammar.TokenGrammar;
import dev.tandem.llm.sampling.Sampler;
import dev.tandem.llm.sampling.SamplerConfig;
import dev.tandem.llm.tokenizer.Tokenizer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;

/**
 * What constrained decoding costs per token: the sample step with and without a grammar (the
 * mask's lookup and application, the matcher's advance) over real vocabularies, with random
 * logits, and whole decoding on the embedded model with and without a grammar. Contenders
 * alternate within each round; figures are medians over the rounds after the first.
 *
 * <p>{@code java ... dev.tandem.bench.GrammarBench [vocab.gguf ...]}: vocabulary-only GGUF files
 * (say {@code ../shared/models/vocab/ggml-vocab-llama-spm.gguf}); the embedded model's always.
 */
public final class GrammarBench {
    static final String SCHEMA = """
            {"type":"object","properties":{
              "city":{"type":"string","maxLength":24},
              "unit":{"enum":["celsius","fahrenheit"]},
              "days":{"type":"integer"},
              "tags":{"type":"array","items":{"type":"string","maxLength":12},"maxItems":4},
              "alert":{"anyOf":[{"type":"boolean"},{"type":"null"}]}},
             "required":["city","unit","days","tags","alert"],"additionalProperties":false}""";

    private GrammarBench() {}

    /**
     * One sampler comparison.
     *
     * @param coldMs the first sequence (to its end token, at most 10,000 tokens) under a grammar compiled
     *               afresh for a fresh vocabulary: the trie, the tables and every mask it meets, ms
     */
    public record SamplerRow(String vocabulary, int vocab, String grammar, double plainNs, double constrainedNs,
            double coldMs) {
        public double ratio() {
            return constrainedNs / plainNs;
        }
    }

    public static SamplerRow sampler(String name, Tokenizer tokenizer, Grammar grammar, String grammarName,
            int rounds, int tokens) {
        int vocab = tokenizer.vocabSize();
        int eos = tokenizer.eos();
        float[] logits = new float[vocab];
        Random random = new Random(1);
        for (int i = 0; i < vocab; i++) {
            logits[i] = (float) random.nextGaussian() * 2;
        }
        SamplerConfig config = SamplerConfig.builder().seed(7).build(); // llama.cpp's defaults: top-k 40 ...
        long t0 = System.nanoTime();
        GrammarVocabulary v = GrammarVocabulary.of(tokenizer, t -> t == eos);
        TokenGrammar compiled = v.compile(grammar);
        Sampler cold = new Sampler(config, vocab, compiled.matcher(), -1);
        while (!cold.grammar().isEnded() && cold.position() < 10_000) {
            cold.sample(logits, 0);
        }
        double coldMs = (System.nanoTime() - t0) / 1e6;
        List<Double> plain = new ArrayList<>();
        List<Double> constrained = new ArrayList<>();
        for (int round = 0; round <= rounds; round++) {
            Sampler p = new Sampler(config.toBuilder().seed(round).build(), vocab);
            long a = System.nanoTime();
            for (int i = 0; i < tokens; i++) {
                p.sample(logits, 0);
            }
            long b = System.nanoTime();
            Sampler c = new Sampler(config.toBuilder().seed(round).build(), vocab, compiled.matcher(), -1);
            long d = System.nanoTime();
            for (int i = 0; i < tokens; i++) {
                c.sample(logits, 0);
                if (c.grammar().isEnded()) {
                    c.reset();
                }
            }
            long e = System.nanoTime();
            if (round > 0) {
                plain.add((double) (b - a) / tokens);
                constrained.add((double) (e - d) / tokens);
            }
        }
        return new SamplerRow(name, vocab, grammarName, Stats.median(plain), Stats.median(constrained), coldMs);
    }

    /** Whole decoding on the embedded model: median ns per generated token, without and with a grammar. */
    public record DecodeRow(double plainNs, double constrainedNs, int constrainedTokens) {
        public double ratio() {
            return constrainedNs / plainNs;
        }
    }

    public static DecodeRow decode(int rounds) {
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
            LanguageModel model = LanguageModel.load(worker, EmbeddedModel.path(), 2048);
            int[] prompt = model.encode("Once upon a time");
            GenerateOptions plain = GenerateOptions.defaults().withMaxTokens(256).withIgnoreEos(true);
            GenerateOptions constrained = GenerateOptions.defaults().withMaxTokens(1024)
                    .withGrammar(Grammar.jsonSchema(SCHEMA));
            List<Double> p = new ArrayList<>();
            List<Double> c = new ArrayList<>();
            int n = 0;
            for (int round = 0; round <= rounds; round++) {
                double a = perToken(model, worker, prompt, plain);
                long start = System.nanoTime();
                Completion done = run(model, worker, prompt, constrained);
                done.await();
                n = done.tokens().length;
                double b = (double) (System.nanoTime() - start) / Math.max(1, n);
                if (round > 0) {
                    p.add(a);
                    c.add(b);
                }
            }
            return new DecodeRow(Stats.median(p), Stats.median(c), n);
        }
    }

    private static Completion run(LanguageModel model, Worker worker, int[] prompt, GenerateOptions options) {
        return model.start(worker.run(model.program(), model.request(prompt, options), model.runOptions(options)),
                prompt, options);
    }

    private static double perToken(LanguageModel model, Worker worker, int[] prompt, GenerateOptions options) {
        long start = System.nanoTime();
        Completion c = run(model, worker, prompt, options);
        c.await();
        return (double) (System.nanoTime() - start) / Math.max(1, c.tokens().length);
    }

    /** The rows of one run. */
    public record Result(List<SamplerRow> rows, DecodeRow decode, List<String> skipped) {
        /** A markdown table of the sampler rows and a line for the decode row. */
        public String markdown() {
            StringBuilder out = new StringBuilder();
            for (String s : skipped) {
                out.append("skipped ").append(s).append(": no such file\n");
            }
            out.append("| vocabulary | tokens | grammar | plain ns/token | constrained ns/token | ratio |"
                    + " first sequence ms |\n| --- | --- | --- | --- | --- | --- | --- |\n");
            for (SamplerRow r : rows) {
                out.append(String.format(Locale.ROOT, "| %s | %d | %s | %.0f | %.0f | %.2f | %.1f |%n",
                        r.vocabulary(), r.vocab(), r.grammar(), r.plainNs(), r.constrainedNs(), r.ratio(), r.coldMs()));
            }
            out.append(String.format(Locale.ROOT, "decode stories260K (request of its own, greedy): plain %.1f"
                    + " us/token, schema %.1f us/token (%d tokens), ratio %.2f%n", decode.plainNs() / 1e3,
                    decode.constrainedNs() / 1e3, decode.constrainedTokens(), decode.ratio()));
            return out.toString();
        }

        /** The figures as JSON-ready maps. */
        public java.util.Map<String, Object> toJson() {
            java.util.Map<String, Object> json = new java.util.LinkedHashMap<>();
            json.put("sampler", rows.stream().map(r -> {
                java.util.Map<String, Object> m = new java.util.LinkedHashMap<>();
                m.put("vocabulary", r.vocabulary());
                m.put("tokens", r.vocab());
                m.put("grammar", r.grammar());
                m.put("plain_ns_per_token", r.plainNs());
                m.put("constrained_ns_per_token", r.constrainedNs());
                m.put("ratio", r.ratio());
                m.put("first_sequence_ms", r.coldMs());
                return m;
            }).toList());
            json.put("decode_plain_us_per_token", decode.plainNs() / 1e3);
            json.put("decode_constrained_us_per_token", decode.constrainedNs() / 1e3);
            json.put("decode_ratio", decode.ratio());
            json.put("skipped", skipped);
            return json;
        }
    }

    /**
     * The sampler rows (the embedded vocabulary, then each vocabulary-only GGUF that exists) and the
     * decode row, {@code rounds} measured rounds each after one of warm-up.
     */
    public static Result run(List<Path> vocabularies, int rounds) {
        List<SamplerRow> rows = new ArrayList<>();
        List<String> skipped = new ArrayList<>();
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(1))) {
            Tokenizer embedded = LanguageModel.load(worker, EmbeddedModel.path()).tokenizer();
            rows.add(sampler("stories260K", embedded, Grammar.jsonSchema(SCHEMA), "schema", rounds, 4000));
            rows.add(sampler("stories260K", embedded, Grammar.jsonObject(), "json_object", rounds, 4000));
        }
        for (Path path : vocabularies) {
            if (!Files.exists(path)) {
                skipped.add(path.toString());
                continue;
            }
            Tokenizer t = Tokenizer.of(GgufVocabulary.read(path));
            String name = path.getFileName().toString().replace(".gguf", "");
            rows.add(sampler(name, t, Grammar.jsonSchema(SCHEMA), "schema", rounds, 2000));
            rows.add(sampler(name, t, Grammar.jsonObject(), "json_object", rounds, 2000));
        }
        return new Result(rows, decode(Math.max(1, rounds - 2)), skipped);
    }
}
