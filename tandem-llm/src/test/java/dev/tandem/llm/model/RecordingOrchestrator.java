package dev.tandem.llm.model;

import dev.tandem.Access;
import dev.tandem.Buffer;
import dev.tandem.Kernel;
import dev.tandem.Orchestrator;
import dev.tandem.Region;
import dev.tandem.TaskContext;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/** Records what a task builder submits, runs nothing; a recorded task can then run on memory of the test's own. */
final class RecordingOrchestrator implements Orchestrator {

    record Submitted(Kernel kernel, long[] scalars, Access[] accesses) {
        String name() {
            return kernel.name();
        }

        /** A context over {@code memory}'s segment of each region's buffer (allocated there on first use). */
        TaskContext context(Memory memory) {
            MemorySegment[] regions = new MemorySegment[accesses.length];
            for (int i = 0; i < regions.length; i++) {
                Region r = accesses[i].region();
                regions[i] = memory.of(r.buffer()).asSlice(r.offset(), r.length());
            }
            return new TaskContext() {
                @Override public int regionCount() { return regions.length; }
                @Override public MemorySegment region(int i) { return regions[i]; }
                @Override public int scalarCount() { return scalars.length; }
                @Override public long scalar(int i) { return scalars[i]; }
                @Override public int core() { return 0; }
                @Override public long requestId() { return 1; }
                @Override public long step() { return 0; }
            };
        }
    }

    /** Native memory for the recorded buffers, zeroed. */
    static final class Memory implements AutoCloseable {
        private final Arena arena = Arena.ofConfined();
        private final Map<Buffer, MemorySegment> segments = new IdentityHashMap<>();

        MemorySegment of(Buffer buffer) {
            return segments.computeIfAbsent(buffer, b -> arena.allocate(b.byteSize(), 64));
        }

        @Override
        public void close() {
            arena.close();
        }
    }

    /** A buffer that is only a name and a size. */
    record Plain(String name, long byteSize) implements Buffer {
        @Override public Scope scope() { return Scope.REQUEST; }
        @Override public MemorySegment hostSegment() { throw new UnsupportedOperationException(); }
        @Override public Buffer freeze() { return this; }
        @Override public boolean isFrozen() { return false; }
    }

    final List<Submitted> tasks = new ArrayList<>();

    @Override public long requestId() { return 1; }
    @Override public long step() { return 0; }
    @Override public Buffer allocate(long bytes) { return new Plain("request", bytes); }
    @Override public Buffer allocateStep(long bytes) { return new Plain("step", bytes); }

    @Override
    public void submit(Kernel kernel, long[] scalars, Access... accesses) {
        tasks.add(new Submitted(kernel, scalars, accesses));
    }

    @Override public void upload(Region target, MemorySegment data) { throw new UnsupportedOperationException(); }
    @Override public void endStep(Region tokenRegion) { throw new UnsupportedOperationException(); }
}
