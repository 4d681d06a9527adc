package dev.tandem.graph;

import dev.tandem.AccessMode;
import dev.tandem.device.DeviceBuffer;
import dev.tandem.device.TaskNode;
import java.util.Arrays;

/**
 * One request's dependency inference: per buffer, ordered disjoint segments, each with its
 * last writer and the readers since that write.
 *
 * <p>Implementation Overview. Each tracked buffer carries a {@link Track} (in
 * {@link DeviceBuffer#dependencyTrack}) whose segments always cover the whole buffer: it
 * starts as one segment with no writer and no readers. An access to [s, e) first splits the
 * segments at s and e, so that it covers whole segments only (a region that is exactly one
 * segment, the common case of a tensor accessed whole, takes one search and no split), then,
 * per covered segment:
 * <ul>
 *   <li>a READ depends on the segment's last writer (RAW) and joins its readers;
 *   <li>a WRITE or READ_WRITE depends on the last writer (WAW) and on every reader since
 *       (WAR), and then the covered segments collapse into one whose only writer is the task.
 * </ul>
 * Finished tasks are not dependencies: they are skipped, and dropped from the segment when
 * seen (lazy pruning), so segments do not pin the garbage of finished steps. A task never
 * depends on itself, and an edge p→t that would repeat one of the last few wired to t (p and
 * t sharing several segments) is skipped; a rarer repeat is wired twice, which is correct.
 *
 * <p>Host thread only: a request's tracks are touched by its program thread and nothing else.
 * The only concurrent state touched here is a task's successor stack: {@link TaskNode#wireTo}
 * says whether the predecessor had finished (no edge then), and pruning reads
 * {@link TaskNode#isFinished()}, where a stale "not finished" merely keeps a task one
 * compaction longer. Wiring does not ask first: wireTo reads the same field.
 */
public final class TensorMap {
    private long edges;

    /** Edges wired so far (for tests and traces). */
    public long edgeCount() {
        return edges;
    }

    /** Segments the track of {@code buffer} holds now (1 for an untracked buffer); for tests. */
    static int segmentCount(DeviceBuffer buffer) {
        Track track = (Track) buffer.dependencyTrack;
        return track == null ? 1 : track.count;
    }

    /** Segments of {@code buffer}'s track that still reference a writer (finished or not); for tests. */
    static int writersHeld(DeviceBuffer buffer) {
        Track track = (Track) buffer.dependencyTrack;
        int held = 0;
        for (int k = 0; track != null && k < track.count; k++) {
            if (track.writer[k] != null) {
                held++;
            }
        }
        return held;
    }

    /**
     * References to tasks that {@code buffer}'s track keeps outside its live state (slots past the
     * segment count, reader slots past a segment's reader count); for tests: each would pin a
     * finished task and everything it references.
     */
    static int staleReferences(DeviceBuffer buffer) {
        Track track = (Track) buffer.dependencyTrack;
        if (track == null) {
            return 0;
        }
        int stale = 0;
        for (int k = 0; k < track.writer.length; k++) {
            if (k >= track.count && track.writer[k] != null) {
                stale++;
            }
            TaskNode[] rs = track.readers[k];
            for (int i = k < track.count ? track.readerCount[k] : 0; rs != null && i < rs.length; i++) {
                if (rs[i] != null) {
                    stale++;
                }
            }
        }
        return stale;
    }

    /** Records that {@code task} accesses [offset, offset+length) of {@code buffer} and wires its dependencies. */
    public void access(DeviceBuffer buffer, long offset, long length, AccessMode mode, TaskNode task) {
        if (length == 0) {
            return;
        }
        Track track = (Track) buffer.dependencyTrack;
        if (track == null) {
            track = new Track(buffer.byteSize());
            buffer.dependencyTrack = track;
        }
        track.access(offset, offset + length, mode, task, this);
    }

    // The last few predecessors wired to the current task, to skip wiring one twice when it
    // shares several segments with the task. Kept here rather than on the predecessors:
    // writing a field of a predecessor would pull its cache line away from the core about to
    // finish it. A duplicate that escapes this window is still correct (the edge is counted
    // and released twice), only slower, and the window keeps the check O(1) for a task with a
    // million predecessors.
    private static final int RECENT = 8;
    private TaskNode current;
    private final TaskNode[] recent = new TaskNode[RECENT];
    private int recentCount;

    /**
     * Wires predecessor→task unless it is the task itself or among the last few wired to it.
     *
     * @return false if the predecessor has finished (it is no dependency, and can be dropped)
     */
    boolean dependOn(TaskNode predecessor, TaskNode task) {
        if (predecessor == task) {
            return true;
        }
        if (task != current) {
            current = task; // the window's old entries are past recentCount: never compared, overwritten next
            recentCount = 0;
        }
        int seen = Math.min(recentCount, RECENT);
        for (int i = 0; i < seen; i++) {
            if (recent[i] == predecessor) {
                return true;
            }
        }
        if (predecessor.wireTo(task)) {
            recent[recentCount++ % RECENT] = predecessor; // a finished one takes no slot: asking it again is cheap
            edges++;
            return true;
        }
        return false;
    }

