package dev.tandem.bench;

import dev.tandem.TraceEvent;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Overlap figures computed from a worker's trace by one sweep over span boundaries:
 * device busy fraction, time during which some host step build overlapped some device task
 * (O∥S), and time during which tasks of two or more requests ran at once (S∥S).
 *
 * @param spanMillis               first event start to last event end
 * @param coreMillis               span × cores that ran tasks
 * @param busyMillis               sum of task durations
 * @param buildWhileRunningMillis  time with a step build and a task both in progress
 * @param multiRequestMillis       time with tasks of two or more requests in progress
 */
public record TraceOverlap(
        double spanMillis, double coreMillis, double busyMillis, double buildWhileRunningMillis,
        double multiRequestMillis) {

    public double deviceBusyFraction() {
        return coreMillis == 0 ? 0 : busyMillis / coreMillis;
    }

    public static TraceOverlap of(List<TraceEvent> events) {
        record Edge(long time, int delta, boolean task, long request) {}
        List<Edge> edges = new ArrayList<>();
        Set<Integer> cores = new HashSet<>();
        long first = Long.MAX_VALUE;
        long last = Long.MIN_VALUE;
        long busy = 0;
        for (TraceEvent e : events) {
            first = Math.min(first, e.start());
            last = Math.max(last, e.end());
            if (e.kind() == TraceEvent.Kind.TASK) {
                cores.add(e.thread());
                busy += e.duration();
                edges.add(new Edge(e.start(), +1, true, e.requestId()));
                edges.add(new Edge(e.end(), -1, true, e.requestId()));
            } else if (e.kind() == TraceEvent.Kind.STEP_BUILD) {
                edges.add(new Edge(e.start(), +1, false, e.requestId()));
                edges.add(new Edge(e.end(), -1, false, e.requestId()));
            }
        }
        if (edges.isEmpty()) {
            return new TraceOverlap(0, 0, 0, 0, 0);
        }
        // Ends before starts at equal times: touching spans do not overlap.
        edges.sort((a, b) -> a.time != b.time ? Long.compare(a.time, b.time) : Integer.compare(a.delta, b.delta));
        Map<Long, Integer> tasksPerRequest = new HashMap<>();
        int builds = 0;
        int tasks = 0;
        long buildWhileRunning = 0;
        long multiRequest = 0;
        long previous = edges.getFirst().time;
        for (Edge edge : edges) {
            long dt = edge.time - previous;
            if (builds > 0 && tasks > 0) {
                buildWhileRunning += dt;
            }
            if (tasksPerRequest.size() >= 2) {
                multiRequest += dt;
            }
            previous = edge.time;
            if (edge.task) {
                tasks += edge.delta;
                tasksPerRequest.merge(edge.request, edge.delta, Integer::sum);
                if (tasksPerRequest.get(edge.request) == 0) {
                    tasksPerRequest.remove(edge.request);
                }
            } else {
                builds += edge.delta;
            }
        }
        double span = (last - first) / 1e6;
        return new TraceOverlap(span, span * cores.size(), busy / 1e6, buildWhileRunning / 1e6, multiRequest / 1e6);
    }
}
