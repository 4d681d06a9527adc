package dev.tandem.llm.chat;

import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.JinjavaConfig;
import com.hubspot.jinjava.LegacyOverrides;
import com.hubspot.jinjava.el.JinjavaInterpreterResolver;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.interpret.RenderResult;
import com.hubspot.jinjava.interpret.TemplateError;
import com.hubspot.jinjava.lib.filter.Filter;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import jinjava.javax.el.CompositeELResolver;

/**
 * A Jinja chat template rendered by Jinjava as Hugging Face's {@code apply_chat_template} renders
 * it with Python Jinja2.
 *
 * <h2>What matches Jinja2, and how</h2>
 *
 * <ul>
 *   <li>Whitespace: {@code trim_blocks} and {@code lstrip_blocks} on, as Hugging Face sets them,
 *       and {@code {%-}, {@code -%}} and the like: applied to the text by {@link Jinja2Source},
 *       exactly as Jinja2's lexer does, so Jinjava renders with its own trimming off.
 *   <li>Expressions: Python operator precedence ({@code useNaturalOperatorPrecedence}), dict
 *       literal keys evaluated ({@code evaluateMapKeys}), {@code for k in dict} over keys
 *       ({@code iterateOverMapKeys}).
 *   <li>Python methods on strings ({@code .strip()}, {@code .split()}, {@code .startswith()}, ...):
 *       {@link PythonStringMethods}, a resolver in front of Jinjava's own.
 *   <li>{@code tojson}: {@link PythonJson}, Python's {@code json.dumps} layout; {@code items}: a
 *       dict's (key, value) pairs.
 *   <li>{@code raise_exception(message)} and {@code strftime_now(format)}: {@link TemplateFunctions}.
 *   <li>What Jinjava parses differently ({@code not x is defined}, keyword arguments, {@code [::-1]}):
 *       {@link Jinja2Source} rewrites it, once, when the template is built.
 * </ul>
 *
 * <h2>Variables</h2>
 *
 * {@code messages} (maps with {@code role} and {@code content}), {@code add_generation_prompt},
 * {@code bos_token}, {@code eos_token}, and {@code date_string}: today as {@code "%d %b %Y"} (for
 * example {@code 01 Dec 2026}), which Llama 3.1's template prints as "Today Date" (llama.cpp sets it
 * the same way). {@code tools} is left undefined: tool calling is not supported yet.
 */
final class JinjaChatTemplate implements ChatTemplate {

    private static final Set<String> RESERVED = Set.of("messages", "add_generation_prompt", "bos_token", "eos_token");

    private final Jinja2Source source;
    private final String bosToken;
    private final String eosToken;
    private final Jinjava jinjava;

    JinjaChatTemplate(String source, String bosToken, String eosToken, Clock clock) {
        if (source == null) {
            throw new IllegalArgumentException("template source must not be null");
        }
        if (clock == null) {
            throw new IllegalArgumentException("clock must not be null");
        }
        this.source = Jinja2Source.translate(source);
        this.bosToken = bosToken == null ? "" : bosToken;
        this.eosToken = eosToken == null ? "" : eosToken;
        this.jinjava = newJinjava(clock);
        checkSyntax();
    }

    @Override
    public String render(List<ChatMessage> messages, boolean addGenerationPrompt, Map<String, ?> variables) {
        PlainChatTemplate.checked(messages);
        Map<String, Object> context = new HashMap<>();
        context.put("date_string", TemplateFunctions.strftime(now(), "%d %b %Y"));
        if (variables != null) {
            for (Map.Entry<String, ?> variable : variables.entrySet()) {
                if (RESERVED.contains(variable.getKey())) {
                    throw new IllegalArgumentException("variable " + variable.getKey()
                            + " is set by the renderer and cannot be overridden");
                }
                context.put(variable.getKey(), variable.getValue());
            }
        }
        List<Object> turns = new ArrayList<>(messages.size());
        for (ChatMessage message : messages) {
            Map<String, Object> turn = new LinkedHashMap<>();
            turn.put("role", message.role());
            turn.put("content", message.content());
            if (!message.toolCalls().isEmpty()) {
                List<Object> calls = new ArrayList<>();
                for (ToolCall call : message.toolCalls()) {
                    Map<String, Object> function = new LinkedHashMap<>();
                    function.put("name", call.name());
                    function.put("arguments", ToolDefinitions.parse(call.arguments())); // templates expect a dict
                    Map<String, Object> entry = new LinkedHashMap<>();
                    entry.put("id", call.id());
                    entry.put("type", "function");
                    entry.put("function", function);
                    calls.add(entry);
                }
                turn.put("tool_calls", calls);
            }
            if (message.toolCallId() != null) {
                turn.put("tool_call_id", message.toolCallId());
            }
            turns.add(turn);
        }
        context.put("messages", turns);
        context.put("add_generation_prompt", addGenerationPrompt);
        context.put("bos_token", bosToken);
        context.put("eos_token", eosToken);
        RenderResult result = jinjava.renderForResult(source.text(), context);
        failOnFatal(result.getErrors(), "chat template failed");
        return result.getOutput();
    }

