package dev.tandem.graph;

import dev.tandem.Access;
import dev.tandem.AccessMode;
import dev.tandem.Buffer;
import dev.tandem.Kernel;
import dev.tandem.Region;
import dev.tandem.device.DeviceBuffer;
import dev.tandem.device.TaskNode;
import java.lang.foreign.Arena;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * The per-task pieces of the host and device paths, single-threaded, in ns per task: what
 * {@code ./tandem bench overhead} measures end to end, taken apart.
 *
 * <ul>
 *   <li>{@code submitWire*}: a task built as {@code OrchestratorImpl.submit} builds it (the
 *       access copy, the node) and its dependencies inferred and wired by the {@link TensorMap},
 *       for a chain (each task read-writes the region the previous one wrote) and for a fan-out
 *       (readers of one written region);
 *   <li>{@code publish}: a batch of 64 wired tasks counted in their step and published;
 *   <li>{@code complete}: a task completing into a waiting successor (release, step count);
 *   <li>{@code lookup*}: inference on a buffer of 1024 segments, reading a segment whose writer
 *       has finished (exact match) and a region inside a segment (a split).
 * </ul>
 *
 * Run: {@code ./mvnw -B -o -pl tandem-core -Pjmh test} (JMH options in
 * {@code -Djmh.args="..."}, e.g. {@code -Djmh.args="-f 1 -wi 3 -i 5 TaskPath"}).
 *
 * <p>The forked JVM's heap is fixed and touched up front: with a heap left to grow, iterations
 * of one benchmark alternated between about 40 and 310 ns/op as the young generation grew and
 * its new pages were faulted in and zeroed by the kernel inside the timed loop.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-XX:+UseParallelGC", "-XX:+UseCondCardMark", "-Xms1g", "-Xmx1g", "-XX:+AlwaysPreTouch"})
public class TaskPathBenchmark {
    static final int BATCH = 64;
    static final Kernel EMPTY = Kernel.of("empty", context -> {});
    static final long[] NO_SCALARS = new long[0];

    /** A request that never ends, never fails and ignores room signals. */
    static final class Owner implements StepOwner {
        long doneSteps;

        @Override public long requestId() { return 1; }
        @Override public boolean isRunning() { return true; }
        @Override public int laneOf(Step step) { return 4; }
        @Override public void taskFailed(TaskNode task, Throwable cause) {}
        @Override public void roomInStep(Step step) {}
        @Override public void stepDone(Step step) { doneSteps++; }
    }

    private final Owner owner = new Owner();
    private final TaskNode.ReadySink sink = task -> {};
    private Arena arena;
    private DeviceBuffer buffer;
    private DeviceBuffer segmented;
    private DeviceBuffer[] tensors;
    private Access[] readWrite;
    private Access[] read;
    private TensorMap map;
    private Step step;
    private long index;
    private TaskNode[] batch;

