package dev.tandem.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tandem.llm.gguf.GgmlType;
import dev.tandem.llm.gguf.GgufFile;
import dev.tandem.llm.gguf.GgufTensor;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RandomGgufTest {

    @Test
    void aTypeWhoseBlocksDivideTheRowsIsKept() {
        for (String type : new String[] {"Q4_K", "Q6_K", "Q2_K", "IQ4_XS", "Q8_0", "F32"}) {
            assertThat(RandomGguf.fallback(GgmlType.byName(type), 4864).name()).isEqualTo(type);
        }
    }

    /** The table of llama.cpp's {@code tensor_type_fallback} for rows of Qwen2.5-0.5B's width. */
    @Test
    void rowsThatAK_QuantCannotHoldFallBackAsLlamaQuantizeDoes() {
        Map<String, String> expected = Map.of("Q4_K", "Q5_0", "Q5_K", "Q5_1", "Q6_K", "Q8_0", "Q2_K", "Q4_0",
                "Q3_K", "Q4_0", "IQ4_XS", "IQ4_NL");
        expected.forEach((from, to) -> assertThat(RandomGguf.fallback(GgmlType.byName(from), 896).name())
                .as(from).isEqualTo(to));
    }

    @Test
    void rowsNoTypeCanHoldFailNamingTheBlockSizes() {
        assertThatThrownBy(() -> RandomGguf.fallback(GgmlType.byName("Q4_K"), 100))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("rows of 100 values fit neither Q4_K (blocks of 256) nor its fallback Q5_0 (blocks of 32)");
        assertThatThrownBy(() -> RandomGguf.fallback(GgmlType.byName("Q8_0"), 100))
                .hasMessage("rows of 100 values fit neither Q8_0 (blocks of 32)");
    }

    /** A shape whose width is not a multiple of 256, in Q4_K: the mix a user's Q4_K file of it holds. */
    @Test
    void aNarrowShapeInAK_QuantIsWrittenWithTheFallbackWhereItMustBe(@TempDir Path dir) {
        Path path = dir.resolve("narrow-q4_k.gguf");
        RandomGguf.write(path, RandomGguf.shape(96, 1, 2, 1, 256), GgmlType.byName("Q4_K"), 3);
        Map<String, String> types = new TreeMap<>();
        try (GgufFile file = GgufFile.open(path)) {
            for (GgufTensor t : file.tensors()) {
                types.put(t.name(), t.type().name());
            }
        }
        assertThat(types).containsEntry("blk.0.attn_q.weight", "Q5_0") // rows of 96
                .containsEntry("blk.0.ffn_gate.weight", "Q5_0")
                .containsEntry("blk.0.ffn_down.weight", "Q4_K") // rows of 256
                .containsEntry("token_embd.weight", "Q5_0")
                .containsEntry("blk.0.attn_norm.weight", "F32");
    }
}
