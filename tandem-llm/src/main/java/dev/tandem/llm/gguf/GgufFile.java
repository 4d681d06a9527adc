package dev.tandem.llm.gguf;

import dev.tandem.llm.checkpoint.MappedFile;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A GGUF file (versions 2 and 3), memory-mapped read-only: its metadata, its tensor infos and the
 * bytes of each tensor as a slice of the mapping. Nothing of the tensor data is copied onto the
 * Java heap; the metadata (strings and arrays, a vocabulary for instance) is.
 *
 * <h2>Implementation Overview</h2>
 *
 * <p>The layout, all little-endian: the magic {@code GGUF}, a u32 version, a u64 tensor count,
 * a u64 metadata count; then the metadata ({@code key: string, type: u32, value}); then the
 * tensor infos ({@code name: string, n_dims: u32, dims: u64[n_dims], type: u32, offset: u64});
 * then padding to {@code general.alignment} (default 32); then the data section, each tensor at
 * its offset from the data section's start, itself a multiple of the alignment. A string is a
 * u64 byte length and that many UTF-8 bytes; an array is a u32 element type, a u64 count and
 * the elements.
 *
 * <p>Reading never trusts a count: before it allocates for a count, it checks that the rest of
 * the file can hold that many of the smallest element, so a corrupt count is an error naming
 * it, never an {@code OutOfMemoryError}. Every read is bounds-checked against the mapping. On
 * any error the mapping is released before the exception leaves {@link #open} ({@link
 * MappedFile#parse}). The mapping lives in a shared arena (the tensors are read by the device's
 * cores) until {@link #close()}.
 */
public final class GgufFile implements AutoCloseable {
    /** The magic number, "GGUF" read as a little-endian u32. */
    public static final int MAGIC = 0x46554747;
    /** Alignment of the data section when the file does not set {@code general.alignment}. */
    public static final int DEFAULT_ALIGNMENT = 32;
    /** ggml's limit on a tensor's dimensions. */
    public static final int MAX_DIMS = 4;

    private final Path path;
    private final MappedFile file;
    private final int version;
    private final GgufMetadata metadata;
    private final List<GgufTensor> tensors;
    private final Map<String, GgufTensor> byName;
    private final long alignment;
    private final long dataStart;

    private GgufFile(Path path, MappedFile file, int version, GgufMetadata metadata,
            List<GgufTensor> tensors, long alignment, long dataStart) {
        this.path = path;
        this.file = file;
        this.version = version;
        this.metadata = metadata;
        this.tensors = Collections.unmodifiableList(tensors);
        Map<String, GgufTensor> names = new LinkedHashMap<>();
        for (GgufTensor t : tensors) {
            names.put(t.name(), t);
        }
        this.byName = Collections.unmodifiableMap(names);
        this.alignment = alignment;
        this.dataStart = dataStart;
    }

    /**
     * Maps and parses {@code path}.
     *
     * @throws GgufException naming the file and what is wrong with it
     */
    public static GgufFile open(Path path) {
        return MappedFile.parse(path, GgufException::new, file -> {
            if (file.bytes() < 24) {
                throw new GgufException(path + ": truncated: " + file.bytes() + " bytes, a GGUF header needs 24");
            }
            return new Parser(path, file.segment()).parse(file);
        });
    }

    public Path path() {
        return path;
    }

    /** 2 or 3. */
    public int version() {
        return version;
    }

    public GgufMetadata metadata() {
        return metadata;
    }

    /** Every tensor, in file order. */
    public List<GgufTensor> tensors() {
        return tensors;
    }

    public Optional<GgufTensor> tensor(String name) {
        return Optional.ofNullable(byName.get(name));
    }

    public long alignment() {
        return alignment;
    }

    /**
     * The offset of the data section: the bytes before it are the header (magic, version, the
     * metadata and the tensor infos, then padding), those from it the tensors' data.
     */
    public long dataStart() {
        return dataStart;
    }

    /** Bytes of the whole file. */
    public long fileBytes() {
        return file.bytes();
    }

    /** The bytes of {@code tensor}: a read-only slice of the mapping, valid until {@link #close()}. */
    public MemorySegment data(GgufTensor tensor) {
        if (!tensor.equals(byName.get(tensor.name()))) {
            throw new IllegalArgumentException(path + ": no tensor " + tensor);
        }
        return file.segment().asSlice(dataStart + tensor.offset(), tensor.bytes());
    }

    /** Whether the mapping is still open. */
    public boolean isOpen() {
        return file.isOpen();
    }

    /** Unmaps the file; slices from {@link #data} are invalid afterwards. Idempotent. */
    @Override
    public void close() {
        file.close();
    }

    @Override
    public String toString() {
        return "GgufFile[" + path + ", v" + version + ", " + metadata.asMap().size() + " keys, " + tensors.size()
                + " tensors]";
    }

    // ---- parsing --------------------------------------------------------------------------------

    /** One pass over the header, bounds-checked at every read. */
    private static final class Parser {
        private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
        private static final ValueLayout.OfLong U64 =
                ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
        private static final ValueLayout.OfShort U16 =
                ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
        private static final ValueLayout.OfFloat F32 =
                ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
        private static final ValueLayout.OfDouble F64 =
                ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

        private final Path path;
        private final MemorySegment in;
        private final long size;
        private long at;

        Parser(Path path, MemorySegment in) {
            this.path = path;
            this.in = in;
            this.size = in.byteSize();
        }

        GgufFile parse(MappedFile file) {
            int magic = in.get(U32, 0);
            if (magic != MAGIC) {
                throw fail("not a GGUF file: magic is 0x" + Integer.toHexString(magic) + ", expected 0x"
                        + Integer.toHexString(MAGIC) + " (\"GGUF\")");
            }
            at = 4;
            int version = in.get(U32, at);
            at += 4;
            if (Integer.reverseBytes(version) == 2 || Integer.reverseBytes(version) == 3) {
                throw fail("big-endian GGUF (version " + Integer.reverseBytes(version) + ") is not supported");
            }
            if (version == 1) {
                throw fail("GGUF version 1 is not supported (only 2 and 3)");
            }
            if (version != 2 && version != 3) {
                throw fail("unknown GGUF version " + Integer.toUnsignedString(version) + " (only 2 and 3)");
            }
            long tensorCount = u64("tensor count");
            long kvCount = u64("metadata count");
            // The smallest key-value is an empty key (8), a type (4) and a one-byte value.
            checkCount("metadata count", kvCount, 13);
            Map<String, GgufValue> values = new LinkedHashMap<>();
            for (long i = 0; i < kvCount; i++) {
                String key = string("metadata key " + i);
                GgufValueType type = valueType("metadata " + key);
                GgufValue value = value(key, type, 0);
                if (values.putIfAbsent(key, value) != null) {
                    throw fail("metadata key " + key + " appears twice");
                }
            }
            GgufMetadata metadata = new GgufMetadata(path.toString(), values);
            long alignment = DEFAULT_ALIGNMENT;
            if (values.containsKey("general.alignment")) {
                alignment = metadata.integer("general.alignment").orElseThrow();
                if (alignment <= 0 || Long.bitCount(alignment) != 1 || alignment > (1 << 20)) {
                    throw fail("general.alignment = " + alignment + " is not a power of two up to 2^20");
                }
            }
            // The smallest tensor info is an empty name (8), n_dims (4), a type (4) and an offset (8).
            checkCount("tensor count", tensorCount, 24);
            List<GgufTensor> infos = new ArrayList<>((int) tensorCount);
            Map<String, Boolean> seen = new LinkedHashMap<>();
            for (long i = 0; i < tensorCount; i++) {
                String name = string("name of tensor " + i);
                long nDims = Integer.toUnsignedLong(u32("dimension count of tensor " + name));
                if (nDims > MAX_DIMS) {
                    throw fail("tensor " + name + " has " + nDims + " dimensions; at most " + MAX_DIMS);
                }
                long[] dims = new long[(int) nDims];
                long elements = 1;
                for (int d = 0; d < nDims; d++) {
                    dims[d] = u64("dimension " + d + " of tensor " + name);
                    if (dims[d] <= 0) {
                        throw fail("tensor " + name + " has dimension " + d + " = " + Long.toUnsignedString(dims[d])
                                + "; every dimension must be at least 1");
                    }
                    try {
                        elements = Math.multiplyExact(elements, dims[d]);
                    } catch (ArithmeticException e) {
                        throw fail("tensor " + name + " has more than 2^63 elements");
                    }
                }
                long typeId = Integer.toUnsignedLong(u32("type of tensor " + name));
                GgmlType type = GgmlType.byId(typeId);
                if (type == null) {
                    throw fail("tensor " + name + " has unknown ggml type " + typeId);
                }
                long offset = u64("offset of tensor " + name);
                long rowLength = nDims == 0 ? 1 : dims[0];
                long rowBytes;
                try {
                    rowBytes = type.rowBytes(rowLength);
                } catch (ArithmeticException e) {
                    throw fail("tensor " + name + " has rows of more than 2^63 bytes");
                }
                if (rowBytes < 0) {
                    throw fail("tensor " + name + " of type " + type.name() + " has rows of " + rowLength
                            + " elements, not a multiple of its block size " + type.blockSize());
                }
                long bytes;
                try {
                    bytes = Math.multiplyExact(rowBytes, elements / rowLength);
                } catch (ArithmeticException e) {
                    throw fail("tensor " + name + " has more than 2^63 bytes");
                }
                if (offset < 0 || offset % alignment != 0) {
                    throw fail("tensor " + name + " starts at data offset " + Long.toUnsignedString(offset)
                            + ", not a multiple of the alignment " + alignment);
                }
                if (seen.put(name, Boolean.TRUE) != null) {
                    throw fail("tensor " + name + " appears twice");
                }
                infos.add(new GgufTensor(name, dims, type, offset, bytes));
            }
            long dataStart = Math.ceilDiv(at, alignment) * alignment;
            for (GgufTensor t : infos) {
                long end = dataStart + t.offset() + t.bytes();
                if (end < 0 || end > size || dataStart + t.offset() < 0) {
                    throw fail("tensor " + t.name() + " (" + t.type().name() + ", " + t.bytes() + " bytes at data offset "
                            + t.offset() + ") extends past the end of the file (" + size + " bytes)");
                }
            }
            return new GgufFile(path, file, version, metadata, infos, alignment, dataStart);
        }

        private GgufValue value(String key, GgufValueType type, int depth) {
            if (type == GgufValueType.ARRAY) {
                if (depth > 2) {
                    throw fail("metadata " + key + " nests arrays deeper than 3");
                }
                GgufValueType element = valueType("element type of metadata " + key);
                long count = u64("length of metadata " + key);
                checkCount("length of metadata " + key, count, element.minBytes());
                int n = (int) count;
                Object values;
                if (element.integer()) {
                    long[] a = new long[n];
                    for (int i = 0; i < n; i++) {
                        a[i] = integer(element, key);
                    }
                    values = a;
                } else {
                    values = switch (element) {
                        case FLOAT32 -> {
                            need(4L * n, key);
                            float[] a = new float[n];
                            for (int i = 0; i < n; i++) {
                                a[i] = in.get(F32, at);
                                at += 4;
                            }
                            yield a;
                        }
                        case FLOAT64 -> {
                            need(8L * n, key);
                            double[] a = new double[n];
                            for (int i = 0; i < n; i++) {
                                a[i] = in.get(F64, at);
                                at += 8;
                            }
                            yield a;
                        }
                        case BOOL -> {
                            boolean[] a = new boolean[n];
                            for (int i = 0; i < n; i++) {
                                a[i] = bool(key);
                            }
                            yield a;
                        }
                        case STRING -> {
                            String[] a = new String[n];
                            for (int i = 0; i < n; i++) {
                                a[i] = string("metadata " + key + "[" + i + "]");
                            }
                            yield a;
                        }
                        case ARRAY -> {
                            GgufValue[] a = new GgufValue[n];
                            for (int i = 0; i < n; i++) {
                                a[i] = value(key + "[" + i + "]", valueType("metadata " + key + "[" + i + "]"),
                                        depth + 1);
                            }
                            yield a;
                        }
                        default -> throw new AssertionError(element);
                    };
                }
                return new GgufValue(GgufValueType.ARRAY, element, values);
            }
            if (type.integer()) {
                return new GgufValue(type, null, integer(type, key));
            }
            return switch (type) {
                case FLOAT32 -> {
                    need(4, key);
                    float f = in.get(F32, at);
                    at += 4;
                    yield new GgufValue(type, null, f);
                }
                case FLOAT64 -> {
                    need(8, key);
                    double d = in.get(F64, at);
                    at += 8;
                    yield new GgufValue(type, null, d);
                }
                case BOOL -> new GgufValue(type, null, bool(key));
                case STRING -> new GgufValue(type, null, string("metadata " + key));
                default -> throw new AssertionError(type);
            };
        }

        private long integer(GgufValueType type, String key) {
            int bytes = type.minBytes();
            need(bytes, "metadata " + key);
            long v = switch (type) {
                case UINT8 -> Byte.toUnsignedLong(in.get(ValueLayout.JAVA_BYTE, at));
                case INT8 -> in.get(ValueLayout.JAVA_BYTE, at);
                case UINT16 -> Short.toUnsignedLong(in.get(U16, at));
                case INT16 -> in.get(U16, at);
                case UINT32 -> Integer.toUnsignedLong(in.get(U32, at));
                case INT32 -> in.get(U32, at);
                case UINT64, INT64 -> in.get(U64, at);
                default -> throw new AssertionError(type);
            };
            at += bytes;
            return v;
        }

        private boolean bool(String key) {
            need(1, "metadata " + key);
            byte b = in.get(ValueLayout.JAVA_BYTE, at);
            at += 1;
            if (b != 0 && b != 1) {
                throw fail("metadata " + key + " holds bool byte " + b + " (only 0 or 1)");
            }
            return b == 1;
        }

        private GgufValueType valueType(String what) {
            long id = Integer.toUnsignedLong(u32("type of " + what));
            GgufValueType type = GgufValueType.byId(id);
            if (type == null) {
                throw fail(what + " has unknown value type " + id);
            }
            return type;
        }

        private String string(String what) {
            long length = u64("length of " + what);
            if (length < 0 || length > size - at) {
                throw fail("truncated or corrupt: " + what + " claims " + Long.toUnsignedString(length)
                        + " bytes at offset " + (at - 8) + ", but only " + (size - at) + " remain");
            }
            byte[] bytes = in.asSlice(at, length).toArray(ValueLayout.JAVA_BYTE);
            at += length;
            // Malformed UTF-8 becomes U+FFFD, as it would when printed; tokenizers read their
            // tokens' bytes through the piece text, which every vocabulary here stores as UTF-8.
            return new String(bytes, StandardCharsets.UTF_8);
        }

        private int u32(String what) {
            need(4, what);
            int v = in.get(U32, at);
            at += 4;
            return v;
        }

        private long u64(String what) {
            need(8, what);
            long v = in.get(U64, at);
            at += 8;
            return v;
        }

        private void need(long bytes, String what) {
            if (bytes > size - at) {
                throw fail("truncated: " + what + " needs " + bytes + " bytes at offset " + at + ", the file has "
                        + size);
            }
        }

        /** A count of elements of at least {@code minBytes} each must fit in the rest of the file. */
        private void checkCount(String what, long count, long minBytes) {
            long remaining = size - at;
            if (count < 0 || count > Integer.MAX_VALUE - 8 || count > remaining / Math.max(1, minBytes)) {
                throw fail("truncated or corrupt: " + what + " = " + Long.toUnsignedString(count)
                        + " cannot fit in the " + remaining + " bytes left of the file");
            }
        }

        private GgufException fail(String message) {
            return new GgufException(path + ": " + message);
        }
    }
}
