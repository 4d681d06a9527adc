package dev.tandem.bench.peers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tandem.bench.peers.SyntheticDag.AccessMode;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

class SyntheticDagTest {

    // ---------------------------------------------------------------- reference inference, by hand

    @Test
    void readAfterWriteDependsOnTheLastWriter() {
        SyntheticDag dag = SyntheticDag.builder("raw", 1, 1)
                .task().write(0, 0) // 0
                .task().read(0, 0) // 1: RAW on 0
                .task().read(0, 0) // 2: RAW on 0, not on the reader 1
                .build();

        assertPredecessors(dag, new int[][] {{}, {0}, {0}});
    }

    @Test
    void writeAfterWriteDependsOnTheLastWriterOnly() {
        SyntheticDag dag = SyntheticDag.builder("waw", 1, 1)
                .task().write(0, 0) // 0
                .task().write(0, 0) // 1: WAW on 0
                .task().write(0, 0) // 2: WAW on 1, not on 0
                .build();

        assertPredecessors(dag, new int[][] {{}, {0}, {1}});
    }

    @Test
    void writeAfterReadsDependsOnEveryReaderSinceTheLastWrite() {
        SyntheticDag dag = SyntheticDag.builder("war", 1, 1)
                .task().read(0, 0) // 0: nothing written yet
                .task().read(0, 0) // 1
                .task().write(0, 0) // 2: WAR on 0 and 1
                .build();

        assertPredecessors(dag, new int[][] {{}, {}, {0, 1}});
    }

    @Test
    void aWriteClearsTheReaders() {
        SyntheticDag dag = SyntheticDag.builder("cleared", 1, 1)
                .task().write(0, 0) // 0
                .task().read(0, 0) // 1: RAW on 0
                .task().read(0, 0) // 2: RAW on 0
                .task().write(0, 0) // 3: WAW on 0, WAR on 1 and 2
                .task().read(0, 0) // 4: RAW on 3 only
                .task().write(0, 0) // 5: WAW on 3, WAR on 4; readers 1 and 2 were cleared by 3
                .build();

        assertPredecessors(dag, new int[][] {{}, {0}, {0}, {0, 1, 2}, {3}, {3, 4}});
        assertThat(dag.edgeCount()).isEqualTo(8);
    }

    @Test
    void readWriteDependsOnWriterAndReadersThenBecomesTheWriter() {
        SyntheticDag dag = SyntheticDag.builder("read-write", 1, 1)
                .task().readWrite(0, 0) // 0
                .task().readWrite(0, 0) // 1: on the writer 0
                .task().read(0, 0) // 2: RAW on 1
                .task().read(0, 0) // 3: RAW on 1
                .task().readWrite(0, 0) // 4: on the writer 1 and the readers 2, 3
                .task().read(0, 0) // 5: RAW on 4; the readers were cleared
                .build();

        assertPredecessors(dag, new int[][] {{}, {0}, {1}, {1}, {1, 2, 3}, {4}});
    }

    @Test
    void aTaskTouchingOneRegionTwiceNeverDependsOnItself() {
        SyntheticDag dag = SyntheticDag.builder("self", 1, 1)
                .task().write(0, 0) // 0
                .task().read(0, 0).write(0, 0) // 1: RAW and WAW on 0; its own read is no WAR edge
                .task().write(0, 0).read(0, 0) // 2: WAW on 1; its read after its own write adds nothing
                .task().read(0, 0).read(0, 0) // 3: RAW on 2, once
                .task().readWrite(0, 0).readWrite(0, 0) // 4: on the writer 2 and the reader 3, once each
                .build();

        assertPredecessors(dag, new int[][] {{}, {0}, {1}, {2}, {2, 3}});
        for (int task = 0; task < dag.taskCount(); task++) {
            assertThat(dag.predecessors(task)).as("predecessors of task %d", task).doesNotContain(task);
        }
    }

