package dev.tandem.session;

import dev.tandem.device.Device;
import dev.tandem.trace.TraceRecorder;
import java.util.concurrent.atomic.LongAdder;

/**
 * What every request of one worker shares: its device (execution and the memory budget), its
 * trace (null when tracing is off), the registry of the virtual threads it runs user code on,
 * and the sum of its programs' step-build times ({@code buildNanos}, one add per step). Sessions
 * and requests reach the device through the {@link Device} interface only.
 */
record DeviceParts(Device device, TraceRecorder trace, RuntimeThreads threads, LongAdder buildNanos) {

    /** Whether the calling thread belongs to the worker: a device thread or one of its virtual threads. */
    public boolean isOwnThread() {
        return threads.isRuntimeThread() || device.isDeviceThread();
    }
}
