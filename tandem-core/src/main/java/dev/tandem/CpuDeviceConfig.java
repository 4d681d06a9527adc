package dev.tandem;

/**
 * The configuration of a CPU device: compute cores (platform threads) plus off-heap device
 * memory with a byte budget. Immutable; a {@link Worker} brings the device to life.
 *
 * @param cores        core threads that run ready tasks
 * @param memoryBudget bytes of device memory all buffers together may use
 * @param spinNanos    how long an idle core spins before it parks
 * @param pinCores     whether each core thread is pinned to a CPU of its own (Linux, when the
 *                     process may use at least as many CPUs as there are cores; elsewhere a
 *                     no-op; off by default). Unpinned, the scheduler can stack two cores on one
 *                     CPU: sampled every 200 ms during a batch-1 decode on a 2-CPU virtual
 *                     machine, the two core threads were on the same CPU 15 times in 20; pinned,
 *                     never. Decode speed with and without it did not differ beyond that
 *                     machine's noise, so it is a choice for dedicated machines, not a default.
 *                     Pinning calls libc through the foreign function API, a restricted method:
 *                     run with {@code --enable-native-access=dev.tandem.core} (or
 *                     {@code ALL-UNNAMED} on the class path) to keep the JVM from warning.
 *                     Devices made one after another start at successive CPUs, so several
 *                     one-core devices spread over the machine.
 */
public record CpuDeviceConfig(int cores, long memoryBudget, long spinNanos, boolean pinCores) {

    public static final long DEFAULT_MEMORY_BUDGET = 4L << 30;
    /**
     * 250 µs: a batch-1 decode's cores wait that long for one another whenever the OS lends one
     * core's CPU to the host for a step build (about 0.2 ms a step on 2 CPUs), and a parked core
     * then costs a wake-up. In alternating runs of the small bench shape (Q8_0, 2 cores), 250 µs
     * beat 50 µs in three pairs of three (+2% to +5%); the large shape did not change. Past the
     * first 2 µs an idle core yields between polls, so a host thread that needs the CPU gets it.
     */
    public static final long DEFAULT_SPIN_NANOS = 250_000;

    /** A device whose cores are not pinned. */
    public CpuDeviceConfig(int cores, long memoryBudget, long spinNanos) {
        this(cores, memoryBudget, spinNanos, false);
    }

    public CpuDeviceConfig {
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
    public static CpuDeviceConfig defaults() {
        return withCores(Runtime.getRuntime().availableProcessors());
    }

    public static CpuDeviceConfig withCores(int cores) {
        return new CpuDeviceConfig(cores, DEFAULT_MEMORY_BUDGET, DEFAULT_SPIN_NANOS);
    }

    public CpuDeviceConfig withMemoryBudget(long bytes) {
        return new CpuDeviceConfig(cores, bytes, spinNanos, pinCores);
    }

    public CpuDeviceConfig withSpinNanos(long nanos) {
        return new CpuDeviceConfig(cores, memoryBudget, nanos, pinCores);
    }

    public CpuDeviceConfig withPinnedCores(boolean pin) {
        return new CpuDeviceConfig(cores, memoryBudget, spinNanos, pin);
    }
}
