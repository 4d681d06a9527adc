package dev.tandem;

/** Thrown to a stream's reader when its request ended other than {@link Status#COMPLETED}. */
public final class StreamTerminatedException extends RuntimeException {
    private final transient Outcome outcome;

    public StreamTerminatedException(Outcome outcome) {
        super("request " + outcome.requestId() + " ended " + outcome.status()
                + (outcome.cause() == null ? "" : ": " + outcome.cause().getMessage()), outcome.cause());
        this.outcome = outcome;
    }

    public Outcome outcome() {
        return outcome;
    }

    public Status status() {
        return outcome.status();
    }
}
