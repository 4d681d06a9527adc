package dev.tandem.trace;

import dev.tandem.TraceEvent;

/** Receives recorded events column by column, so reading a buffer allocates nothing per event. */
@FunctionalInterface
interface TraceSink {
    /** One event; the parameters are those of {@link TraceEvent}. */
    void event(TraceEvent.Kind kind, long start, long end, int thread, long request, long step, long task, String name,
            long count);
}
