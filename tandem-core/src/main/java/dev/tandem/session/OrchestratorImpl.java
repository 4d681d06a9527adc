package dev.tandem.session;

import dev.tandem.Access;
import dev.tandem.Buffer;
import dev.tandem.DeviceOutOfMemoryException;
import dev.tandem.InvalidTaskException;
import dev.tandem.Kernel;
import dev.tandem.Orchestrator;
import dev.tandem.Region;
import dev.tandem.RunOptions;
import dev.tandem.TraceEvent;
import dev.tandem.graph.Step;
import dev.tandem.device.TaskKind;
import dev.tandem.device.TaskNode;
import dev.tandem.graph.TensorMap;
import dev.tandem.device.DeviceBuffer;
import dev.tandem.trace.TraceBuffer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The host side of one request: builds its steps task by task, infers their dependencies,
 * publishes them in batches and ends steps.
 *
 * <p>Program thread only (checked). Registration precedes publication everywhere: a task is
 * counted in its step before it is wired, and wired before it is published, so no core can
 * finish it before the runtime knows it exists.
 */
final class OrchestratorImpl implements Orchestrator {
    private static final int STEP_BANK_ALIGNMENT = 64;

    private final RequestRun request;
    private final DeviceParts device;
    private final int publishBatch;
    private final int maxPublishBatch;
    private final int maxTasksInFlight;
    private final int roomLowWater; // at the bound, wait until the step's tasks in flight are down to this
    private final TensorMap tensorMap = new TensorMap();

    // Memory (host-only until the request finishes; freeMemory runs after the program returned).
    private Arena arena;
    private final List<DeviceBuffer> buffers = new ArrayList<>();
    private final List<StepBank> banks = new ArrayList<>();
    private long reservedBytes;
    private final long memoryQuota;

    // Build state.
    private Step openStep;
    private long stepIndex;
    private long taskIndex;
    // Tasks submitted to the open step. Here, not in the Step: a core reads the step's fields for
    // every task it runs, and a counter the host bumps per task on the same cache line made both
    // sides miss on every task.
    private int stepTasks;
    // The open step's stepTasks at which the bound on tasks in flight is next looked at.
    private long nextRoomCheck;
    private long stepBuildStart;
    private TaskNode[] batch = new TaskNode[16];
    private int batchSize;
    /** Tasks the open step's next publication waits for: publishBatch, doubling up to maxPublishBatch. */
    private int publishAt;
    private boolean returned;
    private TraceBuffer trace;

    /** Step-scoped memory reused by later steps once the step that used it last is done. */
    private static final class StepBank {
        final MemorySegment segment;
        Step lastUser;

        StepBank(MemorySegment segment) {
            this.segment = segment;
        }
    }

    /**
     * @param memoryQuota bytes reserved for the request at admission, which its allocations
     *                    must fit in; negative: allocations reserve from the device budget
     */
    OrchestratorImpl(RequestRun request, DeviceParts device, RunOptions options, long memoryQuota) {
        this.request = request;
        this.device = device;
        this.publishBatch = options.publishBatch();
        this.maxPublishBatch = options.maxPublishBatch();
        this.maxTasksInFlight = options.maxTasksInFlight();
        // Wait for a batch's worth of room, not one task's: a step far past the bound then
        // parks once per batch instead of once per submit.
        this.roomLowWater = maxTasksInFlight - Math.max(1, Math.min(publishBatch, maxTasksInFlight / 2));
        this.memoryQuota = memoryQuota;
    }

    @Override
    public long requestId() {
        return request.id();
    }

    @Override
    public long step() {
        return stepIndex;
    }

    // ---- memory ------------------------------------------------------------------------------

    @Override
    public Buffer allocate(long bytes) {
        checkCaller("allocate");
        if (bytes < 0) {
            throw failRequest(new IllegalArgumentException("request " + request.id() + ": allocate of a negative size " + bytes));
        }
        MemorySegment segment = reserveAndAllocate(bytes, "allocate");
        DeviceBuffer buffer = new DeviceBuffer(
                "r" + request.id() + "/b" + buffers.size(), segment, Buffer.Scope.REQUEST, request, null);
        buffers.add(buffer);
        return buffer;
    }

