package dev.tandem;

import java.util.Map;

/**
 * A snapshot of a session.
 *
 * @param queued           admitted requests waiting to start
 * @param active           requests building, running or draining
 * @param finished         ended and drained requests by status
 * @param tokensDelivered  tokens handed to the session's streams
 * @param deviceBusy       fraction of core time spent running tasks since the worker started
 *                         (all sessions of the worker together)
 * @param bytesInUse       device bytes reserved for the session's running requests
 */
public record SessionStats(
        int queued, int active, Map<Status, Long> finished, long tokensDelivered, double deviceBusy, long bytesInUse) {}
