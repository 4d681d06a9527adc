package dev.tandem;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.RandomDistribution;
import net.jqwik.api.Tuple;
import net.jqwik.api.lifecycle.AddLifecycleHook;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.AroundPropertyHook;
import net.jqwik.api.lifecycle.PropertyExecutionResult;
import net.jqwik.api.lifecycle.PropertyExecutor;
import net.jqwik.api.lifecycle.PropertyLifecycleContext;

/**
 * Pipelined execution is invisible: any program, run with any publication batch, run-ahead
 * and core count, gives byte for byte the tokens and final memory that running its tasks one
 * by one in submission order on plain memory gives.
 *
 * <p>Programs are random: 1 to 8 request buffers of 8 to 256 bytes; tasks with 1 to 4
 * accesses of random, often overlapping byte ranges (whole buffers, single bytes, anything
 * between) in random modes, all running {@link #MIX}; random step boundaries whose tokens are
 * random ranges. Each program ends with one step per buffer whose token is the whole buffer,
 * so the final memory is compared too. Every program runs as one or two concurrent requests.
 *
 * <p>The reference ({@link #sequentialReference}) runs the same {@link #MIX} kernel through a
 * {@link TaskContext} of its own over heap memory, one task at a time.
 */
class EquivalencePropertiesTest {

    /** Tries per CI run; {@code -Dtandem.long=true} multiplies them by {@link LongRunTries#FACTOR}. */
    static final int CI_TRIES = 2000;

    /** One worker per core count, shared by every try and closed after the container. */
    private static final Map<Integer, Worker> WORKERS = new ConcurrentHashMap<>();

    private static Worker worker(int cores) {
        return WORKERS.computeIfAbsent(cores, c -> Worker.create(CpuDeviceConfig.withCores(c)));
    }

    @AfterContainer
    static void closeWorkers() {
        for (Worker worker : WORKERS.values()) {
            worker.close();
        }
        WORKERS.clear();
    }

    // ---- the kernel ------------------------------------------------------------------------

    /**
     * Scalars: {@code [seed, modes]}, where bit {@code 2i} of {@code modes} says region i is
     * read and bit {@code 2i+1} that it is written. Hashes every read region's bytes with their
     * region index and position and the seed (all reads first, so a READ_WRITE region is read
     * before it is written), then fills every written region, in access order, with bytes
     * derived from the hash, the region index and the position.
     */
    static final Kernel MIX = Kernel.of("mix", EquivalencePropertiesTest::mix);

    private static void mix(TaskContext c) {
        long seed = c.scalar(0);
        long modes = c.scalar(1);
        long hash = seed ^ 0x9E3779B97F4A7C15L;
        for (int i = 0; i < c.regionCount(); i++) {
            if ((modes >>> (2 * i) & 1) != 0) {
                MemorySegment region = c.region(i);
                for (long j = 0; j < region.byteSize(); j++) {
                    byte b = region.get(ValueLayout.JAVA_BYTE, j);
                    hash = (hash ^ (b & 0xFF) ^ ((long) i << 56) ^ (j << 32)) * 0x100000001B3L;
                    hash = Long.rotateLeft(hash, 17);
                }
            }
        }
        for (int i = 0; i < c.regionCount(); i++) {
            if ((modes >>> (2 * i + 1) & 1) != 0) {
                MemorySegment region = c.region(i);
                for (long j = 0; j < region.byteSize(); j++) {
                    region.set(ValueLayout.JAVA_BYTE, j, (byte) splitMix(hash + i * 0x632BE59BD9B4E019L + j));
                }
            }
        }
    }

    private static long splitMix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    // ---- programs --------------------------------------------------------------------------

    /** A byte range of one of the program's buffers. */
    record Range(int buffer, int offset, int length) {
        @Override
        public String toString() {
            return "b" + buffer + "[" + offset + "," + (offset + length) + ")";
        }
    }

    record AccessSpec(Range range, AccessMode mode) {
        @Override
        public String toString() {
            return mode + " " + range;
        }
    }

    sealed interface Op permits TaskOp, EndStepOp {}

