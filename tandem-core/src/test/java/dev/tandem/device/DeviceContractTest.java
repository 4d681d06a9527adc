package dev.tandem.device;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tandem.Access;
import dev.tandem.Buffer;
import dev.tandem.CpuDeviceConfig;
import dev.tandem.Kernel;
import dev.tandem.Region;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The {@link Device} contract, checked on the CPU device through the interface only: each
 * kind of task runs as documented, every submitted task is completed exactly once (also when
 * skipped or failing), a readback's token arrives before its completion, chains run without
 * resubmission, and a task submitted to idle units is run (no lost wake-up). A GPU device or
 * a remote worker should pass the same checks.
 */
@Timeout(60)
class DeviceContractTest {
    private Device device;
    private final Arena arena = Arena.ofShared();

    /** A group that records what the device reported. */
    static final class Group implements TaskGroup {
        volatile boolean live = true;
        final AtomicInteger done = new AtomicInteger();
        final ConcurrentLinkedQueue<String> events = new ConcurrentLinkedQueue<>();
        final ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
        volatile byte[] token;
        final CountDownLatch allDone;

        Group(int tasks) {
            allDone = new CountDownLatch(tasks);
        }

        @Override public long requestId() { return 7; }
        @Override public long index() { return 3; }
        @Override public boolean isLive() { return live; }
        @Override public int lane() { return 1; }

        @Override
        public void taskFailed(TaskNode task, Throwable cause) {
            failures.add(cause);
        }

        @Override
        public void tokenRead(byte[] bytes) {
            token = bytes;
            events.add("token");
        }

        @Override
        public void tasksDone(int n) {
            assertThat(n).as("a batch counts at least one task").isPositive();
            events.add("done");
            done.addAndGet(n);
            for (int i = 0; i < n; i++) {
                allDone.countDown();
            }
        }

        void await() throws InterruptedException {
            assertThat(allDone.await(30, TimeUnit.SECONDS)).as("every task completed").isTrue();
        }
    }

    @BeforeEach
    void start() {
        device = Device.cpu(new CpuDeviceConfig(2, 1 << 20, 1_000), null, "contract");
    }

    @AfterEach
    void stop() throws InterruptedException {
        device.close();
        device.join();
        arena.close();
    }

    private DeviceBuffer buffer(long bytes) {
        device.memory().reserve(bytes, "test");
        return new DeviceBuffer("b", device.allocate(arena, bytes, 64), Buffer.Scope.REQUEST, this, null);
    }

    private static void submit(Device device, TaskNode task) {
        assertThat(task.publish()).as("a task without predecessors is ready at publication").isTrue();
        device.submit(new TaskNode[] {task}, 1);
    }

    @Test
    void uploadThenReadbackDeliversTheBytesBeforeCompleting() throws InterruptedException {
        DeviceBuffer buffer = buffer(8);
        Region region = new Region(buffer, 0, 8);
        Group group = new Group(2);
        TaskNode upload = TaskNode.upload(Access.write(region), new byte[] {1, 2, 3, 4, 5, 6, 7, 8}, group, 0);
        TaskNode readback = TaskNode.readback(Access.read(region), group, 1);
        assertThat(upload.wireTo(readback)).isTrue();
        assertThat(readback.publish()).as("waits for the upload").isFalse();
        submit(device, upload);
        group.await();
        assertThat(group.token).containsExactly(1, 2, 3, 4, 5, 6, 7, 8);
        List<String> events = List.copyOf(group.events);
        assertThat(events).as("the token, then the count that completes both (in one batch or two)")
                .containsAnyOf("token").endsWith("done");
        assertThat(events.indexOf("token")).isLessThan(events.lastIndexOf("done"));
        assertThat(group.done).hasValue(2);
        assertThat(upload.isFinished()).isTrue();
        assertThat(readback.isFinished()).isTrue();
    }

