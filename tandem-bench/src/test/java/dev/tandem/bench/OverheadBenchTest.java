package dev.tandem.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The overhead bench's bookkeeping on small DAGs: one row per shape and core count. No timing is asserted. */
class OverheadBenchTest {

    @Test
    void everyShapeAndCoreCountGetsAFigurePerContenderAndIsTracedOnce() {
        List<String> traced = new ArrayList<>();
        List<OverheadBench.Row> rows = OverheadBench.run(300, new int[] {1, 2}, 2, 7, (shape, cores) -> {
            traced.add(shape + "/" + cores);
            return null; // asked for, then off: the count is what this checks
        }, 0); // the least warm-up: one round
        assertThat(rows).extracting(r -> r.shape() + "/" + r.cores())
                .containsExactly("chain/1", "chain/2", "fanout/1", "fanout/2", "random/1", "random/2");
        // One traced worker per row, the first timed round's: not one per round, each overwriting the last.
        assertThat(traced).containsExactly("chain/1", "chain/2", "fanout/1", "fanout/2", "random/1", "random/2");
        for (OverheadBench.Row row : rows) {
            assertThat(row.tandemNs()).as(row.toString()).isPositive().isFinite();
            assertThat(row.forkJoinNs()).as(row.toString()).isPositive().isFinite();
            assertThat(row.edges()).as(row.toString()).isPositive();
            if (row.tbbNs() == null) {
                assertThat(row.tbbNote()).as(row.toString()).isNotBlank(); // says why oneTBB is missing
            } else {
                assertThat(row.tbbNs()).as(row.toString()).isPositive().isFinite();
                assertThat(row.tbbNote()).as(row.toString()).isNull();
            }
        }
    }

    @Test
    void noRoundsIsRefusedWithTheCount() {
        assertThatThrownBy(() -> OverheadBench.run(300, new int[] {1}, 0, 7))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("rounds must be at least 1, got 0");
    }
}
