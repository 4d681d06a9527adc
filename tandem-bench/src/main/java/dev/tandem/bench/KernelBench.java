package dev.tandem.bench;

import dev.tandem.kernels.KernelOps;
import dev.tandem.kernels.Ops;
import dev.tandem.kernels.TensorType;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The matmul kernels against the machine's read bandwidth: each kernel multiplies a weight matrix
 * larger than the last-level cache by a batch of 1 and of 8 inputs, on 1 and 2 threads, and
 * reports the GB/s of weights it reads; a plain read of as many bytes on as many threads (a
 * vectorized comparison of the q8_0_x16 matrix with its copy), timed in the same rounds, is the bound,
 * and each kernel reports its fraction of it.
 *
 * <p>Threads take row blocks of about 256 KiB of weights from a shared counter, as the decoder's
 * row-block tasks do. Every round times every contender once, in the same order, so that the
 * machine's noise (other processes on its cores) spreads over all of them; a figure is the median
 * over the rounds after the warm-up, with the best round beside it.
 */
public final class KernelBench {

    /** Columns of every weight matrix: a Llama FFN's input width. */
    public static final int COLS = 4096;

    /** Weight bytes per row-block task, as the decoder sizes them. */
    static final long BLOCK_BYTES = 256 << 10;

    /** The kernels measured. */
    public enum Kernel {
        /** f32 interleaved by 16 rows: how the decoder runs an f32 matrix. */
        F32_X16(TensorType.F32_X16),
        /** f16 interleaved by 16 rows: how the decoder runs an f16 matrix. */
        F16_X16(TensorType.F16_X16),
        /** bf16 interleaved by 16 rows: how the decoder runs a bf16 matrix. */
        BF16_X16(TensorType.BF16_X16),
        /** q8_0 interleaved by 16 rows, with int8 inputs: how the decoder runs a q8_0 matrix. */
        Q8_0_X16(TensorType.Q8_0_X16),
        /** q4_0 interleaved by 16 rows, with int8 inputs: how the decoder runs a q4_0 matrix. */
        Q4_0_X16(TensorType.Q4_0_X16),
        /** q5_0 interleaved by 16 rows, with int8 inputs (most of a Qwen2.5-0.5B Q4_K_M file). */
        Q5_0_X16(TensorType.Q5_0_X16),
        /** q4_K interleaved by 16 rows, with int8 inputs: how the decoder runs a q4_K matrix. */
        Q4_K_X16(TensorType.Q4_K_X16),
        /** q6_K interleaved by 16 rows, with int8 inputs: how the decoder runs a q6_K matrix. */
        Q6_K_X16(TensorType.Q6_K_X16);

        private final TensorType type;

        Kernel(TensorType type) {
            this.type = type;
        }

        public String label() {
            return type.ggmlName();
        }

        TensorType type() {
            return type;
        }
    }

    /**
     * One kernel at one batch and thread count: weight GB/s, median and best, the median read
     * bandwidth of the same rounds, and the median as a fraction of it.
     */
    public record Row(String kernel, int batch, int threads, long weightBytes, double gbPerSecond, double bestGbPerSecond,
            double readGbPerSecond, double fractionOfRead) {

        public Map<String, Object> toJson() {
            Map<String, Object> json = new LinkedHashMap<>();
            json.put("kernel", kernel);
            json.put("batch", batch);
            json.put("threads", threads);
            json.put("weight_bytes", weightBytes);
            json.put("gb_per_s", gbPerSecond);
            json.put("best_gb_per_s", bestGbPerSecond);
            json.put("read_gb_per_s", readGbPerSecond);
            json.put("fraction_of_read", fractionOfRead);
            return json;
        }
    }