    @Override
    public Buffer allocate(MemoryLayout element, long count) {
        checkCaller("allocate");
        if (element == null) {
            throw failRequest(new NullPointerException("request " + request.id() + ": allocate of a null layout"));
        }
        if (count < 0) {
            throw failRequest(new IllegalArgumentException("request " + request.id() + ", step " + stepIndex
                    + ": allocate of a negative count " + count + " of " + element));
        }
        long bytes;
        try {
            bytes = Math.multiplyExact(element.byteSize(), count);
        } catch (ArithmeticException overflow) {
            throw failRequest(new IllegalArgumentException("request " + request.id() + ", step " + stepIndex
                    + ": allocate of " + count + " × " + element + " (" + element.byteSize()
                    + " bytes each) overflows a long", overflow));
        }
        return allocate(bytes);
    }

    @Override
    public Buffer allocateStep(long bytes) {
        checkCaller("allocateStep");
        if (bytes < 0) {
            throw failRequest(new IllegalArgumentException("request " + request.id() + ": allocateStep of a negative size "
                    + bytes));
        }
        Step step = openStep();
        StepBank chosen = null;
        for (StepBank bank : banks) {
            boolean free = bank.lastUser == null || bank.lastUser.isDone();
            if (free && bank.segment.byteSize() >= bytes
                    && (chosen == null || bank.segment.byteSize() < chosen.segment.byteSize())) {
                chosen = bank;
            }
        }
        if (chosen == null) {
            chosen = new StepBank(reserveAndAllocate(bytes, "allocateStep"));
            banks.add(chosen);
        }
        chosen.lastUser = step;
        return new DeviceBuffer(
                "r" + request.id() + "/s" + step.index() + "b" + banks.indexOf(chosen),
                chosen.segment.asSlice(0, bytes),
                Buffer.Scope.STEP,
                request,
                step);
    }

    /**
     * Reserves and allocates. Running out of memory fails the request, like an invalid task,
     * even if the program catches the exception: one rule for every error the orchestrator
     * reports.
     */
    private MemorySegment reserveAndAllocate(long bytes, String what) {
        String who = "request " + request.id() + ", step " + stepIndex + ", " + what;
        if (memoryQuota >= 0) {
            if (bytes > memoryQuota - reservedBytes) {
                throw failRequest(new DeviceOutOfMemoryException(who + ": allocating " + bytes + " bytes would exceed the"
                        + " request's memory (" + reservedBytes + " of " + memoryQuota
                        + " bytes of memoryPerRequest in use)"));
            }
        } else {
            try {
                device.device().memory().reserve(bytes, who);
            } catch (DeviceOutOfMemoryException outOfMemory) {
                throw failRequest(outOfMemory);
            }
        }
        reservedBytes += bytes;
        if (arena == null) {
            arena = Arena.ofShared();
        }
        return device.device().allocate(arena, bytes, STEP_BANK_ALIGNMENT);
    }

    /** Frees the request's memory. Called once, after every task of the request is done. */
    void freeMemory() {
        for (DeviceBuffer buffer : buffers) {
            buffer.markFreed();
        }
        if (arena != null) {
            arena.close();
        }
        if (memoryQuota < 0) {
            device.device().memory().release(reservedBytes);
        }
    }

    // ---- tasks -------------------------------------------------------------------------------

    @Override
    public void submit(Kernel kernel, long[] scalars, Access... accesses) {
        checkCaller("submit");
        Step step = openStep();
        long index = taskIndex;
        if (kernel == null || scalars == null || accesses == null) {
            throw invalid(step, index, kernel, (kernel == null ? "kernel" : scalars == null ? "scalars" : "accesses")
                    + " is null");
        }
        Access[] copy = accesses.clone();
        for (int i = 0; i < copy.length; i++) {
            validate(step, index, kernel, i, copy[i]);
        }
        enqueue(new TaskNode(kernel, copy, scalars.length == 0 ? NO_SCALARS : scalars.clone(), step, index, null), step);
    }

