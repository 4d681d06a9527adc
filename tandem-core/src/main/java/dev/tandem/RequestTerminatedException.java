package dev.tandem;

/**
 * Thrown by {@link Orchestrator} calls once the request has ended, to unwind its program.
 * A program need not catch it; the runtime recognises it and does not count it as a failure.
 */
public final class RequestTerminatedException extends RuntimeException {
    private final Status status;

    public RequestTerminatedException(long requestId, Status status) {
        super("request " + requestId + " has ended " + status, null, false, false);
        this.status = status;
    }

    public Status status() {
        return status;
    }
}
