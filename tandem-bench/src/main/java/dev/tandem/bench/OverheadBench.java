package dev.tandem.bench;

import dev.tandem.Access;
import dev.tandem.AccessMode;
import dev.tandem.Buffer;
import dev.tandem.CpuDeviceConfig;
import dev.tandem.Kernel;
import dev.tandem.Outcome;
import dev.tandem.Program;
import dev.tandem.RunOptions;
import dev.tandem.Status;
import dev.tandem.TokenStream;
import dev.tandem.TraceConfig;
import dev.tandem.Worker;
import dev.tandem.bench.peers.ForkJoinPeer;
import dev.tandem.bench.peers.SyntheticDag;
import dev.tandem.bench.peers.TbbPeer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;

/**
 * Nanoseconds per task from submit to completion for empty kernels, tandem against
 * CompletableFuture on a ForkJoinPool and oneTBB flow_graph, on the same DAGs, in alternating
 * rounds. tandem gets the
 * DAG as region accesses and infers its edges (inference is inside the timing); the peers get
 * the same edges made explicit.
 */
public final class OverheadBench {

    /** One row of the result table. */
    public record Row(String shape, int cores, long edges, double tandemNs, double forkJoinNs, Double tbbNs, String tbbNote) {}

    /** An empty kernel that still touches something so it cannot be optimised away. */
    private static final Kernel EMPTY = Kernel.of("empty", context -> {
        if (context.regionCount() < 0) {
            throw new AssertionError();
        }
    });

    private OverheadBench() {}

    /** Timed runs per contender per round, after one untimed: a round's figure is the best of them. */
    public static final int RUNS_PER_ROUND = 2;

    /**
     * The least warm-up of tandem and ForkJoin per row before its rounds, which then goes on until
     * a round leaves the JIT quiet ({@link WarmUp}, at most {@value WarmUp#MAX_FACTOR} times as
     * long): a new DAG shape's first rounds ran tandem at about twice its later cost while C2
     * compiled the paths that shape takes. Two untimed rounds, the warm-up before this one, left
     * the first row (the chain on 1 core) measured while C2 still compiled: 70.6 ns a task, where
     * a harness that ran it longer read 50-54 in the same hour. oneTBB runs in a process of its
     * own, which warms up inside.
     */
    public static final long WARM_UP_NANOS = 1_000_000_000L;

    public static List<Row> run(int tasks, int[] coreCounts, int rounds, long seed) {
        return run(tasks, coreCounts, rounds, seed, null);
    }

    /** {@link #run(int, int[], int, long, BiFunction, long)} with {@link #WARM_UP_NANOS} of warm-up a row. */
    public static List<Row> run(int tasks, int[] coreCounts, int rounds, long seed,
            BiFunction<String, Integer, TraceConfig> traceFor) {
        return run(tasks, coreCounts, rounds, seed, traceFor, WARM_UP_NANOS);
    }

    /**
     * Per DAG and core count, {@code rounds} rounds that each run tandem, then ForkJoin, then
     * oneTBB (a warm-up and {@value #RUNS_PER_ROUND} timed runs each, the best kept); a row holds
     * each contender's median over the rounds. Alternating spreads the machine's noise over all
     * three: run one after the other, ten runs each, two invocations of the bench gave tandem
     * 354 and 687 ns a task on the same fanout row. Before its rounds, each row warms tandem and
     * ForkJoin up for {@code warmUpNanos} and until the JIT is quiet. Each tandem worker of the
     * first round is traced as {@code traceFor(shape, cores)} says (a null function or result: off).
     */
    public static List<Row> run(int tasks, int[] coreCounts, int rounds, long seed,
            BiFunction<String, Integer, TraceConfig> traceFor, long warmUpNanos) {
        if (rounds < 1) {
            throw new IllegalArgumentException("rounds must be at least 1, got " + rounds);
        }
        List<SyntheticDag> dags = List.of(
                SyntheticDag.chain(tasks), SyntheticDag.fanout(tasks), SyntheticDag.random(tasks, seed));
        List<Row> rows = new ArrayList<>();
        for (SyntheticDag dag : dags) {
            for (int cores : coreCounts) {
                double[] tandem = new double[rounds];
                double[] forkJoin = new double[rounds];
                double[] tbb = new double[rounds];
                String note = null;
                WarmUp.run(() -> {
                    tandemNsPerTask(dag, CpuDeviceConfig.withCores(cores), RUNS_PER_ROUND, null);
                    ForkJoinPeer.nsPerTask(dag, cores, RUNS_PER_ROUND);
                }, warmUpNanos);
                for (int round = 0; round < rounds; round++) {
                    TraceConfig trace = round == 0 && traceFor != null ? traceFor.apply(dag.shape(), cores) : null;
                    tandem[round] = tandemNsPerTask(dag, CpuDeviceConfig.withCores(cores), RUNS_PER_ROUND, trace);
                    forkJoin[round] = ForkJoinPeer.nsPerTask(dag, cores, RUNS_PER_ROUND);
                    if (note == null) {
                        TbbPeer.Result result = TbbPeer.run(dag, cores, RUNS_PER_ROUND);
                        if (result instanceof TbbPeer.Result.Measured m) {
                            tbb[round] = m.nsPerTask();
                        } else {
                            note = ((TbbPeer.Result.Unavailable) result).reason();
                        }
                    }
                }
                rows.add(new Row(dag.shape(), cores, dag.edgeCount(), Stats.median(tandem), Stats.median(forkJoin),
                        note == null ? Stats.median(tbb) : null, note));
            }
        }
        return rows;
    }

