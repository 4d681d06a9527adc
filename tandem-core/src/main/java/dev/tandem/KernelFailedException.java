package dev.tandem;

/** A kernel threw while running a task; the message names the request, step, task and kernel. */
public final class KernelFailedException extends RuntimeException {
    public KernelFailedException(String message, Throwable cause) {
        super(message, cause);
    }
}
