package dev.tandem.llm.engine;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The KV-cache blocks of one batcher: which are free, which members hold, and which hold a known
 * prefix that a later prompt may take by reference (prefix caching). Not thread-safe: its owner
 * (the scheduler) is called under its owner's lock.
 *
 * <h2>Implementation Overview</h2>
 *
 * <p><b>States of a block.</b> <i>Free</i> (on {@code free}, content meaningless);
 * <i>held</i> ({@code refs[b] > 0}: in that many members' block tables); <i>cached</i>
 * ({@code refs[b] == 0} and registered: its content is a known prefix, it sits in {@code lru}
 * and is evicted, least recently released first, only when no free block is left). A held
 * block may also be registered (a member's full block that others may share).
 *
 * <p><b>Content identity.</b> A registered block has a {@link Key}: its parent's key (the block
 * before it in the sequence, null for the first) and its token ids. Keys compare parents by
 * identity and tokens by value, so a key names exactly one token prefix: there is no hash whose
 * collision could hand a prompt someone else's cache. Position is implied by the chain's depth;
 * the model and its rope are the pool's own (one pool per batcher per model). When a block is
 * evicted its key leaves {@code index}; its descendants' keys can then no longer be reached
 * from the root (a fresh registration of the same content makes a new key object), and they
 * age out of the LRU as any unused block does.
 *
 * <p><b>Never shared while written.</b> A block is registered only once every position of it is
 * written by tasks already built, and its owner never writes it again (it writes positions past
 * its registered blocks); a member that takes cached blocks prefills only the positions after
 * them. The runtime orders a sharer's reads after the owner's writes (their regions overlap),
 * so registration at plan time is safe.
 *
 * <p><b>Invariants</b> (checked by {@link #checkIdle} in tests, and by stress tests): every block
 * is exactly one of free, held, cached; {@code free + held + cached == blocks}; a block is in
 * {@code lru} iff it is registered and not held; {@code index} maps a key to a block whose
 * {@code keys[b]} is that key.
 */
public final class KvBlockPool {
    /** The identity of a registered block's content: its parent's key and its tokens. */
    public static final class Key {
        final Key parent;
        final int[] tokens;
        private final int hash;

        Key(Key parent, int[] tokens) {
            this.parent = parent;
            this.tokens = tokens;
            this.hash = 31 * System.identityHashCode(parent) + Arrays.hashCode(tokens);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Key k && k.parent == parent && Arrays.equals(k.tokens, tokens);
        }

        @Override
        public int hashCode() {
            return hash;
        }
    }

    private final int blocks;
    private final int blockSize;
    private final boolean caching;
    private final int[] free;
    private int freeCount;
    private final int[] refs;
    private final Key[] keys;
    private final Map<Key, Integer> index = new HashMap<>();
    /** Cached blocks (registered, not held), least recently released first. */
    private final LinkedHashMap<Integer, Boolean> lru = new LinkedHashMap<>();
    private long evictions;

    public KvBlockPool(int blocks, int blockSize, boolean caching) {
        if (blocks < 1 || blockSize < 1) {
            throw new IllegalArgumentException("blocks = " + blocks + " and blockSize = " + blockSize + " must be >= 1");
        }
        this.blocks = blocks;
        this.blockSize = blockSize;
        this.caching = caching;
        this.free = new int[blocks];
        for (int i = 0; i < blocks; i++) {
            free[i] = blocks - 1 - i; // block 0 on top
        }
        this.freeCount = blocks;
        this.refs = new int[blocks];
        this.keys = new Key[blocks];
    }

    public int blocks() {
        return blocks;
    }

    public int blockSize() {
        return blockSize;
    }

    public boolean caching() {
        return caching;
    }

    /** Blocks held by at least one member. */
    public int held() {
        return blocks - freeCount - lru.size();
    }

    /** Blocks that hold a registered prefix (held or not). */
    public int cached() {
        return index.size();
    }

    /** Cached blocks evicted so far to make room. */
    public long evictions() {
        return evictions;
    }

    /**
     * The longest chain of registered blocks that starts {@code tokens}, at most
     * {@code maxBlocks} of them, each now held once more (the caller owns those references).
     *
     * @return the blocks, in order (empty when none matches or caching is off)
     */
    public int[] match(int[] tokens, int maxBlocks) {
        if (!caching) {
            return new int[0];
        }
        int[] matched = new int[Math.max(0, Math.min(maxBlocks, tokens.length / blockSize))];
        int n = 0;
        Key parent = null;
        while (n < matched.length) {
            Key key = new Key(parent, Arrays.copyOfRange(tokens, n * blockSize, (n + 1) * blockSize));
            Integer block = index.get(key);
            if (block == null) {
                break;
            }
            parent = keys[block];
            matched[n++] = block;
        }
        for (int i = 0; i < n; i++) {
            acquire(matched[i]);
        }
        return Arrays.copyOf(matched, n);
    }

    /** The key of a registered block, or null. */
    public Key key(int block) {
        return keys[block];
    }

    private void acquire(int block) {
        if (refs[block]++ == 0) {
            lru.remove(block);
        }
    }

    /**
     * A block for a member to write: a free one, else the least recently released cached one
     * (its content forgotten). Held once by the caller.
     *
     * @throws IllegalStateException when every block is held (the caller's reservation was wrong)
     */
    public int allocate() {
        int block;
        if (freeCount > 0) {
            block = free[--freeCount];
        } else {
            Iterator<Integer> oldest = lru.keySet().iterator();
            if (!oldest.hasNext()) {
                throw new IllegalStateException("every one of the " + blocks + " KV blocks is held");
            }
            block = oldest.next();
            oldest.remove();
            index.remove(keys[block]);
            keys[block] = null;
            evictions++;
        }
        refs[block] = 1;
        return block;
    }

    /**
     * Registers {@code block}, which holds {@code tokens[from, from + blockSize)} after the
     * prefix named by {@code parent}, so later prompts may take it.
     *
     * @return the key the next block of this sequence should name as its parent: the block's own,
     *         or that of an equal block registered before it (whose chain later prompts follow);
     *         null when caching is off
     */
    public Key register(int block, Key parent, int[] tokens, int from) {
        if (!caching) {
            return null;
        }
        if (refs[block] == 0 || keys[block] != null) {
            throw new IllegalStateException("block " + block + " is not held, or registered already");
        }
        Key key = new Key(parent, Arrays.copyOfRange(tokens, from, from + blockSize));
        Integer existing = index.get(key);
        if (existing != null) {
            return keys[existing]; // same content computed twice: this copy stays private
        }
        keys[block] = key;
        index.put(key, block);
        return key;
    }

    /** Drops one reference to {@code block}: it becomes cached when registered, free otherwise. */
    public void release(int block) {
        if (refs[block] <= 0) {
            throw new IllegalStateException("block " + block + " released more often than held");
        }
        if (--refs[block] > 0) {
            return;
        }
        if (keys[block] != null) {
            lru.put(block, Boolean.TRUE);
        } else {
            free[freeCount++] = block;
        }
    }

    /** For tests: no block is held, and every block is free or cached exactly once. */
    public void checkIdle() {
        for (int b = 0; b < blocks; b++) {
            if (refs[b] != 0) {
                throw new AssertionError("block " + b + " is still held " + refs[b] + " times");
            }
        }
        if (freeCount + lru.size() != blocks || lru.size() != index.size()) {
            throw new AssertionError("free " + freeCount + " + cached " + lru.size() + " != " + blocks
                    + " blocks, or " + index.size() + " keys for " + lru.size() + " cached blocks");
        }
        boolean[] seen = new boolean[blocks];
        for (int i = 0; i < freeCount; i++) {
            if (seen[free[i]] || keys[free[i]] != null) {
                throw new AssertionError("free block " + free[i] + " twice, or registered");
            }
            seen[free[i]] = true;
        }
        for (int b : lru.keySet()) {
            if (seen[b] || keys[b] == null || index.get(keys[b]) != b) {
                throw new AssertionError("cached block " + b + " also free, or its key lost");
            }
            seen[b] = true;
        }
    }
}
