package dev.tandem.llm.model;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.Access;
import dev.tandem.Region;
import dev.tandem.kernels.Ops;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * What the attention of a prompt's rows declares: each task reads a run of KV blocks once
 * however many of its rows attend to it, so a chunk of one sequence's rows costs a task a few
 * regions (the host's dependency lookups and the heap's garbage per step), not a few per row.
 */
class PagedAttentionRegionsTest {

    private static final int HEADS = 4;
    private static final int KV_HEADS = 2;
    private static final int HEAD_DIM = 8;
    private static final int BLOCK = 4;

    /** A prompt's rows at positions {@code [first, first + rows)} of one sequence whose table is {@code table}. */
    private static RecordingOrchestrator prompt(PagedAttention attention, int first, int rows, int[] table, int window) {
        RecordingOrchestrator o = new RecordingOrchestrator();
        int[] contexts = new int[rows];
        int[][] tables = new int[rows][];
        for (int r = 0; r < rows; r++) {
            contexts[r] = first + r + 1;
            tables[r] = table;
        }
        long cache = 1024L * BLOCK * KV_HEADS * HEAD_DIM * Float.BYTES;
        attention.submit(o, attention.allocateScratch(o::allocate, rows), rows,
                new RecordingOrchestrator.Plain("q", (long) rows * HEADS * HEAD_DIM * Float.BYTES), new RecordingOrchestrator.Plain("keys", cache),
                new RecordingOrchestrator.Plain("values", cache), 0, contexts, tables,
                new RecordingOrchestrator.Plain("out", (long) rows * HEADS * HEAD_DIM * Float.BYTES), window);
        return o;
    }

    private static List<Region> reads(RecordingOrchestrator.Submitted task, String buffer) {
        List<Region> regions = new ArrayList<>();
        for (Access a : task.accesses()) {
            if (a.region().buffer().name().equals(buffer)) {
                regions.add(a.region());
            }
        }
        regions.sort(Comparator.comparingLong(Region::offset));
        return regions;
    }

    private static int[] table(int blocks, boolean adjacent) {
        int[] table = new int[blocks];
        for (int j = 0; j < blocks; j++) {
            table[j] = adjacent ? 3 + j : 800 - 3 * j; // apart: descending, with gaps
        }
        return table;
    }

    @Test
    void aChunkOfOneSequencesRowsReadsEachKvBlockOnce() {
        var attention = new PagedAttention(Ops.scalar(), HEADS, KV_HEADS, HEAD_DIM, BLOCK, HEADS, 16, 8, KvType.F32);
        for (boolean adjacent : new boolean[] {true, false}) {
            int[] table = table(200, adjacent);
            RecordingOrchestrator o = prompt(attention, 100, 48, table, 0); // contexts 101..148: up to 37 blocks, 1 partition
            assertThat(o.tasks).hasSize(3); // one task per chunk of 16 rows
            for (int c = 0; c < o.tasks.size(); c++) {
                RecordingOrchestrator.Submitted task = o.tasks.get(c);
                int blocks = Math.ceilDiv(100 + 16 * (c + 1), BLOCK); // the chunk's last row's context
                for (String cache : new String[] {"keys", "values"}) {
                    List<Region> regions = reads(task, cache);
                    for (int k = 1; k < regions.size(); k++) {
                        assertThat(regions.get(k).offset()).as("%s regions overlap: %s", cache, regions)
                                .isGreaterThanOrEqualTo(regions.get(k - 1).end());
                    }
                    // Adjacent blocks are one run; apart, one region a block the chunk reads.
                    assertThat(regions.size()).as("%s, adjacent %s", cache, adjacent).isEqualTo(adjacent ? 1 : blocks);
                }
                // 1 query region, the KV runs, one output region a row (the task normalizes).
                assertThat(task.accesses()).hasSize(1 + 2 * (adjacent ? 1 : blocks) + 16);
            }
        }
    }

    @Test
    void rowsOfSeveralPartitionsShareTheirScratchCellsAndRuns() {
        var attention = new PagedAttention(Ops.scalar(), HEADS, KV_HEADS, HEAD_DIM, BLOCK, 2, 16, 8, KvType.F32);
        RecordingOrchestrator o = prompt(attention, 400, 16, table(200, true), 0); // 101-104 blocks: 2 partitions each
        // per tile of 2 heads: 2 partition tasks and a combine
        assertThat(o.tasks).extracting(RecordingOrchestrator.Submitted::name)
                .containsExactly("attention", "attention", "attention_combine", "attention", "attention",
                        "attention_combine");
        for (RecordingOrchestrator.Submitted task : o.tasks) {
            if (task.name().equals("attention")) {
                // 5 scratch cells of the chunk's rows, the query's, 1 run of keys, 1 of values
                assertThat(task.accesses()).hasSize(5 + 1 + 2);
            } else {
                // running stats and output of 2 slabs, then one output region a row
                assertThat(task.accesses()).hasSize(2 * 2 + 16);
            }
        }
    }

    /** In either element type of the cache: its rows are as many bytes apart as that type makes them. */
    @ParameterizedTest
    @EnumSource(KvType.class)
    void aSlidingWindowReadsFromItsFirstPositionOnly(KvType type) {
        var attention = new PagedAttention(Ops.scalar(), HEADS, KV_HEADS, HEAD_DIM, BLOCK, HEADS, 16, 8, type);
        long row = (long) KV_HEADS * HEAD_DIM * type.bytes();
        RecordingOrchestrator o = prompt(attention, 50, 16, table(200, true), 6); // rows at 50..65, each sees 6 positions
        List<Region> keys = reads(o.tasks.getFirst(), "keys");
        assertThat(keys).hasSize(1);
        // positions 45 (the first row's window: 51 - 6) to 66 (the last row's context), blocks from 3
        assertThat(keys.getFirst().offset()).isEqualTo((3L * BLOCK + 45) * row);
        assertThat(keys.getFirst().length()).isEqualTo((66 - 45) * row);
    }
}
