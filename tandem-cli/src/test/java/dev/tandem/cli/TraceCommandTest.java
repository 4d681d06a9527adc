package dev.tandem.cli;

import static dev.tandem.Access.readWrite;
import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.Buffer;
import dev.tandem.CpuDeviceConfig;
import dev.tandem.Kernel;
import dev.tandem.Program;
import dev.tandem.Token;
import dev.tandem.TokenStream;
import dev.tandem.TraceConfig;
import dev.tandem.Worker;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@code tandem trace report}: its output on a real trace, and a one-line error with exit 2 on every bad input. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TraceCommandTest {
    @TempDir
    static Path dir;

    static Path trace;

    static final Kernel ADD = Kernel.of("add", c -> {
        var s = c.region(0);
        s.set(ValueLayout.JAVA_INT, 0, s.get(ValueLayout.JAVA_INT, 0) + 1);
    });

    record Run(int exit, String out, String err) {
        List<String> outLines() {
            return out.lines().toList();
        }
    }

    static Run tandem(String... args) {
        CliRun.Run run = CliRun.execute(args);
        return new Run(run.exitCode(), run.out(), run.err());
    }

    static void traceRun(Path file, int steps) {
        try (Worker worker = Worker.builder().device(CpuDeviceConfig.withCores(2)).trace(TraceConfig.toFile(file)).build()) {
            Program<Integer> program = (o, n) -> {
                Buffer token = o.allocate(ValueLayout.JAVA_INT, 1);
                for (int i = 0; i < n; i++) {
                    o.submit(ADD, readWrite(token));
                    o.endStep(token.region());
                }
            };
            List<TokenStream> streams = List.of(worker.run(program, steps), worker.run(program, steps));
            for (TokenStream stream : streams) {
                for (Token ignored : stream) {
                    // take every token
                }
                stream.completion().join();
            }
        }
    }

    @BeforeAll
    static void writeATrace() {
        trace = dir.resolve("run.pftrace");
        traceRun(trace, 20);
    }

    @Test
    void reportsPerRequestAndOverallFiguresWithJsonLastAndAPicture() throws IOException {
        Path png = dir.resolve("run.png");
        Run run = tandem("trace", "report", trace.toString(), "--json", "--png", png.toString());
        assertThat(run.exit()).as(run.err()).isZero();
        assertThat(run.err()).isEmpty();
        assertThat(run.out()).contains("2 requests", "token-parallel", "request-parallel", "S||S", "device busy",
                "bubbles");
        assertThat(run.outLines()).anyMatch(l -> l.matches(" +1 +COMPLETED +20 .*"));
        String last = run.outLines().getLast();
        assertThat(last).startsWith("{").endsWith("}").contains("\"token_parallel_ms\":", "\"request_parallel_ms\":",
                "\"s_parallel_ms\":", "\"device_busy\":", "\"bubble_ms\":", "\"requests\":[{\"request\":1,",
                "\"kernels\":[{\"name\":", "\"idle\":[{\"after\":");
        assertThat(run.outLines()).as("the kernel table: a row per kernel, the readback among them")
                .anyMatch(l -> l.matches("kernel +spans +busy ms +of busy +alone ms +of run"))
                .anyMatch(l -> l.matches("tandem\\.readback +\\d+ +[\\d.]+ +[\\d.]+% +[\\d.]+ +[\\d.]+%"));
        assertThat(run.outLines()).as("the idle table: a row per pair of kernels around a core's gaps")
                .anyMatch(l -> l.matches("core idle after -> before +gaps +idle ms +of idle +us/gap +long ms"))
                .anyMatch(l -> l.matches("\\S+ -> \\S+ +\\d+ +[\\d.]+ +[\\d.]+% +[\\d.]+ +[\\d.]+"));
        BufferedImage image = ImageIO.read(png.toFile());
        assertThat(image.getWidth()).isEqualTo(1600);
    }

    @Test
    void aTraceCutShortStillReportsWhatItHolds() throws IOException {
        byte[] whole = Files.readAllBytes(trace);
        Path cut = dir.resolve("cut.pftrace");
        Files.write(cut, Arrays.copyOf(whole, whole.length - 7));
        Run run = tandem("trace", "report", cut.toString(), "--json");
        assertThat(run.exit()).as(run.err()).isZero();
        assertThat(run.out()).contains("note: the file is cut short at byte " + (whole.length - 7));
        assertThat(run.outLines().getLast()).startsWith("{\"file\":").contains("\"damage\":\"cut short");
    }

    @Test
    void badInputIsOneLineAndExitTwo() throws IOException {
        Path empty = Files.createFile(dir.resolve("empty.pftrace"));
        Path text = dir.resolve("notes.txt");
        Files.writeString(text, "hello, trace\n");
        Path stub = dir.resolve("stub.pftrace");
        Files.write(stub, Arrays.copyOf(Files.readAllBytes(trace), 9));
        Path noTasks = dir.resolve("no-tasks.pftrace");
        try (Worker worker = Worker.builder().device(CpuDeviceConfig.withCores(1)).trace(TraceConfig.toFile(noTasks)).build()) {
            worker.run((o, in) -> { }, 0).completion().join();
        }
        record Case(String file, String message) {}
        List<Case> cases = List.of(
                new Case(dir.resolve("missing.pftrace").toString(), "does not exist"),
                new Case(empty.toString(), "is empty"),
                new Case(text.toString(), "is not a Perfetto trace"),
                new Case(stub.toString(), "holds no complete Perfetto packet"),
                new Case(noTasks.toString(), "holds no tasks"));
        for (Case c : cases) {
            Run run = tandem("trace", "report", c.file());
            assertThat(run.exit()).as("exit of %s", c.file()).isEqualTo(2);
            assertThat(run.err().lines().toList()).as("stderr of %s", c.file()).hasSize(1);
            assertThat(run.err()).startsWith("tandem: " + c.file()).contains(c.message()).doesNotContain("Exception");
        }
    }
}
