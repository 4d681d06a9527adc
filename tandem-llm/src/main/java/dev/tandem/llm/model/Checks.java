package dev.tandem.llm.model;

/** One-line argument errors that name the field and its limit. */
public final class Checks {
    private Checks() {}

    public static void positive(String field, long value) {
        if (value < 1) {
            throw new IllegalArgumentException(field + " = " + value + " must be >= 1");
        }
    }

    public static void atMost(String field, long value, String limitName, long limit) {
        if (value > limit) {
            throw new IllegalArgumentException(field + " = " + value + " must be <= " + limitName + " = " + limit);
        }
    }

    public static void divides(String divisorField, long divisor, String field, long value) {
        if (divisor < 1 || value % divisor != 0) {
            throw new IllegalArgumentException(divisorField + " = " + divisor + " must divide " + field + " = " + value);
        }
    }
}
