package dev.tandem.bench.trace;

import static dev.tandem.Access.read;
import static dev.tandem.Access.readWrite;
import static dev.tandem.Access.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tandem.Buffer;
import dev.tandem.CpuDeviceConfig;
import dev.tandem.Kernel;
import dev.tandem.Program;
import dev.tandem.Token;
import dev.tandem.TokenStream;
import dev.tandem.TraceConfig;
import dev.tandem.TraceEvent;
import dev.tandem.Worker;
import dev.tandem.bench.trace.PerfettoTraceReader.TraceFile;
import dev.tandem.bench.trace.PerfettoTraceReader.TraceFileException;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** A real worker's trace file read back: the same events as the worker kept in memory, and bad files refused. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PerfettoTraceReaderTest {
    @TempDir
    static Path dir;

    static Path traceFile;
    static List<TraceEvent> recorded;

    static final Kernel ADD = Kernel.of("add", c -> {
        var s = c.region(0);
        s.set(ValueLayout.JAVA_INT, 0, s.get(ValueLayout.JAVA_INT, 0) + 1);
    });
    static final Kernel COPY = Kernel.of("copy", c -> c.region(1).set(ValueLayout.JAVA_INT, 0,
            c.region(0).get(ValueLayout.JAVA_INT, 0)));

    @BeforeAll
    static void runATracedWorker() {
        traceFile = dir.resolve("run.pftrace");
        try (Worker worker = Worker.builder().device(CpuDeviceConfig.withCores(2))
                .trace(TraceConfig.toFile(traceFile).withRetainEvents(true)).build()) {
            Program<Integer> program = (o, steps) -> {
                Buffer a = o.allocate(ValueLayout.JAVA_INT, 1);
                Buffer b = o.allocate(ValueLayout.JAVA_INT, 1);
                Buffer token = o.allocate(ValueLayout.JAVA_INT, 1);
                for (int i = 0; i < steps; i++) {
                    o.submit(ADD, readWrite(a));
                    o.submit(ADD, readWrite(b));
                    o.submit(COPY, read(a), write(token));
                    o.endStep(token.region());
                }
            };
            List<TokenStream> streams = List.of(worker.run(program, 8), worker.run(program, 5), worker.run(program, 3));
            for (TokenStream stream : streams) {
                for (Token ignored : stream) {
                    // take every token
                }
                stream.completion().join();
            }
            worker.close();
            recorded = worker.traceEvents();
        }
    }

    private static String key(TraceEvent e) {
        return e.kind() + "@" + e.start() + "-" + e.end() + " t" + e.thread() + " r" + e.requestId() + " s" + e.step()
                + " k" + e.task() + " " + e.name() + " #" + e.count();
    }

    @Test
    void readsBackEveryEventTheWorkerRecorded() {
        TraceFile trace = PerfettoTraceReader.read(traceFile);
        assertThat(trace.damage()).isNull();
        assertThat(trace.unfinishedSpans()).isZero();
        assertThat(trace.cores()).isEqualTo(2);
        assertThat(trace.events()).extracting(PerfettoTraceReaderTest::key)
                .containsExactlyInAnyOrderElementsOf(recorded.stream().map(PerfettoTraceReaderTest::key).toList());
        assertThat(recorded).extracting(TraceEvent::kind).contains(TraceEvent.Kind.values());
    }

    @Test
    void theReportFromTheFileEqualsTheReportFromMemory() {
        TraceFile trace = PerfettoTraceReader.read(traceFile);
        TraceAnalysis.Report fromFile = TraceAnalysis.analyze(trace.events(), trace.cores());
        TraceAnalysis.Report fromMemory = TraceAnalysis.analyze(recorded, 2);
        assertThat(fromFile).usingRecursiveComparison().isEqualTo(fromMemory);
        assertThat(fromFile.requests()).extracting(TraceAnalysis.RequestReport::tokens).containsExactly(8, 5, 3);
        assertThat(fromFile.requests()).extracting(TraceAnalysis.RequestReport::status).containsOnly("COMPLETED");
    }

    @Test
    void aTraceCutShortReportsWhatItHolds() throws IOException {
        byte[] whole = Files.readAllBytes(traceFile);
        Path cut = dir.resolve("cut.pftrace");
        int cutAt = whole.length * 2 / 3 + 3;
        Files.write(cut, Arrays.copyOf(whole, cutAt));
        TraceFile trace = PerfettoTraceReader.read(cut);
        if (trace.damage() == null) {
            // The cut fell exactly between two packets (the file differs run to run); one byte
            // more is inside a packet, since every packet has at least a tag and a length byte.
            cutAt++;
            Files.write(cut, Arrays.copyOf(whole, cutAt));
            trace = PerfettoTraceReader.read(cut);
        }
        assertThat(trace.damage()).startsWith("cut short at byte " + cutAt);
        assertThat(trace.events()).isNotEmpty();
        assertThat(trace.events().size()).isLessThan(recorded.size());
        List<String> all = recorded.stream().map(PerfettoTraceReaderTest::key).toList();
        assertThat(trace.events()).extracting(PerfettoTraceReaderTest::key).isSubsetOf(all);
    }

    @Test
    void aMissingFileIsRefused() {
        Path missing = dir.resolve("missing.pftrace");
        assertThatThrownBy(() -> PerfettoTraceReader.read(missing)).isInstanceOf(TraceFileException.class)
                .hasMessage(missing + " does not exist");
    }

    @Test
    void anEmptyFileIsRefused() throws IOException {
        Path empty = Files.createFile(dir.resolve("empty.pftrace"));
        assertThatThrownBy(() -> PerfettoTraceReader.read(empty)).isInstanceOf(TraceFileException.class)
                .hasMessage(empty + " is empty (0 bytes): not a trace");
    }

    @Test
    void aDirectoryIsRefused() {
        assertThatThrownBy(() -> PerfettoTraceReader.read(dir)).isInstanceOf(TraceFileException.class)
                .hasMessageContaining("is a directory");
    }

    @Test
    void aFileThatIsNotAPerfettoTraceIsRefused() throws IOException {
        Path text = dir.resolve("notes.txt");
        Files.writeString(text, "these are not the packets you are looking for\n", StandardCharsets.UTF_8);
        assertThatThrownBy(() -> PerfettoTraceReader.read(text)).isInstanceOf(TraceFileException.class)
                .hasMessageStartingWith(text + " is not a Perfetto trace: field 14 of wire type 4 at byte 0");

        Path noise = dir.resolve("noise.bin");
        byte[] bytes = new byte[4096];
        new Random(3).nextBytes(bytes);
        bytes[0] = 0x0A; // looks like a packet for one byte
        bytes[1] = 0x40;
        Files.write(noise, bytes);
        assertThatThrownBy(() -> PerfettoTraceReader.read(noise)).isInstanceOf(TraceFileException.class)
                .hasMessageContaining("is not a Perfetto trace");
    }

    @Test
    void aFileCutInsideItsFirstPacketIsRefused() throws IOException {
        byte[] whole = Files.readAllBytes(traceFile);
        Path stub = dir.resolve("stub.pftrace");
        Files.write(stub, Arrays.copyOf(whole, 5));
        assertThatThrownBy(() -> PerfettoTraceReader.read(stub)).isInstanceOf(TraceFileException.class)
                .hasMessageContaining("holds no complete Perfetto packet");
    }
}
