package dev.tandem.device;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

import dev.tandem.CpuDeviceConfig;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicReference;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.LongRange;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class RecycledMemoryTest {

    private static final long KB = 1024;

    @BeforeEach
    void lendingWorksHere() {
        assumeThat(RecycledMemory.available()).as("native access enabled for the tests").isTrue();
    }

    /**
     * A large block is resident only where touched, and a kept one lent again reads as zeros and
     * gives its touched pages back (not zeroed by writing every byte). Residency is the block's
     * own, from {@code mincore(2)}: the process's resident total moves with everything else the
     * test JVM does.
     */
    @Test
    void aLargeBlockIsResidentOnlyWhereTouchedAndComesBackZeroedAndReleased() throws Throwable {
        assumeThat(AnonymousMappings.available()).isTrue();
        RecycledMemory memory = new RecycledMemory(4L << 30);
        long bytes = 512L << 20;
        MemorySegment first;
        try (Arena request = Arena.ofShared()) {
            first = memory.allocate(request, bytes, 64).orElseThrow();
            assertThat(residentBytes(first)).as("512 MB allocated, none touched").isZero();
            first.asSlice(0, 16L << 20).fill((byte) 7);
            assertThat(residentBytes(first)).isEqualTo(16L << 20);
        }
        try (Arena next = Arena.ofShared()) {
            MemorySegment second = memory.allocate(next, bytes, 64).orElseThrow();
            assertThat(second.address()).isEqualTo(first.address());
            assertThat(residentBytes(second)).as("the kept block's pages went back").isZero();
            assertThat(isZero(second.asSlice(0, 16L << 20))).isTrue();
        }
        memory.close();
    }

    /** Bytes of {@code segment} (page-aligned) resident in memory now, by {@code mincore(2)}. */
    private static long residentBytes(MemorySegment segment) throws Throwable {
        java.lang.foreign.Linker linker = java.lang.foreign.Linker.nativeLinker();
        java.lang.invoke.MethodHandle mincore = linker.downcallHandle(linker.defaultLookup().find("mincore").orElseThrow(),
                java.lang.foreign.FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
                        ValueLayout.ADDRESS));
        long pages = Math.ceilDiv(segment.byteSize(), AnonymousMappings.PAGE);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment vec = arena.allocate(pages);
            int rc = (int) mincore.invokeExact(MemorySegment.ofAddress(segment.address()), segment.byteSize(), vec);
            assertThat(rc).isZero();
            long resident = 0;
            for (long i = 0; i < pages; i++) {
                resident += vec.get(ValueLayout.JAVA_BYTE, i) & 1;
            }
            return resident * AnonymousMappings.PAGE;
        }
    }

    @Test
    void aBlockComesBackToTheNextAllocationOfItsClassZeroedAndCutToSize() {
        RecycledMemory memory = new RecycledMemory(1L << 30);
        MemorySegment first;
        try (Arena request = Arena.ofShared()) {
            first = memory.allocate(request, 100_000, 64).orElseThrow();
            assertThat(first.byteSize()).isEqualTo(100_000);
            assertThat(first.address() % RecycledMemory.ALIGNMENT).isZero();
            assertThat(isZero(first)).isTrue();
            first.fill((byte) 0x5a);
            assertThat(memory.lentBytes()).isEqualTo(RecycledMemory.sizeClass(100_000));
            assertThat(memory.keptBytes()).isZero();
        }
        assertThat(memory.lentBytes()).isZero();
        assertThat(memory.keptBytes()).isEqualTo(RecycledMemory.sizeClass(100_000));
        // The closed request's segment is dead like any of its arena's, although its block lives on.
        assertThatThrownBy(() -> first.get(ValueLayout.JAVA_BYTE, 0)).isInstanceOf(IllegalStateException.class);

        try (Arena next = Arena.ofShared()) {
            long bytes = 99_000; // the same class as 100,000
            assertThat(RecycledMemory.sizeClass(bytes)).isEqualTo(RecycledMemory.sizeClass(100_000));
            MemorySegment second = memory.allocate(next, bytes, 64).orElseThrow();
            assertThat(second.address()).isEqualTo(first.address());
            assertThat(second.byteSize()).isEqualTo(bytes);
            assertThat(isZero(second)).as("the earlier request's bytes are gone").isTrue();
            assertThat(memory.keptBytes()).isZero();

            MemorySegment other = memory.allocate(next, 200_000, 64).orElseThrow();
            assertThat(other.address()).as("another class gets a block of its own").isNotEqualTo(first.address());
            assertThat(apart(second, other)).isTrue();
        }
        assertThat(memory.keptBytes()).isEqualTo(RecycledMemory.sizeClass(99_000) + RecycledMemory.sizeClass(200_000));
        memory.close();
    }

    @Test
    void smallOrOverAlignedAllocationsAndAClosedPoolLendNothing() {
        RecycledMemory memory = new RecycledMemory(1L << 30);
        try (Arena request = Arena.ofShared()) {
            assertThat(memory.allocate(request, RecycledMemory.LEAST_BYTES - 1, 64)).isEmpty();
            assertThat(memory.allocate(request, RecycledMemory.LEAST_BYTES, 64)).isPresent();
            assertThat(memory.allocate(request, 1 << 20, RecycledMemory.ALIGNMENT * 2)).isEmpty();
            MemorySegment pageAligned = memory.allocate(request, 1 << 20, RecycledMemory.ALIGNMENT).orElseThrow();
            assertThat(pageAligned.address() % RecycledMemory.ALIGNMENT).isZero();
            assertThat(memory.allocate(request, 1 << 20, 96)).isEmpty();
            memory.close();
            assertThat(memory.allocate(request, 1 << 20, 64)).isEmpty();
        }
        assertThat(memory.keptBytes()).as("returned after close: freed at once").isZero();
        assertThat(memory.lentBytes()).isZero();
        assertThat(memory.freedBytes()).isEqualTo(RecycledMemory.LEAST_BYTES + (1L << 20));
    }

    @Test
    void closeFreesWhatIsKept() {
        RecycledMemory memory = new RecycledMemory(1L << 30);
        try (Arena request = Arena.ofShared()) {
            memory.allocate(request, 1 << 20, 64).orElseThrow();
        }
        assertThat(memory.keptBytes()).isEqualTo(1 << 20);
        assertThat(memory.freedBytes()).isZero();
        memory.close();
        assertThat(memory.keptBytes()).isZero();
        assertThat(memory.freedBytes()).isEqualTo(1 << 20);
    }

    @Test
    void lentAndKeptBlocksTogetherStayWithinTheBudget() {
        long half = 512 * KB;
        RecycledMemory memory = new RecycledMemory(2 * half);
        Arena a = Arena.ofShared();
        Arena b = Arena.ofShared();
        memory.allocate(a, half, 64).orElseThrow();
        memory.allocate(b, half, 64).orElseThrow();
        a.close();
        assertThat(memory.keptBytes()).as("lent plus kept is the budget").isEqualTo(half);
        assertThat(memory.freedBytes()).isZero();

        // No kept block of its class: the kept one is freed to make room for a new block.
        Arena c = Arena.ofShared();
        memory.allocate(c, half / 2, 64).orElseThrow();
        assertThat(memory.keptBytes()).isZero();
        assertThat(memory.freedBytes()).isEqualTo(half);
        assertThat(memory.lentBytes()).isEqualTo(half + half / 2);

        b.close();
        assertThat(memory.keptBytes()).isEqualTo(half);
        c.close();
        assertThat(memory.keptBytes()).isEqualTo(half + half / 2);
        assertThat(memory.lentBytes()).isZero();

        // New blocks that exactly fill the budget beside what is lent and kept: nothing is freed.
        Arena f = Arena.ofShared();
        Arena g = Arena.ofShared();
        memory.allocate(f, half / 4, 64).orElseThrow();
        memory.allocate(g, half / 4, 64).orElseThrow(); // lent and kept now exactly the budget
        assertThat(memory.keptBytes()).isEqualTo(half + half / 2);
        assertThat(memory.lentBytes()).isEqualTo(half / 2);
        assertThat(memory.freedBytes()).isEqualTo(half);
        // Blocks that come back exactly filling the budget are kept.
        f.close();
        g.close();
        assertThat(memory.keptBytes()).isEqualTo(2 * half);
        assertThat(memory.freedBytes()).isEqualTo(half);

        // Lent beyond the budget (the reservations are the caller's to bound): what comes back
        // past the budget is freed, not kept.
        RecycledMemory tight = new RecycledMemory(600 * KB);
        Arena d = Arena.ofShared();
        Arena e = Arena.ofShared();
        tight.allocate(d, half, 64).orElseThrow();
        tight.allocate(e, half, 64).orElseThrow();
        d.close();
        assertThat(tight.keptBytes()).isZero();
        assertThat(tight.freedBytes()).isEqualTo(half);
        e.close();
        assertThat(tight.keptBytes()).isEqualTo(half);
        assertThat(tight.freedBytes()).isEqualTo(half);
        memory.close();
        tight.close();
    }

    @Test
    void anArenaAlreadyClosedFailsAndLosesNoBlock() {
        RecycledMemory memory = new RecycledMemory(1L << 30);
        Arena closed = Arena.ofShared();
        closed.close();
        assertThatThrownBy(() -> memory.allocate(closed, 1 << 20, 64)).isInstanceOf(IllegalStateException.class);
        assertThat(memory.lentBytes()).isZero();
        assertThat(memory.keptBytes()).isEqualTo(1 << 20);
        memory.close();
    }

    @Property(tries = 2000)
    void aClassHoldsItsBytesWithAtMostAQuarterMore(@ForAll @LongRange(min = 1, max = 1L << 40) long bytes) {
        long size = RecycledMemory.sizeClass(bytes);
        assertThat(size).isGreaterThanOrEqualTo(Math.max(bytes, RecycledMemory.LEAST_BYTES));
        if (bytes > RecycledMemory.LEAST_BYTES) {
            assertThat(size - bytes).isLessThan(bytes / 4 + 1);
            assertThat(size % RecycledMemory.ALIGNMENT).isZero();
            // Four classes per power of two: the class is a multiple of a quarter of it.
            long quarter = Long.highestOneBit(bytes - 1) / 4;
            assertThat(size % quarter).isZero();
            assertThat(RecycledMemory.sizeClass(size)).as("a class is its own class").isEqualTo(size);
        }
    }

    @Test
    void theCpuDeviceLendsAnEndedRequestsMemoryToTheNext() {
        CpuCores device = new CpuCores(CpuDeviceConfig.withCores(1), null, "recycle");
        try {
            long address;
            try (Arena request = Arena.ofShared()) {
                MemorySegment s = device.allocate(request, 300_000, 64);
                s.fill((byte) 1);
                address = s.address();
            }
            try (Arena request = Arena.ofShared()) {
                MemorySegment s = device.allocate(request, 300_000, 64);
                assertThat(s.address()).isEqualTo(address);
                assertThat(isZero(s)).isTrue();
                assertThat(device.allocate(request, 100, 8).byteSize()).as("small: the arena's own").isEqualTo(100);
            }
        } finally {
            device.close();
        }
    }

    /**
     * Threads allocating, writing their own pattern, checking it and closing, over a few size
     * classes and a budget that makes them trim: a block lent twice at once, or lent while still
     * in use, shows as another thread's pattern.
     */
    @Test
    void concurrentRequestsNeverShareABlock() throws Exception {
        RecycledMemory memory = new RecycledMemory(3 * (256 * KB));
        int threads = 4;
        CyclicBarrier start = new CyclicBarrier(threads);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> running = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            byte mark = (byte) (t + 1);
            SplittableRandom random = new SplittableRandom(t);
            running.add(Thread.ofPlatform().start(() -> {
                try {
                    start.await();
                    for (int i = 0; i < 3000; i++) {
                        try (Arena request = Arena.ofShared()) {
                            long bytes = (64 + 64 * random.nextInt(4)) * KB;
                            MemorySegment s = memory.allocate(request, bytes, 64).orElseThrow();
                            if (s.get(ValueLayout.JAVA_BYTE, 0) != 0 || s.get(ValueLayout.JAVA_BYTE, bytes - 1) != 0) {
                                throw new AssertionError("lent a block that was not zeroed");
                            }
                            s.fill(mark);
                            Thread.yield();
                            for (long at = 0; at < bytes; at += 4096) {
                                if (s.get(ValueLayout.JAVA_BYTE, at) != mark) {
                                    throw new AssertionError("another request wrote into this one's block");
                                }
                            }
                        }
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }));
        }
        for (Thread thread : running) {
            thread.join();
        }
        assertThat(failure.get()).isNull();
        assertThat(memory.lentBytes()).isZero();
        assertThat(memory.keptBytes()).isBetween(64 * KB, 3 * (256 * KB));
        memory.close();
        assertThat(memory.keptBytes()).isZero();
    }

    private static boolean isZero(MemorySegment s) {
        for (long at = 0; at < s.byteSize(); at++) {
            if (s.get(ValueLayout.JAVA_BYTE, at) != 0) {
                return false;
            }
        }
        return true;
    }

    private static boolean apart(MemorySegment s, MemorySegment t) {
        return s.address() + s.byteSize() <= t.address() || t.address() + t.byteSize() <= s.address();
    }
}
