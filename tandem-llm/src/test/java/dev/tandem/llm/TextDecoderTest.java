package dev.tandem.llm;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.StringLength;
import org.junit.jupiter.api.Test;

class TextDecoderTest {

    private static List<String> feed(TextDecoder d, byte[]... tokens) {
        List<String> out = new ArrayList<>();
        for (byte[] t : tokens) {
            out.add(d.accept(t));
        }
        return out;
    }

    private static byte[] b(int... values) {
        byte[] out = new byte[values.length];
        for (int i = 0; i < values.length; i++) {
            out[i] = (byte) values[i];
        }
        return out;
    }

    private static byte[] s(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void aCharacterSplitAcrossTokensArrivesWithTheTokenThatCompletesIt() {
        // "é" is C3 A9; "€" is E2 82 AC; "🙂" is F0 9F 99 82.
        TextDecoder d = new TextDecoder(List.of());
        assertThat(feed(d, b(0x61, 0xC3), b(0xA9), b(0xE2), b(0x82), b(0xAC, 0x62), b(0xF0, 0x9F), b(0x99),
                b(0x82))).containsExactly("a", "é", "", "", "€b", "", "", "🙂");
        assertThat(d.finish()).isEmpty();
    }

    @Test
    void malformedBytesBecomeReplacementCharactersOnceTheyCannotComplete() {
        TextDecoder d = new TextDecoder(List.of());
        // A lone continuation byte is malformed at once; a lead byte followed by ASCII, when the ASCII comes.
        assertThat(feed(d, b(0x80), b(0xC3), b(0x41))).containsExactly("\uFFFD", "", "\uFFFDA");
        assertThat(d.accept(b(0xE2, 0x82))).isEmpty();
        assertThat(d.finish()).isEqualTo("\uFFFD");
    }

    @Test
    void aStopStringSplitOverThreeTokensEndsTheTextBeforeIt() {
        TextDecoder d = new TextDecoder(List.of("<|end|>"));
        assertThat(feed(d, s("Hello <"), s("|en"), s("d|> more"))).containsExactly("Hello ", "", "");
        assertThat(d.stopped()).isEqualTo("<|end|>");
        assertThat(d.accept(s("after"))).isEmpty();
        assertThat(d.finish()).isEmpty();
    }

    @Test
    void aPartialMatchThatFailsReleasesTheHeldTextInOrder() {
        TextDecoder d = new TextDecoder(List.of("STOP"));
        assertThat(feed(d, s("a S"), s("TO"), s("x"), s("y"))).containsExactly("a ", "", "STOx", "y");
        assertThat(d.stopped()).isNull();
        assertThat(d.accept(s("ST"))).isEmpty();
        assertThat(d.finish()).isEqualTo("ST");
    }

    @Test
    void overlappingStopStringsEndAtTheEarliestAndHoldTheLongestPrefix() {
        TextDecoder d = new TextDecoder(List.of("abcd", "bc"));
        assertThat(d.accept(s("xab"))).isEqualTo("x");
        assertThat(d.accept(s("c"))).isEqualTo("a");
        assertThat(d.stopped()).isEqualTo("bc");
    }

    @Test
    void aStopStringInsideAMultiByteCharacterSequenceIsFoundAfterItCompletes() {
        TextDecoder d = new TextDecoder(List.of("é!"));
        assertThat(feed(d, b(0x78, 0xC3), b(0xA9), s("!"))).containsExactly("x", "", "");
        assertThat(d.stopped()).isEqualTo("é!");
    }

    @Property(tries = 300)
    void anySplitOfAnyTextGivesBackTheTextAndEveryDeltaIsWhole(@ForAll @StringLength(max = 40) String text,
            @ForAll @IntRange(min = 1, max = 7) int cut) {
        byte[] bytes = s(text);
        TextDecoder d = new TextDecoder(List.of());
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < bytes.length; i += cut) {
            String delta = d.accept(Arrays.copyOfRange(bytes, i, Math.min(bytes.length, i + cut)));
            // Whole characters only: no lone surrogate, and no replacement the input did not have.
            assertThat(delta.chars().filter(c -> c == 0xFFFD).count())
                    .isLessThanOrEqualTo(text.chars().filter(c -> c == 0xFFFD).count());
            out.append(delta);
        }
        out.append(d.finish());
        assertThat(out.toString()).isEqualTo(new String(bytes, StandardCharsets.UTF_8));
    }

    @Property(tries = 300)
    void withAStopStringTheTextIsThePrefixBeforeItsFirstOccurrence(@ForAll @StringLength(max = 30) String head,
            @ForAll @IntRange(min = 1, max = 5) int cut) {
        String stop = "\u00a7end";
        String text = head + stop + "tail";
        byte[] bytes = s(text);
        TextDecoder d = new TextDecoder(List.of(stop));
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < bytes.length; i += cut) {
            out.append(d.accept(Arrays.copyOfRange(bytes, i, Math.min(bytes.length, i + cut))));
        }
        out.append(d.finish());
        assertThat(out.toString()).isEqualTo(text.substring(0, text.indexOf(stop)));
        assertThat(d.stopped()).isEqualTo(stop);
    }
}
