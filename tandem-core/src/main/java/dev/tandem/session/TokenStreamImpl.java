package dev.tandem.session;

import dev.tandem.Outcome;
import dev.tandem.Status;
import dev.tandem.StreamTerminatedException;
import dev.tandem.Token;
import dev.tandem.TokenStream;
import java.time.Duration;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.LinkedTransferQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A request's stream: a lock-free queue of tokens closed by one end marker.
 *
 * <p>Implementation Overview.
 *
 * <p><b>Queue.</b> One deliverer at a time appends tokens (the request's delivery sequencer
 * serialises them); the terminator appends the end marker once. A normal end queues the
 * marker after the last token; any other end first drops queued tokens, so the caller sees
 * the end at once. A reader that takes the marker puts it back, so every later read sees the
 * end too. Appending never blocks, so no delivery ever waits for a caller.
 *
 * <p><b>Counting.</b> {@code offered} (tokens appended) and {@code received} (tokens a reader
 * took and kept) change under {@code endLock}, as does the end: a token is appended either
 * before the end or not at all, and a token taken is kept only if no abnormal end came
 * before it ({@link #keep}). So the outcome's token count is decided at the end's instant:
 * every token appended for a COMPLETED end (all of them are still readable), the tokens
 * readers kept for any other end — exactly what the reader ever received.
 *
 * <p><b>Publisher.</b> One subscriber; {@code subscribe(null)} throws and takes no slot. Every
 * signal to the subscriber after {@code onSubscribe} comes from one drain loop: the thread that
 * moves {@code wip} from 0 starts it on a virtual thread of the worker (never a core, never
 * the caller of {@code request}), and it repeats while others signalled meanwhile — so
 * signals never overlap (rule 1.3) and the drain is their only source. The drain emits, in
 * order of priority: nothing once the subscription is {@code done} (terminal signal sent,
 * cancelled, or {@code onSubscribe}/{@code onNext} threw); {@code onError} for a pending
 * non-positive {@code request(n)} (rule 3.9); tokens while there is demand; the end when it
 * reaches the marker (it needs no demand), unless the subscriber cancelled meanwhile (the
 * end its own cancel caused is not signalled back, rule 1.8). Each terminal signal sets
 * {@code done} first, so none follows it (rule 1.7); cancel sets {@code cancelled} before it
 * ends the request, and a
 * {@code request} or {@code cancel} after that is a no-op (rules 3.6, 3.7). Demand adds up
 * to at most {@link Long#MAX_VALUE} (rule 3.17). Once done, the stream drops its reference
 * to the subscriber (rule 3.13). A subscriber that throws from {@code onSubscribe} or
 * {@code onNext} is broken (rule 2.13): its subscription is cancelled and its request ends
 * CANCELLED, so nothing is left running.
 */
final class TokenStreamImpl implements TokenStream {
    private static final Logger log = LoggerFactory.getLogger(TokenStreamImpl.class);
    private static final Object END = new Object();

    private final StreamOwner request;
    private final LinkedTransferQueue<Object> queue = new LinkedTransferQueue<>();
    private volatile Outcome endOutcome;
    private final Object endLock = new Object();
    private boolean ended; // guarded by endLock
    private boolean cut; // guarded by endLock: ended other than COMPLETED
    private long offered; // guarded by endLock
    private long received; // guarded by endLock
    private volatile long tokensAtEnd = -1;

    TokenStreamImpl(StreamOwner request) {
        this.request = request;
    }

    private final AtomicBoolean subscribed = new AtomicBoolean();
    private final AtomicInteger wip = new AtomicInteger();
    private final AtomicLong demand = new AtomicLong();
    private volatile Flow.Subscriber<? super Token> subscriber; // set once onSubscribe returned
    private volatile boolean cancelled;
    private final AtomicReference<Throwable> badRequest = new AtomicReference<>();
    private boolean done; // drain only

    /**
     * Appends a token unless the stream has ended, and counts it under the same lock as
     * {@link #end}: a token is either before the end marker and counted in the outcome, or not
     * in the stream at all — never after the end, never a gap.
     *
     * @return the number of tokens appended so far, or -1 if the stream has ended
     */
    long offer(Token token) {
        long count;
        synchronized (endLock) {
            if (ended) {
                return -1;
            }
            queue.offer(token);
            count = ++offered;
        }
        signal();
        return count;
    }

    /**
     * Called once, by the thread that decided the request's end.
     *
     * @param outcome the outcome for a given token count
     */
    void end(Status status, LongFunction<Outcome> outcome) {
        synchronized (endLock) {
            ended = true;
            cut = status != Status.COMPLETED;
            long tokens = cut ? received : offered;
            tokensAtEnd = tokens;
            endOutcome = outcome.apply(tokens);
            if (cut) {
                queue.clear();
            }
            queue.offer(END);
            endLock.notifyAll(); // a tokensAtEnd() that came first
        }
        signal();
    }

    /**
     * The outcome's token count, fixed at the end, waiting for it if need be. The request's
     * teardown reads it once the request's end is decided, and the thread that decided it may
     * not have called {@link #end} yet (a cancel wins the request's termination, then ends the
     * stream: a teardown on another thread in between read -1 here, once in about 400 cancels).
     * The wait is that short window, and the deciding thread takes no lock the teardown holds.
     */
    long tokensAtEnd() {
        long tokens = tokensAtEnd;
        if (tokens >= 0) {
            return tokens;
        }
        boolean interrupted = false;
        synchronized (endLock) {
            while (!ended) {
                try {
                    endLock.wait();
                } catch (InterruptedException e) {
                    interrupted = true; // a late cancel interrupting the program thread: keep waiting
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        return tokensAtEnd;
    }

    /**
     * Whether a reader keeps a token it just took: not after an abnormal end. The end is
     * decided at one instant, so every reader returns a prefix of the tokens — never one after
     * a gap, never one after the end (tokens are taken in order; clearing the queue while a
     * reader takes would otherwise let a later token past an earlier dropped one).
     */
    private boolean keep() {
        synchronized (endLock) {
            if (cut) {
                return false;
            }
            received++;
            return true;
        }
    }

    @Override
    public long requestId() {
        return request.id();
    }

    @Override
    public Iterator<Token> iterator() {
        return new Iterator<>() {
            private Token next;

            @Override
            public boolean hasNext() {
                if (next != null) {
                    return true;
                }
                Object item;
                try {
                    item = queue.take();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted while waiting for a token of request " + request.id(), e);
                }
                if (item == END || !keep()) {
                    reachedEnd();
                    return false;
                }
                next = (Token) item;
                request.tokenTaken(next.step());
                return true;
            }

            @Override
            public Token next() {
                if (!hasNext()) {
                    throw new NoSuchElementException("request " + request.id() + " has no more tokens");
                }
                Token token = next;
                next = null;
                return token;
            }
        };
    }

    @Override
    public Token poll(Duration timeout) throws InterruptedException {
        Object item = queue.poll(timeout.toNanos(), TimeUnit.NANOSECONDS);
        if (item == null) {
            return null;
        }
        if (item == END || !keep()) {
            reachedEnd();
            return null;
        }
        request.tokenTaken(((Token) item).step());
        return (Token) item;
    }

    /** Puts the end marker back for later readers and throws for an abnormal end. */
    private void reachedEnd() {
        queue.offer(END);
        Outcome outcome = endOutcome;
        if (outcome.status() != Status.COMPLETED) {
            throw new StreamTerminatedException(outcome);
        }
    }

    // ---- Flow.Publisher ------------------------------------------------------------------------

    @Override
    public void subscribe(Flow.Subscriber<? super Token> s) {
        Objects.requireNonNull(s, "subscriber (rule 1.9)");
        if (!subscribed.compareAndSet(false, true)) {
            s.onSubscribe(new Flow.Subscription() {
                @Override
                public void request(long n) {}

                @Override
                public void cancel() {}
            });
            s.onError(new IllegalStateException("the stream of request " + request.id() + " already has a subscriber"));
            return;
        }
        try {
            s.onSubscribe(new Subscription());
        } catch (Throwable failure) {
            // Rule 2.13: a subscriber that throws is broken; its subscription is cancelled.
            cancel(failure);
            return;
        }
        subscriber = s;
        signal();
    }

    /** The one subscription; holds no reference to its subscriber. */
    private final class Subscription implements Flow.Subscription {
        @Override
        public void request(long n) {
            if (cancelled) {
                return; // rule 3.6
            }
            if (n <= 0) {
                if (badRequest.compareAndSet(null, new IllegalArgumentException(
                        "request(" + n + ") of request " + request.id() + ": demand must be positive (rule 3.9)"))) {
                    signal();
                }
                return;
            }
            long before = demand.getAndAccumulate(n, (a, b) -> a + b < 0 ? Long.MAX_VALUE : a + b);
            if (before == 0) {
                signal();
            }
        }

        @Override
        public void cancel() {
            TokenStreamImpl.this.cancel(null);
        }
    }

    private void cancel(Throwable why) {
        if (why != null) {
            log.debug("request {}: the subscriber threw; its subscription is cancelled (rule 2.13)", request.id(), why);
        }
        if (cancelled) {
            return; // rule 3.7
        }
        cancelled = true;
        request.terminate(Status.CANCELLED, null);
        signal(); // lets the drain drop the subscriber
    }

    private void signal() {
        if (subscriber != null && wip.getAndIncrement() == 0) {
            request.threads().start(request.threadName("-subscriber"), this::drain);
        }
    }

    private void drain() {
        Flow.Subscriber<? super Token> s = subscriber;
        int missed = 1;
        while (true) {
            if (!done && s != null) {
                emit(s);
            }
            if (done) {
                subscriber = null; // rule 3.13: drop the subscriber once nothing more goes to it
                s = null;
            }
            missed = wip.addAndGet(-missed);
            if (missed == 0) {
                return;
            }
        }
    }

    /** Emits what is due, in priority order; sets {@code done} before any terminal signal. */
    private void emit(Flow.Subscriber<? super Token> s) {
        while (true) {
            if (cancelled) {
                done = true;
                return;
            }
            Throwable bad = badRequest.get();
            if (bad != null) {
                done = true;
                cancelled = true;
                request.terminate(Status.CANCELLED, null);
                s.onError(bad);
                return;
            }
            Object head = queue.peek();
            if (head == null || (head != END && demand.get() == 0)) {
                return;
            }
            head = queue.poll(); // the drain is the only taker: the peeked token, or the end that replaced it
            if (head == END || !keep()) {
                queue.offer(END);
                done = true;
                if (cancelled) {
                    return; // the subscriber cancelled meanwhile: its own cancel ends it unsignalled (rule 1.8)
                }
                Outcome outcome = endOutcome;
                if (outcome.status() == Status.COMPLETED) {
                    s.onComplete();
                } else {
                    s.onError(new StreamTerminatedException(outcome));
                }
                return;
            }
            if (demand.get() != Long.MAX_VALUE) {
                demand.decrementAndGet(); // Long.MAX_VALUE is unbounded (rule 3.17)
            }
            Token token = (Token) head;
            request.tokenTaken(token.step());
            try {
                s.onNext(token);
            } catch (Throwable failure) {
                // Rule 2.13: a throwing subscriber is broken; end its request and stop signalling it.
                done = true;
                cancel(failure);
                return;
            }
        }
    }

    @Override
    public CompletableFuture<Outcome> completion() {
        return request.completion();
    }

    @Override
    public void cancel() {
        request.terminate(Status.CANCELLED, null);
    }

    @Override
    public boolean isDone() {
        return endOutcome != null;
    }

    @Override
    public String toString() {
        return "TokenStream[request " + request.id() + (isDone() ? ", " + endOutcome.status() : ", running") + "]";
    }
}
