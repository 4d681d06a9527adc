package dev.tandem;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The bytes a step read back at its end, delivered in step order to the request's stream.
 *
 * @param requestId the request
 * @param step      the step's index within the request (0, 1, 2, ...)
 * @param bytes     the token region's bytes (a copy owned by this token)
 */
public record Token(long requestId, long step, byte[] bytes) {

    /** The first four bytes as a little-endian int. */
    public int asInt() {
        return ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).getInt(0);
    }

    /** The bytes as little-endian ints, one per sequence of a batched step. */
    public int[] asInts() {
        int[] out = new int[bytes.length / Integer.BYTES];
        ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).asIntBuffer().get(out);
        return out;
    }

    /** The first eight bytes as a little-endian long. */
    public long asLong() {
        return ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
    }

    @Override
    public String toString() {
        return "Token[request=" + requestId + ", step=" + step + ", " + bytes.length + " bytes]";
    }
}
