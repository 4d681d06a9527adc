package dev.tandem.llm.chat;

import static dev.tandem.llm.chat.ChatMessage.assistant;
import static dev.tandem.llm.chat.ChatMessage.system;
import static dev.tandem.llm.chat.ChatMessage.user;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The real templates in {@code shared/models/templates} against prompts written by hand from
 * each model's documented prompt format; "today" is pinned to 1 December 2026.
 */
class RealChatTemplatesTest {

    static final Clock DEC_1_2026 = Clock.fixed(Instant.parse("2026-12-01T09:30:00Z"), ZoneOffset.UTC);

    static ChatTemplate load(String name, String bos, String eos) {
        return ChatTemplate.jinja(SharedFiles.template(name), bos, eos, DEC_1_2026);
    }

    @Nested
    class Llama31 {
        final ChatTemplate template = load("meta-llama-Llama-3.1-8B-Instruct", "<|begin_of_text|>", "<|eot_id|>");
        static final String HEADER = "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
                + "Cutting Knowledge Date: December 2023\nToday Date: 01 Dec 2026\n\n";

        @Test
        void systemAndUserWithGenerationPrompt() {
            assertThat(template.render(List.of(system("You are a pirate."), user("Hello!")), true)).isEqualTo(HEADER
                    + "You are a pirate.<|eot_id|>"
                    + "<|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>"
                    + "<|start_header_id|>assistant<|end_header_id|>\n\n");
        }

        @Test
        void userOnlyKeepsTheDatedSystemBlockAndTrimsContent() {
            assertThat(template.render(List.of(user("  Hello!\n")), false)).isEqualTo(HEADER
                    + "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>");
        }

        @Test
        void multiTurn() {
            List<ChatMessage> chat = List.of(system("Be brief."), user("Hi"), assistant("Hello."), user("Bye"));
            String turns = "Be brief.<|eot_id|>"
                    + "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                    + "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
                    + "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>";
            assertThat(template.render(chat, false)).isEqualTo(HEADER + turns);
            assertThat(template.render(chat, true))
                    .isEqualTo(HEADER + turns + "<|start_header_id|>assistant<|end_header_id|>\n\n");
        }

        @Test
        void aCallerDateStringWins() {
            assertThat(template.render(List.of(user("Hi")), false, Map.of("date_string", "26 Jul 2024")))
                    .contains("Today Date: 26 Jul 2024\n\n");
        }
    }

    @Nested
    class Qwen25 {
        final ChatTemplate template = load("Qwen-Qwen2.5-7B-Instruct", "", "<|im_end|>");
        static final String DEFAULT_SYSTEM =
                "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n";

