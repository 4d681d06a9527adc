package dev.tandem;

/**
 * A front door for requests of one program: bounded admission, a concurrency limit, and a
 * stream per request. Several sessions may share one {@link Worker} and its device.
 *
 * <p>Thread-safe. {@link #submit} never blocks. {@link #close()} stops admission, cancels
 * what is queued or running and returns once everything has drained; it is idempotent and
 * safe from a token subscriber or a program thread (it then does not wait on itself).
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
}
