package dev.tandem;

import java.util.Objects;

/**
 * One region accessed by one task, with its mode. Build them with the static factories:
 * {@code o.submit(kernel, read(x), write(y))}.
 *
 * @param region the bytes touched
 * @param mode   how they are touched
 */
public record Access(Region region, AccessMode mode) {
    public Access {
        Objects.requireNonNull(region, "region");
        Objects.requireNonNull(mode, "mode");
    }

    public static Access read(Region region) {
        return new Access(region, AccessMode.READ);
    }

    public static Access write(Region region) {
        return new Access(region, AccessMode.WRITE);
    }

    public static Access readWrite(Region region) {
        return new Access(region, AccessMode.READ_WRITE);
    }

    /** Reads the whole buffer. */
    public static Access read(Buffer buffer) {
        return read(buffer.region());
    }

    /** Writes the whole buffer. */
    public static Access write(Buffer buffer) {
        return write(buffer.region());
    }

    /** Reads and writes the whole buffer. */
    public static Access readWrite(Buffer buffer) {
        return readWrite(buffer.region());
    }

    @Override
    public String toString() {
        return mode + " " + region;
    }
}
