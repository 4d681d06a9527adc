package dev.tandem.llm.chat;

import java.util.ArrayDeque;
import java.util.Deque;

/**
 * Translates the text of a Python Jinja2 chat template into a Jinjava template that renders the
 * same, in one pass over the text. Hugging Face renders chat templates with {@code trim_blocks} and
 * {@code lstrip_blocks} on and {@code keep_trailing_newline} off; where Jinjava differs from Jinja2
 * this does the work itself:
 *
 * <h2>Whitespace, exactly as Jinja2's lexer does it</h2>
 *
 * Jinjava's own trimming differs in corners (it strips before a block tag in the middle of a line,
 * and around comments), so the translation applies Jinja2's rules to the text between tags and
 * hands Jinjava a template with no whitespace control left, rendered with trimming off:
 *
 * <ul>
 *   <li>a tag opened with {@code -} ({@code {%-}, {@code {{-}, {@code {#-}) removes the whitespace
 *       before it; otherwise a block or comment tag not opened with {@code +} removes the spaces and
 *       tabs between the start of its line and itself ({@code lstrip_blocks});
 *   <li>a tag closed with {@code -} removes the whitespace after it; otherwise a block or comment tag
 *       not closed with {@code +} removes one newline after it ({@code trim_blocks});
 *   <li>comments are dropped; {@code \r\n} and {@code \r} become {@code \n}; one trailing newline of
 *       the template is dropped; {@code {% raw %}} blocks pass through untouched.
 * </ul>
 *
 * <h2>Expressions Jinjava parses differently</h2>
 *
 * Inside tags, outside string literals:
 *
 * <ol>
 *   <li><b>{@code not} binds looser than comparisons and tests</b>, as in Python: {@code not x is
 *       defined} is {@code not (x is defined)} (Llama 3.1, Mistral Nemo), {@code not a == b} is
 *       {@code not (a == b)}. Jinjava reads {@code (not x) is defined}, so a unary {@code not}
 *       gets parentheses up to the next {@code and}, {@code or}, {@code if}, {@code else}, comma or
 *       closing bracket ({@code is not} and {@code not in} are left alone).
 *   <li><b>Keyword argument values are parenthesised</b>: Jinjava binds {@code name=} tighter than
 *       arithmetic, so {@code namespace(last=messages|length - 1)} (Qwen 3) becomes
 *       {@code namespace(last=(messages|length - 1))}.
 *   <li><b>Reversal slices</b>: Jinjava's slices take no step, so {@code xs[::-1]} (Qwen 3) becomes
 *       {@code (xs|reverse)}. Other steps are left alone and fail to parse with Jinjava's message.
 *   <li><b>Nested dict literals</b>: {@code {'a': {'b': 1}}} gets a space between its closing braces,
 *       which Jinjava would otherwise take for the end of a {@code {{ }}} tag.
 * </ol>
 *
 * Line numbers survive the translation through {@link #originalLine}.
 */
final class Jinja2Source {

    private final StringBuilder out = new StringBuilder();
    private int[] lineOfChar = new int[256];
    private final String source;
    private int lineCursor;
    private int lineAtCursor = 1;

    private Jinja2Source(String source) {
        this.source = source;
    }

    /** The translated template. */
    String text() {
        return out.toString();
    }

    /**
     * The line of the original template that the character at line {@code line}, column
     * {@code column} (both from 1; a column below 1 is the line's start) of {@link #text()} came from.
     */
    int originalLine(int line, int column) {
        if (line < 1 || out.isEmpty()) {
            return line;
        }
        int offset = 0;
        for (int l = 1; l < line && offset < out.length(); offset++) {
            if (out.charAt(offset) == '\n') {
                l++;
            }
        }
        int lineEnd = out.indexOf("\n", offset);
        int at = offset + Math.max(column - 1, 0);
        at = Math.min(at, (lineEnd < 0 ? out.length() : lineEnd + 1) - 1);
        return lineOfChar[Math.max(0, Math.min(at, out.length() - 1))];
    }

    /**
     * Translates {@code template}.
     *
     * @throws ChatTemplateException if a tag or comment is not closed
     */
    static Jinja2Source translate(String template) {
        String s = template.replace("\r\n", "\n").replace('\r', '\n');
        if (s.endsWith("\n")) {
            s = s.substring(0, s.length() - 1);
        }
        Jinja2Source translation = new Jinja2Source(s);
        translation.run();
        return translation;
    }

