package dev.tandem.trace;

import dev.tandem.TraceEvent;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.List;
import jdk.jfr.FlightRecorder;

/**
 * The events one thread records. Single writer: the owning thread (or, for the recorder's
 * shared buffer, whoever holds its lock). Readers: one streaming reader ({@link #drain}, the
 * trace file writer's thread) and, when events are retained, snapshots ({@link #readInto})
 * from any thread.
 *
 * <p>Implementation Overview. Events are stored column-wise in chunks, linked in recording
 * order, so recording allocates nothing per event. Chunks start small ({@value #FIRST_CHUNK}
 * entries: a request's program records a few events per step) and grow to {@value #CHUNK}.
 * The invariants:
 * <ul>
 *   <li>the owner fills entry {@code j} of its tail chunk, then publishes it by a release
 *       store of the chunk's {@code count = j + 1}; a reader acquires {@code count} and reads
 *       only entries below it, which no one writes again while the chunk is reachable by a
 *       reader;
 *   <li>a chunk's {@code next} is set (release) only when the chunk is full, before any entry
 *       of the next chunk is published, so a reader that sees {@code count == CHUNK} and a
 *       null {@code next} has seen everything recorded so far;
 *   <li>when events are retained, {@code head} keeps the whole chain for snapshots and no chunk
 *       is ever reused;
 *   <li>when they are not, only the streaming cursor references chunks behind the tail. The
 *       streaming reader hands each chunk it has finished to the owner through the one-slot
 *       {@code spare} (CAS from null); the owner takes it (getAndSet to null) and reuses it
 *       for its next chunk. A chunk in {@code spare} is unreachable by any reader, and the
 *       CAS/getAndSet pair orders the reader's last reads before the owner's new writes.
 *       So a streamed trace holds at most a few chunks per thread, and recording allocates
 *       nothing in steady state.
 * </ul>
 *
 * <p>Spans may also be Java Flight Recorder events: {@link #spanStart} begins one (when JFR
 * is on for this recorder and a recording enables its type) and {@link #record} of the same
 * kind commits it. Spans of one thread never nest, so one pending slot suffices. Nothing
 * touches JFR until the JDK's Flight Recorder has been initialized by someone else (a
 * recording started by {@code -XX:StartFlightRecording}, {@code jcmd} or the API): initializing
 * it takes a fifth of a second, which a traced run should not pay unless JFR is wanted.
 */
public final class TraceBuffer {
    static final int FIRST_CHUNK = 256;
    static final int CHUNK = 4096;

    /** One block of columns. {@code size} and {@code next} are accessed through VarHandles. */
    static final class Chunk {
        final int capacity;
        final byte[] kind;
        final int[] thread;
        final long[] start;
        final long[] end;
        final long[] request;
        final long[] step;
        final long[] task;
        final long[] count;
        final String[] name;
        int size;
        Chunk next;

        Chunk(int capacity) {
            this.capacity = capacity;
            kind = new byte[capacity];
            thread = new int[capacity];
            start = new long[capacity];
            end = new long[capacity];
            request = new long[capacity];
            step = new long[capacity];
            task = new long[capacity];
            count = new long[capacity];
            name = new String[capacity];
        }
    }

    private static final TraceEvent.Kind[] KINDS = TraceEvent.Kind.values();

    private final boolean retain;
    private final boolean jfr;
    private final Thread owner; // null for a buffer shared under a lock
    private final Chunk head; // null unless events are retained

    // Owner only.
    private Chunk tail;
    private int chunksAllocated = 1;
    private jdk.jfr.Event pendingSpan; // the JFR event of the span in progress, if any

    // Streaming reader only.
    private Chunk readChunk;
    private int readIndex;

    // Reader → owner hand-back of finished chunks (streaming without retention only).
    @SuppressWarnings("unused") // accessed through SPARE
    private volatile Chunk spare;

    /**
     * @param owner the thread that records into this buffer, or null if any thread may under
     *              a lock
     */
    TraceBuffer(boolean retain, boolean jfr, Thread owner) {
        this.retain = retain;
        this.jfr = jfr;
        this.owner = owner;
        Chunk first = new Chunk(FIRST_CHUNK);
        this.head = retain ? first : null;
        this.tail = first;
        this.readChunk = first;
    }

    /**
     * The start time of a span about to begin on this thread, and the start of its JFR event
     * when JFR is on. Owning thread only; pair it with {@link #record} of the same kind.
     */
    public long spanStart(TraceEvent.Kind kind) {
        if (jfr && FlightRecorder.isInitialized()) {
            pendingSpan = JfrSpans.begin(kind);
        }
        return System.nanoTime();
    }

