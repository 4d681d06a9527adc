package dev.tandem.session;

import dev.tandem.device.Device;
import dev.tandem.trace.TraceRecorder;

/**
 * What every request of one worker shares: its device (execution and the memory budget), its
 * trace (null when tracing is off) and the registry of the virtual threads it runs user code
 * on. Sessions and requests reach the device through the {@link Device} interface only.
 */
record DeviceParts(Device device, TraceRecorder trace, RuntimeThreads threads) {

    /** Whether the calling thread belongs to the worker: a device thread or one of its virtual threads. */
    public boolean isOwnThread() {
        return threads.isRuntimeThread() || device.isDeviceThread();
    }
}
