package dev.tandem.device;

import dev.tandem.CpuDeviceConfig;
import dev.tandem.trace.TraceRecorder;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * What a device must provide to the runtime: memory with a budget, running ready tasks,
 * completion back into the readiness protocol, and idling and waking. The runtime above it
 * (dependency inference in {@code graph}, requests and sessions in {@code session}, the
 * {@code Worker}) talks to a device through this interface only; {@link #cpu} makes the first
 * implementation, the CPU device. A GPU device and a remote worker are the next ones; this
 * contract is written for them.
 *
 * <h2>What runs where</h2>
 * <ul>
 *   <li><b>Host side (not the device).</b> A request's program thread builds tasks
 *       ({@link TaskNode}), wires their dependencies and publishes them. A task whose
 *       predecessors are all done is handed to {@link #submit}, by the publishing host thread
 *       or by a device thread that completed its last predecessor. The device never sees a task
 *       that is not ready, and never needs the graph.
 *   <li><b>The device.</b> It runs each submitted task exactly once, in any order relative to
 *       other ready tasks (it should take lower {@linkplain TaskNode#lane lanes} first: lane
 *       0 is latency-critical), on its own execution units ({@link #units()}: CPU cores, GPU
 *       streams, a remote worker's slots). What "run" means depends on {@link TaskNode#kind()}:
 *       <ul>
 *         <li>{@link TaskKind#KERNEL}: call the task's {@code Kernel} with a
 *             {@code TaskContext} whose regions are the task's accesses (READ regions
 *             read-only). A GPU device would map the kernel to its own implementation by
 *             name; a remote worker ships the task's description (kernel name, regions,
 *             scalars) to the process that owns the memory.
 *         <li>{@link TaskKind#UPLOAD}: copy the task's host bytes ({@link TaskNode#uploadBytes()})
 *             into its one WRITE region.
 *         <li>{@link TaskKind#READBACK}: copy its one READ region (a step's token) to host
 *             bytes and hand them to {@link TaskGroup#tokenRead(byte[])} <em>before</em>
 *             completing the task.
 *       </ul>
 *       A kernel task whose {@code Kernel.parts} is more than 1 runs once per part, with
 *       {@code TaskContext.part()} saying which; the device may run different parts at once on
 *       different units, and completes the task once, after every part has returned (every
 *       part's writes happen-before its successors). Parts fewer than 1 fail the task.
 *       If {@link TaskGroup#isLive()} is false when a task is taken, the device skips it (runs
 *       nothing) but still completes it. A kernel that throws is reported once through
 *       {@link TaskGroup#taskFailed}; the device itself must survive it.
 *   <li><b>Never on the device</b>: user callbacks other than kernels and the scheduling
 *       policy's {@code lane} (which {@link TaskGroup#lane()} evaluates), request teardown,
 *       file I/O. What a {@link TaskGroup} method does on a device thread is bounded and
 *       non-blocking.
 * </ul>
 *
 * <h2>Completion</h2>
 * After running (or skipping) a task, the device calls {@link TaskNode#complete} exactly once,
 * from any of its threads. Completion guarantees, and a device must preserve:
 * <ul>
 *   <li><b>Visibility</b>: every write the task made to device memory happens-before any
 *       successor starts, and before anyone who sees the task's step done reads the step's
 *       token. The readiness counters are volatile read-modify-writes, so a CPU device gets
 *       this for free; a GPU device must complete a task only once its stream has
 *       finished the task's work (an event or fence, not the launch), and a remote worker
 *       only once the remote side has acknowledged it.
 *   <li><b>Release</b>: {@code complete} releases the task's successors; those that became
 *       ready go to the {@link TaskNode.ReadySink} passed in (the device queues them, and
 *       wakes a unit), except at most one that it returns for the caller to run next — a
 *       device that can, should, so chains stay on one unit. It then counts the task done in
 *       its group (its step), which may end the step: that may run runtime code (delivery of
 *       the token, waking the program), bounded and non-blocking.
 *   <li><b>Batched counting</b> (optional): instead of {@code complete}, a unit may call
 *       {@link TaskNode#finish} and count the tasks it finished in one group with a single
 *       {@link TaskGroup#tasksDone(int) tasksDone(n)}, which spares the group's shared counter
 *       an atomic update per task. It must flush its count before it runs a task of another
 *       group, before it goes idle or stops, and after a bounded number of tasks, so that a
 *       step is reported done at the latest when the unit looks for its next task, and a
 *       host waiting for room in a step is woken within a bounded number of tasks.
 *   <li><b>Exactly once</b>: a task completed twice, or never, corrupts its request's
 *       counters (it would hang or be delivered early). Shutting down does not release the
 *       device from completing what it was given: {@link #close()} drains queued tasks first.
 * </ul>
 *
 * <h2>Idling and waking</h2>
 * A device with nothing to run may idle its units (spin, then park a CPU core; block on a
 * stream event; wait on the network), but {@link #submit} must never lose a wake-up: a task
 * submitted while every unit goes idle is run without another submit. {@link #isIdle(int)}
 * says whether a unit is idle, for the trace; a unit that reports idle has recorded every
 * task it ran.
 *
 * <h2>Threading</h2>
 * {@link #submit} is called by any thread (host threads publishing, device threads releasing
 * successors, concurrently) and must be lock-free or nearly so: it is on the per-task path.
 * The statistics methods are called from any thread and must be cheap. {@link #close()} is
 * idempotent and returns without waiting; {@link #join()} waits.
 *
 * <h2>Memory ownership</h2>
 * {@link #memory()} is the device's byte budget: every buffer's bytes are reserved from it
 * (by the runtime, once per buffer) before {@link #allocate} is called and released after the
 * buffer's scope ends. {@link #allocate} returns memory that this device's tasks can address,
 * owned by the given {@code Arena} (the buffer's scope: the worker, or one request): the
 * runtime closes that arena only once no task that may touch the memory can still run, so a
 * device may keep using a segment until it has completed the last task that names it. For the
 * CPU device, device memory is host memory. A GPU device would return device memory (or a
 * host-visible mirror it keeps coherent), a remote worker a handle whose bytes live on the
 * remote side; host access to a worker buffer ({@code Buffer.hostSegment()}) is then a
 * staging copy the device uploads when the buffer is frozen.
 */
public interface Device extends AutoCloseable {

    /** The CPU device: {@code config.cores()} platform threads named {@code name-core-N}. */
    static Device cpu(CpuDeviceConfig config, TraceRecorder trace, String name) {
        return new CpuCores(config, trace, name);
    }

    /** Execution units (cores, streams, remote slots); at least one. */
    int units();

    /** The device's byte budget, shared by every buffer on it. */
    DeviceMemory memory();

    /**
     * Memory of {@code bytes} (at least one byte is allocated, so a zero-size buffer still has
     * an address) aligned to {@code alignment}, addressable by this device's tasks and freed
     * when {@code scope} closes. The bytes must have been reserved from {@link #memory()}.
     */
    MemorySegment allocate(Arena scope, long bytes, long alignment);

    /**
     * Memory as {@link #allocate} gives it, for a buffer that lives as long as its worker (the
     * weights): the device may place it where reading it whole, step after step, is fastest. The
     * CPU device cuts such buffers from huge-page mappings where it can ({@code HugePageMemory});
     * a GPU device would place them in its own memory anyway. By default, {@link #allocate}.
     */
    default MemorySegment allocateLongLived(Arena scope, long bytes, long alignment) {
        return allocate(scope, bytes, alignment);
    }

    /**
     * Runs {@code tasks[0..count)}, each ready (every predecessor done). Any thread, lock-free;
     * returns without waiting. Wakes an idle unit if there is one.
     */
    void submit(TaskNode[] tasks, int count);

    /** Whether the calling thread is one of this device's threads (they must never block on a request). */
    boolean isDeviceThread();

    /** Whether unit {@code index} is idle (see the class comment). */
    boolean isIdle(int index);

    /** Tasks submitted and not yet taken by a unit; 0 if the device does not count them. */
    long queuedTasks();

    /** Time the units spent running tasks since the device started, summed, in nanoseconds. */
    long busyNanos();

    /** Fraction of unit time spent running tasks since the device started, in [0, 1]. */
    double busyFraction();

    /** Stops the device once it has run every task submitted so far. Idempotent; returns at once. */
    @Override
    void close();

    /** Waits until every thread of the device has exited (not for the calling thread itself). */
    void join() throws InterruptedException;
}
