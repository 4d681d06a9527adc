package dev.tandem.bench.trace;

import dev.tandem.TraceEvent;
import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.FontMetrics;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import javax.imageio.ImageIO;

/**
 * A swimlane picture of a trace: one lane per request's host build (its step builds, token
 * deliveries marked as ticks), one lane per core (its tasks), colored by request, and three
 * thin lanes below marking token-parallel overlap, S∥S and bubbles. Drawn headless into a
 * {@link BufferedImage} and written as PNG.
 */
public final class SwimlaneChart {
    private static final int WIDTH = 1600;
    private static final int MAX_REQUEST_LANES = 24;
    private static final int LABEL = 150;
    private static final int RIGHT = 24;
    private static final int HEADER = 64;
    private static final int REQUEST_LANE = 20;
    private static final int CORE_LANE = 30;
    private static final int MARK_LANE = 12;
    private static final int GAP = 4;
    private static final int SECTION_GAP = 14;
    private static final int FOOTER = 70;
    private static final Color BACKGROUND = Color.WHITE;
    private static final Color LANE = new Color(0xF2F2F2);
    private static final Color INK = new Color(0x222222);
    private static final Color QUIET = new Color(0x777777);
    private static final Color QUEUED = new Color(0xCCCCCC);
    private static final Color SKIPPED = new Color(0xBBBBBB);
    private static final Color TOKEN_PARALLEL = new Color(0x2E7D32);
    private static final Color S_PARALLEL = new Color(0x1565C0);
    private static final Color BUBBLE = new Color(0xC62828);

    private SwimlaneChart() {}

    /** Draws {@code events} with the figures of {@code report} and writes the PNG to {@code out}. */
    public static void write(List<TraceEvent> events, TraceAnalysis.Report report, String title, Path out)
            throws IOException {
        BufferedImage image = render(events, report, title);
        if (!ImageIO.write(image, "png", out.toFile())) {
            throw new IOException("no PNG writer in this runtime");
        }
    }