    @Test
    void kernelsSeeTheirRegionsReadOnlyForReadsAndFailuresAreReportedOnce() throws InterruptedException {
        DeviceBuffer buffer = buffer(4);
        Region region = new Region(buffer, 0, 4);
        Group group = new Group(2);
        Kernel write = new Kernel() {
            @Override public String name() { return "write"; }
            @Override public void run(dev.tandem.TaskContext context) {
                assertThat(context.requestId()).isEqualTo(7);
                assertThat(context.step()).isEqualTo(3);
                assertThat(context.cancelled()).isFalse();
                context.region(0).set(ValueLayout.JAVA_INT, 0, 42);
            }
        };
        Kernel writeThroughRead = new Kernel() {
            @Override public String name() { return "writes its input"; }
            @Override public void run(dev.tandem.TaskContext context) {
                context.region(0).set(ValueLayout.JAVA_INT, 0, 1); // a READ region: throws
            }
        };
        TaskNode first = new TaskNode(write, new Access[] {Access.write(region)}, new long[0], group, 0, null);
        TaskNode second = new TaskNode(writeThroughRead, new Access[] {Access.read(region)}, new long[0], group, 1, null);
        assertThat(first.wireTo(second)).isTrue();
        second.publish();
        submit(device, first);
        group.await();
        assertThat(buffer.segment().get(ValueLayout.JAVA_INT, 0)).isEqualTo(42);
        assertThat(group.failures).singleElement().isInstanceOf(IllegalArgumentException.class);
        assertThat(group.done).hasValue(2);
    }

