package dev.tandem.session;

import dev.tandem.Outcome;
import dev.tandem.Status;
import dev.tandem.StreamTerminatedException;
import dev.tandem.Token;
import dev.tandem.TokenStream;
import java.time.Duration;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.LinkedTransferQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A request's stream: a lock-free queue of tokens closed by one end marker.
 *
 * <p>One deliverer at a time appends tokens (the request's delivery sequencer serialises
 * them); the terminator appends the end marker once. A normal end queues the marker after the
 * last token; any other end first drops queued tokens, so the caller sees the end at once.
 * A reader that takes the marker puts it back, so every later read sees the end too. Appending
 * never blocks, so no core thread ever waits for a caller.
 *
 * <p>As a {@link Flow.Publisher}: one subscriber. Tokens go to it from a drain loop that runs
 * on a virtual thread of its own, never on the thread that delivered the token (a core): the
 * thread that moves {@code wip} from 0 starts the drain, which emits while there is demand
 * and tokens, emits the end (which needs no demand) when it reaches the marker, and repeats
 * while others signalled meanwhile. So {@code onNext} calls never overlap and a slow
 * subscriber holds up its own request only.
 */
final class TokenStreamImpl implements TokenStream {
    private static final Object END = new Object();

    private final RequestRun request;
    private final LinkedTransferQueue<Object> queue = new LinkedTransferQueue<>();
    private volatile Outcome endOutcome;
    private final Object endLock = new Object();
    private boolean ended; // guarded by endLock

    TokenStreamImpl(RequestRun request) {
        this.request = request;
    }

    private final AtomicBoolean subscribed = new AtomicBoolean();
    private final AtomicInteger wip = new AtomicInteger();
    private final AtomicLong demand = new AtomicLong();
    private volatile Flow.Subscriber<? super Token> subscriber;
    private volatile boolean subscriptionDone;

    /**
     * Appends a token unless the stream has ended, and counts it (via {@code onAccepted}) under
     * the same lock as {@link #end}: a token is either before the end marker and counted in
     * the outcome, or not in the stream at all — never after the end, never a gap.
     */
    boolean offer(Token token, Runnable onAccepted) {
        synchronized (endLock) {
            if (ended) {
                return false;
            }
            queue.offer(token);
            onAccepted.run();
        }
        signal();
        return true;
    }

    /** Called once, by the thread that decided the request's end. */
    void end(java.util.function.Supplier<Outcome> outcome) {
        synchronized (endLock) {
            ended = true;
            Outcome o = outcome.get();
            endOutcome = o;
            if (o.status() != Status.COMPLETED) {
                queue.clear();
            }
            queue.offer(END);
        }
        signal();
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
                if (item == END || cutOff()) {
                    reachedEnd();
                    return false;
                }
                next = (Token) item;
                return true;
            }

            @Override
            public Token next() {
                if (!hasNext()) {
                    throw new NoSuchElementException("request " + request.id() + " has no more tokens");
                }
                Token token = next;
                next = null;
                request.tokenTaken(token.step());
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
        if (item == END || cutOff()) {
            reachedEnd();
            return null;
        }
        request.tokenTaken(((Token) item).step());
        return (Token) item;
    }

    /**
     * Whether a token just taken must be dropped: the request ended other than COMPLETED. The
     * end is decided at one instant, so every reader returns a prefix of the tokens — never
     * one after a gap, never one after the end (tokens are taken in order; clearing the queue
     * while a reader takes would otherwise let a later token past an earlier dropped one).
     */
    private boolean cutOff() {
        Outcome outcome = endOutcome;
        return outcome != null && outcome.status() != Status.COMPLETED;
    }

    /** Puts the end marker back for later readers and throws for an abnormal end. */
    private void reachedEnd() {
        queue.offer(END);
        throwIfAbnormal();
    }

    private void throwIfAbnormal() {
        Outcome outcome = endOutcome;
        if (outcome.status() != Status.COMPLETED) {
            throw new StreamTerminatedException(outcome);
        }
    }

    @Override
    public void subscribe(Flow.Subscriber<? super Token> s) {
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
        s.onSubscribe(new Flow.Subscription() {
            @Override
            public void request(long n) {
                if (n <= 0) {
                    subscriptionDone = true;
                    request.terminate(Status.CANCELLED, null);
                    s.onError(new IllegalArgumentException("request(" + n + "): demand must be positive (rule 3.9)"));
                    return;
                }
                demand.getAndAccumulate(n, (a, b) -> a + b < 0 ? Long.MAX_VALUE : a + b);
                signal();
            }

            @Override
            public void cancel() {
                subscriptionDone = true;
                request.terminate(Status.CANCELLED, null);
            }
        });
        subscriber = s;
        signal();
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
            while (!subscriptionDone) {
                Object head = queue.peek();
                if (head == null) {
                    break;
                }
                if (head == END || cutOff()) {
                    subscriptionDone = true;
                    Outcome outcome = endOutcome;
                    if (outcome.status() == Status.COMPLETED) {
                        s.onComplete();
                    } else {
                        s.onError(new StreamTerminatedException(outcome));
                    }
                    break;
                }
                if (demand.get() == 0) {
                    break;
                }
                queue.poll();
                demand.decrementAndGet();
                request.tokenTaken(((Token) head).step());
                try {
                    s.onNext((Token) head);
                } catch (Throwable failure) {
                    // Rule 2.13: a throwing subscriber is broken; end its request and stop signalling it.
                    subscriptionDone = true;
                    request.terminate(Status.CANCELLED, null);
                }
            }
            missed = wip.addAndGet(-missed);
            if (missed == 0) {
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
