package dev.tandem.llm.reference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tandem.CpuDeviceConfig;
import dev.tandem.Outcome;
import dev.tandem.RunOptions;
import dev.tandem.Status;
import dev.tandem.Token;
import dev.tandem.TokenStream;
import dev.tandem.Worker;
import dev.tandem.kernels.Ops;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class PagedAttentionWorkloadTest {

    private static List<float[]> run(PagedAttentionWorkload workload, PagedAttentionWorkload.Readback readback,
            RunOptions options) {
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
            workload.load(worker);
            TokenStream stream = worker.run(workload.program(), readback, options);
            List<float[]> tokens = new ArrayList<>();
            for (Token token : stream) {
                tokens.add(PagedAttentionWorkload.floats(token.bytes()));
            }
            Outcome outcome = stream.completion().join();
            assertThat(outcome.status()).as("outcome %s", outcome).isEqualTo(Status.COMPLETED);
            assertThat(worker.memoryInUse()).isGreaterThan(0); // worker buffers only
            return tokens;
        }
    }

    private static void assertGolden(PagedAttentionWorkload workload) {
        PagedAttentionWorkload.Expected expected = workload.reference();
        int steps = workload.shape().steps();
        List<float[]> outputs = run(workload, PagedAttentionWorkload.Readback.OUTPUT, RunOptions.defaults());
        assertThat(outputs).hasSize(steps);
        for (int s = 0; s < steps; s++) {
            int at = PagedAttentionWorkload.firstMismatch(outputs.get(s), expected.outputs()[s]);
            assertThat(at).as("step %d output differs from the reference at %d: %s", s, at,
                    at < 0 ? "" : outputs.get(s)[at] + " vs " + expected.outputs()[s][at]).isEqualTo(-1);
        }
        List<float[]> digests = run(workload, PagedAttentionWorkload.Readback.DIGEST, RunOptions.serial());
        for (int s = 0; s < steps; s++) {
            assertThat(PagedAttentionWorkload.firstMismatch(digests.get(s), expected.digests()[s]))
                    .as("step %d digest %s vs reference %s", s, Arrays.toString(digests.get(s)),
                            Arrays.toString(expected.digests()[s]))
                    .isEqualTo(-1);
        }
    }

    @Test
    void oneSequenceThreeLayersOneLayerPerStepMatchesTheReference() {
        var shape = PagedAttentionWorkload.Shape.uniform(1, 16, 16, 16, 33, 3, 1, 1);
        assertGolden(new PagedAttentionWorkload(shape));
    }

    @Test
    void raggedBatchMatchesTheReference() {
        var shape = new PagedAttentionWorkload.Shape(16, 16, 16, new int[] {33, 64, 128, 15}, 3, 1, 2);
        assertGolden(new PagedAttentionWorkload(shape));
    }

    @Test
    void smallTilesAndChunksAndSeveralLayersPerStepMatchTheReference() {
        var shape = new PagedAttentionWorkload.Shape(6, 8, 4, new int[] {33, 64, 1, 15, 40}, 4, 2, 3);
        assertGolden(new PagedAttentionWorkload(shape, Ops.preferred(), 4, 2));
    }

    @Test
    void scalarKernelsMatchTheReferenceToo() {
        var shape = new PagedAttentionWorkload.Shape(4, 16, 16, new int[] {33, 64, 128, 15}, 2, 1, 4);
        assertGolden(new PagedAttentionWorkload(shape, Ops.scalar(), 128, 16));
    }

    @Test
    void longContextsSplitIntoPartitionsBesideShortOnesMatchTheReference() {
        // 16-position blocks: 256 positions a partition, so 1000 positions are 4 partitions, 2100 the
        // most (8, of 17 blocks each), 300 two, and 15 and 256 one, all in one chunk of rows.
        var shape = new PagedAttentionWorkload.Shape(4, 16, 16, new int[] {1000, 15, 2100, 256, 300}, 2, 1, 5);
        assertGolden(new PagedAttentionWorkload(shape));
        assertGolden(new PagedAttentionWorkload(shape, Ops.scalar(), 2, 3));
    }

    @Test
    void blockTablesAreNotContiguous() {
        var workload = new PagedAttentionWorkload(
                new PagedAttentionWorkload.Shape(16, 16, 16, new int[] {33, 64, 128, 15}, 1, 1, 2));
        int[] table = workload.blockTable(2);
        assertThat(table).hasSize(8);
        boolean contiguous = true;
        for (int j = 1; j < table.length; j++) {
            contiguous &= table[j] == table[j - 1] + 1;
        }
        assertThat(contiguous).as("block table %s", Arrays.toString(table)).isFalse();
    }

    @Test
    void impossibleShapesAreRejectedNamingTheField() {
        assertThatThrownBy(() -> new PagedAttentionWorkload.Shape(0, 16, 16, new int[] {1}, 1, 1, 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("heads = 0 must be >= 1");
        assertThatThrownBy(() -> new PagedAttentionWorkload.Shape(1, 16, 16, new int[] {4, 0}, 1, 1, 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("contexts[1] = 0 must be >= 1");
    }
}