    /** Records one event. Owning thread only (or under the recorder's lock). */
    public void record(
            TraceEvent.Kind kind, long start, long end, int thread, long request, long step, long task, String name,
            long count) {
        Chunk chunk = tail;
        int j = chunk.size;
        if (j == chunk.capacity) {
            chunk = grow(chunk);
            j = 0;
        }
        chunk.kind[j] = (byte) kind.ordinal();
        chunk.thread[j] = thread;
        chunk.start[j] = start;
        chunk.end[j] = end;
        chunk.request[j] = request;
        chunk.step[j] = step;
        chunk.task[j] = task;
        chunk.count[j] = count;
        chunk.name[j] = name;
        SIZE.setRelease(chunk, j + 1); // publishes the entry
        if (jfr && FlightRecorder.isInitialized()) {
            jdk.jfr.Event pending = null;
            if (kind == TraceEvent.Kind.TASK || kind == TraceEvent.Kind.STEP_BUILD) {
                pending = pendingSpan; // instants recorded meanwhile (a publish) leave it alone
                pendingSpan = null;
            }
            JfrSpans.commit(pending, kind, start, end, thread, request, step, task, name, count);
        }
    }

    private Chunk grow(Chunk full) {
        int capacity = Math.min(CHUNK, full.capacity * 4);
        Chunk fresh = retain ? null : (Chunk) SPARE.getAndSet(this, null);
        if (fresh == null || fresh.capacity < capacity) {
            fresh = new Chunk(capacity); // a small spare from the first chunks is left to the collector
            chunksAllocated++;
        } else {
            fresh.size = 0; // plain: published to readers by the release store of next below
            fresh.next = null;
        }
        NEXT.setRelease(full, fresh);
        tail = fresh;
        return fresh;
    }

    /**
     * Whether the thread that owns this buffer has ended, so it will record nothing more. A
     * reader that sees true and then drains has read the buffer's last event.
     */
    boolean ownerEnded() {
        return owner != null && !owner.isAlive();
    }

    /** Chunks this buffer has allocated so far. Owner only (for tests). */
    int chunksAllocated() {
        return chunksAllocated;
    }

    /**
     * Passes every event published since the last call to {@code sink}, in recording order.
     * The streaming reader only (one thread).
     *
     * @return how many events were passed
     */
    public int drain(TraceSink sink) {
        int passed = 0;
        Chunk chunk = readChunk;
        int i = readIndex;
        while (true) {
            int n = (int) SIZE.getAcquire(chunk);
            for (; i < n; i++) {
                sink.event(KINDS[chunk.kind[i]], chunk.start[i], chunk.end[i], chunk.thread[i], chunk.request[i],
                        chunk.step[i], chunk.task[i], chunk.name[i], chunk.count[i]);
                passed++;
            }
            if (n < chunk.capacity) {
                break;
            }
            Chunk next = (Chunk) NEXT.getAcquire(chunk);
            if (next == null) {
                break;
            }
            if (!retain) {
                SPARE.compareAndSet(this, null, chunk); // the owner may reuse it from now on
            }
            chunk = next;
            i = 0;
        }
        readChunk = chunk;
        readIndex = i;
        return passed;
    }

    /** Appends the published events to {@code out}. Any thread; only when events are retained. */
    public void readInto(List<TraceEvent> out) {
        if (!retain) {
            throw new IllegalStateException("this trace does not retain its events");
        }
        for (Chunk chunk = head; chunk != null; chunk = (Chunk) NEXT.getAcquire(chunk)) {
            int n = (int) SIZE.getAcquire(chunk);
            for (int i = 0; i < n; i++) {
                out.add(new TraceEvent(KINDS[chunk.kind[i]], chunk.start[i], chunk.end[i], chunk.thread[i],
                        chunk.request[i], chunk.step[i], chunk.task[i], chunk.name[i], chunk.count[i]));
            }
            if (n < chunk.capacity) {
                break;
            }
        }
    }

    private static final VarHandle SIZE;
    private static final VarHandle NEXT;
    private static final VarHandle SPARE;

    static {
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            SIZE = lookup.findVarHandle(Chunk.class, "size", int.class);
            NEXT = lookup.findVarHandle(Chunk.class, "next", Chunk.class);
            SPARE = lookup.findVarHandle(TraceBuffer.class, "spare", Chunk.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
}
