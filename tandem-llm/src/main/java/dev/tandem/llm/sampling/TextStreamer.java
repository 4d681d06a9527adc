package dev.tandem.llm.sampling;

import java.util.List;
import java.util.function.IntFunction;

/**
 * Turns one sequence's tokens, as they arrive, into text deltas for a caller: valid UTF-8 at every
 * token boundary, ending at the first stop string. Host side, one thread at a time.
 *
 * <h2>UTF-8</h2>
 *
 * A token's bytes (its tokenizer piece) may end inside a character; those bytes are held until
 * the character completes. Bytes that cannot complete a character become U+FFFD as soon as that is
 * clear, one per maximal invalid subpart (Unicode's recommended practice, as Python's
 * {@code errors="replace"} does; Java's decoder agrees except on encoded surrogates, {@code ED A0..BF},
 * which it folds into one); an incomplete character left at
 * {@link #finish()} becomes one U+FFFD. Deltas never split a surrogate pair.
 *
 * <h2>Stop strings</h2>
 *
 * The stream ends at the first occurrence of any stop string in the decoded text, also when it is
 * spread over several tokens; the stop string and anything after it are not emitted. Text that
 * could be the start of a stop string is held back until it is clear it is not, then released in
 * order. When several stop strings are found in the same token, the one starting first wins, then
 * the one listed first (llama.cpp's server also stops at the earliest position).
 */
public final class TextStreamer {

    private static final char REPLACEMENT = '\uFFFD';

    private final IntFunction<byte[]> tokenBytes;
    private final String[] stops;
    private final StringBuilder held = new StringBuilder();
    private final StringBuilder emitted = new StringBuilder();
    private final byte[] pending = new byte[4];
    private int pendingLength;
    private int pendingNeeded;
    private int stopIndex = -1;
    private boolean finished;

    /**
     * @param tokenBytes  a token's bytes (the tokenizer's piece), never null
     * @param stopStrings the strings that end the stream, none empty; may be empty
     */
    public TextStreamer(IntFunction<byte[]> tokenBytes, List<String> stopStrings) {
        if (tokenBytes == null) {
            throw new IllegalArgumentException("tokenBytes must not be null");
        }
        if (stopStrings == null) {
            throw new IllegalArgumentException("stopStrings must not be null (use List.of() for none)");
        }
        this.tokenBytes = tokenBytes;
        this.stops = stopStrings.toArray(String[]::new);
        for (int i = 0; i < stops.length; i++) {
            if (stops[i] == null || stops[i].isEmpty()) {
                throw new IllegalArgumentException("stop string " + i + " must not be empty");
            }
        }
    }

    /**
     * Feeds the next token; returns the text it releases, possibly empty.
     *
     * @throws IllegalStateException once the stream has stopped or finished
     */
    public String accept(int token) {
        if (stopped() || finished) {
            throw new IllegalStateException("the stream has " + (stopped() ? "stopped at stop string "
                    + quoted(stops[stopIndex]) : "finished") + "; token " + token + " comes after its end");
        }
        byte[] bytes = tokenBytes.apply(token);
        if (bytes == null) {
            throw new IllegalArgumentException("token " + token + " has no bytes");
        }
        for (byte b : bytes) {
            decode(b & 0xFF);
        }
        return release(false);
    }

    /**
     * Ends the stream: an incomplete character becomes U+FFFD, and held text that was waiting to
     * see whether a stop string follows is released. Returns that last delta; later calls return "".
     */
    public String finish() {
        if (finished || stopped()) {
            finished = true;
            return "";
        }
        if (pendingLength > 0) {
            held.append(REPLACEMENT);
            pendingLength = 0;
        }
        finished = true;
        return release(true);
    }

    /** Whether a stop string ended the stream. */
    public boolean stopped() {
        return stopIndex >= 0;
    }

    /** The stop string that ended the stream, or null. */
    public String stopString() {
        return stopIndex >= 0 ? stops[stopIndex] : null;
    }

