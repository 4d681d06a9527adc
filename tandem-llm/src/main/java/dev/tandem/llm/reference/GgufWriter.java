package dev.tandem.llm.reference;

import dev.tandem.llm.gguf.GgmlType;
import dev.tandem.llm.gguf.GgufFile;
import dev.tandem.llm.gguf.GgufValue;
import dev.tandem.llm.gguf.GgufValueType;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes a GGUF file (version 3 by default, or 2): metadata, tensor infos, aligned data. Used to
 * write test checkpoints and the files a peer engine reads in benchmarks; {@link GgufFile} reads
 * back exactly what it writes. Not thread-safe.
 */
public final class GgufWriter {
    private final Map<String, GgufValue> metadata = new LinkedHashMap<>();
    private final List<Entry> tensors = new ArrayList<>();
    private int version = 3;
    private int alignment = GgufFile.DEFAULT_ALIGNMENT;

    private record Entry(String name, long[] dims, GgmlType type, MemorySegment data) {}

    public GgufWriter version(int value) {
        if (value != 2 && value != 3) {
            throw new IllegalArgumentException("version = " + value + " must be 2 or 3");
        }
        this.version = value;
        return this;
    }

    /** Sets the data alignment and writes it as {@code general.alignment} when it is not the default. */
    public GgufWriter alignment(int value) {
        if (value <= 0 || Integer.bitCount(value) != 1) {
            throw new IllegalArgumentException("alignment = " + value + " must be a power of two");
        }
        this.alignment = value;
        if (value != GgufFile.DEFAULT_ALIGNMENT) {
            metadata.put("general.alignment", GgufValue.uint32(value));
        } else {
            metadata.remove("general.alignment");
        }
        return this;
    }

    public GgufWriter put(String key, GgufValue value) {
        metadata.put(key, value);
        return this;
    }

    public GgufWriter put(String key, String value) {
        return put(key, GgufValue.of(value));
    }

    /** Puts a u32. */
    public GgufWriter put(String key, int value) {
        return put(key, GgufValue.uint32(value));
    }

    public GgufWriter put(String key, float value) {
        return put(key, GgufValue.float32(value));
    }

    public GgufWriter put(String key, boolean value) {
        return put(key, GgufValue.bool(value));
    }

    /**
     * Adds a tensor; {@code data} must hold exactly its bytes.
     *
     * @param dims ggml order: {@code dims[0]} is the row length
     */
    public GgufWriter tensor(String name, GgmlType type, long[] dims, MemorySegment data) {
        long elements = 1;
        for (long d : dims) {
            elements *= d;
        }
        long rowBytes = type.rowBytes(dims.length == 0 ? 1 : dims[0]);
        if (rowBytes < 0) {
            throw new IllegalArgumentException("tensor " + name + ": a " + type.name() + " row holds a multiple of "
                    + type.blockSize() + " values, and " + java.util.Arrays.toString(dims) + " has rows of " + dims[0]);
        }
        long bytes = rowBytes * (elements / (dims.length == 0 ? 1 : dims[0]));
        if (data.byteSize() != bytes) {
            throw new IllegalArgumentException("tensor " + name + ": " + data.byteSize() + " bytes given, a "
                    + type.name() + " tensor of " + java.util.Arrays.toString(dims) + " has " + bytes);
        }
        tensors.add(new Entry(name, dims.clone(), type, data));
        return this;
    }

    /** Writes the file, replacing {@code path}. */
    public void write(Path path) throws IOException {
        try (OutputStream out = new BufferedOutputStream(Files.newOutputStream(path), 1 << 16)) {
            Counting c = new Counting(out);
            c.u32(GgufFile.MAGIC);
            c.u32(version);
            c.u64(tensors.size());
            c.u64(metadata.size());
            for (Map.Entry<String, GgufValue> e : metadata.entrySet()) {
                c.string(e.getKey());
                c.u32(e.getValue().type().id());
                value(c, e.getValue());
            }
            long offset = 0;
            List<Long> offsets = new ArrayList<>();
            for (Entry t : tensors) {
                c.string(t.name);
                c.u32(t.dims.length);
                for (long d : t.dims) {
                    c.u64(d);
                }
                c.u32(t.type.id());
                c.u64(offset);
                offsets.add(offset);
                offset = align(offset + t.data.byteSize());
            }
            c.pad(align(c.written) - c.written);
            long dataStart = c.written;
            for (int i = 0; i < tensors.size(); i++) {
                Entry t = tensors.get(i);
                c.pad(dataStart + offsets.get(i) - c.written);
                c.bytes(t.data.toArray(ValueLayout.JAVA_BYTE));
            }
        }
    }

    private long align(long at) {
        return Math.ceilDiv(at, (long) alignment) * alignment;
    }

    private static void value(Counting c, GgufValue v) throws IOException {
        if (v.type() == GgufValueType.ARRAY) {
            GgufValueType element = v.elementType();
            c.u32(element.id());
            c.u64(v.length());
            switch (v.value()) {
                case long[] a -> {
                    for (long x : a) {
                        c.integer(element, x);
                    }
                }
                case float[] a -> {
                    for (float x : a) {
                        c.u32(Float.floatToRawIntBits(x));
                    }
                }
                case double[] a -> {
                    for (double x : a) {
                        c.u64(Double.doubleToRawLongBits(x));
                    }
                }
                case boolean[] a -> {
                    for (boolean x : a) {
                        c.bytes(new byte[] {(byte) (x ? 1 : 0)});
                    }
                }
                case String[] a -> {
                    for (String x : a) {
                        c.string(x);
                    }
                }
                case GgufValue[] a -> {
                    for (GgufValue x : a) {
                        c.u32(x.type().id());
                        value(c, x);
                    }
                }
                default -> throw new AssertionError(v);
            }
            return;
        }
        switch (v.value()) {
            case Long l -> c.integer(v.type(), l);
            case Float f -> c.u32(Float.floatToRawIntBits(f));
            case Double d -> c.u64(Double.doubleToRawLongBits(d));
            case Boolean b -> c.bytes(new byte[] {(byte) (b ? 1 : 0)});
            case String s -> c.string(s);
            default -> throw new AssertionError(v);
        }
    }

    /** Little-endian output that counts what it wrote. */
    private static final class Counting {
        private final OutputStream out;
        private final ByteBuffer scratch = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
        long written;

        Counting(OutputStream out) {
            this.out = out;
        }

        void u32(int v) throws IOException {
            scratch.clear();
            scratch.putInt(v);
            out.write(scratch.array(), 0, 4);
            written += 4;
        }

        void u64(long v) throws IOException {
            scratch.clear();
            scratch.putLong(v);
            out.write(scratch.array(), 0, 8);
            written += 8;
        }

        void integer(GgufValueType type, long v) throws IOException {
            scratch.clear();
            scratch.putLong(v);
            int n = type.minBytes();
            out.write(scratch.array(), 0, n);
            written += n;
        }

        void string(String s) throws IOException {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            u64(b.length);
            bytes(b);
        }

        void bytes(byte[] b) throws IOException {
            out.write(b);
            written += b.length;
        }

        void pad(long n) throws IOException {
            for (long i = 0; i < n; i++) {
                out.write(0);
            }
            written += n;
        }
    }
}
