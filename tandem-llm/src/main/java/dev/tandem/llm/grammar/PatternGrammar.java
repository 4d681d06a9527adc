package dev.tandem.llm.grammar;

import static dev.tandem.llm.grammar.Grammar.EMPTY;
import static dev.tandem.llm.grammar.Grammar.alt;
import static dev.tandem.llm.grammar.Grammar.oneOf;
import static dev.tandem.llm.grammar.Grammar.range;
import static dev.tandem.llm.grammar.Grammar.repeat;
import static dev.tandem.llm.grammar.Grammar.seq;
import static dev.tandem.llm.grammar.Grammar.text;

import dev.tandem.llm.grammar.Grammar.Node;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;

/**
 * A JSON Schema {@code pattern} as the grammar of a JSON string's content (the text between the
 * quotes, each character as JSON writes it). The subset: anchored patterns ({@code ^...$}, so that
 * what is generated is exactly what matches), literals, {@code .}, classes ({@code [a-z_]},
 * {@code [^,]}; ranges of ASCII only), {@code \d \w \s \D \W \S}, escaped metacharacters, groups
 * {@code (...)} and {@code (?:...)}, {@code |}, and the greedy quantifiers {@code * + ? {n} {n,}
 * {n,m}}. Anything else (lookaround, back-references, lazy quantifiers, inner anchors) is a
 * {@link GrammarException} naming {@code pattern}.
 *
 * <p>A negated class or {@code .} generates any character but the excluded ones, except that a
 * control character other than tab, newline and carriage return is never generated: a subset of
 * what matches, so the output still validates.
 */
final class PatternGrammar {
    private final String pattern;
    private final String path;
    private int at;

    private PatternGrammar(String pattern, String path) {
        this.pattern = pattern;
        this.path = path;
    }

    /** The grammar of the string content that matches {@code pattern}. */
    static Node compile(String pattern, String path) {
        int backslashes = 0;
        for (int i = pattern.length() - 2; i >= 0 && pattern.charAt(i) == '\\'; i--) {
            backslashes++;
        }
        if (!pattern.startsWith("^") || !pattern.endsWith("$") || backslashes % 2 == 1 || pattern.length() < 2) {
            throw new GrammarException("pattern", path, "pattern \"" + pattern + "\" must be anchored (start with ^"
                    + " and end with $) for constrained decoding: an unanchored pattern matches inside any text");
        }
        PatternGrammar p = new PatternGrammar(pattern.substring(1, pattern.length() - 1), path);
        Node node = p.alternation();
        if (p.at < p.pattern.length()) {
            throw p.error("unbalanced ')' at " + p.at);
        }
        return node;
    }

    private GrammarException error(String what) {
        return new GrammarException("pattern", path, "pattern \"^" + pattern + "$\" is not supported: " + what);
    }

    private boolean more() {
        return at < pattern.length();
    }

    private int peek() {
        return pattern.codePointAt(at);
    }

    private int next() {
        int c = pattern.codePointAt(at);
        at += Character.charCount(c);
        return c;
    }

    private Node alternation() {
        List<Node> alternatives = new ArrayList<>();
        alternatives.add(sequence());
        while (more() && peek() == '|') {
            next();
            alternatives.add(sequence());
        }
        return alternatives.size() == 1 ? alternatives.get(0) : new Grammar.Alt(alternatives);
    }

    private Node sequence() {
        List<Node> parts = new ArrayList<>();
        while (more() && peek() != '|' && peek() != ')') {
            Node atom = atom();
            parts.add(quantified(atom));
        }
        return parts.isEmpty() ? EMPTY : parts.size() == 1 ? parts.get(0) : new Grammar.Seq(parts);
    }

    private Node quantified(Node atom) {
        if (!more()) {
            return atom;
        }
        int min;
        int max;
        switch (peek()) {
            case '*' -> {
                next();
                min = 0;
                max = -1;
            }
            case '+' -> {
                next();
                min = 1;
                max = -1;
            }
            case '?' -> {
                next();
                min = 0;
                max = 1;
            }
            case '{' -> {
                next();
                min = number();
                max = min;
                if (more() && peek() == ',') {
                    next();
                    max = more() && peek() == '}' ? -1 : number();
                }
                if (!more() || next() != '}') {
                    throw error("a quantifier {n,m} is not closed");
                }
            }
            default -> {
                return atom;
            }
        }
        if (more() && (peek() == '?' || peek() == '+')) {
            throw error("lazy and possessive quantifiers");
        }
        if (max >= 0 && max < min) {
            throw error("quantifier {" + min + "," + max + "} has max < min");
        }
        return repeat(atom, null, min, max, "pattern");
    }

