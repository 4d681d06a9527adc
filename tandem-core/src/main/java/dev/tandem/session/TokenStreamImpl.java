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
import java.util.concurrent.LinkedTransferQueue;
import java.util.concurrent.TimeUnit;

/**
 * A request's stream: a lock-free queue of tokens closed by one end marker.
 *
 * <p>One deliverer at a time appends tokens (the request's delivery sequencer serialises
 * them); the terminator appends the end marker once. A normal end queues the marker after the
 * last token; any other end first drops queued tokens, so the caller sees the end at once.
 * A reader that takes the marker puts it back, so every later read sees the end too. Appending
 * never blocks, so no core thread ever waits for a caller.
 */
final class TokenStreamImpl implements TokenStream {
    private static final Object END = new Object();

    private final RequestRun request;
    private final LinkedTransferQueue<Object> queue = new LinkedTransferQueue<>();
    private volatile Outcome endOutcome;

    TokenStreamImpl(RequestRun request) {
        this.request = request;
    }

    void push(Token token) {
        queue.offer(token);
    }

    /** Called once, by the thread that decided the request's end. */
    void end(Outcome outcome) {
        endOutcome = outcome;
        if (outcome.status() != Status.COMPLETED) {
            queue.clear();
        }
        queue.offer(END);
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
                if (item == END) {
                    queue.offer(END);
                    throwIfAbnormal();
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
                request.tokenTaken();
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
        if (item == END) {
            queue.offer(END);
            throwIfAbnormal();
            return null;
        }
        request.tokenTaken();
        return (Token) item;
    }

    private void throwIfAbnormal() {
        Outcome outcome = endOutcome;
        if (outcome.status() != Status.COMPLETED) {
            throw new StreamTerminatedException(outcome);
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