    record TaskOp(long seed, List<AccessSpec> accesses) implements Op {
        long modes() {
            long modes = 0;
            for (int i = 0; i < accesses.size(); i++) {
                AccessMode mode = accesses.get(i).mode();
                if (mode.reads()) {
                    modes |= 1L << (2 * i);
                }
                if (mode.writes()) {
                    modes |= 1L << (2 * i + 1);
                }
            }
            return modes;
        }

        @Override
        public String toString() {
            return "task(seed " + seed + ", " + accesses + ")";
        }
    }

    record EndStepOp(Range token) implements Op {
        @Override
        public String toString() {
            return "endStep(" + token + ")";
        }
    }

    /** A program and how to run it. */
    record ProgramSpec(
            List<Integer> bufferSizes, List<Op> ops, int publishBatch, int runAhead, int cores, int copies) {

        RunOptions options() {
            return RunOptions.defaults().withRunAhead(runAhead).withPublishBatch(publishBatch);
        }

        int expectedTokens() {
            int tokens = bufferSizes.size();
            for (Op op : ops) {
                if (op instanceof EndStepOp) {
                    tokens++;
                }
            }
            return tokens;
        }
    }

    /** Builds the spec's steps, then one step per buffer whose token is the whole buffer. */
    static void build(Orchestrator o, ProgramSpec spec, List<Op> ops) {
        Buffer[] buffers = new Buffer[spec.bufferSizes().size()];
        for (int b = 0; b < buffers.length; b++) {
            buffers[b] = o.allocate(spec.bufferSizes().get(b));
        }
        for (Op op : ops) {
            switch (op) {
                case TaskOp task -> {
                    Access[] accesses = new Access[task.accesses().size()];
                    for (int i = 0; i < accesses.length; i++) {
                        AccessSpec a = task.accesses().get(i);
                        accesses[i] = new Access(region(buffers, a.range()), a.mode());
                    }
                    o.submit(MIX, Orchestrator.scalars(task.seed(), task.modes()), accesses);
                }
                case EndStepOp end -> o.endStep(region(buffers, end.token()));
            }
        }
        for (Buffer buffer : buffers) {
            o.endStep(buffer.region());
        }
    }

    private static Region region(Buffer[] buffers, Range range) {
        return buffers[range.buffer()].region(range.offset(), range.length());
    }

    // ---- the sequential reference ----------------------------------------------------------

    /** A task's view of plain heap memory; READ regions are read-only, as on the device. */
    private static final class PlainTaskContext implements TaskContext {
        private final MemorySegment[] regions;
        private final long[] scalars;
        private final long step;

        PlainTaskContext(MemorySegment[] regions, long[] scalars, long step) {
            this.regions = regions;
            this.scalars = scalars;
            this.step = step;
        }

        @Override
        public int regionCount() {
            return regions.length;
        }

        @Override
        public MemorySegment region(int i) {
            return regions[i];
        }

        @Override
        public int scalarCount() {
            return scalars.length;
        }

        @Override
        public long scalar(int i) {
            return scalars[i];
        }

        @Override
        public int core() {
            return 0;
        }

        @Override
        public long requestId() {
            return 0;
        }

        @Override
        public long step() {
            return step;
        }
    }

    /** The tokens of running {@code ops} one task at a time, in list order, on heap memory. */
    static List<byte[]> sequentialReference(ProgramSpec spec, List<Op> ops) throws Exception {
        MemorySegment[] memory = new MemorySegment[spec.bufferSizes().size()];
        for (int b = 0; b < memory.length; b++) {
            memory[b] = MemorySegment.ofArray(new byte[spec.bufferSizes().get(b)]);
        }
        List<byte[]> tokens = new ArrayList<>();
        for (Op op : ops) {
            switch (op) {
                case TaskOp task -> {
                    MemorySegment[] regions = new MemorySegment[task.accesses().size()];
                    for (int i = 0; i < regions.length; i++) {
                        AccessSpec a = task.accesses().get(i);
                        MemorySegment slice = slice(memory, a.range());
                        regions[i] = a.mode() == AccessMode.READ ? slice.asReadOnly() : slice;
                    }
                    long[] scalars = Orchestrator.scalars(task.seed(), task.modes());
                    MIX.run(new PlainTaskContext(regions, scalars, tokens.size()));
                }
                case EndStepOp end -> tokens.add(slice(memory, end.token()).toArray(ValueLayout.JAVA_BYTE));
            }
        }
        for (MemorySegment buffer : memory) {
            tokens.add(buffer.toArray(ValueLayout.JAVA_BYTE));
        }
        return tokens;
    }

