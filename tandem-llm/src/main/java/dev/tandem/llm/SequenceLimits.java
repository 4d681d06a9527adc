package dev.tandem.llm;

import java.util.BitSet;

/**
 * When a generation must end: the one place that decides it, which the batcher's delivery,
 * {@link Completion}, {@link LanguageModel#request} and the server all consult.
 *
 * <ul>
 *   <li>the <b>context room</b>: a prompt of {@code n} tokens may be followed by
 *       {@code contextLength - n} tokens at most; a prompt that leaves none is refused;
 *   <li>the <b>token limit</b>: {@code maxTokens}, capped by the room ({@link FinishReason#LENGTH});
 *   <li>the <b>end of generation</b>: EOS or a control token that ends a chat turn, unless the
 *       options ignore EOS ({@link FinishReason#STOP}, the token not part of the text);
 *   <li><b>stop strings</b> are text, not tokens: {@link Completion}'s text streamer finds them
 *       (also across tokens) and ends the stream, which ends the sequence as a cancel does;
 *   <li><b>cancel and deadline</b> are the stream's own ({@code TokenStream}); every part sees
 *       them as the stream having ended.
 * </ul>
 */
public final class SequenceLimits {

    /** What a generated token means for its sequence. */
    public enum Verdict {
        /** It goes on. */
        CONTINUE,
        /** It ended at an end-of-generation token (not part of its text). */
        END_OF_GENERATION,
        /** It generated its last allowed token. */
        LENGTH
    }

    private final int contextLength;
    private final BitSet endOfGeneration;

    SequenceLimits(int contextLength, BitSet endOfGeneration) {
        this.contextLength = contextLength;
        this.endOfGeneration = (BitSet) endOfGeneration.clone();
    }

    public int contextLength() {
        return contextLength;
    }

    /**
     * Tokens a prompt of {@code promptLength} tokens may be followed by.
     *
     * @throws IllegalArgumentException when it leaves no room for one token
     */
    public int room(int promptLength) {
        int room = contextLength - promptLength;
        if (room < 1) {
            throw new IllegalArgumentException("prompt of " + promptLength + " tokens leaves no room in the context of "
                    + contextLength);
        }
        return room;
    }

    /**
     * The token limit of a generation asking for {@code requested} tokens after a prompt of
     * {@code promptLength}: {@code requested} capped by the room.
     *
     * @throws IllegalArgumentException when the prompt leaves no room for one token
     */
    public int maxTokens(int promptLength, int requested) {
        return Math.min(requested, room(promptLength));
    }

    /** Whether {@code token} ends a generation: the EOS token, or a control token that ends a turn. */
    public boolean endsGeneration(int token) {
        return token >= 0 && endOfGeneration.get(token);
    }

    /**
     * The verdict on a sequence whose {@code count}-th generated token (1-based) is {@code token}.
     *
     * @param maxTokens its token limit, from {@link #maxTokens}
     */
    public Verdict after(int token, int count, int maxTokens, boolean ignoreEos) {
        if (!ignoreEos && endsGeneration(token)) {
            return Verdict.END_OF_GENERATION;
        }
        return count >= maxTokens ? Verdict.LENGTH : Verdict.CONTINUE;
    }
}
