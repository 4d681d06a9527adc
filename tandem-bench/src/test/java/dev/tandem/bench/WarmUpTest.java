package dev.tandem.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

class WarmUpTest {
    private static final long MS = 1_000_000L;

    /** A round of about 2 ms, during which the fake JIT compiles {@code compiles[round]} ms (the last value after). */
    private static Runnable round(AtomicInteger rounds, AtomicLong jit, long... compiles) {
        return () -> {
            int r = rounds.getAndIncrement();
            jit.addAndGet(compiles[Math.min(r, compiles.length - 1)]);
            LockSupport.parkNanos(2 * MS);
        };
    }

    @Test
    void aQuietJitEndsTheWarmUpOnceTheLeastTimeHasPassed() {
        AtomicInteger rounds = new AtomicInteger();
        AtomicLong jit = new AtomicLong();
        WarmUp.Result r = WarmUp.run(round(rounds, jit, 0), 0, 10_000 * MS, jit::get);
        assertThat(rounds).hasValue(1);
        assertThat(r.rounds()).isEqualTo(1);
        assertThat(r.quiet()).isTrue();
        assertThat(r.lastCompileMs()).isZero();

        rounds.set(0);
        r = WarmUp.run(round(rounds, jit, 0), 30 * MS, 10_000 * MS, jit::get);
        assertThat(r.seconds()).isGreaterThanOrEqualTo(0.030).isLessThan(5);
        assertThat(r.quiet()).isTrue();
    }

    @Test
    void aBusyJitKeepsItGoingUntilAQuietRound() {
        AtomicInteger rounds = new AtomicInteger();
        AtomicLong jit = new AtomicLong();
        // 50 ms of compiling in each of the first three rounds of ~2 ms: far over 5%; none after
        WarmUp.Result r = WarmUp.run(round(rounds, jit, 50, 50, 50, 0), 0, 10_000 * MS, jit::get);
        assertThat(r.rounds()).isEqualTo(4);
        assertThat(r.quiet()).isTrue();
        assertThat(r.lastCompileMs()).isZero();
    }

    @Test
    void aJitThatNeverQuietsStopsAtTheMost() {
        AtomicInteger rounds = new AtomicInteger();
        AtomicLong jit = new AtomicLong();
        WarmUp.Result r = WarmUp.run(round(rounds, jit, 50), 5 * MS, 40 * MS, jit::get);
        assertThat(r.seconds()).isGreaterThanOrEqualTo(0.040).isLessThan(5);
        assertThat(r.rounds()).isGreaterThan(1);
        assertThat(r.quiet()).isFalse();
        assertThat(r.lastCompileMs()).isEqualTo(50);
    }

    @Test
    void withoutTheJitsTimeOnlyTheLeastApplies() {
        AtomicInteger rounds = new AtomicInteger();
        WarmUp.Result r = WarmUp.run(round(rounds, new AtomicLong(), 0), 20 * MS, 10_000 * MS, null);
        assertThat(r.seconds()).isGreaterThanOrEqualTo(0.020).isLessThan(5);
        assertThat(r.quiet()).isFalse();
        assertThat(r.lastCompileMs()).isNaN();
        assertThat(WarmUp.run(() -> {}, 0, 0).rounds()).isEqualTo(1);
    }

    @Test
    void aLittleCompilingInALongRoundIsQuiet() {
        AtomicLong jit = new AtomicLong();
        // 1 ms of compiling in a round of at least 40 ms: 2.5%, under the 5% share
        WarmUp.Result r = WarmUp.run(() -> {
            jit.addAndGet(1);
            LockSupport.parkNanos(40 * MS);
        }, 0, 10_000 * MS, jit::get);
        assertThat(r.rounds()).isEqualTo(1);
        assertThat(r.quiet()).isTrue();
        assertThat(r.lastCompileMs()).isEqualTo(1);
    }

    @Test
    void thisJvmTellsItsCompileTime() {
        WarmUp.Result r = WarmUp.run(() -> {}, 0, 0);
        assertThat(r.lastCompileMs()).isNotNaN().isGreaterThanOrEqualTo(0);
    }

    @Test
    void badBoundsAreRefused() {
        assertThatThrownBy(() -> WarmUp.run(() -> {}, -1, 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("minNanos = -1");
        assertThatThrownBy(() -> WarmUp.run(() -> {}, 10, 5)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("maxNanos = 5");
    }
}
