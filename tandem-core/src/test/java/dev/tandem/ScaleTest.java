package dev.tandem;

import static dev.tandem.Access.read;
import static dev.tandem.Access.readWrite;
import static dev.tandem.Access.write;
import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.HashSet;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import java.util.stream.Stream;

/**
 * A million tiny tasks in one step, as a chain and as a wide fan-out: they complete in
 * bounded time with the right token, no core's stack grows with the graph (a core runs the
 * successor it made ready in a loop), and the memory drains to zero.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ScaleTest {

    private static final int TASKS = 1_000_000;

    /** x += 1 on a long: the chain's token counts the tasks that ran, in order. */
    static final Kernel ADD_ONE = Kernel.of("add-one", c -> {
        MemorySegment seg = c.region(0);
        seg.set(ValueLayout.JAVA_LONG, 0, seg.get(ValueLayout.JAVA_LONG, 0) + 1);
    });

    static final Kernel EMPTY = Kernel.of("empty", c -> {});

    static final Kernel SET_42 = Kernel.of("set-42", c -> c.region(0).set(ValueLayout.JAVA_LONG, 0, 42));

    private static List<Long> tokens(TokenStream stream) {
        List<Long> values = new ArrayList<>();
        for (Token token : stream) {
            values.add(token.asLong());
        }
        return values;
    }

    private static void assertCompletedAndDrained(Worker worker, TokenStream stream) {
        Outcome outcome = stream.completion().join();
        assertThat(outcome.status()).as("outcome %s", outcome).isEqualTo(Status.COMPLETED);
        assertThat(outcome.cause()).as("cause of %s", outcome).isNull();
        assertThat(worker.memoryInUse()).as("device memory after the request completed").isZero();
    }

    /** A chain of empty tasks, each READ_WRITE of the same 8 bytes, then one counting task. */
    private static void runEmptyChain(RunOptions options) {
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
            TokenStream stream = worker.run((o, n) -> {
                Buffer x = o.allocate(ValueLayout.JAVA_LONG, 1);
                Access same = readWrite(x);
                for (int i = 0; i < n; i++) {
                    o.submit(EMPTY, same);
                }
                o.submit(ADD_ONE, same);
                o.endStep(x.region());
            }, TASKS, options);
            assertThat(tokens(stream)).as("token of a chain of %d empty tasks and one increment", TASKS)
                    .containsExactly(1L);
            assertCompletedAndDrained(worker, stream);
        }
    }

    @Test
    void aMillionEmptyTasksInAChainPublishedInBatchesComplete() {
        runEmptyChain(RunOptions.defaults());
    }

    @Test
    void aMillionEmptyTasksInAChainPublishedAtOnceComplete() {
        runEmptyChain(RunOptions.serial());
    }

    @Test
    void aChainWiredBeforeItStartsRunsOnOneCoreInConstantStack() throws Exception {
        // The chain waits behind a gate task until the whole step is published, so every link
        // becomes ready when its predecessor finishes, on the core that finished it.
        CountDownLatch gate = new CountDownLatch(1);
        Kernel waitAtGate = Kernel.of("gate", c -> gate.await());
        AtomicInteger coresUsed = new AtomicInteger();
        ConcurrentHashMap<Long, Long> stackDepthAt = new ConcurrentHashMap<>();
        Kernel link = Kernel.of("link", c -> {
            MemorySegment seg = c.region(0);
            seg.set(ValueLayout.JAVA_LONG, 0, seg.get(ValueLayout.JAVA_LONG, 0) + 1);
            coresUsed.getAndUpdate(bits -> bits | 1 << c.core());
            long index = c.scalar(0);
            if (index % 100_000 == 0 || index == TASKS - 1) {
                stackDepthAt.put(index, StackWalker.getInstance().walk(Stream::count));
            }
        });
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
            TokenStream stream = worker.run((o, n) -> {
                Buffer x = o.allocate(ValueLayout.JAVA_LONG, 1);
                Access same = readWrite(x);
                o.submit(waitAtGate, same);
                for (int i = 0; i < n; i++) {
                    o.submit(link, Orchestrator.scalars(i), same);
                }
                o.endStep(x.region()); // publishes the whole step; run-ahead 2 lets the program on
                gate.countDown();
                // The whole step is wired before its gate opens, so it needs no bound on tasks in flight.
            }, TASKS, RunOptions.defaults().withPublishBatch(Integer.MAX_VALUE).withMaxTasksInFlight(Integer.MAX_VALUE));
            assertThat(tokens(stream)).as("token of a chain of %d increments", TASKS).containsExactly((long) TASKS);
            assertCompletedAndDrained(worker, stream);
        }
        assertThat(Integer.bitCount(coresUsed.get()))
                .as("cores that ran links of a chain wired before it started (bitmask %s)",
                        Integer.toBinaryString(coresUsed.get()))
                .isEqualTo(1);
        assertThat(stackDepthAt).hasSize(11);
        assertThat(new HashSet<>(stackDepthAt.values()))
                .as("stack depth of a core running link i of the chain, by i: %s", new TreeMap<>(stackDepthAt))
                .hasSize(1);
    }

    @Test
    void aMillionIncrementsInAChainRunInSubmissionOrder() {
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
            TokenStream stream = worker.run((o, n) -> {
                Buffer x = o.allocate(ValueLayout.JAVA_LONG, 1);
                Access same = readWrite(x);
                for (int i = 0; i < n; i++) {
                    o.submit(ADD_ONE, same);
                }
                o.endStep(x.region());
            }, TASKS, RunOptions.serial());
            assertThat(tokens(stream)).as("token of a chain of %d increments", TASKS).containsExactly((long) TASKS);
            assertCompletedAndDrained(worker, stream);
        }
    }

    @Test
    void oneWriterAMillionReadersAndOneWriterAfterThemComplete() {
        LongAdder readers = new LongAdder();
        LongAdder wrongReads = new LongAdder();
        Kernel reader = Kernel.of("reader", c -> {
            if (c.region(0).get(ValueLayout.JAVA_LONG, 0) != 42) {
                wrongReads.increment();
            }
            readers.increment();
        });
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
            TokenStream stream = worker.run((o, n) -> {
                Buffer x = o.allocate(ValueLayout.JAVA_LONG, 1);
                o.submit(SET_42, write(x));
                Access readX = read(x);
                for (int i = 0; i < n; i++) {
                    o.submit(reader, readX);
                }
                o.submit(ADD_ONE, readWrite(x));
                o.endStep(x.region());
            }, TASKS, RunOptions.defaults());
            assertThat(tokens(stream)).as("token after the fan-out: the last writer ran after the first").containsExactly(43L);
            assertCompletedAndDrained(worker, stream);
            assertThat(readers.sum()).as("readers that ran").isEqualTo(TASKS);
            assertThat(wrongReads.sum())
                    .as("readers that ran before the first writer or after the last one (RAW/WAR violated)")
                    .isZero();
        }
    }

    @Test
    void aMillionReadersPublishedAtOnceWaitForOneWriter() {
        // Whole-step publication: every reader is wired to the first writer before it runs,
        // so finishing the writer releases a million successors at once.
        LongAdder readers = new LongAdder();
        Kernel reader = Kernel.of("reader", c -> readers.increment());
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
            TokenStream stream = worker.run((o, n) -> {
                Buffer x = o.allocate(ValueLayout.JAVA_LONG, 1);
                o.submit(SET_42, write(x));
                Access readX = read(x);
                for (int i = 0; i < n; i++) {
                    o.submit(reader, readX);
                }
                o.submit(ADD_ONE, readWrite(x));
                o.endStep(x.region());
            }, TASKS, RunOptions.serial());
            assertThat(tokens(stream)).containsExactly(43L);
            assertCompletedAndDrained(worker, stream);
            assertThat(readers.sum()).as("readers that ran").isEqualTo(TASKS);
        }
    }
}
