package dev.tandem.llm;

import dev.tandem.llm.model.Checks;

/**
 * How a {@link Batcher} shares its steps. Immutable; build with {@link #builder()}.
 *
 * @param maxBatch     members decoding together, at most (each gets a sequence slot)
 * @param maxQueued    members waiting to join, at most; beyond it {@code submit} is rejected
 * @param tokenBudget  rows of one step, at most: one per decoding member, the rest for prompt
 *                     chunks of joining members; must exceed {@code maxBatch}
 * @param kvBlocks     KV cache blocks of the pool (0: enough for {@code maxBatch} full contexts,
 *                     at most {@code kvBytes} of cache)
 * @param kvBytes      the cache's bytes at most when {@code kvBlocks} is 0
 * @param streamBuffer tokens a member may have made that its reader has not taken; at the bound
 *                     its sequence sits out the steps (the others go on) until the reader catches up
 * @param runAhead     steps built ahead of the device
 * @param prefill      which joining member's prompt goes first within a step's budget
 * @param prefixCache  whether full KV blocks stay cached by content after their member leaves, so
 *                     that a prompt beginning with the same tokens takes them instead of computing
 *                     them again (evicted least recently used when the pool needs room)
 * @param promptRows   prompt rows of a step in which members decode, at most (0: no bound but
 *                     {@code tokenBudget}'s): joining prompts then take several shorter steps, and
 *                     the members decoding beside them wait less at each; a step with no member
 *                     decoding takes the whole budget
 */
public record BatcherConfig(int maxBatch, int maxQueued, int tokenBudget, int kvBlocks, long kvBytes,
        int streamBuffer, int runAhead, PrefillOrder prefill, boolean prefixCache, int promptRows) {

    /** The order in which the prompts of joining members share a step's budget. */
    public enum PrefillOrder {
        /** The member with the fewest prompt tokens left goes first: its first token comes soonest. */
        SHORTEST_FIRST,
        /** Members in the order they joined. */
        ARRIVAL
    }

    public BatcherConfig {
        Checks.positive("maxBatch", maxBatch);
        if (maxQueued < 0) {
            throw new IllegalArgumentException("maxQueued = " + maxQueued + " must be >= 0");
        }
        if (tokenBudget <= maxBatch) {
            throw new IllegalArgumentException("tokenBudget = " + tokenBudget + " must exceed maxBatch = " + maxBatch
                    + ": every decoding member takes a row, and a prompt needs at least one more");
        }
        if (kvBlocks < 0) {
            throw new IllegalArgumentException("kvBlocks = " + kvBlocks + " must be >= 0");
        }
        Checks.positive("kvBytes", kvBytes);
        Checks.positive("streamBuffer", streamBuffer);
        Checks.positive("runAhead", runAhead);
        if (prefill == null) {
            throw new IllegalArgumentException("prefill must not be null");
        }
        if (promptRows < 0) {
            throw new IllegalArgumentException("promptRows = " + promptRows + " must be >= 0 (0: no bound)");
        }
    }


    /**
     * 8 members, 64 queued, 256 rows a step with no bound on its prompt rows (a server bounds them:
     * {@code tandem serve --prompt-rows}, 64), a pool of up to 1 GiB, 16 unread tokens, run-ahead 2,
     * shortest prompt first, prefix caching on.
     */
    public static BatcherConfig defaults() {
        return builder().build();
    }

    public static Builder builder() {
        return new Builder();
    }

    public Builder toBuilder() {
        return new Builder().maxBatch(maxBatch).maxQueued(maxQueued).tokenBudget(tokenBudget).kvBlocks(kvBlocks)
                .kvBytes(kvBytes).streamBuffer(streamBuffer).runAhead(runAhead).prefill(prefill)
                .prefixCache(prefixCache).promptRows(promptRows);
    }

    /** Builds a {@link BatcherConfig}; unset values keep their defaults. */
    public static final class Builder {
        private int maxBatch = 8;
        private int maxQueued = 64;
        private int tokenBudget = 256;
        private int kvBlocks;
        private long kvBytes = 1L << 30;
        private int streamBuffer = 16;
        private int runAhead = 2;
        private PrefillOrder prefill = PrefillOrder.SHORTEST_FIRST;
        private boolean prefixCache = true;
        private int promptRows;

        private Builder() {}

        public Builder maxBatch(int value) {
            this.maxBatch = value;
            return this;
        }

        public Builder maxQueued(int value) {
            this.maxQueued = value;
            return this;
        }

        public Builder tokenBudget(int value) {
            this.tokenBudget = value;
            return this;
        }

        public Builder kvBlocks(int value) {
            this.kvBlocks = value;
            return this;
        }

        public Builder kvBytes(long value) {
            this.kvBytes = value;
            return this;
        }

        public Builder streamBuffer(int value) {
            this.streamBuffer = value;
            return this;
        }

        public Builder runAhead(int value) {
            this.runAhead = value;
            return this;
        }

        public Builder prefill(PrefillOrder value) {
            this.prefill = value;
            return this;
        }

        public Builder prefixCache(boolean value) {
            this.prefixCache = value;
            return this;
        }

        public Builder promptRows(int value) {
            this.promptRows = value;
            return this;
        }

        /** @throws IllegalArgumentException naming the first bad value */
        public BatcherConfig build() {
            return new BatcherConfig(maxBatch, maxQueued, tokenBudget, kvBlocks, kvBytes, streamBuffer, runAhead,
                    prefill, prefixCache, promptRows);
        }
    }
}
