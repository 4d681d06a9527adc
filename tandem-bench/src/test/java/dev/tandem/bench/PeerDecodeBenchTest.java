package dev.tandem.bench;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.bench.trace.TraceAnalysis;
import dev.tandem.llm.EmbeddedModel;
import dev.tandem.llm.model.KvType;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PeerDecodeBenchTest {

    @Test
    void theWarmTraceReportsOnlyTheMeasuredRequests(@TempDir Path dir) {
        Path trace = dir.resolve("warm.trace");
        PeerDecodeBench.TracedRun run =
                PeerDecodeBench.tracedWarmRun(EmbeddedModel.resolve(EmbeddedModel.NAME), 2, 12, 2, 0, trace,
                        KvType.F16);

        assertThat(trace).isRegularFile();
        assertThat(run.tokensPerSecond()).isPositive();
        TraceAnalysis.Report report = run.report();
        // The load and the warm-up request are in the file but not in the report.
        assertThat(report.requests()).hasSize(2);
        assertThat(report.requests()).allSatisfy(r -> {
            assertThat(r.status()).isEqualTo("COMPLETED");
            assertThat(r.tokens()).isEqualTo(12);
        });
        assertThat(report.tasks()).isPositive();
        assertThat(report.deviceBusy()).isGreaterThan(0).isLessThanOrEqualTo(1);
        assertThat(report.runMs()).isPositive();
    }

    @Test
    void theWarmTraceFileHoldsTheWarmUpRequestsToo(@TempDir Path dir) throws Exception {
        Path trace = dir.resolve("warm.trace");
        PeerDecodeBench.tracedWarmRun(EmbeddedModel.resolve(EmbeddedModel.NAME), 1, 4, 1, 200_000_000L, trace,
                KvType.F32);

        var file = dev.tandem.bench.trace.PerfettoTraceReader.read(trace);
        long requests = file.events().stream().filter(e -> e.kind() == dev.tandem.TraceEvent.Kind.REQUEST).count();
        assertThat(requests).isGreaterThanOrEqualTo(2);
        assertThat(Files.size(trace)).isPositive();
    }

    @Test
    void aRowCarriesTheHeapBytesAllocatedPerBatchOneToken() {
        PeerDecodeBench.Row row = PeerDecodeBench.run("embedded", EmbeddedModel.resolve(EmbeddedModel.NAME), 2, 8, 1,
                false, 0, KvType.F16);

        // Every step builds its tasks on the heap, so a token allocates something; a count of
        // zero would mean the JVM's counter was not read.
        assertThat(row.heapBytesPerToken()).isPositive().isFinite();
        assertThat(row.toJson()).containsEntry("tandem_heap_bytes_per_token", row.heapBytesPerToken());
        assertThat(row.tandemRa2()).isPositive();
        // Batch 8 by steps leaves out the session, the memory and the prompt that a whole request counts.
        assertThat(row.tandemBatch8()).isPositive().isFinite().isGreaterThan(row.tandemBatch8Request());
        assertThat(row.toJson()).containsEntry("tandem_batch_8_tokens_per_s", row.tandemBatch8())
                .containsEntry("tandem_batch_8_request_tokens_per_s", row.tandemBatch8Request());
        // Prompt processing is measured without the peer too; its peer figure and ratio are absent.
        assertThat(row.tandemPrompt()).isPositive().isFinite();
        assertThat(row.toJson()).containsEntry("tandem_prompt_tokens_per_s", row.tandemPrompt())
                .containsEntry("prompt_tokens", PeerDecodeBench.PROMPT_TOKENS)
                .containsEntry("llamacpp_prompt_tokens_per_s", null).containsEntry("prompt_ratio", null);
        // The machine's load while the row ran (Linux reports it), so a reader sees a busy machine's rows.
        assertThat(row.loadAverage()).isFinite().isNotNegative();
        assertThat(row.toJson()).containsEntry("load_average_1m_max", row.loadAverage());
    }

    @Test
    void aRowIsBusyWhenTheLoadIsWellAboveTheBenchsCores() {
        assertThat(PeerDecodeBench.maxOf(Double.NaN, 1.25)).isEqualTo(1.25);
        assertThat(PeerDecodeBench.maxOf(1.25, 0.5)).isEqualTo(1.25);
        assertThat(PeerDecodeBench.maxOf(1.25, 3.5)).isEqualTo(3.5);
        assertThat(PeerDecodeBench.maxOf(Double.NaN, -1)).isNaN(); // the OS gives no load average
        assertThat(PeerDecodeBench.maxOf(2.0, -1)).isEqualTo(2.0);
        assertThat(rowAtLoad(3.0).busy(2)).isFalse(); // 1.5 x 2 cores: the bench itself
        assertThat(rowAtLoad(3.01).busy(2)).isTrue();
        assertThat(rowAtLoad(20).busy(16)).isFalse();
        assertThat(rowAtLoad(Double.NaN).busy(2)).isFalse();
        assertThat(rowAtLoad(Double.NaN).toJson()).containsEntry("load_average_1m_max", null);
    }

    private static PeerDecodeBench.Row rowAtLoad(double load) {
        return new PeerDecodeBench.Row("m", "Q8_0", 1, 1, 1, 1, 1, 1, 1, 1, 0.9, 10, Double.NaN, "none", 1, Double.NaN,
                new WarmUp.Result(1, 1, 0, true), load);
    }
}
