package dev.tandem.llm.safetensors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tandem.llm.reference.SafetensorsWriter;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The safetensors reader and writer: a round trip, and one exact error for each way a file can be wrong. */
class SafetensorsFileTest {
    @TempDir
    Path dir;

    /** A file of the given raw header and {@code dataBytes} zero bytes of data. */
    Path raw(String name, String header, int dataBytes) throws IOException {
        byte[] json = header.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(8 + json.length + dataBytes).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(json.length).put(json);
        Path p = dir.resolve(name);
        Files.write(p, b.array());
        return p;
    }

    Path small() throws IOException {
        Path p = dir.resolve("small.safetensors");
        new SafetensorsWriter().metadata("format", "pt")
                .f32("a", new long[] {2, 3}, new float[] {1, 2, 3, 4, 5, 6})
                .tensor("h", SafetensorsDtype.F16, new long[] {3}, MemorySegment.ofArray(new short[] {
                    Float.floatToFloat16(1.5f), Float.floatToFloat16(-2f), Float.floatToFloat16(0.25f)}))
                .tensor("b", SafetensorsDtype.BF16, new long[] {}, MemorySegment.ofArray(new short[] {0x3f80}))
                .f32("empty", new long[] {0, 4}, new float[0])
                .write(p);
        return p;
    }

