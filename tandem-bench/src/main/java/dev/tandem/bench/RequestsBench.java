package dev.tandem.bench;

import static dev.tandem.Access.readWrite;

import dev.tandem.Buffer;
import dev.tandem.CpuDeviceConfig;
import dev.tandem.Kernel;
import dev.tandem.Orchestrator;
import dev.tandem.Outcome;
import dev.tandem.Program;
import dev.tandem.RequestOptions;
import dev.tandem.SchedulingPolicy;
import dev.tandem.Session;
import dev.tandem.SessionConfig;
import dev.tandem.Status;
import dev.tandem.Token;
import dev.tandem.TokenStream;
import dev.tandem.Worker;
import dev.tandem.bench.trace.TraceAnalysis;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.locks.LockSupport;

/**
 * Many requests sharing one device: 1, 2, 4 and 8 concurrent requests of a synthetic step
 * workload, arriving in a seeded Poisson process, under FIFO and FIRST_TOKEN_FIRST.
 *
 * <p>A step is a chain of {@code tasksPerStep} tasks that each spin {@code taskMicros}: one
 * request can keep only one core busy, so a second core is idle unless another request's
 * tasks run beside it (S∥S). Arrivals come at N times the rate one request alone completes,
 * so about N requests are in the session at once; the session admits N at a time.
 */
public final class RequestsBench {

    /** One configuration's figures. */
    public record Row(
            int requests, String policy, int submitted, double tokensPerSecond, double deviceBusy,
            double sParallelFraction, double ttftP50, double ttftP99, double itlP50, double itlP99) {

        public Map<String, Object> toJson() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("requests", requests);
            out.put("policy", policy);
            out.put("submitted", submitted);
            out.put("tokens_per_s", tokensPerSecond);
            out.put("device_busy", deviceBusy);
            out.put("s_parallel_fraction", sParallelFraction);
            out.put("ttft_p50_ms", ttftP50);
            out.put("ttft_p99_ms", ttftP99);
            out.put("itl_p50_ms", itlP50);
            out.put("itl_p99_ms", itlP99);
            return out;
        }
    }

    /** The workload's shape. */
    public record Shape(int tokens, int tasksPerStep, long taskMicros, int requestsPerLevel) {}

    private static final Kernel SPIN = Kernel.of("spin", context -> {
        Spin.spin(context.scalar(0));
        var state = context.region(0);
        state.set(ValueLayout.JAVA_LONG, 0, state.get(ValueLayout.JAVA_LONG, 0) + 1);
    });

    private RequestsBench() {}

    public static Program<Integer> program(Shape shape) {
        long nanos = shape.taskMicros() * 1000;
        return (o, tokens) -> {
            Buffer state = o.allocate(ValueLayout.JAVA_LONG, 1);
            for (int s = 0; s < tokens; s++) {
                for (int t = 0; t < shape.tasksPerStep(); t++) {
                    o.submit(SPIN, Orchestrator.scalars(nanos), readWrite(state));
                }
                o.endStep(state.region());
            }
        };
    }

    public static List<Row> run(Shape shape, int cores, int[] levels, List<SchedulingPolicy> policies, long seed) {
        List<Row> rows = new ArrayList<>();
        double aloneMillis = aloneMillis(shape, cores);
        for (SchedulingPolicy policy : policies) {
            for (int level : levels) {
                rows.add(runLevel(shape, cores, level, policy, aloneMillis, seed + level));
            }
        }
        return rows;
    }

    /** How long one request takes with the device to itself (after a warm-up). */
    static double aloneMillis(Shape shape, int cores) {
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(cores));
                Session<Integer> session = worker.openSession(program(shape), SessionConfig.defaults())) {
            double best = Double.MAX_VALUE;
            for (int i = 0; i < 3; i++) {
                long start = System.nanoTime();
                TokenStream stream = session.submit(shape.tokens());
                stream.forEach(t -> {});
                best = Math.min(best, (System.nanoTime() - start) / 1e6);
            }
            return best;
        }
    }

    private static Row runLevel(Shape shape, int cores, int level, SchedulingPolicy policy, double aloneMillis, long seed) {
        int total = shape.requestsPerLevel() * level;
        SplittableRandom random = new SplittableRandom(seed);
        double meanGapNanos = aloneMillis * 1e6 / level;
        long[][] arrivals = new long[total][shape.tokens()];
        int[] counts = new int[total];
        Outcome[] outcomes = new Outcome[total];
        SessionConfig config = SessionConfig.defaults().maxActive(level).maxQueued(total).policy(policy);
        List<dev.tandem.TraceEvent> events;
        long start;
        long end;
        try (Worker worker = Worker.builder().device(CpuDeviceConfig.withCores(cores)).tracing(true).build();
                Session<Integer> session = worker.openSession(program(shape), config)) {
            CountDownLatch done = new CountDownLatch(total);
            TokenStream[] streams = new TokenStream[total];
            start = System.nanoTime();
            long next = start;
            for (int i = 0; i < total; i++) {
                long wait = next - System.nanoTime();
                if (wait > 0) {
                    LockSupport.parkNanos(wait); // a load generator's pacing, not synchronisation
                }
                streams[i] = session.submit(shape.tokens(), RequestOptions.defaults());
                int index = i;
                Thread.ofVirtual().start(() -> {
                    try {
                        for (Token ignored : streams[index]) {
                            arrivals[index][counts[index]++] = System.nanoTime();
                        }
                    } finally {
                        done.countDown();
                    }
                });
                next += (long) (-Math.log(1 - random.nextDouble()) * meanGapNanos);
            }
            try {
                done.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
            end = System.nanoTime();
            for (int i = 0; i < total; i++) {
                outcomes[i] = streams[i].completion().join();
                if (outcomes[i].status() != Status.COMPLETED) {
                    throw new IllegalStateException("bench request did not complete: " + outcomes[i]);
                }
            }
            events = worker.traceEvents();
        }
        double[] ttft = new double[total];
        List<Double> itl = new ArrayList<>();
        long tokens = 0;
        for (int i = 0; i < total; i++) {
            ttft[i] = outcomes[i].timeToFirstToken().toNanos() / 1e6;
            tokens += counts[i];
            for (int k = 1; k < counts[i]; k++) {
                itl.add((arrivals[i][k] - arrivals[i][k - 1]) / 1e6);
            }
        }
        TraceAnalysis.Report report = TraceAnalysis.analyze(events, cores);
        double[] itls = itl.stream().mapToDouble(Double::doubleValue).toArray();
        return new Row(level, policy.toString(), total, tokens / ((end - start) / 1e9), report.deviceBusy(),
                report.fraction(report.sParallelMs()), TraceAnalysis.percentile(ttft, 50),
                TraceAnalysis.percentile(ttft, 99), TraceAnalysis.percentile(itls, 50), TraceAnalysis.percentile(itls, 99));
    }
}
