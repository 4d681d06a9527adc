package dev.tandem.llm.reference;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class ByteTokenizerTest {

    private static List<String> pieces(int... tokens) {
        ByteTokenizer.Decoder decoder = new ByteTokenizer.Decoder();
        List<String> out = new ArrayList<>();
        for (int token : tokens) {
            out.add(decoder.append(token));
        }
        return out;
    }

    private static int[] bytes(String text) {
        byte[] raw = text.getBytes(StandardCharsets.UTF_8);
        int[] tokens = new int[raw.length];
        for (int i = 0; i < raw.length; i++) {
            tokens[i] = raw[i] & 0xFF;
        }
        return tokens;
    }

    @Test
    void encodeStartsWithBosAndRoundTrips() {
        String text = "héllo, 世界 🎉";
        int[] tokens = ByteTokenizer.encode(text);
        assertThat(tokens[0]).isEqualTo(ByteTokenizer.BOS);
        assertThat(ByteTokenizer.decode(tokens)).isEqualTo(text);
    }

    @Test
    void aCharacterSplitAcrossTokensIsShownOnlyWhenComplete() {
        // "é" is C3 A9, "世" is E4 B8 96, "🎉" is F0 9F 8E 89.
        assertThat(pieces(bytes("aé世🎉b"))).containsExactly("a", "", "é", "", "", "世", "", "", "", "🎉", "b");
    }

    @Test
    void everyPrefixOfTheStreamIsWellFormedText() {
        int[] tokens = bytes("ünïcödé ✓ 𝄞");
        ByteTokenizer.Decoder decoder = new ByteTokenizer.Decoder();
        StringBuilder shown = new StringBuilder();
        for (int token : tokens) {
            shown.append(decoder.append(token));
            assertThat(shown.toString()).doesNotContain("\uFFFD");
            assertThat(StandardCharsets.UTF_8.newEncoder().canEncode(shown)).isTrue(); // no lone surrogate
        }
        assertThat(shown.toString()).isEqualTo("ünïcödé ✓ 𝄞");
    }

    @Test
    void malformedBytesShowAsReplacementAndDecodingRecovers() {
        assertThat(pieces(0x80)).containsExactly("\uFFFD"); // continuation without a lead
        assertThat(pieces(0xC3, 0x41)).containsExactly("", "\uFFFDA"); // cut short by an ASCII byte
        assertThat(pieces(0xE4, 0xB8, ByteTokenizer.EOS, 0x41)).containsExactly("", "", "\uFFFD", "A");
        assertThat(pieces(0xC0, 0xAF)).containsExactly("\uFFFD", "\uFFFD"); // overlong lead
        assertThat(pieces(0xED, 0xA0, 0x80)).containsExactly("", "\uFFFD", "\uFFFD"); // a surrogate
        assertThat(pieces(0xF5)).containsExactly("\uFFFD");
        ByteTokenizer.Decoder decoder = new ByteTokenizer.Decoder();
        assertThat(decoder.append(0xF0)).isEmpty();
        assertThat(decoder.finish()).isEqualTo("\uFFFD");
    }

    @Test
    void controlBytesCannotMoveTheCursor() {
        assertThat(pieces(0x1B, '[', 0x07, 0x7F, '\n', '\t')).containsExactly("·", "[", "·", "·", "\n", "\t");
        assertThat(pieces(0xC2, 0x9B)).containsExactly("", "·"); // C1 CSI
        assertThat(pieces(ByteTokenizer.BOS, ByteTokenizer.EOS)).containsExactly("", "");
    }
}
