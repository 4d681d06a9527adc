package dev.tandem.llm.gguf;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tandem.llm.reference.GgufWriter;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The edges of the reader's and loader's limits, each side of each bound (mutation testing found
 * them untested), and that a failed open leaves nothing mapped.
 */
class GgufBoundariesTest {
    @TempDir
    Path dir;

    private Path write(String name, GgufWriter w) throws IOException {
        Path p = dir.resolve(name);
        w.write(p);
        return p;
    }

    @Test
    void fourDimensionsAreAcceptedAndFiveAreNot() throws IOException {
        Path four = write("four.gguf", new GgufWriter().tensor("t", GgmlType.F32, new long[] {1, 2, 1, 2},
                MemorySegment.ofArray(new float[4])));
        try (GgufFile f = GgufFile.open(four)) {
            assertThat(f.tensors().getFirst().dims()).containsExactly(1, 2, 1, 2);
        }
        Path five = write("five.gguf", new GgufWriter().tensor("t", GgmlType.F32, new long[] {1, 1, 1, 1, 2},
                MemorySegment.ofArray(new float[2])));
        assertThatThrownBy(() -> GgufFile.open(five)).isInstanceOf(GgufException.class)
                .hasMessageContaining("tensor t has 5 dimensions; at most 4");
    }

    @Test
    void aDimensionOfZeroIsRejectedAndOneIsNot() throws IOException {
        Path one = write("one.gguf", new GgufWriter().tensor("t", GgmlType.F32, new long[] {1},
                MemorySegment.ofArray(new float[1])));
        try (GgufFile f = GgufFile.open(one)) {
            assertThat(f.tensors().getFirst().elements()).isEqualTo(1);
        }
        // The writer refuses a zero dimension, so patch one in: 24-byte header, name (8 + 1), n_dims (4), dim.
        byte[] bytes = Files.readAllBytes(one);
        java.nio.ByteBuffer.wrap(bytes).order(java.nio.ByteOrder.LITTLE_ENDIAN).putLong(24 + 9 + 4, 0);
        Path zero = dir.resolve("zero.gguf");
        Files.write(zero, bytes);
        assertThatThrownBy(() -> GgufFile.open(zero)).hasMessageContaining("dimension 0 = 0; every dimension must be at least 1");
    }

    @Test
    void alignmentUpToTwoToTheTwentyIsAcceptedAndBeyondIsNot() throws IOException {
        Path most = write("most.gguf", new GgufWriter().alignment(1 << 20)
                .tensor("t", GgmlType.F32, new long[] {1}, MemorySegment.ofArray(new float[1])));
        try (GgufFile f = GgufFile.open(most)) {
            assertThat(f.alignment()).isEqualTo(1 << 20);
            assertThat(f.data(f.tensors().getFirst()).byteSize()).isEqualTo(4);
        }
        Path beyond = write("beyond.gguf", new GgufWriter().put("general.alignment", 1 << 21));
        assertThatThrownBy(() -> GgufFile.open(beyond)).hasMessageContaining("general.alignment = 2097152");
        Path three = write("three.gguf", new GgufWriter().put("general.alignment", 3));
        assertThatThrownBy(() -> GgufFile.open(three)).hasMessageContaining("is not a power of two");
        Path zero = write("zero-alignment.gguf", new GgufWriter().put("general.alignment", 0));
        assertThatThrownBy(() -> GgufFile.open(zero)).hasMessageContaining("general.alignment = 0");
    }

    @Test
    void aTensorEndingExactlyAtTheEndOfTheFileIsInside() throws IOException {
        // With the default alignment the data section of one 4-byte tensor ends the file.
        Path p = write("exact.gguf", new GgufWriter().tensor("t", GgmlType.F32, new long[] {1},
                MemorySegment.ofArray(new float[] {42f})));
        try (GgufFile f = GgufFile.open(p)) {
            assertThat(f.fileBytes()).isEqualTo(f.alignment() * (f.fileBytes() / f.alignment()) + 4);
            assertThat(f.data(f.tensors().getFirst()).get(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, 0))
                    .isEqualTo(42f);
        }
        byte[] bytes = Files.readAllBytes(p);
        Path cut = dir.resolve("cut.gguf");
        Files.write(cut, java.util.Arrays.copyOf(bytes, bytes.length - 1));
        assertThatThrownBy(() -> GgufFile.open(cut)).hasMessageContaining("extends past the end of the file");
    }

