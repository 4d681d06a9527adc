package dev.tandem.trace;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnknownFieldSet;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A Perfetto trace decoded by protobuf-java's generic wire-format parser ({@link UnknownFieldSet}),
 * independently of the writer's code, with the field numbers of Perfetto's protos
 * (protos/perfetto/trace/trace_packet.proto, track_event/track_event.proto,
 * track_event/track_descriptor.proto, track_event/counter_descriptor.proto,
 * track_event/debug_annotation.proto, interned_data/interned_data.proto). Slices are formed the
 * way the trace processor forms them: per track, BEGIN and END events in timestamp order
 * (ties in file order) nest like a call stack. Interned names are resolved per packet sequence
 * and must be defined before (or in the packet of) their first use.
 */
final class DecodedTrace {
    record Track(long uuid, Long parent, String name, boolean counter, Long unit, Long rank, Long childOrdering) {}

    record Slice(long track, long start, long end, String category, String name, Map<String, Object> args,
            List<Long> flows, List<Long> terminatingFlows) {}

    record Instant(long track, long time, String category, String name, Map<String, Object> args, List<Long> flows,
            List<Long> terminatingFlows) {}

    record CounterValue(long time, long value) {}

    /** A track event as written, before slices are formed. */
    private record RawEvent(int order, long time, long type, long track, String category, String name,
            Map<String, Object> args, List<Long> flows, List<Long> terminatingFlows, Long counterValue) {}

    final List<UnknownFieldSet> packets = new ArrayList<>();
    final Map<Long, Track> tracks = new LinkedHashMap<>();
    final List<Slice> slices = new ArrayList<>();
    final List<Instant> instants = new ArrayList<>();
    final Map<Long, List<CounterValue>> counters = new HashMap<>();
    long firstPacketFlags;

    static DecodedTrace read(Path file) throws IOException {
        return decode(Files.readAllBytes(file));
    }

    static DecodedTrace decode(byte[] bytes) throws IOException {
        DecodedTrace trace = new DecodedTrace();
        UnknownFieldSet root = UnknownFieldSet.parseFrom(bytes);
        assertThat(root.asMap().keySet()).as("a Trace holds only packets (field 1)").containsOnly(1);
        Map<Long, Map<Integer, Map<Long, String>>> interned = new HashMap<>();
        List<RawEvent> raw = new ArrayList<>();
        int order = 0;
        for (ByteString bs : root.getField(1).getLengthDelimitedList()) {
            UnknownFieldSet packet = UnknownFieldSet.parseFrom(bs);
            trace.packets.add(packet);
            long sequence = single(packet, 10);
            assertThat(sequence).as("trusted_packet_sequence_id of packet %d", order).isPositive();
            long flags = packet.hasField(13) ? single(packet, 13) : 0;
            if (order == 0) {
                trace.firstPacketFlags = flags;
            }
            Map<Integer, Map<Long, String>> tables = interned.computeIfAbsent(sequence, k -> new HashMap<>());
            if ((flags & 1) != 0) {
                tables.clear();
            }
            if (packet.hasField(12)) {
                UnknownFieldSet data = message(packet, 12);
                for (int field : new int[] {1, 2, 3}) {
                    if (!data.hasField(field)) {
                        continue;
                    }
                    for (ByteString entryBytes : data.getField(field).getLengthDelimitedList()) {
                        UnknownFieldSet entry = UnknownFieldSet.parseFrom(entryBytes);
                        long iid = single(entry, 1);
                        String name = string(entry, 2);
                        String before = tables.computeIfAbsent(field, k -> new HashMap<>()).putIfAbsent(iid, name);
                        assertThat(before == null || before.equals(name))
                                .as("interned field %d iid %d redefined: %s then %s", field, iid, before, name).isTrue();
                    }
                }
            }
            if (packet.hasField(60)) {
                UnknownFieldSet d = message(packet, 60);
                long uuid = single(d, 1);
                Track track = new Track(uuid, d.hasField(5) ? single(d, 5) : null, d.hasField(2) ? string(d, 2) : null,
                        d.hasField(8), d.hasField(8) && message(d, 8).hasField(3) ? single(message(d, 8), 3) : null,
                        d.hasField(12) ? single(d, 12) : null, d.hasField(11) ? single(d, 11) : null);
                assertThat(trace.tracks.put(uuid, track)).as("track %d described twice", uuid).isNull();
            }
            if (packet.hasField(11)) {
                assertThat(packet.hasField(8)).as("a track event packet has a timestamp").isTrue();
                UnknownFieldSet e = message(packet, 11);
                long type = single(e, 9);
                long track = single(e, 11);
                assertThat(trace.tracks).as("track %d of packet %d is described before use", track, order)
                        .containsKey(track);
                String category = null;
                if (e.hasField(3)) {
                    assertThat((flags & 2) != 0).as("a packet using interned data says so").isTrue();
                    category = lookup(tables, 1, single(e, 3));
                }
                String name = e.hasField(10) ? lookup(tables, 2, single(e, 10)) : e.hasField(23) ? string(e, 23) : null;
                Map<String, Object> args = new LinkedHashMap<>();
                if (e.hasField(4)) {
                    for (ByteString a : e.getField(4).getLengthDelimitedList()) {
                        UnknownFieldSet annotation = UnknownFieldSet.parseFrom(a);
                        String key = lookup(tables, 3, single(annotation, 1));
                        Object value = annotation.hasField(4) ? (Object) single(annotation, 4)
                                : annotation.hasField(2) ? (Object) (single(annotation, 2) != 0)
                                : annotation.hasField(6) ? string(annotation, 6) : null;
                        args.put(key, value);
                    }
                }
                List<Long> flows = e.hasField(47) ? e.getField(47).getFixed64List() : List.of();
                List<Long> terminating = e.hasField(48) ? e.getField(48).getFixed64List() : List.of();
                Long counter = e.hasField(30) ? single(e, 30) : null;
                raw.add(new RawEvent(order, single(packet, 8), type, track, category, name, args, flows, terminating,
                        counter));
            }
            order++;
        }
        trace.formSlices(raw);
        return trace;
    }

