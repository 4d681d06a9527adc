package dev.tandem.llm.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;

/** How a row computed in f32 lands in the cache: f16 rounded to nearest even, as llama.cpp's F16C rounds it; f32 as is. */
class KvTypeTest {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort F16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** f32 values and the f16 bits each must become. */
    private static final float[] VALUES = {
        1f, -2.5f,
        1f + 0x1p-11f, // halfway between 1 and the next f16: ties to the even 1
        1f + 3 * 0x1p-11f, // halfway between 1 + 2^-10 and 1 + 2^-9: ties to the even 1 + 2^-9
        1f + 0x1p-11f + 0x1p-20f, // just above halfway: up
        65504f, // the largest f16
        65519.99f, // rounds down to it
        65520f, // rounds up past it: infinity, as in llama.cpp
        -1e6f, // beyond the range: negative infinity
        0x1p-24f, // the smallest subnormal
        0x1p-26f, // below half of it: zero
        -0f,
        Float.POSITIVE_INFINITY,
    };

    private static final short[] HALVES = {
        0x3c00, (short) 0xc100, 0x3c00, 0x3c02, 0x3c01, 0x7bff, 0x7bff, 0x7c00, (short) 0xfc00, 0x0001, 0x0000,
        (short) 0x8000, 0x7c00,
    };

    @Test
    void f16RoundsToNearestEvenAndOverflowsToInfinity() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment row = arena.allocate(4 + (long) VALUES.length * Float.BYTES);
            MemorySegment cache = arena.allocate(6 + (long) VALUES.length * Short.BYTES);
            for (int i = 0; i < VALUES.length; i++) {
                row.set(F32, 4 + (long) i * Float.BYTES, VALUES[i]);
            }
            KvType.F16.store(row, 4, cache, 6, VALUES.length);
            for (int i = 0; i < VALUES.length; i++) {
                short stored = cache.get(F16, 6 + (long) i * Short.BYTES);
                assertThat(stored).as("f16 of %s", VALUES[i]).isEqualTo(HALVES[i]);
                assertThat(stored).as("Float.floatToFloat16 of %s", VALUES[i]).isEqualTo(Float.floatToFloat16(VALUES[i]));
            }
            assertThat(Float.isNaN(Float.float16ToFloat(storeOne(arena, Float.NaN)))).isTrue();
        }
    }

    private static short storeOne(Arena arena, float value) {
        MemorySegment row = arena.allocate(Float.BYTES);
        MemorySegment cache = arena.allocate(Short.BYTES);
        row.set(F32, 0, value);
        KvType.F16.store(row, 0, cache, 0, 1);
        return cache.get(F16, 0);
    }

    @Test
    void f32KeepsTheRowAsComputed() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment row = arena.allocate((long) VALUES.length * Float.BYTES);
            MemorySegment cache = arena.allocate(8 + (long) VALUES.length * Float.BYTES);
            for (int i = 0; i < VALUES.length; i++) {
                row.set(F32, (long) i * Float.BYTES, VALUES[i]);
            }
            KvType.F32.store(row, 0, cache, 8, VALUES.length);
            for (int i = 0; i < VALUES.length; i++) {
                assertThat(Float.floatToRawIntBits(cache.get(F32, 8 + (long) i * Float.BYTES)))
                        .isEqualTo(Float.floatToRawIntBits(VALUES[i]));
            }
        }
    }

    @Test
    void bytesPerElement() {
        assertThat(KvType.F16.bytes()).isEqualTo(2);
        assertThat(KvType.F32.bytes()).isEqualTo(4);
    }

    @Test
    void parsesEitherCaseAndNamesTheAllowedValuesOtherwise() {
        assertThat(KvType.parse("f16")).isEqualTo(KvType.F16);
        assertThat(KvType.parse("F32")).isEqualTo(KvType.F32);
        assertThat(KvType.F16.label()).isEqualTo("f16");
        assertThatThrownBy(() -> KvType.parse("q8_0")).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("expected one of f16, f32 but was 'q8_0'");
        assertThatThrownBy(() -> KvType.parse(null)).hasMessage("expected one of f16, f32 but was 'null'");
    }
}
