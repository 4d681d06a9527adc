package dev.tandem.llm.engine;

import dev.tandem.llm.sampling.Sampler;
import dev.tandem.llm.sampling.TokenLogprobs;
import java.util.Arrays;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * One sequence of the engine: its prompt and the tokens generated after it, the KV blocks that
 * hold their keys and values, and how far built steps and delivery have got. The facade that
 * owns the sequence's reader subclasses it; the {@link Scheduler} asks the subclass only
 * whether the sequence has ended and how many tokens its reader has not taken.
 *
 * <p>Fields other than the finals are the scheduler's: read and written by whoever calls the
 * scheduler, under that caller's lock; the exceptions are the sampling side's fields, each
 * documented where it is declared.
 */
public abstract class Sequence {
    final int[] prompt;
    final int maxTokens;
    /** KV blocks reserved on joining: every block it can ever need. */
    final int need;
    final int[] table;
    /** The prompt, then the tokens delivered: the token at each position whose keys the cache holds. */
    final int[] tokens;
    int known;
    int blockCount;
    /** Positions whose keys and values tasks already built write. */
    int written;
    /** Leading blocks registered in (or taken from) the prefix cache, and the last one's key. */
    int registered;
    KvBlockPool.Key lastKey;
    int slot = -1;
    int prefilled;
    int built;
    int delivered;
    int cachedTokens;
    boolean left;

    /** Its sampler, set by the facade when it joins; used by the step's sample task only. */
    private Sampler sampler;
    /**
     * With logprobs: the records of its sampled tokens, added by the sample task and taken by the
     * delivery in the same (step) order; null without.
     */
    private final ConcurrentLinkedQueue<TokenLogprobs> logprobs;
    /**
     * Set by a sample task whose draw for this sequence threw (say, its grammar allows no token
     * of the vocabulary); the delivery fails the sequence with it. Written by the sample task
     * before the step's token exists, read by the delivery after: volatile for the reader only.
     */
    private volatile Throwable sampleFailure;

    /**
     * @param prompt    its tokens (not copied: the caller hands it over)
     * @param maxTokens tokens it may generate, at least 1 (the limits already applied)
     * @param blockSize positions per KV block
     * @param logprobs  whether its sample task records log-probabilities
     */
    protected Sequence(int[] prompt, int maxTokens, int blockSize, boolean logprobs) {
        if (prompt.length == 0 || maxTokens < 1) {
            throw new IllegalArgumentException("a sequence needs a prompt token and room for one more");
        }
        this.prompt = prompt;
        this.maxTokens = maxTokens;
        this.need = blocksFor(prompt.length, maxTokens, blockSize);
        this.table = new int[need];
        this.tokens = Arrays.copyOf(prompt, prompt.length + maxTokens);
        this.known = prompt.length;
        this.logprobs = logprobs ? new ConcurrentLinkedQueue<>() : null;
    }

    /**
     * KV blocks of {@code blockSize} positions that a sequence of {@code promptLength} tokens and
     * {@code maxTokens} more can need: the last generated token's keys are never written.
     */
    public static int blocksFor(int promptLength, int maxTokens, int blockSize) {
        return Math.ceilDiv(promptLength + maxTokens - 1, blockSize);
    }

    /** Whether it has ended (its reader's end, a limit, a cancel): it leaves at the next step boundary. */
    protected abstract boolean ended();

    /** Tokens its reader has been given and not taken yet (back-pressure). */
    protected abstract long unread();

    public final int maxTokens() {
        return maxTokens;
    }

    /** KV blocks it reserves. */
    public final int blocksNeeded() {
        return need;
    }

    /** Tokens handed to delivery so far. */
    public final int delivered() {
        return delivered;
    }

    /** Prompt tokens it took from the prefix cache when it joined. */
    public final int cachedTokens() {
        return cachedTokens;
    }

    /** Whether it has left the batch (its blocks and slot returned). */
    public final boolean hasLeft() {
        return left;
    }

    public final Sampler sampler() {
        return sampler;
    }

    /** Sets its sampler; once, when it joins, before its first step is built. */
    public final void sampler(Sampler sampler) {
        this.sampler = sampler;
    }

    /** Its log-probability records in step order, or null when it asked for none. */
    public final ConcurrentLinkedQueue<TokenLogprobs> logprobs() {
        return logprobs;
    }

    /** The failure of a draw for it, or null. */
    public final Throwable sampleFailure() {
        return sampleFailure;
    }

    final void sampleFailed(Throwable failure) {
        this.sampleFailure = failure;
    }

    /** The prompt's tokens (not a copy: not to be changed). */
    protected final int[] prompt() {
        return prompt;
    }

    /** Takes blocks from the pool until position {@code p} has one (within the reservation). */
    final void ensureBlock(KvBlockPool pool, int p) {
        int j = p / pool.blockSize();
        while (blockCount <= j) {
            if (blockCount >= need) {
                throw new AssertionError("sequence beyond its reservation: block " + j + " of " + need);
            }
            table[blockCount++] = pool.allocate();
        }
    }

    /** Tasks now built write the keys and values of positions below {@code end}. */
    final void written(KvBlockPool pool, int end) {
        written = Math.max(written, end);
        registerFullBlocks(pool);
    }

    /** Its token {@code t} was delivered: the token at the next position. */
    final void generated(KvBlockPool pool, int t) {
        if (known < tokens.length) {
            tokens[known++] = t;
            registerFullBlocks(pool);
        }
    }

    /** Registers each block whose every position is written and whose every token is known. */
    private void registerFullBlocks(KvBlockPool pool) {
        int limit = Math.min(written, known);
        while ((registered + 1) * pool.blockSize() <= limit && registered < blockCount) {
            lastKey = pool.register(table[registered], lastKey, tokens, registered * pool.blockSize());
            registered++;
        }
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[prompt " + prompt.length + ", max " + maxTokens + ", slot " + slot
                + ", prefilled " + prefilled + ", built " + built + ", delivered " + delivered + "]";
    }
}
