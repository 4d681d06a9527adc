package dev.tandem.session;

import dev.tandem.cpu.CpuCores;
import dev.tandem.memory.DeviceMemory;
import dev.tandem.trace.TraceRecorder;

/**
 * What every request of one worker shares: its cores, its memory budget, its trace (null
 * when tracing is off) and the registry of the virtual threads it runs user code on.
 */
public record DeviceParts(CpuCores cores, DeviceMemory memory, TraceRecorder trace, RuntimeThreads threads) {

    /** Whether the calling thread belongs to the worker: a core or one of its virtual threads. */
    public boolean isOwnThread() {
        return threads.isRuntimeThread() || cores.isCoreThread();
    }
}
