package dev.tandem.device;

import dev.tandem.Kernel;
import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;
import org.jetbrains.lincheck.datastructures.IntGen;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Model checking of one {@link ReadyQueue} lane with Lincheck: multi-producer multi-consumer
 * linearizability against a sequential FIFO, for pushes of one task and of a run of two (which
 * must appear at once).
 *
 * <p>A task enters a queue once in its life, so every {@code push} makes a fresh
 * {@link TaskNode}; the generated value becomes its index, which is what {@code poll} reports
 * (the sequential specification cannot return the same node objects). Two pushes of equal
 * values are still two distinct nodes, so values need not be unique.
 *
 * <p>Lincheck generates random scenarios (3 threads, a few operations each, plus a prefix and
 * a suffix run single-threaded) and explores interleavings of each with model checking; the
 * lock-freedom of the queue is checked too (no operation may wait for another).
 */
@Timeout(value = 30, unit = TimeUnit.MINUTES) // for -Dtandem.long=true; Lincheck detects hangs itself
class ReadyQueueLincheckTest {

    static final boolean LONG = Boolean.getBoolean("tandem.long");

    static final Kernel NOOP = Kernel.of("noop", c -> { });

    @Param(name = "value", gen = IntGen.class, conf = "1:9")
    public static class OneLane {
        final ReadyQueue queue = new ReadyQueue(1);

        @Operation
        public void push(@Param(name = "value") int value) {
            TaskNode task = new TaskNode(NOOP, null, null, null, value, null);
            task.lane = 0;
            queue.push(task);
        }

        /** Two tasks appended with one CAS: {@code value}, then {@code value + 10}. */
        @Operation
        public void pushTwo(@Param(name = "value") int value) {
            TaskNode[] tasks = {new TaskNode(NOOP, null, null, null, value, null),
                    new TaskNode(NOOP, null, null, null, value + 10, null)};
            tasks[0].lane = 0;
            tasks[1].lane = 0;
            queue.pushAll(tasks, 0, 2, 0);
        }

        @Operation
        public int poll() {
            TaskNode task = queue.poll();
            return task == null ? -1 : (int) task.index();
        }

        @Operation
        public boolean isEmpty() {
            return queue.isEmpty();
        }
    }

    /** The sequential specification: a FIFO of values. */
    public static class Fifo {
        final ArrayDeque<Integer> values = new ArrayDeque<>();

        public void push(int value) {
            values.addLast(value);
        }

        public void pushTwo(int value) {
            values.addLast(value);
            values.addLast(value + 10);
        }

        public int poll() {
            Integer value = values.pollFirst();
            return value == null ? -1 : value;
        }

        public boolean isEmpty() {
            return values.isEmpty();
        }
    }

    @Test
    void oneLaneIsALinearizableLockFreeFifo() {
        new ModelCheckingOptions()
                .sequentialSpecification(Fifo.class)
                .checkObstructionFreedom(true)
                .threads(3)
                .actorsPerThread(3)
                .actorsBefore(2)
                .actorsAfter(2)
                .iterations(LONG ? 200 : 10)
                .invocationsPerIteration(LONG ? 10_000 : 500)
                .check(OneLane.class);
    }
}
