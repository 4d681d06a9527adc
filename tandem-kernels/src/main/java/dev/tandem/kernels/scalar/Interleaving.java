package dev.tandem.kernels.scalar;

import dev.tandem.kernels.QuantOps;
import dev.tandem.kernels.TensorType;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The loop every interleaved layout shares ({@link QuantOps#interleave}): per group of 16 rows,
 * block and row, each byte of the row's block moved to where its layout says, and the last
 * {@code rows % 16} rows copied as they are. A load-time step, once per matrix; plain byte moves,
 * the same for every implementation.
 */
public final class Interleaving {

    /** Where byte {@code j} of row {@code row}'s block {@code b} (of {@code blocks} a row) goes, from its group's start. */
    @FunctionalInterface
    public interface ByteAt {
        long at(int b, int blocks, int j, int row);
    }

    private Interleaving() {}

    /**
     * Bytes of a group of 16 rows beyond which an interleaving refuses a matrix
     * ({@link ArgumentChecks}): {@link #groups}' table of destinations takes four bytes per byte of
     * a group.
     */
    public static final long MAX_GROUP_BYTES = 1L << 28;

    /**
     * {@link #groups} for a float type ({@code F32}, {@code F16}, {@code BF16}): value {@code k} of
     * the 16 rows side by side ({@link FloatsX16#valueAt}).
     */
    public static void floats(TensorType type, MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int rows,
            int cols) {
        int bytes = type.blockBytes();
        groups(type, src, srcOffset, dst, dstOffset, rows, cols, (k, values, j, row) ->
                FloatsX16.valueAt(bytes, k, row) + j);
    }

    /**
     * Interleaves the groups of 16 rows of {@code src} into {@code dst}. Where each byte of a group
     * goes is the same for every group, so it is worked out once, into a table, and checked to
     * be one to one onto the group; then each group is copied in bulk into an array, permuted by
     * the table, and copied out in bulk (byte by byte through the segments and the layout's
     * function, it took 3.6-5.6 ns a byte: some 15-20 s of a 4 GB file's load).
     *
     * @throws IllegalStateException if {@code byteAt} does not map a group's bytes one to one
     *     onto the group (a layout's bug: no byte has moved)
     */
    public static void groups(TensorType type, MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int rows,
            int cols, ByteAt byteAt) {
        long rowBytes = type.rowBytes(cols);
        int blockBytes = type.blockBytes();
        int blocks = cols / type.blockSize();
        int grouped = rows - rows % TensorType.X16_ROWS;
        if (grouped > 0) {
            int groupBytes = (int) (TensorType.X16_ROWS * rowBytes); // at most MAX_GROUP_BYTES (ArgumentChecks)
            int[] destination = new int[groupBytes]; // of each byte of a group, in the order of its rows
            boolean[] taken = new boolean[groupBytes];
            for (int i = 0; i < TensorType.X16_ROWS; i++) {
                for (int b = 0; b < blocks; b++) {
                    int source = (int) (i * rowBytes + (long) b * blockBytes);
                    for (int j = 0; j < blockBytes; j++) {
                        long to = byteAt.at(b, blocks, j, i);
                        if (to < 0 || to >= groupBytes || taken[(int) to]) {
                            throw new IllegalStateException(type + "'s interleaving puts byte " + j + " of block "
                                    + b + " of row " + i + " at " + to + ", outside its group of " + groupBytes
                                    + " bytes or onto another byte");
                        }
                        taken[(int) to] = true;
                        destination[source + j] = (int) to;
                    }
                }
            }
            byte[] in = new byte[groupBytes];
            byte[] out = new byte[groupBytes];
            for (int group = 0; group < grouped; group += TensorType.X16_ROWS) {
                MemorySegment.copy(src, ValueLayout.JAVA_BYTE, srcOffset + group * rowBytes, in, 0, groupBytes);
                permute(in, out, destination);
                MemorySegment.copy(out, 0, dst, ValueLayout.JAVA_BYTE, dstOffset + group * rowBytes, groupBytes);
            }
        }
        MemorySegment.copy(src, srcOffset + grouped * rowBytes, dst, dstOffset + grouped * rowBytes,
                (rows - grouped) * rowBytes);
    }

    /**
     * {@code out[destination[k]] = in[k]} for every {@code k}: one group. A method of its own, so
     * that C2 compiles it after a few groups of the first matrix rather than waiting for an
     * on-stack replacement of a loop inside each matrix's call, and so that the launcher's AOT
     * cache carries its profile (the training run's f16 model interleaves through it too).
     */
    private static void permute(byte[] in, byte[] out, int[] destination) {
        for (int k = 0; k < in.length; k++) {
            out[destination[k]] = in[k];
        }
    }
}