    static BufferedImage render(List<TraceEvent> events, TraceAnalysis.Report report, String title) {
        TreeSet<Integer> coreIds = new TreeSet<>();
        Map<Long, long[]> extent = new TreeMap<>(); // request → [first start, last end] of its host lane
        for (TraceEvent e : events) {
            if (e.kind() == TraceEvent.Kind.TASK) {
                coreIds.add(e.thread());
            }
            if (e.requestId() >= 0 && (e.kind() == TraceEvent.Kind.STEP_BUILD
                    || e.kind() == TraceEvent.Kind.REQUEST_STARTED || e.kind() == TraceEvent.Kind.TOKEN_DELIVERED)) {
                long[] x = extent.computeIfAbsent(e.requestId(), k -> new long[] {Long.MAX_VALUE, Long.MIN_VALUE});
                x[0] = Math.min(x[0], e.start());
                x[1] = Math.max(x[1], e.end());
            }
        }
        for (int c = 0; coreIds.size() < report.cores(); c++) {
            coreIds.add(c);
        }
        // Requests share a lane when one's host work ends before the next one's begins; past
        // MAX_REQUEST_LANES lanes they are dealt round-robin, so the picture stays readable.
        Map<Long, Integer> requestLane = new HashMap<>();
        Map<Long, Color> color = new HashMap<>();
        List<List<Long>> laneRequests = new ArrayList<>();
        List<Long> laneFreeAt = new ArrayList<>();
        int index = 0;
        List<Map.Entry<Long, long[]>> byStart = new ArrayList<>(extent.entrySet());
        byStart.sort(Map.Entry.comparingByValue((a, b) -> Long.compare(a[0], b[0])));
        for (Map.Entry<Long, long[]> entry : byStart) {
            int lane = -1;
            for (int i = 0; i < laneFreeAt.size() && lane < 0; i++) {
                if (laneFreeAt.get(i) < entry.getValue()[0]) {
                    lane = i;
                }
            }
            if (lane < 0 && laneRequests.size() < MAX_REQUEST_LANES) {
                lane = laneRequests.size();
                laneRequests.add(new ArrayList<>());
                laneFreeAt.add(Long.MIN_VALUE);
            }
            if (lane < 0) {
                lane = index % MAX_REQUEST_LANES;
            }
            laneRequests.get(lane).add(entry.getKey());
            laneFreeAt.set(lane, Math.max(laneFreeAt.get(lane), entry.getValue()[1]));
            requestLane.put(entry.getKey(), lane);
            color.put(entry.getKey(), requestColor(index));
            index++;
        }
        Map<Integer, Integer> coreLane = new HashMap<>();
        index = 0;
        for (int c : coreIds) {
            coreLane.put(c, index++);
        }

        int requestsTop = HEADER;
        int coresTop = requestsTop + laneRequests.size() * (REQUEST_LANE + GAP) + SECTION_GAP;
        int marksTop = coresTop + coreIds.size() * (CORE_LANE + GAP) + SECTION_GAP;
        int height = marksTop + 3 * (MARK_LANE + GAP) + FOOTER;
        BufferedImage image = new BufferedImage(WIDTH, height, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = image.createGraphics();
        try {
            g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
            g.setColor(BACKGROUND);
            g.fillRect(0, 0, WIDTH, height);
            TimeScale x = new TimeScale(report.start(), report.end(), LABEL, WIDTH - RIGHT);
            boolean text = Fonts.usable(g);

            for (int i = 0; i < laneRequests.size(); i++) {
                lane(g, requestsTop + i * (REQUEST_LANE + GAP), REQUEST_LANE);
            }
            for (int i = 0; i < coreIds.size(); i++) {
                lane(g, coresTop + i * (CORE_LANE + GAP), CORE_LANE);
            }
            for (int i = 0; i < 3; i++) {
                lane(g, marksTop + i * (MARK_LANE + GAP), MARK_LANE);
            }

            List<int[]> ticks = new ArrayList<>();
            for (TraceEvent e : events) {
                switch (e.kind()) {
                    case TASK -> {
                        Integer lane = coreLane.get(e.thread());
                        int y = coresTop + lane * (CORE_LANE + GAP);
                        g.setColor(e.count() != 0 ? SKIPPED : color.computeIfAbsent(e.requestId(),
                                r -> requestColor(color.size())));
                        span(g, x, e.start(), e.end(), y + 2, CORE_LANE - 4);
                    }
                    case STEP_BUILD, REQUEST_STARTED -> {
                        Integer lane = requestLane.get(e.requestId());
                        if (lane == null) {
                            continue;
                        }
                        int y = requestsTop + lane * (REQUEST_LANE + GAP);
                        if (e.kind() == TraceEvent.Kind.REQUEST_STARTED) {
                            g.setColor(QUEUED);
                            span(g, x, e.start(), e.end(), y + REQUEST_LANE / 2 - 1, 3);
                        } else {
                            g.setColor(color.get(e.requestId()));
                            span(g, x, e.start(), e.end(), y + 3, REQUEST_LANE - 6);
                        }
                    }
                    case TOKEN_DELIVERED -> {
                        Integer lane = requestLane.get(e.requestId());
                        if (lane != null) {
                            ticks.add(new int[] {x.at(e.start()), requestsTop + lane * (REQUEST_LANE + GAP)});
                        }
                    }
                    default -> {
                        // instants other than tokens and the request spans are not drawn
                    }
                }
            }
            g.setColor(INK);
            g.setStroke(new BasicStroke(1.2f));
            for (int[] tick : ticks) {
                g.drawLine(tick[0], tick[1] - 2, tick[0], tick[1] + 4); // a short tick above the builds
            }
            marks(g, x, report.tokenParallel(), marksTop, TOKEN_PARALLEL);
            marks(g, x, report.sParallel(), marksTop + MARK_LANE + GAP, S_PARALLEL);
            marks(g, x, report.bubbles(), marksTop + 2 * (MARK_LANE + GAP), BUBBLE);

            if (text) {
                Font plain = new Font(Font.SANS_SERIF, Font.PLAIN, 12);
                Font bold = new Font(Font.SANS_SERIF, Font.BOLD, 14);
                g.setFont(bold);
                g.setColor(INK);
                g.drawString(title, 10, 20);
                g.setFont(plain);
                g.drawString(summary(report), 10, 40);
                g.setColor(QUIET);
                g.drawString("host: step builds (token deliveries as ticks, queueing in grey)", LABEL, HEADER - 6);
                for (int i = 0; i < laneRequests.size(); i++) {
                    List<Long> on = laneRequests.get(i);
                    int y = requestsTop + i * (REQUEST_LANE + GAP);
                    if (on.size() == 1) {
                        label(g, "request " + on.getFirst() + " build", y, REQUEST_LANE, color.get(on.getFirst()));
                    } else {
                        long first = on.stream().mapToLong(Long::longValue).min().orElseThrow();
                        long last = on.stream().mapToLong(Long::longValue).max().orElseThrow();
                        label(g, on.size() + " requests " + first + "-" + last, y, REQUEST_LANE, INK);
                    }
                }
                g.setColor(QUIET);
                g.drawString("device: tasks, colored by request", LABEL, coresTop - 3);
                for (int c : coreIds) {
                    label(g, "core " + c, coresTop + coreLane.get(c) * (CORE_LANE + GAP), CORE_LANE, INK);
                }
                label(g, "token-parallel", marksTop, MARK_LANE, TOKEN_PARALLEL);
                label(g, "S\u2225S", marksTop + MARK_LANE + GAP, MARK_LANE, S_PARALLEL);
                label(g, "bubbles", marksTop + 2 * (MARK_LANE + GAP), MARK_LANE, BUBBLE);
                axis(g, x, height - FOOTER + 6);
            }
        } finally {
            g.dispose();
        }
        return image;
    }

    private static String summary(TraceAnalysis.Report r) {
        return String.format(Locale.ROOT,
                "run %.1f ms, %d tasks on %d core(s) | token-parallel %.1f ms (%.0f%%) | request-parallel %.1f ms (%.0f%%)"
                        + " | S\u2225S %.1f ms (%.0f%%) | device busy %.0f%% | bubbles %d, %.2f ms, longest %.2f ms",
                r.runMs(), r.tasks(), r.cores(), r.tokenParallelMs(), 100 * r.fraction(r.tokenParallelMs()),
                r.requestParallelMs(), 100 * r.fraction(r.requestParallelMs()), r.sParallelMs(),
                100 * r.fraction(r.sParallelMs()), 100 * r.deviceBusy(), r.bubbleCount(), r.bubbleMs(),
                r.bubbleLongestMs());
    }

    private static void lane(Graphics2D g, int y, int h) {
        g.setColor(LANE);
        g.fillRect(LABEL, y, WIDTH - RIGHT - LABEL, h);
    }

    private static void span(Graphics2D g, TimeScale x, long start, long end, int y, int h) {
        int x0 = x.at(start);
        int x1 = x.at(end);
        g.fillRect(x0, y, Math.max(1, x1 - x0), h);
    }

    private static void marks(Graphics2D g, TimeScale x, TraceAnalysis.Intervals runs, int y, Color color) {
        g.setColor(color);
        for (int i = 0; i < runs.size(); i++) {
            span(g, x, runs.starts()[i], runs.ends()[i], y + 1, MARK_LANE - 2);
        }
    }

    private static void label(Graphics2D g, String text, int y, int h, Color color) {
        g.setColor(color);
        FontMetrics m = g.getFontMetrics();
        g.drawString(text, LABEL - 8 - m.stringWidth(text), y + (h + m.getAscent() - m.getDescent()) / 2);
    }

    private static void axis(Graphics2D g, TimeScale x, int y) {
        g.setColor(INK);
        g.drawLine(LABEL, y, WIDTH - RIGHT, y);
        double spanMs = x.spanNanos() / 1e6;
        double step = niceStep(spanMs / 10);
        FontMetrics m = g.getFontMetrics();
        for (double ms = 0; ms <= spanMs + 1e-9; ms += step) {
            int px = x.at(x.start() + (long) (ms * 1e6));
            g.drawLine(px, y, px, y + 5);
            String text = step >= 1 ? String.format(Locale.ROOT, "%.0f", ms) : String.format(Locale.ROOT, "%.2f", ms);
            g.drawString(text, px - m.stringWidth(text) / 2, y + 18);
        }
        g.setColor(QUIET);
        g.drawString("ms since the first event", LABEL, y + 36);
    }

    private static double niceStep(double rough) {
        if (rough <= 0) {
            return 1;
        }
        double magnitude = Math.pow(10, Math.floor(Math.log10(rough)));
        double residual = rough / magnitude;
        double nice = residual < 1.5 ? 1 : residual < 3.5 ? 2 : residual < 7.5 ? 5 : 10;
        return nice * magnitude;
    }

    /** Distinct, saturated hues by golden-ratio steps around the wheel. */
    static Color requestColor(int index) {
        float hue = (float) ((0.08 + index * 0.6180339887) % 1.0);
        return Color.getHSBColor(hue, 0.62f, 0.88f);
    }

    /** Maps trace nanoseconds to pixels. */
    private record TimeScale(long start, long end, int left, int right) {
        long spanNanos() {
            return Math.max(1, end - start);
        }

        int at(long time) {
            return left + (int) Math.round((double) (time - start) / spanNanos() * (right - left));
        }
    }

    /** Whether text can be drawn: a runtime without any font fails on first use. */
    private static final class Fonts {
        private static Boolean usable;

        static synchronized boolean usable(Graphics2D g) {
            if (usable == null) {
                try {
                    g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
                    g.getFontMetrics().stringWidth("tandem");
                    usable = true;
                } catch (VirtualMachineError fatal) {
                    throw fatal;
                } catch (RuntimeException | Error missingFonts) { // the JDK reports missing fonts as either
                    usable = false;
                }
            }
            return usable;
        }
    }
}
