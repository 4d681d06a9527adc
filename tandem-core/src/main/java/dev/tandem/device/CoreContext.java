package dev.tandem.device;

import dev.tandem.Access;
import dev.tandem.AccessMode;
import dev.tandem.TaskContext;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * The {@link TaskContext} of one core, rebound to each task it runs. Core thread only.
 * Region segments are sliced lazily, so kernels that do not touch memory cost no slicing, and
 * once per task and core: the parts of a split task that a core runs share its slices (a part
 * asks for its regions again; slicing per part was 79% of the bytes a batch-1 f32 decode
 * allocated, about 560 KB a token on the large shape).
 */
final class CoreContext implements TaskContext {
    private final int core;
    private TaskNode task;
    private int part;
    private MemorySegment[] slices = new MemorySegment[8];
    /** Slices {@code [0, sliced)} may be set; every one past it is null. */
    private int sliced;

    CoreContext(int core) {
        this.core = core;
    }

    void bind(TaskNode task) {
        this.task = task;
        this.part = 0;
        if (sliced > 0) {
            Arrays.fill(slices, 0, sliced, null);
            sliced = 0;
        }
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
        int regions = task.accesses().length;
        if (i < 0 || i >= regions) {
            return segment(task, i); // the same error as ever for a region the task does not have
        }
        if (i >= slices.length) {
            slices = Arrays.copyOf(slices, Math.max(regions, 2 * slices.length));
        }
        MemorySegment slice = slices[i];
        if (slice == null) {
            slice = segment(task, i);
            slices[i] = slice;
            sliced = Math.max(sliced, i + 1);
        }
        return slice;
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
