package dev.tandem.llm.chat;

import com.hubspot.jinjava.objects.SafeString;
import com.hubspot.jinjava.objects.collections.PyList;
import java.beans.FeatureDescriptor;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import jinjava.javax.el.ELContext;
import jinjava.javax.el.ELResolver;

/**
 * The methods of Python's {@code str} that chat templates call ({@code content.strip()},
 * {@code content.split('</think>')[-1]}, {@code content.startswith('<tool_response>')}), which a
 * Java string does not have. It resolves only method calls on strings whose name is one of
 * {@link #METHODS}; everything else falls through to Jinjava's own resolvers.
 *
 * <p>Each follows Python 3: {@code strip/lstrip/rstrip([chars])}, {@code startswith/endswith(prefix
 * or list of prefixes)}, {@code split/rsplit([sep[, maxsplit]])} (no {@code sep}: runs of whitespace,
 * no empty parts), {@code replace(old, new[, count])}, {@code s[i]} (negative from the end), {@code upper()}, {@code lower()},
 * {@code title()}, {@code capitalize()}, {@code find/rfind(sub)}, {@code count(sub)},
 * {@code join(items)}. Whitespace is Python's: {@link #isPythonSpace}.
 */
final class PythonStringMethods extends ELResolver {

    static final Set<String> METHODS = Set.of("strip", "lstrip", "rstrip", "startswith", "endswith", "split",
            "rsplit", "replace", "upper", "lower", "title", "capitalize", "find", "rfind", "count", "join");

    @Override
    public Object invoke(ELContext context, Object base, Object method, Class<?>[] paramTypes, Object[] params) {
        if (!(base instanceof String || base instanceof SafeString) || !(method instanceof String name)
                || !METHODS.contains(name)) {
            return null;
        }
        Object result = call(base.toString(), name, params == null ? new Object[0] : params);
        context.setPropertyResolved(true);
        return result;
    }

    static Object call(String s, String name, Object[] args) {
        return switch (name) {
            case "strip" -> strip(s, chars(name, args), true, true);
            case "lstrip" -> strip(s, chars(name, args), true, false);
            case "rstrip" -> strip(s, chars(name, args), false, true);
            case "startswith" -> matchesAny(s, name, args, true);
            case "endswith" -> matchesAny(s, name, args, false);
            case "split" -> split(s, optionalString(name, args, 0), maxSplit(name, args), false);
            case "rsplit" -> split(s, optionalString(name, args, 0), maxSplit(name, args), true);
            case "replace" -> replace(s, requiredString(name, args, 0), requiredString(name, args, 1),
                    args.length > 2 ? toInt(name, args[2]) : -1);
            case "upper" -> s.toUpperCase(Locale.ROOT);
            case "lower" -> s.toLowerCase(Locale.ROOT);
            case "title" -> title(s);
            case "capitalize" -> s.isEmpty() ? s
                    : s.substring(0, 1).toUpperCase(Locale.ROOT) + s.substring(1).toLowerCase(Locale.ROOT);
            case "find" -> s.indexOf(requiredString(name, args, 0));
            case "rfind" -> s.lastIndexOf(requiredString(name, args, 0));
            case "count" -> count(s, requiredString(name, args, 0));
            case "join" -> join(s, name, args);
            default -> throw new IllegalStateException("no Python method " + name);
        };
    }

    /** Python's {@code str.isspace} for one character. */
    static boolean isPythonSpace(char c) {
        return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\u001c' && c <= '\u001f') || c == '\u0085'
                || c == '\u00a0' || c == '\u1680' || (c >= '\u2000' && c <= '\u200a') || c == '\u2028'
                || c == '\u2029' || c == '\u202f' || c == '\u205f' || c == '\u3000';
    }

    private static String chars(String name, Object[] args) {
        return optionalString(name, args, 0);
    }

    private static String strip(String s, String chars, boolean left, boolean right) {
        int start = 0;
        int end = s.length();
        if (left) {
            while (start < end && stripped(s.charAt(start), chars)) {
                start++;
            }
        }
        if (right) {
            while (end > start && stripped(s.charAt(end - 1), chars)) {
                end--;
            }
        }
        return s.substring(start, end);
    }

    private static boolean stripped(char c, String chars) {
        return chars == null ? isPythonSpace(c) : chars.indexOf(c) >= 0;
    }

    private static boolean matchesAny(String s, String name, Object[] args, boolean prefix) {
        if (args.length == 0 || args[0] == null) {
            throw new IllegalArgumentException(name + "() takes a string or a list of strings");
        }
        Iterable<?> candidates = args[0] instanceof Iterable<?> many ? many : List.of(args[0]);
        for (Object candidate : candidates) {
            String text = String.valueOf(candidate);
            if (prefix ? s.startsWith(text) : s.endsWith(text)) {
                return true;
            }
        }
        return false;
    }

    private static int maxSplit(String name, Object[] args) {
        return args.length > 1 && args[1] != null ? toInt(name, args[1]) : -1;
    }

