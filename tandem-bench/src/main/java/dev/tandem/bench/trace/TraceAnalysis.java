package dev.tandem.bench.trace;

import dev.tandem.Status;
import dev.tandem.TraceEvent;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The overlap and latency figures of a trace, computed from its events alone. Every event
 * counts: a duplicated delivery is a second delivery, events may come in any order, and
 * nothing is matched by arrival order (a token taken names its step).
 *
 * <p>Definitions, over the run (earliest event start to latest event end):
 * <ul>
 *   <li><b>token-parallel overlap</b>: time during which some request builds a step while a
 *       task of one of its own earlier steps runs (the host builds step n+1 while the device
 *       runs step n);
 *   <li><b>request-parallel overlap</b>: time during which some request builds a step while a
 *       task of another request runs;
 *   <li><b>S∥S</b>: time during which tasks of two or more requests run at once;
 *   <li><b>device busy</b>: time each core runs at least one task, summed over cores, divided
 *       by cores × run;
 *   <li><b>bubbles</b>: maximal stretches during which some step is being built and no core
 *       runs a task: their count, total and longest;
 *   <li>per request, <b>TTFT</b>: first token delivered − submission; <b>inter-token
 *       latency</b>: gaps between consecutive deliveries; <b>delivery latency</b>: token taken −
 *       its step done. Percentiles are nearest-rank.
 * </ul>
 */
public final class TraceAnalysis {

