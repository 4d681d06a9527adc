package dev.tandem;

/**
 * User code that builds the steps of one request. Called once per request, on the
 * request's own virtual thread; returning normally completes the request once every task it
 * submitted is done.
 *
 * @param <I> the request's input
 */
@FunctionalInterface
public interface Program<I> {
    void run(Orchestrator o, I input) throws Exception;
}