    private int number() {
        int start = at;
        while (more() && peek() >= '0' && peek() <= '9') {
            next();
        }
        if (start == at || at - start > 4) {
            throw error("a quantifier needs a count of at most " + JsonSchemaGrammar.MAX_BOUND);
        }
        int n = Integer.parseInt(pattern.substring(start, at));
        if (n > JsonSchemaGrammar.MAX_BOUND) {
            throw error("a quantifier needs a count of at most " + JsonSchemaGrammar.MAX_BOUND);
        }
        return n;
    }

    private Node atom() {
        int c = next();
        switch (c) {
            case '(' -> {
                if (more() && peek() == '?') {
                    next();
                    if (!more() || next() != ':') {
                        throw error("lookaround and named groups");
                    }
                }
                Node inner = alternation();
                if (!more() || next() != ')') {
                    throw error("a group is not closed");
                }
                return inner;
            }
            case '[' -> {
                return characterClass();
            }
            case '.' -> {
                BitSet excluded = new BitSet();
                excluded.set('\n');
                excluded.set('\r');
                return anyBut(excluded);
            }
            case '\\' -> {
                return escape(false, null);
            }
            case '^', '$' -> throw error("anchors inside the pattern");
            case '*', '+', '?', '{' -> throw error("a quantifier with nothing before it");
            default -> {
                return character(c);
            }
        }
    }

    /** After a backslash: a class shorthand (added to {@code into} inside a class) or one character. */
    private Node escape(boolean inClass, BitSet into) {
        if (!more()) {
            throw error("a trailing backslash");
        }
        int c = next();
        BitSet set = new BitSet();
        boolean negated = false;
        switch (c) {
            case 'd', 'D' -> {
                set.set('0', '9' + 1);
                negated = c == 'D';
            }
            case 'w', 'W' -> {
                set.set('a', 'z' + 1);
                set.set('A', 'Z' + 1);
                set.set('0', '9' + 1);
                set.set('_');
                negated = c == 'W';
            }
            case 's', 'S' -> {
                for (char s : " \t\n\r\f\u000B".toCharArray()) {
                    set.set(s);
                }
                negated = c == 'S';
            }
            default -> {
                int literal = switch (c) {
                    case 'n' -> '\n';
                    case 't' -> '\t';
                    case 'r' -> '\r';
                    case 'f' -> '\f';
                    case 'v' -> 0x0B;
                    case 'u' -> hex(4);
                    case 'x' -> hex(2);
                    default -> {
                        if (Character.isLetterOrDigit(c)) {
                            throw error("the escape \\" + Character.toString(c));
                        }
                        yield c;
                    }
                };
                if (inClass) {
                    into.set(literal);
                    return null;
                }
                return character(literal);
            }
        }
        if (inClass) {
            if (negated) {
                throw error("\\D, \\W and \\S inside a class");
            }
            into.or(set);
            return null;
        }
        return negated ? anyBut(set) : ofSet(set);
    }

    private int hex(int digits) {
        if (at + digits > pattern.length()) {
            throw error("a short hex escape");
        }
        try {
            int v = Integer.parseInt(pattern.substring(at, at + digits), 16);
            at += digits;
            return v;
        } catch (NumberFormatException e) {
            throw error("a malformed hex escape");
        }
    }

    private Node characterClass() {
        boolean negated = more() && peek() == '^';
        if (negated) {
            next();
        }
        BitSet set = new BitSet();
        boolean first = true;
        while (true) {
            if (!more()) {
                throw error("a class [...] is not closed");
            }
            int c = next();
            if (c == ']' && !first) {
                break;
            }
            first = false;
            if (c == '\\') {
                escape(true, set);
                continue;
            }
            if (c == '[') {
                throw error("nested classes");
            }
            if (more() && peek() == '-' && at + 1 < pattern.length() && pattern.charAt(at + 1) != ']') {
                next();
                int to = next();
                if (to == '\\') {
                    BitSet one = new BitSet();
                    escape(true, one);
                    if (one.cardinality() != 1) {
                        throw error("a range ending in a class shorthand");
                    }
                    to = one.nextSetBit(0);
                }
                if (to < c) {
                    throw error("the range " + Character.toString(c) + "-" + Character.toString(to));
                }
                if (to >= 0x80 && to != c) {
                    throw error("ranges beyond ASCII");
                }
                set.set(c, to + 1);
            } else {
                set.set(c);
            }
        }
        if (negated && set.nextSetBit(0x80) >= 0) {
            throw error("a negated class with characters beyond ASCII");
        }
        return negated ? anyBut(set) : ofSet(set);
    }

