package dev.tandem.llm.gguf;

import java.util.Arrays;
import java.util.Objects;

/**
 * One metadata value of a GGUF file. {@link #value()} is, by {@link #type()}: a {@code Long} for
 * every integer type (an unsigned 64-bit value as its bit pattern), a {@code Float}, a
 * {@code Double}, a {@code Boolean} or a {@code String}; for an {@code ARRAY}, by
 * {@link #elementType()}: a {@code long[]} (integers), {@code float[]}, {@code double[]},
 * {@code boolean[]}, {@code String[]}, or {@code GgufValue[]} for arrays of arrays.
 *
 * @param type        the value's type
 * @param elementType the type of an array's elements, else {@code null}
 * @param value       the value, as above
 */
public record GgufValue(GgufValueType type, GgufValueType elementType, Object value) {

    public GgufValue {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(value, "value");
        if ((type == GgufValueType.ARRAY) != (elementType != null)) {
            throw new IllegalArgumentException("an ARRAY value, and only one, has an element type");
        }
        Class<?> expected = javaType(type, elementType);
        if (!expected.isInstance(value)) {
            throw new IllegalArgumentException(type + (elementType == null ? "" : " of " + elementType)
                    + " needs a " + expected.getSimpleName() + ", not a " + value.getClass().getSimpleName());
        }
    }

    private static Class<?> javaType(GgufValueType type, GgufValueType element) {
        if (type == GgufValueType.ARRAY) {
            if (element.integer()) {
                return long[].class;
            }
            return switch (element) {
                case FLOAT32 -> float[].class;
                case FLOAT64 -> double[].class;
                case BOOL -> boolean[].class;
                case STRING -> String[].class;
                case ARRAY -> GgufValue[].class;
                default -> throw new AssertionError(element);
            };
        }
        if (type.integer()) {
            return Long.class;
        }
        return switch (type) {
            case FLOAT32 -> Float.class;
            case FLOAT64 -> Double.class;
            case BOOL -> Boolean.class;
            case STRING -> String.class;
            default -> throw new AssertionError(type);
        };
    }

    public static GgufValue of(String value) {
        return new GgufValue(GgufValueType.STRING, null, value);
    }

    public static GgufValue uint32(long value) {
        return new GgufValue(GgufValueType.UINT32, null, value);
    }

    public static GgufValue int32(long value) {
        return new GgufValue(GgufValueType.INT32, null, value);
    }

    public static GgufValue float32(float value) {
        return new GgufValue(GgufValueType.FLOAT32, null, value);
    }

    public static GgufValue bool(boolean value) {
        return new GgufValue(GgufValueType.BOOL, null, value);
    }

    public static GgufValue strings(String... values) {
        return new GgufValue(GgufValueType.ARRAY, GgufValueType.STRING, values.clone());
    }

    public static GgufValue floats(float... values) {
        return new GgufValue(GgufValueType.ARRAY, GgufValueType.FLOAT32, values.clone());
    }

    /** An array of {@code elementType} integers. */
    public static GgufValue integers(GgufValueType elementType, long... values) {
        if (!elementType.integer()) {
            throw new IllegalArgumentException(elementType + " is not an integer type");
        }
        return new GgufValue(GgufValueType.ARRAY, elementType, values.clone());
    }

    /** Elements of an array value; 1 for a scalar. */
    public int length() {
        return switch (value) {
            case long[] a -> a.length;
            case float[] a -> a.length;
            case double[] a -> a.length;
            case boolean[] a -> a.length;
            case String[] a -> a.length;
            case GgufValue[] a -> a.length;
            default -> 1;
        };
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof GgufValue v && type == v.type && elementType == v.elementType
                && Objects.deepEquals(value, v.value);
    }

    @Override
    public int hashCode() {
        return type.hashCode() * 31 + Arrays.deepHashCode(new Object[] {value});
    }

    /** The value for display: arrays longer than 8 elements show their first 8 and their length. */
    @Override
    public String toString() {
        if (type != GgufValueType.ARRAY) {
            return value instanceof String s ? '"' + s + '"' : String.valueOf(value);
        }
        StringBuilder out = new StringBuilder("[");
        int n = length();
        for (int i = 0; i < Math.min(n, 8); i++) {
            if (i > 0) {
                out.append(", ");
            }
            Object element = switch (value) {
                case long[] a -> a[i];
                case float[] a -> a[i];
                case double[] a -> a[i];
                case boolean[] a -> a[i];
                case String[] a -> '"' + a[i] + '"';
                case GgufValue[] a -> a[i];
                default -> throw new AssertionError();
            };
            out.append(element);
        }
        if (n > 8) {
            out.append(", … (").append(n).append(" in all)");
        }
        return out.append(']').toString();
    }
}
