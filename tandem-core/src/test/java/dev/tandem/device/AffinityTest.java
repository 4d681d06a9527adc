package dev.tandem.device;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.tandem.Access;
import dev.tandem.CpuDeviceConfig;
import dev.tandem.Kernel;
import dev.tandem.TaskContext;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class AffinityTest {

    /** Whether this platform lets a thread pin itself (a container may refuse the call). */
    private static boolean pinningAllowed() throws InterruptedException {
        if (!Affinity.supported() || Affinity.allowed().length == 0) {
            return false;
        }
        int cpu = Affinity.allowed()[0];
        boolean[] pinned = new boolean[1];
        Thread probe = Thread.ofPlatform().start(() -> pinned[0] = Affinity.pin(cpu));
        probe.join();
        return pinned[0];
    }

    @Test
    void pinnedCoresRunOnOneCpuEachAndDistinctOnes() throws InterruptedException {
        assumeTrue(pinningAllowed(), "threads may be pinned here (Linux, and not refused)");
        int[] allowed = Affinity.allowed();
        assumeTrue(allowed.length >= 2, "needs two CPUs");
        CpuCores device = (CpuCores) Device.cpu(CpuDeviceConfig.withCores(2).withPinnedCores(true), null, "pinned");
        try {
            // Enough tasks that both cores take some: each waits until the other core has run one.
            Map<Integer, int[]> seen = new ConcurrentHashMap<>();
            CountDownLatch both = new CountDownLatch(2);
            Kernel record = new Kernel() {
                @Override public String name() { return "record"; }
                @Override public void run(TaskContext context) {
                    if (seen.putIfAbsent(context.core(), Affinity.allowed()) == null) {
                        both.countDown();
                    }
                    try {
                        both.await(5, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            };
            DeviceContractTest.Group group = new DeviceContractTest.Group(2);
            TaskNode[] tasks = new TaskNode[2];
            for (int i = 0; i < 2; i++) {
                tasks[i] = new TaskNode(record, new Access[0], new long[0], group, i, null);
                assertThat(tasks[i].publish()).isTrue();
            }
            device.submit(tasks, 2);
            group.await();
            assertThat(seen).containsOnlyKeys(0, 1);
            int[] pinned = device.pinnedCpus();
            assertThat(pinned[0]).isNotEqualTo(pinned[1]);
            for (int core = 0; core < 2; core++) {
                assertThat(seen.get(core)).as("core %d runs on its CPU only", core).containsExactly(pinned[core]);
                assertThat(Arrays.stream(allowed).anyMatch(c -> c == pinned[0])).isTrue();
            }
        } finally {
            device.close();
            device.join();
        }
    }

    @Test
    void oneCoreDevicesMadeInTurnStartAtSuccessiveCpus() throws InterruptedException {
        assumeTrue(pinningAllowed(), "threads may be pinned here (Linux, and not refused)");
        assumeTrue(Affinity.allowed().length >= 2, "needs two CPUs");
        CpuCores first = (CpuCores) Device.cpu(CpuDeviceConfig.withCores(1).withPinnedCores(true), null, "first");
        CpuCores second = (CpuCores) Device.cpu(CpuDeviceConfig.withCores(1).withPinnedCores(true), null, "second");
        try {
            long deadline = System.nanoTime() + 5_000_000_000L;
            while ((first.pinnedCpus()[0] < 0 || second.pinnedCpus()[0] < 0) && System.nanoTime() < deadline) {
                Thread.onSpinWait(); // the cores pin themselves as they start
            }
            assertThat(first.pinnedCpus()[0]).isNotNegative().isNotEqualTo(second.pinnedCpus()[0]);
        } finally {
            for (CpuCores device : new CpuCores[] {first, second}) {
                device.close();
                device.join();
            }
        }
    }

    @Test
    void masksEncodeAndDecodeEveryCpu() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mask = arena.allocate(128);
            int[] cpus = {0, 1, 7, 8, 9, 63, 64, 511, 1023};
            for (int cpu : cpus) {
                Affinity.add(mask, cpu);
            }
            assertThat(Affinity.cpus(mask)).containsExactly(cpus);
            assertThat(mask.get(ValueLayout.JAVA_BYTE, 0)).isEqualTo((byte) 0b1000_0011);
            assertThat(mask.get(ValueLayout.JAVA_BYTE, 1)).isEqualTo((byte) 0b0000_0011);
            assertThat(Affinity.cpus(arena.allocate(128))).isEmpty();
        }
    }

    @Test
    void theAllowedCpusAreTheKernelsListForThisThread() throws IOException {
        assumeTrue(Affinity.supported(), "thread affinity is a Linux feature");
        Path status = Path.of("/proc/thread-self/status");
        assumeTrue(Files.isReadable(status), "needs /proc");
        String list = Files.readAllLines(status).stream()
                .filter(line -> line.startsWith("Cpus_allowed_list:")).findFirst().orElseThrow()
                .substring("Cpus_allowed_list:".length()).trim();
        List<Integer> expected = new ArrayList<>();
        for (String part : list.split(",")) {
            String[] range = part.split("-");
            int from = Integer.parseInt(range[0]);
            int to = range.length == 2 ? Integer.parseInt(range[1]) : from;
            for (int cpu = from; cpu <= to; cpu++) {
                expected.add(cpu);
            }
        }
        assertThat(Affinity.allowed()).containsExactly(expected.stream().mapToInt(Integer::intValue).toArray());
        assertThat(Affinity.pin(-1)).isFalse();
        assertThat(Affinity.pin(1024)).isFalse();
    }

    @Test
    void unpinnedCoresKeepTheProcessMaskAndMoreCoresThanCpusAreNotPinned() throws InterruptedException {
        int cpus = Affinity.allowed().length;
        for (CpuDeviceConfig config : new CpuDeviceConfig[] {CpuDeviceConfig.withCores(2),
                CpuDeviceConfig.withCores(Math.max(1, cpus) + 1).withPinnedCores(true)}) {
            CpuCores device = (CpuCores) Device.cpu(config, null, "unpinned");
            try {
                assertThat(device.pinnedCpus()).containsOnly(-1);
            } finally {
                device.close();
                device.join();
            }
        }
        assertThat(CpuDeviceConfig.withCores(2).pinCores()).as("off by default").isFalse();
    }
}
