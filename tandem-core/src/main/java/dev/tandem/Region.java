package dev.tandem;

import java.util.Objects;

/**
 * A byte range of one buffer: the unit of dependency tracking.
 *
 * <p>A region is a plain value; it is checked against its buffer's bounds when a task that
 * uses it is submitted, so that the error can name the task, its step and its kernel.
 *
 * @param buffer the buffer the range belongs to
 * @param offset first byte of the range
 * @param length number of bytes
 */
public record Region(Buffer buffer, long offset, long length) {
    public Region {
        Objects.requireNonNull(buffer, "buffer");
    }

    /** The byte just past the range. */
    public long end() {
        return offset + length;
    }

    @Override
    public String toString() {
        return buffer.name() + "[" + offset + ", " + (offset + length) + ")";
    }
}