        @Test
        void userOnlyGetsTheDefaultSystemPrompt() {
            assertThat(template.render(List.of(user("Hi")), true))
                    .isEqualTo(DEFAULT_SYSTEM + "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
            assertThat(template.render(List.of(user("Hi")), false))
                    .isEqualTo(DEFAULT_SYSTEM + "<|im_start|>user\nHi<|im_end|>\n");
        }

        @Test
        void systemReplacesTheDefault() {
            assertThat(template.render(List.of(system("Be brief."), user("Hi")), true)).isEqualTo(
                    "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
        }

        @Test
        void multiTurn() {
            assertThat(template.render(List.of(user("Hi"), assistant("Hello."), user("Bye")), true)).isEqualTo(
                    DEFAULT_SYSTEM + "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n"
                            + "<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n");
        }
    }

    @Nested
    class Qwen3 {
        final ChatTemplate template = load("Qwen-Qwen3-0.6B", "", "<|im_end|>");

        @Test
        void userOnlyHasNoSystemBlock() {
            assertThat(template.render(List.of(user("Hi")), true))
                    .isEqualTo("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
            assertThat(template.render(List.of(user("Hi")), false)).isEqualTo("<|im_start|>user\nHi<|im_end|>\n");
        }

        @Test
        void systemAndUser() {
            assertThat(template.render(List.of(system("Be brief."), user("Hi")), true)).isEqualTo(
                    "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
        }

        @Test
        void thinkingOffAddsAnEmptyThinkBlockToTheGenerationPrompt() {
            assertThat(template.render(List.of(user("Hi")), true, Map.of("enable_thinking", false)))
                    .isEqualTo("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
        }

        @Test
        void earlierAssistantTurnsLoseTheirReasoningTheLastKeepsIt() {
            List<ChatMessage> chat = List.of(user("Hi"), assistant("<think>\ngreet back\n</think>\n\nHello."),
                    user("2+2?"), assistant("<think>\n\nadd\n\n</think>\n\n4"));
            assertThat(template.render(chat, false)).isEqualTo("<|im_start|>user\nHi<|im_end|>\n"
                    + "<|im_start|>assistant\nHello.<|im_end|>\n"
                    + "<|im_start|>user\n2+2?<|im_end|>\n"
                    + "<|im_start|>assistant\n<think>\nadd\n</think>\n\n4<|im_end|>\n");
        }

        @Test
        void anAssistantTurnBeforeTheLastQueryIsPlainWithAGenerationPrompt() {
            List<ChatMessage> chat = List.of(system("S"), user("Hi"), assistant("Hello."), user("Bye"));
            assertThat(template.render(chat, true)).isEqualTo("<|im_start|>system\nS<|im_end|>\n"
                    + "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n"
                    + "<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n");
        }
    }

    @Nested
    class MistralNemo {
        final ChatTemplate template = load("mistralai-Mistral-Nemo-Instruct-2407", "<s>", "</s>");

        @Test
        void userOnly() {
            assertThat(template.render(List.of(user("Hi")), true)).isEqualTo("<s>[INST]Hi[/INST]");
            assertThat(template.render(List.of(user("Hi")), false)).isEqualTo("<s>[INST]Hi[/INST]");
        }

        @Test
        void theSystemPromptIsFoldedIntoTheLastUserTurn() {
            assertThat(template.render(List.of(system("Be brief."), user("Hi")), true))
                    .isEqualTo("<s>[INST]Be brief.\n\nHi[/INST]");
            assertThat(template.render(List.of(system("Be brief."), user("Hi"), assistant("Hello."), user("Bye")), true))
                    .isEqualTo("<s>[INST]Hi[/INST]Hello.</s>[INST]Be brief.\n\nBye[/INST]");
        }

        @Test
        void nonAlternatingRolesRaiseTheTemplatesMessage() {
            assertThatThrownBy(() -> template.render(List.of(user("Hi"), user("again")), true))
                    .isInstanceOf(ChatTemplateException.class)
                    .hasMessage("chat template raised an exception: After the optional system message, conversation"
                            + " roles must alternate user/assistant/user/assistant/...")
                    .extracting(e -> ((ChatTemplateException) e).raisedMessage())
                    .isEqualTo("After the optional system message, conversation roles must alternate"
                            + " user/assistant/user/assistant/...");
        }
    }

    @Nested
    class SmolLM3 {
        final ChatTemplate template = load("HuggingFaceTB-SmolLM3-3B", "", "<|im_end|>");
        static final String METADATA = "<|im_start|>system\n## Metadata\n\nKnowledge Cutoff Date: June 2025\n";

        @Test
        void systemAndUserGoUnderCustomInstructions() {
            assertThat(template.render(List.of(system("Be brief.  "), user("Hi")), true)).isEqualTo(METADATA
                    + "Reasoning Mode: /think\n\n## Custom Instructions\n\nBe brief.\n\n<|im_end|>\n"
                    + "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
        }

        @Test
        void noThinkInTheSystemPromptSwitchesReasoningOff() {
            List<ChatMessage> chat = List.of(system("Be brief. /no_think"), user("Hi"), assistant("\nHello."));
            String expected = METADATA + "Reasoning Mode: /no_think\n\n## Custom Instructions\n\nBe brief.\n\n<|im_end|>\n"
                    + "<|im_start|>user\nHi<|im_end|>\n"
                    + "<|im_start|>assistant\n<think>\n\n</think>\nHello.<|im_end|>\n";
            assertThat(template.render(chat, false)).isEqualTo(expected);
            assertThat(template.render(chat, true))
                    .isEqualTo(expected + "<|im_start|>assistant\n<think>\n\n</think>\n");
        }

        @Test
        void userOnlyGetsTheDefaultInstructions() {
            assertThat(template.render(List.of(user("Hi")), true, Map.of("enable_thinking", false))).isEqualTo(METADATA
                    + "Reasoning Mode: /no_think\n\n## Custom Instructions\n\n"
                    + "You are a helpful AI assistant named SmolLM, trained by Hugging Face.\n\n<|im_end|>\n"
                    + "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n");
            assertThat(template.render(List.of(user("Hi")), false))
                    .startsWith(METADATA + "Reasoning Mode: /think\n\n## Custom Instructions\n\n"
                            + "You are a helpful AI assistant named SmolLM, trained by Hugging Face. Your role")
                    .endsWith("<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
        }
    }

    /** Gemma 2: {@code <start_of_turn>user|model ... <end_of_turn>}, no system role, BOS first. */
    @Nested
    class Gemma2 {
        final ChatTemplate template = load("google-gemma-2-2b-it", "<bos>", "<eos>");

        @Test
        void userWithGenerationPrompt() {
            assertThat(template.render(List.of(user("Hello!")), true))
                    .isEqualTo("<bos><start_of_turn>user\nHello!<end_of_turn>\n<start_of_turn>model\n");
        }

        @Test
        void theAssistantIsTheModelAndContentIsTrimmed() {
            List<ChatMessage> chat = List.of(user(" Hi \n"), assistant("Hello."), user("Bye"));
            String turns = "<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\nHello.<end_of_turn>\n"
                    + "<start_of_turn>user\nBye<end_of_turn>\n";
            assertThat(template.render(chat, false)).isEqualTo(turns);
            assertThat(template.render(chat, true)).isEqualTo(turns + "<start_of_turn>model\n");
        }

        @Test
        void aSystemMessageRaisesTheTemplatesMessage() {
            assertThatThrownBy(() -> template.render(List.of(system("Be brief."), user("Hi")), true))
                    .isInstanceOf(ChatTemplateException.class)
                    .extracting(e -> ((ChatTemplateException) e).raisedMessage())
                    .isEqualTo("System role not supported");
        }
    }

    /** Phi-3.5: {@code <|system|>}, {@code <|user|>}, {@code <|assistant|>} turns ending {@code <|end|>}. */
    @Nested
    class Phi35 {
        final ChatTemplate template = load("microsoft-Phi-3.5-mini-instruct", "<s>", "<|endoftext|>");

        @Test
        void systemAndUserWithGenerationPrompt() {
            assertThat(template.render(List.of(system("You are a helpful assistant."), user("How are you?")), true))
                    .isEqualTo("<|system|>\nYou are a helpful assistant.<|end|>\n<|user|>\nHow are you?<|end|>\n"
                            + "<|assistant|>\n");
        }

        @Test
        void withoutAGenerationPromptTheTextEndsWithEos() {
            assertThat(template.render(List.of(user("Hi"), assistant("Hello.")), false))
                    .isEqualTo("<|user|>\nHi<|end|>\n<|assistant|>\nHello.<|end|>\n<|endoftext|>");
        }

        @Test
        void anEmptySystemMessageIsLeftOut() {
            assertThat(template.render(List.of(system(""), user("Hi")), true))
                    .isEqualTo("<|user|>\nHi<|end|>\n<|assistant|>\n");
        }
    }
}
