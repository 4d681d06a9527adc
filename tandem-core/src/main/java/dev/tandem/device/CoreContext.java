package dev.tandem.device;

import dev.tandem.Access;
import dev.tandem.AccessMode;
import dev.tandem.TaskContext;
import java.lang.foreign.MemorySegment;

/**
 * The {@link TaskContext} of one core, rebound to each task it runs. Core thread only.
 * Region segments are sliced lazily, so kernels that do not touch memory cost no slicing.
 */
final class CoreContext implements TaskContext {
    private final int core;
    private TaskNode task;
    private int part;

    CoreContext(int core) {
        this.core = core;
    }

    void bind(TaskNode task) {
        this.task = task;
        this.part = 0;
    }

    void part(int part) {
        this.part = part;
    }

    @Override
    public int part() {
        return part;
    }

    @Override
    public int regionCount() {
        return task.accesses().length;
    }

    @Override
    public MemorySegment region(int i) {
        return segment(task, i);
    }

    /** The memory of {@code task}'s i-th region; read-only for a READ. */
    static MemorySegment segment(TaskNode task, int i) {
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
        return task.group().requestId();
    }

    @Override
    public long step() {
        return task.group().index();
    }

    @Override
    public boolean cancelled() {
        return !task.group().isLive();
    }
}
