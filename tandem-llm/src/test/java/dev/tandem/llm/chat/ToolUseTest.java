package dev.tandem.llm.chat;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * Tool use in the real templates that render it (Qwen 2.5, Hermes 3, Llama 3.1, Mistral Nemo):
 * the offered tools and a history of calls and their answers reach the prompt in each family's
 * documented form, and each family's syntax is read back into calls.
 */
class ToolUseTest {
    static final String WEATHER = """
            {"type":"function","function":{"name":"get_weather","description":"The weather in a city",\
            "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}""";
    static final List<ChatMessage> HISTORY = List.of(ChatMessage.user("Weather in Paris?"),
            new ChatMessage("assistant", "", List.of(new ToolCall("call12345", "get_weather", "{\"city\":\"Paris\"}")),
                    null),
            new ChatMessage("tool", "{\"temperature\": 21}", List.of(), "call12345"));

    static Supplier<String> ids() {
        AtomicInteger n = new AtomicInteger();
        return () -> "call_" + n.incrementAndGet();
    }

    static String render(String name, String bos, String eos) {
        String source = SharedFiles.template(name);
        ChatTemplate template = ChatTemplate.jinja(source, bos, eos, RealChatTemplatesTest.DEC_1_2026);
        return template.render(HISTORY, true, ToolDefinitions.variables(List.of(WEATHER)));
    }

    @Test
    void qwenListsTheToolsAndReplaysTheCallAndItsAnswer() {
        String text = render("Qwen-Qwen2.5-7B-Instruct", "", "<|im_end|>");
        assertThat(text).contains("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\"")
                .contains("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>")
                .contains("<tool_response>\n{\"temperature\": 21}\n</tool_response>")
                .endsWith("<|im_start|>assistant\n");
        assertThat(ToolSyntax.of(SharedFiles.template("Qwen-Qwen2.5-7B-Instruct"))).isEqualTo(ToolSyntax.HERMES);
    }

    @Test
    void llamaPutsTheToolsInTheUserTurnAndTheCallAsJson() {
        String text = render("meta-llama-Llama-3.1-8B-Instruct", "<|begin_of_text|>", "<|eot_id|>");
        assertThat(text).contains("\"name\": \"get_weather\"")
                .contains("{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}")
                .contains("<|start_header_id|>ipython<|end_header_id|>");
        assertThat(ToolSyntax.of(SharedFiles.template("meta-llama-Llama-3.1-8B-Instruct")))
                .isEqualTo(ToolSyntax.LLAMA3);
    }

    @Test
    void mistralWritesToolCallsWithTheirIds() {
        String text = render("mistralai-Mistral-Nemo-Instruct-2407", "<s>", "</s>");
        assertThat(text).contains("[AVAILABLE_TOOLS]").contains("[TOOL_CALLS][{\"name\": \"get_weather\"")
                .contains("\"id\": \"call12345\"").contains("[TOOL_RESULTS]");
        assertThat(ToolSyntax.of(SharedFiles.template("mistralai-Mistral-Nemo-Instruct-2407")))
                .isEqualTo(ToolSyntax.MISTRAL);
    }

    @Test
    void hermesToolUseTemplateIsReadAsHermes() {
        String text = render("NousResearch-Hermes-3-Llama-3.1-8B-tool_use", "<|begin_of_text|>", "<|eot_id|>");
        assertThat(text).contains("get_weather").contains("<tool_call>");
        assertThat(ToolSyntax.of(SharedFiles.template("NousResearch-Hermes-3-Llama-3.1-8B-tool_use")))
                .isEqualTo(ToolSyntax.HERMES);
    }

