package dev.tandem.graph;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.AccessMode;
import dev.tandem.Buffer;
import dev.tandem.device.DeviceBuffer;
import dev.tandem.device.TaskNode;
import java.lang.foreign.Arena;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Compaction of a buffer's segments: a KV cache that every step writes one position of and
 * reads whole, with the readers of the steps in flight unfinished, must not keep one segment
 * per position (reading a context of n positions would visit n segments), and merging must
 * never lose a dependency.
 */
class TensorMapCompactionTest {
    private static final long SLOT = 64;
    private final Arena arena = Arena.ofConfined();

    @AfterEach
    void close() {
        arena.close();
    }

    private DeviceBuffer buffer(long bytes) {
        return new DeviceBuffer("kv", arena.allocate(bytes, 64), Buffer.Scope.REQUEST, this, null);
    }

    private static TaskNode task(long index) {
        return new TaskNode(null, new dev.tandem.Access[0], new long[0], null, index, null);
    }

    private static void finish(TaskNode task) {
        task.finish(ready -> {});
    }

    @Test
    void aCacheReadWholeByStepsInFlightStaysAFewSegments() {
        int positions = 1000;
        DeviceBuffer cache = buffer(positions * SLOT);
        TensorMap map = new TensorMap();
        ArrayDeque<List<TaskNode>> inFlight = new ArrayDeque<>();
        int most = 0;
        long index = 0;
        for (int p = 0; p < positions; p++) {
            List<TaskNode> step = new ArrayList<>();
            TaskNode store = task(index++);
            map.access(cache, p * SLOT, SLOT, AccessMode.WRITE, store);
            step.add(store);
            for (int tile = 0; tile < 2; tile++) {
                TaskNode attention = task(index++);
                map.access(cache, 0, (p + 1) * SLOT, AccessMode.READ, attention);
                step.add(attention);
            }
            inFlight.add(step);
            if (inFlight.size() > 2) {
                inFlight.removeFirst().forEach(TensorMapCompactionTest::finish);
            }
            most = Math.max(most, TensorMap.segmentCount(cache));
        }
        // One segment per position would be 1,000; compaction runs when the count passes 8.
        assertThat(most).as("most segments at once").isLessThanOrEqualTo(12);
    }

    /**
     * A layer's outputs, written piece by piece by tasks that have finished and read by nobody
     * yet, keep their boundaries through compaction (their writers are dropped all the same), so
     * the next layer's exact reads of them split nothing; once read, they merge.
     */
    @Test
    void piecesWrittenAndNotReadSinceKeepTheirBoundariesUntilRead() {
        int pieces = 100; // past the 8 segments at which compaction first runs
        DeviceBuffer buffer = buffer(4 * pieces * SLOT);
        TensorMap map = new TensorMap();
        long index = 0;
        for (int p = 0; p < pieces; p++) {
            TaskNode writer = task(index++);
            map.access(buffer, p * SLOT, SLOT, AccessMode.WRITE, writer);
            finish(writer);
        }
        int written = TensorMap.segmentCount(buffer);
        assertThat(written).as("one segment per piece and the unwritten rest").isEqualTo(pieces + 1);
        for (int p = 0; p < pieces; p++) {
            TaskNode reader = task(index++);
            map.access(buffer, p * SLOT, SLOT, AccessMode.READ, reader);
            assertThat(TensorMap.segmentCount(buffer)).as("after the exact read of piece %d", p).isEqualTo(written);
            finish(reader);
        }
        assertThat(TensorMap.writersHeld(buffer)).as("finished writers dropped by compaction").isLessThan(pieces / 2);
        // More pieces, past the next compaction: the pieces read before merge into one segment.
        for (int p = pieces; p < 3 * pieces; p++) {
            TaskNode writer = task(index++);
            map.access(buffer, p * SLOT, SLOT, AccessMode.WRITE, writer);
            finish(writer);
        }
        // The read pieces merged into one; each unread piece kept apart, from the merged run
        // before it too; and the never-written rest.
        assertThat(TensorMap.segmentCount(buffer)).as("the read pieces merged, the unread ones kept")
                .isEqualTo(1 + 2 * pieces + 1);
    }

    /**
     * Pieces of one region that a running task wrote, split apart by readers that have since
     * finished, merge at compaction: their readers are looked at although their writer runs,
     * because each may merge with its neighbour of the same writer. Pieces of running writers of
     * their own stay apart.
     */
    @Test
    void piecesOfOneRunningWritersRegionMergeOnceTheirReadersFinish() {
        int shared = 16;
        int own = 40; // enough segments that a compaction runs after the shared pieces were read
        int more = 90; // and after that, enough that one runs after the own writers finished
        DeviceBuffer buffer = buffer((shared + own + more) * SLOT);
        TensorMap map = new TensorMap();
        long index = 0;
        TaskNode whole = task(index++); // writes the shared pieces and keeps running
        map.access(buffer, 0, shared * SLOT, AccessMode.WRITE, whole);
        for (int p = 0; p < shared; p++) {
            TaskNode reader = task(index++);
            map.access(buffer, p * SLOT, SLOT, AccessMode.READ, reader);
            finish(reader);
        }
        List<TaskNode> writers = new ArrayList<>();
        for (int p = shared; p < shared + own; p++) {
            TaskNode writer = task(index++); // keeps running
            map.access(buffer, p * SLOT, SLOT, AccessMode.WRITE, writer);
            writers.add(writer);
            TaskNode reader = task(index++);
            map.access(buffer, p * SLOT, SLOT, AccessMode.READ, reader);
            finish(reader);
        }
        assertThat(TensorMap.segmentCount(buffer)).as("the shared pieces merged, the others kept apart, and the rest")
                .isEqualTo(1 + own + 1);
        writers.forEach(TensorMapCompactionTest::finish); // seen finished by the next compaction, not before
        for (int p = shared + own; p < shared + own + more; p++) {
            map.access(buffer, p * SLOT, SLOT, AccessMode.WRITE, task(index++)); // running writers of their own
        }
        assertThat(TensorMap.segmentCount(buffer)).as("the own pieces merged once their writers finished")
                .isEqualTo(1 + 1 + more);
    }

