package dev.tandem.device;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * CPU device memory on Linux transparent huge pages: per arena, anonymous mappings of
 * {@value #CHUNK_MB} MB (or more, for a larger allocation) aligned to 2 MB and advised
 * {@code MADV_HUGEPAGE}, from which allocations are cut one after another.
 *
 * <p>Why: a decode step streams every weight once, and on 4 KB pages it pays a page walk each
 * 4 KB. A vector sum over 100 MB read 13.7-14.1 GB/s on huge pages against 10.8-11.4 GB/s on the
 * arena's own memory, one thread, alternating in one run on this machine. A mapping is backed as
 * it is touched, 2 MB at a time, so a chunk's untouched tail costs address space only; the memory
 * comes zeroed, as {@link Arena#allocate} gives it, and a chunk is unmapped when its arena closes
 * (nothing is freed before: the CPU device's memory is freed with its arena).
 *
 * <p>Used where it can work, else every call returns empty and the caller allocates from the
 * arena as before: Linux, transparent huge pages not {@code never}, and native access enabled
 * for this module ({@code --enable-native-access}; without it the JDK would warn on the first
 * mapping, and a library does not print), and {@value #PROPERTY} not {@code false}. Allocations under {@value #LEAST_BYTES} bytes stay on
 * the arena: many small ones would each round a chunk's position up to their alignment for
 * nothing.
 */
final class HugePageMemory {
    private static final Logger log = LoggerFactory.getLogger(HugePageMemory.class);

    /** {@code -Dtandem.hugePages=false} keeps every allocation on the arena's own pages. */
    static final String PROPERTY = "tandem.hugePages";

    static final long HUGE_PAGE = 2L << 20;
    static final int CHUNK_MB = 64;
    static final long LEAST_BYTES = 64L << 10;


    /** Whether huge pages are used here. */
    private static final boolean USABLE = usable();

    /** The chunk each live arena is being cut from; dead arenas' entries are dropped as found. */
    private final Map<MemorySegment.Scope, Chunk> chunks = new IdentityHashMap<>();

    private static final class Chunk {
        final long address;
        final long size;
        long used;

        Chunk(long address, long size) {
            this.address = address;
            this.size = size;
        }
    }

    /** Whether allocations can come from huge-page mappings in this JVM. */
    static boolean available() {
        return USABLE;
    }

    /**
     * {@code bytes} of zeroed memory aligned to {@code alignment}, valid while {@code scope}
     * is, from a huge-page mapping; empty where this JVM cannot, or for a small or oddly aligned
     * allocation, or when the mapping fails.
     */
    synchronized Optional<MemorySegment> allocate(Arena scope, long bytes, long alignment) {
        if (!USABLE || bytes < LEAST_BYTES || alignment > HUGE_PAGE || Long.bitCount(alignment) != 1) {
            return Optional.empty();
        }
        for (Iterator<MemorySegment.Scope> it = chunks.keySet().iterator(); it.hasNext(); ) {
            if (!it.next().isAlive()) {
                it.remove();
            }
        }
        Chunk chunk = chunks.get(scope.scope());
        long at = chunk == null ? 0 : alignUp(chunk.address + chunk.used, alignment) - chunk.address;
        if (chunk == null || at + bytes > chunk.size) {
            chunk = map(scope, Math.max((long) CHUNK_MB << 20, alignUp(bytes, HUGE_PAGE)));
            if (chunk == null) {
                return Optional.empty();
            }
            chunks.put(scope.scope(), chunk);
            at = 0;
        }
        chunk.used = at + bytes;
        return Optional.of(MemorySegment.ofAddress(chunk.address + at).reinterpret(bytes, scope, null));
    }

    /** How many arenas have a chunk here (closed ones are dropped at the next allocation); for tests. */
    synchronized int arenas() {
        return chunks.size();
    }

    /** A new mapping of {@code size} bytes (a multiple of 2 MB) at a 2 MB boundary, unmapped when {@code scope} closes. */
    private static Chunk map(Arena scope, long size) {
        // room to move the start to a 2 MB boundary; the whole mapping goes when the arena closes
        MemorySegment raw = AnonymousMappings.map(scope, size + HUGE_PAGE);
        if (raw == null) {
            return null;
        }
        long start = alignUp(raw.address(), HUGE_PAGE);
        if (!AnonymousMappings.advise(start, size, AnonymousMappings.MADV_HUGEPAGE)) {
            log.debug("madvise(MADV_HUGEPAGE) failed: this chunk stays on 4 KB pages");
        }
        return new Chunk(start, size);
    }

    private static long alignUp(long value, long alignment) {
        return (value + alignment - 1) & -alignment;
    }

    private static boolean usable() {
        try {
            if (!Boolean.parseBoolean(System.getProperty(PROPERTY, "true")) || !AnonymousMappings.available()) {
                return false;
            }
            Path setting = Path.of("/sys/kernel/mm/transparent_hugepage/enabled");
            return Files.isReadable(setting) && !Files.readString(setting).contains("[never]");
        } catch (Exception e) {
            log.debug("no huge pages for device memory", e);
            return false;
        }
    }
}
