package dev.tandem.llm.reference;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.llm.safetensors.SafetensorsDtype;
import dev.tandem.llm.safetensors.SafetensorsFile;
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
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes one safetensors file as the Hugging Face library does: the header padded with spaces to
 * a multiple of 8 bytes, the tensors back to back without gaps, the wider dtypes first so that
 * every tensor starts at a multiple of its element size. {@link SafetensorsFile} reads back
 * exactly what it writes. Used for test checkpoints and the files benchmarks hand to peer
 * engines. Not thread-safe.
 */
public final class SafetensorsWriter {
    private static final ObjectMapper JSON = JsonMapper.builder().build();

    private final Map<String, String> metadata = new LinkedHashMap<>();
    private final List<Entry> tensors = new ArrayList<>();

    private record Entry(String name, SafetensorsDtype dtype, long[] shape, MemorySegment data) {}

    /** Adds a {@code __metadata__} entry (the library writes {@code "format": "pt"}). */
    public SafetensorsWriter metadata(String key, String value) {
        metadata.put(key, value);
        return this;
    }

    /**
     * Adds a tensor; {@code data} must hold exactly its bytes, little-endian.
     *
     * @param shape outermost first: a matrix of {@code rows} rows of {@code cols} is {@code [rows, cols]}
     */
    public SafetensorsWriter tensor(String name, SafetensorsDtype dtype, long[] shape, MemorySegment data) {
        if (name.equals(SafetensorsFile.METADATA_KEY)) {
            throw new IllegalArgumentException("a tensor cannot be named " + name);
        }
        long elements = 1;
        for (long d : shape) {
            if (d < 0) {
                throw new IllegalArgumentException("tensor " + name + ": shape " + Arrays.toString(shape)
                        + " has a negative dimension");
            }
            elements = Math.multiplyExact(elements, d);
        }
        long bytes = Math.multiplyExact(elements, (long) dtype.bytes());
        if (data.byteSize() != bytes) {
            throw new IllegalArgumentException("tensor " + name + ": " + data.byteSize() + " bytes given, a " + dtype
                    + " tensor of " + Arrays.toString(shape) + " has " + bytes);
        }
        for (Entry e : tensors) {
            if (e.name.equals(name)) {
                throw new IllegalArgumentException("tensor " + name + " added twice");
            }
        }
        tensors.add(new Entry(name, dtype, shape.clone(), data));
        return this;
    }

    /** Adds an f32 tensor of {@code values}. */
    public SafetensorsWriter f32(String name, long[] shape, float[] values) {
        MemorySegment data = MemorySegment.ofArray(new byte[values.length * Float.BYTES]);
        for (int i = 0; i < values.length; i++) {
            data.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), i, values[i]);
        }
        return tensor(name, SafetensorsDtype.F32, shape, data);
    }

    /** Writes the file, replacing {@code path}. */
    public void write(Path path) throws IOException {
        List<Entry> order = new ArrayList<>(tensors);
        order.sort(Comparator.comparingInt((Entry e) -> -e.dtype.bytes()));
        ObjectNode header = JSON.createObjectNode();
        if (!metadata.isEmpty()) {
            ObjectNode m = header.putObject(SafetensorsFile.METADATA_KEY);
            metadata.forEach(m::put);
        }
        long offset = 0;
        for (Entry e : order) {
            ObjectNode t = header.putObject(e.name);
            t.put("dtype", e.dtype.name());
            ArrayNode shape = t.putArray("shape");
            for (long d : e.shape) {
                shape.add(d);
            }
            ArrayNode offsets = t.putArray("data_offsets");
            offsets.add(offset);
            offset += e.data.byteSize();
            offsets.add(offset);
        }
        byte[] json = JSON.writeValueAsString(header).getBytes(StandardCharsets.UTF_8);
        int padded = (int) Math.ceilDiv(json.length + 8L, 8L) * 8 - 8;
        byte[] headerBytes = Arrays.copyOf(json, padded);
        Arrays.fill(headerBytes, json.length, padded, (byte) ' ');
        try (OutputStream out = new BufferedOutputStream(Files.newOutputStream(path), 1 << 16)) {
            out.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(headerBytes.length).array());
            out.write(headerBytes);
            for (Entry e : order) {
                out.write(e.data.toArray(ValueLayout.JAVA_BYTE));
            }
        }
    }
}
