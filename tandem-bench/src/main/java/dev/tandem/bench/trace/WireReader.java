package dev.tandem.bench.trace;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Reads protocol buffers wire format from a byte range, one field at a time. A malformed
 * field throws {@link Malformed} with the offset, never reads outside the range.
 */
final class WireReader {
    static final int VARINT = 0;
    static final int FIXED64 = 1;
    static final int LENGTH = 2;
    static final int FIXED32 = 5;

    /** The bytes are not valid wire format. */
    static final class Malformed extends Exception {
        Malformed(String message) {
            super(message, null, false, false);
        }
    }

    private final byte[] buf;
    private int pos;
    private final int limit;
    private int field;
    private int wireType;
    private int valueStart;
    private int valueEnd;

    WireReader(byte[] buf, int offset, int length) {
        this.buf = buf;
        this.pos = offset;
        this.limit = offset + length;
    }

    /** Moves to the next field; false at the end of the range. */
    boolean next() throws Malformed {
        if (pos >= limit) {
            return false;
        }
        int at = pos;
        long tag = varint();
        field = (int) (tag >>> 3);
        wireType = (int) (tag & 7);
        if (field <= 0 || tag >>> 3 > Integer.MAX_VALUE) {
            throw new Malformed("field number " + (tag >>> 3) + " at byte " + at);
        }
        switch (wireType) {
            case VARINT -> {
                valueStart = pos;
                varint();
                valueEnd = pos;
            }
            case FIXED64 -> skipFixed(8);
            case FIXED32 -> skipFixed(4);
            case LENGTH -> {
                long length = varint();
                if (length < 0 || length > limit - pos) {
                    throw new Malformed("length " + length + " of field " + field + " at byte " + at
                            + " runs past its message (" + (limit - pos) + " bytes left)");
                }
                valueStart = pos;
                pos += (int) length;
                valueEnd = pos;
            }
            default -> throw new Malformed("wire type " + wireType + " of field " + field + " at byte " + at);
        }
        return true;
    }

    int field() {
        return field;
    }

    int wireType() {
        return wireType;
    }

    /** The current field's value as an integer (varint or fixed). */
    long longValue() throws Malformed {
        return switch (wireType) {
            case VARINT -> {
                int save = pos;
                pos = valueStart;
                long v = varint();
                pos = save;
                yield v;
            }
            case FIXED64, FIXED32 -> {
                long v = 0;
                for (int i = valueEnd - 1; i >= valueStart; i--) {
                    v = (v << 8) | (buf[i] & 0xFF);
                }
                yield v;
            }
            default -> throw new Malformed("field " + field + " is not a number (wire type " + wireType + ")");
        };
    }

    String stringValue() throws Malformed {
        requireLength();
        return new String(buf, valueStart, valueEnd - valueStart, StandardCharsets.UTF_8);
    }

    /** A reader over the current length-delimited field's bytes. */
    WireReader message() throws Malformed {
        requireLength();
        return new WireReader(buf, valueStart, valueEnd - valueStart);
    }

    /** The varints packed in the current length-delimited field. */
    long[] packedVarints() throws Malformed {
        requireLength();
        WireReader inner = new WireReader(buf, valueStart, valueEnd - valueStart);
        long[] out = new long[valueEnd - valueStart];
        int n = 0;
        while (inner.pos < inner.limit) {
            out[n++] = inner.varint();
        }
        return Arrays.copyOf(out, n);
    }

    private void requireLength() throws Malformed {
        if (wireType != LENGTH) {
            throw new Malformed("field " + field + " is not length-delimited (wire type " + wireType + ")");
        }
    }

    private void skipFixed(int size) throws Malformed {
        if (limit - pos < size) {
            throw new Malformed("field " + field + " runs past its message");
        }
        valueStart = pos;
        pos += size;
        valueEnd = pos;
    }

    private long varint() throws Malformed {
        long result = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (pos >= limit) {
                throw new Malformed("varint runs past its message at byte " + pos);
            }
            byte b = buf[pos++];
            result |= (long) (b & 0x7F) << shift;
            if ((b & 0x80) == 0) {
                return result;
            }
        }
        throw new Malformed("varint longer than 10 bytes at byte " + pos);
    }
}
