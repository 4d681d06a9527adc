package dev.tandem.session;

/**
 * Marks the runtime's own callback threads, so that a blocking call made from one of them
 * (closing a session from a token subscriber) does not wait on itself.
 */
public final class RuntimeThreads {
    /** Bound to true while a subscriber's callbacks run. */
    static final ScopedValue<Boolean> CALLBACK = ScopedValue.newInstance();

    private RuntimeThreads() {}

    /** Whether the calling thread is running a stream subscriber's callback. */
    public static boolean inCallback() {
        return CALLBACK.orElse(Boolean.FALSE);
    }
}
