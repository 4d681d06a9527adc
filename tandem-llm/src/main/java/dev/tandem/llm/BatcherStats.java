package dev.tandem.llm;

/**
 * A snapshot of a {@link Batcher}.
 *
 * @param active          members in the batch
 * @param queued          members waiting to join
 * @param maxBatch        members the batch holds at most
 * @param kvBlocksInUse   pool blocks holding some member's keys and values
 * @param kvBlocksReserved pool blocks promised to the members in the batch (in use or not yet)
 * @param kvBlocks        blocks of the pool
 * @param steps           steps built
 * @param prefillRows     prompt rows in those steps
 * @param decodeRows      decoding rows in those steps
 * @param mixedSteps      steps with both prompt and decoding rows
 * @param pausedRows      decoding rows left out of built steps because the member's reader was behind
 * @param tokens          tokens delivered to members
 * @param kvBlocksCached  pool blocks holding a known prefix (in use or not) that a prompt may take
 * @param cachedPromptTokens prompt tokens taken from the prefix cache instead of computed
 * @param computedPromptTokens prompt tokens computed (prefilled)
 * @param kvBlocksEvicted cached blocks reused for other content since the start
 * @param firstTokens     members whose first token was delivered, since the start; the three
 *                        sums below are over them, and together they are each member's time from
 *                        {@code submit} to its first token's delivery
 * @param firstTokenQueueNanos    waiting to join: for a slot, for the pool's room, for the next step boundary
 * @param firstTokenScheduleNanos joined until the step holding its last prompt row was planned:
 *                        its earlier prompt chunks' steps, and the rows other members took
 * @param firstTokenStepNanos     that step planned until its token was delivered: the steps built
 *                        ahead of it (run-ahead), its own build and run on the device
 */
public record BatcherStats(int active, int queued, int maxBatch, int kvBlocksInUse, int kvBlocksReserved,
        int kvBlocks, long steps, long prefillRows, long decodeRows, long mixedSteps, long pausedRows, long tokens,
        int kvBlocksCached, long cachedPromptTokens, long computedPromptTokens, long kvBlocksEvicted,
        long firstTokens, long firstTokenQueueNanos, long firstTokenScheduleNanos, long firstTokenStepNanos) {

    /** Members in the batch over the batch's size. */
    public double occupancy() {
        return (double) active / maxBatch;
    }
}
