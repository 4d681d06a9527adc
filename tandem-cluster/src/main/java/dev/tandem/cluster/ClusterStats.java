package dev.tandem.cluster;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/** A gateway's counters: requests forwarded, streams resumed, and how long each resumption took. */
public final class ClusterStats {
    private final AtomicLong forwarded = new AtomicLong();
    private final AtomicLong resumed = new AtomicLong();
    private final List<Long> resumeNanos = new ArrayList<>();

    void forwarded() {
        forwarded.incrementAndGet();
    }

    /** A stream's next token arrived {@code nanos} after its worker was found lost. */
    void resumed(long nanos) {
        resumed.incrementAndGet();
        synchronized (resumeNanos) {
            resumeNanos.add(nanos);
        }
    }

    /** Admissions sent to workers (a resumed request counts again). */
    public long forwardedCount() {
        return forwarded.get();
    }

    /** Streams that went on after their worker was lost. */
    public long resumedCount() {
        return resumed.get();
    }

    /** For each resumed stream, nanoseconds from the loss of its worker to its next token. */
    public List<Long> resumeNanos() {
        synchronized (resumeNanos) {
            return new ArrayList<>(resumeNanos);
        }
    }
}
