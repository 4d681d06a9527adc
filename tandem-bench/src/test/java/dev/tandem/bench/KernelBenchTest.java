package dev.tandem.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The kernel bench's bookkeeping on a small matrix: one row per kernel, batch and thread count. No timing is asserted. */
class KernelBenchTest {

    @Test
    void everyKernelBatchAndThreadCountGetsAFiniteFigure() {
        KernelBench.Result r = KernelBench.run(1 << 20, 0, 2, new int[] {1, 2}, new int[] {1, 8});
        assertThat(r.rows()).hasSize(KernelBench.Kernel.values().length * 2 * 2);
        for (KernelBench.Row row : r.rows()) {
            assertThat(row.gbPerSecond()).as(row.toString()).isPositive().isFinite();
            assertThat(row.bestGbPerSecond()).as(row.toString()).isGreaterThanOrEqualTo(row.gbPerSecond());
            assertThat(row.fractionOfRead()).as(row.toString()).isEqualTo(row.gbPerSecond() / row.readGbPerSecond());
        }
        assertThat(r.readGbPerSecond()).containsOnlyKeys(1, 2);
        assertThat(Json.write(r.toJson())).contains("\"read_bandwidth\"", "\"fraction_of_read\"");
    }
}
