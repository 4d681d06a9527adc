package dev.tandem.llm.gguf;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/** Widens a GGUF tensor's elements to f32 at load time. */
final class TensorConversion {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private TensorConversion() {}

    static void toF32(GgmlType type, MemorySegment src, MemorySegment dst, long elements) {
        switch (type.name()) {
            case "F32" -> MemorySegment.copy(src, 0, dst, 0, elements * Float.BYTES);
            case "F16" -> {
                for (long i = 0; i < elements; i++) {
                    dst.setAtIndex(F32, i, Float.float16ToFloat(src.getAtIndex(U16, i)));
                }
            }
            case "BF16" -> {
                for (long i = 0; i < elements; i++) {
                    dst.setAtIndex(F32, i, Float.intBitsToFloat((src.getAtIndex(U16, i) & 0xFFFF) << 16));
                }
            }
            case "Q8_0" -> {
                for (long b = 0; b < elements / 32; b++) {
                    long at = b * 34;
                    float d = Float.float16ToFloat(src.get(U16, at));
                    for (int j = 0; j < 32; j++) {
                        dst.setAtIndex(F32, b * 32 + j, d * src.get(ValueLayout.JAVA_BYTE, at + 2 + j));
                    }
                }
            }
            default -> throw new GgufException("tensor type " + type + " cannot be converted yet");
        }
    }
}
