package dev.tandem.llm.model;

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
}
