package dev.tandem.trace;

import dev.tandem.TraceEvent;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A worker's trace: the per-thread buffers of its cores and request programs, plus one
 * shared buffer, guarded by a lock, for the rare events of other threads (a caller taking a
 * token). When tracing is off the worker holds no recorder and every recording site is one
 * null check.
 */
public final class TraceRecorder {
    private final List<TraceBuffer> buffers = new CopyOnWriteArrayList<>();
    private final TraceBuffer shared = newBuffer();

    /** A buffer for one thread's exclusive use. */
    public TraceBuffer newBuffer() {
        TraceBuffer buffer = new TraceBuffer();
        buffers.add(buffer);
        return buffer;
    }

    /** Records an event from a thread that owns no buffer. */
    public void recordShared(
            TraceEvent.Kind kind, long start, long end, int thread, long request, long step, long task, String name,
            long count) {
        synchronized (shared) {
            shared.record(kind, start, end, thread, request, step, task, name, count);
        }
    }

    /** Everything recorded so far, ordered by start time. */
    public List<TraceEvent> events() {
        List<TraceEvent> out = new ArrayList<>();
        for (TraceBuffer buffer : buffers) {
            if (buffer == shared) {
                synchronized (shared) {
                    buffer.readInto(out);
                }
            } else {
                buffer.readInto(out);
            }
        }
        out.sort(Comparator.comparingLong(TraceEvent::start));
        return out;
    }
}
