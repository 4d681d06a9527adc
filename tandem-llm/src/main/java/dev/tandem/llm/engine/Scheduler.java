package dev.tandem.llm.engine;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;

/**
 * Which sequences take part in the next step, and with which rows: a plain function of its
 * state (the queue, the batch, the sequence slots, the KV reservations and the block pool), with
 * no lock, thread or I/O of its own. Its caller serialises every call (the batcher holds its lock
 * around each) and feeds back what delivery saw ({@link #delivered}, {@link #accepted}).
 *
 * <h2>Implementation Overview</h2>
 *
 * <p><b>Admission.</b> A sequence waits in the queue until a slot in {@code [0, maxBatch)} is
 * free and the pool can reserve every block it can ever need ({@link Sequence#blocksFor}); it
 * then takes the longest chain of cached blocks that begins its prompt (never the block of its
 * last prompt token, whose logits give its first token) and joins. The queue is served in order,
 * so a large sequence is not overtaken forever. A sequence that joined never runs out of cache.
 *
 * <p><b>A step's rows.</b> One row for each decoding sequence whose reader is keeping up (one
 * that holds {@code streamBuffer} tokens it has not taken, counting tokens in built steps, sits
 * the step out), then prompt chunks of joining sequences in the budget's remaining rows,
 * shortest remaining prompt first (or in arrival order). The plan's columns are the rows whose
 * token is sampled: the last prompt row of a prompt that ends in the step, and every decoding row.
 *
 * <p><b>Blocks.</b> A row's block is taken from the pool when the row is planned; a block whose
 * positions are all written by planned rows and whose tokens are all known is registered in the
 * pool under its content (see {@link KvBlockPool}). A sequence that leaves returns its blocks:
 * registered ones stay cached, the others become free.
 *
 * @param <S> the facade's sequence type
 */
public final class Scheduler<S extends Sequence> {
    private final int maxBatch;
    private final int tokenBudget;
    private final int promptRows;
    private final int streamBuffer;
    private final boolean shortestFirst;
    private final KvBlockPool pool;
    private final ArrayDeque<S> queue = new ArrayDeque<>();
    private final List<S> active = new ArrayList<>();
    private final boolean[] slotUsed;
    private int reserved;

    private long steps;
    private long prefillRows;
    private long decodeRows;
    private long mixedSteps;
    private long pausedRows;
    private long tokens;
    private long cachedPromptTokens;
    private long computedPromptTokens;

    /**
     * @param maxBatch      sequences in the batch at most
     * @param tokenBudget   rows of a step at most; more than {@code maxBatch}
     * @param promptRows    prompt rows of a step in which sequences decode, at most (0: no bound
     *                      but the step's)
     * @param streamBuffer  unread tokens at which a sequence sits out steps
     * @param shortestFirst prompt chunks by shortest remaining prompt (else arrival order)
     */
    public Scheduler(int maxBatch, int tokenBudget, int promptRows, int streamBuffer, boolean shortestFirst,
            KvBlockPool pool) {
        if (maxBatch < 1 || tokenBudget <= maxBatch || promptRows < 0 || streamBuffer < 1) {
            throw new IllegalArgumentException("maxBatch = " + maxBatch + ", tokenBudget = " + tokenBudget
                    + ", promptRows = " + promptRows + ", streamBuffer = " + streamBuffer
                    + ": need 1 <= maxBatch < tokenBudget, promptRows >= 0 and streamBuffer >= 1");
        }
        this.maxBatch = maxBatch;
        this.tokenBudget = tokenBudget;
        this.promptRows = promptRows;
        this.streamBuffer = streamBuffer;
        this.shortestFirst = shortestFirst;
        this.pool = pool;
        this.slotUsed = new boolean[maxBatch];
    }

    public KvBlockPool pool() {
        return pool;
    }

    /** Whether one more sequence may wait: below {@code maxQueued} waiting, or none waiting and it could join now. */
    public boolean mayQueue(S s, int maxQueued) {
        return queue.size() < maxQueued || (queue.isEmpty() && canJoin(s.need));
    }

    /** Queues {@code s} to join; it must fit the pool ({@link Sequence#blocksNeeded} at most the pool's blocks). */
    public void enqueue(S s) {
        if (s.need > pool.blocks()) {
            throw new IllegalArgumentException(s + " needs " + s.need + " blocks; the pool has " + pool.blocks());
        }
        queue.add(s);
    }

    /**
     * Removes the sequences that have ended: queued ones leave the queue, active ones leave the
     * batch (blocks, reservation and slot returned).
     *
     * @return the removed sequences, queued ones first; their owner releases what it holds for them
     */
    public List<S> dropEnded() {
        List<S> removed = new ArrayList<>();
        for (var it = queue.iterator(); it.hasNext(); ) {
            S s = it.next();
            if (s.ended()) {
                it.remove();
                removed.add(s);
            }
        }
        for (var it = active.iterator(); it.hasNext(); ) {
            S s = it.next();
            if (s.ended()) {
                it.remove();
                leave(s);
                removed.add(s);
            }
        }
        return removed;
    }

    /**
     * Every sequence leaves: the queue empties and every active sequence returns what it holds.
     *
     * @return the queued sequences, then the active ones
     */
    public List<S> clear() {
        List<S> all = new ArrayList<>(queue);
        queue.clear();
        for (S s : active) {
            leave(s);
            all.add(s);
        }
        active.clear();
        return all;
    }

    private void leave(S s) {
        for (int j = 0; j < s.blockCount; j++) {
            pool.release(s.table[j]);
        }
        s.blockCount = 0;
        reserved -= s.need;
        slotUsed[s.slot] = false;
        s.left = true;
    }

