package dev.tandem.llm.checkpoint;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * A whole file mapped read-only in a shared {@link Arena} (the device's cores read checkpoint
 * tensors), as the checkpoint readers hold it: {@link #parse} maps it and hands it to a parser,
 * and unmaps it again when the parser throws, so a file that fails to parse leaves nothing
 * mapped. Closing unmaps; slices of the segment are invalid afterwards.
 */
public final class MappedFile implements AutoCloseable {
    private final Path path;
    private final Arena arena;
    private final MemorySegment segment;

    private MappedFile(Path path, Arena arena, MemorySegment segment) {
        this.path = path;
        this.arena = arena;
        this.segment = segment;
    }

    /**
     * Maps {@code path} and returns what {@code parser} makes of it; the parser keeps the
     * mapping (and closes it with what it returns) or throws, and then the mapping is closed.
     *
     * @param failure makes the format's exception of a message (naming the file) and a cause,
     *                for a file that cannot be opened or mapped
     */
    public static <T> T parse(Path path, BiFunction<String, Throwable, RuntimeException> failure,
            Function<MappedFile, T> parser) {
        FileChannel channel;
        try {
            channel = FileChannel.open(path, StandardOpenOption.READ);
        } catch (IOException e) {
            throw failure.apply(path + ": cannot open: " + e.getMessage(), e);
        }
        Arena arena = Arena.ofShared();
        try (channel) {
            MemorySegment segment = channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size(), arena).asReadOnly();
            return parser.apply(new MappedFile(path, arena, segment));
        } catch (IOException e) {
            arena.close();
            throw failure.apply(path + ": cannot map: " + e.getMessage(), e);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    public Path path() {
        return path;
    }

    /** The whole file, read-only. */
    public MemorySegment segment() {
        return segment;
    }

    /** Bytes of the file. */
    public long bytes() {
        return segment.byteSize();
    }

    /** Whether the mapping is still open. */
    public boolean isOpen() {
        return arena.scope().isAlive();
    }

    /** Unmaps the file. Idempotent. */
    @Override
    public void close() {
        if (arena.scope().isAlive()) {
            arena.close();
        }
    }
}
