package dev.tandem;

import static dev.tandem.Access.read;
import static dev.tandem.Access.readWrite;
import static dev.tandem.Access.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PipelineTest {

    /** x += 1 on an int. */
    static final Kernel INCREMENT = Kernel.of("increment", c -> {
        var seg = c.region(0);
        seg.set(ValueLayout.JAVA_INT, 0, seg.get(ValueLayout.JAVA_INT, 0) + 1);
    });

    /** out = in * scalar0. */
    static final Kernel SCALE = Kernel.of("scale", c -> c.region(1)
            .set(ValueLayout.JAVA_INT, 0, c.region(0).get(ValueLayout.JAVA_INT, 0) * (int) c.scalar(0)));

    @Test
    void tokensArriveInStepOrderWithTheValuesTheStepsComputed() {
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
            Program<Integer> program = (o, steps) -> {
                Buffer counter = o.allocate(ValueLayout.JAVA_INT, 1);
                Buffer token = o.allocate(ValueLayout.JAVA_INT, 1);
                for (int i = 0; i < steps; i++) {
                    o.submit(INCREMENT, readWrite(counter));
                    o.submit(SCALE, Orchestrator.scalars(10), read(counter), write(token));
                    o.endStep(token.region());
                }
            };
            TokenStream stream = worker.run(program, 50);
            List<Integer> values = new ArrayList<>();
            List<Long> steps = new ArrayList<>();
            for (Token t : stream) {
                values.add(t.asInt());
                steps.add(t.step());
            }
            assertThat(values).hasSize(50);
            for (int i = 0; i < 50; i++) {
                assertThat(values.get(i)).as("token %d", i).isEqualTo((i + 1) * 10);
                assertThat(steps.get(i)).isEqualTo(i);
            }
            Outcome outcome = stream.completion().join();
            assertThat(outcome.status()).isEqualTo(Status.COMPLETED);
            assertThat(outcome.tokens()).isEqualTo(50);
            assertThat(worker.memoryInUse()).isZero();
        }
    }

    /**
     * {@link Worker#hostBuildNanos()} counts a step from its first orchestrator call to its
     * {@code endStep}: time a program spends inside a step counts, time before a step's first
     * call does not.
     */
    @Test
    void hostBuildTimeCountsTheTimeInsideEachStepOnly() {
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(1))) {
            assertThat(worker.hostBuildNanos()).isZero();
            long sleepMillis = 30;
            Program<Integer> program = (o, steps) -> {
                Buffer token = o.allocate(ValueLayout.JAVA_INT, 1);
                for (int i = 0; i < steps; i++) {
                    sleep(sleepMillis); // before the step's first call: not building it
                    o.submit(INCREMENT, readWrite(token));
                    if (i == 0) {
                        sleep(sleepMillis); // inside the first step
                    }
                    o.endStep(token.region());
                }
            };
            long start = System.nanoTime();
            TokenStream stream = worker.run(program, 3);
            assertThat(stream.completion().join().status()).isEqualTo(Status.COMPLETED);
            long wall = System.nanoTime() - start;
            long built = worker.hostBuildNanos();
            assertThat(built).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(sleepMillis));
            // The three sleeps before a step's first call are not build time: without them the
            // counter could not be below the run's wall time less one sleep.
            assertThat(built).isLessThan(wall - TimeUnit.MILLISECONDS.toNanos(2 * sleepMillis));
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /**
     * {@code submit} copies its access and scalar arrays, so a program may fill one array per
     * task and reuse it: each task runs with what it was submitted with, even while the next
     * submits overwrite the arrays (the core is held until the step is built).
     */
    @Test
    void aProgramMayReuseItsArraysAcrossSubmits() {
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(1))) {
            CountDownLatch built = new CountDownLatch(1);
            Kernel hold = Kernel.of("hold", c -> {
                try {
                    built.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            int tasks = 8;
            TokenStream stream = worker.run((o, n) -> {
                Buffer values = o.allocate(ValueLayout.JAVA_INT, tasks);
                Buffer token = o.allocate(ValueLayout.JAVA_INT, 1);
                o.submit(hold, write(token));
                Access[] accesses = new Access[2];
                long[] scalars = new long[1];
                for (int t = 0; t < tasks; t++) {
                    accesses[0] = readWrite(token);
                    accesses[1] = write(values.region(4L * t, 4));
                    scalars[0] = t + 1;
                    o.submit(STORE, scalars, accesses);
                }
                accesses[1] = null; // overwritten after the last submit too
                scalars[0] = -1;
                o.submit(SUM, read(values), write(token));
                built.countDown();
                o.endStep(token.region());
            }, 1, RunOptions.defaults().withPublishBatch(1));
            assertThat(stream.iterator().next().asInt()).isEqualTo(tasks * (tasks + 1) / 2);
            assertThat(stream.completion().join().status()).isEqualTo(Status.COMPLETED);
        }
    }

    /** region(1) = scalar0. */
    static final Kernel STORE = Kernel.of("store", c -> c.region(1).set(ValueLayout.JAVA_INT, 0, (int) c.scalar(0)));

    /** region(1) = the sum of region(0)'s ints. */
    static final Kernel SUM = Kernel.of("sum", c -> {
        var in = c.region(0);
        int sum = 0;
        for (long i = 0; i < in.byteSize(); i += 4) {
            sum += in.get(ValueLayout.JAVA_INT, i);
        }
        c.region(1).set(ValueLayout.JAVA_INT, 0, sum);
    });

    @Test
    void serialBaselineAndDeepRunAheadGiveTheSameTokens() {
        for (RunOptions options : List.of(RunOptions.serial(), RunOptions.defaults().withRunAhead(4).withPublishBatch(1))) {
            try (Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
                TokenStream stream = worker.run((o, n) -> {
                    Buffer counter = o.allocate(ValueLayout.JAVA_INT, 1);
                    for (int i = 0; i < n; i++) {
                        o.submit(INCREMENT, readWrite(counter));
                        o.endStep(counter.region());
                    }
                }, 20, options);
                int expected = 1;
                for (Token t : stream) {
                    assertThat(t.asInt()).as("%s", options).isEqualTo(expected++);
                }
                assertThat(expected).isEqualTo(21);
            }
        }
    }

    @Test
    void workerBuffersAreFrozenAndShared() throws Exception {
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
            Buffer weights = worker.allocate(4);
            weights.hostSegment().set(ValueLayout.JAVA_INT, 0, 7);
            weights.freeze();
            TokenStream a = worker.run((o, in) -> {
                Buffer out = o.allocate(4);
                o.submit(SCALE, Orchestrator.scalars(3), read(weights), write(out));
                o.endStep(out.region());
            }, null);
            Token token = a.poll(Duration.ofSeconds(10));
            assertThat(token.asInt()).isEqualTo(21);
            assertThat(a.completion().join().status()).isEqualTo(Status.COMPLETED);
        }
    }

    /** The sizes of one request's publications, step by step, in the order they were made. */
    private static List<List<Long>> publications(RunOptions options, int[] tasksPerStep) {
        try (Worker worker = Worker.builder().device(CpuDeviceConfig.withCores(1)).trace(TraceConfig.inMemory()).build()) {
            TokenStream stream = worker.run((o, counts) -> {
                Buffer counter = o.allocate(ValueLayout.JAVA_INT, 1);
                for (int count : counts) {
                    for (int i = 0; i < count; i++) {
                        o.submit(INCREMENT, readWrite(counter));
                    }
                    o.endStep(counter.region());
                }
            }, tasksPerStep, options);
            int tokens = 0;
            int expected = 0;
            for (Token t : stream) {
                expected += tasksPerStep[tokens++];
                assertThat(t.asInt()).isEqualTo(expected);
            }
            assertThat(stream.completion().join().status()).isEqualTo(Status.COMPLETED);
            worker.close();
            List<List<Long>> perStep = new ArrayList<>();
            for (int step = 0; step < tasksPerStep.length; step++) {
                perStep.add(new ArrayList<>());
            }
            for (TraceEvent e : worker.traceEvents()) {
                if (e.kind() == TraceEvent.Kind.PUBLISH) {
                    perStep.get((int) e.step()).add(e.count());
                }
            }
            return perStep;
        }
    }

    @Test
    void aLongStepIsPublishedInBatchesThatDoubleUpToTheBoundAndEachStepStartsSmallAgain() {
        // 20,000 tasks and the readback: 64, 128, ..., 4096 (8,128 tasks), then 4096s, then the rest
        // at endStep; a short step as with a fixed batch.
        List<List<Long>> steps = publications(RunOptions.defaults(), new int[] {20_000, 100});
        assertThat(steps.get(0)).containsExactly(64L, 128L, 256L, 512L, 1024L, 2048L, 4096L, 4096L, 4096L,
                20_001L - 8128 - 2 * 4096);
        assertThat(steps.get(1)).containsExactly(64L, 37L);
    }

    @Test
    void aFixedBatchStaysFixedAndTheBoundIsItsOwnOption() {
        assertThat(publications(RunOptions.defaults().withPublishBatch(64), new int[] {300}).get(0))
                .containsExactly(64L, 64L, 64L, 64L, 45L);
        assertThat(publications(RunOptions.defaults().withPublishBatch(10).withMaxPublishBatch(40), new int[] {150})
                .get(0)).containsExactly(10L, 20L, 40L, 40L, 40L, 1L);
        assertThat(RunOptions.defaults().maxPublishBatch()).isEqualTo(RunOptions.DEFAULT_MAX_PUBLISH_BATCH);
        assertThat(SessionConfig.defaults().maxPublishBatch()).isEqualTo(RunOptions.DEFAULT_MAX_PUBLISH_BATCH);
        assertThat(SessionConfig.defaults().publishBatch(8).maxPublishBatch()).isEqualTo(8);
        assertThatThrownBy(() -> RunOptions.defaults().withMaxPublishBatch(63))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("maxPublishBatch must be >= publishBatch (64), was 63");
        assertThatThrownBy(() -> SessionConfig.defaults().maxPublishBatch(8))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("maxPublishBatch must be >= publishBatch (64), was 8");
    }
}
