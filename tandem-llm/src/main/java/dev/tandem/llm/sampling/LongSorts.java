package dev.tandem.llm.sampling;

/** In-place heap sorts of a prefix of a {@code long[]}: no allocation, {@code O(n log n)} at worst. */
final class LongSorts {

    private LongSorts() {}

    /** Sorts {@code a[0, n)} largest first. */
    static void descending(long[] a, int n) {
        minHeap(a, n);
        descendingFromMinHeap(a, n);
    }

    /** Arranges {@code a[0, n)} as a min-heap: {@code a[i] <= a[2i + 1], a[2i + 2]}. */
    static void minHeap(long[] a, int n) {
        for (int i = n / 2 - 1; i >= 0; i--) {
            siftDown(a, i, n);
        }
    }

    /** Turns the min-heap {@code a[0, n)} into {@code a[0, n)} sorted largest first. */
    static void descendingFromMinHeap(long[] a, int n) {
        for (int end = n - 1; end > 0; end--) {
            long smallest = a[0];
            a[0] = a[end];
            a[end] = smallest;
            siftDown(a, 0, end);
        }
    }

    /** Restores the min-heap order of {@code a[0, n)} below {@code i}. */
    static void siftDown(long[] a, int i, int n) {
        long value = a[i];
        int at = i;
        while (true) {
            int child = 2 * at + 1;
            if (child >= n) {
                break;
            }
            if (child + 1 < n && a[child + 1] < a[child]) {
                child++;
            }
            if (a[child] >= value) {
                break;
            }
            a[at] = a[child];
            at = child;
        }
        a[at] = value;
    }
}
