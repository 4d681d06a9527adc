package dev.tandem.llm.chat;

import static dev.tandem.llm.chat.ChatMessage.assistant;
import static dev.tandem.llm.chat.ChatMessage.system;
import static dev.tandem.llm.chat.ChatMessage.user;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

/**
 * What Jinja2 does that the templates rely on, one behaviour a test. Expected strings are Python
 * Jinja2 3.1's with Hugging Face's settings ({@code trim_blocks}, {@code lstrip_blocks}).
 */
class JinjaCompatibilityTest {

    static String render(String template) {
        return render(template, List.of(user("Hi")));
    }

    static String render(String template, List<ChatMessage> messages) {
        return ChatTemplate.jinja(template, "<s>", "</s>", RealChatTemplatesTest.DEC_1_2026)
                .render(messages, true, Map.of("x", 1));
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', quoteCharacter = '`', textBlock = """
            # template (\\n is a newline)                       | Jinja2's output
            `x {# c #} y`                                        | `x  y`
            `a\\n  {% if true %}\\n  b\\n  {% endif %}\\nc`      | `a\\n  b\\nc`
            `a  {%- if true -%}  b  {%- endif -%}  c`            | `abc`
            `a\\n  {# c -#}\\n  b`                               | `a\\nb`
            `a {#- c #} b`                                       | `a b`
            `  {{- 'q' -}}  \\n`                                 | `q`
            `{% for m in [1,2] %}\\n  {{ m }}\\n{% endfor %}\\n` | `  1\\n  2\\n`
            `a\\n    {%+ if true %}b{% endif +%}\\nc`            | `a\\n    b\\nc`
            `line\\n\\n`                                         | `line\\n`
            `x {% if true %} y {% endif %} z`                    | `x  y  z`
            `{% raw %}\\n  {{ x }} {%- y %}\\n{% endraw %}\\nz`  | `\\n  {{ x }} {%- y %}\\nz`
            """)
    void whitespaceControlMatchesJinja2(String template, String expected) {
        assertThat(render(unescape(template))).isEqualTo(unescape(expected));
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', quoteCharacter = '`', textBlock = """
            `{% if not x is defined %}A{% else %}B{% endif %}`                         | `B`
            `{% if not y is defined and not x is none %}A{% endif %}`                  | `A`
            `{% if not 1 == 2 %}A{% endif %}`                                           | `A`
            `{% if not 'a' in 'abc' %}A{% else %}B{% endif %}`                         | `B`
            `{% if x is not none %}A{% endif %}`                                        | `A`
            `{% set ns = namespace(a=[1,2,3]|length - 1, b='v') %}{{ ns.a }}{{ ns.b }}` | `2v`
            `{% for v in [1,2,3][::-1] %}{{ v }}{% endfor %}\\|{{ [1,2,3][::-1][0] }}` | `321\\|3`
            `{{ messages[0]['role'] }} {{ messages[0].content }} {{ messages[-1].role }}` | `user Hi user`
            `{% for m in messages %}{{ loop.index0 }}{% if loop.first %}F{% endif %}{% if loop.last %}L{% endif %}{% endfor %}` | `0FL`
            `{% set ns = namespace(n=0) %}{% for i in [1,2] %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}` | `3`
            `{{ 'x' if tools is not defined else 'y' }}{% if not tools %}none{% endif %}` | `xnone`
            `{{ messages|selectattr('role', 'equalto', 'user')|list|length }}`          | `1`
            `{{ 'a,b' ~ 'c' + 'd' }}`                                                   | `a,bcd`
            """)
    void expressionsMeanWhatTheyMeanInJinja2(String template, String expected) {
        assertThat(render(unescape(template))).isEqualTo(unescape(expected));
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', quoteCharacter = '`', textBlock = """
            `{{ '  a b \\n'.strip() }}`                    | `a b`
            `{{ 'xxaxx'.strip('x') }}`                     | `a`
            `{{ '\\n\\nab\\n'.lstrip('\\n') }}`            | `ab\\n`
            `{{ 'ab  '.rstrip() }}`                        | `ab`
            `{{ '<t>x</t>'.startswith('<t>') }}`           | `true`
            `{{ 'x.json'.endswith(['.txt', '.json']) }}`   | `true`
            `{{ 'a</think>b</think>c'.split('</think>')[-1] }}` | `c`
            `{{ 'a</think>b'.split('</think>')[0] }}`      | `a`
            `{{ ' a  b c '.split()\\|join('-') }}`          | `a-b-c`
            `{{ 'a,b,c'.rsplit(',', 1)[0] }}`              | `a,b`
            `{{ 'abcabc'.replace('b', '', 1) }}`           | `acabc`
            `{{ 'hello world'.title() }} {{ 'hEY'.capitalize() }} {{ 'Ab'.upper() }}{{ 'Ab'.lower() }}` | `Hello World Hey ABab`
            `{{ 'banana'.count('an') }} {{ 'banana'.find('n') }}` | `2 2`
            `{{ ', '.join(['a', 'b']) }}`                  | `a, b`
            `{{ 'abc'[:-1] }}`                             | `ab`
            """)
    void pythonStringMethods(String template, String expected) {
        assertThat(render(unescape(template)).replace("True", "true")).isEqualTo(unescape(expected));
    }

    @Test
    void tojsonIsPythonsJsonDumps() {
        assertThat(render("{{ {'a': [1, 'x', none, true], 'b': {'k': 'é\"'}}|tojson }}"))
                .isEqualTo("{\"a\": [1, \"x\", null, true], \"b\": {\"k\": \"é\\\"\"}}");
        assertThat(render("{{ {'a': [1]}|tojson(indent=2) }}")).isEqualTo("{\n  \"a\": [\n    1\n  ]\n}");
        assertThat(render("{% for k, v in {'a': 1, 'b': 2}|items %}{{ k }}={{ v }};{% endfor %}")).isEqualTo("a=1;b=2;");
    }

    @Test
    void strftimeNowAndDateStringReadTheClock() {
        assertThat(render("{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%Y-%m-%d') }}|{{ date_string }}"))
                .isEqualTo("01 Dec 2026|2026-12-01|01 Dec 2026");
    }

    @Test
    void specialTokensAndGenerationPromptAreVariables() {
        ChatTemplate template = ChatTemplate.jinja(
                "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}{% if add_generation_prompt %}>{% endif %}{{ eos_token }}",
                "<s>", "</s>");
        assertThat(template.render(List.of(user("a"), assistant("b")), true)).isEqualTo("<s>ab></s>");
        assertThat(template.render(List.of(user("a")), false)).isEqualTo("<s>a</s>");
    }

    @Test
    void raiseExceptionFailsWithTheTemplatesMessageOnOneLine() {
        assertThatThrownBy(() -> render("{% if messages|length > 0 %}{{ raise_exception('No\\nusers ' + 'here!') }}{% endif %}"))
                .isInstanceOf(ChatTemplateException.class)
                .hasMessage("chat template raised an exception: No users here!");
    }

    @Test
    void syntaxErrorsFailWhenTheTemplateIsBuiltNamingTheLine() {
        assertThatThrownBy(() -> ChatTemplate.jinja("line one\n{% if x %}\n{{ x }}\n", "", ""))
                .isInstanceOf(ChatTemplateException.class)
                .hasMessageStartingWith("chat template syntax error at line 2: ")
                .hasMessageNotContaining("\n");
        assertThatThrownBy(() -> ChatTemplate.jinja("a\n{{ x ", "", ""))
                .isInstanceOf(ChatTemplateException.class)
                .hasMessage("chat template syntax error at line 2: missing end of variable tag");
        assertThatThrownBy(() -> ChatTemplate.jinja("{# open", "", ""))
                .hasMessage("chat template syntax error at line 1: missing end of comment tag");
    }

    @Test
    void expressionSyntaxErrorsFailWhenRenderedNamingTheLine() {
        // Jinjava parses expressions as it renders them; it names the enclosing tag's line or the expression's.
        ChatTemplate template = ChatTemplate.jinja("line one\n{% if true %}\n{{ x + }}\n{% endif %}", "", "");
        assertThatThrownBy(() -> template.render(List.of(user("a")), true))
                .isInstanceOf(ChatTemplateException.class)
                .hasMessageMatching("chat template syntax error at line [23]: Error parsing 'x \\+'.*")
                .hasMessageNotContaining("\n");
    }

    @Test
    void unknownMethodsFailOnOneLine() {
        assertThatThrownBy(() -> render("a\n{{ 'x'.nosuchmethod() }}"))
                .isInstanceOf(ChatTemplateException.class)
                .hasMessageContaining(" at line 2: Cannot find method nosuchmethod")
                .hasMessageNotContaining("\n");
    }

    @Test
    void theRendererOwnsItsVariables() {
        ChatTemplate template = ChatTemplate.jinja("{{ messages|length }}", "", "");
        assertThatThrownBy(() -> template.render(List.of(user("a")), true, Map.of("messages", List.of())))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("variable messages is set by the renderer and cannot be overridden");
    }

    @Test
    void withoutATemplateChatModelsGetRoleLines() {
        List<ChatMessage> chat = List.of(system("Be brief."), user("Hi"), assistant("Hello."), user("Bye"));
        assertThat(ChatTemplate.forModel(null, "<s>", "</s>").render(chat, true))
                .isEqualTo("system: Be brief.\nuser: Hi\nassistant: Hello.\nuser: Bye\nassistant:");
        assertThat(ChatTemplate.forModel("  ", "<s>", "</s>").render(chat, false))
                .isEqualTo("system: Be brief.\nuser: Hi\nassistant: Hello.\nuser: Bye\n");
    }

    @Test
    void baseModelsGetTheTextConcatenated() {
        assertThat(ChatTemplate.completion().render(List.of(user("Once upon"), user(" a time")), true))
                .isEqualTo("Once upon a time");
    }

    @Test
    void messagesAreChecked() {
        assertThatThrownBy(() -> new ChatMessage(" ", "x")).hasMessage("role must not be blank");
        assertThatThrownBy(() -> user(null)).hasMessage("content of a user message must not be null");
    }

    private static String unescape(String s) {
        return s.replace("\\n", "\n").replace("\\|", "|");
    }
}