    /** The segments of one buffer. Parallel arrays, sorted by start, covering [0, size). */
    static final class Track {
        private static final TaskNode[] NO_READERS = new TaskNode[0];
        /**
         * Segments a track may hold before its first compaction (and after one that left few).
         * 64 let a KV cache grow by a segment a step for about 60 steps between compactions, and
         * every attention task's read of the whole context visited each of them (addReader was
         * 10% of a batch-1 decode's host samples); at 8 a read visits a handful, and the step's
         * median build on the large Q8_0 shape went from 87-97 to 65-73 us (two of three
         * alternating runs; the third had a 194 us outlier, as both builds have had).
         */
        private static final int COMPACT_MIN = 8;

        private final long size;
        private long[] start = new long[4];
        private TaskNode[] writer = new TaskNode[4];
        private TaskNode[][] readers = new TaskNode[4][];
        private int[] readerCount = new int[4];
        // Written and not accessed since: kept apart by compaction (see compact()).
        private boolean[] fresh = new boolean[4];
        private int count;
        private int compactAt = COMPACT_MIN;
        private int hint; // a recent find result; any value below count is safe

        Track(long size) {
            this.size = size;
            start[0] = 0;
            readers[0] = NO_READERS;
            count = 1;
        }


        private long end(int k) {
            return k + 1 < count ? start[k + 1] : size;
        }

        void access(long s, long e, AccessMode mode, TaskNode task, TensorMap map) {
            if (count > compactAt) {
                compact();
            }
            int at = find(s);
            int first;
            int last; // exclusive
            if (start[at] == s && end(at) == e) {
                first = at; // the region is exactly one segment: nothing to split or search
                last = at + 1;
            } else {
                first = splitAt(s, at);
                last = e == size ? count : splitAt(e, findFrom(first, e));
            }
            boolean writes = mode.writes();
            for (int k = first; k < last; k++) {
                // No isFinished() before wiring: wireTo tells.
                TaskNode w = writer[k];
                if (w != null && !map.dependOn(w, task)) {
                    writer[k] = null;
                }
                if (writes) {
                    TaskNode[] rs = readers[k];
                    int n = readerCount[k];
                    for (int i = 0; i < n; i++) {
                        map.dependOn(rs[i], task); // the readers are dropped below, finished or not
                    }
                }
            }
            if (writes) {
                collapse(first, last, task);
            } else {
                for (int k = first; k < last; k++) {
                    fresh[k] = false; // read since its write (collapse marks a written segment fresh)
                    addReader(k, task);
                }
            }
        }

        /**
         * Merges each run of adjacent segments that carry the same dependencies: after finished
         * writers and readers are dropped (they carry none), the same writer (or none) and the
         * same readers in the same order. A future access to any part of such a run wires
         * exactly the edges it would wire to the merged segment, so merging changes no future
         * edge; it keeps a buffer written piece by piece (a KV cache, a layer's outputs) from
         * accumulating one segment per piece. That includes pieces still being read: every
         * attention task of a step reads the whole context, so a cache's written positions share
         * their readers and merge, instead of each step's readers keeping every position apart
         * (which made reading a context of n positions cost n segment visits). Amortised: the
         * next compaction waits until the count has doubled.
         *
         * <p>A segment written and not accessed since (fresh) keeps its own boundaries, even once
         * its writer has finished (the writer is dropped all the same, so nothing is pinned): the
         * next access to it is most often an exact read of what was written (a layer reading the
         * outputs of the one before), which then takes one search and no split. Merged, it would
         * be split again by that read, moving every segment after it; that made a 64-wide fan-out
         * of 8-byte regions cost 20% more per task. Once read, it merges like any other.
         */
        private void compact() {
            int out = 0;
            for (int k = 0; k < count; k++) {
                TaskNode w = writer[k];
                if (w != null && w.isFinished()) {
                    w = null;
                }
                TaskNode[] rs = readers[k];
                int n = readerCount[k];
                boolean f = fresh[k];
                boolean intoPrevious = out > 0 && !f && !fresh[out - 1] && writer[out - 1] == w;
                // The readers are compared only if this segment may merge into the one before or
                // the next into this one, which needs the same writer: with a running writer of
                // its own, neither can happen, and its finished readers wait for a compaction after
                // the writer's end (reading each one's state is a cache miss when a core has just
                // finished it; skipping them took 5% off a fan-out's cost per task).
                if (n > 0 && (w == null || intoPrevious || (k + 1 < count && writer[k + 1] == w))) {
                    n = pruneFinished(rs, n);
                }
                if (intoPrevious && sameReaders(readers[out - 1], readerCount[out - 1], rs, n)) {
                    continue; // absorbed by the equivalent segment before it (its reader array goes with it)
                }
                start[out] = start[k];
                writer[out] = w;
                readers[out] = n == 0 ? NO_READERS : rs;
                readerCount[out] = n;
                fresh[out] = f;
                out++;
            }
            for (int k = out; k < count; k++) {
                writer[k] = null;
                readers[k] = null;
            }
            count = out;
            compactAt = Math.max(COMPACT_MIN, 2 * count);
        }

