package dev.tandem.bench;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.bench.trace.TraceAnalysis;
import dev.tandem.llm.EmbeddedModel;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PeerDecodeBenchTest {

    @Test
    void theWarmTraceReportsOnlyTheMeasuredRequests(@TempDir Path dir) {
        Path trace = dir.resolve("warm.trace");
        PeerDecodeBench.TracedRun run =
                PeerDecodeBench.tracedWarmRun(EmbeddedModel.resolve(EmbeddedModel.NAME), 2, 12, 2, 0, trace);

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
        PeerDecodeBench.tracedWarmRun(EmbeddedModel.resolve(EmbeddedModel.NAME), 1, 4, 1, 200_000_000L, trace);

        var file = dev.tandem.bench.trace.PerfettoTraceReader.read(trace);
        long requests = file.events().stream().filter(e -> e.kind() == dev.tandem.TraceEvent.Kind.REQUEST).count();
        assertThat(requests).isGreaterThanOrEqualTo(2);
        assertThat(Files.size(trace)).isPositive();
    }

    @Test
    void aRowCarriesTheHeapBytesAllocatedPerBatchOneToken() {
        PeerDecodeBench.Row row = PeerDecodeBench.run("embedded", EmbeddedModel.resolve(EmbeddedModel.NAME), 2, 8, 1,
                false, 0);

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
    }
}