    /** Best of {@code repetitions} runs after one warm-up, in ns per task. */
    public static double tandemNsPerTask(SyntheticDag dag, int cores, int repetitions) {
        return tandemNsPerTask(dag, CpuDeviceConfig.withCores(cores), repetitions);
    }

    /** Best of {@code repetitions} runs after one warm-up on {@code device}, in ns per task. */
    public static double tandemNsPerTask(SyntheticDag dag, CpuDeviceConfig device, int repetitions) {
        return tandemNsPerTask(dag, device, repetitions, null);
    }

    /** As {@link #tandemNsPerTask(SyntheticDag, CpuDeviceConfig, int)}, tracing as {@code trace} says (null: off). */
    public static double tandemNsPerTask(SyntheticDag dag, CpuDeviceConfig device, int repetitions, TraceConfig trace) {
        long best = Long.MAX_VALUE;
        try (Worker worker = Worker.builder().device(device).trace(trace).build()) {
            for (int run = 0; run <= repetitions; run++) {
                long elapsed = runOnce(worker, dag);
                if (run > 0) {
                    best = Math.min(best, elapsed);
                }
            }
        }
        return (double) best / dag.taskCount();
    }

    /**
     * The DAG as a program: each task's accesses, then a submit. It holds its regions' accesses as
     * a program holds its tensors' (one {@link Access} per buffer, region and mode, made when first
     * used, inside the timing), and passes one array per access count, which {@code submit}
     * copies. Made afresh per access instead, the allocations took 9% of the chain's time, 1-3% of the
     * fan-out's and 17-18% of random's (in-JVM A/B); ForkJoin is handed its edges ready-made.
     */
    private static long runOnce(Worker worker, SyntheticDag dag) {
        long regionBytes = 8;
        Program<SyntheticDag> program = (o, d) -> {
            Buffer[] buffers = new Buffer[d.buffers()];
            for (int b = 0; b < buffers.length; b++) {
                buffers[b] = o.allocate(regionBytes * d.regionsPerBuffer());
            }
            int perBuffer = d.regionsPerBuffer();
            AccessMode[] modes = {AccessMode.READ, AccessMode.WRITE, AccessMode.READ_WRITE};
            Access[] held = new Access[Math.multiplyExact(Math.multiplyExact(d.buffers(), perBuffer), modes.length)];
            Access[][] arrays = new Access[0][]; // by access count
            int n = d.taskCount();
            for (int t = 0; t < n; t++) {
                int count = d.accessCount(t);
                if (count >= arrays.length) {
                    arrays = Arrays.copyOf(arrays, count + 1);
                }
                Access[] accesses = arrays[count];
                if (accesses == null) {
                    accesses = new Access[count];
                    arrays[count] = accesses;
                }
                for (int k = 0; k < count; k++) {
                    int buffer = d.buffer(t, k);
                    int region = d.region(t, k);
                    int mode = switch (d.mode(t, k)) {
                        case READ -> 0;
                        case WRITE -> 1;
                        case READ_WRITE -> 2;
                    };
                    int key = (buffer * perBuffer + region) * modes.length + mode;
                    Access access = held[key];
                    if (access == null) {
                        access = new Access(buffers[buffer].region(regionBytes * region, regionBytes), modes[mode]);
                        held[key] = access;
                    }
                    accesses[k] = access;
                }
                o.submit(EMPTY, accesses);
            }
        };
        long start = System.nanoTime();
        TokenStream stream = worker.run(program, dag, RunOptions.defaults());
        Outcome outcome = stream.completion().join();
        long elapsed = System.nanoTime() - start;
        if (outcome.status() != Status.COMPLETED) {
            throw new IllegalStateException("overhead run did not complete: " + outcome);
        }
        return elapsed;
    }

    public static Map<String, Object> toJson(List<Row> rows) {
        List<Object> results = new ArrayList<>();
        for (Row row : rows) {
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("shape", row.shape());
            r.put("cores", row.cores());
            r.put("edges", row.edges());
            r.put("tandem_ns_per_task", row.tandemNs());
            r.put("forkjoin_ns_per_task", row.forkJoinNs());
            r.put("tbb_ns_per_task", row.tbbNs() != null ? row.tbbNs() : row.tbbNote());
            results.add(r);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("results", results);
        return out;
    }
}
