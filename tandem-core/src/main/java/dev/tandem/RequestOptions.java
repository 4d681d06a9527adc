package dev.tandem;

import java.time.Duration;
import java.util.Objects;
import java.util.function.Predicate;

/**
 * Per-request options of a {@link Session} submission. Immutable; each method returns a copy.
 *
 * @param maxTokens tokens after which the request completes; steps already built beyond it
 *                  are skipped and never delivered
 * @param stopWhen  a token matching it is the last delivered (then as for maxTokens)
 * @param deadline  time from submission after which the request ends DEADLINE_EXCEEDED, or null
 * @param id        a caller's id, unique among the session's live requests, or null
 * @param priority  higher is more urgent, for custom scheduling policies
 */
public record RequestOptions(long maxTokens, Predicate<Token> stopWhen, Duration deadline, String id, int priority) {

    private static final Predicate<Token> NEVER = token -> false;

    public RequestOptions {
        if (maxTokens <= 0) {
            throw new IllegalArgumentException("maxTokens must be > 0, was " + maxTokens);
        }
        Objects.requireNonNull(stopWhen, "stopWhen");
        if (deadline != null && (deadline.isNegative() || deadline.isZero())) {
            throw new IllegalArgumentException("deadline must be positive, was " + deadline);
        }
    }

    public static RequestOptions defaults() {
        return new RequestOptions(Long.MAX_VALUE, NEVER, null, null, 0);
    }

    public RequestOptions maxTokens(long value) {
        return new RequestOptions(value, stopWhen, deadline, id, priority);
    }

    public RequestOptions stopWhen(Predicate<Token> value) {
        return new RequestOptions(maxTokens, value, deadline, id, priority);
    }

    public RequestOptions deadline(Duration value) {
        return new RequestOptions(maxTokens, stopWhen, value, id, priority);
    }

    public RequestOptions id(String value) {
        return new RequestOptions(maxTokens, stopWhen, deadline, value, priority);
    }

    public RequestOptions priority(int value) {
        return new RequestOptions(maxTokens, stopWhen, deadline, id, value);
    }
}
