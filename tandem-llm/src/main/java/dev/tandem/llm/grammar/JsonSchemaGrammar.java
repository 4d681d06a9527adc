package dev.tandem.llm.grammar;

import static dev.tandem.llm.grammar.Grammar.EMPTY;
import static dev.tandem.llm.grammar.Grammar.alt;
import static dev.tandem.llm.grammar.Grammar.oneOf;
import static dev.tandem.llm.grammar.Grammar.range;
import static dev.tandem.llm.grammar.Grammar.repeat;
import static dev.tandem.llm.grammar.Grammar.seq;
import static dev.tandem.llm.grammar.Grammar.text;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.tandem.llm.grammar.Grammar.Node;
import dev.tandem.llm.grammar.Grammar.Rule;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The JSON Schema subset that {@link Grammar#jsonSchema} compiles: what OpenAI's strict mode
 * accepts, and a little more. Every keyword outside it is a {@link GrammarException} naming it;
 * nothing is ignored silently except the annotations listed below.
 *
 * <ul>
 *   <li>{@code type}: a name or a list of names ({@code string}, {@code number}, {@code integer},
 *       {@code boolean}, {@code null}, {@code object}, {@code array}); without it, any JSON value
 *       (or an object/array when {@code properties}/{@code items} say so);
 *   <li>objects: {@code properties}, emitted in the schema's order, each required one always and
 *       each other one optionally; {@code required} (every name must be a property);
 *       {@code additionalProperties} {@code false} or {@code true}/absent (no property beyond the
 *       listed ones is generated: the output still validates). An object schema without
 *       {@code properties} generates any object ({@code {}} if additional properties are false);
 *   <li>strings: {@code minLength}, {@code maxLength} (in characters; an escape is one), {@code enum}
 *       and {@code const} (of any JSON values); {@code pattern}, anchored, in the regular-expression
 *       subset of {@link PatternGrammar}; {@code format} {@code date} (days up to 28, so every date
 *       generated exists), {@code time} and {@code date-time} (offsets within ±17:59), {@code uuid}
 *       (others are refused); a
 *       pattern or format beside a length bound is refused (put the bound into the pattern);
 *       {@code pattern} and {@code format} on other types have no effect, as JSON Schema says;
 *   <li>numbers and integers: JSON's syntax, at most 16 digits before and after the point and 2 in
 *       the exponent; {@code minimum}, {@code maximum}, {@code multipleOf} are refused;
 *   <li>arrays: {@code items} (a schema), {@code minItems}, {@code maxItems};
 *   <li>{@code anyOf}; {@code $ref} to {@code #}, {@code #/$defs/...} or {@code #/definitions/...}
 *       (any JSON pointer into the document), recursion included; {@code $defs}, {@code definitions};
 *   <li>annotations, accepted and without effect: {@code title}, {@code description},
 *       {@code $schema}, {@code $id}, {@code $comment}, {@code examples}, {@code default},
 *       {@code deprecated}, {@code readOnly}, {@code writeOnly}.
 * </ul>
 *
 * A schema whose language is empty ({@code enum: []}, {@code minItems > maxItems}, a required
 * property that must contain itself) or that refers to itself without consuming anything
 * ({@code {"$ref": "#"}}) is refused too: generation could never end.
 */
public final class JsonSchemaGrammar {

    private static final Set<String> ANNOTATIONS = Set.of("title", "description", "$schema", "$id", "$comment",
            "examples", "default", "deprecated", "readOnly", "writeOnly");
    private static final Set<String> SUPPORTED = Set.of("type", "properties", "required", "additionalProperties",
            "items", "minItems", "maxItems", "minLength", "maxLength", "pattern", "format", "enum", "const", "anyOf",
            "$ref", "$defs", "definitions");
    private static final Set<String> TYPES = Set.of("string", "number", "integer", "boolean", "null", "object",
            "array");
    /** Bounds above this are refused: their rules would be as many. */
    static final int MAX_BOUND = 4096;

    private static final ObjectMapper MAPPER = JsonMapper.builder().build();

    static {
        MAPPER.getFactory().setStreamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(256).build());
    }

    private final JsonNode document;
    private final Map<String, Rule> refs = new HashMap<>();
    private int depth;

    private JsonSchemaGrammar(JsonNode document) {
        this.document = document;
    }

    static JsonNode parse(String schema) {
        try {
            JsonNode node = MAPPER.readTree(schema);
            if (node == null || node.isMissingNode()) {
                throw new GrammarException(null, "", "the schema is empty");
            }
            return node;
        } catch (JsonProcessingException e) {
            throw new GrammarException(null, null, "the schema is not valid JSON: " + e.getOriginalMessage());
        }
    }

    static Node compile(JsonNode schema) {
        return new JsonSchemaGrammar(schema).value(schema, "");
    }

    private Node value(JsonNode schema, String path) {
        if (++depth > 512) {
            throw new GrammarException(null, path, "the schema nests deeper than 512 levels");
        }
        try {
            return valueOf(schema, path);
        } finally {
            depth--;
        }
    }

    private Node valueOf(JsonNode schema, String path) {
        if (schema.isBoolean()) {
            if (!schema.booleanValue()) {
                throw new GrammarException(null, path, "the schema false accepts no value");
            }
            return anyValue();
        }
        if (!schema.isObject()) {
            throw new GrammarException(null, path, "a schema must be an object or a boolean, not " + kind(schema));
        }
        Set<String> structural = new LinkedHashSet<>();
        for (Iterator<String> it = schema.fieldNames(); it.hasNext(); ) {
            String k = it.next();
            if (ANNOTATIONS.contains(k)) {
                continue;
            }
            if (!SUPPORTED.contains(k)) {
                throw unsupported(k, path);
            }
            if (!k.equals("$defs") && !k.equals("definitions")) {
                structural.add(k);
            }
        }
        if (schema.has("$ref")) {
            only(structural, "$ref", path);
            return ref(schema.get("$ref"), path);
        }
        if (schema.has("anyOf")) {
            only(structural, "anyOf", path);
            JsonNode alternatives = schema.get("anyOf");
            if (!alternatives.isArray() || alternatives.isEmpty()) {
                throw new GrammarException("anyOf", path, "anyOf must be a non-empty array of schemas");
            }
            List<Node> nodes = new ArrayList<>();
            for (int i = 0; i < alternatives.size(); i++) {
                nodes.add(value(alternatives.get(i), path + "/anyOf/" + i));
            }
            return new Grammar.Alt(nodes);
        }
        Set<String> types = types(schema, path);
        if (schema.has("const")) {
            JsonNode c = schema.get("const");
            if (!matchesType(c, types)) {
                throw new GrammarException("const", path, "const " + c + " is not of the schema's type " + types);
            }
            return literal(c);
        }
        if (schema.has("enum")) {
            JsonNode values = schema.get("enum");
            if (!values.isArray()) {
                throw new GrammarException("enum", path, "enum must be an array");
            }
            List<Node> nodes = new ArrayList<>();
            for (JsonNode v : values) {
                if (matchesType(v, types)) {
                    nodes.add(literal(v));
                }
            }
            if (nodes.isEmpty()) {
                throw new GrammarException("enum", path, "enum has no value" + (types == null ? "" : " of type "
                        + types) + ": the schema accepts nothing");
            }
            return new Grammar.Alt(nodes);
        }
        if (types == null) {
            if (schema.has("properties") || schema.has("required") || schema.has("additionalProperties")) {
                types = Set.of("object");
            } else if (schema.has("items") || schema.has("minItems") || schema.has("maxItems")) {
                types = Set.of("array");
            } else if (schema.has("minLength") || schema.has("maxLength") || schema.has("pattern")
                    || schema.has("format")) {
                types = Set.of("string");
            } else {
                return anyValue();
            }
        }
        List<Node> nodes = new ArrayList<>();
        for (String type : types) {
            nodes.add(switch (type) {
                case "string" -> string(schema, path);
                case "number" -> NUMBER;
                case "integer" -> INTEGER;
                case "boolean" -> alt(text("true"), text("false"));
                case "null" -> text("null");
                case "object" -> object(schema, path);
                case "array" -> array(schema, path);
                default -> throw new AssertionError(type);
            });
        }
        return nodes.size() == 1 ? nodes.get(0) : new Grammar.Alt(nodes);
    }

    /** The types named by {@code type}, in order; null without it. */
    private static Set<String> types(JsonNode schema, String path) {
        JsonNode type = schema.get("type");
        if (type == null) {
            return null;
        }
        Set<String> types = new LinkedHashSet<>();
        if (type.isTextual()) {
            types.add(type.textValue());
        } else if (type.isArray() && !type.isEmpty()) {
            for (JsonNode t : type) {
                if (!t.isTextual()) {
                    throw new GrammarException("type", path, "type must name types, not " + kind(t));
                }
                types.add(t.textValue());
            }
        } else {
            throw new GrammarException("type", path, "type must be a type name or a non-empty array of them");
        }
        for (String t : types) {
            if (!TYPES.contains(t)) {
                throw new GrammarException("type", path, "type \"" + t + "\" is not a JSON Schema type " + TYPES);
            }
        }
        return types;
    }

    private static boolean matchesType(JsonNode v, Set<String> types) {
        if (types == null) {
            return true;
        }
        for (String t : types) {
            boolean match = switch (t) {
                case "string" -> v.isTextual();
                case "number" -> v.isNumber();
                case "integer" -> v.isIntegralNumber() || (v.isNumber() && v.decimalValue().stripTrailingZeros().scale() <= 0);
                case "boolean" -> v.isBoolean();
                case "null" -> v.isNull();
                case "object" -> v.isObject();
                case "array" -> v.isArray();
                default -> false;
            };
            if (match) {
                return true;
            }
        }
        return false;
    }

    private static void only(Set<String> structural, String keyword, String path) {
        for (String k : structural) {
            if (!k.equals(keyword)) {
                throw new GrammarException(k, path, "\"" + k + "\" beside \"" + keyword
                        + "\" is not supported: put it inside the " + keyword + (keyword.equals("anyOf")
                                ? " alternatives" : " target"));
            }
        }
    }

    private static GrammarException unsupported(String keyword, String path) {
        String why = switch (keyword) {
            case "patternProperties" -> "property names by pattern are not supported in constrained decoding";
            case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf" ->
                    "numeric bounds are not supported in constrained decoding";
            case "oneOf" -> "oneOf is not supported (its alternatives must exclude each other); use anyOf";
            case "allOf", "not", "if", "then", "else", "dependentRequired", "dependentSchemas" ->
                    "this combinator is not supported in constrained decoding";
            default -> "it is not in the supported subset of JSON Schema";
        };
        return new GrammarException(keyword, path, "unsupported JSON Schema keyword \"" + keyword + "\": " + why);
    }

    private Node ref(JsonNode ref, String path) {
        if (!ref.isTextual()) {
            throw new GrammarException("$ref", path, "$ref must be a string");
        }
        String target = ref.textValue();
        if (!target.equals("#") && !target.startsWith("#/")) {
            throw new GrammarException("$ref", path, "$ref \"" + target
                    + "\" is not supported: only references within the schema (\"#\", \"#/$defs/Name\")");
        }
        Rule rule = refs.get(target);
        if (rule != null) {
            return rule;
        }
        JsonNode node = document.at(target.substring(1).isEmpty() ? "" : target.substring(1));
        if (node.isMissingNode()) {
            throw new GrammarException("$ref", path, "$ref \"" + target + "\" points at nothing in the schema");
        }
        rule = new Rule("$ref " + target);
        refs.put(target, rule);
        rule.define(value(node, target.substring(1)));
        return rule;
    }

    private Node string(JsonNode schema, String path) {
        if (schema.has("pattern") || schema.has("format")) {
            String keyword = schema.has("pattern") ? "pattern" : "format";
            for (String other : List.of("pattern", "format", "minLength", "maxLength")) {
                if (!other.equals(keyword) && schema.has(other)) {
                    throw new GrammarException(other, path, "\"" + other + "\" beside \"" + keyword
                            + "\" is not supported: put the length into the pattern ({n,m})");
                }
            }
            JsonNode value = schema.get(keyword);
            if (!value.isTextual()) {
                throw new GrammarException(keyword, path, keyword + " must be a string");
            }
            Node content = keyword.equals("pattern") ? PatternGrammar.compile(value.textValue(), path)
                    : PatternGrammar.format(value.textValue(), path);
            return seq(oneOf("\""), content, oneOf("\""));
        }
        int min = bound(schema, "minLength", 0, path);
        int max = bound(schema, "maxLength", -1, path);
        if (max >= 0 && max < min) {
            throw new GrammarException("maxLength", path, "maxLength " + max + " < minLength " + min
                    + ": the schema accepts no string");
        }
        if (min == 0 && max < 0) {
            return STRING;
        }
        return seq(oneOf("\""), repeat(CHAR, null, min, max, "chars"), oneOf("\""));
    }

    private Node object(JsonNode schema, String path) {
        JsonNode additional = schema.get("additionalProperties");
        if (additional != null && !additional.isBoolean()) {
            throw new GrammarException("additionalProperties", path,
                    "additionalProperties as a schema is not supported: use false, or list the properties");
        }
        boolean closed = additional != null && !additional.booleanValue();
        JsonNode properties = schema.get("properties");
        if (properties != null && !properties.isObject()) {
            throw new GrammarException("properties", path, "properties must be an object of schemas");
        }
        Set<String> required = new LinkedHashSet<>();
        JsonNode req = schema.get("required");
        if (req != null) {
            if (!req.isArray()) {
                throw new GrammarException("required", path, "required must be an array of property names");
            }
            for (JsonNode r : req) {
                if (!r.isTextual()) {
                    throw new GrammarException("required", path, "required must name properties, not " + kind(r));
                }
                if (properties == null || !properties.has(r.textValue())) {
                    throw new GrammarException("required", path, "required property \"" + r.textValue()
                            + "\" is not among the properties");
                }
                required.add(r.textValue());
            }
        }
        if (properties == null || properties.isEmpty()) {
            return closed ? seq(oneOf("{"), Grammar.whitespace(), oneOf("}")) : anyObject();
        }
        List<String> names = new ArrayList<>();
        List<Node> members = new ArrayList<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = properties.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            names.add(e.getKey());
            Node v = value(e.getValue(), path + "/properties/" + escape(e.getKey()));
            members.add(seq(literal(MAPPER.getNodeFactory().textNode(e.getKey())), Grammar.whitespace(), oneOf(":"),
                    Grammar.whitespace(), v));
        }
        // after(i, any): properties i.. with "any" = whether one was written already (so a comma comes first)
        Node[] withComma = new Node[names.size() + 1];
        Node[] first = new Node[names.size() + 1];
        withComma[names.size()] = EMPTY;
        first[names.size()] = EMPTY;
        Node comma = seq(Grammar.whitespace(), oneOf(","), Grammar.whitespace());
        for (int i = names.size() - 1; i >= 0; i--) {
            Node takeAfterComma = seq(comma, members.get(i), withComma[i + 1]);
            Node takeFirst = seq(members.get(i), withComma[i + 1]);
            if (required.contains(names.get(i))) {
                withComma[i] = new Rule("props-" + i + "-more", takeAfterComma);
                first[i] = new Rule("props-" + i, takeFirst);
            } else {
                withComma[i] = new Rule("props-" + i + "-more", alt(takeAfterComma, withComma[i + 1]));
                first[i] = new Rule("props-" + i, alt(takeFirst, first[i + 1]));
            }
        }
        return seq(oneOf("{"), Grammar.whitespace(), first[0], Grammar.whitespace(), oneOf("}"));
    }

    private Node array(JsonNode schema, String path) {
        if (schema.has("items") && !(schema.get("items").isObject() || schema.get("items").isBoolean())) {
            throw new GrammarException("items", path, "items must be a schema (tuples, an array of schemas, are"
                    + " not supported)");
        }
        Node item = schema.has("items") ? value(schema.get("items"), path + "/items") : anyValue();
        int min = bound(schema, "minItems", 0, path);
        int max = bound(schema, "maxItems", -1, path);
        if (max >= 0 && max < min) {
            throw new GrammarException("maxItems", path, "maxItems " + max + " < minItems " + min
                    + ": the schema accepts no array");
        }
        Node comma = seq(Grammar.whitespace(), oneOf(","), Grammar.whitespace());
        return seq(oneOf("["), Grammar.whitespace(), repeat(item, comma, min, max, "items"), Grammar.whitespace(),
                oneOf("]"));
    }

    private static int bound(JsonNode schema, String keyword, int absent, String path) {
        JsonNode n = schema.get(keyword);
        if (n == null) {
            return absent;
        }
        if (!n.canConvertToExactIntegral() || n.asLong() < 0) {
            throw new GrammarException(keyword, path, keyword + " must be a non-negative integer, not " + n);
        }
        if (n.asLong() > MAX_BOUND) {
            throw new GrammarException(keyword, path, keyword + " " + n + " is above the largest supported bound, "
                    + MAX_BOUND);
        }
        return n.asInt();
    }

    /** The compact JSON text of a value (strings escaped as JSON does). */
    private static Node literal(JsonNode value) {
        try {
            return text(MAPPER.writeValueAsString(value));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String kind(JsonNode n) {
        return n.getNodeType().name().toLowerCase(java.util.Locale.ROOT);
    }

    private static String escape(String name) {
        return name.replace("~", "~0").replace("/", "~1");
    }

    // ---- JSON's own rules ---------------------------------------------------------------------------

    private static final Node HEX = alt(range('0', '9'), range('a', 'f'), range('A', 'F'));

    /** One character of a JSON string: well-formed UTF-8 other than '"', '\' and controls, or an escape. */
    static final Rule CHAR = new Rule("char", alt(
            alt(range(0x20, 0x21), range(0x23, 0x5B), range(0x5D, 0x7F)),
            seq(range(0xC2, 0xDF), range(0x80, 0xBF)),
            seq(range(0xE0, 0xE0), range(0xA0, 0xBF), range(0x80, 0xBF)),
            seq(alt(range(0xE1, 0xEC), range(0xEE, 0xEF)), range(0x80, 0xBF), range(0x80, 0xBF)),
            seq(range(0xED, 0xED), range(0x80, 0x9F), range(0x80, 0xBF)),
            seq(range(0xF0, 0xF0), range(0x90, 0xBF), range(0x80, 0xBF), range(0x80, 0xBF)),
            seq(range(0xF1, 0xF3), range(0x80, 0xBF), range(0x80, 0xBF), range(0x80, 0xBF)),
            seq(range(0xF4, 0xF4), range(0x80, 0x8F), range(0x80, 0xBF), range(0x80, 0xBF)),
            seq(oneOf("\\"), alt(oneOf("\"\\/bfnrt"), seq(oneOf("u"), HEX, HEX, HEX, HEX)))));

    static final Rule STRING = new Rule("string", seq(oneOf("\""), repeat(CHAR, null, 0, -1, "string-chars"),
            oneOf("\"")));

    private static final Node INTEGRAL = alt(oneOf("0"), seq(range('1', '9'), repeat(range('0', '9'), null, 0, 15,
            "int-digits")));
    static final Rule INTEGER = new Rule("integer", seq(alt(EMPTY, oneOf("-")), INTEGRAL));
    static final Rule NUMBER = new Rule("number", seq(INTEGER,
            alt(EMPTY, seq(oneOf("."), repeat(range('0', '9'), null, 1, 16, "fraction-digits"))),
            alt(EMPTY, seq(oneOf("eE"), alt(EMPTY, oneOf("+-")), repeat(range('0', '9'), null, 1, 2,
                    "exponent-digits")))));

    private static Rule anyValueRule;
    private static Rule anyObjectRule;

    /** Any JSON value (objects and arrays nest without bound). */
    static synchronized Rule anyValue() {
        if (anyValueRule == null) {
            Rule value = new Rule("value");
            Node ws = Grammar.whitespace();
            Node comma = seq(ws, oneOf(","), ws);
            Rule object = new Rule("object", seq(oneOf("{"), ws,
                    repeat(seq(STRING, ws, oneOf(":"), ws, value), comma, 0, -1, "members"), ws, oneOf("}")));
            Rule array = new Rule("array", seq(oneOf("["), ws, repeat(value, comma, 0, -1, "elements"), ws,
                    oneOf("]")));
            value.define(alt(object, array, STRING, NUMBER, text("true"), text("false"), text("null")));
            anyValueRule = value;
            anyObjectRule = object;
        }
        return anyValueRule;
    }

    /** Any JSON object. */
    static synchronized Rule anyObject() {
        anyValue();
        return anyObjectRule;
    }
}
