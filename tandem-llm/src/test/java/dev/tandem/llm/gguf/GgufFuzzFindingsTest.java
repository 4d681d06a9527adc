package dev.tandem.llm.gguf;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tandem.llm.reference.GgufWriter;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What {@link GgufFuzzTest} found, each pinned as a plain test with its message. */
class GgufFuzzFindingsTest {
    @TempDir
    Path dir;

    /** A row of 2^62 f32 values has more bytes than a long counts: that was an ArithmeticException. */
    @Test
    void aRowOfMoreThan2To63BytesIsAnError() throws IOException {
        Path p = dir.resolve("huge-row.gguf");
        new GgufWriter().tensor("t", GgmlType.F32, new long[] {4}, MemorySegment.ofArray(new float[4])).write(p);
        byte[] data = Files.readAllBytes(p);
        // 24-byte header, then the name (8 + 1), n_dims (4), the dim.
        ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN).putLong(24 + 9 + 4, 1L << 62);
        Files.write(p, data);
        assertThatThrownBy(() -> GgufFile.open(p)).isInstanceOf(GgufException.class)
                .hasMessage(p + ": tensor t has rows of more than 2^63 bytes");
    }
}