    @Test
    void aTaskThatReadsItsOwnWriteIsOneReaderForTheNextWriter() {
        SyntheticDag dag = SyntheticDag.builder("self-reader", 1, 1)
                .task().write(0, 0).read(0, 0) // 0: writer and reader of its own write
                .task().write(0, 0) // 1: WAW and WAR on 0, one edge
                .build();

        assertPredecessors(dag, new int[][] {{}, {0}});
        assertThat(dag.edgeCount()).isEqualTo(1);
    }

    @Test
    void distinctRegionsAndBuffersAreIndependent() {
        SyntheticDag dag = SyntheticDag.builder("disjoint", 2, 2)
                .task().write(0, 0) // 0
                .task().write(0, 1) // 1: other region of the same buffer
                .task().write(1, 0) // 2: same region index of another buffer
                .task().read(0, 1).read(1, 0) // 3: RAW on 1 and 2
                .build();

        assertPredecessors(dag, new int[][] {{}, {}, {}, {1, 2}});
    }

    @Test
    void predecessorsReachedThroughSeveralRegionsAreListedOnceInAscendingOrder() {
        SyntheticDag dag = SyntheticDag.builder("merged", 1, 3)
                .task().write(0, 2) // 0
                .task().write(0, 0).write(0, 1) // 1
                .task().read(0, 1).read(0, 0).read(0, 2) // 2: RAW on 1 twice and on 0
                .build();

        assertPredecessors(dag, new int[][] {{}, {}, {0, 1}});
        assertThat(dag.predecessorCount(2)).isEqualTo(2);
        assertThat(dag.predecessor(2, 0)).isZero();
        assertThat(dag.predecessor(2, 1)).isEqualTo(1);
    }

    @Test
    void accessFormReadsBackWhatWasBuilt() {
        SyntheticDag dag = SyntheticDag.builder("access-form", 3, 5)
                .task().read(2, 4).readWrite(1, 3)
                .task()
                .task().write(0, 1)
                .build();

        assertThat(dag.buffers()).isEqualTo(3);
        assertThat(dag.regionsPerBuffer()).isEqualTo(5);
        assertThat(dag.taskCount()).isEqualTo(3);
        assertThat(dag.accessCount(0)).isEqualTo(2);
        assertThat(dag.accessCount(1)).isZero();
        assertThat(dag.accessCount(2)).isEqualTo(1);
        assertThat(List.<Object>of(dag.buffer(0, 0), dag.region(0, 0), dag.mode(0, 0))).containsExactly(2, 4, AccessMode.READ);
        assertThat(List.<Object>of(dag.buffer(0, 1), dag.region(0, 1), dag.mode(0, 1)))
                .containsExactly(1, 3, AccessMode.READ_WRITE);
        assertThat(List.<Object>of(dag.buffer(2, 0), dag.region(2, 0), dag.mode(2, 0))).containsExactly(0, 1, AccessMode.WRITE);
        assertThatThrownBy(() -> dag.buffer(1, 0)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> dag.mode(0, 2)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> SyntheticDag.builder("bad", 1, 1).task().read(0, 1))
                .isInstanceOf(IndexOutOfBoundsException.class);
    }

    // ---------------------------------------------------------------- factories

    @Test
    void chainDependsOnThePreviousTaskOnly() {
        SyntheticDag dag = SyntheticDag.chain(1_000);

        assertThat(dag.shape()).isEqualTo("chain");
        assertThat(dag.buffers()).isEqualTo(1);
        assertThat(dag.regionsPerBuffer()).isEqualTo(1);
        assertThat(dag.predecessors(0)).isEmpty();
        for (int task = 0; task < dag.taskCount(); task++) {
            assertThat(dag.accessCount(task)).isEqualTo(1);
            assertThat(dag.mode(task, 0)).isEqualTo(AccessMode.READ_WRITE);
            if (task > 0) {
                assertThat(dag.predecessors(task)).as("predecessors of task %d", task).containsExactly(task - 1);
            }
        }
        assertThat(dag.edgeCount()).isEqualTo(999);
        assertThat(dag.sinks()).containsExactly(999);
    }