    private boolean canJoin(int need) {
        if (reserved + need > pool.blocks()) {
            return false;
        }
        for (boolean used : slotUsed) {
            if (!used) {
                return true;
            }
        }
        return false;
    }

    /**
     * Moves waiting sequences into the batch, in order, while a slot is free and the pool can
     * reserve what the next one needs; each takes the cached blocks that begin its prompt.
     *
     * @return the sequences that joined, in order
     */
    public List<S> admit() {
        List<S> joined = new ArrayList<>();
        while (!queue.isEmpty()) {
            S s = queue.peek();
            if (!canJoin(s.need)) {
                break; // in order: a large sequence is not overtaken forever
            }
            queue.poll();
            int slot = 0;
            while (slotUsed[slot]) {
                slot++;
            }
            slotUsed[slot] = true;
            s.slot = slot;
            reserved += s.need;
            takeCachedPrefix(s);
            active.add(s);
            joined.add(s);
        }
        return joined;
    }

    /**
     * The cached blocks that begin its prompt become the start of its table and its prefill starts
     * after them; at least its last prompt token is computed (its logits give the first token).
     */
    private void takeCachedPrefix(S s) {
        int blockSize = pool.blockSize();
        int[] shared = pool.match(s.prompt, (s.prompt.length - 1) / blockSize);
        System.arraycopy(shared, 0, s.table, 0, shared.length);
        s.blockCount = shared.length;
        s.registered = shared.length;
        s.lastKey = shared.length == 0 ? null : pool.key(shared[shared.length - 1]);
        s.prefilled = shared.length * blockSize;
        s.written = s.prefilled;
        s.cachedTokens = s.prefilled;
        cachedPromptTokens += s.prefilled;
    }

    /** The rows of the next step, or null when no sequence can take part in one. */
    public StepPlan plan() {
        List<S> decoding = new ArrayList<>();
        List<S> prefilling = new ArrayList<>();
        int paused = 0;
        for (S s : active) {
            if (s.prefilled < s.prompt.length) {
                prefilling.add(s);
            } else if (s.built < s.maxTokens) {
                if (s.unread() + (s.built - s.delivered) >= streamBuffer) {
                    paused++;
                } else {
                    decoding.add(s);
                }
            }
        }
        if (decoding.isEmpty() && prefilling.isEmpty()) {
            return null;
        }
        if (shortestFirst) {
            prefilling.sort(Comparator.comparingInt(s -> s.prompt.length - s.prefilled));
        }
        int budget = tokenBudget - decoding.size();
        if (promptRows > 0 && !decoding.isEmpty()) {
            budget = Math.min(budget, promptRows);
        }
        int chunks = 0;
        int[] from = new int[prefilling.size()];
        int[] to = new int[prefilling.size()];
        int prefill = 0;
        for (int i = 0; i < prefilling.size() && prefill < budget; i++) {
            S s = prefilling.get(i);
            int n = Math.min(s.prompt.length - s.prefilled, budget - prefill);
            from[i] = s.prefilled;
            to[i] = s.prefilled + n;
            prefill += n;
            chunks++;
        }
        StepPlan plan = new StepPlan(prefill + decoding.size(), prefill, decoding.size());
        int r = 0;
        int column = 0;
        for (int i = 0; i < chunks; i++) {
            S s = prefilling.get(i);
            for (int p = from[i]; p < to[i]; p++) {
                plan.prefillTokens[r] = s.prompt[p];
                plan.position[r] = p;
                s.ensureBlock(pool, p);
                plan.tables[r] = s.table;
                r++;
            }
            s.prefilled = to[i];
            s.written(pool, to[i]);
            computedPromptTokens += to[i] - from[i];
            if (s.prefilled == s.prompt.length) {
                plan.add(column++, r - 1, s); // its last prompt row yields token 0
            }
        }
        for (int i = 0; i < decoding.size(); i++) {
            S s = decoding.get(i);
            int p = s.prompt.length + s.built - 1; // the position of its previous token
            s.ensureBlock(pool, p);
            s.written(pool, p + 1);
            plan.position[r] = p;
            plan.tables[r] = s.table;
            plan.decodeSlots[i] = s.slot;
            plan.add(column++, r, s);
            r++;
        }
        plan.columns = column;
        steps++;
        prefillRows += prefill;
        decodeRows += decoding.size();
        pausedRows += paused; // counted for planned steps only, not for calls that found nothing to do
        if (prefill > 0 && !decoding.isEmpty()) {
            mixedSteps++;
        }
        return plan;
    }

    /** Delivery reached {@code s}'s next column (delivered to its reader or dropped). */
    public void delivered(Sequence s) {
        s.delivered++;
    }

    /** {@code s}'s reader was given token {@code t}: the token at its next position. */
    public void accepted(Sequence s, int t) {
        s.generated(pool, t);
        tokens++;
    }

    /** Whether no sequence is queued or in the batch. */
    public boolean idle() {
        return active.isEmpty() && queue.isEmpty();
    }

    public List<S> active() {
        return Collections.unmodifiableList(active);
    }

    public List<S> queued() {
        return List.copyOf(queue);
    }

    public int maxBatch() {
        return maxBatch;
    }

    /** Blocks reserved by the sequences in the batch. */
    public int reserved() {
        return reserved;
    }

    public long steps() {
        return steps;
    }

    public long prefillRows() {
        return prefillRows;
    }

    public long decodeRows() {
        return decodeRows;
    }

    public long mixedSteps() {
        return mixedSteps;
    }

    public long pausedRows() {
        return pausedRows;
    }

    /** Tokens given to readers. */
    public long tokens() {
        return tokens;
    }

    public long cachedPromptTokens() {
        return cachedPromptTokens;
    }

    public long computedPromptTokens() {
        return computedPromptTokens;
    }
}
