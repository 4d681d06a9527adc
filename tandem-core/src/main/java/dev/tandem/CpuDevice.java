package dev.tandem;

/**
 * A CPU device: compute cores (platform threads) plus off-heap device memory with a byte
 * budget. Immutable configuration; a {@link Worker} brings it to life.
 *
 * @param cores        core threads that run ready tasks
 * @param memoryBudget bytes of device memory all buffers together may use
 * @param spinNanos    how long an idle core spins before it parks
 */
public record CpuDevice(int cores, long memoryBudget, long spinNanos) {

    public static final long DEFAULT_MEMORY_BUDGET = 4L << 30;
    public static final long DEFAULT_SPIN_NANOS = 50_000;

    public CpuDevice {
        if (cores < 1) {
            throw new IllegalArgumentException("cores must be >= 1, was " + cores);
        }
        if (memoryBudget < 1) {
            throw new IllegalArgumentException("memoryBudget must be >= 1 byte, was " + memoryBudget);
        }
        if (spinNanos < 0) {
            throw new IllegalArgumentException("spinNanos must be >= 0, was " + spinNanos);
        }
    }

    /** One core per available processor, the default budget. */
    public static CpuDevice defaults() {
        return withCores(Runtime.getRuntime().availableProcessors());
    }

    public static CpuDevice withCores(int cores) {
        return new CpuDevice(cores, DEFAULT_MEMORY_BUDGET, DEFAULT_SPIN_NANOS);
    }

    public CpuDevice withMemoryBudget(long bytes) {
        return new CpuDevice(cores, bytes, spinNanos);
    }

    public CpuDevice withSpinNanos(long nanos) {
        return new CpuDevice(cores, memoryBudget, nanos);
    }
}
