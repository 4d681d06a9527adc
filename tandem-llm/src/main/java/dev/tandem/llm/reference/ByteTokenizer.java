package dev.tandem.llm.reference;

import java.nio.charset.StandardCharsets;

/**
 * Bytes as tokens: tokens 0 to 255 are the bytes of UTF-8 text, {@link #BOS} and {@link #EOS}
 * mark the beginning and end of a sequence.
 *
 * <p>A generated stream shows text as it grows through a {@link Decoder}, which holds back the
 * first bytes of a character until its last byte arrives, so a character split across tokens
 * is never shown broken.
 */
public final class ByteTokenizer {

    /** Beginning of sequence. */
    public static final int BOS = 256;

    /** End of sequence: the stop token of generation. */
    public static final int EOS = 257;

    /** Tokens: 256 bytes and the two markers. */
    public static final int VOCAB = 258;

    private ByteTokenizer() {}

    /** {@link #BOS}, then the UTF-8 bytes of {@code text}. */
    public static int[] encode(String text) {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        int[] tokens = new int[bytes.length + 1];
        tokens[0] = BOS;
        for (int i = 0; i < bytes.length; i++) {
            tokens[i + 1] = bytes[i] & 0xFF;
        }
        return tokens;
    }

    /** The text of a whole token sequence, as a {@link Decoder} would show it once complete. */
    public static String decode(int[] tokens) {
        Decoder decoder = new Decoder();
        StringBuilder out = new StringBuilder();
        for (int token : tokens) {
            out.append(decoder.append(token));
        }
        return out.append(decoder.finish()).toString();
    }

    /**
     * Incremental UTF-8 decoding of a token stream for display. Not thread-safe: one per stream.
     *
     * <p>Bytes that cannot be part of well-formed UTF-8 (a stray continuation byte, an overlong or
     * surrogate encoding, a sequence cut short by another lead byte or a marker) show as U+FFFD.
     * C0 controls other than tab and newline, DEL and C1 controls show as U+00B7 (middle dot), so
     * a stream cannot move a terminal's cursor. Markers and other non-byte tokens show nothing.
     */
    public static final class Decoder {
        private static final char REPLACEMENT = '\uFFFD';
        private static final char CONTROL = '\u00B7';

        private int pending; // code point bits so far
        private int needed; // continuation bytes still to come
        private int seen; // bytes of the current sequence so far
        private int min; // smallest code point the current sequence may encode

        /** The text that {@code token} completes: empty while a character is incomplete. */
        public String append(int token) {
            if (token < 0 || token > 0xFF) {
                return needed > 0 ? abandon() : "";
            }
            StringBuilder out = new StringBuilder(2);
            if (needed > 0) {
                if ((token & 0xC0) == 0x80) {
                    pending = (pending << 6) | (token & 0x3F);
                    seen++;
                    if (--needed == 0) {
                        emit(out, pending, min);
                    } else if (seen == 2 && !plausibleSecondByte(pending, needed)) {
                        out.append(abandon());
                    }
                    return out.toString();
                }
                out.append(abandon()); // cut short; the byte starts afresh
            }
            if (token < 0x80) {
                show(out, token);
            } else if (token >= 0xC2 && token <= 0xDF) {
                start(token & 0x1F, 1, 0x80);
            } else if (token >= 0xE0 && token <= 0xEF) {
                start(token & 0x0F, 2, 0x800);
            } else if (token >= 0xF0 && token <= 0xF4) {
                start(token & 0x07, 3, 0x10000);
            } else {
                out.append(REPLACEMENT); // continuation without a lead, C0, C1, F5..FF
            }
            return out.toString();
        }

        /** What is still held back, as U+FFFD (the stream ended mid-character); resets the decoder. */
        public String finish() {
            return needed > 0 ? abandon() : "";
        }

        private void start(int bits, int continuation, int smallest) {
            pending = bits;
            needed = continuation;
            seen = 1;
            min = smallest;
        }

        /** After two bytes, whether the sequence can still encode a scalar value in its range. */
        private static boolean plausibleSecondByte(int bits, int stillNeeded) {
            if (stillNeeded == 1) { // 3-byte sequence: bits hold 4 + 6 bits
                return bits >= 0x20 && (bits < 0x360 || bits > 0x37F); // not overlong, not a surrogate
            }
            return bits >= 0x10 && bits < 0x110; // 4-byte: 3 + 6 bits, U+10000..U+10FFFF
        }

        private String abandon() {
            needed = 0;
            seen = 0;
            return String.valueOf(REPLACEMENT);
        }

        private void emit(StringBuilder out, int codePoint, int smallest) {
            seen = 0;
            if (codePoint < smallest || codePoint > 0x10FFFF || (codePoint >= 0xD800 && codePoint <= 0xDFFF)) {
                out.append(REPLACEMENT);
            } else {
                show(out, codePoint);
            }
        }

        private static void show(StringBuilder out, int codePoint) {
            boolean control = (codePoint < 0x20 && codePoint != '\n' && codePoint != '\t')
                    || (codePoint >= 0x7F && codePoint < 0xA0);
            if (control) {
                out.append(CONTROL);
            } else {
                out.appendCodePoint(codePoint);
            }
        }
    }
}
