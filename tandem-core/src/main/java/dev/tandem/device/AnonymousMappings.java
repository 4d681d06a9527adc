package dev.tandem.device;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Anonymous private mappings of the C library ({@code mmap}, {@code madvise}, {@code munmap}) on
 * Linux: memory that reads as zeros and that the kernel backs only as its pages are touched, so
 * a large buffer of which a program uses a part costs resident memory for that part only.
 * Unavailable (every call answers null or false) off Linux or without native access for this
 * module; the callers then allocate from an arena as before.
 */
final class AnonymousMappings {
    private static final Logger log = LoggerFactory.getLogger(AnonymousMappings.class);

    static final long PAGE = 4096;
    static final int MADV_DONTNEED = 4;
    static final int MADV_HUGEPAGE = 14;
    private static final int PROT_READ_WRITE = 0x3;
    private static final int MAP_PRIVATE_ANONYMOUS = 0x22;

    /** libc's mmap, madvise and munmap. */
    private record Calls(MethodHandle mmap, MethodHandle madvise, MethodHandle munmap) {}

    private static final Calls CALLS = calls();

    private AnonymousMappings() {}

    static boolean available() {
        return CALLS != null;
    }

    /**
     * A new mapping of {@code bytes} (rounded up to whole pages), unmapped when {@code scope}
     * closes; null where unavailable or when the mapping fails.
     *
     * @return a segment of exactly the mapped size, of {@code scope}
     */
    static MemorySegment map(Arena scope, long bytes) {
        if (CALLS == null) {
            return null;
        }
        long size = alignUp(Math.max(bytes, 1), PAGE);
        MemorySegment raw;
        try {
            raw = (MemorySegment) CALLS.mmap().invokeExact(MemorySegment.NULL, size, PROT_READ_WRITE,
                    MAP_PRIVATE_ANONYMOUS, -1, 0L);
        } catch (Throwable e) {
            log.debug("mmap of {} bytes failed", size, e);
            return null;
        }
        long address = raw.address();
        if (address == -1L || address == 0L) {
            log.debug("mmap of {} bytes failed", size);
            return null;
        }
        return MemorySegment.ofAddress(address).reinterpret(size, scope, s -> unmap(address, size));
    }

    /** {@code madvise(advice)} over {@code length} bytes at {@code address} (page-aligned); whether it succeeded. */
    static boolean advise(long address, long length, int advice) {
        if (CALLS == null) {
            return false;
        }
        try {
            int rc = (int) CALLS.madvise().invokeExact(MemorySegment.ofAddress(address), length, advice);
            if (rc != 0) {
                log.debug("madvise({}) of {} bytes returned {}", advice, length, rc);
            }
            return rc == 0;
        } catch (Throwable e) {
            log.debug("madvise({}) failed", advice, e);
            return false;
        }
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

    static long alignUp(long value, long alignment) {
        return (value + alignment - 1) & -alignment;
    }

    private static Calls calls() {
        try {
            if (!System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("linux")) {
                return null;
            }
            if (!AnonymousMappings.class.getModule().isNativeAccessEnabled()) {
                log.debug("native access is not enabled for {}: no anonymous mappings",
                        AnonymousMappings.class.getModule());
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
            log.debug("no anonymous mappings", e);
            return null;
        }
    }
}
