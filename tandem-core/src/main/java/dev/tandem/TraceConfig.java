package dev.tandem;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

/**
 * What a traced {@link Worker} records and where it goes. Immutable; each {@code withX}
 * returns a copy.
 *
 * <pre>{@code
 * Worker worker = Worker.builder()
 *         .device(CpuDeviceConfig.withCores(4))
 *         .trace(TraceConfig.toFile(Path.of("run.pftrace")))
 *         .build();
 * // ... run requests; close() finishes the file. Open it in ui.perfetto.dev,
 * // or run `tandem trace report run.pftrace`.
 * }</pre>
 *
 * @param file          a Perfetto protobuf trace written while the worker runs and finished by
 *                      {@link Worker#close()}, or null for none
 * @param retainEvents  whether every event is also kept in memory for {@link Worker#traceEvents()}
 * @param jfr           whether spans and instants are also Java Flight Recorder events (they
 *                      cost nothing unless a JFR recording enables them)
 * @param flushInterval how often the background writer drains the recorded events into the file:
 *                      by default every 20 ms, often enough that a crash loses little and that
 *                      the sampled counters move smoothly, rarely enough that the writer's
 *                      wake-ups barely disturb the cores and the program threads
 */
public record TraceConfig(Path file, boolean retainEvents, boolean jfr, Duration flushInterval) {

    public static final Duration DEFAULT_FLUSH_INTERVAL = Duration.ofMillis(20);

    public TraceConfig {
        Objects.requireNonNull(flushInterval, "flushInterval");
        if (file == null && !retainEvents) {
            throw new IllegalArgumentException("a trace must go somewhere: give a file or retain the events in memory");
        }
        if (flushInterval.isNegative() || flushInterval.isZero()) {
            throw new IllegalArgumentException("flushInterval must be positive, was " + flushInterval);
        }
    }

    /** Events kept in memory for {@link Worker#traceEvents()}; no file. */
    public static TraceConfig inMemory() {
        return new TraceConfig(null, true, true, DEFAULT_FLUSH_INTERVAL);
    }

    /** Events streamed to a Perfetto trace {@code file} (created or truncated), not kept in memory. */
    public static TraceConfig toFile(Path file) {
        return new TraceConfig(Objects.requireNonNull(file, "file"), false, true, DEFAULT_FLUSH_INTERVAL);
    }

    public TraceConfig withFile(Path value) {
        return new TraceConfig(value, retainEvents, jfr, flushInterval);
    }

    public TraceConfig withRetainEvents(boolean value) {
        return new TraceConfig(file, value, jfr, flushInterval);
    }

    public TraceConfig withJfr(boolean value) {
        return new TraceConfig(file, retainEvents, value, flushInterval);
    }

    public TraceConfig withFlushInterval(Duration value) {
        return new TraceConfig(file, retainEvents, jfr, value);
    }
}