    private void run() {
        String s = source;
        int n = s.length();
        int i = 0;
        boolean lineStarting = true;
        while (i < n) {
            int open = nextTag(s, i);
            if (open < 0) {
                emit(i, n);
                return;
            }
            char kind = s.charAt(open + 1);
            char startSign = open + 2 < n && (s.charAt(open + 2) == '-' || s.charAt(open + 2) == '+')
                    ? s.charAt(open + 2) : 0;
            int textEnd = open;
            if (startSign == '-') {
                textEnd = rstrip(s, i, open);
            } else if (startSign != '+' && kind != '{') {
                textEnd = lstripBlock(s, i, open, lineStarting);
            }
            emit(i, textEnd);
            int bodyStart = open + 2 + (startSign != 0 ? 1 : 0);
            int after;
            int closerEnd;
            if (kind == '#') {
                int close = s.indexOf("#}", bodyStart);
                if (close < 0) {
                    throw syntaxError("missing end of comment tag", open);
                }
                char endSign = close > bodyStart && (s.charAt(close - 1) == '-' || s.charAt(close - 1) == '+')
                        ? s.charAt(close - 1) : 0;
                closerEnd = close + 2;
                after = afterTag(s, closerEnd, endSign, true);
            } else {
                String closer = kind == '{' ? "}}" : "%}";
                int close = tagEnd(s, bodyStart, closer);
                if (close < 0) {
                    throw syntaxError("missing end of " + (kind == '{' ? "variable" : "block") + " tag", open);
                }
                int bodyEnd = close;
                char endSign = 0;
                if (bodyEnd > bodyStart && (s.charAt(bodyEnd - 1) == '-' || (kind == '%' && s.charAt(bodyEnd - 1) == '+'))) {
                    endSign = s.charAt(bodyEnd - 1);
                    bodyEnd--;
                }
                String body = s.substring(bodyStart, bodyEnd);
                if (kind == '%' && body.strip().equals("raw")) {
                    after = raw(s, open, close, endSign);
                    lineStarting = s.charAt(after - 1) == '\n';
                    i = after;
                    continue;
                }
                appendTracked("{" + kind, lineAt(open));
                appendTracked(rewriteExpression(body), lineAt(bodyStart));
                appendTracked(closer, lineAt(close));
                closerEnd = close + 2;
                after = afterTag(s, closerEnd, endSign, kind == '%');
            }
            // Jinja2's line_starting: what the closing tag consumed ends with a newline.
            lineStarting = after > closerEnd && s.charAt(after - 1) == '\n';
            i = after;
        }
    }

    /** The end of the whitespace that a tag closing at {@code from} consumes. */
    private static int afterTag(String s, int from, char endSign, boolean trimBlocks) {
        if (endSign == '-') {
            int j = from;
            while (j < s.length() && PythonStringMethods.isPythonSpace(s.charAt(j))) {
                j++;
            }
            return j;
        }
        if (endSign != '+' && trimBlocks && from < s.length() && s.charAt(from) == '\n') {
            return from + 1;
        }
        return from;
    }

    /** {@code {% raw %}...{% endraw %}}: the content verbatim (Jinja2 trims no newline after raw). */
    private int raw(String s, int open, int close, char endSign) {
        int contentStart = endSign == '-' ? afterTag(s, close + 2, '-', false) : close + 2;
        int search = contentStart;
        while (true) {
            int end = s.indexOf("{%", search);
            if (end < 0) {
                throw syntaxError("missing end of raw directive", open);
            }
            char sign = end + 2 < s.length() && (s.charAt(end + 2) == '-' || s.charAt(end + 2) == '+')
                    ? s.charAt(end + 2) : 0;
            int bodyStart = end + 2 + (sign != 0 ? 1 : 0);
            int endClose = s.indexOf("%}", bodyStart);
            if (endClose < 0) {
                throw syntaxError("missing end of raw directive", open);
            }
            String body = s.substring(bodyStart, endClose);
            char endSign2 = body.endsWith("-") || body.endsWith("+") ? body.charAt(body.length() - 1) : 0;
            if (endSign2 != 0) {
                body = body.substring(0, body.length() - 1);
            }
            if (!body.strip().equals("endraw")) {
                search = endClose + 2;
                continue;
            }
            int contentEnd = sign == '-' ? rstrip(s, contentStart, end)
                    : sign == '+' ? end : lstripBlock(s, contentStart, end, false);
            appendTracked("{% raw %}", lineAt(open));
            appendTracked(s.substring(contentStart, contentEnd), lineAt(contentStart));
            appendTracked("{% endraw %}", lineAt(end));
            int after = afterTag(s, endClose + 2, endSign2, true);
            return after;
        }
    }

