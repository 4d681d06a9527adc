package dev.tandem.llm.tokenizer;

import static dev.tandem.llm.tokenizer.CodepointClass.LETTER;
import static dev.tandem.llm.tokenizer.CodepointClass.NONE;
import static dev.tandem.llm.tokenizer.CodepointClass.NUMBER;
import static dev.tandem.llm.tokenizer.CodepointClass.WHITESPACE;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The word splitting a byte-level BPE runs before its merges: each word is merged on its own.
 *
 * <p>Each pre-tokenizer is a hand-written scanner that matches the same words as its regex (a
 * leftmost-first backtracking match, the semantics of the Hugging Face and llama.cpp regexes) in
 * one pass without backtracking:
 * <ul>
 * <li>{@link #GPT2}: {@code 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+}
 * <li>{@link #LLAMA3}: {@code (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+}
 * <li>{@link #QWEN2}: the same as Llama 3 with {@code \p{N}} in place of {@code \p{N}{1,3}}
 * </ul>
 */
enum PreTokenizer {
    GPT2("'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"),
    LLAMA3("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"),
    QWEN2("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+");

    private final String regex;

    PreTokenizer(String regex) {
        this.regex = regex;
    }

    /** The regex this scanner matches, as Hugging Face's tokenizer.json writes it. */
    String regex() {
        return regex;
    }

    /** Whether a whole word that is itself a token skips the merges (llama.cpp's ignore_merges). */
    boolean ignoresMerges() {
        return this == LLAMA3;
    }

    /** Whether the vocabulary adds BOS when the file does not say (llama.cpp's default per pre-tokenizer). */
    boolean addsBosByDefault() {
        return this == LLAMA3;
    }

    /**
     * The pre-tokenizer of a GGUF {@code tokenizer.ggml.pre} name, with the aliases llama.cpp maps to
     * the same regex.
     *
     * @throws IllegalArgumentException naming an unknown or unsupported name
     */
    static PreTokenizer named(String name) {
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("byte-level BPE vocabulary has no pre-tokenizer name; supported: "
                    + "gpt-2, llama-bpe, qwen2");
        }
        return switch (name.toLowerCase(Locale.ROOT)) {
            case "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "mpt", "olmo",
                 "jais", "roberta-bpe", "jina-v1-en", "jina-v2-code", "exaone4" -> GPT2;
            case "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "dbrx", "smaug-bpe",
                 "chatglm-bpe", "glm4" -> LLAMA3;
            case "qwen2", "deepseek-r1-qwen", "stablelm2", "megrez", "hunyuan" -> QWEN2;
            default -> throw new IllegalArgumentException("unknown pre-tokenizer '" + name
                    + "'; supported: gpt-2, llama-bpe, qwen2 and their aliases");
        };
    }

    /** The pre-tokenizer whose regex is {@code regex}, or null. */
    static PreTokenizer ofRegex(String regex) {
        for (PreTokenizer p : values()) {
            if (p.regex.equals(regex)) {
                return p;
            }
        }
        if (regex.equals("(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+"
                + "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")) {
            return LLAMA3;
        }
        if (regex.equals("'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)")) {
            return GPT2; // llama.cpp's spelling: a lone \s can only be the run's last, which \s+(?!\S) leaves
        }
        return null;
    }

    /** The words of {@code text}, in order; they concatenate back to {@code text}. */
    List<String> split(String text) {
        int[] cps = text.codePoints().toArray();
        int[] offsets = new int[cps.length + 1]; // char offset of each code point
        for (int i = 0, at = 0; i < cps.length; i++) {
            offsets[i] = at;
            at += Character.charCount(cps[i]);
        }
        offsets[cps.length] = text.length();
        int[] classes = new int[cps.length];
        for (int i = 0; i < cps.length; i++) {
            classes[i] = CodepointClass.of(cps[i]);
        }
        List<String> words = new ArrayList<>();
        Scan scan = new Scan(cps, classes);
        int start = 0;
        while (start < cps.length) {
            int end = this == GPT2 ? scan.gpt2(start) : scan.llama3(start, this == LLAMA3 ? 3 : 1);
            words.add(text.substring(offsets[start], offsets[end]));
            start = end;
        }
        return words;
    }

    /** One pass over the code points of a text: each method returns where the word at {@code pos} ends. */
    private record Scan(int[] cps, int[] classes) {
        private int cls(int pos) {
            return pos >= 0 && pos < cps.length ? classes[pos] : NONE;
        }

        private int cp(int pos) {
            return pos < cps.length ? cps[pos] : -1;
        }

        private static boolean otherClass(int c) {
            return c != NONE && (c & (LETTER | NUMBER | WHITESPACE)) == 0;
        }

        /** The end of a contraction at {@code pos}, or -1. */
        private int contraction(int pos, boolean anyCase) {
            if (cp(pos) != '\'' || pos + 1 >= cps.length) {
                return -1;
            }
            int a = anyCase ? lower(cp(pos + 1)) : cp(pos + 1);
            if (a == 's' || a == 't' || a == 'm' || a == 'd') {
                return pos + 2;
            }
            if (pos + 2 < cps.length) {
                int b = anyCase ? lower(cp(pos + 2)) : cp(pos + 2);
                if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) {
                    return pos + 3;
                }
            }
            return -1;
        }

        private static int lower(int cp) {
            return cp >= 'A' && cp <= 'Z' ? cp + ('a' - 'A') : cp;
        }

        /** The end of a whitespace run that starts at {@code pos}, as {@code \s+(?!\S)|\s+} takes it. */
        private int spaces(int pos) {
            int end = pos;
            while (cls(end) == WHITESPACE) {
                end++;
            }
            if (end - pos > 1 && end < cps.length) {
                return end - 1; // leave the last space to the word that follows
            }
            return end > pos ? end : pos + 1;
        }

        int gpt2(int pos) {
            int end = contraction(pos, false);
            if (end >= 0) {
                return end;
            }
            boolean space = cp(pos) == ' ';
            int c = space ? cls(pos + 1) : cls(pos);
            if (c == LETTER || c == NUMBER) {
                end = pos + (space ? 1 : 0);
                while (cls(end) == c) {
                    end++;
                }
                return end;
            }
            if (otherClass(c)) {
                end = pos + (space ? 1 : 0);
                while (otherClass(cls(end))) {
                    end++;
                }
                return end;
            }
            return spaces(pos);
        }

        int llama3(int pos, int maxDigits) {
            int end = contraction(pos, true);
            if (end >= 0) {
                return end;
            }
            int cp = cp(pos);
            int c = cls(pos);
            boolean newline = cp == '\r' || cp == '\n';
            if (!newline && c != NUMBER && (c == LETTER || cls(pos + 1) == LETTER)) {
                end = pos + 1; // a letter, or one character of [^\r\n\p{L}\p{N}] before letters
                while (cls(end) == LETTER) {
                    end++;
                }
                return end;
            }
            if (c == NUMBER) {
                end = pos;
                while (end - pos < maxDigits && cls(end) == NUMBER) {
                    end++;
                }
                return end;
            }
            boolean space = cp == ' ';
            if (otherClass(space ? cls(pos + 1) : c)) {
                end = pos + (space ? 1 : 0);
                while (otherClass(cls(end))) {
                    end++;
                }
                while (cp(end) == '\r' || cp(end) == '\n') {
                    end++;
                }
                return end;
            }
            int run = pos;
            int lastNewline = -1;
            while (cls(run) == WHITESPACE) {
                if (cps[run] == '\r' || cps[run] == '\n') {
                    lastNewline = run;
                }
                run++;
            }
            if (lastNewline >= 0) {
                return lastNewline + 1; // \s*[\r\n]+
            }
            return spaces(pos);
        }
    }
}
