package dev.tandem.session;

import dev.tandem.AdmissionRejectedException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import org.jetbrains.lincheck.datastructures.IntGen;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.jetbrains.lincheck.datastructures.Validate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Model checking of a session's admission and termination state machine ({@link Admission})
 * with Lincheck: submissions, admission attempts, request ends and close racing in every
 * interleaving Lincheck explores, checked for linearizability against the sequential
 * behaviour and, after each interleaving, against the invariants: slots and queue bounds,
 * one memory reservation per running request and none leaked, ids unique while live, and a
 * closed session reported drained exactly once, exactly when nothing is left.
 *
 * <p>The capacities are shrunk (two slots, one queue place, memory for one request) so that
 * the checker reaches every edge: a full queue, a free slot without memory, a close racing
 * the last end.
 */
@Param(name = "request", gen = IntGen.class, conf = "0:3")
@Timeout(value = 30, unit = TimeUnit.MINUTES) // for -Dtandem.long=true
public class AdmissionLincheckTest {
    static final int REQUESTS = 4;
    static final long BUDGET = 1;
    static final int INVOCATIONS = Boolean.getBoolean("tandem.long") ? 10_000 : 500;
    static final int ITERATIONS = Boolean.getBoolean("tandem.long") ? 200 : 20;

    private final AtomicLong reserved = new AtomicLong();
    private final Admission<Integer> admission = new Admission<>(2, 1, 1, this::tryReserve, this::release);
    private final AtomicIntegerArray offered = new AtomicIntegerArray(REQUESTS); // 0 new, 2 admitted, 3 rejected
    private final AtomicIntegerArray ended = new AtomicIntegerArray(REQUESTS);
    private final AtomicInteger drainedReports = new AtomicInteger();
    private final AtomicInteger closes = new AtomicInteger();

    private boolean tryReserve(long bytes) {
        while (true) {
            long used = reserved.get();
            if (used + bytes > BUDGET) {
                return false;
            }
            if (reserved.compareAndSet(used, used + bytes)) {
                return true;
            }
        }
    }

    private void release(long bytes) {
        reserved.addAndGet(-bytes);
    }

    /**
     * Submits request k (at most once), with an id shared by requests k and k+2. The
     * harness's own "at most once" bookkeeping and the offer happen under one monitor, so the
     * operation stays atomic as a whole; other operations race it freely.
     */
    @Operation
    public synchronized String submit(@Param(name = "request") int k) {
        if (offered.get(k) != 0) {
            return "already submitted";
        }
        try {
            admission.offer(k, idOf(k));
            offered.set(k, 2);
            admission.admitReady(); // as Session.submit does; which call starts it is not part of the result
            return "admitted";
        } catch (AdmissionRejectedException e) {
            offered.set(k, 3);
            return e.reason().name();
        }
    }

    /** Requests 0, 1 and 2 have ids of their own; request 3 shares request 0's. */
    private static String idOf(int k) {
        return k == 3 ? "id0" : "id" + k;
    }

    /**
     * Starts what can start. Returns nothing: which of the racing admission attempts starts a
     * request is not observable behaviour (a submission admits too), the invariants are.
     */
    @Operation
    public void admit() {
        admission.admitReady();
    }

    /**
     * Request k ends (at most once, and only if it is live): released, then finished. Like
     * {@link #submit}, atomic as a whole under the harness's monitor; admission attempts and
     * close race it freely.
     */
    @Operation
    public synchronized String end(@Param(name = "request") int k) {
        if (!admission.isLive(k) || !ended.compareAndSet(k, 0, 1)) {
            return "not live";
        }
        admission.released(k, idOf(k));
        if (admission.finished()) {
            drainedReports.incrementAndGet();
        }
        return "ended";
    }

    /** Closes the session; returns how many live requests the caller would cancel. */
    @Operation
    public int close() {
        closes.incrementAndGet();
        int live = admission.close().size();
        if (admission.drainedAtClose()) {
            drainedReports.incrementAndGet();
        }
        return live;
    }

    @Validate
    public void invariants() {
        int running = admission.running().size();
        int queued = admission.queued();
        if (running > 2 || queued > 1) {
            throw new AssertionError("bounds: running " + running + " of 2, queued " + queued + " of 1");
        }
        if (reserved.get() != running) {
            throw new AssertionError("memory: " + reserved.get() + " reserved for " + running + " running");
        }
        int live = 0;
        for (int k = 0; k < REQUESTS; k++) {
            if (offered.get(k) == 2 && ended.get(k) == 0) {
                live++;
            }
        }
        if (admission.unfinished() != live || running + queued != live) {
            throw new AssertionError("live: " + live + " admitted and not ended, but unfinished "
                    + admission.unfinished() + ", running " + running + ", queued " + queued);
        }
        int expectedDrained = closes.get() > 0 && live == 0 ? 1 : 0;
        if (drainedReports.get() != expectedDrained) {
            throw new AssertionError("drained reported " + drainedReports.get() + " times; closed " + (closes.get() > 0)
                    + ", live " + live);
        }
    }

    @Test
    void admissionAndTerminationRacesKeepTheInvariants() {
        new ModelCheckingOptions()
                .iterations(ITERATIONS)
                .invocationsPerIteration(INVOCATIONS)
                .threads(3)
                .actorsPerThread(3)
                .actorsBefore(2)
                .actorsAfter(1)
                .check(AdmissionLincheckTest.class);
    }
}
