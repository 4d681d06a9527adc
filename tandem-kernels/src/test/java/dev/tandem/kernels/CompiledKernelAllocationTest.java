package dev.tandem.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.kernels.scalar.LittleEndian;
import dev.tandem.kernels.scalar.Scratch;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The interleaved kernels and the attention scores, once C2 has compiled them, allocate nothing:
 * their working arrays are the thread's {@link Scratch}, and a vector the compiler failed to keep
 * in registers is an object per operation, megabytes a call. C2 has failed that way here more than once (a loop past
 * its node budget, a vector helper compiled out of line), at a tenth of the speed and with no other
 * symptom; this catches it in the order this JVM compiles the kernels in, which is not the
 * decoder's, so a clean run here is necessary rather than sufficient.
 */
class CompiledKernelAllocationTest {

    @ParameterizedTest(name = "{0} batch {1}")
    @CsvSource({"Q4_0_X16, 1", "Q4_0_X16, 8", "Q4_K_X16, 1", "Q4_K_X16, 8", "Q8_0_X16, 1", "Q8_0_X16, 8",
            "Q8_0_X16, 13", "Q6_K_X16, 1", "Q6_K_X16, 8", "F32_X16, 1", "F32_X16, 8", "F32_X16, 13",
            "F16_X16, 1", "F16_X16, 8", "F16_X16, 13", "BF16_X16, 1", "BF16_X16, 8", "BF16_X16, 13",
            "Q5_0_X16, 1", "Q5_0_X16, 8", "Q4_1_X16, 1", "Q4_1_X16, 8", "Q5_1_X16, 1", "Q5_1_X16, 8",
            "IQ4_NL_X16, 1", "IQ4_NL_X16, 8", "IQ4_XS_X16, 1", "IQ4_XS_X16, 8", "Q5_K_X16, 1", "Q5_K_X16, 8",
            "Q3_K_X16, 1", "Q3_K_X16, 8", "Q2_K_X16, 1", "Q2_K_X16, 8"})
    void warmKernelsAllocateNothing(TensorType type, int batch) {
        if (!Ops.preferred().name().startsWith("vector")) {
            return; // the scalar kernels have no vectors to box
        }
        int rows = 64;
        int cols = 1024;
        try (Arena arena = Arena.ofConfined()) {
            TensorType plain = type.source();
            long bytes = plain.rowBytes(cols) * rows;
            MemorySegment src = arena.allocate(bytes, 64);
            Random random = new Random(5);
            for (long i = 0; i < bytes; i++) {
                src.set(LittleEndian.I8, i, (byte) random.nextInt(256));
            }
            short small = Float.floatToFloat16(0.01f); // random f16 fields would include NaNs (widenF16's path)
            for (long block = 0; block < bytes / plain.blockBytes(); block++) {
                long at = block * plain.blockBytes();
                switch (plain) {
                    case Q6_K -> src.set(LittleEndian.F16, at + 208, small); // q6_K's d is last
                    case Q3_K -> src.set(LittleEndian.F16, at + 108, small);
                    case Q2_K -> {
                        src.set(LittleEndian.F16, at + 80, small);
                        src.set(LittleEndian.F16, at + 82, small);
                    }
                    case Q4_K, Q5_K, Q4_1, Q5_1 -> {
                        src.set(LittleEndian.F16, at, small);
                        src.set(LittleEndian.F16, at + 2, small);
                    }
                    default -> src.set(LittleEndian.F16, at, small);
                }
            }
            MemorySegment w = arena.allocate(bytes, 64);
            KernelOps ops = Ops.preferred();
            ops.interleave(plain, src, 0, w, 0, rows, cols);
            MemorySegment x = arena.allocate((long) batch * cols * Float.BYTES, 64);
            for (int i = 0; i < batch * cols; i++) {
                x.setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i, random.nextFloat() - 0.5f);
            }
            MemorySegment out = arena.allocate((long) batch * rows * Float.BYTES, 64);
            com.sun.management.ThreadMXBean threads =
                    (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
            // The decoder's calls: with an input key, each new key converting the inputs and the
            // next call under it keeping them; every third call without a key.
            long[] calls = {0};
            long least = leastBytesPerCall(() -> {
                long n = calls[0]++;
                long key = n % 3 == 0 ? 0 : n / 3 + 1;
                ops.matmul(type, w, 0, x, 0, out, 0, rows, cols, batch, 0, rows, key);
            });
            assertThat(least).as("bytes allocated per warm %s call at batch %d", type, batch).isZero();
        }
    }

