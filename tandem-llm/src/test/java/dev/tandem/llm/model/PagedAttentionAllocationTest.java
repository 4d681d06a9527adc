package dev.tandem.llm.model;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.TaskContext;
import dev.tandem.kernels.KernelOps;
import dev.tandem.kernels.Ops;
import java.lang.management.ManagementFactory;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Attention's tasks, run through their kernels as a core runs them, allocate nothing once
 * compiled. A kernel method warm on its own may still box every vector where C2 inlines it into
 * the task's body and runs out of room for the vector intrinsics there: softmaxPrepare did so in
 * the server (its exponentials were most of the heap's garbage), while the kernels module's own
 * allocation test, which calls it directly, passed. {@code bin/compile-commands} keeps it, and
 * attention's other kernels, compilations of their own.
 */
class PagedAttentionAllocationTest {

    /**
     * The 0.5B shape's attention: 14 heads over 2 KV heads of 64, blocks of 64 positions, tiles of
     * 7 heads; over an f16 cache (whose kernels widen the keys and values first) and an f32 one.
     */
    @ParameterizedTest(name = "{0} rows from position {1}, {2} cache")
    @CsvSource({"16, 500, F16", "1, 100, F16", "16, 500, F32", "1, 100, F32"})
    void aWarmTaskAllocatesNothing(int rows, int first, KvType type) {
        KernelOps ops = Ops.preferred();
        if (!ops.name().startsWith("vector")) {
            return;
        }
        int heads = 14;
        int kvHeads = 2;
        int headDim = 64;
        int block = 64;
        var attention = new PagedAttention(ops, heads, kvHeads, headDim, block, 7, 16, 8, type);
        var o = new RecordingOrchestrator();
        int[] table = new int[64];
        for (int j = 0; j < table.length; j++) {
            table[j] = 2 * j; // apart: one run a block
        }
        int[] contexts = new int[rows];
        int[][] tables = new int[rows][];
        for (int r = 0; r < rows; r++) {
            contexts[r] = first + r + 1;
            tables[r] = table;
        }
        long cache = 128L * block * kvHeads * headDim * type.bytes();
        long rowBytes = (long) heads * headDim * Float.BYTES;
        attention.submit(o, attention.allocateScratch(o::allocate, rows), rows,
                new RecordingOrchestrator.Plain("q", rows * rowBytes), new RecordingOrchestrator.Plain("keys", cache),
                new RecordingOrchestrator.Plain("values", cache), 0, contexts, tables,
                new RecordingOrchestrator.Plain("out", rows * rowBytes), 0);
        try (var memory = new RecordingOrchestrator.Memory()) {
            var random = new java.util.Random(3);
            for (var name : new String[] {"q", "keys", "values"}) {
                var buffer = o.tasks.stream().flatMap(t -> java.util.Arrays.stream(t.accesses()))
                        .map(a -> a.region().buffer()).filter(b -> b.name().equals(name)).findFirst().orElseThrow();
                var segment = memory.of(buffer);
                if (type == KvType.F16 && !name.equals("q")) {
                    for (long i = 0; i < segment.byteSize() / Short.BYTES; i++) {
                        segment.setAtIndex(java.lang.foreign.ValueLayout.JAVA_SHORT, i,
                                Float.floatToFloat16(random.nextFloat() - 0.5f));
                    }
                    continue;
                }
                for (long i = 0; i < segment.byteSize() / Float.BYTES; i++) {
                    segment.setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i, random.nextFloat() - 0.5f);
                }
            }
            TaskContext[] contextsOfTasks = o.tasks.stream().map(t -> t.context(memory)).toArray(TaskContext[]::new);
            long least = leastBytesPerRound(() -> {
                for (int t = 0; t < contextsOfTasks.length; t++) {
                    try {
                        o.tasks.get(t).kernel().run(contextsOfTasks[t]);
                    } catch (Exception e) {
                        throw new AssertionError(e);
                    }
                }
            });
            assertThat(least).as("bytes per warm round of the %d tasks (%s)", o.tasks.size(),
                    o.tasks.stream().map(RecordingOrchestrator.Submitted::name).toList()).isZero();
        }
    }

    /** The fewest bytes a round of the tasks allocated: rounds until one allocates nothing, or 20 s. */
    private static long leastBytesPerRound(Runnable round) {
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long least = Long.MAX_VALUE;
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (System.nanoTime() < deadline && least > 0) {
            long before = threads.getCurrentThreadAllocatedBytes();
            for (int i = 0; i < 50; i++) {
                round.run();
            }
            least = Math.min(least, (threads.getCurrentThreadAllocatedBytes() - before) / 50);
        }
        return least;
    }
}