    @Override
    public void upload(Region target, MemorySegment data) {
        checkCaller("upload");
        Step step = openStep();
        long index = taskIndex;
        if (target == null || data == null) {
            throw invalid(step, index, TaskKind.UPLOAD.taskName(), (target == null ? "target" : "data") + " is null");
        }
        Access access = Access.write(target);
        validate(step, index, TaskKind.UPLOAD.taskName(), 0, access);
        if (data.byteSize() != target.length()) {
            throw invalid(step, index, TaskKind.UPLOAD.taskName(), "data has " + data.byteSize() + " bytes but region "
                    + target + " has " + target.length());
        }
        byte[] bytes = data.toArray(ValueLayout.JAVA_BYTE);
        enqueue(TaskNode.upload(access, bytes, step, index), step);
    }

    @Override
    public void endStep(Region tokenRegion) {
        checkCaller("endStep");
        Step step = openStep();
        long index = taskIndex;
        if (tokenRegion == null) {
            throw invalid(step, index, TaskKind.READBACK.taskName(), "token region is null");
        }
        Access access = Access.read(tokenRegion);
        validate(step, index, TaskKind.READBACK.taskName(), 0, access);
        enqueue(TaskNode.readback(access, step, index), step);
        closeStep(tokenRegion);
        request.awaitGate(stepIndex);
    }

    /** Registers, wires and batches one validated task. */
    private void enqueue(TaskNode task, Step step) {
        taskIndex++;
        stepTasks++;
        for (Access access : task.accesses()) {
            DeviceBuffer buffer = (DeviceBuffer) access.region().buffer();
            if (buffer.scope() != Buffer.Scope.WORKER) {
                tensorMap.access(buffer, access.region().offset(), access.region().length(), access.mode(), task);
            }
        }
        if (batchSize == batch.length) {
            batch = Arrays.copyOf(batch, batch.length * 2);
        }
        batch[batchSize++] = task;
        if (batchSize >= publishAt) {
            publish();
            publishAt = (int) Math.min(maxPublishBatch, 2L * publishAt);
        }
        // Bound on the step's tasks in flight (published and unfinished, plus the batch). A submit
        // adds at most one such task, so after a look that found u of them none is needed for the
        // next maxTasksInFlight - u submits: the step's count, which the cores update, is read
        // once per that many tasks, not on every submit of a step past the bound's size (where
        // its cache line moved from a core's cache to the program's for each task).
        if (stepTasks >= nextRoomCheck) {
            int unfinished = batchSize + step.inFlight();
            if (unfinished >= maxTasksInFlight) {
                publish();
                request.awaitRoom(step, roomLowWater);
                nextRoomCheck = stepTasks + 1L;
            } else {
                nextRoomCheck = stepTasks + (long) (maxTasksInFlight - unfinished);
            }
        }
    }

    /**
     * Makes the batched tasks visible to the device: their guards dropped last task first, so
     * that a task wired only to tasks of its own batch drops its guard with a plain write before
     * any of them can run ({@link TaskNode}); the ready ones handed over in submission order.
     */
    private void publish() {
        int n = batchSize;
        if (n == 0) {
            return;
        }
        TaskNode[] tasks = batch;
        openStep.addTasks(n); // a batch never spans steps: every endStep publishes, before the step closes
        int ready = 0;
        for (int i = n - 1; i >= 0; i--) {
            TaskNode task = tasks[i];
            if (task.publish()) {
                tasks[n - ++ready] = task; // reuse the batch's tail for the ready ones, in submission order
            }
        }
        System.arraycopy(tasks, n - ready, tasks, 0, ready); // the ready ones to the front
        device.device().submit(tasks, ready);
        Arrays.fill(tasks, 0, n, null); // the batch pins no published task
        batchSize = 0;
        if (trace != null) {
            long now = System.nanoTime();
            trace.record(TraceEvent.Kind.PUBLISH, now, now, TraceEvent.HOST, request.id(), stepIndex, -1, null, n);
        }
    }

    private Step openStep() {
        Step step = openStep;
        if (step == null) {
            step = new Step(request, stepIndex, roomLowWater);
            stepTasks = 0;
            nextRoomCheck = maxTasksInFlight;
            publishAt = publishBatch;
            request.stepCreated();
            openStep = step;
            stepBuildStart = trace != null ? trace.spanStart(TraceEvent.Kind.STEP_BUILD) : System.nanoTime();
        }
        return step;
    }

