package dev.tandem.bench.trace;

import static dev.tandem.TraceEvent.HOST;
import static dev.tandem.TraceEvent.OTHER;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.tandem.Status;
import dev.tandem.TraceEvent;
import dev.tandem.TraceEvent.Kind;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;

/**
 * Every figure of the report on small synthetic event logs whose answers are worked out by hand
 * in the comments. Times are in milliseconds, written as nanoseconds through {@link #ms}.
 */
class TraceAnalysisTest {
    private static final Offset<Double> EXACT = within(1e-9);

    private static long ms(double millis) {
        return Math.round(millis * 1_000_000);
    }

    private static TraceEvent task(long request, long step, int core, double from, double to) {
        return new TraceEvent(Kind.TASK, ms(from), ms(to), core, request, step, step, "k", 0);
    }

    private static TraceEvent build(long request, long step, double from, double to) {
        return new TraceEvent(Kind.STEP_BUILD, ms(from), ms(to), HOST, request, step, step, null, 1);
    }

    private static TraceEvent instant(Kind kind, long request, long step, double at, long count) {
        return new TraceEvent(kind, ms(at), ms(at), OTHER, request, step, -1, null, count);
    }

    /**
     * One request on one core:
     * <pre>
     *   time      0    1    2    3    4    5    6    7    8    9   10   11   12   13   14   15
     *   queued    [----)
     *   builds         [ step 0 )    [s1)                          [ step 2 )
     *   core 0              [    step 0 task    )    [ s1 task )             [ s2 task )
     *   done/deliv                                  6              9                       14
     *   taken                                            7                    12                15
     * </pre>
     * token-parallel: step 1 is built [4,5) while step 0 runs = 1 ms (building step 0 while
     * step 0 runs does not count). Bubbles: [1,2) and [10,12): 2 of them, 3 ms, longest 2 ms.
     * Busy: 4 + 2 + 2 = 8 core-ms of 1 core × 15 ms. TTFT 6 − 0 = 6. Gaps 3, 5: p50 3, p99 5.
     * Delivery 7−6, 12−9, 15−14 = 1, 3, 1: p50 1, p99 3.
     */
    static List<TraceEvent> oneRequest() {
        List<TraceEvent> events = new ArrayList<>(List.of(
                new TraceEvent(Kind.REQUEST_STARTED, ms(0), ms(1), HOST, 1, -1, -1, null, 0),
                build(1, 0, 1, 3), task(1, 0, 0, 2, 6),
                build(1, 1, 4, 5), task(1, 1, 0, 7, 9),
                build(1, 2, 10, 12), task(1, 2, 0, 12, 14)));
        double[] done = {6, 9, 14};
        double[] taken = {7, 12, 15};
        for (int s = 0; s < 3; s++) {
            events.add(instant(Kind.STEP_DONE, 1, s, done[s], 0));
            events.add(instant(Kind.TOKEN_DELIVERED, 1, s, done[s], s + 1));
            events.add(instant(Kind.TOKEN_TAKEN, 1, s, taken[s], s + 1));
        }
        events.add(new TraceEvent(Kind.REQUEST, ms(0), ms(15), OTHER, 1, -1, -1, null, Status.COMPLETED.ordinal()));
        return events;
    }

    @Test
    void oneRequestOnOneCore() {
        TraceAnalysis.Report r = TraceAnalysis.analyze(oneRequest(), 1);
        assertThat(r.runMs()).isCloseTo(15, EXACT);
        assertThat(r.cores()).isEqualTo(1);
        assertThat(r.tasks()).isEqualTo(3);
        assertThat(r.tokenParallelMs()).isCloseTo(1, EXACT);
        assertThat(r.fraction(r.tokenParallelMs())).isCloseTo(1 / 15.0, EXACT);
        assertThat(r.requestParallelMs()).isZero();
        assertThat(r.sParallelMs()).isZero();
        assertThat(r.busyCoreMs()).isCloseTo(8, EXACT);
        assertThat(r.deviceBusy()).isCloseTo(8 / 15.0, EXACT);
        assertThat(r.bubbleCount()).isEqualTo(2);
        assertThat(r.bubbleMs()).isCloseTo(3, EXACT);
        assertThat(r.bubbleLongestMs()).isCloseTo(2, EXACT);
        assertThat(r.bubbles().starts()).containsExactly(ms(1), ms(10));
        assertThat(r.bubbles().ends()).containsExactly(ms(2), ms(12));

        TraceAnalysis.RequestReport q = r.requests().getFirst();
        assertThat(q.request()).isEqualTo(1);
        assertThat(q.status()).isEqualTo("COMPLETED");
        assertThat(q.tokens()).isEqualTo(3);
        assertThat(q.duplicateTokens()).isZero();
        assertThat(q.outOfOrderTokens()).isZero();
        assertThat(q.ttftMs()).isCloseTo(6, EXACT);
        assertThat(q.itlP50Ms()).isCloseTo(3, EXACT);
        assertThat(q.itlP99Ms()).isCloseTo(5, EXACT);
        assertThat(q.deliveryP50Ms()).isCloseTo(1, EXACT);
        assertThat(q.deliveryP99Ms()).isCloseTo(3, EXACT);
        assertThat(q.deliverySamples()).isEqualTo(3);
    }