    /**
     * One unit runs a chain whose tasks name different buffers at the same region index, and a
     * split task whose parts ask for their regions again: each task sees its own regions (a
     * core's slices of one task never leak into the next), every part the same ones, and an index
     * past the task's regions still fails.
     */
    @Test
    void eachTaskSeesItsOwnRegionsAndEveryPartTheSame() throws InterruptedException {
        device.close();
        device.join();
        device = Device.cpu(new CpuDeviceConfig(1, 1 << 20, 1_000), null, "contract-1");
        int chain = 6;
        int parts = 5;
        DeviceBuffer[] buffers = new DeviceBuffer[chain];
        Group group = new Group(chain + 1);
        TaskNode[] tasks = new TaskNode[chain + 1];
        for (int i = 0; i < chain; i++) {
            buffers[i] = buffer(8);
            int index = i;
            Kernel write = Kernel.of("write", c -> {
                c.region(0).set(ValueLayout.JAVA_INT, 0, 100 + index);
                if (c.regionCount() > 1) {
                    c.region(1).set(ValueLayout.JAVA_INT, 4, 1); // a READ region: throws
                }
            });
            Access[] accesses = i == chain - 1
                    ? new Access[] {Access.write(new Region(buffers[i], 0, 8)), Access.read(new Region(buffers[0], 0, 8))}
                    : new Access[] {Access.write(new Region(buffers[i], 0, 8))};
            tasks[i] = new TaskNode(write, accesses, new long[0], group, i, null);
        }
        DeviceBuffer out = buffer(4L * parts);
        // By identity: segments of the same memory are equal, and the point is that one slice is shared.
        java.util.Set<MemorySegment> seen =
                java.util.Collections.synchronizedSet(java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>()));
        Kernel split = Kernel.ofParts("split", c -> parts, c -> {
            MemorySegment target = c.region(11);
            seen.add(c.region(0));
            target.set(ValueLayout.JAVA_INT, 4L * c.part(), c.region(0).get(ValueLayout.JAVA_INT, 0) + c.part()
                    + c.region(10).get(ValueLayout.JAVA_INT, 0) - 103);
            assertThatThrownBy(() -> c.region(12)).isInstanceOf(IndexOutOfBoundsException.class);
            assertThatThrownBy(() -> c.region(-1)).isInstanceOf(IndexOutOfBoundsException.class);
        });
        // Past the first eight regions too (where a core's slice array grows): region 11 is the output.
        Access[] splitAccesses = new Access[12];
        splitAccesses[0] = Access.read(new Region(buffers[2], 0, 8));
        for (int i = 1; i < 11; i++) {
            splitAccesses[i] = Access.read(new Region(buffers[3], 0, 8));
        }
        splitAccesses[11] = Access.write(new Region(out, 0, 4L * parts));
        tasks[chain] = new TaskNode(split, splitAccesses, new long[0], group, chain, null);
        for (int i = 0; i < chain; i++) {
            assertThat(tasks[i].wireTo(tasks[i + 1])).isTrue();
            tasks[i + 1].publish();
        }
        submit(device, tasks[0]);
        group.await();
        for (int i = 0; i < chain; i++) {
            assertThat(buffers[i].segment().get(ValueLayout.JAVA_INT, 0)).as("buffer %d", i).isEqualTo(100 + i);
        }
        assertThat(group.failures).as("only the last chain task's write through a READ region")
                .singleElement().isInstanceOf(IllegalArgumentException.class);
        for (int p = 0; p < parts; p++) {
            assertThat(out.segment().get(ValueLayout.JAVA_INT, 4L * p)).as("part %d", p).isEqualTo(102 + p);
        }
        assertThat(seen).as("every part of the split task got the same slice (one unit ran them all)").hasSize(1);
    }

    @Test
    void tasksOfAnEndedGroupAreSkippedButCompleted() throws InterruptedException {
        AtomicInteger ran = new AtomicInteger();
        Kernel count = new Kernel() {
            @Override public String name() { return "count"; }
            @Override public void run(dev.tandem.TaskContext context) { ran.incrementAndGet(); }
        };
        Group group = new Group(100);
        group.live = false;
        TaskNode[] tasks = new TaskNode[100];
        for (int i = 0; i < tasks.length; i++) {
            tasks[i] = new TaskNode(count, new Access[0], new long[0], group, i, null);
            if (i > 0) {
                tasks[i - 1].wireTo(tasks[i]);
            }
        }
        for (int i = tasks.length - 1; i > 0; i--) {
            assertThat(tasks[i].publish()).isFalse();
        }
        submit(device, tasks[0]);
        group.await();
        assertThat(ran).hasValue(0);
        assertThat(group.done).hasValue(100);
    }

    @Test
    void aChainRunsToTheEndAndTasksSubmittedToIdleUnitsRun() throws InterruptedException {
        Kernel noop = new Kernel() {
            @Override public String name() { return "noop"; }
            @Override public void run(dev.tandem.TaskContext context) {}
        };
        for (int round = 0; round < 200; round++) {
            Group group = new Group(50);
            TaskNode[] tasks = new TaskNode[50];
            for (int i = 0; i < tasks.length; i++) {
                tasks[i] = new TaskNode(noop, new Access[0], new long[0], group, i, null);
                if (i > 0) {
                    tasks[i - 1].wireTo(tasks[i]);
                    tasks[i].publish();
                }
            }
            if (round % 20 == 0) {
                // Let the units go idle (spin 1 µs, then park) before the next submit.
                while (!(device.isIdle(0) && device.isIdle(1))) {
                    Thread.onSpinWait();
                }
            }
            submit(device, tasks[0]);
            group.await();
            assertThat(group.done).hasValue(50);
        }
        assertThat(device.busyNanos()).isPositive();
        assertThat(device.busyFraction()).isBetween(0.0, 1.0);
        assertThat(device.units()).isEqualTo(2);
        assertThat(device.isDeviceThread()).isFalse();
    }

    @Test
    void aGroupsCountIsReportedBeforeTheUnitRunsAnotherGroupsTask() throws InterruptedException {
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch blocking = new CountDownLatch(1);
        Kernel noop = new Kernel() {
            @Override public String name() { return "noop"; }
            @Override public void run(dev.tandem.TaskContext context) {}
        };
        Kernel block = new Kernel() {
            @Override public String name() { return "block"; }
            @Override public void run(dev.tandem.TaskContext context) {
                blocking.countDown();
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        };
        Group first = new Group(3);
        Group second = new Group(1);
        TaskNode a0 = new TaskNode(noop, new Access[0], new long[0], first, 0, null);
        TaskNode a1 = new TaskNode(noop, new Access[0], new long[0], first, 1, null);
        TaskNode a2 = new TaskNode(noop, new Access[0], new long[0], first, 2, null);
        TaskNode b0 = new TaskNode(block, new Access[0], new long[0], second, 0, null);
        a0.wireTo(a1);
        a1.wireTo(a2);
        a2.wireTo(b0); // the chain runs on one unit and moves to the other group without a queue
        a1.publish();
        a2.publish();
        b0.publish();
        submit(device, a0);
        assertThat(blocking.await(30, TimeUnit.SECONDS)).isTrue();
        first.await(); // while the other group's kernel still runs
        assertThat(first.done).hasValue(3);
        assertThat(second.done).hasValue(0);
        release.countDown();
        second.await();
    }

    @Test
    void allocationsComeFromTheScopeAndTheBudgetIsTheDevices() {
        MemorySegment empty = device.allocate(arena, 0, 64);
        assertThat(empty.byteSize()).isZero();
        MemorySegment segment = device.allocate(arena, 100, 64);
        assertThat(segment.byteSize()).isEqualTo(100);
        assertThat(segment.address() % 64).isZero();
        assertThat(device.memory().budget()).isEqualTo(1 << 20);
        assertThat(device.memory().tryReserve(2L << 20)).isFalse();
        assertThat(device.memory().inUse()).isZero();
    }

    // ---- tasks split into parts (Kernel#parts) ----

    /** A kernel of {@code parts} parts that adds one to the int of its part in region 0, and records the core. */
    private static Kernel partsKernel(int parts, ConcurrentLinkedQueue<Integer> cores) {
        return Kernel.ofParts("parts", c -> parts, c -> {
            MemorySegment counts = c.region(0);
            long at = (long) c.part() * Integer.BYTES;
            counts.set(ValueLayout.JAVA_INT, at, counts.get(ValueLayout.JAVA_INT, at) + 1);
            if (cores != null) {
                cores.add(c.core());
            }
        });
    }

    @Test
    void everyPartOfASplitTaskRunsOnceAndItsSuccessorSeesEveryPart() throws InterruptedException {
        for (int round = 0; round < 300; round++) {
            int parts = 1 + round % 37;
            DeviceBuffer counts = buffer((long) parts * Integer.BYTES);
            Region region = new Region(counts, 0, (long) parts * Integer.BYTES);
            Group group = new Group(2);
            int[] seen = new int[parts];
            Kernel check = Kernel.of("check", c -> {
                for (int p = 0; p < parts; p++) {
                    seen[p] = c.region(0).get(ValueLayout.JAVA_INT, (long) p * Integer.BYTES);
                }
            });
            TaskNode split = new TaskNode(partsKernel(parts, null), new Access[] {Access.readWrite(region)},
                    new long[0], group, 0, null);
            TaskNode after = new TaskNode(check, new Access[] {Access.read(region)}, new long[0], group, 1, null);
            assertThat(split.wireTo(after)).isTrue();
            assertThat(after.publish()).isFalse();
            if (round % 50 == 0) {
                while (!(device.isIdle(0) && device.isIdle(1))) {
                    Thread.onSpinWait(); // the helper must be woken from its park
                }
            }
            submit(device, split);
            group.await();
            assertThat(seen).as("round " + round + ": each of " + parts + " parts ran exactly once, before the successor")
                    .containsOnly(1);
            assertThat(group.done).as("the split task is completed once").hasValue(2);
        }
    }

    /**
     * A kernel of two parts that each wait until both have started, so only two cores running
     * parts together get past; each part adds its core to {@code cores}.
     */
    private static Kernel meetingParts(ConcurrentLinkedQueue<Integer> cores) {
        CountDownLatch bothStarted = new CountDownLatch(2);
        return Kernel.ofParts("meet", c -> 2, c -> {
            cores.add(c.core());
            bothStarted.countDown();
            if (!bothStarted.await(20, TimeUnit.SECONDS)) {
                throw new IllegalStateException("part " + c.part() + " ran alone");
            }
        });
    }

    @Test
    void partsOfOneTaskRunOnSeveralCoresAtOnce() throws InterruptedException {
        ConcurrentLinkedQueue<Integer> cores = new ConcurrentLinkedQueue<>();
        Kernel meet = meetingParts(cores);
        Group group = new Group(1);
        submit(device, new TaskNode(meet, new Access[0], new long[0], group, 0, null));
        group.await();
        assertThat(group.failures).isEmpty();
        assertThat(cores).containsExactlyInAnyOrder(0, 1);
    }

    @Test
    void eachCoreThatRanPartsOfATaskRecordsOneSpanOfIt() throws InterruptedException {
        dev.tandem.trace.TraceRecorder recorder = new dev.tandem.trace.TraceRecorder(true, false);
        Device traced = Device.cpu(new CpuDeviceConfig(2, 1 << 20, 1_000), recorder, "traced");
        Kernel meet = meetingParts(new ConcurrentLinkedQueue<>());
        Group group = new Group(1);
        submit(traced, new TaskNode(meet, new Access[0], new long[0], group, 5, null));
        group.await();
        traced.close();
        traced.join();
        assertThat(group.failures).isEmpty();
        assertThat(recorder.events()).filteredOn(e -> e.kind() == dev.tandem.TraceEvent.Kind.TASK)
                .as("one span per core, both of task 5")
                .extracting(dev.tandem.TraceEvent::thread, dev.tandem.TraceEvent::task)
                .containsExactlyInAnyOrder(org.assertj.core.groups.Tuple.tuple(0, 5L),
                        org.assertj.core.groups.Tuple.tuple(1, 5L));
    }

    /**
     * A core that finished another group's task and then helps with a split task counts each
     * in its own group. The helper (part 1, claimed from the back) is made to return the last
     * part, so that it completes the split task while it still holds the other group's count.
     */
    @Test
    void aHelperCountsTheTaskItHeldInItsOwnGroup() throws InterruptedException {
        for (int round = 0; round < 20; round++) {
            Group plain = new Group(1);
            Group split = new Group(1);
            CountDownLatch helperStarted = new CountDownLatch(1);
            CountDownLatch openerReturned = new CountDownLatch(1);
            Kernel twoParts = Kernel.ofParts("two", c -> 2, c -> {
                if (c.part() == 0) {
                    helperStarted.await(20, TimeUnit.SECONDS);
                    openerReturned.countDown();
                } else {
                    helperStarted.countDown();
                    openerReturned.await(20, TimeUnit.SECONDS);
                    long until = System.nanoTime() + 2_000_000; // let the opener count its part down first
                    while (System.nanoTime() < until) {
                        Thread.onSpinWait();
                    }
                }
            });
            TaskNode first = new TaskNode(Kernel.of("plain", c -> { }), new Access[0], new long[0], plain, 0, null);
            TaskNode second = new TaskNode(twoParts, new Access[0], new long[0], split, 0, null);
            assertThat(first.publish()).isTrue();
            assertThat(second.publish()).isTrue();
            device.submit(new TaskNode[] {first, second}, 2);
            split.await();
            plain.await();
            assertThat(plain.done).as("round " + round).hasValue(1);
            assertThat(split.done).as("round " + round).hasValue(1);
        }
    }

    @Test
    void aFailingPartFailsTheTaskOnceAndTheTaskStillCompletes() throws InterruptedException {
        Group group = new Group(1);
        AtomicInteger ran = new AtomicInteger();
        Kernel failing = Kernel.ofParts("failing", c -> 8, c -> {
            ran.incrementAndGet();
            if (c.part() == 3) {
                throw new IllegalStateException("part 3 fails");
            }
        });
        submit(device, new TaskNode(failing, new Access[0], new long[0], group, 0, null));
        group.await();
        assertThat(group.failures).singleElement().satisfies(f -> assertThat(f).hasMessage("part 3 fails"));
        assertThat(ran.get()).isBetween(1, 8);
        assertThat(group.done).hasValue(1);
    }

    @Test
    void partsOfAnEndedGroupAreSkippedAndZeroPartsIsAFailure() throws InterruptedException {
        AtomicInteger ran = new AtomicInteger();
        Group ended = new Group(1);
        Kernel stopsItsGroup = Kernel.ofParts("ends", c -> 1000, c -> {
            ran.incrementAndGet();
            ended.live = false; // the request ends while its parts run: the rest are skipped
        });
        submit(device, new TaskNode(stopsItsGroup, new Access[0], new long[0], ended, 0, null));
        ended.await();
        assertThat(ran.get()).as("parts run after the group ended").isLessThan(1000);
        assertThat(ended.done).hasValue(1);

        Group group = new Group(1);
        Kernel none = Kernel.ofParts("none", c -> 0, c -> ran.incrementAndGet());
        int before = ran.get();
        submit(device, new TaskNode(none, new Access[0], new long[0], group, 0, null));
        group.await();
        assertThat(ran).hasValue(before);
        assertThat(group.failures).singleElement().satisfies(f -> assertThat(f)
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("kernel none returned 0 parts"));
        assertThat(group.done).hasValue(1);

        Group tooMany = new Group(1);
        Kernel huge = Kernel.ofParts("huge", c -> Kernel.MAX_PARTS + 1, c -> ran.incrementAndGet());
        submit(device, new TaskNode(huge, new Access[0], new long[0], tooMany, 0, null));
        tooMany.await();
        assertThat(ran).hasValue(before);
        assertThat(tooMany.failures).singleElement().satisfies(f -> assertThat(f)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("kernel huge returned 65536 parts; a task has 1 to 65535"));
        assertThat(tooMany.done).hasValue(1);
    }

    @Test
    void aTaskOfTheMostPartsRunsEveryPartOnce() throws InterruptedException {
        java.util.concurrent.atomic.AtomicIntegerArray runs = new java.util.concurrent.atomic.AtomicIntegerArray(
                Kernel.MAX_PARTS);
        Group group = new Group(1);
        Kernel most = Kernel.ofParts("most", c -> Kernel.MAX_PARTS, c -> runs.incrementAndGet(c.part()));
        submit(device, new TaskNode(most, new Access[0], new long[0], group, 0, null));
        group.await();
        assertThat(group.failures).isEmpty();
        for (int p = 0; p < Kernel.MAX_PARTS; p++) {
            assertThat(runs.get(p)).as("part " + p).isEqualTo(1);
        }
    }

    @Test
    void manySplitTasksAtOnceEachRunEveryPartOnce() throws InterruptedException {
        // Independent split tasks compete for the one shared slot: the losers run their parts alone.
        int tasks = 200;
        int parts = 16;
        DeviceBuffer counts = buffer((long) tasks * parts * Integer.BYTES);
        Group group = new Group(tasks);
        TaskNode[] batch = new TaskNode[tasks];
        for (int t = 0; t < tasks; t++) {
            Region region = new Region(counts, (long) t * parts * Integer.BYTES, (long) parts * Integer.BYTES);
            batch[t] = new TaskNode(partsKernel(parts, null), new Access[] {Access.readWrite(region)}, new long[0],
                    group, t, null);
            assertThat(batch[t].publish()).isTrue();
        }
        device.submit(batch, tasks);
        group.await();
        for (int i = 0; i < tasks * parts; i++) {
            assertThat(counts.segment().get(ValueLayout.JAVA_INT, (long) i * Integer.BYTES)).as("part " + i).isEqualTo(1);
        }
        assertThat(group.done).hasValue(tasks);
    }
}