    /** The bandwidth of a plain read and of a copy (bytes read), per thread count, and every kernel row. */
    public record Result(String ops, int rounds, long bytes, Map<Integer, Double> readGbPerSecond,
            Map<Integer, Double> copyGbPerSecond, List<Row> rows) {

        public Map<String, Object> toJson() {
            Map<String, Object> json = new LinkedHashMap<>();
            json.put("ops", ops);
            json.put("rounds", rounds);
            json.put("cols", COLS);
            List<Object> machine = new ArrayList<>();
            for (int threads : readGbPerSecond.keySet()) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("threads", threads);
                m.put("read_gb_per_s", readGbPerSecond.get(threads));
                m.put("copy_read_gb_per_s", copyGbPerSecond.get(threads));
                machine.add(m);
            }
            json.put("read_bandwidth", machine);
            json.put("rows", rows.stream().map(Row::toJson).toList());
            return json;
        }
    }

    private KernelBench() {}

    /**
     * Runs every kernel on weights of about {@code bytes} bytes each for {@code rounds} timed rounds
     * after {@code warmup} untimed ones.
     */
    public static Result run(long bytes, int warmup, int rounds, int[] threadCounts, int[] batches) {
        KernelOps ops = Ops.preferred();
        int maxBatch = Arrays.stream(batches).max().orElse(1);
        try (Arena arena = Arena.ofShared()) {
            Random random = new Random(7);
            Matrix[] matrices = new Matrix[Kernel.values().length];
            int maxRows = 0;
            for (Kernel kernel : Kernel.values()) {
                int rows = (int) (bytes / kernel.type().rowBytes(COLS));
                MemorySegment weights = randomBlocks(arena, kernel.type(), rows, random);
                matrices[kernel.ordinal()] = new Matrix(kernel, rows, weights);
                maxRows = Math.max(maxRows, rows);
            }
            MemorySegment q8 = matrices[Kernel.Q8_0_X16.ordinal()].weights;
            MemorySegment x = randomF32(arena, (long) maxBatch * COLS, random);
            MemorySegment out = arena.allocate((long) maxBatch * maxRows * Float.BYTES, 64);
            MemorySegment copyTarget = arena.allocate(q8.byteSize(), 64);
            copyTarget.copyFrom(q8);
            warmUp(ops, arena, random);

            Map<String, List<Double>> samples = new LinkedHashMap<>();
            for (int round = 0; round < warmup + rounds; round++) {
                boolean timed = round >= warmup;
                for (int threads : threadCounts) {
                    record(samples, timed, "copy " + threads, q8.byteSize(), timeCopy(q8, copyTarget, threads));
                    record(samples, timed, "read " + threads, 2 * q8.byteSize(), timeRead(q8, copyTarget, threads));
                    for (int batch : batches) {
                        for (Matrix m : matrices) {
                            double seconds = timeMatmul(ops, m, x, out, batch, threads);
                            record(samples, timed, key(m.kernel, batch, threads), m.weights.byteSize(), seconds);
                        }
                    }
                }
            }
            Map<Integer, Double> read = new LinkedHashMap<>();
            Map<Integer, Double> copy = new LinkedHashMap<>();
            List<Row> rows = new ArrayList<>();
            for (int threads : threadCounts) {
                read.put(threads, Stats.median(samples.get("read " + threads)));
                copy.put(threads, Stats.median(samples.get("copy " + threads)));
                for (int batch : batches) {
                    for (Matrix m : matrices) {
                        List<Double> s = samples.get(key(m.kernel, batch, threads));
                        double median = Stats.median(s);
                        rows.add(new Row(m.kernel.label(), batch, threads, m.weights.byteSize(), median,
                                s.stream().mapToDouble(Double::doubleValue).max().orElse(0), read.get(threads),
                                median / read.get(threads)));
                    }
                }
            }
            return new Result(ops.name(), rounds, q8.byteSize(), read, copy, rows);
        }
    }

    private record Matrix(Kernel kernel, int rows, MemorySegment weights) {

        long rowBytes() {
            return kernel.type().rowBytes(COLS);
        }

        /** Rows per task: about {@link #BLOCK_BYTES} of weights, whole groups of 16 rows for the interleaved layouts. */
        int blockRows() {
            int rows = (int) Math.max(1, BLOCK_BYTES / rowBytes());
            return kernel.type().isInterleaved() ? Math.max(TensorType.X16_ROWS, rows - rows % TensorType.X16_ROWS) : rows;
        }
    }

    private static String key(Kernel kernel, int batch, int threads) {
        return kernel.label() + " " + batch + " " + threads;
    }

    private static void record(Map<String, List<Double>> samples, boolean timed, String key, long bytes, double seconds) {
        List<Double> list = samples.computeIfAbsent(key, k -> new ArrayList<>());
        if (timed) {
            list.add(bytes / seconds / 1e9);
        }
    }

    private static MemorySegment randomF32(Arena arena, long count, Random random) {
        MemorySegment segment = arena.allocate(count * Float.BYTES, 64);
        for (long i = 0; i < count; i++) {
            segment.setAtIndex(ValueLayout.JAVA_FLOAT, i, random.nextFloat() * 2 - 1);
        }
        return segment;
    }

    /**
     * {@code rows} rows of {@link #COLS} random values of a block type: random quants and packed
     * scales, with every f16 scale ({@code d}, and q4_K's {@code dmin}) small and finite; of f16
     * or bf16, random floats rounded to them.
     */
    private static MemorySegment randomBlocks(Arena arena, TensorType type, int rows, Random random) {
        if (type == TensorType.F32) {
            return randomF32(arena, (long) rows * COLS, random);
        }
        if (type == TensorType.F16 || type == TensorType.BF16) { // random floats rounded: no NaN or infinity
            MemorySegment values = randomF32(arena, (long) rows * COLS, random);
            MemorySegment halves = arena.allocate(type.rowBytes(COLS) * rows, 64);
            Ops.preferred().quantize(type, values, 0, halves, 0, (long) rows * COLS);
            return halves;
        }
        TensorType plain = type.source();
        if (plain != null) {
            MemorySegment stored = randomBlocks(arena, plain, rows, random);
            MemorySegment x16 = arena.allocate(stored.byteSize(), 64);
            Ops.preferred().interleave(plain, stored, 0, x16, 0, rows, COLS);
            return x16;
        }
        long rowBytes = type.rowBytes(COLS);
        MemorySegment segment = arena.allocate(rows * rowBytes, 64);
        byte[] row = new byte[(int) rowBytes];
        for (int r = 0; r < rows; r++) {
            random.nextBytes(row);
            for (int b = 0; b < COLS / type.blockSize(); b++) {
                int at = b * type.blockBytes();
                int first = type == TensorType.Q6_K ? 208 : 0; // q6_K keeps its d after the quants and scales
                for (int scale = 0; scale < (type == TensorType.Q4_K ? 2 : 1); scale++) {
                    short half = Float.floatToFloat16((1 + random.nextFloat()) / 127f);
                    row[at + first + 2 * scale] = (byte) half;
                    row[at + first + 2 * scale + 1] = (byte) (half >> 8);
                }
            }
            MemorySegment.copy(row, 0, segment, ValueLayout.JAVA_BYTE, r * rowBytes, row.length);
        }
        return segment;
    }

    /** Compiles every path the timed rounds take, on a matrix small enough to run many times. */
    private static void warmUp(KernelOps ops, Arena arena, Random random) {
        int rows = 64;
        MemorySegment x = randomF32(arena, 8L * COLS, random);
        MemorySegment out = arena.allocate(8L * rows * Float.BYTES, 64);
        for (Kernel kernel : Kernel.values()) {
            MemorySegment w = randomBlocks(arena, kernel.type(), rows, random);
            for (int i = 0; i < 300; i++) {
                ops.matmul(kernel.type(), w, 0, x, 0, out, 0, rows, COLS, i % 2 == 0 ? 1 : 8, 0, rows);
            }
        }
    }

    /** Seconds for {@code threads} threads to run the matmul over all rows, in row blocks. */
    private static double timeMatmul(KernelOps ops, Matrix m, MemorySegment x, MemorySegment out, int batch, int threads) {
        int blockRows = m.blockRows();
        int blocks = Math.ceilDiv(m.rows, blockRows);
        AtomicInteger next = new AtomicInteger();
        Runnable work = () -> {
            for (int b = next.getAndIncrement(); b < blocks; b = next.getAndIncrement()) {
                int r0 = b * blockRows;
                int r1 = Math.min(m.rows, r0 + blockRows);
                ops.matmul(m.kernel.type(), m.weights, 0, x, 0, out, 0, m.rows, COLS, batch, r0, r1);
            }
        };
        return timeOnThreads(threads, t -> work.run());
    }

    /** Where the comparisons go, so that the JIT cannot drop them. */
    private static volatile long sink;

    /**
     * Seconds for {@code threads} threads to compare {@code a} with its equal copy {@code b}, each
     * a share: {@link MemorySegment#mismatch} is the JDK's vectorized comparison, a plain read of
     * both at the speed the machine reads, so the bytes read are twice {@code a}'s. (A scalar sum
     * in this module, without the Vector API, reads slower than the f32 matvec.)
     */
    private static double timeRead(MemorySegment a, MemorySegment b, int threads) {
        long share = Math.ceilDiv(a.byteSize(), threads);
        return timeOnThreads(threads, t -> {
            long from = Math.min(a.byteSize(), t * share);
            long to = Math.min(a.byteSize(), from + share);
            sink = MemorySegment.mismatch(a, from, to, b, from, to);
        });
    }

    private static double timeCopy(MemorySegment from, MemorySegment to, int threads) {
        long share = Math.ceilDiv(from.byteSize(), threads);
        return timeOnThreads(threads, t -> {
            long offset = Math.min(from.byteSize(), t * share);
            MemorySegment.copy(from, offset, to, offset, Math.min(share, from.byteSize() - offset));
        });
    }

    private interface ThreadWork {
        void run(int thread);
    }

    /** Wall seconds from starting {@code threads} platform threads running {@code work} to the last one ending. */
    private static double timeOnThreads(int threads, ThreadWork work) {
        Thread[] workers = new Thread[threads];
        AtomicInteger ready = new AtomicInteger();
        long[] start = new long[1];
        for (int t = 0; t < threads; t++) {
            int index = t;
            workers[t] = Thread.ofPlatform().unstarted(() -> {
                ready.incrementAndGet();
                while (ready.get() < threads + 1) {
                    Thread.onSpinWait();
                }
                work.run(index);
            });
            workers[t].start();
        }
        while (ready.get() < threads) {
            Thread.onSpinWait();
        }
        start[0] = System.nanoTime();
        ready.incrementAndGet();
        for (Thread worker : workers) {
            try {
                worker.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while timing", e);
            }
        }
        return (System.nanoTime() - start[0]) / 1e9;
    }
}
