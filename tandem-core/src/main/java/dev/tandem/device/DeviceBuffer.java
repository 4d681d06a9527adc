package dev.tandem.device;

import dev.tandem.Buffer;
import java.lang.foreign.MemorySegment;

/**
 * The runtime's buffer: a device memory segment with its scope, owner and freeze state.
 *
 * <p>Who may touch which field: {@code segment}, {@code scope}, {@code owner} and
 * {@code stepOwner} are final. {@code frozen} is set once by the host before any request may
 * read the buffer. {@code freed} is set once when the owning scope ends. {@code
 * dependencyTrack} belongs to the owning request's TensorMap and is touched by that
 * request's host thread only.
 */
public final class DeviceBuffer implements Buffer {
    private final String name;
    private final MemorySegment segment;
    private final Scope scope;
    private final Object owner;
    private final Object stepOwner;
    private volatile MemorySegment readOnly;
    private volatile boolean frozen;
    private volatile boolean freed;

    /** The owning request's dependency record for this buffer; host thread only. */
    public Object dependencyTrack;

    public DeviceBuffer(String name, MemorySegment segment, Scope scope, Object owner, Object stepOwner) {
        this.name = name;
        this.segment = segment;
        this.scope = scope;
        this.owner = owner;
        this.stepOwner = stepOwner;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public long byteSize() {
        return segment.byteSize();
    }

    @Override
    public Scope scope() {
        return scope;
    }

    /** The request that owns a request or step buffer; null for worker buffers. */
    public Object owner() {
        return owner;
    }

    /** The step a step buffer belongs to; null otherwise. */
    public Object stepOwner() {
        return stepOwner;
    }

    /** The device memory, writable; for the runtime's tasks only. */
    public MemorySegment segment() {
        return segment;
    }

    /** The device memory as a read-only segment. */
    public MemorySegment readOnlySegment() {
        MemorySegment ro = readOnly;
        if (ro == null) {
            ro = segment.asReadOnly();
            readOnly = ro;
        }
        return ro;
    }

    @Override
    public MemorySegment hostSegment() {
        if (scope != Scope.WORKER) {
            throw new IllegalStateException(name + " is " + scope + "-scoped device memory: only tasks touch it");
        }
        if (freed) {
            throw new IllegalStateException(name + " has been freed");
        }
        if (frozen) {
            throw new IllegalStateException(name + " is frozen: it is read-only and shared by requests");
        }
        return segment;
    }

    @Override
    public Buffer freeze() {
        if (scope != Scope.WORKER) {
            throw new IllegalStateException(name + " is " + scope + "-scoped: only worker buffers can be frozen");
        }
        frozen = true;
        return this;
    }

    @Override
    public boolean isFrozen() {
        return frozen;
    }

    public boolean isFreed() {
        return freed;
    }

    public void markFreed() {
        freed = true;
    }

    @Override
    public String toString() {
        return name + " (" + scope + ", " + byteSize() + " bytes" + (frozen ? ", frozen" : "") + (freed ? ", freed" : "")
                + ")";
    }
}
