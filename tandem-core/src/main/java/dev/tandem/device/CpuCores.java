package dev.tandem.device;

import dev.tandem.CpuDeviceConfig;
import dev.tandem.Kernel;
import dev.tandem.SchedulingPolicy;
import dev.tandem.TraceEvent;
import dev.tandem.trace.TraceBuffer;
import dev.tandem.trace.TraceRecorder;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/**
 * The CPU device ({@link Device#cpu}): platform threads ("cores") that run ready tasks of
 * every request, over host memory with a budget.
 *
 * <p>Implementation Overview. Ready tasks wait in one {@link ReadyQueue} whose lanes the
 * scheduling policy chooses ({@link TaskGroup#lane()}). A core takes a task, runs it by its
 * {@link TaskKind} (or skips it if its request has ended), then completes it: it releases
 * its successors ({@link TaskNode#finish}), runs one that became ready itself and queues the
 * rest, in a loop — so chains stay on one core and never grow the stack. A kernel exception is
 * handed to the task's group; the core lives on.
 *
 * <p>Counting: a core counts the tasks it finished in one group (a step) locally and reports
 * them with one {@link TaskGroup#tasksDone(int)}: before it runs a task of another group,
 * when it finds the queue empty (so before it spins, parks or stops) and every
 * {@link #HOLD_MAX} tasks. So the step's shared counter takes one atomic update per run of a
 * core in a step rather than one per task, a step is reported done no later than the core's
 * next look at the queue, and a host waiting for room is woken within {@code HOLD_MAX}
 * tasks (or one kernel) of the crossing.
 *
 * <p>Idling: a core that finds nothing spins for {@code spinNanos}, then parks. The
 * handshake between a core going idle and a thread queueing work must not lose a wake-up:
 * <ul>
 *   <li>idle core: {@code idleCount++}, then {@code idle[i] = true}, then re-check the queue,
 *       then park while {@code idle[i]};
 *   <li>waker: push, then if {@code idleCount > 0}, CAS some {@code idle[i]} true→false,
 *       {@code idleCount--} and unpark that core.
 * </ul>
 * All four are sequentially consistent (volatile or atomic). If the waker reads
 * {@code idleCount == 0} or finds no idle flag set, the core's increment or flag store comes
 * after that read, so the core's re-check comes after the push and sees the task. Whoever
 * turns a flag from true to false (the waker, or the core itself on finding work) owns the
 * matching {@code idleCount--}.
 */
final class CpuCores implements Device {
    /** Finished tasks of one group a core counts before it reports them (see {@link Device}). */
    static final int HOLD_MAX = 64;

    /** How long an idle core spins before it starts yielding between polls. */
    private static final long PURE_SPIN_NANOS = 2_000;

    private final DeviceMemory memory;
    private final ReadyQueue queue;
    private final Core[] cores;
    private final AtomicInteger idleCount = new AtomicInteger();
    private final long spinNanos;
    private final HugePageMemory hugePages = new HugePageMemory();
    /** Request memory kept from ended requests for the next ones. */
    private final RecycledMemory recycled;
    private final TraceRecorder trace;
    private final LongAdder readyCount; // tasks queued and not yet taken; only when tracing
    private volatile boolean shutdown;

    /**
     * A task split into parts that has parts left to claim, for idle cores to help with; null
     * when there is none. One slot: a core that opens a split task while the slot is taken runs
     * all of its parts itself (other requests' tasks keep the other cores busy then).
     */
    private volatile TaskNode shared;

    /** What {@link Core#awaitWork} returns when the work it found is {@link #shared}'s parts. */
    private static final TaskNode HELP = TaskNode.readback(null, null, -1);
    private final long startedAt = System.nanoTime();

    /** The CPU index (into the allowed set) the next pinned device starts at. */
    private static final AtomicInteger NEXT_CPU = new AtomicInteger();

    CpuCores(CpuDeviceConfig config, TraceRecorder trace, String name) {
        this(config.cores(), config.spinNanos(), config.memoryBudget(), config.pinCores(), trace, name);
    }

