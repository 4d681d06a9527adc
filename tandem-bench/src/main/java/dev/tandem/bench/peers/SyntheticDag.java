package dev.tandem.bench.peers;

import java.util.Arrays;
import java.util.Objects;
import java.util.SplittableRandom;

/**
 * One benchmark DAG of empty tasks, in two equivalent forms: the access form that tandem
 * reads (each task's region accesses, from which tandem infers the edges itself) and the
 * explicit form that the peers read (each task's predecessors).
 *
 * <p>The explicit form is computed once, at construction, by {@link ReferenceInference}
 * over the access form. Both forms are stored in flat arrays; reading them allocates
 * nothing except {@link #predecessors(int)} and {@link #sinks()}, which return copies.
 *
 * <p>Regions are disjoint, equal-size byte ranges of a buffer, so a (buffer, region) pair
 * is an exact dependency key. Instances are immutable and safe to share between threads.
 */
public final class SyntheticDag {

    /** How a task touches one region. */
    public enum AccessMode {
        READ,
        WRITE,
        READ_WRITE
    }

    /** Layer width of {@link #fanout(int)}. */
    public static final int DEFAULT_FANOUT_WIDTH = 64;

    static final int RANDOM_BUFFERS = 64;
    static final int RANDOM_REGIONS_PER_BUFFER = 4;
    static final int RANDOM_MAX_ACCESSES = 4;

    private static final AccessMode[] MODES = AccessMode.values();

    private final String shape;
    private final int buffers;
    private final int regionsPerBuffer;

    // Access form: the accesses of task t are at [accessStart[t], accessStart[t + 1]).
    private final int[] accessStart;
    private final int[] accessBuffer;
    private final int[] accessRegion;
    private final byte[] accessMode;

    // Explicit form: the predecessors of task t are at [predecessorStart[t], predecessorStart[t + 1]).
    private final int[] predecessorStart;
    private final int[] predecessorTask;
    private final int[] sinks;

    private SyntheticDag(
            String shape,
            int buffers,
            int regionsPerBuffer,
            int[] accessStart,
            int[] accessBuffer,
            int[] accessRegion,
            byte[] accessMode) {
        this.shape = shape;
        this.buffers = buffers;
        this.regionsPerBuffer = regionsPerBuffer;
        this.accessStart = accessStart;
        this.accessBuffer = accessBuffer;
        this.accessRegion = accessRegion;
        this.accessMode = accessMode;
        ReferenceInference.Edges edges =
                ReferenceInference.infer(regionsPerBuffer, accessStart, accessBuffer, accessRegion, accessMode);
        this.predecessorStart = edges.start();
        this.predecessorTask = edges.predecessors();
        this.sinks = findSinks(taskCount(), predecessorTask);
    }

    // ---------------------------------------------------------------- factories

    /**
     * A chain of {@code n} tasks: one buffer with one region, every task {@code READ_WRITE}s
     * it, so task {@code i} depends on task {@code i - 1} only.
     */
    public static SyntheticDag chain(int n) {
        requireTasks(n);
        Builder builder = new Builder("chain", 1, 1, n, n);
        for (int task = 0; task < n; task++) {
            builder.task().readWrite(0, 0);
        }
        return builder.build();
    }

    /** {@link #fanout(int, int)} with layers of {@value #DEFAULT_FANOUT_WIDTH} tasks. */
    public static SyntheticDag fanout(int n) {
        return fanout(n, DEFAULT_FANOUT_WIDTH);
    }

    /**
     * Layers of {@code width} tasks; every task outside the first layer depends on exactly two
     * tasks of the previous layer. Task {@code i} is in layer {@code L = i / width}, column
     * {@code j = i % width}; it writes region {@code L * width + j} of the single buffer and, for
     * {@code L > 0}, reads regions {@code (L - 1) * width + j} and
     * {@code (L - 1) * width + (j + 1) % width}.
     */
    public static SyntheticDag fanout(int n, int width) {
        requireTasks(n);
        if (width < 2) {
            throw new IllegalArgumentException("fanout width must be at least 2 to give two predecessors, got " + width);
        }
        int layers = Math.ceilDiv(n, width);
        int regions = Math.multiplyExact(layers, width);
        Builder builder = new Builder("fanout", 1, regions, n, 3 * n);
        for (int task = 0; task < n; task++) {
            int layer = task / width;
            int column = task % width;
            builder.task();
            if (layer > 0) {
                int previous = (layer - 1) * width;
                builder.read(0, previous + column).read(0, previous + (column + 1) % width);
            }
            builder.write(0, layer * width + column);
        }
        return builder.build();
    }

