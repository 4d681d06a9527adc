package dev.tandem.llm.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * The hand-written scanners split text into the same words as their regexes do under a
 * backtracking engine (java.util.regex with Unicode classes, where {@code \s} is White_Space).
 */
class PreTokenizerTest {
    /** Letters, digits, number forms, every kind of space, newlines, punctuation, marks, controls, emoji. */
    private static final String ALPHABET = "aZsStTdDmMlLrReEvV'' ,.!?-_(\n\n\r\t\u000B 0123\u0663\u00BD\u2167é\u00DF我"
            + "\u0301\u00A0\u3000\u2028\u0085\u200B\u0001\u001F~$🦙😁";

    @Provide
    Arbitrary<String> texts() {
        List<String> units = new ArrayList<>();
        ALPHABET.codePoints().forEach(cp -> units.add(Character.toString(cp)));
        units.add("'ll");
        units.add("'Re");
        units.add("   ");
        return Arbitraries.of(units).list().ofMaxSize(24).map(parts -> String.join("", parts));
    }

    @Property(tries = 3000)
    void gpt2MatchesItsRegex(@ForAll("texts") String text) {
        assertThat(PreTokenizer.GPT2.split(text)).isEqualTo(regexSplit(PreTokenizer.GPT2.regex(), text));
    }

    @Property(tries = 3000)
    void llama3MatchesItsRegex(@ForAll("texts") String text) {
        assertThat(PreTokenizer.LLAMA3.split(text)).isEqualTo(regexSplit(PreTokenizer.LLAMA3.regex(), text));
    }

    @Property(tries = 3000)
    void qwen2MatchesItsRegex(@ForAll("texts") String text) {
        assertThat(PreTokenizer.QWEN2.split(text)).isEqualTo(regexSplit(PreTokenizer.QWEN2.regex(), text));
    }

    @Example
    void wordsOfAKnownText() {
        assertThat(PreTokenizer.LLAMA3.split("Hello, y'all!  3333 \n\n x"))
                .containsExactly("Hello", ",", " y", "'all", "!", " ", " ", "333", "3", " \n\n", " x");
        assertThat(PreTokenizer.GPT2.split("Hello, y'all!  3333 \n\n x"))
                .containsExactly("Hello", ",", " y", "'", "all", "!", " ", " 3333", " \n\n", " x");
        assertThat(PreTokenizer.QWEN2.split("123")).containsExactly("1", "2", "3");
    }

    /** Every match and every gap between matches, in order (Hugging Face's Split, behaviour Isolated). */
    static List<String> regexSplit(String regex, String text) {
        // \s as Unicode White_Space, spelt out so that (?i) keeps folding ASCII only, as llama.cpp's contractions do
        String ws = "\\t-\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000";
        Pattern pattern = Pattern.compile(regex.replace("[^\\s", "[^" + ws).replace("\\s", "[" + ws + "]")
                .replace("\\S", "[^" + ws + "]"));
        List<String> words = new ArrayList<>();
        Matcher m = pattern.matcher(text);
        int last = 0;
        while (m.find()) {
            if (m.start() > last) {
                words.add(text.substring(last, m.start()));
            }
            if (m.end() > m.start()) {
                words.add(m.group());
            }
            last = m.end();
        }
        if (last < text.length()) {
            words.add(text.substring(last));
        }
        return words;
    }
}
