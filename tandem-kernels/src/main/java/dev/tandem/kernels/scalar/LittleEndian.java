package dev.tandem.kernels.scalar;

import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/** The value layouts of every tensor this module reads: little-endian and unaligned. */
public final class LittleEndian {

    public static final ByteOrder ORDER = ByteOrder.LITTLE_ENDIAN;

    public static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ORDER);

    /** An IEEE 754 binary16 value, read as its bits and widened with {@link Float#float16ToFloat}. */
    public static final ValueLayout.OfShort F16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ORDER);

    public static final ValueLayout.OfByte I8 = ValueLayout.JAVA_BYTE;

    /** A 32-bit field of bits, such as q5_0's fifth bits. */
    public static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ORDER);

    private LittleEndian() {}
}