    private static PyList split(String s, String sep, int maxSplit, boolean fromRight) {
        List<Object> parts = new ArrayList<>();
        if (sep == null) {
            splitOnWhitespace(s, maxSplit, fromRight, parts);
        } else if (sep.isEmpty()) {
            throw new IllegalArgumentException("split() separator must not be empty");
        } else if (!fromRight) {
            int from = 0;
            int at;
            while ((maxSplit < 0 || parts.size() < maxSplit) && (at = s.indexOf(sep, from)) >= 0) {
                parts.add(s.substring(from, at));
                from = at + sep.length();
            }
            parts.add(s.substring(from));
        } else {
            int to = s.length();
            int at;
            while ((maxSplit < 0 || parts.size() < maxSplit) && (at = s.lastIndexOf(sep, to - sep.length())) >= 0) {
                parts.addFirst(s.substring(at + sep.length(), to));
                to = at;
            }
            parts.addFirst(s.substring(0, to));
        }
        return new PyList(parts);
    }

    private static void splitOnWhitespace(String s, int maxSplit, boolean fromRight, List<Object> parts) {
        if (fromRight) {
            int end = s.length();
            while (true) {
                while (end > 0 && isPythonSpace(s.charAt(end - 1))) {
                    end--;
                }
                if (end == 0) {
                    return;
                }
                if (maxSplit >= 0 && parts.size() == maxSplit) {
                    parts.addFirst(s.substring(0, end));
                    return;
                }
                int start = end;
                while (start > 0 && !isPythonSpace(s.charAt(start - 1))) {
                    start--;
                }
                parts.addFirst(s.substring(start, end));
                end = start;
            }
        }
        int start = 0;
        int n = s.length();
        while (true) {
            while (start < n && isPythonSpace(s.charAt(start))) {
                start++;
            }
            if (start == n) {
                return;
            }
            if (maxSplit >= 0 && parts.size() == maxSplit) {
                parts.add(s.substring(start));
                return;
            }
            int end = start;
            while (end < n && !isPythonSpace(s.charAt(end))) {
                end++;
            }
            parts.add(s.substring(start, end));
            start = end;
        }
    }

    private static String replace(String s, String old, String replacement, int count) {
        if (count < 0) {
            return s.replace(old, replacement);
        }
        StringBuilder out = new StringBuilder();
        int from = 0;
        for (int done = 0; done < count; done++) {
            int at = old.isEmpty() ? (from <= s.length() ? from : -1) : s.indexOf(old, from);
            if (at < 0) {
                break;
            }
            out.append(s, from, at).append(replacement);
            if (old.isEmpty()) {
                if (at < s.length()) {
                    out.append(s.charAt(at));
                }
                from = at + 1;
            } else {
                from = at + old.length();
            }
        }
        if (from <= s.length()) {
            out.append(s, from, s.length());
        }
        return out.toString();
    }

    private static String title(String s) {
        StringBuilder out = new StringBuilder(s.length());
        boolean previousCased = false;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            out.append(previousCased ? Character.toLowerCase(c) : Character.toUpperCase(c));
            previousCased = Character.isLetter(c);
        }
        return out.toString();
    }

    private static long count(String s, String sub) {
        if (sub.isEmpty()) {
            return s.length() + 1L;
        }
        long n = 0;
        int from = 0;
        int at;
        while ((at = s.indexOf(sub, from)) >= 0) {
            n++;
            from = at + sub.length();
        }
        return n;
    }

    private static String join(String separator, String name, Object[] args) {
        if (args.length == 0 || !(args[0] instanceof Iterable<?> items)) {
            throw new IllegalArgumentException(name + "() takes a list");
        }
        StringBuilder out = new StringBuilder();
        boolean first = true;
        for (Object item : items) {
            if (!first) {
                out.append(separator);
            }
            out.append(item);
            first = false;
        }
        return out.toString();
    }

    private static String optionalString(String name, Object[] args, int index) {
        return args.length > index && args[index] != null ? String.valueOf(args[index]) : null;
    }

    private static String requiredString(String name, Object[] args, int index) {
        if (args.length <= index || args[index] == null) {
            throw new IllegalArgumentException(name + "() needs a string as argument " + (index + 1));
        }
        return String.valueOf(args[index]);
    }

    private static int toInt(String name, Object value) {
        if (value instanceof Number number) {
            return number.intValue();
        }
        throw new IllegalArgumentException(name + "() takes an integer count, not " + value);
    }

    @Override
    public Class<?> getCommonPropertyType(ELContext context, Object base) {
        return null;
    }

    @Override
    public Iterator<FeatureDescriptor> getFeatureDescriptors(ELContext context, Object base) {
        return null;
    }

    @Override
    public Class<?> getType(ELContext context, Object base, Object property) {
        return null;
    }

    /** Python's {@code s[i]} on a string, {@code i} negative from the end; out of range is undefined. */
    @Override
    public Object getValue(ELContext context, Object base, Object property) {
        if (!(base instanceof String s) || !(property instanceof Number number)) {
            return null;
        }
        context.setPropertyResolved(true);
        long index = number.longValue();
        if (index < 0) {
            index += s.length();
        }
        return index >= 0 && index < s.length() ? String.valueOf(s.charAt((int) index)) : null;
    }

    @Override
    public boolean isReadOnly(ELContext context, Object base, Object property) {
        return true;
    }

    @Override
    public void setValue(ELContext context, Object base, Object property, Object value) {
        // resolves no property: Jinjava's own resolvers do
    }
}