    @Setup(Level.Trial)
    public void setUp() {
        arena = Arena.ofConfined();
        buffer = new DeviceBuffer("b", arena.allocate(64 * 1024), Buffer.Scope.REQUEST, owner, null);
        segmented = new DeviceBuffer("kv", arena.allocate(8 * 1024), Buffer.Scope.REQUEST, owner, null);
        Region first = new Region(buffer, 0, 8);
        readWrite = new Access[] {Access.readWrite(first)};
        read = new Access[] {Access.read(first)};
        map = new TensorMap();
        step = new Step(owner, 0);
        batch = new TaskNode[BATCH];
        // 1024 tensors of 8 bytes, each written whole once by a task that has finished: each
        // track is one segment, which a whole-tensor access matches exactly.
        tensors = new DeviceBuffer[1024];
        for (int t = 0; t < tensors.length; t++) {
            tensors[t] = new DeviceBuffer("t" + t, arena.allocate(8), Buffer.Scope.REQUEST, owner, null);
            TaskNode writer = node(new Access[] {Access.write(new Region(tensors[t], 0, 8))});
            map.access(tensors[t], 0, 8, AccessMode.WRITE, writer);
            writer.finish(sink);
        }
        // 1024 segments of 8 bytes, each written once by a task that has finished (the first
        // access after this merges them: their writers are finished and they have no readers).
        for (int s = 0; s < 1024; s++) {
            TaskNode writer = node(new Access[] {Access.write(new Region(segmented, 8L * s, 8))});
            map.access(segmented, 8L * s, 8, AccessMode.WRITE, writer);
            writer.finish(sink);
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        for (DeviceBuffer tensor : tensors) {
            if (TensorMap.segmentCount(tensor) != 1) {
                throw new IllegalStateException("lookupExact split " + tensor.name() + ": it measured no exact lookup");
            }
        }
        step.close(null);
        arena.close();
    }

    private TaskNode node(Access[] accesses) {
        return new TaskNode(EMPTY, accesses.clone(), NO_SCALARS, step, index++, null);
    }

    private void submit(Access[] accesses) {
        TaskNode task = node(accesses);
        for (Access access : task.accesses()) {
            Region r = access.region();
            map.access((DeviceBuffer) r.buffer(), r.offset(), r.length(), access.mode(), task);
        }
        batch[(int) (index % BATCH)] = task;
    }

    /** A chain: each task depends on the last (RAW + WAW), which is still unfinished. */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public void submitWireChain(Blackhole bh) {
        for (int i = 0; i < BATCH; i++) {
            submit(readWrite);
        }
        bh.consume(batch[0]);
        // Retire the batch so the chain does not grow: the next batch's first task sees a finished writer.
        for (TaskNode t : batch) {
            t.finish(sink);
        }
    }

    /** A fan-out: readers of one region, each depending on its (unfinished) writer. */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public void submitWireFanout(Blackhole bh) {
        submit(readWrite);
        for (int i = 1; i < BATCH; i++) {
            submit(read);
        }
        bh.consume(batch[1]);
        for (TaskNode t : batch) {
            t.finish(sink);
        }
    }

    /** Publishing a batch: one step update, then each task's guard dropped. */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public int publish() {
        for (int i = 0; i < BATCH; i++) {
            batch[i] = new TaskNode(EMPTY, read, NO_SCALARS, step, index++, null);
        }
        step.addTasks(BATCH);
        int ready = 0;
        for (int i = 0; i < BATCH; i++) {
            if (batch[i].publish()) {
                ready++;
            }
        }
        for (TaskNode t : batch) {
            t.complete(sink); // keep the step's count level; measured by complete()
        }
        return ready;
    }

    /** Completing a task whose successor waits on it: release, hand over, count in the step. */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public TaskNode complete() {
        TaskNode last = null;
        TaskNode previous = new TaskNode(EMPTY, read, NO_SCALARS, step, index++, null);
        step.addTasks(BATCH + 1);
        previous.publish();
        for (int i = 0; i < BATCH; i++) {
            TaskNode next = new TaskNode(EMPTY, read, NO_SCALARS, step, index++, null);
            previous.wireTo(next);
            next.publish();
            last = previous.complete(sink); // returns next, now ready
            previous = next;
        }
        previous.complete(sink);
        return last;
    }

    /**
     * Reading a region that is exactly one existing segment (its writer finished): a tensor read
     * whole, one of 1024 visited out of order, as a step's tasks visit a model's tensors.
     */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public void lookupExact() {
        for (int i = 0; i < BATCH; i++) {
            TaskNode reader = new TaskNode(EMPTY, read, NO_SCALARS, step, index++, null);
            DeviceBuffer tensor = tensors[(int) ((index * 37) & 1023)];
            map.access(tensor, 0, 8, AccessMode.READ, reader);
            reader.finish(sink);
        }
    }

    /** Reading inside a segment: one split on each side, undone by the next write of the segment. */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public void lookupSplitAndRewrite() {
        for (int i = 0; i < BATCH; i++) {
            long s = (index * 37) & 1023;
            TaskNode reader = new TaskNode(EMPTY, read, NO_SCALARS, step, index++, null);
            map.access(segmented, 8 * s + 2, 4, AccessMode.READ, reader);
            reader.finish(sink);
            TaskNode writer = new TaskNode(EMPTY, read, NO_SCALARS, step, index++, null);
            map.access(segmented, 8 * s, 8, AccessMode.WRITE, writer);
            writer.finish(sink);
        }
    }
}
