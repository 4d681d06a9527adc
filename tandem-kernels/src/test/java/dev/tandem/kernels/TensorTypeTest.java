package dev.tandem.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class TensorTypeTest {

    /** ggml.h's ids and ggml-common.h's block sizes and {@code sizeof(block_*)}. */
    @ParameterizedTest(name = "{0}")
    @CsvSource({
        "F32,  0,  f32,    1,   4",
        "F16,  1,  f16,    1,   2",
        "Q4_0, 2,  q4_0,  32,  18",
        "Q8_0, 8,  q8_0,  32,  34",
        "Q4_K, 12, q4_K, 256, 144",
        "Q6_K, 14, q6_K, 256, 210",
        "BF16, 30, bf16,   1,   2"
    })
    void idsAndBlockGeometryAreGgmls(TensorType type, int id, String ggmlName, int blockSize, int blockBytes) {
        assertThat(type.ggmlId()).isEqualTo(id);
        assertThat(type.ggmlName()).isEqualTo(ggmlName);
        assertThat(type.blockSize()).isEqualTo(blockSize);
        assertThat(type.blockBytes()).isEqualTo(blockBytes);
        assertThat(type.isQuantized()).isEqualTo(blockSize > 1);
        assertThat(TensorType.fromGgmlId(id)).isSameAs(type);
        assertThat(TensorType.fromName(ggmlName)).isSameAs(type);
        assertThat(TensorType.fromName(type.name())).isSameAs(type);
        assertThat(TensorType.fromName(type.name().toLowerCase(java.util.Locale.ROOT))).isSameAs(type);
    }

    @Test
    void bytesCountWholeBlocks() {
        assertThat(TensorType.F32.bytes(3)).isEqualTo(12);
        assertThat(TensorType.F16.rowBytes(4096)).isEqualTo(8192);
        assertThat(TensorType.BF16.bytes(7)).isEqualTo(14);
        assertThat(TensorType.Q8_0.rowBytes(4096)).isEqualTo(128 * 34);
        assertThat(TensorType.Q4_0.rowBytes(64)).isEqualTo(36);
        assertThat(TensorType.Q4_K.rowBytes(4096)).isEqualTo(16 * 144);
        assertThat(TensorType.Q6_K.bytes(256L * 1_000_000_000L)).isEqualTo(210L * 1_000_000_000L);
        assertThat(TensorType.Q6_K.bytes(0)).isZero();
    }

    @Test
    void aLengthThatIsNotWholeBlocksIsRejectedNamingTheTypeAndTheLength() {
        assertThatThrownBy(() -> TensorType.Q4_K.rowBytes(4000))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("Q4_K.rowBytes: cols = 4000 is not a multiple of the Q4_K block size 256");
        assertThatThrownBy(() -> TensorType.Q8_0.bytes(33))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("Q8_0.bytes: elements = 33 is not a multiple of the Q8_0 block size 32");
        assertThatThrownBy(() -> TensorType.F16.rowBytes(-1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("F16.rowBytes: cols = -1 must be >= 0");
        assertThatThrownBy(() -> TensorType.F32.bytes(Long.MAX_VALUE))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("F32.bytes: elements = 9223372036854775807 is more than a long can count in bytes");
    }

    @Test
    void anUnsupportedIdIsReportedByItsGgmlName() {
        String supported = "; tandem reads F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, BF16";
        assertThatThrownBy(() -> TensorType.fromGgmlId(16))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("unsupported ggml tensor type IQ2_XXS (16)" + supported);
        assertThatThrownBy(() -> TensorType.fromGgmlId(21))
                .hasMessage("unsupported ggml tensor type IQ3_S (21)" + supported);
        assertThatThrownBy(() -> TensorType.fromGgmlId(39))
                .hasMessage("unsupported ggml tensor type MXFP4 (39)" + supported);
        assertThatThrownBy(() -> TensorType.fromGgmlId(4))
                .hasMessage("unsupported ggml tensor type Q4_2 (4, removed from ggml)" + supported);
        assertThatThrownBy(() -> TensorType.fromGgmlId(31))
                .hasMessage("unsupported ggml tensor type Q4_0_4_4 (31, removed from GGUF)" + supported);
        assertThatThrownBy(() -> TensorType.fromGgmlId(99))
                .hasMessage("unsupported ggml tensor type id 99 (not a ggml type id)" + supported);
        assertThatThrownBy(() -> TensorType.fromGgmlId(-1))
                .hasMessage("unsupported ggml tensor type id -1 (not a ggml type id)" + supported);
    }

    @Test
    void nameLookupNamesUnsupportedAndUnknownTypes() {
        assertThatThrownBy(() -> TensorType.fromName("iq2_xxs"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("unsupported ggml tensor type IQ2_XXS (16);");
        assertThatThrownBy(() -> TensorType.fromName("Q4_2"))
                .hasMessageStartingWith("unsupported ggml tensor type Q4_2 (4, removed from ggml);");
        assertThatThrownBy(() -> TensorType.fromName("q9_9"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("'q9_9' is not a ggml tensor type name");
        assertThatThrownBy(() -> TensorType.fromName(null)).hasMessage("ggml tensor type name is null");
    }
}
