package dev.tandem;

import java.time.Duration;

/**
 * How one request ended.
 *
 * @param requestId       the request
 * @param status          how it ended
 * @param cause           why, for {@link Status#FAILED} (else null)
 * @param tokens          tokens of the stream: all it was handed for COMPLETED, else the tokens its
 *                        reader (iterator, poll or subscriber) received before the end
 * @param queued          time from submission to the start of its program
 * @param timeToFirstToken time from submission to its first token, or null without one
 * @param total           time from submission to the end of its last task
 */
public record Outcome(
        long requestId,
        Status status,
        Throwable cause,
        long tokens,
        Duration queued,
        Duration timeToFirstToken,
        Duration total) {

    @Override
    public String toString() {
        return "request " + requestId + " " + status + (cause == null ? "" : " (" + cause + ")") + ", " + tokens
                + " tokens";
    }
}
