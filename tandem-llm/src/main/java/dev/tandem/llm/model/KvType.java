package dev.tandem.llm.model;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * The element type of the paged KV cache: how a key or value row computed in f32 is kept.
 *
 * <p>{@link #F16}, the default, is llama.cpp's default cache ({@code -ctk f16 -ctv f16}): half the
 * bytes of f32 to keep resident and for attention to read, for a rounding of each key and value
 * to 11 significant bits. A value is rounded to the nearest f16, ties to even
 * ({@link Float#floatToFloat16}, as x86's {@code vcvtps2ph} rounds in llama.cpp); one beyond
 * f16's range (magnitude from 65520 up) becomes an infinity of its sign, as it does in
 * llama.cpp's cache. Attention widens each element back exactly ({@link Float#float16ToFloat}).
 * {@link #F32} keeps the rows as computed.
 */
public enum KvType {
    F16(Short.BYTES),
    F32(Float.BYTES);

    private static final ValueLayout.OfFloat F32_LAYOUT =
            ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort F16_LAYOUT =
            ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final int bytes;

    KvType(int bytes) {
        this.bytes = bytes;
    }

    /** Bytes of one element. */
    public int bytes() {
        return bytes;
    }

    /** The type's name as llama.cpp's {@code -ctk} spells it, in lower case: {@code f16}, {@code f32}. */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * The type named {@code value}, in either case ({@code f16}, {@code F32}).
     *
     * @throws IllegalArgumentException for any other value, naming the allowed ones
     */
    public static KvType parse(String value) {
        for (KvType type : values()) {
            if (type.name().equalsIgnoreCase(value)) {
                return type;
            }
        }
        throw new IllegalArgumentException("expected one of "
                + Arrays.stream(values()).map(KvType::label).collect(Collectors.joining(", ")) + " but was '" + value + "'");
    }

    /**
     * Stores the {@code n} f32 at byte {@code fromOffset} of {@code from} as {@code n} elements of
     * this type from byte {@code toOffset} of {@code to}.
     */
    void store(MemorySegment from, long fromOffset, MemorySegment to, long toOffset, int n) {
        if (this == F32) {
            MemorySegment.copy(from, fromOffset, to, toOffset, (long) n * Float.BYTES);
            return;
        }
        for (int i = 0; i < n; i++) {
            to.set(F16_LAYOUT, toOffset + (long) i * Short.BYTES,
                    Float.floatToFloat16(from.get(F32_LAYOUT, fromOffset + (long) i * Float.BYTES)));
        }
    }
}
