package dev.tandem.llm.gguf;

import dev.tandem.kernels.Ops;
import dev.tandem.kernels.TensorType;
import java.lang.foreign.MemorySegment;

/** Widens a GGUF tensor's elements to f32 at load time, with the kernels' dequantisers. */
final class TensorConversion {
    private TensorConversion() {}

    /** The kernels' type of a GGUF type; an unsupported one is an error naming it. */
    static TensorType kernelType(GgmlType type) {
        return TensorType.fromGgmlId(type.id());
    }

    static void toF32(GgmlType type, MemorySegment src, MemorySegment dst, long elements) {
        Ops.preferred().dequantize(kernelType(type), src, 0, dst, 0, elements);
    }
}