    /**
     * The track keeps no reference to a task outside its live segments and their readers: not
     * in slots that collapse, compaction or pruning left behind, where each would pin a finished
     * task (and its regions and kernel) until the slot is reused.
     */
    @Test
    void noSlotOutsideTheLiveSegmentsKeepsATask() {
        Random random = new Random(7);
        int bytes = 2048;
        DeviceBuffer buffer = buffer(bytes);
        TensorMap map = new TensorMap();
        List<TaskNode> live = new ArrayList<>();
        for (int t = 0; t < 4000; t++) {
            int start = random.nextInt(bytes / 8) * 8;
            int length = 8 * (1 + random.nextInt(Math.min(random.nextInt(8) == 0 ? 256 : 8, (bytes - start) / 8)));
            AccessMode mode = random.nextInt(3) == 0 ? AccessMode.WRITE : AccessMode.READ;
            TaskNode task = task(t);
            map.access(buffer, start, length, mode, task);
            live.add(task);
            while (live.size() > 12) {
                finish(live.remove(random.nextInt(live.size())));
            }
            assertThat(TensorMap.staleReferences(buffer)).as("after task %d (%s of %d bytes at %d)", t, mode, length, start)
                    .isZero();
        }
    }

    /**
     * Random reads and writes of random ranges, tasks finishing in random order, checked
     * against the byte-by-byte definition: a task must follow the unfinished last writer of
     * every byte it touches and, if it writes, every unfinished reader of those bytes since
     * that write; each such edge is looked up on the predecessor's successor stack.
     */
    @Test
    void mergingNeverDropsADependency() {
        Random random = new Random(42);
        int bytes = 4096; // 512 possible boundaries: enough segments that compaction runs often
        int compactions = 0;
        for (int round = 0; round < 20; round++) {
            DeviceBuffer buffer = buffer(bytes);
            TensorMap map = new TensorMap();
            TaskNode[] lastWriter = new TaskNode[bytes];
            List<List<TaskNode>> readersSince = new ArrayList<>();
            for (int b = 0; b < bytes; b++) {
                readersSince.add(new ArrayList<>());
            }
            List<TaskNode> live = new ArrayList<>();
            for (int t = 0; t < 1500; t++) {
                int start = random.nextInt(bytes / 8) * 8;
                int length = 8 * (1 + random.nextInt(Math.min(16, (bytes - start) / 8)));
                boolean writes = random.nextInt(3) == 0;
                TaskNode task = task(t);
                java.util.Set<TaskNode> required = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
                for (int b = start; b < start + length; b++) {
                    if (lastWriter[b] != null && !lastWriter[b].isFinished()) {
                        required.add(lastWriter[b]);
                    }
                    if (writes) {
                        for (TaskNode r : readersSince.get(b)) {
                            if (!r.isFinished()) {
                                required.add(r);
                            }
                        }
                    }
                }
                int segmentsBefore = TensorMap.segmentCount(buffer);
                map.access(buffer, start, length, writes ? AccessMode.WRITE : AccessMode.READ, task);
                if (!writes && TensorMap.segmentCount(buffer) < segmentsBefore) {
                    compactions++; // a read only splits segments: fewer means compaction merged some
                }
                for (TaskNode p : required) {
                    assertThat(p.hasSuccessor(task)).as("round %d: task %d follows %s", round, t, p).isTrue();
                }
                for (int b = start; b < start + length; b++) {
                    if (writes) {
                        lastWriter[b] = task;
                        readersSince.get(b).clear();
                    } else {
                        readersSince.get(b).add(task);
                    }
                }
                live.add(task);
                while (!live.isEmpty() && random.nextInt(3) == 0) {
                    finish(live.remove(random.nextInt(live.size())));
                }
            }
        }
        assertThat(compactions).as("accesses after which compaction merged segments").isGreaterThan(20);
    }

    @Test
    void aWriterFoundFinishedWhenReadIsDroppedAndNoEdgeIsCounted() {
        DeviceBuffer tensor = buffer(SLOT);
        TensorMap map = new TensorMap();
        TaskNode writer = task(0);
        map.access(tensor, 0, SLOT, AccessMode.WRITE, writer);
        TaskNode early = task(1);
        map.access(tensor, 0, SLOT, AccessMode.READ, early);
        assertThat(map.edgeCount()).isEqualTo(1);
        assertThat(writer.hasSuccessor(early)).isTrue();
        finish(writer);
        TaskNode late = task(2);
        map.access(tensor, 0, SLOT, AccessMode.READ, late);
        assertThat(map.edgeCount()).as("no edge to a finished writer").isEqualTo(1);
        assertThat(TensorMap.writersHeld(tensor)).as("the finished writer is dropped when seen").isZero();
        assertThat(late.publish()).as("nothing to wait for").isTrue();
    }
}
