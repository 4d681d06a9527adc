package dev.tandem.bench;

/** Busy work of a given duration, standing in for host build or device compute time. */
public final class Spin {
    private Spin() {}

    /** Spins for {@code nanos} of wall time. */
    public static void spin(long nanos) {
        long end = System.nanoTime() + nanos;
        while (System.nanoTime() < end) {
            Thread.onSpinWait();
        }
    }
}
