package dev.tandem.bench.peers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class ForkJoinPeerTest {

    static Stream<Arguments> dags() {
        return Stream.of(
                Arguments.of(SyntheticDag.chain(10_000), 2),
                Arguments.of(SyntheticDag.fanout(10_000), 2),
                Arguments.of(SyntheticDag.random(10_000, 42), 2),
                Arguments.of(SyntheticDag.random(10_000, 42), 1));
    }

    @ParameterizedTest(name = "{0} on {1} threads")
    @MethodSource("dags")
    void runsEveryTaskAfterAllItsPredecessorsFinished(SyntheticDag dag, int threads) {
        ForkJoinPeer.ExecutionRecord record = ForkJoinPeer.runRecording(dag, threads);

        for (int task = 0; task < dag.taskCount(); task++) {
            int started = record.started()[task];
            assertThat(started).as("task %d of %s ran", task, dag).isNotNegative();
            assertThat(record.finished()[task]).as("task %d finished after it started", task).isGreaterThan(started);
            for (int predecessor : dag.predecessors(task)) {
                assertThat(record.finished()[predecessor])
                        .as("task %d started at %d, so its predecessor %d must have finished before", task, started,
                                predecessor)
                        .isLessThan(started);
            }
        }
    }

    @Test
    void reportsAPositiveFigurePerTask() {
        double nsPerTask = ForkJoinPeer.nsPerTask(SyntheticDag.random(2_000, 3), 2, 2);

        assertThat(nsPerTask).isPositive().isFinite();
    }

    @Test
    void rejectsNonsenseArguments() {
        SyntheticDag dag = SyntheticDag.chain(10);

        assertThatThrownBy(() -> ForkJoinPeer.nsPerTask(dag, 0, 1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> ForkJoinPeer.nsPerTask(dag, 1, 0)).isInstanceOf(IllegalArgumentException.class);
    }
}