    /**
     * {@code n} tasks over {@value #RANDOM_BUFFERS} buffers of {@value #RANDOM_REGIONS_PER_BUFFER}
     * regions: each task makes 1 to {@value #RANDOM_MAX_ACCESSES} accesses to distinct random
     * (buffer, region) keys, each with a random mode. The same {@code seed} gives the same DAG.
     */
    public static SyntheticDag random(int n, long seed) {
        requireTasks(n);
        SplittableRandom random = new SplittableRandom(seed);
        Builder builder = new Builder(
                "random", RANDOM_BUFFERS, RANDOM_REGIONS_PER_BUFFER, n, n / 2 * (RANDOM_MAX_ACCESSES + 1) + 1);
        int keys = RANDOM_BUFFERS * RANDOM_REGIONS_PER_BUFFER;
        int[] chosen = new int[RANDOM_MAX_ACCESSES];
        for (int task = 0; task < n; task++) {
            builder.task();
            int accesses = 1 + random.nextInt(RANDOM_MAX_ACCESSES);
            for (int k = 0; k < accesses; k++) {
                int key = random.nextInt(keys);
                while (contains(chosen, k, key)) {
                    key = random.nextInt(keys);
                }
                chosen[k] = key;
                AccessMode mode = MODES[random.nextInt(MODES.length)];
                builder.access(key / RANDOM_REGIONS_PER_BUFFER, key % RANDOM_REGIONS_PER_BUFFER, mode);
            }
        }
        return builder.build();
    }

    /** A builder for hand-written access lists; tasks are numbered in the order they are begun. */
    static Builder builder(String shape, int buffers, int regionsPerBuffer) {
        return new Builder(shape, buffers, regionsPerBuffer, 16, 16);
    }

    // ---------------------------------------------------------------- access form

    /** The factory that made this DAG: {@code chain}, {@code fanout}, {@code random}, or a test's name. */
    public String shape() {
        return shape;
    }

    public int buffers() {
        return buffers;
    }

    public int regionsPerBuffer() {
        return regionsPerBuffer;
    }

    public int taskCount() {
        return accessStart.length - 1;
    }

    public int accessCount(int task) {
        Objects.checkIndex(task, taskCount());
        return accessStart[task + 1] - accessStart[task];
    }

    /** The buffer index of access {@code k} of {@code task}. */
    public int buffer(int task, int k) {
        return accessBuffer[accessIndex(task, k)];
    }

    /** The region index, within its buffer, of access {@code k} of {@code task}. */
    public int region(int task, int k) {
        return accessRegion[accessIndex(task, k)];
    }

    public AccessMode mode(int task, int k) {
        return MODES[accessMode[accessIndex(task, k)]];
    }

    // ---------------------------------------------------------------- explicit form

    public int predecessorCount(int task) {
        Objects.checkIndex(task, taskCount());
        return predecessorStart[task + 1] - predecessorStart[task];
    }

    /** Predecessor {@code k} of {@code task}, in ascending order. */
    public int predecessor(int task, int k) {
        Objects.checkIndex(task, taskCount());
        int start = predecessorStart[task];
        return predecessorTask[start + Objects.checkIndex(k, predecessorStart[task + 1] - start)];
    }

    /** A copy of the predecessors of {@code task}: all smaller than {@code task}, distinct, ascending. */
    public int[] predecessors(int task) {
        Objects.checkIndex(task, taskCount());
        return Arrays.copyOfRange(predecessorTask, predecessorStart[task], predecessorStart[task + 1]);
    }

    /** A copy of the tasks that no task depends on, ascending. Every task is an ancestor of one. */
    public int[] sinks() {
        return sinks.clone();
    }

    public long edgeCount() {
        return predecessorTask.length;
    }

    @Override
    public String toString() {
        return shape + "(tasks=" + taskCount() + ", edges=" + edgeCount() + ", buffers=" + buffers
                + ", regionsPerBuffer=" + regionsPerBuffer + ")";
    }

    // ---------------------------------------------------------------- internals

