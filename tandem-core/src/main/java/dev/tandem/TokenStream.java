package dev.tandem;

import java.time.Duration;
import java.util.Iterator;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;

/**
 * The tokens of one request, in step order, as they are produced.
 *
 * <p>Iterating blocks (cheaply on a virtual thread) until the next token or the end.
 * Iteration ends normally when the request {@link Status#COMPLETED completed}; any other end
 * throws {@link StreamTerminatedException} carrying the {@link Outcome}, so a failure is never
 * mistaken for a short answer.
 *
 * <p>It is also a {@link Flow.Publisher} for one subscriber: tokens flow only against
 * {@code request(n)} demand, on a virtual thread of the runtime (never a core); without demand
 * the request's program waits once its stream buffer is full, and other requests go on. The
 * subscriber gets {@code onComplete} after the last token of a COMPLETED request, else
 * {@code onError} with a {@link StreamTerminatedException}. Use either iteration or a
 * subscriber on one stream, not both.
 */
public interface TokenStream extends Iterable<Token>, Flow.Publisher<Token> {

    long requestId();

    /** A blocking iterator over the remaining tokens. Every iterator takes from the same stream. */
    @Override
    Iterator<Token> iterator();

    /**
     * The next token, waiting at most {@code timeout}; null on timeout or after a normal end.
     *
     * @throws StreamTerminatedException when the request ended other than COMPLETED
     */
    Token poll(Duration timeout) throws InterruptedException;

    /**
     * Completes with the outcome once the request has ended and all its tasks are done (its
     * memory is back in the budget by then). Never completes exceptionally.
     */
    CompletableFuture<Outcome> completion();

    /** Ends the request as CANCELLED, at once, from any thread; no-op once it has ended. */
    void cancel();

    /** True once the request has ended (its tokens may still be queued here). */
    boolean isDone();
}
