package dev.tandem;

/** How a task touches a region. Dependencies are inferred from these modes, never declared. */
public enum AccessMode {
    /** The task reads the region; it waits for the region's last writer (read after write). */
    READ,
    /** The task overwrites the region; it waits for the last writer and the readers since. */
    WRITE,
    /** The task reads and then writes the region; it waits like a write. */
    READ_WRITE;

    /** Whether the mode reads the region's previous contents. */
    public boolean reads() {
        return this != WRITE;
    }

    /** Whether the mode changes the region. */
    public boolean writes() {
        return this != READ;
    }
}
