package dev.tandem.llm.tokenizer;

/**
 * The character classes the pre-tokenizers split on: letter ({@code \p{L}}), number ({@code \p{N}}),
 * whitespace (the Unicode White_Space property, as llama.cpp's table has it) and anything else.
 */
final class CodepointClass {
    static final int NONE = 0; // past either end of the text
    static final int LETTER = 1;
    static final int NUMBER = 2;
    static final int WHITESPACE = 4;
    static final int OTHER = 8; // punctuation, symbols, marks, controls, unassigned

    private CodepointClass() {}

    static int of(int cp) {
        if (isWhitespace(cp)) {
            return WHITESPACE;
        }
        return switch (Character.getType(cp)) {
            case Character.UPPERCASE_LETTER, Character.LOWERCASE_LETTER, Character.TITLECASE_LETTER,
                 Character.MODIFIER_LETTER, Character.OTHER_LETTER -> LETTER;
            case Character.DECIMAL_DIGIT_NUMBER, Character.LETTER_NUMBER, Character.OTHER_NUMBER -> NUMBER;
            default -> OTHER;
        };
    }

    /** Unicode White_Space: not {@link Character#isWhitespace}, which leaves out no-break spaces and adds U+001C..U+001F. */
    static boolean isWhitespace(int cp) {
        return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680
                || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F
                || cp == 0x205F || cp == 0x3000;
    }
}
