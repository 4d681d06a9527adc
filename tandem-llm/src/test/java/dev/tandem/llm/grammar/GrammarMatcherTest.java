package dev.tandem.llm.grammar;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.SpecVersion;
import com.networknt.schema.ValidationMessage;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.junit.jupiter.api.Test;

/**
 * The token masks against a brute-force reference, and random walks through random schemas (random
 * weights: any allowed token, uniformly) whose every output a real JSON Schema validator accepts.
 */
class GrammarMatcherTest {
    static final ObjectMapper JSON = new ObjectMapper();
    static final JsonSchemaFactory VALIDATORS = JsonSchemaFactory.getInstance(SpecVersion.VersionFlag.V202012);

    /** Every single byte, then pieces that cross JSON's token boundaries, then a control token and EOS. */
    static final List<String> PIECES = List.of("{\"", "\":", "\": ", "\",", "\", \"", "true", "false", "null", "nul",
            "  ", "\n", "\n  ", "ab", "abc", "\"}", "}}", "]}", "[{", "[]", "{}", "12", "0.", "0.5", "e+", "-1",
            "\\u00", "\\n", "é", "ünï", "\"a\"", "name", "\"name", "x y", "}\n", ", ", ",\"");
    static final GrammarVocabulary SMALL = smallVocabulary();
    static final int EOS = SMALL.size() - 1;

    static GrammarVocabulary smallVocabulary() {
        List<byte[]> tokens = new ArrayList<>();
        for (int b = 0; b < 256; b++) {
            tokens.add(new byte[] {(byte) b});
        }
        for (String p : PIECES) {
            tokens.add(p.getBytes(StandardCharsets.UTF_8));
        }
        tokens.add(null); // a control token: never allowed
        tokens.add(new byte[0]); // EOS
        BitSet ends = new BitSet();
        ends.set(tokens.size() - 1);
        return GrammarVocabulary.of(tokens.toArray(byte[][]::new), ends);
    }

    /** The allowed tokens by trying each token's bytes one by one from the matcher's state. */
    static BitSet bruteForce(GrammarMatcher m, GrammarVocabulary vocabulary) {
        BitSet allowed = new BitSet();
        GrammarTable table = m.grammar().table();
        for (int t = 0; t < vocabulary.size(); t++) {
            if (vocabulary.isEnd(t)) {
                if (m.isAccepting()) {
                    allowed.set(t);
                }
                continue;
            }
            byte[] bytes = vocabulary.tokenBytes(t);
            if (bytes.length == 0 || m.isEnded()) {
                continue;
            }
            Stacks s = m.state();
            for (byte b : bytes) {
                s = table.advance(s, b & 0xFF);
                if (s.isDead()) {
                    break;
                }
            }
            if (!s.isDead()) {
                allowed.set(t);
            }
        }
        return allowed;
    }

