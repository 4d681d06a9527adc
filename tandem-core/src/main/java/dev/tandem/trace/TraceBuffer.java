package dev.tandem.trace;

import dev.tandem.TraceEvent;
import java.util.List;

/**
 * The events one thread recorded. Single writer (the owning thread), any number of readers.
 *
 * <p>Events are stored column-wise in fixed chunks that are allocated only when the previous
 * one is full, so recording allocates nothing per event. The writer fills an entry, then
 * publishes it by a release store of {@code size}; a reader takes {@code size} with acquire
 * and reads entries below it only. Growing the chunk table copies it and publishes the copy
 * before the size that covers the new chunk.
 */
public final class TraceBuffer {
    private static final int CHUNK_BITS = 12;
    private static final int CHUNK = 1 << CHUNK_BITS;

    private static final class Chunk {
        final int[] kind = new int[CHUNK];
        final int[] thread = new int[CHUNK];
        final long[] start = new long[CHUNK];
        final long[] end = new long[CHUNK];
        final long[] request = new long[CHUNK];
        final long[] step = new long[CHUNK];
        final long[] task = new long[CHUNK];
        final long[] count = new long[CHUNK];
        final String[] name = new String[CHUNK];
    }

    private volatile Chunk[] chunks = {new Chunk()};
    private volatile int size;

    /** Records one event. Owning thread only (or under the caller's own lock). */
    public void record(
            TraceEvent.Kind kind, long start, long end, int thread, long request, long step, long task, String name,
            long count) {
        int i = size;
        int c = i >>> CHUNK_BITS;
        Chunk[] table = chunks;
        if (c == table.length) {
            Chunk[] grown = java.util.Arrays.copyOf(table, table.length + 1);
            grown[c] = new Chunk();
            chunks = grown;
            table = grown;
        }
        Chunk chunk = table[c];
        int j = i & (CHUNK - 1);
        chunk.kind[j] = kind.ordinal();
        chunk.thread[j] = thread;
        chunk.start[j] = start;
        chunk.end[j] = end;
        chunk.request[j] = request;
        chunk.step[j] = step;
        chunk.task[j] = task;
        chunk.count[j] = count;
        chunk.name[j] = name;
        size = i + 1; // volatile store publishes the entry
    }

    public int size() {
        return size;
    }

    /** Appends the published events to {@code out}. Any thread. */
    public void readInto(List<TraceEvent> out) {
        int n = size;
        Chunk[] table = chunks;
        TraceEvent.Kind[] kinds = TraceEvent.Kind.values();
        for (int i = 0; i < n; i++) {
            Chunk chunk = table[i >>> CHUNK_BITS];
            int j = i & (CHUNK - 1);
            out.add(new TraceEvent(
                    kinds[chunk.kind[j]],
                    chunk.start[j],
                    chunk.end[j],
                    chunk.thread[j],
                    chunk.request[j],
                    chunk.step[j],
                    chunk.task[j],
                    chunk.name[j],
                    chunk.count[j]));
        }
    }
}
