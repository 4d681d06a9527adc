package dev.tandem.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.CpuDeviceConfig;
import dev.tandem.Worker;
import dev.tandem.llm.BatcherConfig;
import dev.tandem.llm.EmbeddedModel;
import dev.tandem.llm.LanguageModel;
import dev.tandem.server.BatcherEngine;
import dev.tandem.server.ServerConfig;
import dev.tandem.server.TandemServer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The independent client, {@code bin/serve-load.py}, against a server on the embedded model:
 * closed-loop clients and open-loop arrivals each read every stream to its end and report what
 * they sent. Skipped where no {@code python3} runs (the bench reports the client missing there).
 */
@Timeout(120)
class ServeLoadScriptTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Path SCRIPT = Path.of("..", "bin", "serve-load.py").toAbsolutePath().normalize();
    private static Worker worker;
    private static BatcherEngine engine;
    private static TandemServer server;

    @BeforeAll
    static void start() {
        worker = Worker.create(CpuDeviceConfig.withCores(1));
        LanguageModel model = LanguageModel.load(worker, EmbeddedModel.path());
        engine = BatcherEngine.start(worker, model, BatcherConfig.builder().maxBatch(4).build());
        server = TandemServer.start(engine, ServerConfig.builder().port(0).build());
    }

    @AfterAll
    static void stop() {
        server.close();
        engine.close();
        worker.close();
    }

    private static JsonNode run(String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("python3", SCRIPT.toString(), "--url",
                "http://127.0.0.1:" + server.port(), "--tokens", "8"));
        command.addAll(List.of(args));
        Process p;
        try {
            p = new ProcessBuilder(command).redirectErrorStream(true).start();
        } catch (java.io.IOException e) {
            assumeTrue(false, "python3 does not run here: " + e.getMessage());
            throw e;
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out).isZero();
        return JSON.readTree(out.strip().lines().reduce((a, b) -> b).orElseThrow());
    }

    @Test
    void closedLoopClientsCompleteAndReportTheirLatencies() throws Exception {
        assumeTrue(Files.isRegularFile(SCRIPT), "no " + SCRIPT);
        JsonNode r = run("--clients", "2", "--seconds", "1");
        assertThat(r.path("clients").asInt()).isEqualTo(2);
        assertThat(r.path("errors").asInt()).isZero();
        assertThat(r.path("completions").asInt()).isGreaterThanOrEqualTo(2);
        assertThat(r.path("tokens").asLong()).isEqualTo(8L * r.path("completions").asInt());
        assertThat(r.path("ttft_p50_ms").asDouble()).isPositive();
    }

    /** Open loop: every arrival is sent and read to its end, however many are still running. */
    @Test
    void openLoopArrivalsAreAllSentAndRead() throws Exception {
        assumeTrue(Files.isRegularFile(SCRIPT), "no " + SCRIPT);
        JsonNode r = run("--rate", "8", "--seconds", "1.5", "--seed", "3");
        int requests = r.path("requests").asInt();
        assertThat(r.path("rate").asDouble()).isEqualTo(8.0);
        assertThat(requests).as("a Poisson count of mean 12").isBetween(2, 40);
        assertThat(r.path("errors").asInt()).isZero();
        assertThat(r.path("completions").asInt()).isEqualTo(requests);
        assertThat(r.path("tokens").asLong()).isEqualTo(8L * requests);
        assertThat(r.path("itl_p99_ms").asDouble()).isPositive();
        JsonNode again = run("--rate", "8", "--seconds", "1.5", "--seed", "3");
        assertThat(again.path("requests").asInt()).as("the same seed, the same arrivals").isEqualTo(requests);
    }

    @Test
    void aNegativeRateIsAUsageError() throws Exception {
        assumeTrue(Files.isRegularFile(SCRIPT), "no " + SCRIPT);
        Process p = new ProcessBuilder("python3", SCRIPT.toString(), "--url", "http://127.0.0.1:1", "--rate", "-1")
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor()).isEqualTo(2);
        assertThat(out).contains("--rate must be >= 0");
    }
}
