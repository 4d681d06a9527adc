package dev.tandem.llm.chat;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.filter.Filter;
import java.util.Map;

/**
 * The {@code tojson} filter as Hugging Face defines it for chat templates: Python's
 * {@code json.dumps(value, ensure_ascii=False, indent=indent)}, so {@code ", "} and {@code ": "}
 * between items (with {@code indent}: newlines, that many spaces a level, and {@code ","}), keys in
 * the map's order, {@code null}/{@code true}/{@code false}, and non-ASCII characters as they are.
 */
final class PythonJson implements Filter {

    @Override
    public String getName() {
        return "tojson";
    }

    @Override
    public Object filter(Object value, JinjavaInterpreter interpreter, String... args) {
        return dumps(value, args.length > 0 ? Integer.parseInt(args[0].trim()) : -1);
    }

    @Override
    public Object filter(Object value, JinjavaInterpreter interpreter, Object[] args, Map<String, Object> kwargs) {
        Object indent = kwargs.containsKey("indent") ? kwargs.get("indent") : args.length > 0 ? args[0] : null;
        return dumps(value, indent == null ? -1 : ((Number) indent).intValue());
    }

    /** {@code json.dumps(value, ensure_ascii=False, indent=indent)}; a negative indent is None. */
    static String dumps(Object value, int indent) {
        StringBuilder out = new StringBuilder();
        write(value, indent, 0, out);
        return out.toString();
    }

    private static void write(Object value, int indent, int depth, StringBuilder out) {
        switch (value) {
            case null -> out.append("null");
            case Boolean b -> out.append(b ? "true" : "false");
            case Double d -> out.append(pythonFloat(d));
            case Float f -> out.append(pythonFloat(f));
            case Number n -> out.append(n);
            case Map<?, ?> map -> writeItems('{', '}', map.entrySet(), indent, depth, out);
            case Iterable<?> items -> writeItems('[', ']', items, indent, depth, out);
            case Object[] items -> writeItems('[', ']', java.util.Arrays.asList(items), indent, depth, out);
            default -> writeString(value.toString(), out);
        }
    }

    private static void writeItems(char open, char close, Iterable<?> items, int indent, int depth, StringBuilder out) {
        out.append(open);
        boolean first = true;
        for (Object item : items) {
            if (!first) {
                out.append(indent >= 0 ? "," : ", ");
            }
            if (indent >= 0) {
                out.append('\n').repeat(" ", indent * (depth + 1));
            }
            if (item instanceof Map.Entry<?, ?> entry) {
                writeString(String.valueOf(entry.getKey()), out);
                out.append(": ");
                write(entry.getValue(), indent, depth + 1, out);
            } else {
                write(item, indent, depth + 1, out);
            }
            first = false;
        }
        if (!first && indent >= 0) {
            out.append('\n').repeat(" ", indent * depth);
        }
        out.append(close);
    }

    private static String pythonFloat(double d) {
        if (Double.isNaN(d)) {
            return "NaN";
        }
        if (Double.isInfinite(d)) {
            return d > 0 ? "Infinity" : "-Infinity";
        }
        return Double.toString(d);
    }

    private static void writeString(String s, StringBuilder out) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                case '\b' -> out.append("\\b");
                case '\f' -> out.append("\\f");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }
}
