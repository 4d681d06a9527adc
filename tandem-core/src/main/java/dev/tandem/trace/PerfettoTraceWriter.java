package dev.tandem.trace;

import dev.tandem.Status;
import dev.tandem.TraceEvent;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Streams a worker's trace into a Perfetto protobuf file ({@code .pftrace}) while the worker
 * runs, from a background thread that drains every {@link TraceBuffer} from where it last
 * stopped, once per flush interval (tens of milliseconds). Nothing is kept beyond what one drain reads, a few
 * interning tables and the counter edges not yet known to be complete.
 *
 * <p>Implementation Overview.
 *
 * <p><b>Format.</b> The file is a {@code perfetto.protos.Trace}: a sequence of
 * {@code TracePacket}s (field 1), each written as soon as it is encoded, all on one packet
 * sequence ({@code trusted_packet_sequence_id} = the worker's number). The first packet
 * clears the sequence's incremental state and interns the fixed names (categories, debug
 * annotation names, event names); kernel names are interned in the packet that first uses
 * them. Timestamps are {@link System#nanoTime()} values on the default trace clock. A file
 * cut short by a crash is a valid trace up to its last whole packet.
 *
 * <p><b>Tracks.</b> Under one root track per worker: a "requests" group with a track per
 * request (its "queued" span from submission to program start, its step build spans — named
 * "step N (M tasks)", with request, step, tasks and first_task as debug annotations —
 * publish instants and a "token" instant per delivered token) and, as its child, the request's
 * stream track (the request span until it ended, with its status; "step done" and "taken"
 * instants); a "device" group with a track per core ("core N") whose spans are the tasks,
 * named by kernel, with request, step and task (and skipped) as debug annotations; and a
 * "counters" group with ready tasks, busy cores, active requests and bytes in use. Every
 * event's category is {@code "tandem." + kind}, lower case, so a reader can tell the kinds
 * apart. A step's build span starts a flow to each of its tasks and one to its token; each
 * task and the token instant terminate theirs.
 *
 * <p><b>Counters.</b> Busy cores (cores in a task) and active requests (program started,
 * request not yet ended) are derived from events, which arrive per thread and late (a span is
 * recorded when it ends), so their edges wait in heaps until they are complete. Busy cores
 * are complete up to the watermark min over cores of: now, if the core was parked when this
 * drain began (it has recorded everything and starts nothing before now; see
 * {@link DeviceProbe#coreParked}); else the end of its last recorded task (a core runs tasks
 * one after another). Active requests come from the shared buffer, which
 * records within moments of the event, so they are held back {@link #ACTIVE_SLACK_NANOS}; an
 * edge later than that is applied at the counter's last emitted time, so the counter stays
 * monotone in time and right in sum. Ready tasks and bytes in use are sampled at each drain.
 *
 * <p><b>Failure.</b> A write error is logged once; the writer then keeps draining (so the
 * buffers stay small) and discards. Tracing never fails the worker.
 */
public final class PerfettoTraceWriter implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(PerfettoTraceWriter.class);

    // perfetto.protos.Trace
    private static final int TRACE_PACKET = 1;
    // perfetto.protos.TracePacket
    private static final int PACKET_TIMESTAMP = 8;
    private static final int PACKET_SEQUENCE_ID = 10;
    private static final int PACKET_TRACK_EVENT = 11;
    private static final int PACKET_INTERNED_DATA = 12;
    private static final int PACKET_SEQUENCE_FLAGS = 13;
    private static final int PACKET_TRACK_DESCRIPTOR = 60;
    private static final int SEQ_INCREMENTAL_STATE_CLEARED = 1;
    private static final int SEQ_NEEDS_INCREMENTAL_STATE = 2;
    // perfetto.protos.TrackDescriptor
    private static final int TRACK_UUID = 1;
    private static final int TRACK_NAME = 2;
    private static final int TRACK_PARENT_UUID = 5;
    private static final int TRACK_COUNTER = 8;
    private static final int TRACK_CHILD_ORDERING = 11;
    private static final int TRACK_SIBLING_ORDER_RANK = 12;
    private static final int CHILD_ORDERING_EXPLICIT = 3;
    // perfetto.protos.CounterDescriptor
    private static final int COUNTER_UNIT = 3;
    private static final int UNIT_COUNT = 2;
    private static final int UNIT_SIZE_BYTES = 3;
    // perfetto.protos.TrackEvent
    private static final int EVENT_CATEGORY_IIDS = 3;
    private static final int EVENT_DEBUG_ANNOTATIONS = 4;
    private static final int EVENT_TYPE = 9;
    private static final int EVENT_NAME_IID = 10;
    private static final int EVENT_TRACK_UUID = 11;
    private static final int EVENT_NAME = 23;
    private static final int EVENT_COUNTER_VALUE = 30;
    private static final int EVENT_FLOW_IDS = 47;
    private static final int EVENT_TERMINATING_FLOW_IDS = 48;
    private static final int TYPE_SLICE_BEGIN = 1;
    private static final int TYPE_SLICE_END = 2;
    private static final int TYPE_INSTANT = 3;
    private static final int TYPE_COUNTER = 4;
    // perfetto.protos.DebugAnnotation
    private static final int ANNOTATION_NAME_IID = 1;
    private static final int ANNOTATION_BOOL = 2;
    private static final int ANNOTATION_INT = 4;
    private static final int ANNOTATION_STRING = 6;
    // perfetto.protos.InternedData and its entries (EventCategory, EventName, DebugAnnotationName)
    private static final int INTERNED_CATEGORIES = 1;
    private static final int INTERNED_EVENT_NAMES = 2;
    private static final int INTERNED_ANNOTATION_NAMES = 3;
    private static final int ENTRY_IID = 1;
    private static final int ENTRY_NAME = 2;

    /** Debug annotation names, interned once; iid = index + 1. */
    private static final String[] ANNOTATIONS = {"request", "step", "task", "tasks", "first_task", "seq", "skipped",
            "status"};
    private static final int A_REQUEST = 1;
    private static final int A_STEP = 2;
    private static final int A_TASK = 3;
    private static final int A_TASKS = 4;
    private static final int A_FIRST_TASK = 5;
    private static final int A_SEQ = 6;
    private static final int A_SKIPPED = 7;
    private static final int A_STATUS = 8;

    /** Fixed event names, interned once; iid = index + 1. Kernel names follow. */
    private static final String[] FIXED_NAMES = {"publish", "step done", "token", "taken", "queued", "request"};
    private static final int N_PUBLISH = 1;
    private static final int N_STEP_DONE = 2;
    private static final int N_TOKEN = 3;
    private static final int N_TAKEN = 4;
    private static final int N_QUEUED = 5;
    private static final int N_REQUEST = 6;

    /** Counter tracks, in display order. */
    private static final String[] COUNTERS = {"ready tasks", "busy cores", "active requests", "bytes in use"};
    private static final int C_READY = 0;
    private static final int C_BUSY = 1;
    private static final int C_ACTIVE = 2;
    private static final int C_BYTES = 3;

    // Track uuids are (index << 20) | (family << 16) | sequence id: short varints, unique per writer.
    private static final int ROOT = 0;
    private static final int GROUP = 1;
    private static final int REQUEST_TRACK = 2;
    private static final int STREAM_TRACK = 3;
    private static final int CORE_TRACK = 4;
    private static final int COUNTER_TRACK = 5;
    private static final int GROUP_REQUESTS = 0;
    private static final int GROUP_DEVICE = 1;
    private static final int GROUP_COUNTERS = 2;
    private static final long FLOW_TASK = 1;
    private static final long FLOW_TOKEN = 2;

    /** How long active-request edges wait for late events from the shared buffer. */
    static final long ACTIVE_SLACK_NANOS = 250_000_000L;

    private static final Status[] STATUSES = Status.values();

    private final TraceRecorder recorder;
    private final DeviceProbe probe;
    private final Path file;
    private final String workerName;
    private final int sequenceId;
    private final long intervalNanos;
    private final Thread thread;
    private final AtomicBoolean closed = new AtomicBoolean();
    private volatile boolean running = true;

    // Writer thread only from here on.
    private final OutputStream out;
    private final ProtoEncoder packet = new ProtoEncoder();
    private final byte[] pending = new byte[1 << 16]; // whole packets not yet written to the file
    private int pendingSize;
    private final TraceSink sink = this::event;
    private final Map<String, Long> eventNames = new HashMap<>();
    private final List<String> newNames = new ArrayList<>();
    private final BitSet describedRequests = new BitSet();
    private final Set<Long> describedLargeRequests = new HashSet<>();
    private final boolean[] parked;
    private final long[] coreLastEnd;
    private final LongHeap busyStarts = new LongHeap();
    private final LongHeap busyEnds = new LongHeap();
    private final LongHeap activeStarts = new LongHeap();
    private final LongHeap activeEnds = new LongHeap();
    private final Set<Long> activeRequests = new HashSet<>(); // started, not ended; the shared buffer is in order
    private final long[] counterValue = new long[COUNTERS.length];
    private final long[] counterTime = new long[COUNTERS.length];
    private final boolean[] counterEmitted = new boolean[COUNTERS.length];
    private boolean started;
    private boolean failed;
    private long packets;
    private long bytes;

    /**
     * Opens (creates or truncates) {@code file}; {@link #start} begins streaming.
     *
     * @param sequenceId a number distinct among the writers whose files may be concatenated
     *                   (the worker's number); also keeps track uuids and flow ids apart
     * @throws UncheckedIOException if the file cannot be opened
     */
    public PerfettoTraceWriter(TraceRecorder recorder, DeviceProbe probe, Path file, String workerName, int sequenceId,
            long intervalNanos) {
        if (sequenceId < 1 || sequenceId > 0xFFFF) {
            throw new IllegalArgumentException("sequenceId must be in 1..65535, was " + sequenceId);
        }
        this.recorder = recorder;
        this.probe = probe;
        this.file = file;
        this.workerName = workerName;
        this.sequenceId = sequenceId;
        this.intervalNanos = Math.max(100_000, intervalNanos);
        this.parked = new boolean[probe.coreCount()];
        this.coreLastEnd = new long[probe.coreCount()];
        Arrays.fill(coreLastEnd, Long.MIN_VALUE);
        try {
            this.out = Files.newOutputStream(file, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                    StandardOpenOption.WRITE);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open trace file " + file + ": " + e.getMessage(), e);
        }
        this.thread = Thread.ofPlatform().name(workerName + "-trace-writer").daemon(true).unstarted(this::run);
    }

    public void start() {
        thread.start();
    }

    /** Drains what is left, writes it and closes the file; returns when done. Any thread but the writer's. */
    @Override
    public void close() {
        if (thread.getState() == Thread.State.NEW && closed.compareAndSet(false, true)) {
            running = false;
            run(); // never started: finish the file here
            return;
        }
        if (closed.compareAndSet(false, true)) {
            running = false;
            LockSupport.unpark(thread);
        }
        boolean interrupted = false;
        while (thread.isAlive()) {
            try {
                thread.join();
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    private void run() {
        try {
            while (running) {
                LockSupport.parkNanos(this, intervalNanos);
                tick(false);
            }
            tick(true);
        } catch (RuntimeException | Error e) {
            log.error("trace writer of {} stopped: {}", workerName, e.toString(), e);
        } finally {
            flush();
            try {
                out.close();
            } catch (IOException e) {
                writeFailed(e);
            }
            log.debug("{}: trace written to {}: {} packets, {} bytes", workerName, file, packets, bytes);
        }
    }

    /**
     * One drain: probe the cores, read every buffer, emit what counters are complete, flush.
     * The writer's thread only (or a test's, on a writer never started).
     */
    void tick(boolean last) {
        long now = System.nanoTime();
        if (!started) {
            started = true;
            writePreamble(now);
        }
        for (int c = 0; c < parked.length; c++) {
            parked[c] = probe.coreParked(c); // before draining: see DeviceProbe.coreParked
        }
        for (TraceBuffer buffer : recorder.buffers()) {
            boolean ended = buffer.ownerEnded(); // before draining: then the drain reads its last event
            buffer.drain(sink);
            if (ended) {
                recorder.forget(buffer);
            }
        }
        emitEdges(C_BUSY, busyStarts, busyEnds, last ? Long.MAX_VALUE : busyWatermark(now));
        emitEdges(C_ACTIVE, activeStarts, activeEnds, last ? Long.MAX_VALUE : now - ACTIVE_SLACK_NANOS);
        sample(C_READY, now, probe.readyTasks());
        sample(C_BYTES, now, probe.bytesInUse());
        flush();
    }

    private void flush() {
        if (!failed && pendingSize > 0) {
            try {
                out.write(pending, 0, pendingSize);
            } catch (IOException e) {
                writeFailed(e);
            }
        }
        pendingSize = 0;
    }

    private long busyWatermark(long now) {
        long mark = now;
        for (int c = 0; c < parked.length; c++) {
            if (!parked[c]) {
                mark = Math.min(mark, coreLastEnd[c]);
            }
        }
        return mark;
    }

    // ---- events ------------------------------------------------------------------------------

    private void event(TraceEvent.Kind kind, long start, long end, int thread, long request, long step, long task,
            String name, long count) {
        switch (kind) {
            case TASK -> task(start, end, thread, request, step, task, name, count);
            case STEP_BUILD -> stepBuild(start, end, request, step, task, count);
            case PUBLISH -> {
                describeRequest(request);
                beginEvent(start, TYPE_INSTANT, requestTrack(request), kind, N_PUBLISH);
                annotation(A_REQUEST, request);
                annotation(A_STEP, step);
                annotation(A_TASKS, count);
                endEvent();
            }
            case STEP_DONE -> {
                describeRequest(request);
                beginEvent(start, TYPE_INSTANT, streamTrack(request), kind, N_STEP_DONE);
                annotation(A_REQUEST, request);
                annotation(A_STEP, step);
                endEvent();
            }
            case TOKEN_DELIVERED -> {
                describeRequest(request);
                beginEvent(start, TYPE_INSTANT, requestTrack(request), kind, N_TOKEN);
                annotation(A_REQUEST, request);
                annotation(A_STEP, step);
                annotation(A_SEQ, count);
                packet.fixed64(EVENT_TERMINATING_FLOW_IDS, flowId(FLOW_TOKEN, request, step));
                endEvent();
            }
            case TOKEN_TAKEN -> {
                describeRequest(request);
                beginEvent(start, TYPE_INSTANT, streamTrack(request), kind, N_TAKEN);
                annotation(A_REQUEST, request);
                annotation(A_STEP, step);
                annotation(A_SEQ, count);
                endEvent();
            }
            case REQUEST_STARTED -> {
                describeRequest(request);
                beginEvent(start, TYPE_SLICE_BEGIN, requestTrack(request), kind, N_QUEUED);
                annotation(A_REQUEST, request);
                endEvent();
                sliceEnd(end, requestTrack(request));
                activeStarts.add(end);
                activeRequests.add(request);
            }
            case REQUEST -> {
                describeRequest(request);
                beginEvent(start, TYPE_SLICE_BEGIN, streamTrack(request), kind, N_REQUEST);
                annotation(A_REQUEST, request);
                String status = count >= 0 && count < STATUSES.length ? STATUSES[(int) count].name() : "UNKNOWN";
                stringAnnotation(A_STATUS, status);
                endEvent();
                sliceEnd(end, streamTrack(request));
                if (activeRequests.remove(request)) {
                    activeEnds.add(end); // a request ended while queued never started: it was never active
                }
            }
        }
    }

    private void task(long start, long end, int core, long request, long step, long task, String kernel, long skipped) {
        beginEvent(start, TYPE_SLICE_BEGIN, track(CORE_TRACK, core), TraceEvent.Kind.TASK,
                nameIid(kernel));
        annotation(A_REQUEST, request);
        annotation(A_STEP, step);
        annotation(A_TASK, task);
        if (skipped != 0) {
            packet.beginMessage(EVENT_DEBUG_ANNOTATIONS);
            packet.varint(ANNOTATION_NAME_IID, A_SKIPPED);
            packet.bool(ANNOTATION_BOOL, true);
            packet.endMessage();
        }
        packet.fixed64(EVENT_TERMINATING_FLOW_IDS, flowId(FLOW_TASK, request, task));
        endEvent();
        sliceEnd(end, track(CORE_TRACK, core));
        busyStarts.add(start);
        busyEnds.add(end);
        if (core >= 0 && core < coreLastEnd.length && end > coreLastEnd[core]) {
            coreLastEnd[core] = end;
        }
    }

    private void stepBuild(long start, long end, long request, long step, long firstTask, long tasks) {
        describeRequest(request);
        beginPacket(start, true);
        packet.beginMessage(PACKET_TRACK_EVENT);
        packet.varint(EVENT_TYPE, TYPE_SLICE_BEGIN);
        packet.varint(EVENT_TRACK_UUID, requestTrack(request));
        packet.varint(EVENT_CATEGORY_IIDS, TraceEvent.Kind.STEP_BUILD.ordinal() + 1);
        packet.string(EVENT_NAME, "step " + step + " (" + tasks + (tasks == 1 ? " task)" : " tasks)"));
        annotation(A_REQUEST, request);
        annotation(A_STEP, step);
        annotation(A_TASKS, tasks);
        annotation(A_FIRST_TASK, firstTask);
        if (firstTask >= 0) {
            for (long t = firstTask; t < firstTask + tasks; t++) {
                packet.fixed64(EVENT_FLOW_IDS, flowId(FLOW_TASK, request, t));
            }
        }
        packet.fixed64(EVENT_FLOW_IDS, flowId(FLOW_TOKEN, request, step));
        endEvent();
        sliceEnd(end, requestTrack(request));
    }

    // ---- packets -----------------------------------------------------------------------------

    private void beginPacket(long timestamp, boolean needsState) {
        packet.reset();
        packet.varint(PACKET_TIMESTAMP, timestamp);
        packet.varint(PACKET_SEQUENCE_ID, sequenceId);
        if (needsState) {
            packet.varint(PACKET_SEQUENCE_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
        }
    }

    /** Opens a packet with a track event of category {@code kind} named by interned {@code nameIid}. */
    private void beginEvent(long timestamp, int type, long track, TraceEvent.Kind kind, long nameIid) {
        beginPacket(timestamp, true);
        packet.beginMessage(PACKET_TRACK_EVENT);
        packet.varint(EVENT_TYPE, type);
        packet.varint(EVENT_TRACK_UUID, track);
        packet.varint(EVENT_CATEGORY_IIDS, kind.ordinal() + 1);
        packet.varint(EVENT_NAME_IID, nameIid);
    }

    /** Closes the track event, adds the names it interned and writes the packet. */
    private void endEvent() {
        packet.endMessage();
        if (!newNames.isEmpty()) {
            packet.beginMessage(PACKET_INTERNED_DATA);
            for (String name : newNames) {
                packet.beginMessage(INTERNED_EVENT_NAMES);
                packet.varint(ENTRY_IID, eventNames.get(name));
                packet.string(ENTRY_NAME, name);
                packet.endMessage();
            }
            packet.endMessage();
            newNames.clear();
        }
        writePacket();
    }

    private void sliceEnd(long timestamp, long track) {
        beginPacket(timestamp, false);
        packet.beginMessage(PACKET_TRACK_EVENT);
        packet.varint(EVENT_TYPE, TYPE_SLICE_END);
        packet.varint(EVENT_TRACK_UUID, track);
        packet.endMessage();
        writePacket();
    }

    private void annotation(int nameIid, long value) {
        packet.beginMessage(EVENT_DEBUG_ANNOTATIONS);
        packet.varint(ANNOTATION_NAME_IID, nameIid);
        packet.varint(ANNOTATION_INT, value);
        packet.endMessage();
    }

    private void stringAnnotation(int nameIid, String value) {
        packet.beginMessage(EVENT_DEBUG_ANNOTATIONS);
        packet.varint(ANNOTATION_NAME_IID, nameIid);
        packet.string(ANNOTATION_STRING, value);
        packet.endMessage();
    }

    private long nameIid(String name) {
        String key = name == null ? "?" : name;
        Long iid = eventNames.get(key);
        if (iid == null) {
            iid = (long) (FIXED_NAMES.length + eventNames.size() + 1);
            eventNames.put(key, iid);
            newNames.add(key);
        }
        return iid;
    }

    private void writePacket() {
        if (failed) {
            return;
        }
        int length = packet.size();
        int total = 1 + ProtoEncoder.varintSize(length) + length;
        if (pendingSize + total > pending.length) {
            flush();
        }
        if (total > pending.length) {
            try {
                byte[] header = new byte[16];
                int at = ProtoEncoder.putVarint(header, 0, (TRACE_PACKET << 3) | 2);
                at = ProtoEncoder.putVarint(header, at, length);
                out.write(header, 0, at);
                out.write(packet.array(), 0, length);
            } catch (IOException e) {
                writeFailed(e);
                return;
            }
        } else {
            int at = ProtoEncoder.putVarint(pending, pendingSize, (TRACE_PACKET << 3) | 2);
            at = ProtoEncoder.putVarint(pending, at, length);
            System.arraycopy(packet.array(), 0, pending, at, length);
            pendingSize = at + length;
        }
        packets++;
        bytes += total;
    }

    private void writeFailed(IOException e) {
        if (!failed) {
            failed = true;
            log.error("{}: writing the trace file {} failed, the rest of the trace is dropped: {}", workerName, file,
                    e.toString());
        }
    }

    // ---- tracks ------------------------------------------------------------------------------

    private void writePreamble(long now) {
        // Root track; this packet starts the sequence and interns the fixed names.
        packet.reset();
        packet.varint(PACKET_TIMESTAMP, now);
        packet.varint(PACKET_SEQUENCE_ID, sequenceId);
        packet.varint(PACKET_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
        packet.beginMessage(PACKET_TRACK_DESCRIPTOR);
        packet.varint(TRACK_UUID, track(ROOT, 0));
        packet.string(TRACK_NAME, "tandem " + workerName);
        packet.varint(TRACK_CHILD_ORDERING, CHILD_ORDERING_EXPLICIT);
        packet.endMessage();
        packet.beginMessage(PACKET_INTERNED_DATA);
        TraceEvent.Kind[] kinds = TraceEvent.Kind.values();
        for (TraceEvent.Kind kind : kinds) {
            internedEntry(INTERNED_CATEGORIES, kind.ordinal() + 1, "tandem." + kind.name().toLowerCase(Locale.ROOT));
        }
        for (int i = 0; i < ANNOTATIONS.length; i++) {
            internedEntry(INTERNED_ANNOTATION_NAMES, i + 1, ANNOTATIONS[i]);
        }
        for (int i = 0; i < FIXED_NAMES.length; i++) {
            internedEntry(INTERNED_EVENT_NAMES, i + 1, FIXED_NAMES[i]);
        }
        packet.endMessage();
        writePacket();

        describe(track(GROUP, GROUP_REQUESTS), track(ROOT, 0), "requests", GROUP_REQUESTS, true);
        describe(track(GROUP, GROUP_DEVICE), track(ROOT, 0),
                "device: " + parked.length + (parked.length == 1 ? " core" : " cores"), GROUP_DEVICE, true);
        describe(track(GROUP, GROUP_COUNTERS), track(ROOT, 0), "counters", GROUP_COUNTERS, true);
        for (int c = 0; c < parked.length; c++) {
            describe(track(CORE_TRACK, c), track(GROUP, GROUP_DEVICE), "core " + c, c, false);
        }
        for (int k = 0; k < COUNTERS.length; k++) {
            packet.reset();
            packet.varint(PACKET_SEQUENCE_ID, sequenceId);
            packet.beginMessage(PACKET_TRACK_DESCRIPTOR);
            packet.varint(TRACK_UUID, track(COUNTER_TRACK, k));
            packet.varint(TRACK_PARENT_UUID, track(GROUP, GROUP_COUNTERS));
            packet.string(TRACK_NAME, COUNTERS[k]);
            packet.varint(TRACK_SIBLING_ORDER_RANK, k);
            packet.beginMessage(TRACK_COUNTER);
            packet.varint(COUNTER_UNIT, k == C_BYTES ? UNIT_SIZE_BYTES : UNIT_COUNT);
            packet.endMessage();
            packet.endMessage();
            writePacket();
        }
    }

    private void internedEntry(int field, long iid, String name) {
        packet.beginMessage(field);
        packet.varint(ENTRY_IID, iid);
        packet.string(ENTRY_NAME, name);
        packet.endMessage();
    }

    private void describe(long uuid, long parent, String name, long rank, boolean explicitChildren) {
        packet.reset();
        packet.varint(PACKET_SEQUENCE_ID, sequenceId);
        packet.beginMessage(PACKET_TRACK_DESCRIPTOR);
        packet.varint(TRACK_UUID, uuid);
        packet.varint(TRACK_PARENT_UUID, parent);
        packet.string(TRACK_NAME, name);
        packet.varint(TRACK_SIBLING_ORDER_RANK, (int) Math.min(rank, Integer.MAX_VALUE));
        if (explicitChildren) {
            packet.varint(TRACK_CHILD_ORDERING, CHILD_ORDERING_EXPLICIT);
        }
        packet.endMessage();
        writePacket();
    }

    private void describeRequest(long request) {
        if (request >= 0 && request <= Integer.MAX_VALUE) {
            if (describedRequests.get((int) request)) {
                return;
            }
            describedRequests.set((int) request);
        } else if (!describedLargeRequests.add(request)) {
            return;
        }
        describe(requestTrack(request), track(GROUP, GROUP_REQUESTS), "request " + request, request, false);
        describe(streamTrack(request), requestTrack(request), "request " + request + " stream", 0, false);
    }

    private long requestTrack(long request) {
        return track(REQUEST_TRACK, request);
    }

    private long streamTrack(long request) {
        return track(STREAM_TRACK, request);
    }

    private long track(int family, long index) {
        return ((index & 0x7FF_FFFF_FFFFL) << 20) | ((long) family << 16) | sequenceId;
    }

    // ---- counters ----------------------------------------------------------------------------

    /** Applies the +1 and −1 edges up to {@code mark} in time order (ends first at equal times). */
    private void emitEdges(int counter, LongHeap starts, LongHeap ends, long mark) {
        while (true) {
            long nextStart = starts.isEmpty() ? Long.MAX_VALUE : starts.peek();
            long nextEnd = ends.isEmpty() ? Long.MAX_VALUE : ends.peek();
            long time = Math.min(nextStart, nextEnd);
            if (time == Long.MAX_VALUE || time > mark) {
                return;
            }
            long value = counterValue[counter];
            while (!ends.isEmpty() && ends.peek() == time) {
                ends.poll();
                value--;
            }
            while (!starts.isEmpty() && starts.peek() == time) {
                starts.poll();
                value++;
            }
            counterValue[counter] = value;
            counter(counter, time, value);
        }
    }

    private void sample(int counter, long now, long value) {
        if (!counterEmitted[counter] || counterValue[counter] != value) {
            counterValue[counter] = value;
            counter(counter, now, value);
        }
    }

    private void counter(int counter, long time, long value) {
        long at = counterEmitted[counter] ? Math.max(time, counterTime[counter]) : time;
        counterEmitted[counter] = true;
        counterTime[counter] = at;
        beginPacket(at, false);
        packet.beginMessage(PACKET_TRACK_EVENT);
        packet.varint(EVENT_TYPE, TYPE_COUNTER);
        packet.varint(EVENT_TRACK_UUID, track(COUNTER_TRACK, counter));
        packet.varint(EVENT_COUNTER_VALUE, value);
        packet.endMessage();
        writePacket();
    }

    /** A flow id unique (up to 64-bit hash collisions) per writer, family, request and index. */
    private long flowId(long family, long request, long index) {
        long x = sequenceId * 0x9E3779B97F4A7C15L + family;
        x = x * 0xBF58476D1CE4E5B9L + request;
        x = x * 0x94D049BB133111EBL + index;
        x ^= x >>> 30;
        x *= 0xBF58476D1CE4E5B9L;
        x ^= x >>> 27;
        x *= 0x94D049BB133111EBL;
        x ^= x >>> 31;
        return x == 0 ? 1 : x;
    }
}
