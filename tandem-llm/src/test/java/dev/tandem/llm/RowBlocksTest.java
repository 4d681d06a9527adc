package dev.tandem.llm;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class RowBlocksTest {

    @Test
    void blocksCoverTheRowsAndTheLastMayBeShort() {
        RowBlocks split = new RowBlocks(10, 4);
        assertThat(split.count()).isEqualTo(3);
        assertThat(split.start(2)).isEqualTo(8);
        assertThat(split.size(2)).isEqualTo(2);
    }

    @Test
    void blockMajorOutputGivesEachBlockOneContiguousRangeAndTilesTheBuffer() {
        RowBlocks split = new RowBlocks(10, 4);
        int batch = 3;
        long next = 0;
        for (int k = 0; k < split.count(); k++) {
            assertThat(split.offset(k, batch, 0)).as("block %d starts where block %d ended", k, k - 1).isEqualTo(next);
            assertThat(split.offset(k, batch, 2)).isEqualTo(next + 2L * split.size(k) * Float.BYTES);
            next += split.length(k, batch);
        }
        assertThat(next).isEqualTo(10L * batch * Float.BYTES);
    }

    @Test
    void blocksAreSizedByWeightBytes() {
        assertThat(RowBlocks.of(1536, 544, 256 << 10, 1).count()).isEqualTo(3); // 816 KiB in about 256 KiB blocks
        assertThat(RowBlocks.of(1536, 544, 256 << 10, 2).count()).isEqualTo(4); // a multiple of the parallelism
        assertThat(RowBlocks.of(8, 544, 256 << 10, 1).count()).isEqualTo(1);
        assertThat(RowBlocks.of(8, 544, 256 << 10, 2).count()).isEqualTo(2);
        assertThat(RowBlocks.of(4, 1 << 20, 1, 1).count()).isEqualTo(4); // never more blocks than rows
    }

    /** Blocks of an interleaved matrix start on its groups of 16 rows; only the last may be cut. */
    @Test
    void alignedBlocksStartOnGroups() {
        RowBlocks split = RowBlocks.of(258, 288, 40 << 10, 2, 16);
        assertThat(split.blockRows() % 16).isZero();
        assertThat(split.count()).isEqualTo(2); // 72 KiB: two blocks, 144 rows rounded up from 129
        assertThat(split.size(1)).isEqualTo(258 - 144);
        assertThat(RowBlocks.of(1536, 544, 256 << 10, 2, 16).blockRows()).isEqualTo(384);
        assertThat(RowBlocks.of(20, 288, 1, 2, 16).blockRows()).isEqualTo(16); // never fewer than a group
        assertThat(RowBlocks.of(8, 288, 1, 2, 16).blockRows()).isEqualTo(8); // nor more than the rows
    }

    @Test
    void partsCoverEveryRowOnceAndNeverSpanTwoBlocks() {
        RowBlocks split = new RowBlocks(10, 4);
        assertThat(split.parts(3)).containsExactly(
                0, 0, 3, 0, 3, 4,
                1, 0, 3, 1, 3, 4,
                2, 0, 2);
        assertThat(split.parts(4)).containsExactly(0, 0, 4, 1, 0, 4, 2, 0, 2);
        assertThat(split.parts(100)).containsExactly(0, 0, 4, 1, 0, 4, 2, 0, 2);
        assertThat(split.parts(1)).hasSize(3 * 10);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> split.parts(0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("partRows = 0");
    }

    @Test
    void eachSharesLastPartIsCutIntoAlignedPiecesAndTheSharesStillMeetAfterTheFirstTail() {
        // Nine parts of 240 rows: the first core's share is parts 0-4, the second's 5-8.
        int[] table = new RowBlocks(2160, 240).parts(240);
        int[][] cut = RowBlocks.cutShareTails(new int[][] {table}, 2, 4, 16);
        assertThat(cut[0]).hasSize(3 * 15);
        // Part 4 (block 4) became 64 + 64 + 64 + 48 rows, part 8 (block 8) too.
        assertThat(java.util.Arrays.copyOfRange(cut[0], 3 * 4, 3 * 8)).containsExactly(
                4, 0, 64, 4, 64, 128, 4, 128, 192, 4, 192, 240);
        assertThat(java.util.Arrays.copyOfRange(cut[0], 3 * 11, 3 * 15)).containsExactly(
                8, 0, 64, 8, 64, 128, 8, 128, 192, 8, 192, 240);
        // ceil(15 / 2) = 8: the first share ends with the first tail's last piece.
        assertThat(cut[0][3 * (Math.ceilDiv(15, 2) - 1) + 2]).isEqualTo(240);
        assertThat(cut[0][3 * (Math.ceilDiv(15, 2) - 1)]).isEqualTo(4);
        assertThat(table).as("the tables passed in are not changed").hasSize(3 * 9);
    }

    @Test
    void aFusedTasksTailsAreFoundInWhicheverTableHoldsThem() {
        int[] q = new RowBlocks(64, 32).parts(32); // parts 0, 1
        int[] k = new RowBlocks(32, 32).parts(32); // part 2: the first share's tail (ceil(4 / 2) - 1 = 1 is q's)
        int[] v = new RowBlocks(32, 32).parts(32); // part 3: the second share's tail
        int[][] cut = RowBlocks.cutShareTails(new int[][] {q, k, v}, 2, 2, 16);
        assertThat(cut[0]).containsExactly(0, 0, 32, 1, 0, 16, 1, 16, 32);
        assertThat(cut[1]).isSameAs(k);
        assertThat(cut[2]).containsExactly(0, 0, 16, 0, 16, 32);
    }

    @Test
    void tablesStayAsTheyAreWhereNoTwoHalvesOrNoRoomToCut() {
        int[][] tables = {new RowBlocks(2160, 240).parts(240)};
        assertThat(RowBlocks.cutShareTails(tables, 1, 4, 16)).isSameAs(tables);
        assertThat(RowBlocks.cutShareTails(tables, 4, 4, 16)).isSameAs(tables);
        assertThat(RowBlocks.cutShareTails(tables, 2, 1, 16)).isSameAs(tables);
        int[][] one = {new RowBlocks(240, 240).parts(240)};
        assertThat(RowBlocks.cutShareTails(one, 2, 4, 16)).isSameAs(one);
        int[][] narrow = {new RowBlocks(40, 20).parts(20)}; // 20-row tails: one group of 16 each
        assertThat(RowBlocks.cutShareTails(narrow, 2, 4, 16)).isSameAs(narrow);
        // Tails of 48 and 32 rows: both cut into two, as many as the smaller allows.
        int[][] uneven = {new RowBlocks(80, 48).parts(48)};
        assertThat(RowBlocks.cutShareTails(uneven, 2, 4, 16)[0]).containsExactly(
                0, 0, 32, 0, 32, 48, 1, 0, 16, 1, 16, 32);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> RowBlocks.cutShareTails(tables, 2, 0, 16))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("pieces = 0");
    }

    @net.jqwik.api.Property(tries = 300)
    void cuttingKeepsEveryRowOnceInOrderAndTheSharesBoundary(
            @net.jqwik.api.ForAll @net.jqwik.api.constraints.IntRange(min = 1, max = 3) int tableCount,
            @net.jqwik.api.ForAll @net.jqwik.api.constraints.IntRange(min = 1, max = 600) int rows,
            @net.jqwik.api.ForAll @net.jqwik.api.constraints.IntRange(min = 1, max = 200) int blockRows,
            @net.jqwik.api.ForAll @net.jqwik.api.constraints.IntRange(min = 1, max = 200) int partRows,
            @net.jqwik.api.ForAll @net.jqwik.api.constraints.IntRange(min = 1, max = 6) int pieces,
            @net.jqwik.api.ForAll("aligns") int align) {
        int[][] tables = new int[tableCount][];
        for (int t = 0; t < tableCount; t++) {
            tables[t] = new RowBlocks(rows + 7 * t, blockRows).parts(partRows);
        }
        int[][] cut = RowBlocks.cutShareTails(tables, 2, pieces, align);
        int before = 0;
        int after = 0;
        for (int t = 0; t < tableCount; t++) {
            before += tables[t].length / 3;
            after += cut[t].length / 3;
            // Each block's rows once, in order, whatever was cut.
            int block = -1;
            int next = 0;
            for (int e = 0; e < cut[t].length; e += 3) {
                if (cut[t][e] != block) {
                    assertThat(next).isIn(0, block < 0 ? 0 : Math.min(blockRows, rows + 7 * t - block * blockRows));
                    block = cut[t][e];
                    next = 0;
                }
                assertThat(cut[t][e + 1]).isEqualTo(next);
                assertThat(cut[t][e + 2]).isGreaterThan(next);
                next = cut[t][e + 2];
            }
            assertThat(block).isEqualTo((rows + 7 * t - 1) / blockRows);
        }
        if (after != before) {
            int grown = (after - before) / 2;
            assertThat(after - before).isEven();
            // The first share (ceil(after / 2) parts) is the old one and its tail's new pieces.
            assertThat(Math.ceilDiv(after, 2)).isEqualTo(Math.ceilDiv(before, 2) + grown);
        }
    }

    @net.jqwik.api.Provide
    net.jqwik.api.Arbitrary<Integer> aligns() {
        return net.jqwik.api.Arbitraries.of(1, 16);
    }
}
