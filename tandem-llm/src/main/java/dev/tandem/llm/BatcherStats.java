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
 */
public record BatcherStats(int active, int queued, int maxBatch, int kvBlocksInUse, int kvBlocksReserved,
        int kvBlocks, long steps, long prefillRows, long decodeRows, long mixedSteps, long pausedRows, long tokens) {

    /** Members in the batch over the batch's size. */
    public double occupancy() {
        return (double) active / maxBatch;
    }
}