    /** The first {@code {%}, {@code {{} or {@code {#} at or after {@code from}, or -1. */
    private static int nextTag(String s, int from) {
        int i = s.indexOf('{', from);
        while (i >= 0 && i + 1 < s.length()) {
            char c = s.charAt(i + 1);
            if (c == '%' || c == '{' || c == '#') {
                return i;
            }
            i = s.indexOf('{', i + 1);
        }
        return -1;
    }

    /** Where the text {@code [from, to)} ends once its trailing whitespace is removed. */
    private static int rstrip(String s, int from, int to) {
        int end = to;
        while (end > from && PythonStringMethods.isPythonSpace(s.charAt(end - 1))) {
            end--;
        }
        return end;
    }

    /** {@code lstrip_blocks}: drops the text's last line when it is only whitespace and starts a line. */
    private static int lstripBlock(String s, int from, int to, boolean lineStarting) {
        int lineStart = s.lastIndexOf('\n', to - 1) + 1;
        if (lineStart < from) {
            if (!lineStarting) {
                return to;
            }
            lineStart = from;
        }
        if (lineStart == to) {
            return to;
        }
        for (int k = lineStart; k < to; k++) {
            if (!PythonStringMethods.isPythonSpace(s.charAt(k))) {
                return to;
            }
        }
        return lineStart;
    }

    /** The index of {@code closer} ending a tag whose body starts at {@code from}, skipping strings and brackets; -1 if none. */
    private static int tagEnd(String s, int from, String closer) {
        int depth = 0;
        int i = from;
        while (i < s.length()) {
            char c = s.charAt(i);
            if (c == '\'' || c == '"') {
                i = stringEnd(s, i);
            } else if (depth == 0 && s.startsWith(closer, i)) {
                return i;
            } else {
                if (c == '(' || c == '[' || c == '{') {
                    depth++;
                } else if ((c == ')' || c == ']' || c == '}') && depth > 0) {
                    depth--;
                }
                i++;
            }
        }
        return -1;
    }

    /** The index just past the string literal that opens at {@code at}. */
    private static int stringEnd(String s, int at) {
        char quote = s.charAt(at);
        int i = at + 1;
        while (i < s.length()) {
            char c = s.charAt(i);
            if (c == '\\') {
                i += 2;
            } else if (c == quote) {
                return i + 1;
            } else {
                i++;
            }
        }
        return s.length();
    }

    private void emit(int from, int to) {
        appendTracked(source.substring(from, to), lineAt(from));
    }

    /** Appends {@code text} (whose newlines are original, starting at line {@code line}), recording lines. */
    private void appendTracked(String text, int line) {
        int current = line;
        for (int k = 0; k < text.length(); k++) {
            char c = text.charAt(k);
            track(current);
            out.append(c);
            if (c == '\n') {
                current++;
            }
        }
    }

    /** Records that the next character appended to {@code out} comes from original line {@code line}. */
    private void track(int line) {
        if (out.length() == lineOfChar.length) {
            lineOfChar = java.util.Arrays.copyOf(lineOfChar, lineOfChar.length * 2);
        }
        lineOfChar[out.length()] = line;
    }

    private int lineAt(int index) {
        if (index < lineCursor) {
            lineCursor = 0;
            lineAtCursor = 1;
        }
        for (; lineCursor < index; lineCursor++) {
            if (source.charAt(lineCursor) == '\n') {
                lineAtCursor++;
            }
        }
        return lineAtCursor;
    }

    private ChatTemplateException syntaxError(String what, int at) {
        return new ChatTemplateException("chat template syntax error at line " + lineAt(at) + ": " + what, null);
    }

    /** One frame of brackets in an expression: what opened it and what the rewrites left open in it. */
    private static final class Frame {
        final char bracket;
        boolean keywordOpen;
        int notsOpen;

        Frame(char bracket) {
            this.bracket = bracket;
        }
    }

