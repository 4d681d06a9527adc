package dev.tandem.llm.grammar;

/**
 * Where one sequence is in its {@link TokenGrammar}: which tokens may come next, and the move past
 * the one that came. One thread at a time (the sequence's sample task); allocates only when it
 * meets a state whose mask is not cached.
 *
 * <p>After an end token, or once the grammar has consumed a complete text that nothing may extend,
 * only end tokens are allowed (a batch may sample a sequence again before it learns that the
 * sequence ended).
 */
public final class GrammarMatcher {
    private final TokenGrammar grammar;
    private final GrammarTable table;
    private Stacks state;
    private boolean ended;
    private long bytes;

    GrammarMatcher(TokenGrammar grammar) {
        this.grammar = grammar;
        this.table = grammar.table();
        this.state = grammar.start();
    }

    /** Back to the start of the grammar. */
    public void reset() {
        state = grammar.start();
        ended = false;
        bytes = 0;
    }

    public TokenGrammar grammar() {
        return grammar;
    }

    /** Whether the text so far is a complete sentence of the grammar (an end token may come). */
    public boolean isAccepting() {
        return ended || state.accepting;
    }

    /** Whether an end token has been accepted. */
    public boolean isEnded() {
        return ended;
    }

    /** Bytes consumed so far. */
    public long consumed() {
        return bytes;
    }

    Stacks state() {
        return state;
    }

    /** The allowed tokens: bit {@code t} of word {@code t >>> 6}. Shared with the cache: read it only. */
    long[] mask() {
        return ended ? grammar.endMask() : grammar.mask(state);
    }

    /** Whether {@code token} may come next. */
    public boolean isAllowed(int token) {
        checkToken(token);
        long[] mask = mask();
        return (mask[token >>> 6] >>> (token & 63) & 1L) != 0;
    }

    /** The allowed tokens, ascending. */
    public int[] allowedTokens() {
        long[] mask = mask();
        return java.util.BitSet.valueOf(mask).stream().toArray();
    }

    /**
     * Sets every logit of a token that may not come next to {@code -Infinity}: {@code vocab} floats of
     * {@code logits} from {@code offset}.
     *
     * @throws IllegalStateException when no token may come next (the vocabulary cannot spell any
     *         continuation: it lacks a byte the grammar needs, or has no end token)
     */
    public void applyMask(float[] logits, int offset) {
        long[] mask = mask();
        int vocab = grammar.vocabulary().size();
        boolean any = false;
        for (int w = 0; w < mask.length; w++) {
            long bits = mask[w];
            any |= bits != 0;
            if (bits == -1L) {
                continue;
            }
            int base = w << 6;
            int end = Math.min(64, vocab - base);
            if (bits == 0) {
                java.util.Arrays.fill(logits, offset + base, offset + base + end, Float.NEGATIVE_INFINITY);
                continue;
            }
            for (long forbidden = ~bits; forbidden != 0; forbidden &= forbidden - 1) {
                int i = Long.numberOfTrailingZeros(forbidden);
                if (i >= end) {
                    break;
                }
                logits[offset + base + i] = Float.NEGATIVE_INFINITY;
            }
        }
        if (!any) {
            throw new IllegalStateException("the grammar allows no token of the vocabulary after " + bytes
                    + " bytes" + (state.isComplete() ? ": the text is complete and the vocabulary has no end token"
                            : ": the vocabulary cannot spell what the grammar needs next") + " (" + grammar + ")");
        }
    }

    /**
     * Moves past {@code token}.
     *
     * @throws IllegalArgumentException when the token may not come next (nothing changes then)
     */
    public void accept(int token) {
        checkToken(token);
        if (grammar.vocabulary().isEnd(token)) {
            if (!isAccepting()) {
                throw new IllegalArgumentException("end token " + token + " before the grammar's text is complete,"
                        + " after " + bytes + " bytes");
            }
            ended = true;
            return;
        }
        if (ended) {
            throw new IllegalArgumentException("token " + token + " after an end token: only end tokens may follow");
        }
        if (!isAllowed(token)) {
            throw new IllegalArgumentException("token " + token + " is not allowed by the grammar after " + bytes
                    + " bytes");
        }
        byte[] b = grammar.vocabulary().tokenBytes(token);
        Stacks s = state;
        for (byte x : b) {
            s = table.advance(s, x & 0xFF);
        }
        state = s;
        bytes += b.length;
    }

    private void checkToken(int token) {
        if (token < 0 || token >= grammar.vocabulary().size()) {
            throw new IllegalArgumentException("token " + token + " is outside the vocabulary of "
                    + grammar.vocabulary().size());
        }
    }

    @Override
    public String toString() {
        return "GrammarMatcher[" + bytes + " bytes, " + (ended ? "ended" : state.accepting ? "accepting" : "open")
                + ", " + state.frames.length + " stacks]";
    }
}
