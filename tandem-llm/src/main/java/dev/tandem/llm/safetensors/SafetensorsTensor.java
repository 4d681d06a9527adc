package dev.tandem.llm.safetensors;

import java.util.Arrays;

/**
 * One tensor of a safetensors file, as its header describes it.
 *
 * @param name  its name, e.g. {@code model.layers.0.self_attn.q_proj.weight}
 * @param dtype how its elements are stored
 * @param shape its shape, outermost first (PyTorch's order: a {@code Linear} weight is
 *              {@code [out_features, in_features]}, one output per row); empty for a scalar
 * @param begin where its bytes start, relative to the start of the data (after the header)
 * @param end   where they end, exclusive
 */
public record SafetensorsTensor(String name, SafetensorsDtype dtype, long[] shape, long begin, long end) {

    public SafetensorsTensor {
        shape = shape.clone();
    }

    @Override
    public long[] shape() {
        return shape.clone();
    }

    /** Elements in all (1 for a scalar). */
    public long elements() {
        long n = 1;
        for (long d : shape) {
            n *= d;
        }
        return n;
    }

    /** Bytes: {@code end - begin}. */
    public long bytes() {
        return end - begin;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof SafetensorsTensor t && name.equals(t.name) && dtype == t.dtype
                && Arrays.equals(shape, t.shape) && begin == t.begin && end == t.end;
    }

    @Override
    public int hashCode() {
        return name.hashCode() * 31 + Arrays.hashCode(shape);
    }

    @Override
    public String toString() {
        return name + " " + dtype + " " + Arrays.toString(shape);
    }
}
