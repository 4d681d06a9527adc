package dev.tandem.llm.safetensors;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.tandem.llm.checkpoint.MappedFile;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A safetensors file, memory-mapped read-only: its {@code __metadata__}, its tensors and the bytes
 * of each as a slice of the mapping. Nothing of the tensor data is copied onto the Java heap; the
 * header is.
 *
 * <h2>Implementation Overview</h2>
 *
 * <p>The layout: a little-endian u64 {@code N}, then {@code N} bytes of UTF-8 JSON (the header),
 * then the data. The header is an object: each key but {@code __metadata__} names a tensor,
 * {@code {"dtype": "BF16", "shape": [rows, cols], "data_offsets": [begin, end]}} with the offsets
 * relative to the start of the data; {@code __metadata__} maps strings to strings.
 *
 * <p>Nothing in the header is trusted: the header length must fit the file and be at most
 * {@link #MAX_HEADER_BYTES} (so a corrupt length is an error, never an {@code OutOfMemoryError});
 * every tensor's byte range must lie inside the data, start at a multiple of its element size,
 * hold exactly {@code shape × dtype size} bytes and overlap no other tensor; duplicate keys are
 * an error. Each error is a {@link SafetensorsException} naming the file and what is wrong, and
 * the mapping is released before it leaves {@link #open}. The mapping lives in a shared arena
 * (the tensors are read by the device's cores) until {@link #close()}.
 */
public final class SafetensorsFile implements AutoCloseable {
    /** The longest header read: 100 MB (the Hugging Face library's own limit). */
    public static final long MAX_HEADER_BYTES = 100_000_000L;

    /** The key of the string-to-string metadata in the header. */
    public static final String METADATA_KEY = "__metadata__";

    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    static final ObjectMapper JSON = JsonMapper.builder().enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
            .build();

    private final Path path;
    private final MappedFile file;
    private final long dataStart;
    private final Map<String, String> metadata;
    private final List<SafetensorsTensor> tensors;
    private final Map<String, SafetensorsTensor> byName;

    private SafetensorsFile(Path path, MappedFile file, long dataStart, Map<String, String> metadata,
            List<SafetensorsTensor> tensors) {
        this.path = path;
        this.file = file;
        this.dataStart = dataStart;
        this.metadata = Collections.unmodifiableMap(metadata);
        this.tensors = Collections.unmodifiableList(tensors);
        Map<String, SafetensorsTensor> names = new LinkedHashMap<>();
        for (SafetensorsTensor t : tensors) {
            names.put(t.name(), t);
        }
        this.byName = Collections.unmodifiableMap(names);
    }

    /**
     * Maps and parses {@code path}.
     *
     * @throws SafetensorsException naming the file and what is wrong with it
     */
    public static SafetensorsFile open(Path path) {
        return MappedFile.parse(path, SafetensorsException::new, file -> parse(path, file, file.segment()));
    }

    private static SafetensorsFile parse(Path path, MappedFile file, MemorySegment in) {
        long size = in.byteSize();
        if (size < 8) {
            throw fail(path, "truncated: " + size + " bytes, but a safetensors file starts with an 8-byte header"
                    + " length");
        }
        long headerBytes = in.get(U64, 0);
        if (headerBytes < 0 || headerBytes > MAX_HEADER_BYTES) {
            throw fail(path, "header length " + Long.toUnsignedString(headerBytes) + " is absurd (more than "
                    + MAX_HEADER_BYTES + " bytes); not a safetensors file?");
        }
        if (headerBytes > size - 8) {
            throw fail(path, "header length " + headerBytes + " runs past the end of the file (" + size + " bytes)");
        }
        if (headerBytes < 2) {
            throw fail(path, "header length " + headerBytes + " cannot hold a JSON object");
        }
        byte[] header = in.asSlice(8, headerBytes).toArray(ValueLayout.JAVA_BYTE);
        JsonNode root;
        try {
            root = JSON.readTree(header);
        } catch (JsonProcessingException e) {
            throw fail(path, "header is not valid JSON: " + oneLine(e.getOriginalMessage()), e);
        } catch (IOException e) {
            throw fail(path, "header is not valid JSON: " + oneLine(e.getMessage()), e);
        }
        if (root == null || !root.isObject()) {
            throw fail(path, "header is not a JSON object");
        }
        long dataStart = 8 + headerBytes;
        long dataBytes = size - dataStart;
        Map<String, String> metadata = new LinkedHashMap<>();
        List<SafetensorsTensor> tensors = new ArrayList<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = root.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> field = it.next();
            String name = field.getKey();
            JsonNode value = field.getValue();
            if (name.equals(METADATA_KEY)) {
                if (!value.isObject()) {
                    throw fail(path, METADATA_KEY + " is not an object of strings");
                }
                for (Iterator<Map.Entry<String, JsonNode>> m = value.fields(); m.hasNext(); ) {
                    Map.Entry<String, JsonNode> e = m.next();
                    if (!e.getValue().isTextual()) {
                        throw fail(path, METADATA_KEY + "." + oneLine(e.getKey()) + " is not a string");
                    }
                    metadata.put(e.getKey(), e.getValue().textValue());
                }
                continue;
            }
            tensors.add(tensor(path, name, value, dataBytes));
        }
        List<SafetensorsTensor> byOffset = new ArrayList<>(tensors);
        byOffset.sort(Comparator.comparingLong(SafetensorsTensor::begin).thenComparingLong(SafetensorsTensor::end));
        for (int i = 1; i < byOffset.size(); i++) {
            SafetensorsTensor a = byOffset.get(i - 1);
            SafetensorsTensor b = byOffset.get(i);
            if (b.begin() < a.end()) {
                throw fail(path, "tensors " + oneLine(a.name()) + " " + range(a) + " and " + oneLine(b.name()) + " "
                        + range(b) + " overlap");
            }
        }
        return new SafetensorsFile(path, file, dataStart, metadata, tensors);
    }

    private static SafetensorsTensor tensor(Path path, String name, JsonNode info, long dataBytes) {
        String what = "tensor " + oneLine(name);
        if (!info.isObject()) {
            throw fail(path, what + " is not an object with dtype, shape and data_offsets");
        }
        JsonNode dtypeNode = info.get("dtype");
        if (dtypeNode == null || !dtypeNode.isTextual()) {
            throw fail(path, what + " has no dtype string");
        }
        SafetensorsDtype dtype = SafetensorsDtype.byName(dtypeNode.textValue());
        if (dtype == null) {
            throw fail(path, what + " has dtype " + oneLine(dtypeNode.textValue()) + ", unsupported (supported: "
                    + String.join(", ", Arrays.stream(SafetensorsDtype.values()).map(Enum::name).toList()) + ")");
        }
        JsonNode shapeNode = info.get("shape");
        if (shapeNode == null || !shapeNode.isArray()) {
            throw fail(path, what + " has no shape array");
        }
        long[] shape = new long[shapeNode.size()];
        long elements = 1;
        for (int d = 0; d < shape.length; d++) {
            shape[d] = nonNegative(path, what + " shape[" + d + "]", shapeNode.get(d));
            try {
                elements = Math.multiplyExact(elements, shape[d]);
            } catch (ArithmeticException e) {
                throw fail(path, what + " has shape " + Arrays.toString(shape) + " of more than 2^63 elements");
            }
        }
        JsonNode offsets = info.get("data_offsets");
        if (offsets == null || !offsets.isArray() || offsets.size() != 2) {
            throw fail(path, what + " has no data_offsets [begin, end]");
        }
        long begin = nonNegative(path, what + " data_offsets[0]", offsets.get(0));
        long end = nonNegative(path, what + " data_offsets[1]", offsets.get(1));
        if (end < begin) {
            throw fail(path, what + " has data_offsets [" + begin + ", " + end + "] ending before they begin");
        }
        if (end > dataBytes) {
            throw fail(path, what + " has data_offsets [" + begin + ", " + end + "] past the end of the data ("
                    + dataBytes + " bytes)");
        }
        if (begin % dtype.bytes() != 0) {
            throw fail(path, what + " starts at data offset " + begin + ", not a multiple of its " + dtype + " size "
                    + dtype.bytes());
        }
        boolean huge = elements > Long.MAX_VALUE / dtype.bytes();
        if (huge || elements * dtype.bytes() != end - begin) {
            throw fail(path, what + " has shape " + Arrays.toString(shape) + " of " + dtype + ", "
                    + (huge ? "more than 2^63" : String.valueOf(elements * dtype.bytes()))
                    + " bytes, but data_offsets [" + begin + ", " + end + "] hold " + (end - begin));
        }
        return new SafetensorsTensor(name, dtype, shape, begin, end);
    }

    private static long nonNegative(Path path, String what, JsonNode node) {
        if (node == null || !node.isIntegralNumber() || !node.canConvertToLong() || node.longValue() < 0) {
            throw fail(path, what + " = " + (node == null ? "missing" : oneLine(node.toString()))
                    + " is not an integer in [0, 2^63)");
        }
        return node.longValue();
    }

    private static String range(SafetensorsTensor t) {
        return "[" + t.begin() + ", " + t.end() + ")";
    }

    static String oneLine(String s) {
        if (s == null) {
            return "";
        }
        String line = s.replaceAll("[\\r\\n\\t]+", " ");
        return line.length() > 200 ? line.substring(0, 200) + "..." : line;
    }

    private static SafetensorsException fail(Path path, String message) {
        return new SafetensorsException(path + ": " + message);
    }

    private static SafetensorsException fail(Path path, String message, Throwable cause) {
        return new SafetensorsException(path + ": " + message, cause);
    }

    public Path path() {
        return path;
    }

    /** The header's {@code __metadata__}, empty when it has none. */
    public Map<String, String> metadata() {
        return metadata;
    }

    /** Every tensor, in header order. */
    public List<SafetensorsTensor> tensors() {
        return tensors;
    }

    public Optional<SafetensorsTensor> tensor(String name) {
        return Optional.ofNullable(byName.get(name));
    }

    /** Where the data starts in the file: 8 plus the header length. */
    public long dataStart() {
        return dataStart;
    }

    /** Bytes of the whole file. */
    public long fileBytes() {
        return file.bytes();
    }

    /** The bytes of {@code tensor}: a read-only slice of the mapping, valid until {@link #close()}. */
    public MemorySegment data(SafetensorsTensor tensor) {
        if (!tensor.equals(byName.get(tensor.name()))) {
            throw new IllegalArgumentException(path + ": no tensor " + tensor);
        }
        return file.segment().asSlice(dataStart + tensor.begin(), tensor.bytes());
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
        return "SafetensorsFile[" + path + ", " + tensors.size() + " tensors]";
    }
}