    /** One of the characters of {@code set}, each as JSON writes it inside a string. */
    private static Node ofSet(BitSet set) {
        long[] bits = new long[4];
        List<Node> alternatives = new ArrayList<>();
        for (int c = set.nextSetBit(0); c >= 0; c = set.nextSetBit(c + 1)) {
            if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
                bits[c >>> 6] |= 1L << (c & 63);
            } else {
                alternatives.add(character(c));
            }
        }
        if (bits[0] != 0 || bits[1] != 0) {
            alternatives.add(new Grammar.ByteSet(bits));
        }
        if (alternatives.isEmpty()) {
            throw new GrammarException("pattern", null, "a character class that matches nothing");
        }
        return alternatives.size() == 1 ? alternatives.get(0) : new Grammar.Alt(alternatives);
    }

    /** Any character but those of {@code excluded} (controls other than tab, LF and CR never). */
    private static Node anyBut(BitSet excluded) {
        BitSet ascii = new BitSet();
        ascii.set(0x20, 0x80);
        ascii.set('\t');
        ascii.set('\n');
        ascii.set('\r');
        ascii.andNot(excluded);
        List<Node> alternatives = new ArrayList<>();
        if (!ascii.isEmpty()) {
            alternatives.add(ofSet(ascii));
        }
        alternatives.add(NON_ASCII);
        return new Grammar.Alt(alternatives);
    }

    /** One character as JSON writes it inside a string. */
    private static Node character(int c) {
        return switch (c) {
            case '"' -> text("\\\"");
            case '\\' -> text("\\\\");
            case '\n' -> text("\\n");
            case '\t' -> text("\\t");
            case '\r' -> text("\\r");
            case '\b' -> text("\\b");
            case '\f' -> text("\\f");
            default -> c < 0x20 ? text(String.format("\\u%04x", c))
                    : Grammar.bytes(new String(Character.toChars(c)).getBytes(StandardCharsets.UTF_8));
        };
    }

    /** A well-formed multi-byte UTF-8 character. */
    private static final Node NON_ASCII = alt(
            seq(range(0xC2, 0xDF), range(0x80, 0xBF)),
            seq(range(0xE0, 0xE0), range(0xA0, 0xBF), range(0x80, 0xBF)),
            seq(alt(range(0xE1, 0xEC), range(0xEE, 0xEF)), range(0x80, 0xBF), range(0x80, 0xBF)),
            seq(range(0xED, 0xED), range(0x80, 0x9F), range(0x80, 0xBF)),
            seq(range(0xF0, 0xF0), range(0x90, 0xBF), range(0x80, 0xBF), range(0x80, 0xBF)),
            seq(range(0xF1, 0xF3), range(0x80, 0xBF), range(0x80, 0xBF), range(0x80, 0xBF)),
            seq(range(0xF4, 0xF4), range(0x80, 0x8F), range(0x80, 0xBF), range(0x80, 0xBF)));

    // ---- formats -------------------------------------------------------------------------------------

    private static final Node DIGIT = range('0', '9');

    private static Node digits(int n) {
        List<Node> parts = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            parts.add(DIGIT);
        }
        return new Grammar.Seq(parts);
    }

    /** A full-date whose day is at most 28, so that every one generated exists. */
    private static final Node DATE = seq(digits(4), oneOf("-"), alt(seq(oneOf("0"), range('1', '9')),
            seq(oneOf("1"), range('0', '2'))), oneOf("-"), alt(seq(oneOf("0"), range('1', '9')),
            seq(oneOf("1"), DIGIT), seq(oneOf("2"), range('0', '8'))));
    private static final Node HOUR = alt(seq(range('0', '1'), DIGIT), seq(oneOf("2"), range('0', '3')));
    private static final Node SIXTY = seq(range('0', '5'), DIGIT);
    /** Offsets within ±17:59, which every parser takes (java.time's bound is ±18:00). */
    private static final Node OFFSET_HOUR = alt(seq(oneOf("0"), DIGIT), seq(oneOf("1"), range('0', '7')));
    private static final Node TIME = seq(HOUR, oneOf(":"), SIXTY, oneOf(":"), SIXTY,
            alt(EMPTY, seq(oneOf("."), digits(3))), alt(oneOf("Z"), seq(oneOf("+-"), OFFSET_HOUR, oneOf(":"), SIXTY)));
    private static final Node HEX = alt(range('0', '9'), range('a', 'f'));

    private static Node hexes(int n) {
        List<Node> parts = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            parts.add(HEX);
        }
        return new Grammar.Seq(parts);
    }

    private static final Node UUID = seq(hexes(8), oneOf("-"), hexes(4), oneOf("-"), hexes(4), oneOf("-"), hexes(4),
            oneOf("-"), hexes(12));

    /** The string content of a {@code format}: date, time, date-time, uuid. */
    static Node format(String format, String path) {
        return switch (format) {
            case "date" -> DATE;
            case "time" -> TIME;
            case "date-time" -> seq(DATE, oneOf("T"), TIME);
            case "uuid" -> UUID;
            default -> throw new GrammarException("format", path, "format \"" + format + "\" is not supported in"
                    + " constrained decoding (supported: date, time, date-time, uuid)");
        };
    }
}
