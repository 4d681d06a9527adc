package dev.tandem;

import java.time.Duration;
import java.util.List;

/**
 * A front door for requests of one program: bounded admission, a concurrency limit, and a
 * stream per request. Several sessions may share one {@link Worker} and its device.
 *
 * <p>Thread-safe. {@link #submit} never blocks. {@link #close()} stops admission, cancels
 * what is queued or running and returns once everything has drained; it is idempotent, safe
 * from many threads at once and from every callback — a kernel, a program, a
 * {@code stopWhen} predicate, a subscriber, a {@code completion()} dependent, the deadline
 * timer: on one of the worker's own threads it starts the shutdown and returns at once (the
 * last request to drain completes it). {@link #close(Duration)} waits at most its timeout.
 *
 * @param <I> the program's input
 */
public interface Session<I> extends AutoCloseable {

    /**
     * Admits a request: it starts when a slot and its memory are free, first come first
     * served.
     *
     * @return its stream, at once
     * @throws AdmissionRejectedException with the reason it was not admitted
     * @throws NullPointerException for a null input or options
     */
    TokenStream submit(I input, RequestOptions options);

    /** Admits a request with the default options. */
    default TokenStream submit(I input) {
        return submit(input, RequestOptions.defaults());
    }

    SessionStats stats();

    @Override
    void close();

    /**
     * Closes as {@link #close()} does, but waits at most {@code timeout} for the drain (not at
     * all on one of the worker's own threads).
     *
     * @return the ids of the requests that had not drained when it returned, ascending; empty
     *         when the session is fully closed
     */
    List<Long> close(Duration timeout);
}
