package dev.tandem.bench.peers;

import java.util.Arrays;

/**
 * The plain dependency inference that turns a {@link SyntheticDag}'s access form into its
 * explicit form. It is the specification the peers are fed from, so it favours being obviously
 * right over being fast.
 *
 * <p>Per (buffer, region) key it keeps the last writer and the readers since that write, and
 * walks the tasks in order, each task's accesses in order:
 * <ul>
 *   <li>{@code READ} depends on the last writer (RAW), then joins the readers;
 *   <li>{@code WRITE} and {@code READ_WRITE} depend on the last writer (WAW) and on the readers
 *       since it (WAR), then become the only writer and clear the readers.
 * </ul>
 * A task never depends on itself, so a task that touches one key twice adds no edge between its
 * own accesses. Each task's predecessors come out distinct and ascending.
 */
final class ReferenceInference {

    private static final int NO_WRITER = -1;
    private static final int[] NO_READERS = new int[0];

    /** Predecessors of task {@code t} are {@code predecessors[start[t] .. start[t + 1])}. */
    record Edges(int[] start, int[] predecessors) {}

    private ReferenceInference() {}

    static Edges infer(
            int regionsPerBuffer, int[] accessStart, int[] accessBuffer, int[] accessRegion, byte[] accessMode) {
        int taskCount = accessStart.length - 1;
        int keyCount = 0;
        for (int i = 0; i < accessBuffer.length; i++) {
            keyCount = Math.max(keyCount, key(regionsPerBuffer, accessBuffer[i], accessRegion[i]) + 1);
        }
        int[] lastWriter = new int[keyCount];
        Arrays.fill(lastWriter, NO_WRITER);
        int[][] readers = new int[keyCount][];
        Arrays.fill(readers, NO_READERS);
        int[] readerCount = new int[keyCount];

        int[] start = new int[taskCount + 1];
        int[] predecessors = new int[Math.max(16, taskCount)];
        int edges = 0;
        int[] scratch = new int[16];
        for (int task = 0; task < taskCount; task++) {
            int found = 0;
            for (int a = accessStart[task]; a < accessStart[task + 1]; a++) {
                int key = key(regionsPerBuffer, accessBuffer[a], accessRegion[a]);
                int writer = lastWriter[key];
                // RAW for a read, WAW for a write: both depend on the last writer.
                if (writer != NO_WRITER && writer != task) {
                    scratch = ensureCapacity(scratch, found + 1);
                    scratch[found++] = writer;
                }
                if (accessMode[a] == SyntheticDag.AccessMode.READ.ordinal()) {
                    // A task reading a key twice is one reader; its own readings are adjacent at the end.
                    int count = readerCount[key];
                    if (count == 0 || readers[key][count - 1] != task) {
                        readers[key] = ensureCapacity(readers[key], count + 1);
                        readers[key][count] = task;
                        readerCount[key] = count + 1;
                    }
                } else {
                    // WAR: the readers since the last write; then this task is the only writer.
                    int count = readerCount[key];
                    scratch = ensureCapacity(scratch, found + count);
                    for (int r = 0; r < count; r++) {
                        int reader = readers[key][r];
                        if (reader != task) {
                            scratch[found++] = reader;
                        }
                    }
                    lastWriter[key] = task;
                    readerCount[key] = 0;
                }
            }
            Arrays.sort(scratch, 0, found);
            predecessors = ensureCapacity(predecessors, edges + found);
            for (int i = 0; i < found; i++) {
                if (i == 0 || scratch[i] != scratch[i - 1]) {
                    predecessors[edges++] = scratch[i];
                }
            }
            start[task + 1] = edges;
        }
        return new Edges(start, Arrays.copyOf(predecessors, edges));
    }

    private static int key(int regionsPerBuffer, int buffer, int region) {
        return buffer * regionsPerBuffer + region;
    }

    private static int[] ensureCapacity(int[] array, int needed) {
        if (needed <= array.length) {
            return array;
        }
        return Arrays.copyOf(array, Math.max(needed, array.length + Math.max(array.length >> 1, 4)));
    }
}