    /** A random walk: a uniformly random allowed token each step, an end token half the time it is allowed. */
    static String walk(TokenGrammar grammar, Random random, boolean checkMasks) {
        GrammarMatcher m = grammar.matcher();
        GrammarVocabulary v = grammar.vocabulary();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int step = 0; step < 5_000; step++) {
            int[] allowed = m.allowedTokens();
            if (checkMasks) {
                assertThat(BitSet.valueOf(java.util.Arrays.stream(allowed).mapToLong(i -> i).toArray()))
                        .isNotNull();
                BitSet expected = bruteForce(m, v);
                BitSet actual = new BitSet();
                for (int t : allowed) {
                    actual.set(t);
                }
                assertThat(actual).as("mask after %s", out.toString(StandardCharsets.UTF_8)).isEqualTo(expected);
            }
            assertThat(allowed).as("no token allowed after %s", out.toString(StandardCharsets.UTF_8)).isNotEmpty();
            int token;
            if (m.isAccepting() && (random.nextBoolean() || allowed.length == 1)) {
                token = java.util.Arrays.stream(allowed).filter(v::isEnd).findFirst().orElseThrow();
            } else {
                int[] words = java.util.Arrays.stream(allowed).filter(t -> !v.isEnd(t)).toArray();
                token = words[random.nextInt(words.length)];
            }
            m.accept(token);
            if (v.isEnd(token)) {
                return out.toString(StandardCharsets.UTF_8);
            }
            out.writeBytes(v.tokenBytes(token));
        }
        throw new AssertionError("no end after 5000 tokens: " + out.toString(StandardCharsets.UTF_8));
    }

    static void assertValid(JsonNode schema, String output) throws Exception {
        JsonNode value = JSON.readTree(output);
        Set<ValidationMessage> errors = VALIDATORS.getSchema(schema).validate(value);
        assertThat(errors).as("%s against %s", output, schema).isEmpty();
    }

    @Property(tries = 60)
    void theMaskHoldsExactlyTheTokensWhoseBytesCanContinue(@ForAll long seed) {
        JsonNode schema = new RandomSchemas(seed).root();
        TokenGrammar grammar = SMALL.compile(Grammar.jsonSchema(schema.toString()));
        walk(grammar, new Random(seed), true);
    }

    @Property(tries = 300)
    void everyRandomWalkThroughARandomSchemaValidates(@ForAll long seed) throws Exception {
        JsonNode schema = new RandomSchemas(seed).root();
        TokenGrammar grammar = SMALL.compile(Grammar.jsonSchema(schema.toString()));
        Random random = new Random(seed ^ 0x5DEECE66DL);
        for (int i = 0; i < 3; i++) {
            assertValid(schema, walk(grammar, random, false));
        }
    }

    @Property(tries = 200)
    void everyRandomWalkThroughAnyJsonObjectParsesAsAnObject(@ForAll long seed) throws Exception {
        TokenGrammar grammar = SMALL.compile(Grammar.jsonObject());
        String out = closingWalk(grammar, new Random(seed));
        assertThat(JSON.readTree(out).isObject()).as(out).isTrue();
    }

    /** A walk through an unbounded grammar that prefers closing brackets and quotes, so it ends. */
    static String closingWalk(TokenGrammar grammar, Random random) {
        GrammarMatcher m = grammar.matcher();
        GrammarVocabulary v = grammar.vocabulary();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int step = 0; step < 20_000; step++) {
            int[] allowed = m.allowedTokens();
            int token = -1;
            if (m.isAccepting()) {
                token = java.util.Arrays.stream(allowed).filter(v::isEnd).findFirst().orElseThrow();
            } else if (random.nextInt(3) == 0 || step > 200) {
                for (int t : allowed) {
                    byte[] b = v.tokenBytes(t);
                    if (b.length == 1 && (b[0] == '}' || b[0] == ']' || b[0] == '"' || b[0] == '0')) {
                        token = t;
                        break;
                    }
                }
            }
            if (token < 0) {
                token = allowed[random.nextInt(allowed.length)];
            }
            m.accept(token);
            if (v.isEnd(token)) {
                return out.toString(StandardCharsets.UTF_8);
            }
            out.writeBytes(v.tokenBytes(token));
        }
        throw new AssertionError("no end: " + out.toString(StandardCharsets.UTF_8));
    }

    @Property(tries = 100)
    void aForcedToolCallIsTheLiteralsAroundValidArguments(@ForAll long seed) throws Exception {
        JsonNode parameters = new RandomSchemas(seed).root();
        String prefix = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": ";
        String suffix = "}\n</tool_call>";
        Grammar call = Grammar.sequence(Grammar.literal(prefix), Grammar.jsonSchema(parameters.toString()),
                Grammar.literal(suffix));
        String out = walk(SMALL.compile(call), new Random(seed), false);
        assertThat(out).startsWith(prefix).endsWith(suffix);
        JsonNode wrapped = JSON.readTree(out.substring("<tool_call>\n".length(), out.length() - "\n</tool_call>".length()));
        assertThat(wrapped.get("name").asText()).isEqualTo("get_weather");
        assertValid(parameters, wrapped.get("arguments").toString());
    }

    static final List<String> PATTERNS = List.of("^[a-z]{1,3}-[0-9]{2}$", "^(yes|no|maybe)$", "^\\d+(\\.\\d{1,2})?$",
            "^[A-Z][a-z]*( [A-Z][a-z]*)?$", "^[^,\"]{0,4}$", "^.{2,3}$", "^\\w\\s\\W$", "^[\\-+]?\\(?x\\)?$",
            "^(?:ab|c)*d$", "^é[ü-ü]\\u0041\\x42$", "^\"\\\\$", "^\\S{1,2}\\D$");

    /** Each pattern's outputs match it, by the JDK's regular expressions as well as the validator. */
    @Property(tries = 120)
    void everyWalkThroughAPatternMatchesIt(@ForAll long seed) throws Exception {
        Random random = new Random(seed);
        String pattern = PATTERNS.get(random.nextInt(PATTERNS.size()));
        com.fasterxml.jackson.databind.node.ObjectNode schema = JSON.createObjectNode().put("type", "string")
                .put("pattern", pattern);
        String out = walk(SMALL.compile(Grammar.jsonSchema(schema.toString())), random, true);
        assertValid(schema, out);
        assertThat(java.util.regex.Pattern.compile(pattern).matcher(JSON.readTree(out).textValue()).matches())
                .as("%s against %s", out, pattern).isTrue();
    }

    @Property(tries = 60)
    void everyWalkThroughAFormatParses(@ForAll long seed) throws Exception {
        Random random = new Random(seed);
        String[] formats = {"date", "time", "date-time", "uuid"};
        String format = formats[random.nextInt(formats.length)];
        String schema = "{\"type\":\"string\",\"format\":\"" + format + "\"}";
        String value = JSON.readTree(walk(SMALL.compile(Grammar.jsonSchema(schema)), random, false)).textValue();
        switch (format) {
            case "date" -> java.time.LocalDate.parse(value);
            case "time" -> java.time.OffsetTime.parse(value);
            case "date-time" -> java.time.OffsetDateTime.parse(value);
            default -> assertThat(java.util.UUID.fromString(value).toString()).isEqualTo(value);
        }
    }

    @Test
    void anyOfToolCallsAndRepeatsCompose() throws Exception {
        Grammar a = Grammar.sequence(Grammar.literal("A:"), Grammar.jsonSchema("{\"type\":\"integer\"}"));
        Grammar b = Grammar.sequence(Grammar.literal("B:"), Grammar.jsonSchema("{\"type\":\"boolean\"}"));
        Grammar calls = Grammar.repeat(Grammar.anyOf(a, b), Grammar.literal(";"), 1, 3);
        Random random = new Random(7);
        for (int i = 0; i < 50; i++) {
            String out = walk(SMALL.compile(calls), random, true);
            assertThat(out).matches("([AB]:[ \\n\\t]*[^;]+)(;[AB]:[ \\n\\t]*[^;]+){0,2}");
            for (String part : out.split(";")) {
                JsonNode v = JSON.readTree(part.substring(2));
                assertThat(part.startsWith("A:") ? v.isIntegralNumber() : v.isBoolean()).as(part).isTrue();
            }
        }
    }

    @Test
    void endTokensComeOnlyWhereTheTextIsCompleteAndAloneAfterIt() {
        GrammarMatcher m = SMALL.compile(Grammar.literal("ab")).matcher();
        assertThat(m.isAllowed(EOS)).isFalse();
        assertThatThrownBy(() -> m.accept(EOS)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("before the grammar's text is complete");
        m.accept('a');
        assertThat(m.allowedTokens()).containsExactly('b');
        m.accept('b');
        assertThat(m.isAccepting()).isTrue();
        assertThat(m.allowedTokens()).containsExactly(EOS);
        m.accept(EOS);
        assertThat(m.isEnded()).isTrue();
        assertThat(m.allowedTokens()).containsExactly(EOS);
        assertThatThrownBy(() -> m.accept('a')).hasMessageContaining("after an end token");
    }

    @Test
    void aTokenTheGrammarForbidsIsRefusedAndChangesNothing() {
        GrammarMatcher m = SMALL.compile(Grammar.literal("{}")).matcher();
        assertThatThrownBy(() -> m.accept('x')).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not allowed");
        assertThat(m.consumed()).isZero();
        int braces = 256 + PIECES.indexOf("{}");
        m.accept(braces);
        assertThat(m.isAccepting()).isTrue();
    }

    @Test
    void aVocabularyThatCannotSpellTheNextByteFailsClearly() {
        BitSet ends = new BitSet();
        ends.set(1);
        GrammarVocabulary v = GrammarVocabulary.of(new byte[][] {"a".getBytes(), new byte[0]}, ends);
        GrammarMatcher m = v.compile(Grammar.literal("b")).matcher();
        assertThat(m.allowedTokens()).isEmpty();
        assertThatThrownBy(() -> m.applyMask(new float[2], 0)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("cannot spell");
    }

    @Test
    void whitespaceRunsAreBounded() {
        GrammarMatcher m = SMALL.compile(Grammar.jsonSchema("{\"type\":\"boolean\"}")).matcher();
        m.accept('\n');
        for (int i = 0; i < Grammar.MAX_INDENT; i++) {
            assertThat(m.isAllowed(' ')).isTrue();
            m.accept(' ');
        }
        assertThat(m.isAllowed(' ')).isFalse();
        assertThat(m.isAllowed('\n')).isFalse();
        assertThat(m.isAllowed('t')).isTrue();
    }

    @Test
    void compiledGrammarsAndTheirMasksAreCached() {
        String schema = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"required\":[\"a\"]}";
        TokenGrammar g = SMALL.compile(Grammar.jsonSchema(schema));
        assertThat(SMALL.compile(Grammar.jsonSchema(schema))).isSameAs(g);
        GrammarMatcher m = g.matcher();
        for (byte b : "{\"a\":\"xyz".getBytes()) {
            m.accept(b & 0xFF);
        }
        int states = g.cachedStates();
        m.accept('q');
        m.accept('r');
        assertThat(g.cachedStates()).as("inside one string the state repeats").isEqualTo(states);
    }
}