    private java.time.ZonedDateTime now() {
        JinjavaConfig config = jinjava.getGlobalConfig();
        return java.time.Instant.ofEpochMilli(config.getDateTimeProvider().getCurrentTimeMillis())
                .atZone(config.getTimeZone());
    }

    private void checkSyntax() {
        JinjavaInterpreter interpreter = jinjava.newInterpreter();
        interpreter.parse(source.text());
        failOnFatal(interpreter.getErrors(), "chat template syntax error");
    }

    private void failOnFatal(List<TemplateError> errors, String what) {
        for (TemplateError error : errors) {
            if (error.getSeverity() != TemplateError.ErrorType.FATAL) {
                continue;
            }
            Throwable cause = error.getException();
            while (cause != null && !(cause instanceof TemplateFunctions.RaisedException)) {
                cause = cause.getCause();
            }
            if (cause != null) {
                throw new ChatTemplateException("chat template raised an exception: " + oneLine(cause.getMessage()),
                        cause.getMessage());
            }
            String at = error.getLineno() > 0 ? " at line " + source.originalLine(error.getLineno(), error.getStartPosition()) : "";
            String kind = error.getReason() == TemplateError.ErrorReason.SYNTAX_ERROR ? "chat template syntax error" : what;
            throw new ChatTemplateException(kind + at + ": " + oneLine(error.getMessage()), null);
        }
    }

    private static String oneLine(String message) {
        return message == null ? "" : message.replaceAll("\\s*\\R\\s*", " ").strip();
    }

    private static Jinjava newJinjava(Clock clock) {
        CompositeELResolver resolver = new CompositeELResolver();
        resolver.add(new PythonStringMethods());
        resolver.add(JinjavaInterpreterResolver.DEFAULT_RESOLVER_READ_ONLY);
        JinjavaConfig config = JinjavaConfig.newBuilder()
                .withTrimBlocks(false)
                .withLstripBlocks(false)
                .withLegacyOverrides(LegacyOverrides.newBuilder()
                        .withUseNaturalOperatorPrecedence(true)
                        .withUsePyishObjectMapper(true)
                        .withEvaluateMapKeys(true)
                        .withIterateOverMapKeys(true)
                        .withKeepNullableLoopValues(true)
                        .build())
                .withElResolver(resolver)
                .withDateTimeProvider(clock::millis)
                .withTimeZone(clock.getZone())
                .withMaxRenderDepth(10)
                .build();
        Jinjava jinjava = new Jinjava(config);
        jinjava.registerFunction(new ELFunctionDefinition("", "raise_exception", TemplateFunctions.class,
                "raiseException", Object.class));
        jinjava.registerFunction(new ELFunctionDefinition("", "strftime_now", TemplateFunctions.class,
                "strftimeNow", String.class));
        jinjava.registerFilter(new PythonJson());
        jinjava.registerFilter(new ItemsFilter());
        return jinjava;
    }

    /** Jinja2's {@code items} filter: a dict's (key, value) pairs, in order; nothing for none. */
    private static final class ItemsFilter implements Filter {
        @Override
        public String getName() {
            return "items";
        }

        @Override
        public Object filter(Object value, JinjavaInterpreter interpreter, String... args) {
            if (value == null) {
                return List.of();
            }
            if (!(value instanceof Map<?, ?> map)) {
                throw new IllegalArgumentException("items filter needs a mapping, not " + value);
            }
            List<Object> pairs = new ArrayList<>();
            for (Map.Entry<?, ?> entry : map.entrySet()) {
                pairs.add(List.of(entry.getKey(), entry.getValue() == null ? "" : entry.getValue()));
            }
            return pairs;
        }
    }

    @Override
    public String toString() {
        return "JinjaChatTemplate[" + source.text().length() + " chars]";
    }
}
