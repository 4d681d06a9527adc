package dev.tandem.llm.model;

/**
 * The split of a matrix's rows into row blocks, one task each, and the layout of the output
 * those tasks write.
 *
 * <p>A matmul of a batch of {@code n} inputs writes its output <em>block-major</em>:
 * {@code [block][input][row of block]}. Block {@code k} holds rows {@code [start(k), start(k) +
 * size(k))} and occupies the {@code n * size(k)} floats from {@code start(k) * n}; so each
 * row-block task writes one contiguous region, which a matmul kernel fills in one call (reading
 * its weight rows once for the whole batch), and which it alone writes. With {@code n = 1}, or
 * one block, this is the plain {@code [input][row]} layout. The tasks that consume such an
 * output read it block by block and write plain rows. (In the plain layout a row block's
 * outputs would be {@code n} strided ranges: a task could declare each, but a kernel gets one
 * segment per region, so one matmul call could not fill them.)
 *
 * @param rows      rows of the matrix
 * @param blockRows rows per block (the last block may have fewer)
 */
record RowBlocks(int rows, int blockRows) {

    RowBlocks {
        if (rows < 1 || blockRows < 1) {
            throw new IllegalArgumentException("row blocks: rows = " + rows + " and blockRows = " + blockRows
                    + " must be >= 1");
        }
    }

    /**
     * Blocks of about {@code targetBytes} of weights each, their count rounded up to a multiple of
     * {@code parallelism} (so that each of that many cores gets as many), never more than the rows.
     */
    static RowBlocks of(int rows, long rowBytes, long targetBytes, int parallelism) {
        return of(rows, rowBytes, targetBytes, parallelism, 1);
    }

    /**
     * {@link #of(int, long, long, int)} with every block but the last a multiple of {@code align}
     * rows, so that each starts on a group of an interleaved layout
     * ({@link dev.tandem.kernels.TensorType#Q4_0_X16}: 16).
     */
    static RowBlocks of(int rows, long rowBytes, long targetBytes, int parallelism, int align) {
        long blocks = Math.max(1, Math.round((double) rows * rowBytes / targetBytes));
        blocks = Math.ceilDiv(blocks, parallelism) * parallelism;
        int blockRows = (int) Math.ceilDiv(rows, Math.min(blocks, rows));
        blockRows = Math.min(rows, Math.ceilDiv(blockRows, align) * align);
        return new RowBlocks(rows, blockRows);
    }

    int count() {
        return Math.ceilDiv(rows, blockRows);
    }

    int start(int block) {
        return block * blockRows;
    }

    int size(int block) {
        return Math.min(blockRows, rows - start(block));
    }

    /** Byte offset of block {@code block}'s input {@code first} in an output of a batch of {@code batch}. */
    long offset(int block, int batch, int first) {
        return ((long) start(block) * batch + (long) first * size(block)) * Float.BYTES;
    }

    /** Bytes of {@code inputs} inputs of block {@code block}. */
    long length(int block, int inputs) {
        return (long) inputs * size(block) * Float.BYTES;
    }

    /**
     * The parts of at most {@code partRows} rows that a task over the whole matrix splits into,
     * block by block, as triples {@code {block, first row, end row}} (rows within the block), so
     * that no part spans two blocks of the block-major output.
     */
    int[] parts(int partRows) {
        if (partRows < 1) {
            throw new IllegalArgumentException("row blocks: partRows = " + partRows + " must be >= 1");
        }
        int count = 0;
        for (int k = 0; k < count(); k++) {
            count += Math.ceilDiv(size(k), partRows);
        }
        int[] table = new int[3 * count];
        int at = 0;
        for (int k = 0; k < count(); k++) {
            for (int r = 0; r < size(k); r += partRows) {
                table[at++] = k;
                table[at++] = r;
                table[at++] = Math.min(size(k), r + partRows);
            }
        }
        return table;
    }
}
