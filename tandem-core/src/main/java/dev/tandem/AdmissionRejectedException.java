package dev.tandem;

/** A {@link Session} did not admit a request; nothing of it ran and nothing was reserved. */
public final class AdmissionRejectedException extends RuntimeException {

    /** Why a request was not admitted. */
    public enum Reason {
        /** {@code maxQueued} requests are already waiting. */
        QUEUE_FULL,
        /** The session is closed. */
        CLOSED,
        /** The request needs more memory than the whole device budget. */
        TOO_LARGE,
        /** A live request of the session has the same id. */
        DUPLICATE_ID
    }

    private final Reason reason;

    public AdmissionRejectedException(Reason reason, String message) {
        super(reason + ": " + message);
        this.reason = reason;
    }

    public Reason reason() {
        return reason;
    }
}
