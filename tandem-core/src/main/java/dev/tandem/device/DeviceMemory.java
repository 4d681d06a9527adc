package dev.tandem.device;

import dev.tandem.DeviceOutOfMemoryException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The device's byte budget. Every allocation of device memory reserves its bytes here first
 * and releases them when its scope ends. Thread-safe; lock-free.
 */
public final class DeviceMemory {
    private final long budget;
    private final AtomicLong inUse = new AtomicLong();

    public DeviceMemory(long budget) {
        if (budget <= 0) {
            throw new IllegalArgumentException("memory budget must be > 0 bytes, was " + budget);
        }
        this.budget = budget;
    }

    public long budget() {
        return budget;
    }

    public long inUse() {
        return inUse.get();
    }

    /**
     * Reserves {@code bytes} or fails without reserving anything.
     *
     * @param who names the allocation for the error message
     */
    public void reserve(long bytes, String who) {
        while (true) {
            long used = inUse.get();
            long next = used + bytes;
            if (next > budget || next < 0) {
                throw new DeviceOutOfMemoryException(who + ": allocating " + bytes + " bytes would exceed the device budget ("
                        + used + " of " + budget + " bytes in use)");
            }
            if (inUse.compareAndSet(used, next)) {
                return;
            }
        }
    }

    /** Reserves {@code bytes} if they fit in the budget now; false (and nothing reserved) if not. */
    public boolean tryReserve(long bytes) {
        while (true) {
            long used = inUse.get();
            long next = used + bytes;
            if (next > budget || next < 0) {
                return false;
            }
            if (inUse.compareAndSet(used, next)) {
                return true;
            }
        }
    }

    public void release(long bytes) {
        long after = inUse.addAndGet(-bytes);
        if (after < 0) {
            throw new IllegalStateException("device memory released more than it reserved: " + after);
        }
    }
}
