package dev.tandem.llm.gguf;

import java.util.Arrays;

/**
 * One tensor of a GGUF file, as its header describes it.
 *
 * @param name   its name, e.g. {@code blk.0.attn_q.weight}
 * @param dims   its shape in ggml's order: {@code dims[0]} is the length of a row (the fastest
 *               varying), {@code dims[1]} the number of rows of a matrix
 * @param type   how its elements are stored
 * @param offset where its bytes start, relative to the start of the file's data section
 * @param bytes  how many bytes it has
 */
public record GgufTensor(String name, long[] dims, GgmlType type, long offset, long bytes) {

    public GgufTensor {
        dims = dims.clone();
    }

    @Override
    public long[] dims() {
        return dims.clone();
    }

    /** Elements in all. */
    public long elements() {
        long n = 1;
        for (long d : dims) {
            n *= d;
        }
        return n;
    }

    /** Length of a row, {@code dims[0]}. */
    public long rowLength() {
        return dims.length == 0 ? 1 : dims[0];
    }

    /** Rows: the product of every dimension but the first. */
    public long rows() {
        long n = 1;
        for (int i = 1; i < dims.length; i++) {
            n *= dims[i];
        }
        return n;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof GgufTensor t && name.equals(t.name) && Arrays.equals(dims, t.dims) && type.equals(t.type)
                && offset == t.offset && bytes == t.bytes;
    }

    @Override
    public int hashCode() {
        return name.hashCode() * 31 + Arrays.hashCode(dims);
    }

    @Override
    public String toString() {
        return name + " " + type.name() + " " + Arrays.toString(dims);
    }
}
