package dev.tandem.llm.chat;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.objects.date.StrftimeFormatter;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.util.Locale;

/**
 * The global functions Hugging Face gives chat templates: {@code raise_exception(message)} and
 * {@code strftime_now(format)}. Jinjava calls them as static methods; "now" is the rendering
 * template's clock, which reaches them through the interpreter's configuration.
 */
final class TemplateFunctions {

    private TemplateFunctions() {}

    /** Thrown by {@code raise_exception}; {@link JinjaChatTemplate} turns it into a {@link ChatTemplateException}. */
    static final class RaisedException extends RuntimeException {
        RaisedException(String message) {
            super(message, null, false, false);
        }
    }

    public static Object raiseException(Object message) {
        throw new RaisedException(String.valueOf(message));
    }

    /** Python's {@code datetime.now().strftime(format)} in English, at the template's clock. */
    public static String strftimeNow(String format) {
        return strftime(now(), format);
    }

    static String strftime(ZonedDateTime time, String format) {
        return StrftimeFormatter.format(time, format, Locale.ENGLISH);
    }

    static ZonedDateTime now() {
        JinjavaInterpreter interpreter = JinjavaInterpreter.getCurrent();
        long millis = interpreter.getConfig().getDateTimeProvider().getCurrentTimeMillis();
        return Instant.ofEpochMilli(millis).atZone(interpreter.getConfig().getTimeZone());
    }
}