    /** Whether this process maps {@code file} (Linux: /proc/self/maps lists every mapped file). */
    private static boolean mapped(Path file) throws IOException {
        try (Stream<String> lines = Files.lines(Path.of("/proc/self/maps"))) {
            String name = file.toAbsolutePath().toString();
            return lines.anyMatch(l -> l.endsWith(name));
        }
    }

    @Test
    void aFailedOpenLeavesNothingMapped() throws IOException {
        // Parses as GGUF, fails in the model loader: the mapping must be closed on the way out.
        Path gpt2 = write("gpt2.gguf", new GgufWriter().put("general.architecture", "gpt2")
                .tensor("t", GgmlType.F32, new long[] {1024}, MemorySegment.ofArray(new float[1024])));
        assertThatThrownBy(() -> GgufModel.open(gpt2)).hasMessageContaining("unsupported architecture 'gpt2'");
        assertThat(mapped(gpt2)).as("mapped after a failed GgufModel.open").isFalse();
        // Fails in the reader, after mapping: the same.
        Path bad = write("bad.gguf", new GgufWriter().put("general.alignment", 3)
                .tensor("t", GgmlType.F32, new long[] {1024}, MemorySegment.ofArray(new float[1024])));
        assertThatThrownBy(() -> GgufFile.open(bad)).isInstanceOf(GgufException.class);
        assertThat(mapped(bad)).as("mapped after a failed GgufFile.open").isFalse();
        // And a model that loads is unmapped by close().
        Path ok = write("ok.gguf", new GgufWriter().tensor("t", GgmlType.F32, new long[] {1024},
                MemorySegment.ofArray(new float[1024])));
        GgufFile f = GgufFile.open(ok);
        assertThat(mapped(ok)).isTrue();
        f.close();
        assertThat(mapped(ok)).isFalse();
    }

    @Test
    void theHeadWidthDefaultsToDimOverHeadsAndKeyLengthOverridesIt() throws IOException {
        for (boolean explicit : new boolean[] {false, true}) {
            GgufWriter w = new GgufWriter().put("general.architecture", "llama").put("llama.embedding_length", 64)
                    .put("llama.block_count", 1).put("llama.attention.head_count", 4)
                    .put("llama.attention.head_count_kv", 2).put("llama.feed_forward_length", 32);
            int headDim = explicit ? 32 : 16;
            if (explicit) {
                w.put("llama.attention.key_length", 32).put("llama.attention.value_length", 32)
                        .put("llama.rope.dimension_count", 32);
            }
            int q = 4 * headDim;
            int kv = 2 * headDim;
            w.tensor("token_embd.weight", GgmlType.F32, new long[] {64, 8}, MemorySegment.ofArray(new float[64 * 8]));
            w.tensor("output_norm.weight", GgmlType.F32, new long[] {64}, MemorySegment.ofArray(new float[64]));
            w.tensor("blk.0.attn_norm.weight", GgmlType.F32, new long[] {64}, MemorySegment.ofArray(new float[64]));
            w.tensor("blk.0.ffn_norm.weight", GgmlType.F32, new long[] {64}, MemorySegment.ofArray(new float[64]));
            w.tensor("blk.0.attn_q.weight", GgmlType.F32, new long[] {64, q}, MemorySegment.ofArray(new float[64 * q]));
            w.tensor("blk.0.attn_k.weight", GgmlType.F32, new long[] {64, kv}, MemorySegment.ofArray(new float[64 * kv]));
            w.tensor("blk.0.attn_v.weight", GgmlType.F32, new long[] {64, kv}, MemorySegment.ofArray(new float[64 * kv]));
            w.tensor("blk.0.attn_output.weight", GgmlType.F32, new long[] {q, 64}, MemorySegment.ofArray(new float[64 * q]));
            w.tensor("blk.0.ffn_gate.weight", GgmlType.F32, new long[] {64, 32}, MemorySegment.ofArray(new float[64 * 32]));
            w.tensor("blk.0.ffn_up.weight", GgmlType.F32, new long[] {64, 32}, MemorySegment.ofArray(new float[64 * 32]));
            w.tensor("blk.0.ffn_down.weight", GgmlType.F32, new long[] {32, 64}, MemorySegment.ofArray(new float[64 * 32]));
            Path p = write("heads-" + explicit + ".gguf", w);
            try (GgufModel m = GgufModel.open(p)) {
                assertThat(m.config().headDim()).isEqualTo(headDim);
                assertThat(m.config().qDim()).isEqualTo(q);
                assertThat(m.config().tiedEmbeddings()).isTrue();
                assertThat(m.config().ropeStyle()).isEqualTo(dev.tandem.llm.model.RopeStyle.INTERLEAVED);
            }
        }
    }
}
