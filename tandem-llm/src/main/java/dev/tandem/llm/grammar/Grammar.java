package dev.tandem.llm.grammar;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A language of byte strings that constrained decoding keeps the output in: a context-free grammar
 * over bytes, independent of any vocabulary. Immutable and thread-safe; two grammars made from the
 * same parts are {@linkplain #equals equal}, which is what {@link GrammarVocabulary#compile} caches on.
 *
 * <p>Made by the factories: {@link #jsonSchema} (the JSON Schema subset of OpenAI's strict mode, see
 * {@link JsonSchemaGrammar}), {@link #jsonObject} (any JSON object), {@link #jsonValue} (any JSON
 * value), {@link #literal}, and the combinators {@link #sequence}, {@link #anyOf} and {@link #repeat},
 * which build, say, a forced tool call:
 *
 * <pre>{@code
 * Grammar call = Grammar.sequence(
 *         Grammar.literal("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "),
 *         Grammar.jsonSchema(parametersSchema),
 *         Grammar.literal("}\n</tool_call>"));
 * }</pre>
 *
 * <p>Whitespace between JSON tokens is bounded (nothing, one space, or a newline and at most 20
 * spaces or tabs, as llama.cpp's {@code json-schema-to-grammar} has it), and so are the digits of a
 * number (16 before the point, 16 after it, 2 in the exponent), so a model cannot loop forever
 * inside whitespace or a number; strings and arrays are unbounded unless the schema bounds them.
 * A JSON value may be preceded by such whitespace (a SentencePiece model's tokens mostly start with
 * a space).
 */
public final class Grammar {

    /** A node of the grammar's expression tree. Package-private: the compiler walks it. */
    sealed interface Node permits ByteSet, Seq, Alt, Rule {}

    /** One byte of the set (256 bits). */
    record ByteSet(long[] bits) implements Node {
        ByteSet {
            if (bits.length != 4) {
                throw new IllegalArgumentException("a byte set has 4 words");
            }
        }

        boolean contains(int b) {
            return (bits[b >>> 6] >>> (b & 63) & 1L) != 0;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof ByteSet s && Arrays.equals(bits, s.bits);
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(bits);
        }
    }

    /** Its parts one after the other; empty: the empty string. */
    record Seq(List<Node> parts) implements Node {}

    /** One of its alternatives; at least one. */
    record Alt(List<Node> alternatives) implements Node {}

    /**
     * A named nonterminal, the only way a grammar refers to itself (recursion). Its body is set
     * once, after creation, so that a body may refer to its own rule. Compared by identity.
     */
    static final class Rule implements Node {
        final String name;
        private Node body;

        Rule(String name) {
            this.name = name;
        }

        Rule(String name, Node body) {
            this.name = name;
            this.body = body;
        }

        Node body() {
            if (body == null) {
                throw new IllegalStateException("rule " + name + " has no body");
            }
            return body;
        }

        void define(Node value) {
            if (body != null) {
                throw new IllegalStateException("rule " + name + " is defined twice");
            }
            body = Objects.requireNonNull(value);
        }

        @Override
        public String toString() {
            return name;
        }
    }

    static final Seq EMPTY = new Seq(List.of());

    /** The most whitespace characters after a newline between JSON tokens. */
    static final int MAX_INDENT = 20;

    private final Node root;
    private final String key;
    private volatile GrammarTable table;

    private Grammar(Node root, String key) {
        this.root = root;
        this.key = key;
    }

    Node root() {
        return root;
    }

    /** The compiled rule table (made once, on first use). */
    GrammarTable table() {
        GrammarTable t = table;
        if (t == null) {
            t = GrammarTable.compile(this);
            table = t;
        }
        return t;
    }

    // ---- factories ----------------------------------------------------------------------------

    private static final int SCHEMA_CACHE = 256;
    private static final Map<String, Grammar> schemas = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Grammar> eldest) {
            return size() > SCHEMA_CACHE;
        }
    };

    /**
     * The JSON values that a JSON Schema accepts, within the subset {@link JsonSchemaGrammar} lists
     * (OpenAI's strict mode and a little more). Compiled schemas are cached by their text.
     *
     * @throws GrammarException naming the keyword (and where it is) that tandem cannot compile, or
     *         why the schema is malformed or accepts no finite value
     */
    public static Grammar jsonSchema(String schema) {
        Objects.requireNonNull(schema, "schema");
        synchronized (schemas) {
            Grammar cached = schemas.get(schema);
            if (cached != null) {
                return cached;
            }
        }
        Grammar g = jsonSchema(JsonSchemaGrammar.parse(schema));
        synchronized (schemas) {
            schemas.put(schema, g);
        }
        return g;
    }

    /** {@link #jsonSchema(String)} of a parsed schema. */
    public static Grammar jsonSchema(JsonNode schema) {
        Objects.requireNonNull(schema, "schema");
        Node value = JsonSchemaGrammar.compile(schema);
        Grammar g = new Grammar(new Seq(List.of(whitespace(), value)), "json_schema(" + schema + ")");
        g.table(); // left recursion, a schema that accepts nothing: fail here, not at the first token
        return g;
    }

    /** Any JSON object ({@code response_format: json_object}), after bounded whitespace. */
    public static Grammar jsonObject() {
        return Json.OBJECT;
    }

    /** Any JSON value, after bounded whitespace. */
    public static Grammar jsonValue() {
        return Json.VALUE;
    }

    /** Exactly the UTF-8 bytes of {@code text}. */
    public static Grammar literal(String text) {
        Objects.requireNonNull(text, "text");
        return new Grammar(bytes(text.getBytes(StandardCharsets.UTF_8)), "literal(" + quote(text) + ")");
    }

    /** The parts one after the other. */
    public static Grammar sequence(Grammar... parts) {
        return sequence(List.of(parts));
    }

    /** The parts one after the other. */
    public static Grammar sequence(List<Grammar> parts) {
        List<Node> nodes = new ArrayList<>();
        List<String> keys = new ArrayList<>();
        for (Grammar g : parts) {
            nodes.add(Objects.requireNonNull(g, "part").root);
            keys.add(g.key);
        }
        return build(new Seq(nodes), "sequence(" + String.join(", ", keys) + ")");
    }

    /** Any one of the alternatives (at least one). */
    public static Grammar anyOf(Grammar... alternatives) {
        return anyOf(List.of(alternatives));
    }

    /** Any one of the alternatives (at least one). */
    public static Grammar anyOf(List<Grammar> alternatives) {
        if (alternatives.isEmpty()) {
            throw new GrammarException("anyOf", "", "anyOf needs at least one alternative");
        }
        List<Node> nodes = new ArrayList<>();
        List<String> keys = new ArrayList<>();
        for (Grammar g : alternatives) {
            nodes.add(Objects.requireNonNull(g, "alternative").root);
            keys.add(g.key);
        }
        return build(new Alt(nodes), "anyOf(" + String.join(", ", keys) + ")");
    }

    /**
     * {@code part} at least {@code min} and at most {@code max} times in a row, with
     * {@code separator} between two of them (null for none); {@code max < 0} for no bound.
     */
    public static Grammar repeat(Grammar part, Grammar separator, int min, int max) {
        Objects.requireNonNull(part, "part");
        if (min < 0 || (max >= 0 && max < min)) {
            throw new IllegalArgumentException("repeat bounds [" + min + ", " + max + "] must have 0 <= min <= max"
                    + " (max < 0: unbounded)");
        }
        Node node = repeat(part.root, separator == null ? null : separator.root, min, max, "repeat");
        return build(node, "repeat(" + part.key + ", " + (separator == null ? "" : separator.key) + ", " + min
                + ", " + max + ")");
    }

    private static Grammar build(Node root, String key) {
        Grammar g = new Grammar(root, key);
        g.table();
        return g;
    }

    // ---- building blocks (package-private, for the schema compiler) -------------------------------

    static ByteSet range(int from, int to) {
        long[] bits = new long[4];
        for (int b = from; b <= to; b++) {
            bits[b >>> 6] |= 1L << (b & 63);
        }
        return new ByteSet(bits);
    }

    static ByteSet oneOf(String chars) {
        long[] bits = new long[4];
        for (byte b : chars.getBytes(StandardCharsets.UTF_8)) {
            int u = b & 0xFF;
            bits[u >>> 6] |= 1L << (u & 63);
        }
        return new ByteSet(bits);
    }

    static Node bytes(byte[] text) {
        List<Node> parts = new ArrayList<>(text.length);
        for (byte b : text) {
            parts.add(range(b & 0xFF, b & 0xFF));
        }
        return parts.size() == 1 ? parts.get(0) : new Seq(parts);
    }

    static Node text(String text) {
        return bytes(text.getBytes(StandardCharsets.UTF_8));
    }

    static Node seq(Node... parts) {
        return new Seq(List.of(parts));
    }

    static Node alt(Node... alternatives) {
        return new Alt(List.of(alternatives));
    }

    /** {@code node} between {@code min} and {@code max} times ({@code max < 0}: unbounded), separated. */
    static Node repeat(Node node, Node separator, int min, int max, String name) {
        Rule item = node instanceof Rule r ? r : new Rule(name + "-item", node);
        Node rest = separator == null ? item : seq(separator, item);
        Rule restRule = rest instanceof Rule r ? r : new Rule(name + "-next", rest);
        // tail(k): at most k more (k < 0: any number more), each preceded by the separator
        Node tail;
        if (max < 0) {
            Rule loop = new Rule(name + "-more");
            loop.define(alt(EMPTY, seq(restRule, loop)));
            tail = loop;
        } else {
            tail = EMPTY;
            for (int k = 1; k <= max - Math.max(min, 1); k++) {
                tail = new Rule(name + "-upto-" + k, alt(EMPTY, seq(restRule, tail)));
            }
        }
        if (max == 0) {
            return EMPTY;
        }
        List<Node> required = new ArrayList<>();
        required.add(item);
        for (int i = 1; i < min; i++) {
            required.add(restRule);
        }
        required.add(tail);
        Node some = new Seq(required);
        return min == 0 ? alt(EMPTY, some) : some;
    }

    private static final Rule WHITESPACE = new Rule("ws", alt(EMPTY, oneOf(" "),
            seq(oneOf("\n"), repeat(oneOf(" \t"), null, 0, MAX_INDENT, "indent"))));

    /** Nothing, one space, or a newline and at most {@link #MAX_INDENT} spaces or tabs. */
    static Rule whitespace() {
        return WHITESPACE;
    }

    /** Made on first use, after both classes are initialised. */
    private static final class Json {
        static final Grammar VALUE = build(seq(WHITESPACE, JsonSchemaGrammar.anyValue()), "json_value");
        static final Grammar OBJECT = build(seq(WHITESPACE, JsonSchemaGrammar.anyObject()), "json_object");
    }

    private static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    // ---- identity -------------------------------------------------------------------------------

    /** What this grammar is, as made: equal texts, equal languages. */
    public String key() {
        return key;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Grammar g && key.equals(g.key);
    }

    @Override
    public int hashCode() {
        return key.hashCode();
    }

    @Override
    public String toString() {
        return key.length() <= 200 ? key : key.substring(0, 200) + "…";
    }
}