    private void closeStep(Region tokenRegion) {
        Step step = openStep;
        publish();
        long built = System.nanoTime();
        device.buildNanos().add(built - stepBuildStart);
        if (trace != null) {
            trace.record(TraceEvent.Kind.STEP_BUILD, stepBuildStart, built, TraceEvent.HOST, request.id(),
                    step.index(), taskIndex - stepTasks, null, stepTasks); // task: the step's first
        }
        openStep = null;
        stepIndex++;
        step.close(tokenRegion);
    }

    /** The program returned normally: close a trailing step without a token. */
    void programReturned() {
        returned = true;
        if (openStep != null) {
            closeStep(null);
        }
    }

    /** The program ended by an exception: publish what was built so it drains, skipped. */
    void abandon() {
        returned = true;
        if (openStep != null) {
            closeStep(null);
        } else {
            publish();
        }
    }

    /** Checks that the request still runs and that its program thread is calling. */
    private void checkCaller(String what) {
        if (!request.isProgramThread()) {
            throw new IllegalStateException("request " + request.id() + ": " + what
                    + " called from " + Thread.currentThread() + "; an Orchestrator belongs to its program's thread"
                    + (returned ? ", and the program has returned" : ""));
        }
        if (returned) {
            throw new IllegalStateException("request " + request.id() + ": " + what + " after the program returned");
        }
        request.checkRunning();
        if (trace == null && device.trace() != null) {
            trace = device.trace().newBuffer();
        }
    }

    // ---- validation --------------------------------------------------------------------------

    private void validate(Step step, long index, Object kernel, int i, Access access) {
        if (access == null) {
            throw invalid(step, index, kernel, "access " + i + " is null");
        }
        Region region = access.region();
        if (!(region.buffer() instanceof DeviceBuffer buffer)) {
            throw invalid(step, index, kernel, "region " + region + " is not in a buffer of this runtime");
        }
        if (region.offset() < 0 || region.length() < 0) {
            throw invalid(step, index, kernel, "region " + region + " has a negative offset or length");
        }
        if (region.offset() > buffer.byteSize() - region.length()) {
            throw invalid(step, index, kernel, "region " + region + " is out of the bounds of " + buffer.name() + " ("
                    + buffer.byteSize() + " bytes)");
        }
        if (buffer.isFreed()) {
            throw invalid(step, index, kernel, "region " + region + " is in " + buffer.name() + ", which is already freed");
        }
        switch (buffer.scope()) {
            case WORKER -> {
                if (!buffer.isFrozen()) {
                    throw invalid(step, index, kernel, "region " + region + " is in worker buffer " + buffer.name()
                            + ", which is not frozen: freeze worker buffers before requests use them");
                }
                if (access.mode().writes()) {
                    throw invalid(step, index, kernel, access.mode() + " of region " + region
                            + ": worker buffer " + buffer.name() + " is frozen (read-only)");
                }
            }
            case REQUEST, STEP -> {
                if (buffer.owner() != request) {
                    throw invalid(step, index, kernel, "region " + region + " is in a buffer of " + buffer.owner()
                            + ", not of this request");
                }
                if (buffer.scope() == Buffer.Scope.STEP && buffer.stepOwner() != step) {
                    throw invalid(step, index, kernel, "region " + region + " is in a step-scoped buffer of "
                            + buffer.stepOwner() + ", used by step " + step.index());
                }
            }
        }
    }

    private RuntimeException failRequest(RuntimeException failure) {
        request.terminate(dev.tandem.Status.FAILED, failure);
        return failure;
    }

    /**
     * An invalid task fails its request (even if the program catches the exception) and is
     * never registered: nothing of it was counted, wired or published.
     */
    private InvalidTaskException invalid(Step step, long index, Object kernel, String what) {
        String name = kernel instanceof Kernel k ? k.name() : String.valueOf(kernel); // a Kernel, a built-in's name or null
        InvalidTaskException failure = new InvalidTaskException("request " + request.id() + ", step " + step.index()
                + ", task " + index + " (kernel " + name + "): " + what);
        request.terminate(dev.tandem.Status.FAILED, failure);
        return failure;
    }
}
