package dev.tandem;

/**
 * A task that cannot be submitted: a region out of bounds, a write to a frozen buffer, a
 * buffer of another request or one already freed, a step buffer of another step, a null or
 * negative argument. The message names the request, step, task index, kernel and region.
 */
public final class InvalidTaskException extends IllegalArgumentException {
    public InvalidTaskException(String message) {
        super(message);
    }
}
