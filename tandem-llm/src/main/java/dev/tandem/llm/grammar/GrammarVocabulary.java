package dev.tandem.llm.grammar;

import dev.tandem.llm.tokenizer.TokenType;
import dev.tandem.llm.tokenizer.Tokenizer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.IntPredicate;

/**
 * A model's vocabulary as constrained decoding sees it: each token's bytes, in a trie, and the
 * tokens that end a generation. Immutable, thread-safe; holds the grammars compiled for it
 * ({@link #compile}, cached). One per model.
 *
 * <p>A token takes part in a grammar when it has bytes and is not a control token (a
 * user-defined token, such as {@code <tool_call>} in Qwen's vocabulary, takes part with its text).
 * An end token (EOS, a control token that ends a chat turn) is allowed exactly where the grammar
 * accepts, and after it only end tokens are.
 */
public final class GrammarVocabulary {
    private static final int CACHE = 64;

    private final int size;
    private final byte[][] tokens;
    private final BitSet ends;
    private final Trie trie;
    private final Map<Grammar, TokenGrammar> compiled = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Grammar, TokenGrammar> eldest) {
            return size() > CACHE;
        }
    };

    private GrammarVocabulary(byte[][] tokens, BitSet ends) {
        this.size = tokens.length;
        this.tokens = tokens;
        this.ends = (BitSet) ends.clone();
        this.trie = new Trie();
        for (int id = 0; id < tokens.length; id++) {
            if (tokens[id] != null && tokens[id].length > 0 && !ends.get(id)) {
                trie.add(tokens[id], id);
            }
        }
        trie.freeze();
    }

    /**
     * The vocabulary of {@code tokenizer}: control tokens, unused ones and those without bytes
     * never take part; {@code endsGeneration} names the end tokens.
     */
    public static GrammarVocabulary of(Tokenizer tokenizer, IntPredicate endsGeneration) {
        int n = tokenizer.vocabSize();
        byte[][] tokens = new byte[n][];
        BitSet ends = new BitSet(n);
        for (int id = 0; id < n; id++) {
            if (endsGeneration.test(id)) {
                ends.set(id);
                continue;
            }
            TokenType type = tokenizer.tokenType(id);
            if (type == TokenType.CONTROL || type == TokenType.UNKNOWN) {
                continue;
            }
            tokens[id] = tokenizer.tokenBytes(id);
        }
        return new GrammarVocabulary(tokens, ends);
    }

    /**
     * A vocabulary of raw token bytes: {@code tokens[id]} null or empty never takes part;
     * {@code ends} are the end tokens.
     */
    public static GrammarVocabulary of(byte[][] tokens, BitSet ends) {
        Objects.requireNonNull(tokens, "tokens");
        Objects.requireNonNull(ends, "ends");
        if (ends.length() > tokens.length) {
            throw new IllegalArgumentException("end token " + (ends.length() - 1) + " is outside the vocabulary of "
                    + tokens.length);
        }
        byte[][] copy = new byte[tokens.length][];
        for (int i = 0; i < tokens.length; i++) {
            copy[i] = tokens[i] == null ? null : tokens[i].clone();
        }
        return new GrammarVocabulary(copy, ends);
    }

    /** Tokens in the vocabulary. */
    public int size() {
        return size;
    }

    /** Whether {@code token} is an end token. */
    public boolean isEnd(int token) {
        return ends.get(token);
    }

    /** The bytes of {@code token} (empty when it never takes part); shared: read only. */
    byte[] tokenBytes(int token) {
        byte[] b = tokens[token];
        return b == null ? NO_BYTES : b;
    }

    private static final byte[] NO_BYTES = new byte[0];

    BitSet ends() {
        return ends;
    }

    Trie trie() {
        return trie;
    }

    /** {@code grammar} for this vocabulary; the last 64 compiled are kept, so a repeated schema costs nothing. */
    public TokenGrammar compile(Grammar grammar) {
        Objects.requireNonNull(grammar, "grammar");
        synchronized (compiled) {
            return compiled.computeIfAbsent(grammar, g -> new TokenGrammar(g, this));
        }
    }

    @Override
    public String toString() {
        return "GrammarVocabulary[" + size + " tokens, " + ends.cardinality() + " end tokens]";
    }

    /** The tokens' bytes as a trie: a node per distinct prefix, with the tokens that end there. */
    static final class Trie {
        static final int[] NONE = new int[0];

        /** Per node: its children's first bytes (ascending) and their nodes, and the tokens ending here. */
        byte[][] childBytes = new byte[1][];
        int[][] children = new int[1][];
        int[][] tokens = new int[1][];
        private final List<Map<Byte, Integer>> building = new ArrayList<>(List.of(new java.util.TreeMap<>()));
        private final List<List<Integer>> ending = new ArrayList<>(List.of(new ArrayList<>()));

        void add(byte[] bytes, int id) {
            int node = 0;
            for (byte b : bytes) {
                Integer next = building.get(node).get(b);
                if (next == null) {
                    next = building.size();
                    building.get(node).put(b, next);
                    building.add(new java.util.TreeMap<>());
                    ending.add(new ArrayList<>());
                }
                node = next;
            }
            ending.get(node).add(id);
        }

        void freeze() {
            int n = building.size();
            childBytes = new byte[n][];
            children = new int[n][];
            tokens = new int[n][];
            for (int node = 0; node < n; node++) {
                Map<Byte, Integer> c = building.get(node);
                byte[] bs = new byte[c.size()];
                int[] ns = new int[c.size()];
                int i = 0;
                // TreeMap orders bytes as signed; the walk does not depend on the order
                for (Map.Entry<Byte, Integer> e : c.entrySet()) {
                    bs[i] = e.getKey();
                    ns[i++] = e.getValue();
                }
                childBytes[node] = bs;
                children[node] = ns;
                List<Integer> t = ending.get(node);
                tokens[node] = t.isEmpty() ? NONE : t.stream().mapToInt(Integer::intValue).toArray();
            }
            building.clear();
            ending.clear();
        }

        int nodes() {
            return children.length;
        }

        @Override
        public String toString() {
            return "Trie[" + nodes() + " nodes, " + Arrays.stream(tokens).mapToInt(t -> t.length).sum() + " tokens]";
        }
    }
}