    /** The figures of one request. Times in milliseconds; NaN where the trace has no data. */
    public record RequestReport(long request, String status, int tokens, int duplicateTokens, int outOfOrderTokens,
            double ttftMs, double itlP50Ms, double itlP99Ms, double deliveryP50Ms, double deliveryP99Ms,
            int deliverySamples) {

        public Map<String, Object> toJson() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("request", request);
            out.put("status", status);
            out.put("tokens", tokens);
            out.put("duplicate_tokens", duplicateTokens);
            out.put("out_of_order_tokens", outOfOrderTokens);
            out.put("ttft_ms", ttftMs);
            out.put("itl_p50_ms", itlP50Ms);
            out.put("itl_p99_ms", itlP99Ms);
            out.put("delivery_p50_ms", deliveryP50Ms);
            out.put("delivery_p99_ms", deliveryP99Ms);
            return out;
        }
    }

    /** Stretches of time, each {@code [start, end)} in trace nanoseconds, in order. */
    public record Intervals(long[] starts, long[] ends) {
        public int size() {
            return starts.length;
        }
    }

    /**
     * The figures of a trace. Durations in milliseconds; fractions are of the run.
     *
     * @param start the run's first instant (trace nanoseconds); {@code end} its last
     */
    public record Report(long start, long end, int cores, long tasks, double tokenParallelMs, double requestParallelMs,
            double sParallelMs, double busyCoreMs, int bubbleCount, double bubbleMs, double bubbleLongestMs,
            List<RequestReport> requests, Intervals tokenParallel, Intervals sParallel, Intervals bubbles,
            List<KernelReport> kernels, List<IdleReport> idle) {

        public double runMs() {
            return (end - start) / 1e6;
        }

        /** {@code ms} as a fraction of the run (0 for an empty run). */
        public double fraction(double ms) {
            return runMs() > 0 ? ms / runMs() : 0;
        }

        /** Core time spent running tasks over core time available. */
        public double deviceBusy() {
            return cores > 0 && runMs() > 0 ? busyCoreMs / (cores * runMs()) : 0;
        }

        public Map<String, Object> toJson() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("run_ms", runMs());
            out.put("cores", cores);
            out.put("tasks", tasks);
            out.put("token_parallel_ms", tokenParallelMs);
            out.put("token_parallel_fraction", fraction(tokenParallelMs));
            out.put("request_parallel_ms", requestParallelMs);
            out.put("request_parallel_fraction", fraction(requestParallelMs));
            out.put("s_parallel_ms", sParallelMs);
            out.put("s_parallel_fraction", fraction(sParallelMs));
            out.put("device_busy", deviceBusy());
            out.put("device_busy_ms", busyCoreMs);
            out.put("bubble_ms", bubbleMs);
            out.put("bubble_fraction", fraction(bubbleMs));
            out.put("bubble_count", bubbleCount);
            out.put("bubble_longest_ms", bubbleLongestMs);
            List<Object> perRequest = new ArrayList<>();
            for (RequestReport r : requests) {
                perRequest.add(r.toJson());
            }
            out.put("requests", perRequest);
            out.put("kernels", kernels.stream().map(KernelReport::toJson).toList());
            out.put("idle", idle.stream().map(IdleReport::toJson).toList());
            return out;
        }
    }

    /**
     * What one kernel (task name) took on the device.
     *
     * @param spans   task spans (a split task has one per core that ran parts of it)
     * @param busyMs  core time in its spans
     * @param aloneMs time its span was the only one running on any core: while it ran, every
     *                other core was idle, so with two cores this is the time it left one idle
     */
    public record KernelReport(String name, long spans, double busyMs, double aloneMs) {
        public Map<String, Object> toJson() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("name", name);
            out.put("spans", spans);
            out.put("busy_ms", busyMs);
            out.put("alone_ms", aloneMs);
            return out;
        }
    }

    /** A core's gap between two of its task spans at least this long is a long one (in ns). */
    public static final long LONG_GAP_NANOS = 50_000;

    /**
     * Where the cores idled: the gaps between a core's consecutive task spans, grouped by the
     * kernel it had just run and the one it ran next. Short gaps are the hand-over between
     * dependent phases (a core finishing its share and waiting for the other's last part, the
     * completion that makes the next task ready, a serial task the other core runs meanwhile);
     * long ones ({@link #LONG_GAP_NANOS} and more) are a core with nothing to run or not on a
     * processor (preempted by host threads, the JIT or the GC).
     *
     * @param gaps       gaps of this pair
     * @param idleMs     core time in them
     * @param longGaps   how many of them were long
     * @param longIdleMs core time in the long ones
     */
    public record IdleReport(String after, String before, long gaps, double idleMs, long longGaps, double longIdleMs) {
        public Map<String, Object> toJson() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("after", after);
            out.put("before", before);
            out.put("gaps", gaps);
            out.put("idle_ms", idleMs);
            out.put("long_gaps", longGaps);
            out.put("long_idle_ms", longIdleMs);
            return out;
        }
    }

    private TraceAnalysis() {}

    /**
     * @param events the trace's events, in any order
     * @param cores  the device's cores; at least the number of distinct cores that ran tasks is used
     */
    public static Report analyze(List<TraceEvent> events, int cores) {
        long start = Long.MAX_VALUE;
        long end = Long.MIN_VALUE;
        long tasks = 0;
        Set<Integer> taskCores = new HashSet<>();
        Map<String, long[]> kernelSpans = new LinkedHashMap<>(); // spans, busy ns
        for (TraceEvent e : events) {
            start = Math.min(start, e.start());
            end = Math.max(end, Math.max(e.start(), e.end()));
            if (e.kind() == TraceEvent.Kind.TASK) {
                tasks++;
                taskCores.add(e.thread());
                if (e.end() > e.start()) {
                    long[] k = kernelSpans.computeIfAbsent(String.valueOf(e.name()), n -> new long[2]);
                    k[0]++;
                    k[1] += e.duration();
                }
            }
        }
        if (events.isEmpty()) {
            start = 0;
            end = 0;
        }
        Sweep sweep = new Sweep();
        sweep.run(events);
        List<KernelReport> kernels = new ArrayList<>();
        kernelSpans.forEach((name, k) -> kernels.add(
                new KernelReport(name, k[0], k[1] / 1e6, sweep.alone.getOrDefault(name, 0L) / 1e6)));
        kernels.sort((a, b) -> Double.compare(b.busyMs(), a.busyMs()));
        return new Report(start, end, Math.max(cores, taskCores.size()), tasks, sweep.tokenParallel / 1e6,
                sweep.requestParallel / 1e6, sweep.sParallel / 1e6, sweep.busyCore / 1e6, sweep.bubbleCount,
                sweep.bubbleTotal / 1e6, sweep.bubbleLongest / 1e6, requests(events), sweep.tokenParallelRuns.done(),
                sweep.sParallelRuns.done(), sweep.bubbleRuns.done(), kernels, idle(events));
    }

    /** {@link IdleReport}s, most idle time first. */
    private static List<IdleReport> idle(List<TraceEvent> events) {
        Map<Integer, List<TraceEvent>> byCore = new java.util.TreeMap<>();
        for (TraceEvent e : events) {
            if (e.kind() == TraceEvent.Kind.TASK) {
                byCore.computeIfAbsent(e.thread(), c -> new ArrayList<>()).add(e);
            }
        }
        Map<List<String>, long[]> pairs = new LinkedHashMap<>(); // gaps, ns, long gaps, long ns
        for (List<TraceEvent> spans : byCore.values()) {
            spans.sort(java.util.Comparator.comparingLong(TraceEvent::start));
            for (int i = 1; i < spans.size(); i++) {
                TraceEvent before = spans.get(i - 1);
                TraceEvent next = spans.get(i);
                long gap = next.start() - before.end();
                if (gap <= 0) {
                    continue;
                }
                long[] p = pairs.computeIfAbsent(List.of(String.valueOf(before.name()), String.valueOf(next.name())),
                        k -> new long[4]);
                p[0]++;
                p[1] += gap;
                if (gap >= LONG_GAP_NANOS) {
                    p[2]++;
                    p[3] += gap;
                }
            }
        }
        List<IdleReport> out = new ArrayList<>();
        pairs.forEach((pair, p) -> out.add(new IdleReport(pair.get(0), pair.get(1), p[0], p[1] / 1e6, p[2], p[3] / 1e6)));
        out.sort((a, b) -> Double.compare(b.idleMs(), a.idleMs()));
        return out;
    }

    // ---- per request -----------------------------------------------------------------------

    private static List<RequestReport> requests(List<TraceEvent> events) {
        TreeSet<Long> ids = new TreeSet<>();
        Map<Long, Long> submitted = new HashMap<>();
        Map<Long, String> status = new HashMap<>();
        Map<Long, List<TraceEvent>> delivered = new HashMap<>();
        Map<Long, List<TraceEvent>> taken = new HashMap<>();
        Map<Long, Map<Long, Long>> stepDone = new HashMap<>();
        for (TraceEvent e : events) {
            long r = e.requestId();
            if (r < 0) {
                continue;
            }
            ids.add(r);
            switch (e.kind()) {
                case REQUEST_STARTED -> submitted.merge(r, e.start(), Math::min);
                case REQUEST -> {
                    submitted.merge(r, e.start(), Math::min);
                    Status[] statuses = Status.values();
                    String name = e.count() >= 0 && e.count() < statuses.length ? statuses[(int) e.count()].name() : "?";
                    status.merge(r, name, (a, b) -> a.equals(b) ? a : a + "+" + b);
                }
                case TOKEN_DELIVERED -> delivered.computeIfAbsent(r, k -> new ArrayList<>()).add(e);
                case TOKEN_TAKEN -> taken.computeIfAbsent(r, k -> new ArrayList<>()).add(e);
                case STEP_DONE -> stepDone.computeIfAbsent(r, k -> new HashMap<>()).merge(e.step(), e.start(), Math::min);
                default -> {
                    // spans: in the sweep
                }
            }
        }
        List<RequestReport> out = new ArrayList<>();
        for (long r : ids) {
            List<TraceEvent> tokens = delivered.getOrDefault(r, List.of()).stream()
                    .sorted((a, b) -> a.start() != b.start() ? Long.compare(a.start(), b.start())
                            : Long.compare(a.step(), b.step()))
                    .toList();
            Set<Long> steps = new HashSet<>();
            int outOfOrder = 0;
            long highest = Long.MIN_VALUE;
            double[] gaps = new double[Math.max(0, tokens.size() - 1)];
            for (int i = 0; i < tokens.size(); i++) {
                TraceEvent t = tokens.get(i);
                steps.add(t.step());
                if (t.step() < highest) {
                    outOfOrder++;
                }
                highest = Math.max(highest, t.step());
                if (i > 0) {
                    gaps[i - 1] = (t.start() - tokens.get(i - 1).start()) / 1e6;
                }
            }
            Long submit = submitted.get(r);
            double ttft = submit == null || tokens.isEmpty() ? Double.NaN : (tokens.getFirst().start() - submit) / 1e6;
            Map<Long, Long> done = stepDone.getOrDefault(r, Map.of());
            List<Double> delivery = new ArrayList<>();
            for (TraceEvent t : taken.getOrDefault(r, List.of())) {
                Long stepAt = done.get(t.step());
                if (stepAt != null) {
                    delivery.add((t.start() - stepAt) / 1e6);
                }
            }
            double[] deliveryMs = delivery.stream().mapToDouble(Double::doubleValue).toArray();
            out.add(new RequestReport(r, status.getOrDefault(r, "unfinished"), tokens.size(), tokens.size() - steps.size(),
                    outOfOrder, ttft, percentile(gaps, 50), percentile(gaps, 99), percentile(deliveryMs, 50),
                    percentile(deliveryMs, 99), deliveryMs.length));
        }
        return out;
    }

    /** Nearest-rank percentile: the smallest value with at least p% of the values at or below it; NaN if none. */
    public static double percentile(double[] values, double p) {
        if (values.length == 0) {
            return Double.NaN;
        }
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int rank = (int) Math.ceil(p / 100 * sorted.length);
        return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
    }

    // ---- the sweep over span boundaries ------------------------------------------------------

    /** Merges adjacent stretches as they are found, in time order. */
    private static final class Runs {
        private final List<long[]> runs = new ArrayList<>();

        void add(long from, long to) {
            if (!runs.isEmpty() && runs.getLast()[1] == from) {
                runs.getLast()[1] = to;
            } else {
                runs.add(new long[] {from, to});
            }
        }

        Intervals done() {
            long[] s = new long[runs.size()];
            long[] e = new long[runs.size()];
            for (int i = 0; i < runs.size(); i++) {
                s[i] = runs.get(i)[0];
                e[i] = runs.get(i)[1];
            }
            return new Intervals(s, e);
        }
    }

    /** What one request has in progress at the sweep's current time. */
    private static final class RequestState {
        final TreeMap<Long, Integer> runningSteps = new TreeMap<>();
        final TreeMap<Long, Integer> buildingSteps = new TreeMap<>();
        int running;
        int building;
        boolean tokenParallel;
    }

    private record Edge(long time, int delta, boolean task, long request, long step, int core, String name) {}

    private static final class Sweep {
        final Map<Long, RequestState> requests = new HashMap<>();
        final Map<Integer, Integer> perCore = new HashMap<>();
        final Set<Long> runningRequests = new HashSet<>();
        final Set<Long> buildingRequests = new HashSet<>();
        int busyCores;
        int runningTasks;
        int buildingSteps;
        int tokenParallelRequests;
        long tokenParallel;
        long requestParallel;
        long sParallel;
        long busyCore;
        int bubbleCount;
        long bubbleTotal;
        long bubbleLongest;
        long bubbleCurrent;
        boolean inBubble;
        final Runs tokenParallelRuns = new Runs();
        final Runs sParallelRuns = new Runs();
        final Runs bubbleRuns = new Runs();
        /** Running task spans per kernel name (no zero counts), and the time each ran alone, in ns. */
        final Map<String, Integer> runningKernels = new HashMap<>();
        final Map<String, Long> alone = new HashMap<>();

        void run(List<TraceEvent> events) {
            List<Edge> edges = new ArrayList<>();
            for (TraceEvent e : events) {
                boolean task = e.kind() == TraceEvent.Kind.TASK;
                if ((task || e.kind() == TraceEvent.Kind.STEP_BUILD) && e.end() > e.start()) {
                    String name = String.valueOf(e.name());
                    edges.add(new Edge(e.start(), +1, task, e.requestId(), e.step(), e.thread(), name));
                    edges.add(new Edge(e.end(), -1, task, e.requestId(), e.step(), e.thread(), name));
                }
            }
            // Starts before ends at equal times, so no count dips below zero; all edges at one
            // time are applied before the stretch that follows is measured.
            edges.sort((a, b) -> a.time() != b.time() ? Long.compare(a.time(), b.time())
                    : Integer.compare(b.delta(), a.delta()));
            int i = 0;
            while (i < edges.size()) {
                long time = edges.get(i).time();
                while (i < edges.size() && edges.get(i).time() == time) {
                    apply(edges.get(i));
                    i++;
                }
                if (i < edges.size()) {
                    measure(time, edges.get(i).time());
                }
            }
        }

        private void apply(Edge edge) {
            RequestState r = requests.computeIfAbsent(edge.request(), k -> new RequestState());
            if (edge.task()) {
                int before = perCore.getOrDefault(edge.core(), 0);
                int after = before + edge.delta();
                perCore.put(edge.core(), after);
                busyCores += (after > 0 ? 1 : 0) - (before > 0 ? 1 : 0);
                runningTasks += edge.delta();
                runningKernels.merge(edge.name(), edge.delta(), Integer::sum);
                runningKernels.remove(edge.name(), 0);
                r.running += edge.delta();
                r.runningSteps.merge(edge.step(), edge.delta(), Integer::sum);
                r.runningSteps.remove(edge.step(), 0);
                if (r.running > 0) {
                    runningRequests.add(edge.request());
                } else {
                    runningRequests.remove(edge.request());
                }
            } else {
                buildingSteps += edge.delta();
                r.building += edge.delta();
                r.buildingSteps.merge(edge.step(), edge.delta(), Integer::sum);
                r.buildingSteps.remove(edge.step(), 0);
                if (r.building > 0) {
                    buildingRequests.add(edge.request());
                } else {
                    buildingRequests.remove(edge.request());
                }
            }
            boolean tokenParallelNow = !r.buildingSteps.isEmpty() && !r.runningSteps.isEmpty()
                    && r.runningSteps.firstKey() < r.buildingSteps.lastKey();
            if (tokenParallelNow != r.tokenParallel) {
                r.tokenParallel = tokenParallelNow;
                tokenParallelRequests += tokenParallelNow ? 1 : -1;
            }
        }

        private void measure(long from, long to) {
            long dt = to - from;
            busyCore += dt * busyCores;
            if (runningTasks == 1) {
                alone.merge(runningKernels.keySet().iterator().next(), dt, Long::sum);
            }
            if (tokenParallelRequests > 0) {
                tokenParallel += dt;
                tokenParallelRuns.add(from, to);
            }
            if (requestParallel()) {
                requestParallel += dt;
            }
            if (runningRequests.size() >= 2) {
                sParallel += dt;
                sParallelRuns.add(from, to);
            }
            boolean bubble = buildingSteps > 0 && runningTasks == 0;
            if (bubble) {
                if (!inBubble) {
                    bubbleCount++;
                    bubbleCurrent = 0;
                }
                bubbleCurrent += dt;
                bubbleTotal += dt;
                bubbleLongest = Math.max(bubbleLongest, bubbleCurrent);
                bubbleRuns.add(from, to);
            }
            inBubble = bubble;
        }

        /** Whether some request builds while a task of another request runs. */
        private boolean requestParallel() {
            if (buildingRequests.isEmpty() || runningRequests.isEmpty()) {
                return false;
            }
            if (buildingRequests.size() >= 2 || runningRequests.size() >= 2) {
                return true;
            }
            return !buildingRequests.iterator().next().equals(runningRequests.iterator().next());
        }
    }
}
