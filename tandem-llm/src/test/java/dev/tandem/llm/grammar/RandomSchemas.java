package dev.tandem.llm.grammar;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Random;

/**
 * Random JSON Schemas of the supported subset whose languages are finite (strings and arrays
 * bounded), so a random walk through one always ends: objects with required and optional
 * properties, strings with length bounds, patterns or formats, enums and consts of mixed values, numbers, integers,
 * booleans, null, type lists, arrays, anyOf, and $defs/$ref.
 */
final class RandomSchemas {
    private static final JsonNodeFactory F = JsonNodeFactory.instance;
    private static final String[] NAMES = {"a", "name", "x y", "quote\"d", "ünï", "back\\slash", "n1", "tab\t", "id"};

    private final Random random;

    RandomSchemas(long seed) {
        this.random = new Random(seed);
    }

    /** A root schema: an object (as strict mode wants), sometimes with $defs that properties refer to. */
    ObjectNode root() {
        ObjectNode defs = null;
        if (random.nextInt(3) == 0) {
            defs = F.objectNode();
            defs.set("Item", schema(1));
        }
        ObjectNode root = object(0, defs != null);
        if (defs != null) {
            root.set("$defs", defs);
        }
        return root;
    }

    JsonNode schema(int depth) {
        int kind = random.nextInt(depth >= 3 ? 7 : 11);
        return switch (kind) {
            case 0 -> string();
            case 1 -> type("integer");
            case 2 -> type("number");
            case 3 -> type("boolean");
            case 4 -> type("null");
            case 5 -> enumOf();
            case 6 -> constOf();
            case 7 -> object(depth + 1, false);
            case 8 -> array(depth + 1);
            case 9 -> anyOf(depth + 1);
            default -> {
                ObjectNode s = F.objectNode();
                ArrayNode types = s.putArray("type");
                types.add("string").add("null");
                s.put("maxLength", random.nextInt(4));
                yield s;
            }
        };
    }

    private ObjectNode type(String name) {
        ObjectNode s = F.objectNode();
        s.put("type", name);
        if (random.nextBoolean()) {
            s.put("description", "a " + name);
        }
        return s;
    }

    private ObjectNode string() {
        ObjectNode s = type("string");
        if (random.nextInt(4) == 0) {
            s.put("pattern", GrammarMatcherTest.PATTERNS.get(random.nextInt(GrammarMatcherTest.PATTERNS.size())));
            return s;
        }
        if (random.nextInt(6) == 0) {
            s.put("format", new String[] {"date", "time", "date-time", "uuid"}[random.nextInt(4)]);
            return s;
        }
        int min = random.nextInt(3);
        s.put("minLength", min);
        s.put("maxLength", min + random.nextInt(4));
        return s;
    }

    private JsonNode value() {
        return switch (random.nextInt(6)) {
            case 0 -> F.textNode(NAMES[random.nextInt(NAMES.length)]);
            case 1 -> F.numberNode(random.nextInt(2000) - 1000);
            case 2 -> F.numberNode(random.nextInt(1000) / 8.0);
            case 3 -> F.booleanNode(random.nextBoolean());
            case 4 -> F.nullNode();
            default -> F.objectNode().put("k", random.nextInt(9));
        };
    }

    private ObjectNode enumOf() {
        ObjectNode s = F.objectNode();
        ArrayNode values = s.putArray("enum");
        int n = 1 + random.nextInt(4);
        for (int i = 0; i < n; i++) {
            values.add(value());
        }
        return s;
    }

    private ObjectNode constOf() {
        ObjectNode s = F.objectNode();
        s.set("const", value());
        return s;
    }

    private ObjectNode object(int depth, boolean refItem) {
        ObjectNode s = type("object");
        ObjectNode props = s.putObject("properties");
        ArrayNode required = s.putArray("required");
        int n = 1 + random.nextInt(4);
        for (int i = 0; i < n; i++) {
            String name = NAMES[random.nextInt(NAMES.length)] + i;
            if (refItem && i == 0) {
                props.putObject(name).put("$ref", "#/$defs/Item");
            } else {
                props.set(name, schema(depth));
            }
            if (random.nextInt(3) != 0) {
                required.add(name);
            }
        }
        if (random.nextInt(4) != 0) {
            s.put("additionalProperties", false);
        }
        return s;
    }

    private ObjectNode array(int depth) {
        ObjectNode s = type("array");
        s.set("items", schema(depth));
        int min = random.nextInt(3);
        s.put("minItems", min);
        s.put("maxItems", min + random.nextInt(3));
        return s;
    }

    private ObjectNode anyOf(int depth) {
        ObjectNode s = F.objectNode();
        ArrayNode alternatives = s.putArray("anyOf");
        int n = 2 + random.nextInt(2);
        for (int i = 0; i < n; i++) {
            alternatives.add(schema(depth));
        }
        return s;
    }
}