    private static MemorySegment slice(MemorySegment[] memory, Range range) {
        return memory[range.buffer()].asSlice(range.offset(), range.length());
    }

    // ---- running on the runtime ------------------------------------------------------------

    /** The tokens of each concurrent copy of the program, after checking each completed cleanly. */
    static List<List<byte[]>> runOnWorker(ProgramSpec spec, List<Op> ops) {
        Worker worker = worker(spec.cores());
        Program<ProgramSpec> program = (o, s) -> build(o, s, ops);
        List<TokenStream> streams = new ArrayList<>();
        for (int copy = 0; copy < spec.copies(); copy++) {
            streams.add(worker.run(program, spec, spec.options()));
        }
        List<List<byte[]>> result = new ArrayList<>();
        for (TokenStream stream : streams) {
            List<byte[]> tokens = new ArrayList<>();
            for (Token token : stream) {
                assertThat(token.step())
                        .as("request %d delivered its %d-th token with step index %d", stream.requestId(),
                                tokens.size(), token.step())
                        .isEqualTo(tokens.size());
                tokens.add(token.bytes());
            }
            Outcome outcome = stream.completion().join();
            assertThat(outcome.status()).as("outcome of %s", outcome).isEqualTo(Status.COMPLETED);
            assertThat(outcome.tokens()).as("tokens counted in %s", outcome).isEqualTo(tokens.size());
            result.add(tokens);
        }
        assertThat(worker.memoryInUse())
                .as("device memory in use after every request of the program completed")
                .isZero();
        return result;
    }

    /** Null if equal, else a description of the first difference. */
    static String firstDifference(List<byte[]> actual, List<byte[]> expected, int bufferCount) {
        HexFormat hex = HexFormat.of();
        int n = Math.min(actual.size(), expected.size());
        for (int i = 0; i < n; i++) {
            if (!Arrays.equals(actual.get(i), expected.get(i))) {
                int finalIndex = i - (expected.size() - bufferCount);
                String what = finalIndex >= 0
                        ? "final contents of buffer b" + finalIndex
                        : "token of step " + i;
                return what + " differs from the sequential reference:\n  runtime   " + hex.formatHex(actual.get(i))
                        + "\n  reference " + hex.formatHex(expected.get(i));
            }
        }
        if (actual.size() != expected.size()) {
            return "runtime delivered " + actual.size() + " tokens, the sequential reference " + expected.size();
        }
        return null;
    }

    // ---- the properties --------------------------------------------------------------------

    @Property(tries = CI_TRIES)
    @AddLifecycleHook(LongRunTries.class)
    void pipelinedRunsGiveTheTokensAndMemoryOfSequentialExecution(@ForAll("programs") ProgramSpec spec)
            throws Exception {
        List<byte[]> expected = sequentialReference(spec, spec.ops());
        assertThat(expected).hasSize(spec.expectedTokens());
        List<List<byte[]>> copies = runOnWorker(spec, spec.ops());
        for (int copy = 0; copy < copies.size(); copy++) {
            String difference = firstDifference(copies.get(copy), expected, spec.bufferSizes().size());
            assertThat(difference)
                    .as("copy %d of %d, %s, %d cores, runAhead %d, publishBatch %d", copy, copies.size(),
                            spec.bufferSizes(), spec.cores(), spec.runAhead(), spec.publishBatch())
                    .isNull();
        }
    }

