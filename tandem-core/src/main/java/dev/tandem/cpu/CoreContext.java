package dev.tandem.cpu;

import dev.tandem.Access;
import dev.tandem.AccessMode;
import dev.tandem.TaskContext;
import dev.tandem.graph.TaskNode;
import dev.tandem.memory.DeviceBuffer;
import java.lang.foreign.MemorySegment;

/**
 * The {@link TaskContext} of one core, rebound to each task it runs. Core thread only.
 * Region segments are sliced lazily, so kernels that do not touch memory cost no slicing.
 */
public final class CoreContext implements TaskContext {
    private final int core;
    private TaskNode task;

    CoreContext(int core) {
        this.core = core;
    }

    void bind(TaskNode task) {
        this.task = task;
    }

    /** The task being run; for the runtime's built-in kernels. */
    public TaskNode task() {
        return task;
    }

    @Override
    public int regionCount() {
        return task.accesses().length;
    }

    @Override
    public MemorySegment region(int i) {
        Access access = task.accesses()[i];
        DeviceBuffer buffer = (DeviceBuffer) access.region().buffer();
        MemorySegment base = access.mode() == AccessMode.READ ? buffer.readOnlySegment() : buffer.segment();
        return base.asSlice(access.region().offset(), access.region().length());
    }

    @Override
    public int scalarCount() {
        return task.scalars().length;
    }

    @Override
    public long scalar(int i) {
        return task.scalars()[i];
    }

    @Override
    public int core() {
        return core;
    }

    @Override
    public long requestId() {
        return task.step().owner().requestId();
    }

    @Override
    public long step() {
        return task.step().index();
    }

    @Override
    public boolean cancelled() {
        return !task.step().owner().isRunning();
    }
}
