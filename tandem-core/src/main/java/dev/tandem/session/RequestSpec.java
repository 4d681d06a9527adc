package dev.tandem.session;

import dev.tandem.RunOptions;
import dev.tandem.SchedulingPolicy;
import dev.tandem.Token;
import java.time.Duration;
import java.util.function.Predicate;

/**
 * Everything that shapes one request, whether it came through {@code Worker.run} or a
 * session.
 *
 * @param name        the caller's id, or null
 * @param run         pipelining and token limit
 * @param stopWhen    a token matching it is the last delivered; null for none
 * @param deadline    time from submission to DEADLINE_EXCEEDED, or null
 * @param priority    for custom scheduling policies
 * @param policy      lane choice of the request's ready tasks
 * @param memoryQuota device bytes reserved for the request at admission, which its
 *                    allocations must fit in; negative: allocations draw on the device budget
 *                    directly
 */
record RequestSpec(
        String name, RunOptions run, Predicate<Token> stopWhen, Duration deadline, int priority,
        SchedulingPolicy policy, long memoryQuota) {

    public static RequestSpec of(RunOptions run, SchedulingPolicy policy) {
        return new RequestSpec(null, run, null, null, 0, policy, -1);
    }
}