    CpuCores(int coreCount, long spinNanos, long memoryBudget, boolean pin, TraceRecorder trace, String name) {
        if (coreCount < 1) {
            throw new IllegalArgumentException("a CPU device needs at least one core, was " + coreCount);
        }
        CardMarks.adviseOnce();
        this.memory = new DeviceMemory(memoryBudget);
        this.recycled = new RecycledMemory(memoryBudget);
        this.queue = new ReadyQueue(SchedulingPolicy.LANES);
        this.spinNanos = spinNanos;
        this.trace = trace;
        this.readyCount = trace != null ? new LongAdder() : null;
        this.cores = new Core[coreCount];
        int[] cpus = pin ? Affinity.allowed() : new int[0];
        int first = cpus.length >= coreCount ? Math.floorMod(NEXT_CPU.getAndAdd(coreCount), cpus.length) : 0;
        for (int i = 0; i < coreCount; i++) {
            cores[i] = new Core(i);
            cores[i].cpu = cpus.length >= coreCount ? cpus[(first + i) % cpus.length] : -1;
        }
        for (Core core : cores) {
            core.thread = Thread.ofPlatform()
                    .name(name + "-core-" + core.index)
                    .daemon(true)
                    .unstarted(core);
        }
        for (Core core : cores) {
            core.thread.start();
        }
    }

    @Override
    public int units() {
        return cores.length;
    }

    @Override
    public DeviceMemory memory() {
        return memory;
    }

    @Override
    public MemorySegment allocate(Arena scope, long bytes, long alignment) {
        return recycled.allocate(scope, bytes, alignment).orElseGet(() -> fresh(scope, bytes, alignment));
    }

    private static MemorySegment fresh(Arena scope, long bytes, long alignment) {
        return scope.allocate(Math.max(bytes, 1), alignment).asSlice(0, bytes);
    }

    @Override
    public MemorySegment allocateLongLived(Arena scope, long bytes, long alignment) {
        return hugePages.allocate(scope, bytes, alignment).orElseGet(() -> fresh(scope, bytes, alignment));
    }

    /** Whether the calling thread is one of these cores. */
    @Override
    public boolean isDeviceThread() {
        Thread current = Thread.currentThread();
        for (Core core : cores) {
            if (core.thread == current) {
                return true;
            }
        }
        return false;
    }

    /**
     * Queues tasks that became ready and wakes one idle core. Any thread. A woken core that
     * finds more queued work wakes the next idle core itself, so a batch costs its publisher
     * at most one unpark however many cores it ends up occupying.
     */
    @Override
    public void submit(TaskNode[] tasks, int count) {
        // A run of tasks of one group (a publication batch is one step's) takes one lane
        // decision and one queue CAS.
        int i = 0;
        while (i < count) {
            TaskGroup group = tasks[i].group();
            int lane = group.lane();
            int end = i;
            do {
                tasks[end++].lane = lane;
            } while (end < count && tasks[end].group() == group);
            if (readyCount != null) {
                readyCount.add(end - i); // before the push, so a core's decrement never comes first
            }
            queue.pushAll(tasks, i, end, lane);
            i = end;
        }
        if (count > 0) {
            wakeOne();
        }
    }

    private void enqueue(TaskNode task) {
        task.lane = task.group().lane();
        if (readyCount != null) {
            readyCount.increment(); // before the push, so a core's decrement never comes first
        }
        queue.push(task);
    }

    /** Offers an opened split task's parts to the other cores, and wakes one if any is idle. */
    private void share(TaskNode task) {
        if (cores.length > 1 && SHARED.compareAndSet(this, null, task)) {
            wakeOne();
        }
    }

    private void wakeOne() {
        if (idleCount.get() == 0) {
            return;
        }
        for (Core core : cores) {
            if (core.idle && Core.IDLE.compareAndSet(core, true, false)) {
                idleCount.decrementAndGet();
                LockSupport.unpark(core.thread);
                return;
            }
        }
    }

    /**
     * Whether core {@code index} is idle (parked, or about to park). Once a core reports true,
     * it has recorded every task it ran and starts its next task only after this call: it must
     * clear its flag (or have it cleared by a waker) first.
     */
    @Override
    public boolean isIdle(int index) {
        return cores[index].idle;
    }

    /**
     * The CPU each core pinned itself to, or -1 where it is not pinned (not asked, not Linux,
     * fewer CPUs than cores, refused, or the core has not started yet).
     */
    int[] pinnedCpus() {
        int[] result = new int[cores.length];
        for (int i = 0; i < cores.length; i++) {
            result[i] = cores[i].pinned ? cores[i].cpu : -1;
        }
        return result;
    }

    /** Tasks waiting in the ready queue; counted only when tracing (else 0). */
    @Override
    public long queuedTasks() {
        return readyCount == null ? 0 : Math.max(0, readyCount.sum());
    }

    /** Fraction of core time spent running tasks since the cores started. */
    @Override
    public double busyFraction() {
        long elapsed = System.nanoTime() - startedAt;
        return elapsed <= 0 ? 0 : Math.min(1.0, (double) busyNanos() / ((double) elapsed * cores.length));
    }