    /**
     * Two requests on two cores:
     * <pre>
     *   time       0    2    4    5    6    8   10   12   13   15
     *   core 0     [ r1 step 0 ------------------)
     *   core 1                   [ r2 step 0 -------------------)
     *   r1 build                      [s1 )
     *   r2 build        [s1 )                          [s2)
     * </pre>
     * token-parallel: r1 builds step 1 over its running step 0 [6,8) = 2, r2 builds step 2 over
     * its running step 0 [12,13) = 1: 3 ms. request-parallel: r2 builds [2,4) while r1 runs = 2,
     * r1 builds [6,8) while r2 runs = 2; r2 building [12,13) with only its own task running does
     * not count: 4 ms. S∥S: both run [5,10) = 5 ms. Busy 10 + 10 = 20 of 2 × 15. No bubbles.
     */
    @Test
    void twoRequestsOnTwoCores() {
        List<TraceEvent> events = List.of(
                task(1, 0, 0, 0, 10), task(2, 0, 1, 5, 15),
                build(2, 1, 2, 4), build(1, 1, 6, 8), build(2, 2, 12, 13));
        TraceAnalysis.Report r = TraceAnalysis.analyze(events, 2);
        assertThat(r.runMs()).isCloseTo(15, EXACT);
        assertThat(r.tokenParallelMs()).isCloseTo(3, EXACT);
        assertThat(r.requestParallelMs()).isCloseTo(4, EXACT);
        assertThat(r.sParallelMs()).isCloseTo(5, EXACT);
        assertThat(r.fraction(r.sParallelMs())).isCloseTo(5 / 15.0, EXACT);
        assertThat(r.busyCoreMs()).isCloseTo(20, EXACT);
        assertThat(r.deviceBusy()).isCloseTo(20 / 30.0, EXACT);
        assertThat(r.bubbleCount()).isZero();
        assertThat(r.bubbleMs()).isZero();
        assertThat(r.sParallel().starts()).containsExactly(ms(5));
        assertThat(r.sParallel().ends()).containsExactly(ms(10));
        assertThat(r.tokenParallel().starts()).containsExactly(ms(6), ms(12));
        assertThat(r.requests()).extracting(TraceAnalysis.RequestReport::status).containsExactly("unfinished", "unfinished");
        assertThat(r.requests().getFirst().ttftMs()).as("no submission and no token: no TTFT").isNaN();
    }

    /**
     * The log of {@link #oneRequest}, shuffled, with a task recorded twice, step 1 delivered
     * again at 9.5, step 0 delivered again at 10 and step 2 taken again at 16. Every event
     * counts: 5 deliveries of 3 steps (2 duplicates), the one at 10 comes after step 1 (out of
     * order). Gaps between 6, 9, 9.5, 10, 14 are 3, .5, .5, 4: p50 (2nd of 4) .5, p99 4.
     * Delivery samples 1, 3, 1, 2 (16 − 14): p50 1, p99 3. The duplicated task adds a task but
     * no busy time (its core is busy either way); the run now ends at 16.
     */
    @Test
    void everyEventCountsInAnyOrderDuplicatesIncluded() {
        List<TraceEvent> events = new ArrayList<>(oneRequest());
        events.add(task(1, 1, 0, 7, 9));
        events.add(instant(Kind.TOKEN_DELIVERED, 1, 1, 9.5, 3));
        events.add(instant(Kind.TOKEN_DELIVERED, 1, 0, 10, 4));
        events.add(instant(Kind.TOKEN_TAKEN, 1, 2, 16, 4));
        Collections.shuffle(events, new Random(12));
        TraceAnalysis.Report r = TraceAnalysis.analyze(events, 1);
        assertThat(r.runMs()).isCloseTo(16, EXACT);
        assertThat(r.tasks()).isEqualTo(4);
        assertThat(r.busyCoreMs()).isCloseTo(8, EXACT);
        assertThat(r.deviceBusy()).isCloseTo(8 / 16.0, EXACT);
        assertThat(r.tokenParallelMs()).isCloseTo(1, EXACT);
        assertThat(r.bubbleCount()).isEqualTo(2);
        assertThat(r.bubbleMs()).isCloseTo(3, EXACT);
        TraceAnalysis.RequestReport q = r.requests().getFirst();
        assertThat(q.tokens()).isEqualTo(5);
        assertThat(q.duplicateTokens()).isEqualTo(2);
        assertThat(q.outOfOrderTokens()).isEqualTo(1);
        assertThat(q.ttftMs()).isCloseTo(6, EXACT);
        assertThat(q.itlP50Ms()).isCloseTo(0.5, EXACT);
        assertThat(q.itlP99Ms()).isCloseTo(4, EXACT);
        assertThat(q.deliverySamples()).isEqualTo(4);
        assertThat(q.deliveryP50Ms()).isCloseTo(1, EXACT);
        assertThat(q.deliveryP99Ms()).isCloseTo(3, EXACT);

        assertThat(TraceAnalysis.analyze(events.reversed(), 1)).as("the input order does not matter")
                .usingRecursiveComparison().isEqualTo(r);
    }

