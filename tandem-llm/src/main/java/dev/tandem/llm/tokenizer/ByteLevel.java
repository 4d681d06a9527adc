package dev.tandem.llm.tokenizer;

import java.util.Arrays;

/**
 * GPT-2's byte-to-unicode table: every byte maps to one printable character, so a byte-level BPE
 * vocabulary is a vocabulary of strings. Printable Latin-1 bytes map to themselves, the other 68
 * (controls, space, DEL, NBSP, soft hyphen) to U+0100 and up in byte order.
 */
final class ByteLevel {
    private static final char[] TO_CHAR = new char[256];
    private static final int[] TO_BYTE = new int[0x100 + 68];

    static {
        Arrays.fill(TO_BYTE, -1);
        int next = 0x100;
        for (int b = 0; b < 256; b++) {
            boolean printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            char c = printable ? (char) b : (char) next++;
            TO_CHAR[b] = c;
            TO_BYTE[c] = b;
        }
    }

    private ByteLevel() {}

    static char charOf(int b) {
        return TO_CHAR[b & 0xFF];
    }

    /** The byte a character stands for, or -1 when it stands for none. */
    static int byteOf(int c) {
        return c >= 0 && c < TO_BYTE.length ? TO_BYTE[c] : -1;
    }

    /** The byte-level string of some UTF-8 bytes. */
    static String encode(byte[] utf8) {
        char[] out = new char[utf8.length];
        for (int i = 0; i < utf8.length; i++) {
            out[i] = TO_CHAR[utf8[i] & 0xFF];
        }
        return new String(out);
    }
}