    /** Busy time summed over cores since start, in nanoseconds (an estimate while running). */
    @Override
    public long busyNanos() {
        long sum = 0;
        for (Core core : cores) {
            sum += core.busyNanos;
        }
        return sum;
    }

    /** Stops the cores once they are idle; queued tasks are run first. Returns without waiting. */
    @Override
    public void close() {
        recycled.close();
        shutdown = true;
        for (Core core : cores) {
            LockSupport.unpark(core.thread);
        }
    }

    /** Waits for every core thread to exit. */
    @Override
    public void join() throws InterruptedException {
        for (Core core : cores) {
            if (core.thread != Thread.currentThread()) {
                core.thread.join();
            }
        }
    }

    private final class Core implements Runnable, TaskNode.ReadySink {
        final int index;
        final CoreContext context;
        Thread thread;
        volatile boolean idle;
        volatile long busyNanos;
        /** The CPU this core pins itself to, or -1; and whether that worked (set by the core thread). */
        int cpu = -1;
        volatile boolean pinned;
        TraceBuffer traceBuffer;
        /** The group of the tasks finished and not yet counted, and how many (core thread only). */
        private TaskGroup heldGroup;
        private int held;
        /** Parts the last {@link #runParts} ran on this core. */
        private int partsRun;

        Core(int index) {
            this.index = index;
            this.context = new CoreContext(index);
        }

        @Override
        public void run() {
            if (cpu >= 0) {
                pinned = Affinity.pin(cpu);
            }
            if (trace != null) {
                traceBuffer = trace.newBuffer();
            }
            while (true) {
                TaskNode split = shared;
                if (split != null) {
                    help(split); // a phase's split task first: everything after it waits for it
                    continue;
                }
                TaskNode task = queue.poll();
                if (task == null) {
                    flushDone(); // nothing to run: report what is held before spinning or parking
                    task = awaitWork();
                    if (task == null) {
                        return;
                    }
                    if (task == HELP) {
                        continue;
                    }
                }
                if (readyCount != null) {
                    readyCount.decrement(); // the first task of a run comes from the queue; the rest do not
                }
                if (idleCount.get() > 0 && !queue.isEmpty()) {
                    wakeOne(); // pass the wake-up on: there is more than this core can take
                }
                long begin = System.nanoTime();
                while (task != null) {
                    task = execute(task);
                }
                busyNanos += System.nanoTime() - begin;
            }
        }

        /** Runs one task and returns the successor to run next, if any. */
        private TaskNode execute(TaskNode task) {
            TaskGroup group = task.group();
            if (group != heldGroup) {
                flushDone(); // before running another group's task, which may take long
            }
            long begin = traceBuffer != null ? traceBuffer.spanStart(TraceEvent.Kind.TASK) : 0;
            boolean skipped = !group.isLive();
            if (!skipped) {
                try {
                    switch (task.kind()) {
                        case KERNEL -> {
                            context.bind(task);
                            Kernel kernel = task.kernel();
                            int parts = kernel.parts(context);
                            if (parts > 1 && parts <= Kernel.MAX_PARTS) {
                                task.openParts(parts, cores.length);
                                share(task);
                                if (!runParts(task, true)) {
                                    recordTask(task, begin, false);
                                    return null; // another core returns the last part and completes the task
                                }
                            } else if (parts == 1) {
                                kernel.run(context);
                            } else {
                                throw new IllegalStateException("kernel " + kernel.name() + " returned " + parts
                                        + " parts; a task has 1 to " + Kernel.MAX_PARTS);
                            }
                        }
                        case UPLOAD -> {
                            byte[] bytes = task.uploadBytes();
                            MemorySegment.copy(MemorySegment.ofArray(bytes), 0, CoreContext.segment(task, 0), 0,
                                    bytes.length);
                        }
                        case READBACK -> group.tokenRead(CoreContext.segment(task, 0).toArray(ValueLayout.JAVA_BYTE));
                    }
                } catch (Throwable failure) {
                    group.taskFailed(task, failure);
                }
            }
            recordTask(task, begin, skipped);
            TaskNode next = task.finish(this);
            countDone(group);
            return next;
        }

        private void recordTask(TaskNode task, long begin, boolean skipped) {
            if (traceBuffer != null) {
                TaskGroup group = task.group();
                traceBuffer.record(
                        TraceEvent.Kind.TASK,
                        begin,
                        System.nanoTime(),
                        index,
                        group.requestId(),
                        group.index(),
                        task.index(),
                        task.name(),
                        skipped ? 1 : 0);
            }
        }

