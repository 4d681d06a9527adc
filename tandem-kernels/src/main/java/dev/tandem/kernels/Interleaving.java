package dev.tandem.kernels;

import java.lang.foreign.MemorySegment;

/**
 * The loop every interleaved layout shares ({@link QuantOps#interleave}): per group of 16 rows,
 * block and row, each byte of the row's block moved to where its layout says, and the last
 * {@code rows % 16} rows copied as they are. A load-time step, once per matrix; plain byte moves,
 * the same for every implementation.
 */
final class Interleaving {

    /** Where byte {@code j} of row {@code row}'s block {@code b} (of {@code blocks} a row) goes, from its group's start. */
    @FunctionalInterface
    interface ByteAt {
        long at(int b, int blocks, int j, int row);
    }

    private Interleaving() {}

    static void groups(TensorType type, MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, int rows,
            int cols, ByteAt byteAt) {
        long rowBytes = type.rowBytes(cols);
        int blockBytes = type.blockBytes();
        int blocks = cols / type.blockSize();
        int grouped = rows - rows % TensorType.X16_ROWS;
        for (int group = 0; group < grouped; group += TensorType.X16_ROWS) {
            long from = srcOffset + group * rowBytes;
            long to = dstOffset + group * rowBytes;
            for (int b = 0; b < blocks; b++) {
                for (int i = 0; i < TensorType.X16_ROWS; i++) {
                    long source = from + i * rowBytes + (long) b * blockBytes;
                    for (int j = 0; j < blockBytes; j++) {
                        dst.set(LittleEndian.I8, to + byteAt.at(b, blocks, j, i), src.get(LittleEndian.I8, source + j));
                    }
                }
            }
        }
        MemorySegment.copy(src, srcOffset + grouped * rowBytes, dst, dstOffset + grouped * rowBytes,
                (rows - grouped) * rowBytes);
    }
}