    /**
     * The comparison is not vacuous: for a hand-made program with two dependent tasks, the
     * runtime matches the reference in submission order and the comparison reports a
     * difference against the reference with those two tasks swapped.
     */
    @Example
    void comparisonDetectsTwoDependentTasksRunInTheWrongOrder() throws Exception {
        Range whole = new Range(0, 0, 16);
        TaskOp writer = new TaskOp(1, List.of(new AccessSpec(new Range(0, 4, 8), AccessMode.WRITE)));
        TaskOp mixer = new TaskOp(2, List.of(
                new AccessSpec(whole, AccessMode.READ_WRITE), new AccessSpec(new Range(1, 0, 8), AccessMode.WRITE)));
        TaskOp reader = new TaskOp(3, List.of(
                new AccessSpec(new Range(0, 0, 1), AccessMode.READ), new AccessSpec(new Range(1, 4, 8), AccessMode.READ_WRITE)));
        List<Op> ops = List.of(writer, mixer, new EndStepOp(new Range(1, 0, 8)), reader);
        List<Op> swapped = List.of(mixer, writer, new EndStepOp(new Range(1, 0, 8)), reader);
        for (int cores = 1; cores <= 4; cores++) {
            ProgramSpec spec = new ProgramSpec(List.of(16, 12), ops, 1, 2, cores, 1);
            List<byte[]> runtime = runOnWorker(spec, ops).getFirst();
            assertThat(firstDifference(runtime, sequentialReference(spec, ops), 2))
                    .as("runtime on %d cores against the reference in submission order", cores)
                    .isNull();
            assertThat(firstDifference(runtime, sequentialReference(spec, swapped), 2))
                    .as("the comparison must notice that the reference ran the two dependent tasks swapped")
                    .isNotNull();
        }
    }

    // ---- generators ------------------------------------------------------------------------

    @Provide
    Arbitrary<ProgramSpec> programs() {
        Arbitrary<List<Integer>> sizes = Arbitraries.integers().between(8, 256).list().ofMinSize(1).ofMaxSize(8);
        return sizes.flatMap(s -> Combinators.combine(
                        op(s).list().ofMaxSize(48).withSizeDistribution(RandomDistribution.uniform()),
                        publishBatch(),
                        Arbitraries.integers().between(1, 4),
                        Arbitraries.integers().between(1, 4),
                        Arbitraries.integers().between(1, 2))
                .as((ops, batch, runAhead, cores, copies) -> new ProgramSpec(s, ops, batch, runAhead, cores, copies)));
    }

    private static Arbitrary<Integer> publishBatch() {
        return Arbitraries.frequencyOf(
                Tuple.of(8, Arbitraries.integers().between(1, 100)),
                Tuple.of(2, Arbitraries.just(Integer.MAX_VALUE)));
    }

    private static Arbitrary<Op> op(List<Integer> sizes) {
        Arbitrary<AccessSpec> access = Combinators.combine(range(sizes), Arbitraries.of(AccessMode.class))
                .as(AccessSpec::new);
        Arbitrary<Op> task = Combinators.combine(
                        Arbitraries.longs(),
                        access.list().ofMinSize(1).ofMaxSize(4).withSizeDistribution(RandomDistribution.uniform()))
                .as(TaskOp::new);
        Arbitrary<Op> endStep = range(sizes).map(EndStepOp::new);
        return Arbitraries.frequencyOf(Tuple.of(5, task), Tuple.of(1, endStep));
    }

    private static Arbitrary<Range> range(List<Integer> sizes) {
        return Arbitraries.integers().between(0, sizes.size() - 1).flatMap(b -> {
            int size = sizes.get(b);
            Arbitrary<Range> whole = Arbitraries.just(new Range(b, 0, size));
            Arbitrary<Range> oneByte = Arbitraries.integers().between(0, size - 1).map(off -> new Range(b, off, 1));
            Arbitrary<Range> any = Arbitraries.integers().between(0, size - 1).flatMap(off ->
                    Arbitraries.integers().between(1, size - off).map(len -> new Range(b, off, len)));
            return Arbitraries.frequencyOf(Tuple.of(2, whole), Tuple.of(2, oneByte), Tuple.of(6, any));
        });
    }

    /** Multiplies a property's tries when the build runs with {@code -Dtandem.long=true}. */
    static final class LongRunTries implements AroundPropertyHook {
        static final int FACTOR = 10;

        @Override
        public PropertyExecutionResult aroundProperty(PropertyLifecycleContext context, PropertyExecutor property) {
            if ("true".equals(System.getProperty("tandem.long"))) {
                int tries = context.attributes().tries().orElse(CI_TRIES);
                context.attributes().setTries(tries * FACTOR);
            }
            return property.execute();
        }
    }
}
