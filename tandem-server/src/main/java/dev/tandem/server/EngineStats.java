package dev.tandem.server;

/**
 * A snapshot of an {@link Engine}'s load, as {@code /metrics} reports it.
 *
 * @param active          requests generating now (members of the batch)
 * @param queued          admitted requests waiting to start
 * @param maxActive       how many may generate at once (the batch's capacity)
 * @param kvBlocksInUse   KV-cache blocks held by running requests; 0 when the engine does not
 *                        page its cache
 * @param kvBlocksTotal   KV-cache blocks in the pool; 0 when unknown
 * @param memoryInUse     device bytes in use (weights included), or 0 when unknown
 * @param kvBlocksCached  KV-cache blocks holding a prefix a prompt may take; 0 without a prefix cache
 * @param cachedPromptTokens prompt tokens taken from the prefix cache since the start
 * @param computedPromptTokens prompt tokens computed since the start; 0 when not counted
 */
public record EngineStats(int active, int queued, int maxActive, long kvBlocksInUse, long kvBlocksTotal,
        long memoryInUse, long kvBlocksCached, long cachedPromptTokens, long computedPromptTokens) {

    /** Fraction of the batch's capacity in use, in [0, 1]. */
    public double batchOccupancy() {
        return maxActive <= 0 ? 0 : Math.min(1.0, (double) active / maxActive);
    }
}