    /** The index in the list of the stop string that ended the stream, or -1. */
    public int stopIndex() {
        return stopIndex;
    }

    /** Every delta released so far, concatenated. */
    public String text() {
        return emitted.toString();
    }

    private void decode(int b) {
        if (pendingLength > 0) {
            if (continues(b)) {
                pending[pendingLength++] = (byte) b;
                if (pendingLength == pendingNeeded) {
                    held.appendCodePoint(codePoint());
                    pendingLength = 0;
                }
                return;
            }
            held.append(REPLACEMENT); // the maximal subpart so far cannot complete
            pendingLength = 0;
        }
        if (b < 0x80) {
            held.append((char) b);
        } else if (b >= 0xC2 && b <= 0xF4) {
            pending[0] = (byte) b;
            pendingLength = 1;
            pendingNeeded = b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
        } else {
            held.append(REPLACEMENT); // a continuation byte without a lead, or a byte UTF-8 never uses
        }
    }

    /** Whether {@code b} validly continues the pending sequence (Unicode table 3-7). */
    private boolean continues(int b) {
        int lead = pending[0] & 0xFF;
        int low = 0x80;
        int high = 0xBF;
        if (pendingLength == 1) {
            if (lead == 0xE0) {
                low = 0xA0;
            } else if (lead == 0xED) {
                high = 0x9F;
            } else if (lead == 0xF0) {
                low = 0x90;
            } else if (lead == 0xF4) {
                high = 0x8F;
            }
        }
        return b >= low && b <= high;
    }

    private int codePoint() {
        int lead = pending[0] & 0xFF;
        int cp = pendingNeeded == 2 ? lead & 0x1F : pendingNeeded == 3 ? lead & 0x0F : lead & 0x07;
        for (int i = 1; i < pendingNeeded; i++) {
            cp = (cp << 6) | (pending[i] & 0x3F);
        }
        return cp;
    }

    /** Ends at a stop string found in the held text, or releases all of it but a possible stop-string start. */
    private String release(boolean all) {
        int stopAt = -1;
        for (int s = 0; s < stops.length; s++) {
            int at = held.indexOf(stops[s]);
            if (at >= 0 && (stopAt < 0 || at < stopAt)) {
                stopAt = at;
                stopIndex = s;
            }
        }
        int end;
        if (stopAt >= 0) {
            end = stopAt;
        } else if (all) {
            end = held.length();
        } else {
            end = held.length() - longestSuffixStartingAStop();
        }
        if (end > 0 && end < held.length() && Character.isHighSurrogate(held.charAt(end - 1))) {
            end--; // never split a pair (a stop string cannot start with a low surrogate)
        }
        String delta = held.substring(0, end);
        if (stopAt >= 0) {
            held.setLength(0);
        } else {
            held.delete(0, end);
        }
        emitted.append(delta);
        return delta;
    }

    /** The length of the longest suffix of the held text that is a proper prefix of a stop string. */
    private int longestSuffixStartingAStop() {
        int longest = 0;
        for (String stop : stops) {
            int max = Math.min(stop.length() - 1, held.length());
            for (int length = max; length > longest; length--) {
                if (heldEndsWith(stop, length)) {
                    longest = length;
                    break;
                }
            }
        }
        return longest;
    }

    /** Whether the held text ends with the first {@code length} characters of {@code stop}. */
    private boolean heldEndsWith(String stop, int length) {
        int from = held.length() - length;
        for (int i = 0; i < length; i++) {
            if (held.charAt(from + i) != stop.charAt(i)) {
                return false;
            }
        }
        return true;
    }

    private static String quoted(String s) {
        return '"' + s.replace("\n", "\\n") + '"';
    }

    @Override
    public String toString() {
        return "TextStreamer[emitted=" + emitted.length() + " chars, held=" + held.length() + ", stopped=" + stopped()
                + "]";
    }
}
