package dev.tandem.llm;

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

    /**
     * The part tables of one task ({@link #parts} triples; a fused task's tables in the order its
     * parts are numbered) with the last part of each of two cores' shares cut into up to
     * {@code pieces} parts of whole {@code align} rows, so that the core that finishes its share
     * first takes little from the other's: a core's share is the first
     * {@code ceil(parts / 2)} parts or the rest, each walked from its front, the other's taken
     * from its back once its own is gone ({@code TaskNode.openParts}). Both tails are cut into
     * as many pieces, so the shares' boundary stays after the first tail's last piece. Tables
     * are returned as they are for other than two cores (their shares are not two halves), for
     * a single part, or where a tail has fewer than {@code 2 * align} rows.
     */
    static int[][] cutShareTails(int[][] tables, int cores, int pieces, int align) {
        if (pieces < 1 || align < 1) {
            throw new IllegalArgumentException("row blocks: pieces = " + pieces + " and align = " + align
                    + " must be >= 1");
        }
        int count = 0;
        for (int[] table : tables) {
            count += table.length / 3;
        }
        if (cores != 2 || count < 2) {
            return tables;
        }
        int[] tails = {Math.ceilDiv(count, 2) - 1, count - 1};
        int cut = pieces;
        for (int tail : tails) {
            int[] at = locate(tables, tail);
            int rows = tables[at[0]][3 * at[1] + 2] - tables[at[0]][3 * at[1] + 1];
            cut = Math.min(cut, rows / align);
        }
        if (cut < 2) {
            return tables;
        }
        int[][] result = tables.clone();
        // The later tail first, so that cutting it moves nothing the earlier one is found by.
        for (int t = tails.length - 1; t >= 0; t--) {
            int[] at = locate(result, tails[t]);
            result[at[0]] = cut(result[at[0]], at[1], cut, align);
        }
        return result;
    }

    /** Table and entry of part {@code part} of tables numbered one after another. */
    private static int[] locate(int[][] tables, int part) {
        int table = 0;
        while (part >= tables[table].length / 3) {
            part -= tables[table].length / 3;
            table++;
        }
        return new int[] {table, part};
    }

    /** {@code table} with entry {@code entry} cut into {@code pieces} parts of whole {@code align} rows, the last taking the rest. */
    private static int[] cut(int[] table, int entry, int pieces, int align) {
        int block = table[3 * entry];
        int first = table[3 * entry + 1];
        int end = table[3 * entry + 2];
        int groups = (end - first) / align;
        int[] result = new int[table.length + 3 * (pieces - 1)];
        System.arraycopy(table, 0, result, 0, 3 * entry);
        int at = 3 * entry;
        int row = first;
        for (int p = 0; p < pieces; p++) {
            int next = p == pieces - 1 ? end : row + (groups / pieces + (p < groups % pieces ? 1 : 0)) * align;
            result[at++] = block;
            result[at++] = row;
            result[at++] = next;
            row = next;
        }
        System.arraycopy(table, 3 * entry + 3, result, at, table.length - 3 * entry - 3);
        return result;
    }
}
