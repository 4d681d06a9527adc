package dev.tandem.llm.sampling;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/** Text deltas from token bytes: whole characters only, ending at stop strings. */
class TextStreamerTest {

    /** A vocabulary given token by token: token i's bytes are {@code pieces.get(i)}. */
    static final class Pieces {
        final List<byte[]> pieces = new ArrayList<>();

        int add(byte... bytes) {
            pieces.add(bytes);
            return pieces.size() - 1;
        }

        int add(String text) {
            return add(text.getBytes(UTF_8));
        }

        TextStreamer streamer(String... stops) {
            return new TextStreamer(pieces::get, List.of(stops));
        }
    }

    static byte[] bytes(int... values) {
        byte[] out = new byte[values.length];
        for (int i = 0; i < values.length; i++) {
            out[i] = (byte) values[i];
        }
        return out;
    }

    /** The delta of each token, then of {@code finish()}. */
    static List<String> deltas(TextStreamer streamer, int... tokens) {
        List<String> out = new ArrayList<>();
        for (int token : tokens) {
            out.add(streamer.accept(token));
        }
        out.add(streamer.finish());
        return out;
    }

    @Test
    void aTwoByteCharacterSplitOverTwoTokensComesWhole() {
        Pieces p = new Pieces();
        assertThat(deltas(p.streamer(), p.add(bytes(0x63, 0x61, 0x66, 0xC3)), p.add(bytes(0xA9, 0x21))))
                .containsExactly("caf", "é!", "");
    }

    @Test
    void threeAndFourByteCharactersSplitByteByByte() {
        Pieces p = new Pieces();
        int[] euro = {p.add(bytes(0xE2)), p.add(bytes(0x82)), p.add(bytes(0xAC))};
        int[] grin = {p.add(bytes(0xF0)), p.add(bytes(0x9F)), p.add(bytes(0x98)), p.add(bytes(0x80))};
        TextStreamer streamer = p.streamer();
        assertThat(deltas(streamer, euro[0], euro[1], euro[2], grin[0], grin[1], grin[2], grin[3]))
                .containsExactly("", "", "€", "", "", "", "😀", "");
        assertThat(streamer.text()).isEqualTo("€😀");
    }

    @Test
    void anEmojiSplitOverTwoTokensWithTextAround() {
        Pieces p = new Pieces();
        // 👍🏽 is two code points (thumbs up, skin tone), eight bytes
        byte[] all = "ok 👍🏽!".getBytes(UTF_8);
        int first = p.add(java.util.Arrays.copyOfRange(all, 0, 5));
        int second = p.add(java.util.Arrays.copyOfRange(all, 5, all.length));
        assertThat(deltas(p.streamer(), first, second)).containsExactly("ok ", "👍🏽!", "");
    }

    @Test
    void invalidBytesBecomeReplacementCharactersOnceTheyCannotComplete() {
        Pieces p = new Pieces();
        int lead = p.add(bytes(0xC3));
        int letter = p.add("a");
        int stray = p.add(bytes(0x80));
        int never = p.add(bytes(0xFF));
        int surrogate = p.add(bytes(0xED, 0xA0, 0x80));
        int overlong = p.add(bytes(0xC0, 0xAF));
        assertThat(deltas(p.streamer(), lead, letter, stray, never, surrogate, overlong))
                .containsExactly("", "\uFFFDa", "\uFFFD", "\uFFFD", "\uFFFD\uFFFD\uFFFD", "\uFFFD\uFFFD", "");
    }

    @Test
    void anIncompleteCharacterAtTheEndIsOneReplacementCharacter() {
        Pieces p = new Pieces();
        assertThat(deltas(p.streamer(), p.add("x"), p.add(bytes(0xF0, 0x9F, 0x98)))).containsExactly("x", "", "\uFFFD");
    }

    @Test
    void aStopStringSplitOverThreeTokensEndsTheStreamUnemitted() {
        Pieces p = new Pieces();
        TextStreamer streamer = p.streamer("<|end|>");
        assertThat(deltas(streamer, p.add("Hello<"), p.add("|en"), p.add("d|> more"))).containsExactly("Hello", "", "", "");
        assertThat(streamer.stopped()).isTrue();
        assertThat(streamer.stopString()).isEqualTo("<|end|>");
        assertThat(streamer.stopIndex()).isZero();
        assertThat(streamer.text()).isEqualTo("Hello");
        assertThatThrownBy(() -> streamer.accept(0))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("the stream has stopped at stop string \"<|end|>\"; token 0 comes after its end");
    }

    @Test
    void aPartialMatchThatFailsReleasesTheHeldTextInOrder() {
        Pieces p = new Pieces();
        TextStreamer streamer = p.streamer("<|end|>");
        assertThat(deltas(streamer, p.add("Hi <|e"), p.add("x"), p.add("it"))).containsExactly("Hi ", "<|ex", "it", "");
        assertThat(streamer.stopped()).isFalse();
        assertThat(streamer.stopString()).isNull();
    }

