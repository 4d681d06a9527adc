package dev.tandem.llm.reference;

/**
 * Pseudo-random values that are a pure function of a seed, a stream and an index, so that data
 * can be filled in any order (or recomputed by a reference) and is the same on every machine.
 */
final class Seeded {
    private Seeded() {}

    /** Value {@code i} of stream {@code stream}: uniform in {@code [-1, 1)}, 24 random bits. */
    static float uniform(long seed, long stream, long i) {
        long z = seed + stream * 0x9E3779B97F4A7C15L + i * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L; // splitmix64's finalizer
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        z ^= z >>> 31;
        return (z >>> 40) * 0x1.0p-23f - 1f;
    }
}