    /** With a key count that is not a multiple of four, so that the keys left after the four-key loop count too. */
    @ParameterizedTest(name = "{0} keys")
    @CsvSource({"7", "64"})
    void warmAttentionScoresAllocateNothing(int keys) {
        if (!Ops.preferred().name().startsWith("vector")) {
            return;
        }
        int headDim = 64;
        try (Arena arena = Arena.ofConfined()) {
            Random random = new Random(9);
            MemorySegment q = arena.allocate((long) headDim * Float.BYTES, 64);
            MemorySegment k = arena.allocate((long) keys * headDim * Float.BYTES, 64);
            for (int i = 0; i < headDim; i++) {
                q.setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i, random.nextFloat() - 0.5f);
            }
            for (int i = 0; i < keys * headDim; i++) {
                k.setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i, random.nextFloat() - 0.5f);
            }
            MemorySegment scores = arena.allocate((long) keys * Float.BYTES, 64);
            KernelOps ops = Ops.preferred();
            long least = leastBytesPerCall(() -> ops.qk(q, 0, k, 0, scores, 0, headDim, headDim, keys, 0.125f));
            assertThat(least).as("bytes allocated per warm qk call over %d keys", keys).isZero();
            // an f16 cache's keys: the same bytes read as halves
            MemorySegment wide = arena.allocate((long) keys * headDim * Float.BYTES, 64);
            least = leastBytesPerCall(() -> ops.widenF16(k, 0, headDim, headDim, keys, wide, 0));
            assertThat(least).as("bytes allocated per warm widenF16 call over %d keys", keys).isZero();
        }
    }

    /**
     * The rest of attention's per-block work: the block's softmax (its exponentials), the
     * probabilities times the values, the online merge and the final normalization. Each runs per
     * row, head and KV block, so a boxed vector in any of them is gigabytes a minute of serving.
     */
    @ParameterizedTest(name = "{0} positions")
    @CsvSource({"7", "64"})
    void warmAttentionBlockStepsAllocateNothing(int n) {
        if (!Ops.preferred().name().startsWith("vector")) {
            return;
        }
        int headDim = 64;
        try (Arena arena = Arena.ofConfined()) {
            Random random = new Random(10);
            MemorySegment scores = arena.allocate((long) n * Float.BYTES, 64);
            MemorySegment values = arena.allocate((long) n * headDim * Float.BYTES, 64);
            for (int i = 0; i < n * headDim; i++) {
                values.setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i, random.nextFloat() - 0.5f);
            }
            MemorySegment stats = arena.allocate(2L * AttentionOps.STATS_FLOATS * Float.BYTES, 64);
            MemorySegment partial = arena.allocate((long) headDim * Float.BYTES, 64);
            MemorySegment running = arena.allocate((long) headDim * Float.BYTES, 64);
            MemorySegment out = arena.allocate((long) headDim * Float.BYTES, 64);
            long statBytes = AttentionOps.STATS_FLOATS * Float.BYTES;
            KernelOps ops = Ops.preferred();
            Runnable fill = () -> {
                for (int i = 0; i < n; i++) {
                    scores.setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i, 4 * (random.nextFloat() - 0.5f));
                }
            };
            fill.run();
            assertThat(leastBytesPerCall(() -> {
                fill.run();
                ops.softmaxPrepare(scores, 0, stats, statBytes, n);
            })).as("bytes per warm softmaxPrepare call over %d positions", n).isZero();
            assertThat(leastBytesPerCall(() -> ops.pv(scores, 0, values, 0, partial, 0, headDim, headDim, n)))
                    .as("bytes per warm pv call over %d positions", n).isZero();
            assertThat(leastBytesPerCall(() -> {
                ops.onlineInit(stats, 0, running, 0, headDim);
                ops.onlineUpdate(stats, 0, running, 0, stats, statBytes, partial, 0, headDim);
                ops.normalize(stats, 0, running, 0, out, 0, headDim);
            })).as("bytes per warm online init, update and normalize").isZero();
        }
    }

    /**
     * The fewest bytes a call allocated, per round of calls: rounds until one allocates nothing, or
     * 20 s. C2 compiles the loops within a few thousand calls, after which a boxing kernel allocates
     * kilobytes to megabytes a call; the first round also grows the thread's scratch.
     */
    private static long leastBytesPerCall(Runnable call) {
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long least = Long.MAX_VALUE;
        long deadline = System.nanoTime() + 20_000_000_000L;
        int calls = 200;
        while (System.nanoTime() < deadline && least > 0) {
            long before = threads.getCurrentThreadAllocatedBytes();
            for (int i = 0; i < calls; i++) {
                call.run();
            }
            least = Math.min(least, (threads.getCurrentThreadAllocatedBytes() - before) / calls);
        }
        return least;
    }
}
