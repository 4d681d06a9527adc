package dev.tandem;

import java.lang.foreign.MemorySegment;

/**
 * One allocation of device memory, owned by a scope: the worker (shared weights, frozen
 * before requests read them), a request (freed when the request ends) or a step (reused by
 * later steps once its step is done).
 *
 * <p>Only worker buffers expose their memory to the host, and only until they are frozen:
 * request and step buffers belong to the device and are read and written by tasks alone.
 */
public interface Buffer {

    /** Where a buffer lives and how long. */
    enum Scope {
        WORKER,
        REQUEST,
        STEP
    }

    /** A name for messages and traces, e.g. {@code "r7/b3"}. */
    String name();

    /** Size in bytes. */
    long byteSize();

    Scope scope();

    /** The whole buffer as one region. */
    default Region region() {
        return new Region(this, 0, byteSize());
    }

    /** A byte range of this buffer; bounds are checked when a task using it is submitted. */
    default Region region(long offset, long length) {
        return new Region(this, offset, length);
    }

    /**
     * The memory of a worker buffer that is not frozen yet, for the host to fill.
     *
     * @throws IllegalStateException for a frozen worker buffer or a request or step buffer
     */
    MemorySegment hostSegment();

    /**
     * Makes a worker buffer read-only and shareable by every request. Idempotent.
     *
     * @throws IllegalStateException for a request or step buffer
     */
    Buffer freeze();

    boolean isFrozen();
}
