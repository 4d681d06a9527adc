package dev.tandem.session;

import dev.tandem.Outcome;
import dev.tandem.Status;
import dev.tandem.Token;
import dev.tandem.TokenStream;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * The producer side of a stream that a layer above the runtime fills (the public face is
 * {@code dev.tandem.TokenFeed}): a continuous batcher decodes many users' sequences in one
 * program, and each user still gets a {@link TokenStream} of their own.
 *
 * <p>Implementation Overview.
 *
 * <p>The stream is the runtime's own {@link TokenStreamImpl}, so iteration, {@code poll}, the
 * Reactive Streams publisher and the outcome's token count behave exactly as for a request.
 * The end is decided once ({@code termination}, by CAS): by the producer ({@link #complete},
 * {@link #fail}), by the reader or anyone else ({@code cancel}), by the deadline timer, or
 * by the worker closing. Whoever decides it, the producer is told through {@code onChange}
 * (so it can drop the sequence at its next step boundary) and answers with {@link #release}
 * once it holds nothing more for it; only then does {@link #completion()} complete, on a
 * fresh virtual thread of the worker, so a dependent that blocks delays nobody else. Tokens
 * offered after the end are dropped ({@link #offer} returns -1), so tokens of steps built
 * before the producer saw the end are never delivered.
 *
 * <p>{@code onChange} also runs when a reader takes a token: a producer that paused a
 * sequence because its reader fell behind ({@link #unread}) learns that it may go on. It
 * runs on the thread that caused the change and must not block.
 */
public final class FeedRun implements StreamOwner {

    /** How the feed ended. */
    private record Ending(Status status, Throwable cause) {}

    private final long id;
    private final String name;
    private final RuntimeThreads threads;
    private final Runnable onChange;
    private final Consumer<FeedRun> onReleased;
    private final TokenStreamImpl stream;
    private final CompletableFuture<Outcome> completion = new CompletableFuture<>();
    private final long submittedAt = System.nanoTime();
    private volatile long startedAt;
    private volatile long firstTokenAt;
    private volatile long offered;
    private final AtomicLong taken = new AtomicLong();
    private volatile Ending termination;
    private final AtomicBoolean released = new AtomicBoolean();
    private volatile ScheduledFuture<?> deadlineTimer;

    /**
     * @param onChange   runs after each end decision and each token a reader takes; never blocks
     * @param onReleased runs once, when the producer released the feed, before its completion
     */
    FeedRun(long id, String name, RuntimeThreads threads, Runnable onChange, Consumer<FeedRun> onReleased) {
        this.id = id;
        this.name = name;
        this.threads = threads;
        this.onChange = onChange;
        this.onReleased = onReleased;
        this.stream = new TokenStreamImpl(this);
    }

    /** Arms a deadline {@code after} from now on {@code timer}; a passed deadline ends the feed at once. */
    void armDeadline(ScheduledExecutorService timer, Duration after) {
        long delay = submittedAt + after.toNanos() - System.nanoTime();
        deadlineTimer = timer.schedule(() -> terminate(Status.DEADLINE_EXCEEDED, null), Math.max(0, delay),
                TimeUnit.NANOSECONDS);
        if (released.get()) {
            deadlineTimer.cancel(false);
        }
    }

    public TokenStream stream() {
        return stream;
    }

    /** The producer has started work on it: the outcome's queued time ends here. */
    public void started() {
        if (startedAt == 0) {
            startedAt = System.nanoTime();
        }
    }

    /**
     * Appends one token, numbered by its position in the stream. Producer thread only.
     *
     * @return the tokens appended so far, or -1 when the feed has ended (the token is dropped)
     */
    public long offer(byte[] bytes) {
        long count = stream.offer(new Token(id, offered, bytes.clone()));
        if (count < 0) {
            return -1;
        }
        if (firstTokenAt == 0) {
            firstTokenAt = System.nanoTime();
        }
        offered = count;
        return count;
    }

    /** Tokens appended that no reader has taken yet. */
    public long unread() {
        return offered - taken.get();
    }

    /** Tokens appended so far. */
    public long offered() {
        return offered;
    }

    public boolean complete() {
        return terminate(Status.COMPLETED, null);
    }

    public boolean fail(Throwable cause) {
        return terminate(Status.FAILED, cause);
    }

    @Override
    public boolean terminate(Status status, Throwable cause) {
        Ending ending = new Ending(status, cause);
        if (!TERMINATION.compareAndSet(this, null, ending)) {
            return false;
        }
        stream.end(status, tokens -> outcome(ending, System.nanoTime(), tokens));
        ScheduledFuture<?> timer = deadlineTimer;
        if (timer != null) {
            timer.cancel(false);
        }
        onChange.run();
        return true;
    }

    /** The status it ended with, or null while it runs. */
    public Status status() {
        Ending ending = termination;
        return ending == null ? null : ending.status();
    }

    /**
     * The producer holds nothing more for this feed; ends it as COMPLETED if it had not ended.
     * Its completion follows on a virtual thread of the worker. Idempotent.
     */
    public void release() {
        terminate(Status.COMPLETED, null);
        if (!released.compareAndSet(false, true)) {
            return;
        }
        ScheduledFuture<?> timer = deadlineTimer;
        if (timer != null) {
            timer.cancel(false);
        }
        long endedAt = System.nanoTime();
        Outcome outcome = outcome(termination, endedAt, stream.tokensAtEnd());
        onReleased.accept(this);
        threads.start(threadName("-end"), () -> completion.complete(outcome));
    }

    public boolean isReleased() {
        return released.get();
    }

    private Outcome outcome(Ending ending, long now, long tokens) {
        long start = startedAt;
        long first = firstTokenAt;
        return new Outcome(id, ending.status(), ending.cause(), tokens,
                Duration.ofNanos((start == 0 ? now : start) - submittedAt),
                first == 0 ? null : Duration.ofNanos(first - submittedAt),
                Duration.ofNanos(now - submittedAt));
    }

    @Override
    public long id() {
        return id;
    }

    @Override
    public void tokenTaken(long step) {
        taken.incrementAndGet();
        onChange.run();
    }

    @Override
    public RuntimeThreads threads() {
        return threads;
    }

    @Override
    public String threadName(String role) {
        return "feed-" + id + role;
    }

    @Override
    public CompletableFuture<Outcome> completion() {
        return completion;
    }

    @Override
    public String toString() {
        return "feed " + id + (name == null ? "" : " (" + name + ")");
    }

    private static final VarHandle TERMINATION;

    static {
        try {
            TERMINATION = MethodHandles.lookup().findVarHandle(FeedRun.class, "termination", Ending.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
}
