package dev.tandem.llm.grammar;

import dev.tandem.llm.grammar.GrammarVocabulary.Trie;
import java.util.HashMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A {@link Grammar} compiled for one {@link GrammarVocabulary}: the per-state token masks, cached
 * and shared by every sequence decoding under it. Thread-safe. Each sequence takes a
 * {@link #matcher()} of its own.
 *
 * <p><b>The mask of a state</b> is the set of tokens whose bytes the automaton can consume from
 * it (each byte in turn, from the state), plus the end tokens when the state accepts. It is
 * computed by walking the vocabulary's trie depth-first with the automaton, a subtree cut off as
 * soon as its prefix leaves no stack (the automaton's transitions memoised within the walk), and
 * cached by state (the set of stacks): in JSON the states
 * repeat (inside one string every character leaves the same stacks), so after the first few tokens
 * of a schema most steps cost a cache lookup and a pass over the mask's words. The cache holds at
 * most about 64 MiB of masks per grammar and starts over when full.
 */
public final class TokenGrammar {
    private static final long CACHE_BYTES = 64L << 20;

    private final Grammar grammar;
    private final GrammarVocabulary vocabulary;
    private final GrammarTable table;
    private final Stacks start;
    private final int words;
    private final int maxCached;
    private final long[] endMask;
    private final ConcurrentHashMap<Stacks, long[]> masks = new ConcurrentHashMap<>();

    TokenGrammar(Grammar grammar, GrammarVocabulary vocabulary) {
        this.grammar = grammar;
        this.vocabulary = vocabulary;
        this.table = grammar.table();
        this.start = table.start();
        this.words = (vocabulary.size() + 63) >>> 6;
        this.maxCached = (int) Math.max(64, CACHE_BYTES / (8L * Math.max(1, words)));
        this.endMask = new long[words];
        long[] ends = vocabulary.ends().toLongArray();
        System.arraycopy(ends, 0, endMask, 0, ends.length);
    }

    public Grammar grammar() {
        return grammar;
    }

    public GrammarVocabulary vocabulary() {
        return vocabulary;
    }

    /** A new matcher at the start of the grammar, for one sequence. */
    public GrammarMatcher matcher() {
        return new GrammarMatcher(this);
    }

    /** States whose masks are cached now (for tests and statistics). */
    public int cachedStates() {
        return masks.size();
    }

    GrammarTable table() {
        return table;
    }

    Stacks start() {
        return start;
    }

    long[] endMask() {
        return endMask;
    }

    /** The mask of {@code state}: bit {@code t} set iff token {@code t} is allowed. Shared: do not write. */
    long[] mask(Stacks state) {
        long[] mask = masks.get(state);
        if (mask == null) {
            mask = compute(state);
            if (masks.size() >= maxCached) {
                masks.clear();
            }
            masks.put(state, mask);
        }
        return mask;
    }

    private long[] compute(Stacks state) {
        long[] mask = new long[words];
        if (state.accepting) {
            System.arraycopy(endMask, 0, mask, 0, words);
        }
        if (!state.isComplete()) {
            new Walk(vocabulary.trie(), mask).from(0, new Walk.State(state));
        }
        return mask;
    }

    /**
     * One walk of the trie from a state. Trie nodes far apart often leave the automaton in the same
     * state (inside a string, every ordinary character does), so each distinct state of the walk is
     * made once and its transitions memoised: the walk then costs about an array lookup per trie node.
     */
    private final class Walk {
        final Trie trie;
        final long[] mask;
        final HashMap<Stacks, State> states = new HashMap<>();

        Walk(Trie trie, long[] mask) {
            this.trie = trie;
            this.mask = mask;
        }

        static final class State {
            final Stacks stacks;
            final State[] next = new State[256];

            State(Stacks stacks) {
                this.stacks = stacks;
            }
        }

        private static final State DEAD = new State(Stacks.DEAD);

        State next(State from, int b) {
            State n = from.next[b];
            if (n == null) {
                Stacks s = table.advance(from.stacks, b);
                n = s.isDead() ? DEAD : states.computeIfAbsent(s, State::new);
                from.next[b] = n;
            }
            return n;
        }

        void from(int node, State state) {
            byte[] bytes = trie.childBytes[node];
            int[] children = trie.children[node];
            for (int i = 0; i < bytes.length; i++) {
                State next = next(state, bytes[i] & 0xFF);
                if (next == DEAD) {
                    continue;
                }
                int child = children[i];
                for (int t : trie.tokens[child]) {
                    mask[t >>> 6] |= 1L << (t & 63);
                }
                if (!next.stacks.isComplete()) {
                    from(child, next);
                }
            }
        }
    }

    @Override
    public String toString() {
        return "TokenGrammar[" + grammar + ", " + vocabulary + "]";
    }
}
