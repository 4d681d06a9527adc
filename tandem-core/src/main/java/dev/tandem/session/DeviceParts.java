package dev.tandem.session;

import dev.tandem.cpu.CpuCores;
import dev.tandem.memory.DeviceMemory;
import dev.tandem.trace.TraceRecorder;

/**
 * What every request of one worker shares: its cores, its memory budget and its trace
 * (null when tracing is off).
 */
public record DeviceParts(CpuCores cores, DeviceMemory memory, TraceRecorder trace) {}
