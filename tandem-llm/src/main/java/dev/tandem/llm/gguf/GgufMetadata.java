package dev.tandem.llm.gguf;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * The key-value metadata of a GGUF file, in file order, with typed getters. A getter of a key
 * whose value has another type throws a {@link GgufException} naming the key, both types and
 * the file; an absent key is an empty optional, and the array getters throw for it.
 */
public final class GgufMetadata {
    private final String source;
    private final Map<String, GgufValue> values;

    GgufMetadata(String source, Map<String, GgufValue> values) {
        this.source = source;
        this.values = Collections.unmodifiableMap(new LinkedHashMap<>(values));
    }

    /** Every key and value, in file order. */
    public Map<String, GgufValue> asMap() {
        return values;
    }

    public boolean contains(String key) {
        return values.containsKey(key);
    }

    public Optional<GgufValue> value(String key) {
        return Optional.ofNullable(values.get(key));
    }

    public Optional<String> string(String key) {
        GgufValue v = values.get(key);
        if (v == null) {
            return Optional.empty();
        }
        expect(key, v, v.type() == GgufValueType.STRING, "a string");
        return Optional.of((String) v.value());
    }

    /** A value of any integer type. */
    public OptionalLong integer(String key) {
        GgufValue v = values.get(key);
        if (v == null) {
            return OptionalLong.empty();
        }
        expect(key, v, v.type().integer(), "an integer");
        return OptionalLong.of((Long) v.value());
    }

    /** A float32 or float64 value, or an integer one, as a double. */
    public Optional<Double> number(String key) {
        GgufValue v = values.get(key);
        if (v == null) {
            return Optional.empty();
        }
        return Optional.of(switch (v.value()) {
            case Float f -> (double) f;
            case Double d -> d;
            case Long l -> (double) l;
            default -> {
                expect(key, v, false, "a number");
                yield 0.0;
            }
        });
    }

    public Optional<Boolean> bool(String key) {
        GgufValue v = values.get(key);
        if (v == null) {
            return Optional.empty();
        }
        expect(key, v, v.type() == GgufValueType.BOOL, "a bool");
        return Optional.of((Boolean) v.value());
    }

    /** An array of strings. */
    public List<String> strings(String key) {
        GgufValue v = array(key, "an array of strings");
        expect(key, v, v.elementType() == GgufValueType.STRING, "an array of strings");
        return List.of((String[]) v.value());
    }

    /** An array of float32 (or float64, narrowed). */
    public float[] floats(String key) {
        GgufValue v = array(key, "an array of floats");
        if (v.value() instanceof double[] d) {
            float[] out = new float[d.length];
            for (int i = 0; i < d.length; i++) {
                out[i] = (float) d[i];
            }
            return out;
        }
        expect(key, v, v.elementType() == GgufValueType.FLOAT32, "an array of floats");
        return ((float[]) v.value()).clone();
    }

    /** An array of integers that each fit an int (int32, uint32 below 2^31, and the narrower types). */
    public int[] ints(String key) {
        GgufValue v = array(key, "an array of integers");
        expect(key, v, v.elementType().integer(), "an array of integers");
        long[] values = (long[]) v.value();
        int[] out = new int[values.length];
        for (int i = 0; i < values.length; i++) {
            if (values[i] != (int) values[i]) {
                throw new GgufException(source + ": metadata " + key + "[" + i + "] = " + values[i]
                        + " does not fit an int");
            }
            out[i] = (int) values[i];
        }
        return out;
    }

    private GgufValue array(String key, String what) {
        GgufValue v = values.get(key);
        if (v == null) {
            throw new GgufException(source + ": metadata has no " + key + " (" + what + ")");
        }
        expect(key, v, v.type() == GgufValueType.ARRAY, what);
        return v;
    }

    private void expect(String key, GgufValue v, boolean ok, String what) {
        if (!ok) {
            String actual = v.type() == GgufValueType.ARRAY ? "an array of " + v.elementType() : "a " + v.type();
            throw new GgufException(source + ": metadata " + key + " is " + actual + ", expected " + what);
        }
    }

    @Override
    public String toString() {
        return values.toString();
    }
}