        private static boolean sameReaders(TaskNode[] a, int an, TaskNode[] b, int bn) {
            if (an != bn) {
                return false;
            }
            for (int i = 0; i < an; i++) {
                if (a[i] != b[i]) {
                    return false;
                }
            }
            return true;
        }

        /**
         * Makes pos a segment boundary; returns the index of the segment starting at pos.
         *
         * @param k the index of the segment containing pos
         */
        private int splitAt(long pos, int k) {
            if (pos == 0) {
                return 0;
            }
            if (start[k] == pos) {
                return k;
            }
            ensureCapacity(count + 1);
            int moved = count - (k + 1);
            System.arraycopy(start, k + 1, start, k + 2, moved);
            System.arraycopy(writer, k + 1, writer, k + 2, moved);
            System.arraycopy(readers, k + 1, readers, k + 2, moved);
            System.arraycopy(readerCount, k + 1, readerCount, k + 2, moved);
            System.arraycopy(fresh, k + 1, fresh, k + 2, moved);
            start[k + 1] = pos;
            fresh[k + 1] = fresh[k];
            writer[k + 1] = writer[k];
            int n = readerCount[k];
            readers[k + 1] = n == 0 ? NO_READERS : Arrays.copyOf(readers[k], Math.max(n, 4));
            readerCount[k + 1] = n;
            count++;
            return k + 1;
        }

        /**
         * Index of the segment containing pos, searching forward from segment {@code from}
         * (which starts at or before pos): an access's end is usually in or just after the
         * segment holding its start.
         */
        private int findFrom(int from, long pos) {
            for (int k = from; k < from + 4 && k < count; k++) {
                if (k + 1 == count || start[k + 1] > pos) {
                    return k;
                }
            }
            return find(pos);
        }

        /** Index of the segment containing pos (largest k with start[k] <= pos). */
        private int find(long pos) {
            int lo = 0;
            int hi = count - 1;
            if (start[hi] <= pos) {
                return hi; // appending past the last boundary is the common case
            }
            int h = hint;
            if (h < hi && start[h] <= pos && start[h + 1] > pos) {
                return h; // the segment found last time, or the one after it, is the common next one
            }
            if (h + 1 < hi && start[h + 1] <= pos && start[h + 2] > pos) {
                hint = h + 1;
                return h + 1;
            }
            while (lo < hi) {
                int mid = (lo + hi + 1) >>> 1;
                if (start[mid] <= pos) {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
            hint = lo;
            return lo;
        }

        /** Replaces segments [first, last) by one segment written by {@code task}. */
        private void collapse(int first, int last, TaskNode task) {
            writer[first] = task;
            fresh[first] = true;
            if (readers[first].length > 64) {
                readers[first] = NO_READERS; // let a burst of readers be collected
            } else {
                Arrays.fill(readers[first], 0, readerCount[first], null);
            }
            readerCount[first] = 0;
            int removed = last - first - 1;
            if (removed > 0) {
                int tail = count - last;
                System.arraycopy(start, last, start, first + 1, tail);
                System.arraycopy(writer, last, writer, first + 1, tail);
                System.arraycopy(readers, last, readers, first + 1, tail);
                System.arraycopy(readerCount, last, readerCount, first + 1, tail);
                System.arraycopy(fresh, last, fresh, first + 1, tail);
                for (int k = count - removed; k < count; k++) {
                    writer[k] = null;
                    readers[k] = null;
                }
                count -= removed;
            }
        }

        private void addReader(int k, TaskNode task) {
            TaskNode[] rs = readers[k];
            int n = readerCount[k];
            if (n > 0 && rs[n - 1] == task) {
                return; // the same task reading the segment twice
            }
            if (n == rs.length) {
                n = pruneFinished(rs, n);
                if (n >= rs.length / 2) {
                    rs = Arrays.copyOf(rs, Math.max(4, rs.length * 2));
                    readers[k] = rs;
                }
            }
            rs[n] = task;
            readerCount[k] = n + 1;
        }

        private static int pruneFinished(TaskNode[] rs, int n) {
            int kept = 0;
            for (int i = 0; i < n; i++) {
                if (!rs[i].isFinished()) {
                    rs[kept++] = rs[i];
                }
            }
            Arrays.fill(rs, kept, n, null);
            return kept;
        }

        private void ensureCapacity(int needed) {
            if (needed <= start.length) {
                return;
            }
            int cap = Math.max(needed, start.length * 2);
            start = Arrays.copyOf(start, cap);
            writer = Arrays.copyOf(writer, cap);
            readers = Arrays.copyOf(readers, cap);
            readerCount = Arrays.copyOf(readerCount, cap);
            fresh = Arrays.copyOf(fresh, cap);
        }
    }
}