    private void formSlices(List<RawEvent> raw) {
        Map<Long, List<RawEvent>> byTrack = new HashMap<>();
        for (RawEvent e : raw) {
            byTrack.computeIfAbsent(e.track(), k -> new ArrayList<>()).add(e);
        }
        for (List<RawEvent> events : byTrack.values()) {
            events.sort(Comparator.comparingLong(RawEvent::time).thenComparingInt(RawEvent::order));
            Deque<RawEvent> open = new ArrayDeque<>();
            for (RawEvent e : events) {
                switch ((int) e.type()) {
                    case 1 -> open.push(e);
                    case 2 -> {
                        assertThat(open).as("END on track %d at %d closes an open slice", e.track(), e.time())
                                .isNotEmpty();
                        RawEvent begin = open.pop();
                        slices.add(new Slice(e.track(), begin.time(), e.time(), begin.category(), begin.name(),
                                begin.args(), begin.flows(), begin.terminatingFlows()));
                    }
                    case 3 -> instants.add(new Instant(e.track(), e.time(), e.category(), e.name(), e.args(), e.flows(),
                            e.terminatingFlows()));
                    case 4 -> {
                        assertThat(tracks.get(e.track()).counter()).as("counter event on a counter track").isTrue();
                        counters.computeIfAbsent(e.track(), k -> new ArrayList<>())
                                .add(new CounterValue(e.time(), e.counterValue()));
                    }
                    default -> throw new AssertionError("unknown track event type " + e.type());
                }
            }
            assertThat(open).as("slices left open").isEmpty();
        }
    }

    Track trackNamed(String name) {
        return tracks.values().stream().filter(t -> name.equals(t.name())).findFirst()
                .orElseThrow(() -> new AssertionError("no track named " + name + " in " + tracks.values()));
    }

    List<Slice> slicesOn(String trackName) {
        long uuid = trackNamed(trackName).uuid();
        return slices.stream().filter(s -> s.track() == uuid).sorted(Comparator.comparingLong(Slice::start)).toList();
    }

    List<Instant> instantsOn(String trackName) {
        long uuid = trackNamed(trackName).uuid();
        return instants.stream().filter(s -> s.track() == uuid).sorted(Comparator.comparingLong(Instant::time)).toList();
    }

    List<CounterValue> counter(String name) {
        return counters.getOrDefault(trackNamed(name).uuid(), List.of());
    }

    private static String lookup(Map<Integer, Map<Long, String>> tables, int field, long iid) {
        String name = tables.getOrDefault(field, Map.of()).get(iid);
        assertThat(name).as("interned field %d iid %d is defined before use", field, iid).isNotNull();
        return name;
    }

    private static long single(UnknownFieldSet set, int field) {
        assertThat(set.hasField(field)).as("field %d present", field).isTrue();
        List<Long> varints = set.getField(field).getVarintList();
        assertThat(varints).as("field %d is one varint", field).hasSize(1);
        return varints.getFirst();
    }

    private static UnknownFieldSet message(UnknownFieldSet set, int field) throws IOException {
        return UnknownFieldSet.parseFrom(set.getField(field).getLengthDelimitedList().getFirst());
    }

    private static String string(UnknownFieldSet set, int field) {
        return set.getField(field).getLengthDelimitedList().getFirst().toStringUtf8();
    }
}
