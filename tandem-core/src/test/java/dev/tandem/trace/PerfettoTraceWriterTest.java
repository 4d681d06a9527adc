package dev.tandem.trace;

import static dev.tandem.Access.readWrite;
import static dev.tandem.Access.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnknownFieldSet;
import dev.tandem.Buffer;
import dev.tandem.CpuDeviceConfig;
import dev.tandem.Kernel;
import dev.tandem.Program;
import dev.tandem.Status;
import dev.tandem.Token;
import dev.tandem.TokenStream;
import dev.tandem.TraceConfig;
import dev.tandem.TraceEvent;
import dev.tandem.TraceEvent.Kind;
import dev.tandem.Worker;
import dev.tandem.trace.DecodedTrace.CounterValue;
import dev.tandem.trace.DecodedTrace.Instant;
import dev.tandem.trace.DecodedTrace.Slice;
import java.io.UncheckedIOException;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PerfettoTraceWriterTest {

    @TempDir
    Path dir;

    /** A device of {@code cores} parked cores with fixed samples. */
    private record FixedProbe(int cores, long ready, long bytes) implements DeviceProbe {
        @Override
        public int coreCount() {
            return cores;
        }

        @Override
        public boolean coreParked(int index) {
            return true;
        }

        @Override
        public long readyTasks() {
            return ready;
        }

        @Override
        public long bytesInUse() {
            return bytes;
        }
    }

    /**
     * One request, one step of two tasks on two cores, its token delivered and taken. Times are
     * small made-up numbers; every packet, track, span, flow and counter is checked.
     */
    @Test
    void eventsBecomeTracksSpansFlowsAndCountersThatAnIndependentDecoderReads() throws Exception {
        TraceRecorder recorder = new TraceRecorder(false, false);
        TraceBuffer core0 = recorder.newBuffer();
        TraceBuffer core1 = recorder.newBuffer();
        TraceBuffer host = recorder.newBuffer();
        recorder.recordShared(Kind.REQUEST_STARTED, 1000, 1100, TraceEvent.HOST, 1, -1, -1, null, 0);
        host.record(Kind.PUBLISH, 1200, 1200, TraceEvent.HOST, 1, 0, -1, null, 2);
        host.record(Kind.STEP_BUILD, 1100, 1300, TraceEvent.HOST, 1, 0, 0, null, 2);
        core0.record(Kind.TASK, 1250, 1400, 0, 1, 0, 0, "matmul", 0);
        core1.record(Kind.TASK, 1350, 1500, 1, 1, 0, 1, "readback", 0);
        recorder.recordShared(Kind.STEP_DONE, 1500, 1500, TraceEvent.OTHER, 1, 0, -1, null, 0);
        recorder.recordShared(Kind.TOKEN_DELIVERED, 1510, 1510, TraceEvent.OTHER, 1, 0, -1, null, 1);
        recorder.recordShared(Kind.TOKEN_TAKEN, 1600, 1600, TraceEvent.OTHER, 1, 0, -1, null, 1);
        recorder.recordShared(Kind.REQUEST, 1000, 1700, TraceEvent.OTHER, 1, -1, -1, null, Status.COMPLETED.ordinal());

        Path file = dir.resolve("synthetic.pftrace");
        PerfettoTraceWriter writer = new PerfettoTraceWriter(recorder, new FixedProbe(2, 3, 4096), file, "w", 7, 1_000_000);
        writer.start();
        writer.close();
        DecodedTrace trace = DecodedTrace.read(file);

        assertThat(trace.firstPacketFlags & 1).as("the first packet clears the sequence's incremental state").isOne();
        var root = trace.trackNamed("tandem w");
        assertThat(root.parent()).isNull();
        assertThat(root.childOrdering()).as("explicit child ordering").isEqualTo(3);
        long requests = trace.trackNamed("requests").uuid();
        long device = trace.trackNamed("device: 2 cores").uuid();
        long counters = trace.trackNamed("counters").uuid();
        assertThat(trace.trackNamed("core 0").parent()).isEqualTo(device);
        assertThat(trace.trackNamed("core 1").parent()).isEqualTo(device);
        assertThat(trace.trackNamed("request 1").parent()).isEqualTo(requests);
        assertThat(trace.trackNamed("request 1 stream").parent()).isEqualTo(trace.trackNamed("request 1").uuid());
        for (String name : List.of("ready tasks", "busy cores", "active requests", "bytes in use")) {
            assertThat(trace.trackNamed(name).counter()).as(name).isTrue();
            assertThat(trace.trackNamed(name).parent()).isEqualTo(counters);
        }
        assertThat(trace.trackNamed("bytes in use").unit()).as("UNIT_SIZE_BYTES").isEqualTo(3);
        assertThat(trace.trackNamed("busy cores").unit()).as("UNIT_COUNT").isEqualTo(2);

        Slice matmul = single(trace.slicesOn("core 0"));
        assertThat(matmul).extracting(Slice::start, Slice::end, Slice::category, Slice::name)
                .containsExactly(1250L, 1400L, "tandem.task", "matmul");
        assertThat(matmul.args()).isEqualTo(Map.of("request", 1L, "step", 0L, "task", 0L));
        Slice readback = single(trace.slicesOn("core 1"));
        assertThat(readback).extracting(Slice::start, Slice::end, Slice::name).containsExactly(1350L, 1500L, "readback");
        assertThat(readback.args()).isEqualTo(Map.of("request", 1L, "step", 0L, "task", 1L));

        List<Slice> onRequest = trace.slicesOn("request 1");
        assertThat(onRequest).hasSize(2);
        Slice queued = onRequest.get(0);
        assertThat(queued).extracting(Slice::start, Slice::end, Slice::category, Slice::name)
                .containsExactly(1000L, 1100L, "tandem.request_started", "queued");
        Slice build = onRequest.get(1);
        assertThat(build).extracting(Slice::start, Slice::end, Slice::category, Slice::name)
                .containsExactly(1100L, 1300L, "tandem.step_build", "step 0 (2 tasks)");
        assertThat(build.args()).isEqualTo(Map.of("request", 1L, "step", 0L, "tasks", 2L, "first_task", 0L));

        List<Instant> requestInstants = trace.instantsOn("request 1");
        assertThat(requestInstants).extracting(Instant::time, Instant::category, Instant::name)
                .containsExactly(tuple(1200L, "tandem.publish", "publish"),
                        tuple(1510L, "tandem.token_delivered", "token"));
        assertThat(requestInstants.get(0).args()).isEqualTo(Map.of("request", 1L, "step", 0L, "tasks", 2L));
        Instant token = requestInstants.get(1);
        assertThat(token.args()).isEqualTo(Map.of("request", 1L, "step", 0L, "seq", 1L));

        // Flows: the build starts one to each task and one to the token; each ends where it should.
        assertThat(build.flows()).hasSize(3).doesNotHaveDuplicates();
        assertThat(build.terminatingFlows()).isEmpty();
        assertThat(matmul.terminatingFlows()).containsExactly(build.flows().get(0));
        assertThat(readback.terminatingFlows()).containsExactly(build.flows().get(1));
        assertThat(token.terminatingFlows()).containsExactly(build.flows().get(2));

        Slice request = single(trace.slicesOn("request 1 stream"));
        assertThat(request).extracting(Slice::start, Slice::end, Slice::category, Slice::name)
                .containsExactly(1000L, 1700L, "tandem.request", "request");
        assertThat(request.args()).isEqualTo(Map.of("request", 1L, "status", "COMPLETED"));
        assertThat(trace.instantsOn("request 1 stream")).extracting(Instant::time, Instant::name)
                .containsExactly(tuple(1500L, "step done"),
                        tuple(1600L, "taken"));
        assertThat(trace.instantsOn("request 1 stream").get(1).args())
                .isEqualTo(Map.of("request", 1L, "step", 0L, "seq", 1L));

        assertThat(trace.counter("busy cores")).containsExactly(new CounterValue(1250, 1), new CounterValue(1350, 2),
                new CounterValue(1400, 1), new CounterValue(1500, 0));
        assertThat(trace.counter("active requests")).containsExactly(new CounterValue(1100, 1), new CounterValue(1700, 0));
        assertThat(trace.counter("ready tasks")).extracting(CounterValue::value).containsOnly(3L);
        assertThat(trace.counter("bytes in use")).extracting(CounterValue::value).containsOnly(4096L);
    }

    /** A device whose cores' parked flags the test sets. */
    private static final class SettableProbe implements DeviceProbe {
        final boolean[] parked;

        SettableProbe(int cores) {
            parked = new boolean[cores];
        }

        @Override
        public int coreCount() {
            return parked.length;
        }

        @Override
        public boolean coreParked(int index) {
            return parked[index];
        }

        @Override
        public long readyTasks() {
            return 0;
        }

        @Override
        public long bytesInUse() {
            return 0;
        }
    }

    /**
     * Core 0 keeps running, core 1 parks after one long task. A drain may emit busy-cores edges
     * only up to core 0's last recorded end (200): its next task may start any time after that,
     * so core 1's end at 400 waits. The counter in the file is then in time order and exact:
     * without the watermark, 400 would come before core 0's later task at 300.
     */
    @Test
    void theBusyCoresCounterWaitsForCoresThatMayStillRecordEarlierTasks() throws Exception {
        TraceRecorder recorder = new TraceRecorder(false, false);
        TraceBuffer core0 = recorder.newBuffer();
        TraceBuffer core1 = recorder.newBuffer();
        SettableProbe probe = new SettableProbe(2);
        Path file = dir.resolve("watermark.pftrace");
        PerfettoTraceWriter writer = new PerfettoTraceWriter(recorder, probe, file, "w", 1, 1_000_000);
        probe.parked[1] = true;
        core0.record(Kind.TASK, 100, 200, 0, 1, 0, 0, "a", 0);
        core1.record(Kind.TASK, 150, 400, 1, 2, 0, 0, "b", 0);
        writer.tick(false);
        core0.record(Kind.TASK, 300, 350, 0, 1, 1, 1, "a", 0);
        writer.tick(false);
        writer.close();
        DecodedTrace trace = DecodedTrace.read(file);
        List<CounterValue> busy = trace.counter("busy cores");
        assertThat(busy).containsExactly(new CounterValue(100, 1), new CounterValue(150, 2), new CounterValue(200, 1),
                new CounterValue(300, 2), new CounterValue(350, 1), new CounterValue(400, 0));
        assertThat(trace.packets.stream().filter(p -> p.hasField(11)).map(p -> p.getField(8).getVarintList().getFirst())
                .filter(ts -> ts == 400L).count()).as("core 1's task ended at 400 and the counter fell then").isEqualTo(2);
    }

    /**
     * A request's program thread records into its own buffer; once that thread has ended and
     * the writer has read the buffer, a streaming recorder lets it go (its events are in the
     * file), so a long run holds buffers only for live threads. A retaining recorder keeps it.
     */
    @Test
    void aStreamedBufferIsForgottenOnceItsThreadEndedAndItWasRead() throws Exception {
        for (boolean retain : new boolean[] {false, true}) {
            TraceRecorder recorder = new TraceRecorder(retain, false);
            TraceBuffer[] programs = new TraceBuffer[1];
            Thread program = Thread.ofVirtual().start(() -> {
                programs[0] = recorder.newBuffer();
                programs[0].record(Kind.STEP_BUILD, 10, 20, TraceEvent.HOST, 3, 0, 0, null, 1);
                programs[0].record(Kind.STEP_BUILD, 30, 40, TraceEvent.HOST, 3, 1, 1, null, 1);
            });
            program.join();
            Path file = dir.resolve("forget-" + retain + ".pftrace");
            PerfettoTraceWriter writer = new PerfettoTraceWriter(recorder, new FixedProbe(1, 0, 0), file, "w", 1,
                    1_000_000);
            assertThat(recorder.buffers()).contains(programs[0]);
            writer.tick(false);
            if (retain) {
                assertThat(recorder.buffers()).as("retained").contains(programs[0]);
            } else {
                assertThat(recorder.buffers()).as("streamed").doesNotContain(programs[0]);
            }
            writer.close();
            assertThat(DecodedTrace.read(file).slicesOn("request 3")).extracting(Slice::name)
                    .containsExactly("step 0 (1 task)", "step 1 (1 task)");
        }
    }

    @Test
    void aKernelNameIsInternedOnceHoweverManyTasksUseIt() throws Exception {
        TraceRecorder recorder = new TraceRecorder(false, false);
        TraceBuffer core = recorder.newBuffer();
        for (int i = 0; i < 100; i++) {
            core.record(Kind.TASK, 10L * i, 10L * i + 5, 0, 1, i, i, i % 2 == 0 ? "matmul" : "rmsnorm", 0);
        }
        Path file = dir.resolve("interned.pftrace");
        PerfettoTraceWriter writer = new PerfettoTraceWriter(recorder, new FixedProbe(1, 0, 0), file, "w", 1, 1_000_000);
        writer.start();
        writer.close();
        DecodedTrace trace = DecodedTrace.read(file);
        List<String> internedNames = new ArrayList<>();
        for (UnknownFieldSet packet : trace.packets) {
            if (packet.hasField(12) && UnknownFieldSet.parseFrom(packet.getField(12).getLengthDelimitedList().getFirst())
                    .hasField(2)) {
                UnknownFieldSet data = UnknownFieldSet.parseFrom(packet.getField(12).getLengthDelimitedList().getFirst());
                for (ByteString entry : data.getField(2).getLengthDelimitedList()) {
                    internedNames.add(UnknownFieldSet.parseFrom(entry).getField(2).getLengthDelimitedList().getFirst()
                            .toStringUtf8());
                }
            }
        }
        assertThat(internedNames).containsOnlyOnce("matmul", "rmsnorm");
        assertThat(trace.slicesOn("core 0")).hasSize(100);
        assertThat(trace.slicesOn("core 0")).extracting(Slice::name).containsOnly("matmul", "rmsnorm");
    }

    static final Kernel STEP = Kernel.of("step", c -> {
        var s = c.region(0);
        s.set(ValueLayout.JAVA_INT, 0, s.get(ValueLayout.JAVA_INT, 0) + 1);
    });
    static final Kernel COPY = Kernel.of("copy", c -> c.region(1).set(ValueLayout.JAVA_INT, 0,
            c.region(0).get(ValueLayout.JAVA_INT, 0)));

    @Test
    void aWorkerStreamsItsTraceWhileItRunsAndCloseFinishesTheFile() throws Exception {
        Path file = dir.resolve("worker.pftrace");
        List<TraceEvent> events;
        try (Worker worker = Worker.builder().device(CpuDeviceConfig.withCores(2))
                .trace(TraceConfig.toFile(file).withRetainEvents(true).withJfr(false)).build()) {
            Program<Integer> program = (o, steps) -> {
                Buffer state = o.allocate(ValueLayout.JAVA_INT, 1);
                Buffer token = o.allocate(ValueLayout.JAVA_INT, 1);
                for (int i = 0; i < steps; i++) {
                    o.submit(STEP, readWrite(state));
                    o.submit(STEP, readWrite(state));
                    o.submit(COPY, dev.tandem.Access.read(state), write(token));
                    o.endStep(token.region());
                }
            };
            List<TokenStream> streams = List.of(worker.run(program, 6), worker.run(program, 6));
            for (TokenStream stream : streams) {
                for (Token ignored : stream) {
                    // take every token
                }
                assertThat(stream.completion().join().status()).isEqualTo(Status.COMPLETED);
            }
            worker.close();
            events = worker.traceEvents();
        }
        DecodedTrace trace = DecodedTrace.read(file);

        List<TraceEvent> tasks = events.stream().filter(e -> e.kind() == Kind.TASK).toList();
        List<Slice> taskSlices = trace.slices.stream().filter(s -> "tandem.task".equals(s.category())).toList();
        assertThat(tasks).hasSize(2 * 6 * 4);
        assertThat(taskSlices).as("one span per task, with its kernel, request, step and task")
                .extracting(s -> s.start() + "/" + s.end() + "/" + s.name() + "/" + s.args().get("request") + "/"
                        + s.args().get("step") + "/" + s.args().get("task"))
                .containsExactlyInAnyOrderElementsOf(tasks.stream().map(e -> e.start() + "/" + e.end() + "/" + e.name()
                        + "/" + e.requestId() + "/" + e.step() + "/" + e.task()).toList());
        for (Slice s : taskSlices) {
            int core = (int) tasks.stream().filter(e -> e.start() == s.start() && e.end() == s.end()).findFirst()
                    .orElseThrow().thread();
            assertThat(trace.tracks.get(s.track()).name()).isEqualTo("core " + core);
        }

        List<Slice> builds = trace.slices.stream().filter(s -> "tandem.step_build".equals(s.category())).toList();
        assertThat(builds).hasSize(12);
        List<Instant> tokens = trace.instants.stream().filter(i -> "tandem.token_delivered".equals(i.category())).toList();
        assertThat(tokens).hasSize(12);
        Map<Long, Slice> taskByFlow = taskSlices.stream()
                .collect(Collectors.toMap(s -> s.terminatingFlows().getFirst(), s -> s));
        Set<Long> allFlows = new HashSet<>();
        for (Slice build : builds) {
            long request = (Long) build.args().get("request");
            long first = (Long) build.args().get("first_task");
            long count = (Long) build.args().get("tasks");
            assertThat(count).isEqualTo(4);
            assertThat(build.flows()).hasSize(5);
            allFlows.addAll(build.flows());
            for (int k = 0; k < count; k++) {
                Slice task = taskByFlow.get(build.flows().get(k));
                assertThat(task).as("flow %d of %s ends at a task", k, build.name()).isNotNull();
                assertThat(task.args()).containsEntry("request", request).containsEntry("task", first + k)
                        .containsEntry("step", build.args().get("step"));
                assertThat(task.start()).as("a task starts after its build began").isGreaterThan(build.start());
            }
            Instant token = single(tokens.stream()
                    .filter(t -> t.terminatingFlows().contains(build.flows().get(4))).toList());
            assertThat(token.args()).containsEntry("request", request).containsEntry("step", build.args().get("step"));
        }
        assertThat(allFlows).as("flow ids are unique").hasSize(12 * 5);

        List<CounterValue> busy = trace.counter("busy cores");
        assertThat(busy).isNotEmpty();
        assertThat(busy).extracting(CounterValue::value).allMatch(v -> v >= 0 && v <= 2);
        assertThat(busy.getLast().value()).isZero();
        assertThat(busy).extracting(CounterValue::time).isSorted();
        List<CounterValue> active = trace.counter("active requests");
        assertThat(active).extracting(CounterValue::value).allMatch(v -> v >= 0 && v <= 2);
        assertThat(active.getLast().value()).isZero();
        assertThat(trace.counter("bytes in use").getLast().value()).as("memory is back to 0 at the end").isZero();
    }

    @Test
    void aTraceFileThatCannotBeOpenedFailsTheBuildWithItsPath() {
        Path file = dir.resolve("no/such/dir/t.pftrace");
        assertThatThrownBy(() -> Worker.builder().device(CpuDeviceConfig.withCores(1)).trace(TraceConfig.toFile(file)).build())
                .isInstanceOf(UncheckedIOException.class).hasMessageContaining(file.toString());
    }

    @Test
    void spansAreJfrEventsWhenARecordingEnablesThem() throws Exception {
        Path jfrFile = dir.resolve("spans.jfr");
        List<TraceEvent> events;
        try (Recording recording = new Recording()) {
            recording.enable("dev.tandem.Task");
            recording.enable("dev.tandem.StepBuild");
            recording.enable("dev.tandem.TokenDelivered");
            recording.start();
            try (Worker worker = Worker.builder().device(CpuDeviceConfig.withCores(1)).trace(TraceConfig.inMemory()).build()) {
                Program<Integer> program = (o, steps) -> {
                    Buffer token = o.allocate(ValueLayout.JAVA_INT, 1);
                    for (int i = 0; i < steps; i++) {
                        o.submit(STEP, readWrite(token));
                        o.endStep(token.region());
                    }
                };
                TokenStream stream = worker.run(program, 3);
                for (Token ignored : stream) {
                    // take every token
                }
                stream.completion().join();
                worker.close();
                events = worker.traceEvents();
            }
            recording.stop();
            recording.dump(jfrFile);
        }
        List<RecordedEvent> recorded = RecordingFile.readAllEvents(jfrFile);
        List<RecordedEvent> tasks = recorded.stream().filter(e -> e.getEventType().getName().equals("dev.tandem.Task"))
                .toList();
        long traced = events.stream().filter(e -> e.kind() == Kind.TASK).count();
        assertThat(tasks).as("one JFR event per task span").hasSize((int) traced);
        assertThat(tasks).extracting(e -> e.getString("kernel")).containsOnly("step", "tandem.readback");
        assertThat(recorded.stream().filter(e -> e.getEventType().getName().equals("dev.tandem.StepBuild")).count())
                .isEqualTo(3);
        // Deliveries run on virtual threads, whose JFR buffers the file need not keep in time order.
        assertThat(recorded.stream().filter(e -> e.getEventType().getName().equals("dev.tandem.TokenDelivered"))
                .sorted(java.util.Comparator.comparing(RecordedEvent::getStartTime))
                .map(e -> e.getLong("sequence")).toList()).containsExactly(1L, 2L, 3L);
    }

    private static <T> T single(List<T> list) {
        assertThat(list).hasSize(1);
        return list.getFirst();
    }
}