    private int accessIndex(int task, int k) {
        Objects.checkIndex(task, taskCount());
        int start = accessStart[task];
        return start + Objects.checkIndex(k, accessStart[task + 1] - start);
    }

    private static int[] findSinks(int taskCount, int[] predecessorTask) {
        boolean[] hasSuccessor = new boolean[taskCount];
        for (int predecessor : predecessorTask) {
            hasSuccessor[predecessor] = true;
        }
        int count = 0;
        for (boolean b : hasSuccessor) {
            if (!b) {
                count++;
            }
        }
        int[] sinks = new int[count];
        int next = 0;
        for (int task = 0; task < taskCount; task++) {
            if (!hasSuccessor[task]) {
                sinks[next++] = task;
            }
        }
        return sinks;
    }

    private static boolean contains(int[] values, int length, int value) {
        for (int i = 0; i < length; i++) {
            if (values[i] == value) {
                return true;
            }
        }
        return false;
    }

    private static void requireTasks(int n) {
        if (n < 1) {
            throw new IllegalArgumentException("a synthetic DAG needs at least one task, got " + n);
        }
    }

    /** Appends tasks and their accesses to growable flat arrays; single-threaded. */
    static final class Builder {
        private final String shape;
        private final int buffers;
        private final int regionsPerBuffer;
        private int[] accessStart;
        private int tasks;
        private int[] accessBuffer;
        private int[] accessRegion;
        private byte[] accessMode;
        private int accesses;

        private Builder(String shape, int buffers, int regionsPerBuffer, int taskCapacity, int accessCapacity) {
            if (buffers < 1 || regionsPerBuffer < 1) {
                throw new IllegalArgumentException("a synthetic DAG needs at least one buffer and one region, got "
                        + buffers + " buffers of " + regionsPerBuffer + " regions");
            }
            Math.multiplyExact(buffers, regionsPerBuffer);
            this.shape = Objects.requireNonNull(shape, "shape");
            this.buffers = buffers;
            this.regionsPerBuffer = regionsPerBuffer;
            this.accessStart = new int[Math.max(taskCapacity, 1) + 1];
            this.accessBuffer = new int[Math.max(accessCapacity, 1)];
            this.accessRegion = new int[accessBuffer.length];
            this.accessMode = new byte[accessBuffer.length];
        }

        /** Begins the next task; the accesses added after this call belong to it. */
        Builder task() {
            if (tasks + 1 == accessStart.length) {
                accessStart = Arrays.copyOf(accessStart, grow(accessStart.length));
            }
            tasks++;
            accessStart[tasks] = accesses;
            return this;
        }

        Builder read(int buffer, int region) {
            return access(buffer, region, AccessMode.READ);
        }

        Builder write(int buffer, int region) {
            return access(buffer, region, AccessMode.WRITE);
        }

        Builder readWrite(int buffer, int region) {
            return access(buffer, region, AccessMode.READ_WRITE);
        }

        Builder access(int buffer, int region, AccessMode mode) {
            if (tasks == 0) {
                throw new IllegalStateException("begin a task with task() before adding its accesses");
            }
            Objects.checkIndex(buffer, buffers);
            Objects.checkIndex(region, regionsPerBuffer);
            Objects.requireNonNull(mode, "mode");
            if (accesses == accessBuffer.length) {
                int capacity = grow(accesses);
                accessBuffer = Arrays.copyOf(accessBuffer, capacity);
                accessRegion = Arrays.copyOf(accessRegion, capacity);
                accessMode = Arrays.copyOf(accessMode, capacity);
            }
            accessBuffer[accesses] = buffer;
            accessRegion[accesses] = region;
            accessMode[accesses] = (byte) mode.ordinal();
            accesses++;
            accessStart[tasks] = accesses;
            return this;
        }

        SyntheticDag build() {
            if (tasks == 0) {
                throw new IllegalStateException("a synthetic DAG needs at least one task");
            }
            return new SyntheticDag(
                    shape,
                    buffers,
                    regionsPerBuffer,
                    Arrays.copyOf(accessStart, tasks + 1),
                    Arrays.copyOf(accessBuffer, accesses),
                    Arrays.copyOf(accessRegion, accesses),
                    Arrays.copyOf(accessMode, accesses));
        }

        private static int grow(int length) {
            return Math.addExact(length, Math.max(length >> 1, 16));
        }
    }
}
