package dev.tandem.llm.safetensors;

import dev.tandem.kernels.TensorType;

/**
 * The safetensors dtypes tandem reads: the float types model checkpoints are published in. Every
 * other dtype of the format ({@code F64}, {@code I64}, {@code U8}, {@code BOOL}, the 8-bit floats,
 * ...) is an error naming it.
 */
public enum SafetensorsDtype {
    F32(4, TensorType.F32),
    F16(2, TensorType.F16),
    BF16(2, TensorType.BF16);

    private final int bytes;
    private final TensorType kernelType;

    SafetensorsDtype(int bytes, TensorType kernelType) {
        this.bytes = bytes;
        this.kernelType = kernelType;
    }

    /** Bytes of one element. */
    public int bytes() {
        return bytes;
    }

    /** The kernels' type of the same layout, which {@link dev.tandem.kernels.QuantOps} widens to f32. */
    public TensorType kernelType() {
        return kernelType;
    }

    /** The dtype spelled {@code name} exactly (the format is case-sensitive), or {@code null}. */
    public static SafetensorsDtype byName(String name) {
        for (SafetensorsDtype d : values()) {
            if (d.name().equals(name)) {
                return d;
            }
        }
        return null;
    }
}