    /**
     * Bubbles join across builds that hand over at the same instant, and split at a gap:
     * builds [0,2), [2,3) and [4,5) with no task at all are bubbles [0,3) and [4,5). The run
     * is 5 ms of which 4 are bubbles; a zero-length span changes nothing.
     */
    @Test
    void bubblesAreMaximalStretchesOfBuildingWithIdleCores() {
        List<TraceEvent> events = List.of(build(1, 0, 0, 2), build(2, 0, 2, 3), build(1, 1, 4, 5),
                task(1, 0, 0, 4.5, 4.5));
        TraceAnalysis.Report r = TraceAnalysis.analyze(events, 2);
        assertThat(r.bubbleCount()).isEqualTo(2);
        assertThat(r.bubbleMs()).isCloseTo(4, EXACT);
        assertThat(r.bubbleLongestMs()).isCloseTo(3, EXACT);
        assertThat(r.fraction(r.bubbleMs())).isCloseTo(0.8, EXACT);
        assertThat(r.busyCoreMs()).isZero();
        assertThat(r.cores()).as("the cores given, not just those that ran").isEqualTo(2);
    }

    /**
     * TTFT counts from submission, which the REQUEST span carries when the queued span is missing
     * (a request that never started) and the earlier of the two otherwise.
     */
    @Test
    void timeToFirstTokenCountsFromSubmission() {
        List<TraceEvent> events = List.of(
                new TraceEvent(Kind.REQUEST, ms(2), ms(20), OTHER, 7, -1, -1, null, Status.CANCELLED.ordinal()),
                task(7, 0, 0, 3, 4),
                instant(Kind.TOKEN_DELIVERED, 7, 0, 5, 1));
        TraceAnalysis.RequestReport q = TraceAnalysis.analyze(events, 1).requests().getFirst();
        assertThat(q.ttftMs()).isCloseTo(3, EXACT);
        assertThat(q.status()).isEqualTo("CANCELLED");
        assertThat(q.itlP50Ms()).as("one token: no gap").isNaN();
        assertThat(q.deliveryP50Ms()).as("never taken").isNaN();
    }

    private static TraceEvent kernel(String name, int core, double from, double to) {
        return new TraceEvent(Kind.TASK, ms(from), ms(to), core, 1, 0, 0, name, 0);
    }

