package dev.tandem.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.kernels.scalar.ArgumentChecks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * The argument checks run on every kernel call, on the device's cores: a passing check must allocate
 * nothing. (A message put together before it was needed cost about 100 MB of garbage a minute in a
 * batch-1 decode, and with it collections that stop every core.)
 */
class ArgumentChecksAllocationTest {

    private static final Arena ARENA = Arena.ofShared();
    private static final MemorySegment BIG = ARENA.allocate(1 << 20, 64);

    @AfterAll
    static void close() {
        ARENA.close();
    }

    @Test
    void passingChecksAllocateNothing() {
        Map<String, Runnable> checks = new LinkedHashMap<>();
        for (TensorType type : new TensorType[] {TensorType.F32_X16, TensorType.Q8_0_X16, TensorType.Q4_0_X16,
                TensorType.Q4_K_X16, TensorType.Q6_K_X16}) {
            checks.put("matmulBlocks " + type, () ->
                    ArgumentChecks.matmulBlocks(type, BIG, 0, BIG, 0, BIG, 0, 64, 256, 4, 0, 64));
        }
        checks.put("rmsnorm", () -> ArgumentChecks.rmsnorm(BIG, 0, BIG, 0, BIG, 0, 512, 1e-5f));
        checks.put("rope", () -> ArgumentChecks.rope(BIG, 0, 8, 64, 7, 10_000f));
        checks.put("siluMul", () -> ArgumentChecks.siluMul(BIG, 0, BIG, 0, BIG, 0, 512));
        checks.put("residualAdd", () -> ArgumentChecks.residualAdd(BIG, 0, BIG, 0, 512));
        checks.put("embedF32", () -> ArgumentChecks.embedF32(BIG, 0, BIG, 0, 32, 256, 5));
        checks.put("embedQ8_0", () -> ArgumentChecks.embedQ8_0(BIG, 0, BIG, 0, 32, 256, 5));
        for (TensorType type : new TensorType[] {TensorType.Q4_0, TensorType.Q4_K, TensorType.Q6_K}) {
            checks.put("embed " + type, () -> ArgumentChecks.embed(type, BIG, 0, BIG, 0, 32, 256, 5));
        }
        com.sun.management.ThreadMXBean threads =
                (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        int calls = 20_000;
        for (Map.Entry<String, Runnable> check : checks.entrySet()) {
            Runnable call = check.getValue();
            for (int i = 0; i < calls; i++) { // warm up: any one-time class initialisation happens here
                call.run();
            }
            // A check that allocates allocates on every call: at least 16 bytes, 320 kB per round. A stray
            // object of the JVM's own (a deoptimisation, a compilation's bookkeeping) lands in one round
            // only, so the quietest of a few rounds is the figure.
            long allocated = Long.MAX_VALUE;
            for (int round = 0; round < 5 && allocated >= 1_000; round++) {
                long before = threads.getCurrentThreadAllocatedBytes();
                for (int i = 0; i < calls; i++) {
                    call.run();
                }
                allocated = Math.min(allocated, threads.getCurrentThreadAllocatedBytes() - before);
            }
            assertThat(allocated).as("bytes allocated by %d passing %s checks", calls, check.getKey())
                    .isLessThan(1_000);
        }
    }
}
