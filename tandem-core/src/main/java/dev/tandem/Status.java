package dev.tandem;

/** How a request ended. Every stream ends exactly once with one of these. */
public enum Status {
    /** The program returned (or the token limit was reached) and every task is done. */
    COMPLETED,
    /** Someone called {@link TokenStream#cancel()} or closed the worker. */
    CANCELLED,
    /** The request's deadline passed. */
    DEADLINE_EXCEEDED,
    /** A kernel, the program or an allocation failed; see {@link Outcome#cause()}. */
    FAILED
}
