package dev.tandem.trace;

import dev.tandem.TraceEvent;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A worker's trace: the per-thread buffers of its cores and request programs, plus one
 * shared buffer, guarded by a lock, for the rare events of other threads (a step done, a
 * token delivered or taken). When tracing is off the worker holds no recorder and every
 * recording site is one null check.
 *
 * <p>Events are retained in memory for {@link #events()} or not; when not, a
 * {@link PerfettoTraceWriter} streams them to a file and the buffers recycle what it has
 * written.
 */
public final class TraceRecorder {
    private static final Logger log = LoggerFactory.getLogger(TraceRecorder.class);

    private final boolean retain;
    private final boolean jfr;
    private final List<TraceBuffer> buffers = new CopyOnWriteArrayList<>();
    private final TraceBuffer shared;

    /**
     * @param retain whether every event is kept for {@link #events()}
     * @param jfr    whether spans and instants are also JFR events (if the JDK has JFR)
     */
    public TraceRecorder(boolean retain, boolean jfr) {
        this.retain = retain;
        this.jfr = jfr && jfrAvailable();
        this.shared = new TraceBuffer(retain, this.jfr, null);
        buffers.add(shared);
    }

    private static boolean jfrAvailable() {
        if (ModuleLayer.boot().findModule("jdk.jfr").isPresent()) {
            return true;
        }
        log.warn("tracing without JFR events: this runtime has no jdk.jfr module");
        return false;
    }

    public boolean retainsEvents() {
        return retain;
    }

    /** A buffer for the calling thread's exclusive use. */
    public TraceBuffer newBuffer() {
        TraceBuffer buffer = new TraceBuffer(retain, jfr, Thread.currentThread());
        buffers.add(buffer);
        return buffer;
    }

    /**
     * Forgets a buffer whose owner has ended and whose events the streaming writer has read,
     * so a long streamed run holds buffers only for the threads still alive. Not when events
     * are retained: snapshots read every buffer.
     */
    void forget(TraceBuffer buffer) {
        if (!retain) {
            buffers.remove(buffer);
        }
    }

    /** Records an event from a thread that owns no buffer. */
    public void recordShared(
            TraceEvent.Kind kind, long start, long end, int thread, long request, long step, long task, String name,
            long count) {
        synchronized (shared) {
            shared.record(kind, start, end, thread, request, step, task, name, count);
        }
    }

    /** Every buffer so far, in creation order; for the streaming writer. */
    List<TraceBuffer> buffers() {
        return buffers;
    }

    /** Everything recorded so far, ordered by start time; empty unless events are retained. */
    public List<TraceEvent> events() {
        List<TraceEvent> out = new ArrayList<>();
        if (!retain) {
            return out;
        }
        for (TraceBuffer buffer : buffers) {
            buffer.readInto(out);
        }
        out.sort(Comparator.comparingLong(TraceEvent::start));
        return out;
    }
}
