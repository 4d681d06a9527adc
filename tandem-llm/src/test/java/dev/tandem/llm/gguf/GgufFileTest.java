package dev.tandem.llm.gguf;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tandem.llm.SharedModels;
import dev.tandem.llm.reference.GgufWriter;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class GgufFileTest {
    @TempDir
    Path dir;

    @Test
    void readsTheTrainedStoriesModel() {
        try (GgufFile f = GgufFile.open(SharedModels.file("stories260K.gguf"))) {
            GgufMetadata m = f.metadata();
            assertThat(m.string("general.architecture")).hasValue("llama");
            assertThat(m.integer("llama.embedding_length")).hasValue(64);
            assertThat(m.integer("llama.block_count")).hasValue(5);
            assertThat(m.integer("llama.attention.head_count")).hasValue(8);
            assertThat(m.integer("llama.attention.head_count_kv")).hasValue(4);
            assertThat(m.string("tokenizer.ggml.model")).hasValue("llama");
            assertThat(m.strings("tokenizer.ggml.tokens")).hasSize(512);
            assertThat(m.floats("tokenizer.ggml.scores")).hasSize(512);
            assertThat(m.integer("tokenizer.ggml.bos_token_id")).hasValue(1);
            assertThat(m.integer("tokenizer.ggml.eos_token_id")).hasValue(2);
            GgufTensor embd = f.tensor("token_embd.weight").orElseThrow();
            assertThat(embd.dims()).containsExactly(64, 512);
            assertThat(embd.type()).isEqualTo(GgmlType.F32);
            assertThat(f.data(embd).byteSize()).isEqualTo(64L * 512 * 4);
            assertThat(f.data(embd).isReadOnly()).isTrue();
            assertThat(f.tensors()).hasSize(3 + 5 * 9);
        }
    }

    @Test
    void readsTheF16ModelWithTheLlama2Vocabulary() {
        try (GgufFile f = GgufFile.open(SharedModels.file("llama-2-tiny-random.gguf"))) {
            assertThat(f.metadata().strings("tokenizer.ggml.tokens")).hasSize(32000);
            assertThat(f.tensors()).anyMatch(t -> t.type().equals(GgmlType.F16));
        }
    }

    @Test
    void readsAVocabularyOnlyFile() {
        try (GgufFile f = GgufFile.open(SharedModels.file("vocab/ggml-vocab-llama-bpe.gguf"))) {
            assertThat(f.tensors()).isEmpty();
            assertThat(f.metadata().string("tokenizer.ggml.pre")).hasValue("llama-bpe");
            assertThat(f.metadata().strings("tokenizer.ggml.merges")).isNotEmpty();
        }
    }

    @Test
    void theWriterRefusesRowsItsTypeCannotHoldNamingTheBlockSize() {
        GgufWriter w = new GgufWriter();
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            var data = arena.allocate(1024);
            assertThatThrownBy(() -> w.tensor("t", GgmlType.byName("Q4_K"), new long[] {896, 2}, data))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("tensor t: a Q4_K row holds a multiple of 256 values, and [896, 2] has rows of 896");
            assertThatThrownBy(() -> w.tensor("t", GgmlType.byName("Q8_0"), new long[] {64, 2}, data))
                    .hasMessage("tensor t: 1024 bytes given, a Q8_0 tensor of [64, 2] has 136");
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {2, 3})
    void roundTripsEveryValueTypeAndTensors(int version) throws IOException {
        GgufWriter w = new GgufWriter().version(version).alignment(64);
        for (GgufValueType t : GgufValueType.values()) {
            if (t.integer()) {
                long v = switch (t) {
                    case UINT8 -> 255;
                    case INT8 -> -128;
                    case UINT16 -> 65535;
                    case INT16 -> -32768;
                    case UINT32 -> 4294967295L;
                    case INT32 -> Integer.MIN_VALUE;
                    case UINT64 -> -1L; // 2^64 - 1, as its bit pattern
                    default -> Long.MIN_VALUE;
                };
                w.put("int." + t, new GgufValue(t, null, v));
                w.put("array." + t, GgufValue.integers(t, v, 0, 1));
            }
        }
        w.put("f32", 1.5f).put("f64", new GgufValue(GgufValueType.FLOAT64, null, Math.PI)).put("bool", true)
                .put("string", "héllo ▁wörld 🙂").put("empty", "");
        w.put("floats", GgufValue.floats(1f, -2f, Float.NaN));
        w.put("doubles", new GgufValue(GgufValueType.ARRAY, GgufValueType.FLOAT64, new double[] {1, 2}));
        w.put("bools", new GgufValue(GgufValueType.ARRAY, GgufValueType.BOOL, new boolean[] {true, false}));
        w.put("strings", GgufValue.strings("a", "", "ü"));
        w.put("nested", new GgufValue(GgufValueType.ARRAY, GgufValueType.ARRAY,
                new GgufValue[] {GgufValue.strings("x"), GgufValue.floats(3f)}));
        MemorySegment a = MemorySegment.ofArray(new float[] {1, 2, 3, 4, 5, 6});
        MemorySegment b = MemorySegment.ofArray(new byte[34 * 2]);
        b.set(ValueLayout.JAVA_BYTE, 5, (byte) 7);
        w.tensor("a", GgmlType.F32, new long[] {3, 2}, a);
        w.tensor("b", GgmlType.Q8_0, new long[] {64}, b);
        Path p = dir.resolve("all.gguf");
        w.write(p);

        try (GgufFile f = GgufFile.open(p)) {
            assertThat(f.version()).isEqualTo(version);
            assertThat(f.alignment()).isEqualTo(64);
            Map<String, GgufValue> m = f.metadata().asMap();
            for (Map.Entry<String, GgufValue> e : m.entrySet()) {
                if (!e.getKey().equals("floats")) {
                    assertThat(e.getValue()).as(e.getKey()).isEqualTo(expected(e.getKey()));
                }
            }
            assertThat(f.metadata().floats("floats")).usingElementComparator(Float::compare)
                    .containsExactly(1f, -2f, Float.NaN);
            assertThat(f.metadata().integer("int.UINT64")).hasValue(-1L);
            assertThat(f.metadata().string("string")).hasValue("héllo ▁wörld 🙂");
            assertThat(f.metadata().ints("array.INT32")).containsExactly(Integer.MIN_VALUE, 0, 1);
            GgufTensor ta = f.tensor("a").orElseThrow();
            assertThat(f.data(ta).toArray(ValueLayout.JAVA_FLOAT)).containsExactly(1, 2, 3, 4, 5, 6);
            GgufTensor tb = f.tensor("b").orElseThrow();
            assertThat(tb.offset() % 64).isZero();
            assertThat(f.data(tb).get(ValueLayout.JAVA_BYTE, 5)).isEqualTo((byte) 7);
        }
    }

    /** The value the round-trip test wrote under {@code key}, built again independently of the writer. */
    private static GgufValue expected(String key) {
        return switch (key) {
            case "f32" -> GgufValue.float32(1.5f);
            case "f64" -> new GgufValue(GgufValueType.FLOAT64, null, Math.PI);
            case "bool" -> GgufValue.bool(true);
            case "string" -> GgufValue.of("héllo ▁wörld 🙂");
            case "empty" -> GgufValue.of("");
            case "doubles" -> new GgufValue(GgufValueType.ARRAY, GgufValueType.FLOAT64, new double[] {1, 2});
            case "bools" -> new GgufValue(GgufValueType.ARRAY, GgufValueType.BOOL, new boolean[] {true, false});
            case "strings" -> GgufValue.strings("a", "", "ü");
            case "nested" -> new GgufValue(GgufValueType.ARRAY, GgufValueType.ARRAY,
                    new GgufValue[] {GgufValue.strings("x"), GgufValue.floats(3f)});
            case "general.alignment" -> GgufValue.uint32(64);
            default -> {
                GgufValueType t = GgufValueType.valueOf(key.substring(key.indexOf('.') + 1));
                long v = switch (t) {
                    case UINT8 -> 255;
                    case INT8 -> -128;
                    case UINT16 -> 65535;
                    case INT16 -> -32768;
                    case UINT32 -> 4294967295L;
                    case INT32 -> Integer.MIN_VALUE;
                    case UINT64 -> -1L;
                    default -> Long.MIN_VALUE;
                };
                yield key.startsWith("int.") ? new GgufValue(t, null, v) : GgufValue.integers(t, v, 0, 1);
            }
        };
    }

    // ---- bad input: each one clear error naming the file and what is wrong ----------------------

    private Path small() throws IOException {
        Path p = dir.resolve("small.gguf");
        new GgufWriter().put("general.architecture", "llama").put("k", GgufValue.strings("x", "y"))
                .tensor("t", GgmlType.F32, new long[] {4}, MemorySegment.ofArray(new float[4])).write(p);
        return p;
    }

    private Path patched(Path source, long offset, long value, int bytes) throws IOException {
        byte[] data = Files.readAllBytes(source);
        ByteBuffer buffer = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN);
        if (bytes == 4) {
            buffer.putInt((int) offset, (int) value);
        } else {
            buffer.putLong((int) offset, value);
        }
        Path p = dir.resolve("patched-" + offset + "-" + value + ".gguf");
        Files.write(p, data);
        return p;
    }

    @Test
    void rejectsAWrongMagic() throws IOException {
        Path p = patched(small(), 0, 0x12345678, 4);
        assertThatThrownBy(() -> GgufFile.open(p)).isInstanceOf(GgufException.class)
                .hasMessageContaining(p.toString()).hasMessageContaining("not a GGUF file");
    }

    @Test
    void rejectsUnknownAndOldVersions() throws IOException {
        Path v9 = patched(small(), 4, 9, 4);
        assertThatThrownBy(() -> GgufFile.open(v9)).hasMessageContaining("unknown GGUF version 9");
        Path v1 = patched(small(), 4, 1, 4);
        assertThatThrownBy(() -> GgufFile.open(v1)).hasMessageContaining("version 1 is not supported");
        Path be = patched(small(), 4, Integer.reverseBytes(3), 4);
        assertThatThrownBy(() -> GgufFile.open(be)).hasMessageContaining("big-endian");
    }

    @Test
    void rejectsEveryTruncation() throws IOException {
        byte[] whole = Files.readAllBytes(small());
        // Every cut inside the header and the data is an error; none is an unchecked surprise.
        for (int cut = 0; cut < whole.length; cut++) {
            Path p = dir.resolve("cut.gguf");
            Files.write(p, Arrays.copyOf(whole, cut));
            assertThatThrownBy(() -> GgufFile.open(p)).as("cut at " + cut).isInstanceOf(GgufException.class)
                    .hasMessageStartingWith(p.toString());
        }
    }

    @Test
    void rejectsAbsurdCountsWithoutAllocating() throws IOException {
        Path tensors = patched(small(), 8, 1L << 40, 8);
        assertThatThrownBy(() -> GgufFile.open(tensors)).hasMessageContaining("tensor count = 1099511627776");
        Path kvs = patched(small(), 16, 1L << 40, 8);
        assertThatThrownBy(() -> GgufFile.open(kvs)).hasMessageContaining("metadata count = 1099511627776");
        // The first key's length is at offset 24: a 2^40-byte string.
        Path string = patched(small(), 24, 1L << 40, 8);
        assertThatThrownBy(() -> GgufFile.open(string)).hasMessageContaining("claims 1099511627776 bytes");
    }

    @Test
    void rejectsATensorPastTheEndAndAnUnknownType() throws IOException {
        Path p = dir.resolve("big.gguf");
        // Declares 4 floats but the data holds them; then lie about the dims by writing a bigger shape.
        new GgufWriter().tensor("t", GgmlType.F32, new long[] {4}, MemorySegment.ofArray(new float[4])).write(p);
        // Layout: 24-byte header, name (8 + 1), n_dims (4), dim (8), type (4), offset (8).
        long dimAt = 24 + 9 + 4;
        Path past = patched(p, dimAt, 1 << 20, 8);
        assertThatThrownBy(() -> GgufFile.open(past)).hasMessageContaining("tensor t")
                .hasMessageContaining("extends past the end of the file");
        Path type = patched(p, dimAt + 8, 99, 4);
        assertThatThrownBy(() -> GgufFile.open(type)).hasMessageContaining("tensor t has unknown ggml type 99");
        Path q4k = patched(p, dimAt + 8, 12, 4);
        assertThatThrownBy(() -> GgufFile.open(q4k)).hasMessageContaining("not a multiple of its block size 256");
    }

    @Test
    void aTypeMismatchNamesTheKey() throws IOException {
        try (GgufFile f = GgufFile.open(small())) {
            assertThatThrownBy(() -> f.metadata().integer("general.architecture"))
                    .hasMessageContaining("general.architecture is a STRING, expected an integer");
            assertThatThrownBy(() -> f.metadata().floats("missing")).hasMessageContaining("has no missing");
        }
    }

    @Test
    void closeUnmapsAndIsIdempotent() throws IOException {
        GgufFile f = GgufFile.open(small());
        MemorySegment t = f.data(f.tensors().getFirst());
        f.close();
        f.close();
        assertThat(f.isOpen()).isFalse();
        assertThatThrownBy(() -> t.get(ValueLayout.JAVA_BYTE, 0)).isInstanceOf(IllegalStateException.class);
    }
}