    /** The expression rewrites of one tag body. */
    static String rewriteExpression(String body) {
        StringBuilder out = new StringBuilder(body.length() + 16);
        Deque<Frame> frames = new ArrayDeque<>();
        frames.push(new Frame((char) 0));
        String previous = "";
        int i = 0;
        int n = body.length();
        while (i < n) {
            char c = body.charAt(i);
            Frame frame = frames.peek();
            if (c == '\'' || c == '"') {
                int end = stringEnd(body, i);
                out.append(body, i, end);
                previous = "'";
                i = end;
            } else if (body.startsWith("[::-1]", i)) {
                int start = receiverStart(out);
                out.insert(start, '(').append("|reverse)");
                previous = ")";
                i += "[::-1]".length();
            } else if (c == '(' || c == '[' || c == '{') {
                frames.push(new Frame(c));
                out.append(c);
                previous = String.valueOf(c);
                i++;
            } else if (c == ')' || c == ']' || c == '}') {
                close(frame, out);
                if (frames.size() > 1) {
                    frames.pop();
                }
                if (c == '}' && !out.isEmpty() && out.charAt(out.length() - 1) == '}') {
                    out.append(' '); // Jinjava would end the tag at a nested dict's "}}"
                }
                out.append(c);
                previous = String.valueOf(c);
                i++;
            } else if (c == ',' || (c == ':' && frame.bracket != 0 && frame.bracket != '(')) {
                close(frame, out);
                out.append(c);
                previous = String.valueOf(c);
                i++;
            } else if (Character.isLetter(c) || c == '_') {
                int end = i;
                while (end < n && (Character.isLetterOrDigit(body.charAt(end)) || body.charAt(end) == '_')) {
                    end++;
                }
                String word = body.substring(i, end);
                int next = end;
                while (next < n && Character.isWhitespace(body.charAt(next))) {
                    next++;
                }
                boolean dotted = i > 0 && body.charAt(i - 1) == '.';
                if (!dotted && word.equals("not") && !previous.equals("is") && !isWordAt(body, next, "in")) {
                    out.append("not (");
                    frame.notsOpen++;
                } else if (!dotted && frame.notsOpen > 0
                        && (word.equals("and") || word.equals("or") || word.equals("if") || word.equals("else"))) {
                    closeNots(frame, out);
                    out.append(word);
                } else if (!dotted && frame.bracket == '(' && (previous.equals("(") || previous.equals(","))
                        && next < n && body.charAt(next) == '=' && (next + 1 >= n || body.charAt(next + 1) != '=')) {
                    out.append(body, i, next + 1).append('(');
                    frame.keywordOpen = true;
                    previous = "=";
                    i = next + 1;
                    continue;
                } else {
                    out.append(word);
                }
                previous = word;
                i = end;
            } else {
                out.append(c);
                if (!Character.isWhitespace(c)) {
                    previous = String.valueOf(c);
                }
                i++;
            }
        }
        Frame root = frames.getLast();
        while (frames.size() > 1) {
            close(frames.pop(), out);
        }
        close(root, out);
        return out.toString();
    }

    private static boolean isWordAt(String s, int at, String word) {
        int end = at + word.length();
        return s.startsWith(word, at) && (end >= s.length() || !(Character.isLetterOrDigit(s.charAt(end)) || s.charAt(end) == '_'));
    }

    private static void close(Frame frame, StringBuilder out) {
        closeNots(frame, out);
        if (frame.keywordOpen) {
            out.append(')');
            frame.keywordOpen = false;
        }
    }

    private static void closeNots(Frame frame, StringBuilder out) {
        while (frame.notsOpen > 0) {
            out.append(')');
            frame.notsOpen--;
        }
    }

    /** Where the postfix expression that ends {@code out} starts: names, dots, calls, subscripts, a string. */
    private static int receiverStart(StringBuilder out) {
        int pos = out.length();
        while (pos > 0) {
            char c = out.charAt(pos - 1);
            if (Character.isLetterOrDigit(c) || c == '_' || c == '.') {
                pos--;
            } else if (c == ')' || c == ']') {
                char open = c == ')' ? '(' : '[';
                int depth = 0;
                int k = pos - 1;
                for (; k >= 0; k--) {
                    char d = out.charAt(k);
                    if (d == c) {
                        depth++;
                    } else if (d == open && --depth == 0) {
                        break;
                    }
                }
                pos = Math.max(k, 0);
            } else if (c == '\'' || c == '"') {
                int k = out.lastIndexOf(String.valueOf(c), pos - 2);
                pos = Math.max(k, 0);
            } else {
                break;
            }
        }
        return pos;
    }
}