    @Test
    void roundTripsTensorsAndMetadata() throws IOException {
        Path p = small();
        try (SafetensorsFile f = SafetensorsFile.open(p)) {
            assertThat(f.metadata()).containsEntry("format", "pt").hasSize(1);
            assertThat(f.tensors()).extracting(SafetensorsTensor::name).containsExactlyInAnyOrder("a", "h", "b", "empty");
            assertThat(f.dataStart() % 8).isZero();
            SafetensorsTensor a = f.tensor("a").orElseThrow();
            assertThat(a.shape()).containsExactly(2, 3);
            assertThat(a.dtype()).isEqualTo(SafetensorsDtype.F32);
            MemorySegment data = f.data(a);
            assertThat(data.isReadOnly()).isTrue();
            assertThat(data.toArray(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN)))
                    .containsExactly(1, 2, 3, 4, 5, 6);
            SafetensorsTensor h = f.tensor("h").orElseThrow();
            short[] halves = f.data(h).toArray(ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN));
            assertThat(Float.float16ToFloat(halves[1])).isEqualTo(-2f);
            assertThat(f.tensor("b").orElseThrow().elements()).isEqualTo(1);
            assertThat(f.tensor("empty").orElseThrow().bytes()).isZero();
            // The writer puts the 4-byte dtype first, so every tensor is aligned to its element size.
            for (SafetensorsTensor t : f.tensors()) {
                assertThat((f.dataStart() + t.begin()) % t.dtype().bytes()).isZero();
            }
        }
    }

    @Test
    void closeUnmapsAndIsIdempotent() throws IOException {
        SafetensorsFile f = SafetensorsFile.open(small());
        MemorySegment a = f.data(f.tensor("a").orElseThrow());
        f.close();
        f.close();
        assertThat(f.isOpen()).isFalse();
        assertThatThrownBy(() -> a.get(ValueLayout.JAVA_BYTE, 0)).isInstanceOf(IllegalStateException.class);
    }

    void rejects(Path p, String message) {
        assertThatThrownBy(() -> SafetensorsFile.open(p)).isInstanceOf(SafetensorsException.class)
                .hasMessage(p + ": " + message).hasMessageNotContaining("\n");
    }

    @Test
    void rejectsAFileShorterThanTheHeaderLength() throws IOException {
        Path p = dir.resolve("tiny");
        Files.write(p, new byte[] {1, 2, 3});
        rejects(p, "truncated: 3 bytes, but a safetensors file starts with an 8-byte header length");
    }

    @Test
    void rejectsAHeaderLengthBeyondTheFileOrAbsurd() throws IOException {
        Path beyond = dir.resolve("beyond");
        Files.write(beyond, ByteBuffer.allocate(20).order(ByteOrder.LITTLE_ENDIAN).putLong(100).array());
        rejects(beyond, "header length 100 runs past the end of the file (20 bytes)");
        Path absurd = dir.resolve("absurd");
        Files.write(absurd, ByteBuffer.allocate(20).order(ByteOrder.LITTLE_ENDIAN).putLong(1L << 40).array());
        rejects(absurd, "header length 1099511627776 is absurd (more than 100000000 bytes); not a safetensors file?");
        Path negative = dir.resolve("negative");
        Files.write(negative, ByteBuffer.allocate(20).order(ByteOrder.LITTLE_ENDIAN).putLong(-1).array());
        rejects(negative, "header length 18446744073709551615 is absurd (more than 100000000 bytes); not a"
                + " safetensors file?");
    }

    @Test
    void rejectsEveryTruncation() throws IOException {
        byte[] whole = Files.readAllBytes(small());
        for (int cut = 0; cut < whole.length; cut++) {
            Path p = dir.resolve("cut");
            Files.write(p, Arrays.copyOf(whole, cut));
            assertThatThrownBy(() -> SafetensorsFile.open(p)).as("cut at %d", cut)
                    .isInstanceOf(SafetensorsException.class).hasMessageStartingWith(p.toString());
        }
    }

    @Test
    void rejectsAHeaderThatIsNotAJsonObject() throws IOException {
        rejects(raw("array", "[1, 2]", 0), "header is not a JSON object");
        assertThatThrownBy(() -> SafetensorsFile.open(raw("broken", "{\"a\": ", 0)))
                .isInstanceOf(SafetensorsException.class).hasMessageContaining("header is not valid JSON: ")
                .hasMessageNotContaining("\n");
        assertThatThrownBy(() -> SafetensorsFile.open(raw("twice",
                "{\"a\": {\"dtype\": \"F32\", \"shape\": [], \"data_offsets\": [0, 4]},"
                        + " \"a\": {\"dtype\": \"F32\", \"shape\": [], \"data_offsets\": [4, 8]}}", 8)))
                .isInstanceOf(SafetensorsException.class).hasMessageContaining("Duplicate field 'a'");
    }

    @Test
    void rejectsAnUnsupportedDtypeByName() throws IOException {
        rejects(raw("i64", "{\"ids\": {\"dtype\": \"I64\", \"shape\": [2], \"data_offsets\": [0, 16]}}", 16),
                "tensor ids has dtype I64, unsupported (supported: F32, F16, BF16)");
        rejects(raw("f8", "{\"x\": {\"dtype\": \"F8_E4M3\", \"shape\": [2], \"data_offsets\": [0, 2]}}", 2),
                "tensor x has dtype F8_E4M3, unsupported (supported: F32, F16, BF16)");
    }

    @Test
    void rejectsOffsetsPastTheEnd() throws IOException {
        rejects(raw("past", "{\"x\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]}}", 12),
                "tensor x has data_offsets [0, 16] past the end of the data (12 bytes)");
        rejects(raw("backwards", "{\"x\": {\"dtype\": \"F32\", \"shape\": [0], \"data_offsets\": [8, 4]}}", 12),
                "tensor x has data_offsets [8, 4] ending before they begin");
        rejects(raw("negative", "{\"x\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [-4, 0]}}", 12),
                "tensor x data_offsets[0] = -4 is not an integer in [0, 2^63)");
        rejects(raw("huge", "{\"x\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 99999999999999999999]}}",
                12), "tensor x data_offsets[1] = 99999999999999999999 is not an integer in [0, 2^63)");
    }

    @Test
    void rejectsOverlappingTensors() throws IOException {
        rejects(raw("overlap", "{\"x\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
                        + " \"y\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}", 12),
                "tensors x [0, 8) and y [4, 12) overlap");
    }

    @Test
    void rejectsAMisalignedTensor() throws IOException {
        rejects(raw("misaligned", "{\"x\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [2, 10]}}", 12),
                "tensor x starts at data offset 2, not a multiple of its F32 size 4");
        rejects(raw("misaligned16", "{\"x\": {\"dtype\": \"BF16\", \"shape\": [1], \"data_offsets\": [1, 3]}}", 4),
                "tensor x starts at data offset 1, not a multiple of its BF16 size 2");
    }

    @Test
    void rejectsAShapeThatDoesNotMatchTheByteRange() throws IOException {
        rejects(raw("short", "{\"x\": {\"dtype\": \"F16\", \"shape\": [2, 3], \"data_offsets\": [0, 8]}}", 12),
                "tensor x has shape [2, 3] of F16, 12 bytes, but data_offsets [0, 8] hold 8");
        rejects(raw("overflow", "{\"x\": {\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296],"
                + " \"data_offsets\": [0, 8]}}", 12), "tensor x has shape [4294967296, 4294967296] of more than 2^63"
                + " elements");
        rejects(raw("overflowBytes", "{\"x\": {\"dtype\": \"F32\", \"shape\": [4611686018427387904],"
                + " \"data_offsets\": [0, 8]}}", 12), "tensor x has shape [4611686018427387904] of F32, more than 2^63"
                + " bytes, but data_offsets [0, 8] hold 8");
        rejects(raw("fraction", "{\"x\": {\"dtype\": \"F32\", \"shape\": [1.5], \"data_offsets\": [0, 8]}}", 12),
                "tensor x shape[0] = 1.5 is not an integer in [0, 2^63)");
    }

    @Test
    void rejectsMalformedTensorEntries() throws IOException {
        rejects(raw("noDtype", "{\"x\": {\"shape\": [1], \"data_offsets\": [0, 4]}}", 4), "tensor x has no dtype string");
        rejects(raw("noShape", "{\"x\": {\"dtype\": \"F32\", \"data_offsets\": [0, 4]}}", 4), "tensor x has no shape array");
        rejects(raw("noOffsets", "{\"x\": {\"dtype\": \"F32\", \"shape\": [1]}}", 4),
                "tensor x has no data_offsets [begin, end]");
        rejects(raw("notObject", "{\"x\": 3}", 4), "tensor x is not an object with dtype, shape and data_offsets");
        rejects(raw("metadata", "{\"__metadata__\": {\"format\": 1}}", 0), "__metadata__.format is not a string");
    }
}
