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
 */
public record EngineStats(int active, int queued, int maxActive, long kvBlocksInUse, long kvBlocksTotal,
        long memoryInUse) {

    /** Fraction of the batch's capacity in use, in [0, 1]. */
    public double batchOccupancy() {
        return maxActive <= 0 ? 0 : Math.min(1.0, (double) active / maxActive);
    }
}
