package dev.tandem.device;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class HugePageMemoryTest {

    @Test
    void allocationsAreZeroedAlignedApartAndLiveAsLongAsTheirArena() {
        assumeThat(HugePageMemory.available()).as("huge pages usable in this JVM").isTrue();
        HugePageMemory memory = new HugePageMemory();
        Arena arena = Arena.ofShared();
        List<MemorySegment> segments = new ArrayList<>();
        // Sizes that fill a 64 MB chunk and go on into the next, one larger than a chunk, and odd sizes.
        long[] sizes = {3 << 20, 100_000, 40L << 20, 30L << 20, 70L << 20, 65_536 + 7};
        for (long size : sizes) {
            Optional<MemorySegment> segment = memory.allocate(arena, size, 64);
            assertThat(segment).as("%d bytes", size).isPresent();
            segments.add(segment.get());
        }
        for (int i = 0; i < segments.size(); i++) {
            MemorySegment s = segments.get(i);
            assertThat(s.byteSize()).isEqualTo(sizes[i]);
            assertThat(s.address() % 64).isZero();
            assertThat(s.get(ValueLayout.JAVA_BYTE, 0)).isZero();
            assertThat(s.get(ValueLayout.JAVA_BYTE, s.byteSize() - 1)).isZero();
            s.set(ValueLayout.JAVA_BYTE, 0, (byte) (i + 1));
            s.set(ValueLayout.JAVA_BYTE, s.byteSize() - 1, (byte) (i + 1));
        }
        for (int i = 0; i < segments.size(); i++) {
            MemorySegment s = segments.get(i);
            assertThat(s.get(ValueLayout.JAVA_BYTE, 0)).as("first byte of %d", i).isEqualTo((byte) (i + 1));
            assertThat(s.get(ValueLayout.JAVA_BYTE, s.byteSize() - 1)).isEqualTo((byte) (i + 1));
            for (int j = i + 1; j < segments.size(); j++) {
                MemorySegment t = segments.get(j);
                boolean apart = s.address() + s.byteSize() <= t.address() || t.address() + t.byteSize() <= s.address();
                assertThat(apart).as("segments %d and %d overlap", i, j).isTrue();
            }
        }
        arena.close();
        assertThat(segments).allSatisfy(s -> assertThat(s.scope().isAlive()).isFalse());
        assertThatThrownBy(() -> segments.get(0).get(ValueLayout.JAVA_BYTE, 0)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void aFreshArenaGetsAChunkOfItsOwn() {
        assumeThat(HugePageMemory.available()).isTrue();
        HugePageMemory memory = new HugePageMemory();
        Arena first = Arena.ofShared();
        try (Arena second = Arena.ofShared()) {
            MemorySegment a = memory.allocate(first, 1 << 20, 64).orElseThrow();
            MemorySegment b = memory.allocate(second, 1 << 20, 64).orElseThrow();
            // Each chunk starts at a 2 MB boundary, so neither is cut from the other's.
            assertThat(a.address() % HugePageMemory.HUGE_PAGE).isZero();
            assertThat(b.address() % HugePageMemory.HUGE_PAGE).isZero();
            first.close(); // its chunk is unmapped; the second arena's goes on where it was
            MemorySegment c = memory.allocate(second, 1 << 20, 64).orElseThrow();
            assertThat(c.address()).isEqualTo(b.address() + (1 << 20));
            assertThat(a.scope().isAlive()).isFalse();
        }
    }

    @Test
    void anAllocationThatExactlyFillsAChunkStaysInItAndTheBoundsAreInclusive() {
        assumeThat(HugePageMemory.available()).isTrue();
        HugePageMemory memory = new HugePageMemory();
        long half = (long) HugePageMemory.CHUNK_MB << 19;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment first = memory.allocate(arena, half, HugePageMemory.HUGE_PAGE).orElseThrow();
            MemorySegment second = memory.allocate(arena, half, 64).orElseThrow();
            assertThat(second.address()).as("the chunk's second half").isEqualTo(first.address() + half);
            MemorySegment least = memory.allocate(arena, HugePageMemory.LEAST_BYTES, 64).orElseThrow();
            assertThat(least.address() % HugePageMemory.HUGE_PAGE).as("a new chunk").isZero();
            assertThat(memory.arenas()).isEqualTo(1);
        }
        try (Arena other = Arena.ofShared()) {
            memory.allocate(other, HugePageMemory.LEAST_BYTES, 64).orElseThrow();
            assertThat(memory.arenas()).as("the closed arena's entry is dropped").isEqualTo(1);
        }
    }

    @Test
    void smallOrOddlyAlignedAllocationsAreLeftToTheArena() {
        HugePageMemory memory = new HugePageMemory();
        try (Arena arena = Arena.ofConfined()) {
            assertThat(memory.allocate(arena, HugePageMemory.LEAST_BYTES - 1, 64)).isEmpty();
            assertThat(memory.allocate(arena, 1 << 20, 4L << 20)).isEmpty();
            assertThat(memory.allocate(arena, 1 << 20, 48)).isEmpty();
        }
    }

    /** Where the kernel takes the advice (THP "always" or "madvise"), the weights' pages are huge. */
    @Test
    void theMemoryIsBackedByHugePagesWhereTheKernelAgrees() throws Exception {
        assumeThat(HugePageMemory.available()).isTrue();
        Path smaps = Path.of("/proc/self/smaps");
        assumeThat(Files.isReadable(smaps)).isTrue();
        HugePageMemory memory = new HugePageMemory();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment s = memory.allocate(arena, 16L << 20, 64).orElseThrow();
            for (long i = 0; i < s.byteSize(); i += 4096) {
                s.set(ValueLayout.JAVA_BYTE, i, (byte) 1);
            }
            long huge = anonHugeKb(Files.readAllLines(smaps), s.address());
            // Fragmented physical memory may deny some; most of 16 MB touched at once is huge.
            assertThat(huge).as("AnonHugePages of the mapping, kB").isGreaterThanOrEqualTo(8 * 1024);
        }
    }

    /** The AnonHugePages figure of the mapping that holds {@code address}. */
    private static long anonHugeKb(List<String> smaps, long address) {
        boolean inside = false;
        for (String line : smaps) {
            int dash = line.indexOf('-');
            int space = line.indexOf(' ');
            if (dash > 0 && space > dash && line.substring(0, dash).matches("[0-9a-f]+")) {
                long start = Long.parseUnsignedLong(line.substring(0, dash), 16);
                long end = Long.parseUnsignedLong(line.substring(dash + 1, space), 16);
                inside = address >= start && address < end;
            } else if (inside && line.startsWith("AnonHugePages:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        return -1;
    }
}
