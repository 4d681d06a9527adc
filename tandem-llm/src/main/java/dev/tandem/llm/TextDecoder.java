package dev.tandem.llm;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Turns a stream of token bytes into text deltas that are valid UTF-8 at every token boundary,
 * and finds stop strings in it, also across tokens.
 *
 * <p>Bytes of a character not yet complete are held until it is (a lead byte and fewer of its
 * continuation bytes than it announces); malformed bytes become U+FFFD once it is clear they
 * cannot complete. Text that could be the start of a stop string is held until it is clear either
 * way: when the string follows, the text before it is the last delta and nothing of the stop
 * string is emitted; when it does not, the held text is released, in order. Not thread-safe.
 */
public final class TextDecoder {
    private final List<String> stops;
    private final ByteArrayOutputStream pending = new ByteArrayOutputStream();
    private final StringBuilder held = new StringBuilder();
    private String stopped;

    public TextDecoder(List<String> stops) {
        this.stops = List.copyOf(stops);
    }

    /** The stop string that ended the text, or null. */
    public String stopped() {
        return stopped;
    }

    /** The text these bytes complete; empty once a stop string was found. */
    public String accept(byte[] bytes) {
        if (stopped != null) {
            return "";
        }
        pending.writeBytes(bytes);
        byte[] all = pending.toByteArray();
        int complete = completePrefix(all);
        pending.reset();
        pending.write(all, complete, all.length - complete);
        held.append(new String(all, 0, complete, StandardCharsets.UTF_8));
        return release();
    }

    /** What is still held, at the end of the stream: incomplete bytes as U+FFFD. */
    public String finish() {
        if (stopped != null) {
            return "";
        }
        held.append(new String(pending.toByteArray(), StandardCharsets.UTF_8));
        pending.reset();
        String rest = held.toString();
        held.setLength(0);
        return rest;
    }

    private String release() {
        String text = held.toString();
        int first = -1;
        for (String stop : stops) {
            int at = text.indexOf(stop);
            if (at >= 0 && (first < 0 || at < first)) {
                first = at;
                stopped = stop;
            }
        }
        if (first >= 0) {
            held.setLength(0);
            pending.reset();
            return text.substring(0, first);
        }
        int keep = 0;
        for (String stop : stops) {
            for (int n = Math.min(stop.length() - 1, text.length()); n > keep; n--) {
                if (text.regionMatches(text.length() - n, stop, 0, n)) {
                    keep = n;
                    break;
                }
            }
        }
        held.setLength(0);
        held.append(text, text.length() - keep, text.length());
        return text.substring(0, text.length() - keep);
    }

    /**
     * The length of the longest prefix of {@code b} that does not end inside a character: all but
     * a trailing lead byte with fewer continuation bytes than it announces.
     */
    static int completePrefix(byte[] b) {
        int n = b.length;
        // Look back at most 3 bytes for the lead byte of the last character.
        for (int back = 1; back <= Math.min(3, n); back++) {
            int v = b[n - back] & 0xFF;
            if ((v & 0xC0) == 0x80) {
                continue; // a continuation byte: keep looking for its lead
            }
            int length = v >= 0xF0 && v <= 0xF4 ? 4 : v >= 0xE0 ? 3 : v >= 0xC2 && v < 0xE0 ? 2 : 1;
            if (v >= 0xF5) {
                length = 1; // never a lead byte
            }
            return length > back ? n - back : n;
        }
        return n;
    }
}