    @Test
    void aRepeatedPrefixHoldsOnlyWhatCanStillMatch() {
        Pieces p = new Pieces();
        int a = p.add("a");
        TextStreamer streamer = p.streamer("aab");
        assertThat(deltas(streamer, a, a, a, p.add("b"))).containsExactly("", "", "a", "", "");
        assertThat(streamer.stopString()).isEqualTo("aab");
    }

    @Test
    void overlappingStopStringsTheEarliestStartWinsThenTheFirstListed() {
        Pieces p = new Pieces();
        TextStreamer earliest = p.streamer("bc", "abc");
        assertThat(deltas(earliest, p.add("zabcd"))).containsExactly("z", "");
        assertThat(earliest.stopString()).isEqualTo("abc");
        assertThat(earliest.stopIndex()).isEqualTo(1);

        TextStreamer sameStart = p.streamer("abc", "ab");
        assertThat(deltas(sameStart, p.add("xabc"))).containsExactly("x", "");
        assertThat(sameStart.stopString()).isEqualTo("abc");

        // "ab" completes a token before "abc" could: it ends the stream there
        TextStreamer prefix = p.streamer("abc", "ab");
        assertThat(deltas(prefix, p.add("a"), p.add("b"))).containsExactly("", "", "");
        assertThat(prefix.stopString()).isEqualTo("ab");

        // "abcx" is held as a possible start until "d" rules it out; "cde" then ends the stream
        TextStreamer chained = p.streamer("abcx", "cde");
        assertThat(deltas(chained, p.add("ab"), p.add("c"), p.add("de"))).containsExactly("", "", "ab", "");
        assertThat(chained.stopString()).isEqualTo("cde");
    }

    @Test
    void aStopStringMadeOfMultiByteCharactersSplitMidCharacter() {
        Pieces p = new Pieces();
        byte[] stop = "«fin»".getBytes(UTF_8);
        TextStreamer streamer = p.streamer("«fin»");
        int first = p.add(concat("so ".getBytes(UTF_8), java.util.Arrays.copyOfRange(stop, 0, 1)));
        int second = p.add(java.util.Arrays.copyOfRange(stop, 1, stop.length));
        assertThat(deltas(streamer, first, second)).containsExactly("so ", "", "");
        assertThat(streamer.stopped()).isTrue();
    }

    @Test
    void finishReleasesAHeldPossibleStart() {
        Pieces p = new Pieces();
        TextStreamer streamer = p.streamer("</s>");
        assertThat(deltas(streamer, p.add("one </"))).containsExactly("one ", "</");
        assertThat(streamer.text()).isEqualTo("one </");
        assertThat(streamer.finish()).isEmpty();
    }

    @Test
    void argumentsAreChecked() {
        assertThatThrownBy(() -> new TextStreamer(t -> new byte[0], List.of("a", ""))).hasMessage("stop string 1 must not be empty");
        TextStreamer streamer = new TextStreamer(t -> null, List.of());
        assertThatThrownBy(() -> streamer.accept(7)).hasMessage("token 7 has no bytes");
    }

    /** Random bytes cut at random token boundaries decode as Java decodes them whole, and every delta is well-formed. */
    @Property(tries = 300)
    void deltasConcatenateToTheWholeDecodingUpToTheFirstStop(@ForAll long seed, @ForAll @IntRange(min = 0, max = 60) int length) {
        Random random = new Random(seed);
        byte[] all = new byte[length];
        String alphabet = "ab<|>é€😀";
        byte[] alphabetBytes = alphabet.getBytes(UTF_8);
        for (int i = 0; i < length; i++) {
            // 0xED is left out: on encoded surrogates (ED A0..BF) Java's decoder folds the bytes into
            // one U+FFFD where Unicode's recommendation, Python and this streamer give one per byte
            // (invalidBytesBecomeReplacementCharactersOnceTheyCannotComplete pins that case).
            int any = random.nextInt(255);
            all[i] = random.nextInt(5) == 0 ? (byte) (any >= 0xED ? any + 1 : any)
                    : alphabetBytes[random.nextInt(alphabetBytes.length)];
        }
        List<String> stops = random.nextBoolean() ? List.of() : List.of("<|", "a€", "😀b");
        Pieces p = new Pieces();
        List<Integer> tokens = new ArrayList<>();
        for (int at = 0; at < length; ) {
            int size = Math.min(length - at, 1 + random.nextInt(4));
            tokens.add(p.add(java.util.Arrays.copyOfRange(all, at, at + size)));
            at += size;
        }
        TextStreamer streamer = p.streamer(stops.toArray(String[]::new));
        StringBuilder text = new StringBuilder();
        for (int token : tokens) {
            if (streamer.stopped()) {
                break;
            }
            String delta = streamer.accept(token);
            assertThat(new String(delta.getBytes(UTF_8), UTF_8)).as("delta is well-formed").isEqualTo(delta);
            text.append(delta);
        }
        text.append(streamer.finish());
        String whole = new String(all, UTF_8);
        int end = whole.length();
        for (String stop : stops) {
            int at = whole.indexOf(stop);
            if (at >= 0) {
                end = Math.min(end, at);
            }
        }
        assertThat(text.toString()).isEqualTo(whole.substring(0, end));
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
