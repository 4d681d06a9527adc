package dev.tandem.llm.grammar;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.time.Duration;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

/** Schemas tandem cannot compile fail with the keyword and the place named; none hangs. */
class JsonSchemaGrammarTest {

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "{\"type\":\"string\",\"pattern\":\"a+\"}                                     | pattern              | ",
        "{\"type\":\"string\",\"pattern\":\"^(?=a)a$\"}                               | pattern              | ",
        "{\"type\":\"string\",\"pattern\":\"^(a)\\\\1$\"}                              | pattern              | ",
        "{\"type\":\"string\",\"pattern\":\"^a+?$\"}                                  | pattern              | ",
        "{\"type\":\"string\",\"pattern\":\"^[a-$\"}                                  | pattern              | ",
        "{\"type\":\"string\",\"pattern\":\"^a{5,2}$\"}                               | pattern              | ",
        "{\"type\":\"string\",\"pattern\":\"^[^é]$\"}                                 | pattern              | ",
        "{\"type\":\"string\",\"pattern\":\"^a$\",\"maxLength\":3}                    | maxLength            | ",
        "{\"type\":\"string\",\"format\":\"email\"}                                   | format               | ",
        "{\"type\":\"integer\",\"minimum\":3}                                         | minimum              | ",
        "{\"type\":\"number\",\"multipleOf\":2}                                       | multipleOf           | ",
        "{\"oneOf\":[{\"type\":\"string\"}]}                                           | oneOf                | ",
        "{\"allOf\":[{\"type\":\"string\"}]}                                           | allOf                | ",
        "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\",\"pattern\":\"x\"}}} | pattern        | /properties/a",
        "{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}}          | additionalProperties | ",
        "{\"$ref\":\"https://example.com/s.json\"}                                    | $ref                 | ",
        "{\"$ref\":\"#/$defs/Missing\"}                                                | $ref                 | ",
        "{\"type\":\"array\",\"prefixItems\":[{\"type\":\"string\"}]}                    | prefixItems          | ",
        "{\"type\":\"array\",\"items\":[{\"type\":\"string\"}]}                          | items                | ",
        "{\"type\":\"array\",\"minItems\":3,\"maxItems\":2}                            | maxItems             | ",
        "{\"type\":\"string\",\"minLength\":-1}                                        | minLength            | ",
        "{\"type\":\"string\",\"maxLength\":100000}                                    | maxLength            | ",
        "{\"type\":\"strin\"}                                                         | type                 | ",
        "{\"enum\":[]}                                                                | enum                 | ",
        "{\"type\":\"string\",\"enum\":[1,2]}                                          | enum                 | ",
        "{\"type\":\"string\",\"const\":1}                                             | const                | ",
        "{\"anyOf\":[]}                                                               | anyOf                | ",
        "{\"type\":\"object\",\"properties\":{},\"required\":[\"a\"]}                   | required             | ",
        "{\"$ref\":\"#\"}                                                             | $ref                 | ",
        "{\"anyOf\":[{\"$ref\":\"#\"},{\"type\":\"null\"}]}                              | $ref                 | ",
        "{\"type\":\"string\",\"unknownKeyword\":1}                                    | unknownKeyword       | ",
    })
    void anUnsupportedOrBrokenSchemaNamesTheKeyword(String schema, String keyword, String path) {
        assertThatThrownBy(() -> Grammar.jsonSchema(schema.strip()))
                .isInstanceOfSatisfying(GrammarException.class, e -> {
                    assertThat(e.keyword()).isEqualTo(keyword.strip());
                    if (path != null) {
                        assertThat(e.path()).isEqualTo(path.strip());
                    }
                })
                .hasMessageContaining(keyword.strip());
    }

    @Test
    void aSchemaThatMustContainItselfAcceptsNothingAndIsRefused() {
        String schema = "{\"type\":\"object\",\"properties\":{\"next\":{\"$ref\":\"#\"}},\"required\":[\"next\"]}";
        assertThatThrownBy(() -> Grammar.jsonSchema(schema)).isInstanceOf(GrammarException.class)
                .hasMessageContaining("accepts no finite text");
    }

    @Test
    void aRecursiveSchemaWithAWayOutCompiles() {
        String schema = "{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"value\":{\"type\":\"integer\"},"
                + "\"children\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/node\"},\"maxItems\":2}},"
                + "\"required\":[\"value\",\"children\"],\"additionalProperties\":false}},\"$ref\":\"#/$defs/node\"}";
        assertThat(Grammar.jsonSchema(schema).key()).contains("children");
    }

    @Test
    void malformedJsonIsAClearError() {
        assertThatThrownBy(() -> Grammar.jsonSchema("{\"type\": ")).isInstanceOf(GrammarException.class)
                .hasMessageContaining("not valid JSON");
        assertThatThrownBy(() -> Grammar.jsonSchema("42")).isInstanceOf(GrammarException.class)
                .hasMessageContaining("must be an object or a boolean");
        assertThatThrownBy(() -> Grammar.jsonSchema("false")).isInstanceOf(GrammarException.class)
                .hasMessageContaining("accepts no value");
        assertThatThrownBy(() -> Grammar.jsonSchema("[" .repeat(2000))).isInstanceOf(GrammarException.class);
    }

    @Test
    void annotationsAreAcceptedAndTypeListsAlternate() {
        Grammar g = Grammar.jsonSchema("{\"title\":\"t\",\"description\":\"d\",\"$schema\":"
                + "\"https://json-schema.org/draft/2020-12/schema\",\"type\":[\"string\",\"null\"],\"default\":null}");
        GrammarMatcher m = GrammarMatcherTest.SMALL.compile(g).matcher();
        for (byte b : "null".getBytes()) {
            m.accept(b & 0xFF);
        }
        assertThat(m.isAccepting()).isTrue();
    }

    /** Random edits of valid schemas: each compiles or fails with a GrammarException, quickly. */
    @Property(tries = 300)
    void mangledSchemasFailClearlyAndNeverHang(@ForAll long seed) {
        Random random = new Random(seed);
        StringBuilder s = new StringBuilder(new RandomSchemas(seed).root().toString());
        String[] inserts = {"{", "}", "[", "]", "\"", ",", ":", "\"$ref\":\"#\",", "\"anyOf\":[],", "null", "-1",
            "\"type\":\"x\",", "\"required\":[\"zz\"],", "\"items\":{\"$ref\":\"#\"},", "\"maxItems\":0,"};
        int edits = 1 + random.nextInt(4);
        for (int i = 0; i < edits; i++) {
            int at = random.nextInt(s.length() + 1);
            if (random.nextBoolean() && s.length() > 1) {
                s.deleteCharAt(Math.min(at, s.length() - 1));
            } else {
                s.insert(at, inserts[random.nextInt(inserts.length)]);
            }
        }
        String schema = s.toString();
        assertTimeoutPreemptively(Duration.ofSeconds(10), () -> {
            try {
                Grammar g = Grammar.jsonSchema(schema);
                GrammarMatcherTest.walk(GrammarMatcherTest.SMALL.compile(g), random, false);
            } catch (GrammarException e) {
                assertThat(e.getMessage()).isNotBlank();
            }
        }, schema);
    }
}
