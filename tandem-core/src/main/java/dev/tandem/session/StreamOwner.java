package dev.tandem.session;

import dev.tandem.Outcome;
import dev.tandem.Status;
import java.util.concurrent.CompletableFuture;

/**
 * What a {@link TokenStreamImpl} needs from whatever produces its tokens: a request run by the
 * runtime ({@link RequestRun}) or a feed that a layer above fills ({@link FeedRun}).
 */
interface StreamOwner {

    /** The id the stream reports as its request id. */
    long id();

    /** A reader took the token of {@code step}. */
    void tokenTaken(long step);

    /**
     * Ends the stream's producer with {@code status} unless it has ended already.
     *
     * @return whether this call ended it
     */
    boolean terminate(Status status, Throwable cause);

    /** Where subscriber drains start their virtual threads. */
    RuntimeThreads threads();

    /** The name (after the worker's prefix) of one of this producer's threads. */
    String threadName(String role);

    /** Completes with the outcome once the producer has let go of everything it held. */
    CompletableFuture<Outcome> completion();
}
