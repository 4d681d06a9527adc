package dev.tandem.trace;

import dev.tandem.Status;
import dev.tandem.TraceEvent;
import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.EventType;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;

/**
 * The trace's spans and instants as Java Flight Recorder events, so JDK Mission Control and
 * {@code jfr print} see what the Perfetto trace shows. Used only when tracing is on with JFR
 * enabled, and an event is created only when a running recording enables its type: with no
 * recording, each call is one check of the type's flag.
 *
 * <p>A span's JFR event must begin on its own thread when the span begins, because JFR takes
 * its timestamps itself; {@link TraceBuffer#spanStart} does that and {@link TraceBuffer#record}
 * commits it. Instants are committed when they are recorded, which is when they happen.
 */
final class JfrSpans {
    private JfrSpans() {}

    @Name("dev.tandem.Task")
    @Label("Task")
    @Category({"tandem", "Device"})
    @Description("One kernel call on one core")
    @StackTrace(false)
    static final class TaskSpan extends Event {
        @Label("Request") long request;
        @Label("Step") long step;
        @Label("Task") long task;
        @Label("Kernel") String kernel;
        @Label("Core") int core;
        @Label("Skipped") boolean skipped;
    }

    @Name("dev.tandem.StepBuild")
    @Label("Step Build")
    @Category({"tandem", "Host"})
    @Description("The host building one step of one request")
    @StackTrace(false)
    static final class StepBuildSpan extends Event {
        @Label("Request") long request;
        @Label("Step") long step;
        @Label("Tasks") long tasks;
        @Label("First Task") long firstTask;
    }

    @Name("dev.tandem.Publish")
    @Label("Publish")
    @Category({"tandem", "Host"})
    @StackTrace(false)
    static final class Publish extends Event {
        @Label("Request") long request;
        @Label("Step") long step;
        @Label("Tasks") long tasks;
    }

    @Name("dev.tandem.StepDone")
    @Label("Step Done")
    @Category({"tandem", "Device"})
    @StackTrace(false)
    static final class StepDone extends Event {
        @Label("Request") long request;
        @Label("Step") long step;
    }

    @Name("dev.tandem.TokenDelivered")
    @Label("Token Delivered")
    @Category({"tandem", "Stream"})
    @StackTrace(false)
    static final class TokenDelivered extends Event {
        @Label("Request") long request;
        @Label("Step") long step;
        @Label("Sequence") long sequence;
    }

    @Name("dev.tandem.TokenTaken")
    @Label("Token Taken")
    @Category({"tandem", "Stream"})
    @StackTrace(false)
    static final class TokenTaken extends Event {
        @Label("Request") long request;
        @Label("Step") long step;
        @Label("Sequence") long sequence;
    }

    @Name("dev.tandem.RequestStarted")
    @Label("Request Started")
    @Category({"tandem", "Host"})
    @StackTrace(false)
    static final class RequestStarted extends Event {
        @Label("Request") long request;
        @Label("Queued") @Timespan(Timespan.NANOSECONDS) long queued;
    }

    @Name("dev.tandem.RequestEnded")
    @Label("Request Ended")
    @Category({"tandem", "Host"})
    @StackTrace(false)
    static final class RequestEnded extends Event {
        @Label("Request") long request;
        @Label("Status") String status;
        @Label("Since Submission") @Timespan(Timespan.NANOSECONDS) long sinceSubmission;
    }

    private static final EventType TASK = EventType.getEventType(TaskSpan.class);
    private static final EventType BUILD = EventType.getEventType(StepBuildSpan.class);
    private static final EventType PUBLISH = EventType.getEventType(Publish.class);
    private static final EventType STEP_DONE = EventType.getEventType(StepDone.class);
    private static final EventType DELIVERED = EventType.getEventType(TokenDelivered.class);
    private static final EventType TAKEN = EventType.getEventType(TokenTaken.class);
    private static final EventType STARTED = EventType.getEventType(RequestStarted.class);
    private static final EventType ENDED = EventType.getEventType(RequestEnded.class);
    private static final Status[] STATUSES = Status.values();

    /** Begins the JFR event of a span of {@code kind}, or returns null if none is wanted. */
    static Event begin(TraceEvent.Kind kind) {
        Event event = switch (kind) {
            case TASK -> TASK.isEnabled() ? new TaskSpan() : null;
            case STEP_BUILD -> BUILD.isEnabled() ? new StepBuildSpan() : null;
            default -> null;
        };
        if (event != null) {
            event.begin();
        }
        return event;
    }

    /** Commits the event of a recorded span ({@code pending} from {@link #begin}) or instant. */
    static void commit(Event pending, TraceEvent.Kind kind, long start, long end, int thread, long request, long step,
            long task, String name, long count) {
        switch (kind) {
            case TASK -> {
                if (pending instanceof TaskSpan e) {
                    e.request = request;
                    e.step = step;
                    e.task = task;
                    e.kernel = name;
                    e.core = thread;
                    e.skipped = count != 0;
                    e.commit();
                }
            }
            case STEP_BUILD -> {
                if (pending instanceof StepBuildSpan e) {
                    e.request = request;
                    e.step = step;
                    e.tasks = count;
                    e.firstTask = task;
                    e.commit();
                }
            }
            case PUBLISH -> {
                if (PUBLISH.isEnabled()) {
                    Publish e = new Publish();
                    e.request = request;
                    e.step = step;
                    e.tasks = count;
                    e.commit();
                }
            }
            case STEP_DONE -> {
                if (STEP_DONE.isEnabled()) {
                    StepDone e = new StepDone();
                    e.request = request;
                    e.step = step;
                    e.commit();
                }
            }
            case TOKEN_DELIVERED -> {
                if (DELIVERED.isEnabled()) {
                    TokenDelivered e = new TokenDelivered();
                    e.request = request;
                    e.step = step;
                    e.sequence = count;
                    e.commit();
                }
            }
            case TOKEN_TAKEN -> {
                if (TAKEN.isEnabled()) {
                    TokenTaken e = new TokenTaken();
                    e.request = request;
                    e.step = step;
                    e.sequence = count;
                    e.commit();
                }
            }
            case REQUEST_STARTED -> {
                if (STARTED.isEnabled()) {
                    RequestStarted e = new RequestStarted();
                    e.request = request;
                    e.queued = end - start;
                    e.commit();
                }
            }
            case REQUEST -> {
                if (ENDED.isEnabled()) {
                    RequestEnded e = new RequestEnded();
                    e.request = request;
                    e.status = count >= 0 && count < STATUSES.length ? STATUSES[(int) count].name() : "UNKNOWN";
                    e.sinceSubmission = end - start;
                    e.commit();
                }
            }
        }
    }
}