    @Test
    void eachSyntaxIsReadBackIntoCalls() {
        ToolSyntax.Reply hermes = ToolSyntax.HERMES.parse("Let me check.\n<tool_call>\n{\"name\": \"get_weather\", "
                + "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>{\"name\": \"get_time\", "
                + "\"arguments\": {}}</tool_call>", ids());
        assertThat(hermes.content()).isEqualTo("Let me check.");
        assertThat(hermes.calls()).containsExactly(new ToolCall("call_1", "get_weather", "{\"city\":\"Paris\"}"),
                new ToolCall("call_2", "get_time", "{}"));

        ToolSyntax.Reply mistral = ToolSyntax.MISTRAL.parse("[TOOL_CALLS][{\"name\": \"get_weather\", "
                + "\"arguments\": {\"city\": \"Rome\"}, \"id\": \"abcdefghi\"}]", ids());
        assertThat(mistral.calls()).containsExactly(new ToolCall("abcdefghi", "get_weather", "{\"city\":\"Rome\"}"));
        assertThat(mistral.content()).isEmpty();

        ToolSyntax.Reply llama = ToolSyntax.LLAMA3.parse("<|python_tag|>{\"name\": \"get_weather\", \"parameters\": "
                + "{\"city\": \"Oslo\"}}; {\"name\": \"get_time\", \"parameters\": {}}", ids());
        assertThat(llama.calls()).extracting(ToolCall::name).containsExactly("get_weather", "get_time");

        ToolSyntax.Reply generic = ToolSyntax.GENERIC.parse(" {\"name\": \"f\", \"arguments\": \"{\\\"x\\\": 1}\"}",
                ids());
        assertThat(generic.calls()).containsExactly(new ToolCall("call_1", "f", "{\"x\":1}"));
    }

    @Test
    void whatIsNotAWellFormedCallStaysText() {
        for (String reply : List.of("Once upon a time", "{\"name\": \"f\", \"arguments\": {}} and more",
                "{\"arguments\": {}}", "{\"name\": \"f\", \"arguments\": [1]}", "{not json")) {
            ToolSyntax.Reply r = ToolSyntax.GENERIC.parse(reply, ids());
            assertThat(r.calls()).as(reply).isEmpty();
            assertThat(r.content()).isEqualTo(reply);
        }
        ToolSyntax.Reply broken = ToolSyntax.HERMES.parse("<tool_call>{\"name\": }</tool_call>", ids());
        assertThat(broken.calls()).isEmpty();
        assertThat(ToolSyntax.MISTRAL.parse("[TOOL_CALLS] nothing", ids()).calls()).isEmpty();
    }

    @Test
    void aTemplateWithoutToolsOrNoneAtAllIsReadAsGeneric() {
        assertThat(ToolSyntax.of(null)).isEqualTo(ToolSyntax.GENERIC);
        assertThat(ToolSyntax.of("{{ messages }}")).isEqualTo(ToolSyntax.GENERIC);
        // A call needs a name; the generic syntax reads "arguments", Llama's "parameters".
        assertThat(ToolSyntax.GENERIC.parse("{\"name\": \"\", \"arguments\": {}}", ids()).calls()).isEmpty();
        assertThat(ToolSyntax.LLAMA3.parse("{\"name\": \"f\", \"parameters\": {\"x\": 1}}", ids()).calls())
                .containsExactly(new ToolCall("call_1", "f", "{\"x\":1}"));
        assertThat(ToolSyntax.GENERIC.parse("{\"name\": \"f\", \"parameters\": {\"x\": 1}}", ids()).calls())
                .containsExactly(new ToolCall("call_1", "f", "{}"));
    }

    @Test
    void aStreamHoldsBackWhatMayBecomeACall() {
        assertThat(ToolSyntax.HERMES.mayStartCall("Sure. <tool")).isTrue();
        assertThat(ToolSyntax.HERMES.mayStartCall("Sure. <tool_call>{\"na")).isTrue();
        assertThat(ToolSyntax.HERMES.mayStartCall("Sure, the weather")).isFalse();
        assertThat(ToolSyntax.HERMES.mayStartCall("<tool_call>")).isTrue();
        assertThat(ToolSyntax.GENERIC.mayStartCall("  ")).isTrue();
        assertThat(ToolSyntax.GENERIC.mayStartCall(" {\"name")).isTrue();
        assertThat(ToolSyntax.GENERIC.mayStartCall("Once")).isFalse();
        assertThat(ToolSyntax.MISTRAL.mayStartCall("[TOOL")).isTrue();
        assertThat(ToolSyntax.LLAMA3.mayStartCall("<|python_tag|>")).isTrue();
    }
}