    /**
     * <pre>
     *   time     0    1    2    3    4    5    6    7    8    9   10
     *   core 0   [ matmul       )[ norm )      [ matmul  )
     *   core 1        [ matmul  )              [matmul)  [ rope   )
     *   core 2                       (idle throughout)
     * </pre>
     * matmul: 4 spans, 3 + 2 + 2 + 1.5 = 8.5 busy, alone [0,1) and [7.5,8) = 1.5 (core 1's
     * [6, 7.5) overlaps core 0's [6, 8)); norm alone [3,5) = 2; rope [8,10) alone = 2, and an
     * end and a start at the same instant (8) do not overlap.
     */
    @Test
    void perKernelBusyAndAloneTime() {
        List<TraceEvent> events = List.of(
                kernel("matmul", 0, 0, 3), kernel("matmul", 1, 1, 3), kernel("norm", 0, 3, 5),
                kernel("matmul", 0, 6, 8), kernel("matmul", 1, 6, 7.5), kernel("rope", 1, 8, 10),
                build(1, 0, 5, 6));
        List<TraceAnalysis.KernelReport> kernels = TraceAnalysis.analyze(events, 3).kernels();
        assertThat(kernels).extracting(TraceAnalysis.KernelReport::name).containsExactly("matmul", "norm", "rope");
        TraceAnalysis.KernelReport matmul = kernels.get(0);
        assertThat(matmul.spans()).isEqualTo(4);
        assertThat(matmul.busyMs()).isCloseTo(8.5, EXACT);
        assertThat(matmul.aloneMs()).isCloseTo(1.5, EXACT);
        assertThat(kernels.get(1).aloneMs()).isCloseTo(2, EXACT);
        assertThat(kernels.get(2).busyMs()).isCloseTo(2, EXACT);
        assertThat(kernels.get(2).aloneMs()).isCloseTo(2, EXACT);
        assertThat(kernels.get(2).toJson()).containsOnlyKeys("name", "spans", "busy_ms", "alone_ms");
        assertThat(TraceAnalysis.analyze(List.of(build(1, 0, 0, 1)), 1).kernels()).isEmpty();
    }

    /**
     * core 0: a [0, 1), b [1.01, 2), a [2.2, 3); core 1: b [0, 1), a [1.01, 2), a [2, 2.5). So
     * b -> a: 0.2 (long) + 0.01, a -> b: 0.01, and a -> a back to back is no gap at all.
     */
    @Test
    void coreIdleByTheKernelsAroundEachGap() {
        List<TraceEvent> events = List.of(
                kernel("a", 0, 0, 1), kernel("b", 0, 1.01, 2), kernel("a", 0, 2.2, 3),
                kernel("b", 1, 0, 1), kernel("a", 1, 2, 2.5), kernel("a", 1, 1.01, 2), build(1, 0, 0, 0.5));
        List<TraceAnalysis.IdleReport> idle = TraceAnalysis.analyze(events, 2).idle();
        assertThat(idle).extracting(i -> i.after() + ">" + i.before()).containsExactly("b>a", "a>b");
        TraceAnalysis.IdleReport ba = idle.get(0);
        assertThat(ba.gaps()).isEqualTo(2);
        assertThat(ba.idleMs()).isCloseTo(0.21, org.assertj.core.api.Assertions.within(1e-9));
        assertThat(ba.longGaps()).isEqualTo(1);
        assertThat(ba.longIdleMs()).isCloseTo(0.2, org.assertj.core.api.Assertions.within(1e-9));
        TraceAnalysis.IdleReport ab = idle.get(1);
        assertThat(ab.gaps()).isEqualTo(1);
        assertThat(ab.idleMs()).isCloseTo(0.01, org.assertj.core.api.Assertions.within(1e-9));
        assertThat(ab.longGaps()).isZero();
        assertThat(ab.toJson()).containsOnlyKeys("after", "before", "gaps", "idle_ms", "long_gaps", "long_idle_ms");
        assertThat(TraceAnalysis.analyze(events, 2).toJson()).containsKey("idle");
        assertThat(TraceAnalysis.analyze(List.of(kernel("a", 0, 0, 1)), 1).idle()).isEmpty();
    }

    @Test
    void percentilesAreNearestRank() {
        double[] values = {5, 1, 4, 2, 3};
        assertThat(TraceAnalysis.percentile(values, 50)).isEqualTo(3);
        assertThat(TraceAnalysis.percentile(values, 99)).isEqualTo(5);
        assertThat(TraceAnalysis.percentile(values, 20)).isEqualTo(1);
        assertThat(TraceAnalysis.percentile(values, 21)).isEqualTo(2);
        assertThat(TraceAnalysis.percentile(new double[] {7}, 99)).isEqualTo(7);
        assertThat(TraceAnalysis.percentile(new double[0], 50)).isNaN();
    }

    @Test
    void theJsonHasTheFieldsTheCliPromises() {
        var json = TraceAnalysis.analyze(oneRequest(), 1).toJson();
        assertThat(json).containsKeys("token_parallel_ms", "request_parallel_ms", "s_parallel_ms", "device_busy",
                "bubble_ms", "requests", "kernels");
        assertThat(json.get("token_parallel_ms")).isEqualTo(1.0);
        assertThat((List<?>) json.get("requests")).hasSize(1);
        assertThat((List<?>) json.get("kernels")).hasSize(1);
    }
}
