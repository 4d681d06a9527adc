package dev.tandem.device;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Request memory of the CPU device, kept for the next request when its request ends: blocks of
 * at least {@value #LEAST_BYTES} bytes in size classes (a quarter of a power of two apart, so a
 * block is at most 25% larger than asked for), each owned by an arena of its own and lent to a
 * request's arena until that arena closes.
 *
 * <p>Why: every request allocates its activations and attention cache afresh, and the C library
 * hands large allocations out as fresh mappings and unmaps them when freed. So each request
 * faulted every page of its buffers in again, and then the JDK zeroed them once more. In a
 * virtual machine a page fault is expensive: in some JVM runs a large model's 128-token prompt
 * waited about 50 ms of its 220 ms before its first task for its buffers (in others 1-2 ms). A
 * kept block is only zeroed (the bytes asked for), as {@link Arena#allocate} zeroes new memory.
 *
 * <p>Resident memory: a block of {@value #LAZY_BYTES} bytes or more is an anonymous mapping
 * ({@link AnonymousMappings}) that the kernel backs as it is touched, and a kept one is zeroed by
 * {@code MADV_DONTNEED} (its pages go back, to be backed by zero pages when touched again) rather
 * than by writing every byte: a KV cache sized for a whole context holds the resident memory of
 * the positions in use only.
 *
 * <p>Bound: the blocks lent out and kept together stay within the device's memory budget (the
 * lent ones are within it anyway, as every request's bytes are reserved from it). A block that
 * comes back is kept only if that still holds counting it, and an allocation that finds no block
 * of its class frees kept ones (the coldest of a class first) until a new block fits. {@link #close()} frees
 * every kept block, and a block returned after it is freed at once.
 *
 * <p>Safety: a lent segment belongs to the request's arena, so once the request's memory is
 * freed (after its last task) the segment is dead like any other of that arena, and the block
 * goes back only then, from the arena's cleanup. Used where lending is possible: it
 * reinterprets a segment into another arena, a restricted method, so native access must be
 * enabled for this module (as for {@link HugePageMemory}; without it the JDK would warn, and a
 * library does not print), and {@value #PROPERTY} must not be {@code false}. Elsewhere every
 * call returns empty and the caller allocates from the request's arena as before.
 */
final class RecycledMemory implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(RecycledMemory.class);

    /** {@code -Dtandem.recycleMemory=false} gives every request fresh memory from its arena. */
    static final String PROPERTY = "tandem.recycleMemory";

    /** Smaller allocations stay on the request's arena: the C library reuses those itself. */
    static final long LEAST_BYTES = 64L << 10;

    /**
     * Blocks from this size up are anonymous mappings, resident only where touched, and are
     * given back to the kernel (not zeroed by writing) when lent again: a batcher's KV pool or a
     * request's cache sized for a whole context costs the memory of the positions it uses.
     */
    static final long LAZY_BYTES = 4L << 20;

    /** Every block is aligned to this; a request for more alignment is not lent a block. */
    static final long ALIGNMENT = 4096;

    private static final boolean ENABLED = enabled();

    private final long budget;
    /** Kept blocks by size class, the warmest first. */
    private final Map<Long, ArrayDeque<Block>> kept = new HashMap<>();
    private long keptBytes;
    private long lentBytes;
    private long freedBytes;
    private boolean closed;

    /**
     * A block and the arena that owns (and finally frees) it; {@code lazy} when it is an anonymous
     * mapping whose pages are backed as they are touched (and given back with {@code MADV_DONTNEED}).
     */
    private record Block(Arena owner, MemorySegment segment, boolean lazy) {}

    /**
     * A new block of {@code size} bytes, zeroed: from {@value #LAZY_BYTES} bytes up an anonymous
     * mapping, backed only where touched; smaller ones (and where mappings are unavailable) from
     * an arena, which zeroes them.
     */
    private static Block newBlock(long size) {
        Arena owner = Arena.ofShared();
        if (size >= LAZY_BYTES) {
            MemorySegment mapped = AnonymousMappings.map(owner, size);
            if (mapped != null) {
                return new Block(owner, mapped.asSlice(0, size), true);
            }
        }
        return new Block(owner, owner.allocate(size, ALIGNMENT), false);
    }

    /** @param budget the most bytes of blocks, lent and kept together */
    RecycledMemory(long budget) {
        this.budget = budget;
    }

    /** Whether blocks can be lent in this JVM. */
    static boolean available() {
        return ENABLED;
    }

    /**
     * {@code bytes} of zeroed memory aligned to {@code alignment}, valid while {@code scope} is
     * open, from a kept block or a new one that goes back here when {@code scope} closes; empty
     * where lending is not possible (see the class comment), for a small or oddly aligned
     * allocation, or once closed.
     */
    Optional<MemorySegment> allocate(Arena scope, long bytes, long alignment) {
        if (!ENABLED || bytes < LEAST_BYTES || alignment > ALIGNMENT || Long.bitCount(alignment) != 1) {
            return Optional.empty();
        }
        long size = sizeClass(bytes);
        Block block;
        List<Block> freed = new ArrayList<>(0);
        synchronized (this) {
            if (closed) {
                return Optional.empty();
            }
            ArrayDeque<Block> blocks = kept.get(size);
            block = blocks == null ? null : blocks.pollFirst();
            if (block != null) {
                keptBytes -= size;
            } else {
                trim(size, freed);
            }
            lentBytes += size;
        }
        free(freed);
        MemorySegment lent;
        if (block != null) {
            lent = block.segment().asSlice(0, bytes);
            if (!(block.lazy() && AnonymousMappings.advise(block.segment().address(), size,
                    AnonymousMappings.MADV_DONTNEED))) {
                lent.fill((byte) 0);
            }
        } else {
            block = newBlock(size);
            lent = block.segment().asSlice(0, bytes);
        }
        Block back = block;
        try {
            return Optional.of(lent.reinterpret(scope, ignored -> giveBack(back)));
        } catch (RuntimeException closedScope) {
            giveBack(back);
            throw closedScope;
        }
    }

    /** Bytes kept for reuse now; for tests and diagnostics. */
    synchronized long keptBytes() {
        return keptBytes;
    }

    /**
     * Bytes of blocks freed so far (trimmed, or returned past the budget or after close); for
     * tests and diagnostics.
     */
    synchronized long freedBytes() {
        return freedBytes;
    }

    /** Bytes of blocks lent to arenas still open; for tests and diagnostics. */
    synchronized long lentBytes() {
        return lentBytes;
    }

    /**
     * Frees every kept block; blocks still lent are freed when their arenas close, and later
     * allocations are not lent blocks.
     */
    @Override
    public void close() {
        List<Block> freed = new ArrayList<>();
        synchronized (this) {
            closed = true;
            trim(Long.MAX_VALUE, freed);
        }
        free(freed);
    }

    /** A lent block's arena closed: keep the block if the bound allows, else free it. */
    private void giveBack(Block block) {
        long size = block.segment().byteSize();
        List<Block> freed = new ArrayList<>(1);
        synchronized (this) {
            lentBytes -= size;
            if (closed || lentBytes + keptBytes + size > budget) {
                freed.add(block);
                freedBytes += size;
            } else {
                kept.computeIfAbsent(size, s -> new ArrayDeque<>()).addFirst(block); // the warmest first
                keptBytes += size;
            }
        }
        free(freed);
    }

    /**
     * Moves kept blocks into {@code freed} (the coldest of each class first) until {@code room}
     * more bytes fit the budget beside the lent and kept ones, or none are kept.
     */
    private void trim(long room, List<Block> freed) {
        for (Iterator<ArrayDeque<Block>> classes = kept.values().iterator(); classes.hasNext(); ) {
            ArrayDeque<Block> blocks = classes.next();
            while (!blocks.isEmpty() && lentBytes + keptBytes > budget - room) {
                Block block = blocks.pollLast();
                keptBytes -= block.segment().byteSize();
                freedBytes += block.segment().byteSize();
                freed.add(block);
            }
            if (blocks.isEmpty()) {
                classes.remove();
            }
        }
    }

    /** Closes the blocks' arenas, outside the lock (counted as freed when they were taken out). */
    private static void free(List<Block> blocks) {
        for (Block block : blocks) {
            block.owner().close();
        }
    }

    /**
     * The block size for {@code bytes}: {@code bytes} rounded up to a quarter of the power of two
     * below it, so classes run 64, 80, 96, 112, 128, 160 KB and so on.
     */
    static long sizeClass(long bytes) {
        if (bytes <= LEAST_BYTES) {
            return LEAST_BYTES;
        }
        long quarter = Long.highestOneBit(bytes - 1) >> 2;
        return Math.ceilDiv(bytes, quarter) * quarter;
    }

    private static boolean enabled() {
        if (!Boolean.parseBoolean(System.getProperty(PROPERTY, "true"))) {
            return false;
        }
        if (!RecycledMemory.class.getModule().isNativeAccessEnabled()) {
            log.debug("native access is not enabled for {}: request memory is not recycled",
                    RecycledMemory.class.getModule());
            return false;
        }
        return true;
    }
}
