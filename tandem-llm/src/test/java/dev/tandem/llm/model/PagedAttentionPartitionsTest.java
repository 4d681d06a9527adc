package dev.tandem.llm.model;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.kernels.Ops;
import org.junit.jupiter.api.Test;

class PagedAttentionPartitionsTest {

    @Test
    void aRowsPartitionsDependOnItsContextAlone() {
        var attention = new PagedAttention(Ops.scalar(), 4, 1, 16, 16, 4, 16, 8, KvType.F32);
        assertThat(attention.partitionsOf(1)).isEqualTo(1);
        assertThat(attention.partitionsOf(16)).isEqualTo(1); // 256 positions
        assertThat(attention.partitionsOf(17)).isEqualTo(2);
        assertThat(attention.blocksPerPartition(17)).isEqualTo(9);
        assertThat(attention.partitionsOf(63)).isEqualTo(4);
        assertThat(attention.partitionsOf(128)).isEqualTo(8);
        assertThat(attention.partitionsOf(4096)).isEqualTo(8);
        assertThat(attention.blocksPerPartition(4096)).isEqualTo(512);
        for (int blocks = 1; blocks <= 300; blocks++) {
            int per = attention.blocksPerPartition(blocks);
            int parts = attention.partitionsOf(blocks);
            assertThat((long) per * parts).as("blocks %d", blocks).isGreaterThanOrEqualTo(blocks);
            assertThat((long) per * (parts - 1)).as("no empty partition, blocks %d", blocks).isLessThan(blocks);
            assertThat(parts).isBetween(1, 8);
        }
        var long256 = new PagedAttention(Ops.scalar(), 4, 1, 16, 256, 4, 16, 8, KvType.F32);
        assertThat(long256.partitionsOf(1)).isEqualTo(1);
        assertThat(long256.partitionsOf(2)).isEqualTo(2);
    }
}