    @Test
    void fanoutDependsOnExactlyTwoTasksOfThePreviousLayer() {
        int width = SyntheticDag.DEFAULT_FANOUT_WIDTH;
        SyntheticDag dag = SyntheticDag.fanout(1_000);

        assertThat(dag.shape()).isEqualTo("fanout");
        assertThat(dag.buffers()).isEqualTo(1);
        assertThat(dag.regionsPerBuffer()).isEqualTo(16 * width); // ceil(1000 / 64) layers
        for (int task = 0; task < dag.taskCount(); task++) {
            int layer = task / width;
            int column = task % width;
            if (layer == 0) {
                assertThat(dag.predecessors(task)).as("predecessors of first-layer task %d", task).isEmpty();
            } else {
                int previous = (layer - 1) * width;
                int left = previous + column;
                int right = previous + (column + 1) % width;
                assertThat(dag.predecessors(task))
                        .as("predecessors of task %d (layer %d, column %d)", task, layer, column)
                        .containsExactly(Math.min(left, right), Math.max(left, right));
            }
        }
        assertThat(dag.edgeCount()).isEqualTo(2L * (1_000 - width));
        // The last layer is partial (1000 = 15 * 64 + 40): its tasks and the last full layer's
        // tasks that no partial-layer task reads are the sinks.
        assertThat(dag.sinks()).startsWith(15 * width - 23).endsWith(999);
    }

