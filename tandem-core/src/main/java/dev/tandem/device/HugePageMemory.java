package dev.tandem.device;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.Locale;
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

    private static final int PROT_READ_WRITE = 0x3;
    private static final int MAP_PRIVATE_ANONYMOUS = 0x22;
    private static final int MADV_HUGEPAGE = 14;

    /** libc's mmap, madvise and munmap. */
    private record Calls(MethodHandle mmap, MethodHandle madvise, MethodHandle munmap) {}

    /** The calls, or null where huge pages are not used. */
    private static final Calls CALLS = calls();

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
        return CALLS != null;
    }

    /**
     * {@code bytes} of zeroed memory aligned to {@code alignment}, valid while {@code scope}
     * is, from a huge-page mapping; empty where this JVM cannot, or for a small or oddly aligned
     * allocation, or when the mapping fails.
     */
    synchronized Optional<MemorySegment> allocate(Arena scope, long bytes, long alignment) {
        if (CALLS == null || bytes < LEAST_BYTES || alignment > HUGE_PAGE || Long.bitCount(alignment) != 1) {
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
        long mapped = size + HUGE_PAGE; // room to move the start to a 2 MB boundary
        MemorySegment raw;
        try {
            raw = (MemorySegment) CALLS.mmap().invokeExact(MemorySegment.NULL, mapped, PROT_READ_WRITE,
                    MAP_PRIVATE_ANONYMOUS, -1, 0L);
        } catch (Throwable e) {
            log.debug("mmap of {} bytes failed", mapped, e);
            return null;
        }
        if (raw.address() == -1L || raw.address() == 0L) {
            log.debug("mmap of {} bytes failed", mapped);
            return null;
        }
        long start = alignUp(raw.address(), HUGE_PAGE);
        long rawAddress = raw.address();
        // The whole mapping goes when the arena closes, whatever was cut from it.
        MemorySegment.ofAddress(rawAddress).reinterpret(mapped, scope, s -> unmap(rawAddress, mapped));
        try {
            int rc = (int) CALLS.madvise().invokeExact(MemorySegment.ofAddress(start), size, MADV_HUGEPAGE);
            if (rc != 0) {
                log.debug("madvise(MADV_HUGEPAGE) returned {}: this chunk stays on 4 KB pages", rc);
            }
        } catch (Throwable e) {
            log.debug("madvise failed: this chunk stays on 4 KB pages", e);
        }
        return new Chunk(start, size);
    }

    private static void unmap(long address, long size) {
        try {
            int rc = (int) CALLS.munmap().invokeExact(MemorySegment.ofAddress(address), size);
            if (rc != 0) {
                log.warn("munmap of {} bytes at {} returned {}", size, Long.toHexString(address), rc);
            }
        } catch (Throwable e) {
            log.warn("munmap of {} bytes failed", size, e);
        }
    }

    private static long alignUp(long value, long alignment) {
        return (value + alignment - 1) & -alignment;
    }

    private static Calls calls() {
        try {
            if (!System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("linux")
                    || !Boolean.parseBoolean(System.getProperty(PROPERTY, "true"))) {
                return null;
            }
            if (!HugePageMemory.class.getModule().isNativeAccessEnabled()) {
                log.debug("native access is not enabled for {}: device memory stays on the arena's pages",
                        HugePageMemory.class.getModule());
                return null;
            }
            Path setting = Path.of("/sys/kernel/mm/transparent_hugepage/enabled");
            if (!Files.isReadable(setting) || Files.readString(setting).contains("[never]")) {
                return null;
            }
            Linker linker = Linker.nativeLinker();
            SymbolLookup libc = linker.defaultLookup();
            MethodHandle mmap = linker.downcallHandle(libc.find("mmap").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
                            ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG));
            MethodHandle madvise = linker.downcallHandle(libc.find("madvise").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
                            ValueLayout.JAVA_INT));
            MethodHandle munmap = linker.downcallHandle(libc.find("munmap").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
            return new Calls(mmap, madvise, munmap);
        } catch (Exception | LinkageError e) {
            log.debug("no huge pages for device memory", e);
            return null;
        }
    }
}
