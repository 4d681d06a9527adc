package dev.tandem.bench.trace;

import dev.tandem.Status;
import dev.tandem.TraceEvent;
import java.io.BufferedInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads a Perfetto trace written by tandem's trace writer back into {@link TraceEvent}s.
 *
 * <p>The file is read packet by packet. Each track event's kind comes from its category
 * ({@code "tandem." + kind}); request, step, task, sequence, task count and status come from
 * its debug annotations; a task's core from its track ("core N"). Spans are formed as the
 * Perfetto trace processor forms them: per track, BEGIN and END in timestamp order (ties in
 * file order) nest like a call stack. Interned names are resolved per packet sequence.
 *
 * <p>A file cut short (a crash, a full disk) is read up to its last whole packet and marked
 * {@linkplain TraceFile#damage() damaged}; a file that is missing, empty, not a Perfetto trace
 * from its first packet on, or that holds no complete packet, is a {@link TraceFileException}
 * with a one-line message.
 */
public final class PerfettoTraceReader {
    private static final int MAX_PACKET = 256 << 20;
    private static final Pattern CORE_NAME = Pattern.compile("core (\\d+)");
    private static final Status[] STATUSES = Status.values();

    /**
     * What a trace file holds.
     *
     * @param events         every event, by start time
     * @param cores          device cores: the core tracks described or used, whichever is more
     * @param packets        whole packets read
     * @param damage         why reading stopped before the end of the file, or null if it did not
     * @param unfinishedSpans spans begun but never ended in the file (a trace cut short)
     */
    public record TraceFile(Path path, List<TraceEvent> events, int cores, long packets, String damage,
            int unfinishedSpans) {}

    /** A trace file that cannot be reported on. The message is one line and names the file. */
    public static final class TraceFileException extends IllegalArgumentException {
        public TraceFileException(String message) {
            super(message);
        }
    }

    private PerfettoTraceReader() {}

    public static TraceFile read(Path file) {
        if (Files.isDirectory(file)) {
            throw new TraceFileException(file + " is a directory, not a trace file");
        }
        long size;
        try {
            size = Files.size(file);
        } catch (NoSuchFileException e) {
            throw new TraceFileException(file + " does not exist");
        } catch (IOException e) {
            throw new TraceFileException("cannot read " + file + ": " + e.getMessage());
        }
        if (size == 0) {
            throw new TraceFileException(file + " is empty (0 bytes): not a trace");
        }
        try (InputStream in = new BufferedInputStream(Files.newInputStream(file), 1 << 16)) {
            return new PerfettoTraceReader.Decoder(file).decode(in, size);
        } catch (IOException e) {
            throw new TraceFileException("cannot read " + file + ": " + e.getMessage());
        }
    }

    /** A track event as written, before spans are formed; -1 for an annotation that is absent. */
    private record Raw(long order, long time, int type, long track, TraceEvent.Kind kind, String name, long request,
            long step, long task, long firstTask, long tasks, long seq, boolean skipped, String status) {}

    /** The debug annotations tandem writes, as they are decoded. */
    private static final class Annotations {
        long request = -1;
        long step = -1;
        long task = -1;
        long firstTask = -1;
        long tasks = -1;
        long seq = -1;
        boolean skipped;
        String status;

        void put(String key, long number, String text) {
            switch (key) {
                case "request" -> request = number;
                case "step" -> step = number;
                case "task" -> task = number;
                case "first_task" -> firstTask = number;
                case "tasks" -> tasks = number;
                case "seq" -> seq = number;
                case "skipped" -> skipped = number != 0;
                case "status" -> status = text;
                default -> {
                    // someone else's annotation
                }
            }
        }
    }

    private static final class Decoder {
        private final Path file;
        private final Map<Long, Map<Integer, Map<Long, String>>> interned = new HashMap<>();
        private final Map<Long, String> trackNames = new HashMap<>();
        private final Map<Long, List<Raw>> byTrack = new LinkedHashMap<>();
        private long order;

        Decoder(Path file) {
            this.file = file;
        }

        TraceFile decode(InputStream in, long size) throws IOException {
            long offset = 0;
            long packets = 0;
            String damage = null;
            byte[] buf = new byte[4096];
            while (true) {
                int first = in.read();
                if (first < 0) {
                    break;
                }
                long at = offset;
                long tag;
                long length;
                try {
                    tag = varint(in, first);
                    if (tag != ((1 << 3) | WireReader.LENGTH)) {
                        String what = "field " + (tag >>> 3) + " of wire type " + (tag & 7) + " at byte " + at
                                + " where a TracePacket (field 1) belongs";
                        if (packets == 0) {
                            throw new TraceFileException(file + " is not a Perfetto trace: " + what);
                        }
                        damage = "damaged at byte " + at + ": " + what;
                        break;
                    }
                    length = varint(in, in.read());
                } catch (EOFException e) {
                    damage = "cut short at byte " + size + ", inside the header of packet " + (packets + 1);
                    break;
                }
                if (length > MAX_PACKET || length < 0) {
                    String what = "packet " + (packets + 1) + " at byte " + at + " claims " + length + " bytes";
                    if (packets == 0) {
                        throw new TraceFileException(file + " is not a Perfetto trace: " + what);
                    }
                    damage = "damaged: " + what;
                    break;
                }
                if (buf.length < length) {
                    buf = new byte[(int) Math.max(length, buf.length * 2L)];
                }
                int got = in.readNBytes(buf, 0, (int) length);
                if (got < length) {
                    damage = "cut short at byte " + size + ", inside packet " + (packets + 1) + " (" + got + " of "
                            + length + " bytes)";
                    break;
                }
                offset = at + varintSize(tag) + varintSize(length) + length;
                try {
                    packet(new WireReader(buf, 0, (int) length));
                } catch (WireReader.Malformed e) {
                    if (packets == 0) {
                        throw new TraceFileException(file + " is not a Perfetto trace: its first packet is malformed ("
                                + e.getMessage() + ")");
                    }
                    damage = "damaged at packet " + (packets + 1) + " (byte " + at + "): " + e.getMessage();
                    break;
                }
                packets++;
            }
            if (packets == 0) {
                throw new TraceFileException(file + " holds no complete Perfetto packet in its " + size
                        + " bytes: it is not a Perfetto trace, or it was cut short inside its first packet");
            }
            int[] unfinished = {0};
            List<TraceEvent> events = formEvents(unfinished);
            return new TraceFile(file, events, coreCount(events), packets, damage, unfinished[0]);
        }

        private void packet(WireReader p) throws WireReader.Malformed {
            long timestamp = 0;
            long sequence = 0;
            long flags = 0;
            WireReader event = null;
            WireReader data = null;
            WireReader descriptor = null;
            while (p.next()) {
                switch (p.field()) {
                    case 8 -> timestamp = p.longValue();
                    case 10 -> sequence = p.longValue();
                    case 11 -> event = p.message();
                    case 12 -> data = p.message();
                    case 13 -> flags = p.longValue();
                    case 41 -> flags |= p.longValue() != 0 ? 1 : 0; // incremental_state_cleared (older writers)
                    case 60 -> descriptor = p.message();
                    default -> {
                        // other packet kinds: not ours
                    }
                }
            }
            Map<Integer, Map<Long, String>> tables = interned.computeIfAbsent(sequence, k -> new HashMap<>());
            if ((flags & 1) != 0) {
                tables.clear();
            }
            if (data != null) {
                internedData(data, tables);
            }
            if (descriptor != null) {
                trackDescriptor(descriptor);
            }
            if (event != null) {
                trackEvent(event, timestamp, tables);
            }
        }

        private void internedData(WireReader data, Map<Integer, Map<Long, String>> tables) throws WireReader.Malformed {
            while (data.next()) {
                int field = data.field();
                if (field < 1 || field > 3 || data.wireType() != WireReader.LENGTH) {
                    continue; // categories, event names and debug annotation names are what we read
                }
                WireReader entry = data.message();
                long iid = 0;
                String name = null;
                while (entry.next()) {
                    if (entry.field() == 1) {
                        iid = entry.longValue();
                    } else if (entry.field() == 2 && entry.wireType() == WireReader.LENGTH) {
                        name = entry.stringValue();
                    }
                }
                if (name != null) {
                    tables.computeIfAbsent(field, k -> new HashMap<>()).put(iid, name);
                }
            }
        }

        private void trackDescriptor(WireReader d) throws WireReader.Malformed {
            long uuid = 0;
            String name = null;
            while (d.next()) {
                if (d.field() == 1) {
                    uuid = d.longValue();
                } else if ((d.field() == 2 || d.field() == 10) && d.wireType() == WireReader.LENGTH) {
                    name = d.stringValue();
                }
            }
            if (name != null) {
                trackNames.put(uuid, name);
            }
        }

        private void trackEvent(WireReader e, long timestamp, Map<Integer, Map<Long, String>> tables)
                throws WireReader.Malformed {
            int type = 0;
            long track = 0;
            TraceEvent.Kind kind = null;
            String name = null;
            Annotations args = new Annotations();
            while (e.next()) {
                switch (e.field()) {
                    case 9 -> type = (int) e.longValue();
                    case 11 -> track = e.longValue();
                    case 3 -> {
                        long[] iids = e.wireType() == WireReader.LENGTH ? e.packedVarints() : new long[] {e.longValue()};
                        for (long iid : iids) {
                            kind = kind != null ? kind : kindOf(lookup(tables, 1, iid));
                        }
                    }
                    case 22 -> kind = kind != null ? kind : kindOf(e.stringValue());
                    case 10 -> name = lookup(tables, 2, e.longValue());
                    case 23 -> name = e.stringValue();
                    case 4 -> annotation(e.message(), tables, args);
                    default -> {
                        // flows, counter values and the rest: not needed for the report
                    }
                }
            }
            if (type == 2 || (kind != null && (type == 1 || type == 3))) {
                byTrack.computeIfAbsent(track, k -> new ArrayList<>()).add(new Raw(order++, timestamp, type, track,
                        kind, name, args.request, args.step, args.task, args.firstTask, args.tasks, args.seq,
                        args.skipped, args.status));
            }
        }

        private void annotation(WireReader a, Map<Integer, Map<Long, String>> tables, Annotations args)
                throws WireReader.Malformed {
            String key = null;
            long number = -1;
            String text = null;
            while (a.next()) {
                switch (a.field()) {
                    case 1 -> key = lookup(tables, 3, a.longValue());
                    case 10 -> key = a.stringValue();
                    case 2, 3, 4, 7 -> number = a.longValue();
                    case 6 -> text = a.stringValue();
                    default -> {
                        // doubles and nested values: not ours
                    }
                }
            }
            if (key != null) {
                args.put(key, number, text);
            }
        }

        private static String lookup(Map<Integer, Map<Long, String>> tables, int field, long iid) {
            Map<Long, String> table = tables.get(field);
            return table == null ? null : table.get(iid);
        }

        private static TraceEvent.Kind kindOf(String category) {
            if (category == null || !category.startsWith("tandem.")) {
                return null;
            }
            try {
                return TraceEvent.Kind.valueOf(category.substring("tandem.".length()).toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException unknown) {
                return null;
            }
        }

        /** Pairs BEGIN and END per track the way the trace processor does, and maps to events. */
        private List<TraceEvent> formEvents(int[] unfinished) {
            Map<Long, Integer> cores = coreIndices();
            List<TraceEvent> out = new ArrayList<>();
            for (List<Raw> raws : byTrack.values()) {
                raws.sort(Comparator.comparingLong(Raw::time).thenComparingLong(Raw::order));
                Deque<Raw> open = new ArrayDeque<>();
                for (Raw raw : raws) {
                    switch (raw.type()) {
                        case 1 -> open.push(raw);
                        case 2 -> {
                            Raw begin = open.poll();
                            if (begin != null && begin.kind() != null) {
                                out.add(event(begin, raw.time(), cores));
                            }
                        }
                        case 3 -> out.add(event(raw, raw.time(), cores));
                        default -> {
                            // not formed
                        }
                    }
                }
                for (Raw left : open) {
                    if (left.kind() != null) {
                        unfinished[0]++;
                    }
                }
            }
            out.sort(Comparator.comparingLong(TraceEvent::start));
            return out;
        }

        private TraceEvent event(Raw raw, long end, Map<Long, Integer> cores) {
            TraceEvent.Kind kind = raw.kind();
            long request = raw.request();
            long step = raw.step();
            return switch (kind) {
                case TASK -> new TraceEvent(kind, raw.time(), end, cores.getOrDefault(raw.track(), -1), request, step,
                        raw.task(), raw.name(), raw.skipped() ? 1 : 0);
                case STEP_BUILD -> new TraceEvent(kind, raw.time(), end, TraceEvent.HOST, request, step, raw.firstTask(),
                        null, Math.max(0, raw.tasks()));
                case PUBLISH -> new TraceEvent(kind, raw.time(), end, TraceEvent.HOST, request, step, -1, null,
                        Math.max(0, raw.tasks()));
                case REQUEST_STARTED -> new TraceEvent(kind, raw.time(), end, TraceEvent.HOST, request, -1, -1, null, 0);
                case TOKEN_DELIVERED, TOKEN_TAKEN -> new TraceEvent(kind, raw.time(), end, TraceEvent.OTHER, request,
                        step, -1, null, Math.max(0, raw.seq()));
                case STEP_DONE -> new TraceEvent(kind, raw.time(), end, TraceEvent.OTHER, request, step, -1, null, 0);
                case REQUEST -> new TraceEvent(kind, raw.time(), end, TraceEvent.OTHER, request, -1, -1, null,
                        statusOrdinal(raw.status()));
            };
        }

        private static long statusOrdinal(String status) {
            for (Status s : STATUSES) {
                if (s.name().equals(status)) {
                    return s.ordinal();
                }
            }
            return -1;
        }

        /** Core index per core track: from its name "core N", else in order of appearance after those. */
        private Map<Long, Integer> coreIndices() {
            Map<Long, Integer> cores = new HashMap<>();
            int next = 0;
            for (Map.Entry<Long, String> track : trackNames.entrySet()) {
                Matcher m = CORE_NAME.matcher(track.getValue());
                if (m.matches()) {
                    int index = Integer.parseInt(m.group(1));
                    cores.put(track.getKey(), index);
                    next = Math.max(next, index + 1);
                }
            }
            for (Map.Entry<Long, List<Raw>> track : byTrack.entrySet()) {
                if (!cores.containsKey(track.getKey())
                        && track.getValue().stream().anyMatch(r -> r.kind() == TraceEvent.Kind.TASK)) {
                    cores.put(track.getKey(), next++);
                }
            }
            return cores;
        }

        private int coreCount(List<TraceEvent> events) {
            TreeSet<Integer> seen = new TreeSet<>();
            for (String name : trackNames.values()) {
                Matcher m = CORE_NAME.matcher(name);
                if (m.matches()) {
                    seen.add(Integer.parseInt(m.group(1)));
                }
            }
            for (TraceEvent e : events) {
                if (e.kind() == TraceEvent.Kind.TASK && e.thread() >= 0) {
                    seen.add(e.thread());
                }
            }
            return seen.size();
        }
    }

    private static long varint(InputStream in, int first) throws IOException {
        long result = 0;
        int b = first;
        for (int shift = 0; shift < 64; shift += 7) {
            if (b < 0) {
                throw new EOFException();
            }
            result |= (long) (b & 0x7F) << shift;
            if ((b & 0x80) == 0) {
                return result;
            }
            b = in.read();
        }
        return -1; // longer than 10 bytes: no valid length or tag
    }

    private static int varintSize(long value) {
        int n = 1;
        while ((value & ~0x7FL) != 0) {
            value >>>= 7;
            n++;
        }
        return n;
    }
}