    @Test
    void fanoutWithASmallWidthStillGivesTwoPredecessors() {
        SyntheticDag dag = SyntheticDag.fanout(8, 2);

        assertPredecessors(dag, new int[][] {{}, {}, {0, 1}, {0, 1}, {2, 3}, {2, 3}, {4, 5}, {4, 5}});
        assertThatThrownBy(() -> SyntheticDag.fanout(8, 1)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void randomIsDeterministicForASeed() {
        SyntheticDag first = SyntheticDag.random(5_000, 42);
        SyntheticDag again = SyntheticDag.random(5_000, 42);
        SyntheticDag other = SyntheticDag.random(5_000, 43);

        assertThat(accessList(again)).isEqualTo(accessList(first));
        assertThat(predecessorList(again)).isEqualTo(predecessorList(first));
        assertThat(accessList(other)).isNotEqualTo(accessList(first));
    }

    @Test
    void randomTasksMakeOneToFourAccessesToDistinctKeysAndDependOnEarlierTasks() {
        SyntheticDag dag = SyntheticDag.random(10_000, 7);

        assertThat(dag.shape()).isEqualTo("random");
        assertThat(dag.buffers()).isEqualTo(64);
        assertThat(dag.regionsPerBuffer()).isEqualTo(4);
        Set<AccessMode> modesSeen = new HashSet<>();
        Set<Integer> accessCountsSeen = new HashSet<>();
        for (int task = 0; task < dag.taskCount(); task++) {
            accessCountsSeen.add(dag.accessCount(task));
            Set<Integer> keys = new HashSet<>();
            for (int k = 0; k < dag.accessCount(task); k++) {
                assertThat(dag.buffer(task, k)).isBetween(0, 63);
                assertThat(dag.region(task, k)).isBetween(0, 3);
                assertThat(keys.add(dag.buffer(task, k) * 4 + dag.region(task, k)))
                        .as("task %d accesses (%d, %d) twice", task, dag.buffer(task, k), dag.region(task, k))
                        .isTrue();
                modesSeen.add(dag.mode(task, k));
            }
            int[] predecessors = dag.predecessors(task);
            for (int k = 0; k < predecessors.length; k++) {
                assertThat(predecessors[k]).as("predecessor %d of task %d", k, task).isLessThan(task);
                if (k > 0) {
                    assertThat(predecessors[k]).as("predecessors of task %d ascend", task).isGreaterThan(predecessors[k - 1]);
                }
            }
        }
        assertThat(accessCountsSeen).containsExactlyInAnyOrder(1, 2, 3, 4);
        assertThat(modesSeen).containsExactlyInAnyOrder(AccessMode.values());
        assertThat(dag.edgeCount()).isEqualTo(predecessorList(dag).stream().mapToLong(List::size).sum());
    }

    @Test
    void randomMatchesTheDefinitionOfLastWriterAndReadersSinceIt() {
        SyntheticDag dag = SyntheticDag.random(2_000, 11);

        for (int task = 0; task < dag.taskCount(); task++) {
            assertThat(dag.predecessors(task))
                    .as("predecessors of task %d", task)
                    .containsExactly(predecessorsByDefinition(dag, task).stream()
                            .mapToInt(Integer::intValue)
                            .toArray());
        }
    }

    @Test
    void everyTaskReachesASink() {
        SyntheticDag dag = SyntheticDag.random(3_000, 5);
        boolean[] reaches = new boolean[dag.taskCount()];
        for (int sink : dag.sinks()) {
            reaches[sink] = true;
        }
        for (int task = dag.taskCount() - 1; task >= 0; task--) {
            assertThat(reaches[task]).as("task %d is a sink or precedes one", task).isTrue();
            for (int predecessor : dag.predecessors(task)) {
                reaches[predecessor] = true;
            }
        }
    }

    // ---------------------------------------------------------------- helpers

    /**
     * The inference restated without state: for each key the task reads, the last earlier task
     * that wrote it; for each key the task writes, that writer and every task between it and
     * this one that read the key.
     */
    private static TreeSet<Integer> predecessorsByDefinition(SyntheticDag dag, int task) {
        TreeSet<Integer> result = new TreeSet<>();
        for (int k = 0; k < dag.accessCount(task); k++) {
            int buffer = dag.buffer(task, k);
            int region = dag.region(task, k);
            int lastWriter = -1;
            for (int earlier = task - 1; earlier >= 0 && lastWriter < 0; earlier--) {
                if (touches(dag, earlier, buffer, region, true)) {
                    lastWriter = earlier;
                }
            }
            if (lastWriter >= 0) {
                result.add(lastWriter);
            }
            if (dag.mode(task, k) != AccessMode.READ) {
                for (int reader = lastWriter + 1; reader < task; reader++) {
                    if (touches(dag, reader, buffer, region, false)) {
                        result.add(reader);
                    }
                }
            }
        }
        return result;
    }

    private static boolean touches(SyntheticDag dag, int task, int buffer, int region, boolean writing) {
        for (int k = 0; k < dag.accessCount(task); k++) {
            if (dag.buffer(task, k) == buffer && dag.region(task, k) == region) {
                AccessMode mode = dag.mode(task, k);
                boolean matches = writing ? mode != AccessMode.READ : mode != AccessMode.WRITE;
                if (matches) {
                    return true;
                }
            }
        }
        return false;
    }

    private static void assertPredecessors(SyntheticDag dag, int[][] expected) {
        assertThat(dag.taskCount()).isEqualTo(expected.length);
        for (int task = 0; task < expected.length; task++) {
            assertThat(dag.predecessors(task)).as("predecessors of task %d in %s", task, dag).containsExactly(expected[task]);
        }
    }

    private static List<List<Object>> accessList(SyntheticDag dag) {
        List<List<Object>> accesses = new ArrayList<>();
        for (int task = 0; task < dag.taskCount(); task++) {
            for (int k = 0; k < dag.accessCount(task); k++) {
                accesses.add(List.of(task, dag.buffer(task, k), dag.region(task, k), dag.mode(task, k)));
            }
        }
        return accesses;
    }

    private static List<List<Integer>> predecessorList(SyntheticDag dag) {
        List<List<Integer>> predecessors = new ArrayList<>();
        for (int task = 0; task < dag.taskCount(); task++) {
            List<Integer> list = new ArrayList<>();
            for (int predecessor : dag.predecessors(task)) {
                list.add(predecessor);
            }
            predecessors.add(list);
        }
        return predecessors;
    }
}
