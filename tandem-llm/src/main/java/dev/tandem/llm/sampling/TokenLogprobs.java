package dev.tandem.llm.sampling;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The log-probability of a generated token and of the most likely tokens at its step, from the
 * model's own distribution: the log-softmax of the raw logits, before the grammar's mask, the
 * penalties and the temperature (what OpenAI reports). Natural logarithms.
 *
 * @param token       the token drawn
 * @param logprob     its log-probability
 * @param topTokens   the {@code n} most likely tokens, most likely first (ties: the smaller id)
 * @param topLogprobs their log-probabilities, in the same order
 */
public record TokenLogprobs(int token, float logprob, int[] topTokens, float[] topLogprobs) {

    /** The most alternatives a request may ask for (OpenAI's {@code top_logprobs} bound). */
    public static final int MAX_TOP = 20;

    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat F32 =
            ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    public TokenLogprobs {
        if (topTokens.length != topLogprobs.length) {
            throw new IllegalArgumentException("topTokens and topLogprobs differ in length: " + topTokens.length
                    + " and " + topLogprobs.length);
        }
        topTokens = topTokens.clone();
        topLogprobs = topLogprobs.clone();
    }

    @Override
    public int[] topTokens() {
        return topTokens.clone();
    }

    @Override
    public float[] topLogprobs() {
        return topLogprobs.clone();
    }

    /** The bytes of the encoded form with room for {@code top} alternatives: token, logprob, count, pairs. */
    public static int bytes(int top) {
        return 12 + 8 * top;
    }

    /** Writes the encoded form at {@code offset} (little-endian), in {@link #bytes bytes(topTokens.length)}. */
    public void writeTo(MemorySegment to, long offset) {
        to.set(I32, offset, token);
        to.set(F32, offset + 4, logprob);
        to.set(I32, offset + 8, topTokens.length);
        for (int i = 0; i < topTokens.length; i++) {
            to.set(I32, offset + 12 + 8L * i, topTokens[i]);
            to.set(F32, offset + 16 + 8L * i, topLogprobs[i]);
        }
    }

    /** Reads what {@link #writeTo} wrote. */
    public static TokenLogprobs readFrom(MemorySegment from, long offset) {
        int token = from.get(I32, offset);
        float logprob = from.get(F32, offset + 4);
        int n = from.get(I32, offset + 8);
        if (n < 0 || n > MAX_TOP || offset + bytes(n) > from.byteSize()) {
            throw new IllegalArgumentException("no encoded logprobs at byte " + offset + ": count " + n);
        }
        int[] ids = new int[n];
        float[] lps = new float[n];
        for (int i = 0; i < n; i++) {
            ids[i] = from.get(I32, offset + 12 + 8L * i);
            lps[i] = from.get(F32, offset + 16 + 8L * i);
        }
        return new TokenLogprobs(token, logprob, ids, lps);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TokenLogprobs t && t.token == token && Float.compare(t.logprob, logprob) == 0
                && java.util.Arrays.equals(t.topTokens, topTokens) && java.util.Arrays.equals(t.topLogprobs, topLogprobs);
    }

    @Override
    public int hashCode() {
        return token * 31 + Float.hashCode(logprob);
    }

    @Override
    public String toString() {
        StringBuilder b = new StringBuilder("TokenLogprobs[" + token + ": " + logprob + ", top");
        for (int i = 0; i < topTokens.length; i++) {
            b.append(' ').append(topTokens[i]).append('=').append(topLogprobs[i]);
        }
        return b.append(']').toString();
    }
}
