package dev.tandem.trace;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * A protocol buffers wire-format encoder into a reusable growable array. One thread.
 *
 * <p>Nested messages are written in place: {@link #beginMessage} reserves one byte for the
 * length, which is all most of ours need; {@link #endMessage} moves the body right when its
 * length needs more. Every length is a minimal varint.
 */
final class ProtoEncoder {
    private static final int WIRE_VARINT = 0;
    private static final int WIRE_FIXED64 = 1;
    private static final int WIRE_LENGTH = 2;

    private byte[] buf = new byte[512];
    private int pos;
    private int[] open = new int[8];
    private int depth;

    void reset() {
        pos = 0;
        depth = 0;
    }

    int size() {
        return pos;
    }

    byte[] array() {
        return buf;
    }

    void varint(int field, long value) {
        tag(field, WIRE_VARINT);
        rawVarint(value);
    }

    void bool(int field, boolean value) {
        varint(field, value ? 1 : 0);
    }

    void fixed64(int field, long value) {
        tag(field, WIRE_FIXED64);
        ensure(8);
        for (int i = 0; i < 8; i++) {
            buf[pos++] = (byte) (value >>> (8 * i));
        }
    }

    void string(int field, String value) {
        bytes(field, value.getBytes(StandardCharsets.UTF_8));
    }

    void bytes(int field, byte[] value) {
        tag(field, WIRE_LENGTH);
        rawVarint(value.length);
        ensure(value.length);
        System.arraycopy(value, 0, buf, pos, value.length);
        pos += value.length;
    }

    /** Opens a nested message in field {@code field}; close it with {@link #endMessage}. */
    void beginMessage(int field) {
        tag(field, WIRE_LENGTH);
        ensure(1);
        if (depth == open.length) {
            open = Arrays.copyOf(open, depth * 2);
        }
        open[depth++] = pos;
        pos += 1;
    }

    /**
     * Closes the innermost open message. Moving its body never disturbs the messages around
     * it: they opened before it, and they are still open.
     */
    void endMessage() {
        int start = open[--depth];
        int length = pos - start - 1;
        int size = varintSize(length);
        if (size > 1) {
            ensure(size - 1);
            System.arraycopy(buf, start + 1, buf, start + size, length);
            pos += size - 1;
        }
        putVarint(buf, start, length);
    }

    static int varintSize(long value) {
        int n = 1;
        while ((value & ~0x7FL) != 0) {
            value >>>= 7;
            n++;
        }
        return n;
    }

    private void tag(int field, int wireType) {
        rawVarint(((long) field << 3) | wireType);
    }

    private void rawVarint(long value) {
        ensure(10);
        while ((value & ~0x7FL) != 0) {
            buf[pos++] = (byte) ((value & 0x7F) | 0x80);
            value >>>= 7;
        }
        buf[pos++] = (byte) value;
    }

    private void ensure(int more) {
        if (pos + more > buf.length) {
            buf = Arrays.copyOf(buf, Math.max(buf.length * 2, pos + more));
        }
    }

    /** Writes {@code value} as a minimal varint into {@code out} at {@code at}; returns the new offset. */
    static int putVarint(byte[] out, int at, long value) {
        while ((value & ~0x7FL) != 0) {
            out[at++] = (byte) ((value & 0x7F) | 0x80);
            value >>>= 7;
        }
        out[at++] = (byte) value;
        return at;
    }
}
