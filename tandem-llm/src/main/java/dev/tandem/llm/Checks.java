package dev.tandem.llm;

/** One-line argument errors that name the field and its limit. */
final class Checks {
    private Checks() {}

    static void positive(String field, long value) {
        if (value < 1) {
            throw new IllegalArgumentException(field + " = " + value + " must be >= 1");
        }
    }

    static void atMost(String field, long value, String limitName, long limit) {
        if (value > limit) {
            throw new IllegalArgumentException(field + " = " + value + " must be <= " + limitName + " = " + limit);
        }
    }

    static void divides(String divisorField, long divisor, String field, long value) {
        if (divisor < 1 || value % divisor != 0) {
            throw new IllegalArgumentException(divisorField + " = " + divisor + " must divide " + field + " = " + value);
        }
    }
}
