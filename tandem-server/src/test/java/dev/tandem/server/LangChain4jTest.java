package dev.tandem.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;
import dev.langchain4j.model.openai.OpenAiStreamingChatModel;
import dev.langchain4j.model.output.FinishReason;
import dev.tandem.llm.Completion;
import dev.tandem.llm.chat.ChatMessage;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** LangChain4j's OpenAI streaming chat model pointed at the server's base URL. */
@Timeout(60)
class LangChain4jTest {
    private static Served served;

    @BeforeAll
    static void start() {
        served = Served.start();
    }

    @AfterAll
    static void stop() {
        served.close();
    }

    @Test
    void streamsAGreedyChatThatEqualsTheModelsOwnReply() throws Exception {
        String question = "Tell me about a dog.";
        int maxTokens = 32;
        Completion reference = StreamingLoadTest.direct(served,
                served.model.encodeChat(List.of(ChatMessage.user(question))), maxTokens);

        OpenAiStreamingChatModel model = OpenAiStreamingChatModel.builder().baseUrl(served.baseUrl())
                .apiKey("unused").modelName(served.server.modelName()).temperature(0.0).maxTokens(maxTokens)
                .timeout(Duration.ofSeconds(30)).build();
        StringBuilder partial = new StringBuilder();
        CompletableFuture<ChatResponse> done = new CompletableFuture<>();
        model.chat(question, new StreamingChatResponseHandler() {
            @Override
            public void onPartialResponse(String text) {
                partial.append(text);
            }

            @Override
            public void onCompleteResponse(ChatResponse response) {
                done.complete(response);
            }

            @Override
            public void onError(Throwable error) {
                done.completeExceptionally(error);
            }
        });
        ChatResponse response = done.get(30, TimeUnit.SECONDS);
        assertThat(partial.toString()).isEqualTo(reference.text()).isNotBlank();
        assertThat(response.aiMessage().text()).isEqualTo(reference.text());
        assertThat(response.finishReason()).isEqualTo(
                reference.finishReason() == dev.tandem.llm.FinishReason.LENGTH ? FinishReason.LENGTH : FinishReason.STOP);
        // LangChain4j asks for the usage chunk (stream_options.include_usage).
        assertThat(response.tokenUsage().outputTokenCount()).isEqualTo(reference.tokens().length);
        assertThat(response.tokenUsage().inputTokenCount()).isEqualTo(reference.promptTokens().length);
    }
}