        /**
         * Runs parts of an opened split task until every part is claimed, from the front if this
         * core opened it and from the back if it helps; true if this core
         * returned the task's last part (and must complete it). A part that throws fails the
         * request and is counted like any other; parts of an ended request are skipped.
         */
        private boolean runParts(TaskNode task, boolean opener) {
            Kernel kernel = task.kernel();
            TaskGroup group = task.group();
            boolean last = false;
            int part;
            partsRun = 0;
            while ((part = task.claimPart(opener)) >= 0) {
                partsRun++;
                if (group.isLive()) {
                    context.part(part);
                    try {
                        kernel.run(context);
                    } catch (Throwable failure) {
                        group.taskFailed(task, failure);
                    }
                }
                last = task.partDone();
            }
            SHARED.compareAndSet(CpuCores.this, task, null); // nothing left to claim: not worth a look
            return last;
        }

        /** Runs parts of the shared split task, and completes it if this core returns its last part. */
        private void help(TaskNode task) {
            TaskGroup group = task.group();
            if (group != heldGroup) {
                flushDone();
            }
            long begin = System.nanoTime();
            long span = traceBuffer != null ? traceBuffer.spanStart(TraceEvent.Kind.TASK) : 0;
            context.bind(task);
            boolean last = runParts(task, false);
            if (partsRun > 0) {
                recordTask(task, span, false); // one span per core that ran parts of the task
            }
            if (last) {
                TaskNode next = task.finish(this);
                countDone(group);
                while (next != null) {
                    next = execute(next);
                }
            }
            busyNanos += System.nanoTime() - begin;
        }

        /** Counts a finished task in its group, in batches (see {@link Device}, "Batched counting"). */
        private void countDone(TaskGroup group) {
            heldGroup = group; // the held count, if any, is of this group: execute flushed another's
            if (++held == HOLD_MAX) {
                flushDone();
            }
        }

        /** Reports the held count to its group. Before another group's task, before idling, at the bound. */
        private void flushDone() {
            int n = held;
            if (n > 0) {
                TaskGroup group = heldGroup;
                held = 0;
                heldGroup = null;
                group.tasksDone(n);
            }
        }

        @Override
        public void ready(TaskNode task) {
            enqueue(task);
            wakeOne();
        }


        /** Spins, then parks until work arrives; null at shutdown. */
        private TaskNode awaitWork() {
            // Spin briefly, then keep polling but yield the processor between polls: when
            // cores and host threads outnumber processors, a spinning core would otherwise
            // take the time the host needs to build the work it is waiting for.
            long now = System.nanoTime();
            long spinUntil = now + Math.min(spinNanos, PURE_SPIN_NANOS);
            long deadline = now + spinNanos;
            do {
                if (shared != null) {
                    return HELP;
                }
                TaskNode task = queue.poll();
                if (task != null) {
                    return task;
                }
                if (shutdown) {
                    return null;
                }
                now = System.nanoTime();
                if (now < spinUntil) {
                    Thread.onSpinWait();
                } else {
                    Thread.yield();
                }
            } while (now < deadline);

            while (true) {
                idleCount.incrementAndGet();
                idle = true;
                TaskNode task = queue.poll();
                if (task != null) {
                    cancelIdle();
                    return task;
                }
                if (shared != null) { // shared before this core counted itself idle: the sharer may not have seen it
                    cancelIdle();
                    return HELP;
                }
                while (idle && !shutdown) {
                    LockSupport.park(this);
                }
                if (shutdown) {
                    cancelIdle();
                    task = queue.poll();
                    return task; // drain what is left, then exit on the next empty poll
                }
                task = queue.poll();
                if (task != null) {
                    return task;
                }
                if (shared != null) {
                    return HELP;
                }
                // Woken for a task another core took first: go idle again.
            }
        }

        private void cancelIdle() {
            if (IDLE.compareAndSet(this, true, false)) {
                idleCount.decrementAndGet();
            }
        }

        static final java.lang.invoke.VarHandle IDLE;

        static {
            try {
                IDLE = java.lang.invoke.MethodHandles.lookup().findVarHandle(Core.class, "idle", boolean.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }
    }

    private static final java.lang.invoke.VarHandle SHARED;

    static {
        try {
            SHARED = java.lang.invoke.MethodHandles.lookup().findVarHandle(CpuCores.class, "shared", TaskNode.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
}
