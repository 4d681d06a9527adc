package dev.tandem.trace;

/**
 * What the trace file writer samples from the device on each drain, beyond the recorded
 * events. Called from the writer's thread only; every method must be cheap and lock-free.
 */
public interface DeviceProbe {

    int coreCount();

    /**
     * Whether core {@code index} is parked idle. A core that reports true has recorded every
     * task it ran, and any task it starts later starts after this call: the writer uses that
     * to know how far the busy-cores counter is complete.
     */
    boolean coreParked(int index);

    /** Tasks waiting in the ready queue. */
    long readyTasks();

    /** Bytes of device memory in use. */
    long bytesInUse();
}
