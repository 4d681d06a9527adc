package dev.tandem.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.StreamResponse;
import com.openai.errors.BadRequestException;
import com.openai.errors.NotFoundException;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.chat.completions.ChatCompletionStreamOptions;
import com.openai.models.completions.CompletionChoice;
import com.openai.models.completions.CompletionCreateParams;
import com.openai.models.completions.CompletionUsage;
import dev.tandem.llm.Completion;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The official OpenAI Java client against the server on loopback, serving the embedded model. */
@Timeout(90)
class OpenAiClientTest {
    private static final String PROMPT = "Once upon a time";
    private static Served served;
    private static OpenAIClient client;

    @BeforeAll
    static void start() {
        served = Served.start();
        client = OpenAIOkHttpClient.builder().baseUrl(served.baseUrl()).apiKey("unused").maxRetries(0)
                .timeout(Duration.ofSeconds(60)).build();
    }

    @AfterAll
    static void stop() {
        client.close();
        served.close();
    }

    private static CompletionCreateParams.Builder completion() {
        return CompletionCreateParams.builder().model(served.server.modelName()).prompt(PROMPT);
    }

    private static ChatCompletionCreateParams.Builder chat() {
        return ChatCompletionCreateParams.builder().model(served.server.modelName())
                .addSystemMessage("You tell short stories.").addUserMessage("Tell me about a cat.");
    }

    @Test
    void greedyCompletionsEqualTheModelsOwnGenerationTokenForToken() {
        Completion reference = StreamingLoadTest.direct(served, PROMPT, 64);
        com.openai.models.completions.Completion answer = client.completions()
                .create(completion().maxTokens(64).temperature(0.0).build());
        CompletionChoice choice = answer.choices().getFirst();
        assertThat(choice.text()).isEqualTo(reference.text());
        CompletionUsage usage = answer.usage().orElseThrow();
        assertThat(usage.completionTokens()).isEqualTo(reference.tokens().length);
        assertThat(usage.promptTokens()).isEqualTo(reference.promptTokens().length);
        assertThat(usage.totalTokens()).isEqualTo(usage.promptTokens() + usage.completionTokens());
        assertThat(choice.finishReason().asString()).isEqualTo(reference.finishReason().wire());

        // Streaming gives the same text, delta by delta.
        StringBuilder streamed = new StringBuilder();
        try (StreamResponse<com.openai.models.completions.Completion> stream = client.completions()
                .createStreaming(completion().maxTokens(64).temperature(0.0).build())) {
            stream.stream().forEach(chunk -> chunk.choices().forEach(c -> streamed.append(c.text())));
        }
        assertThat(streamed.toString()).isEqualTo(reference.text());
    }

    @Test
    void maxTokensEndsWithLength() {
        com.openai.models.completions.Completion answer = client.completions()
                .create(completion().maxTokens(5).temperature(0.0).build());
        assertThat(answer.usage().orElseThrow().completionTokens()).isEqualTo(5);
        assertThat(answer.choices().getFirst().finishReason()).isEqualTo(CompletionChoice.FinishReason.LENGTH);

        ChatCompletion chat = client.chat().completions().create(chat().maxCompletionTokens(3).temperature(0.0).build());
        assertThat(chat.usage().orElseThrow().completionTokens()).isEqualTo(3);
        assertThat(chat.choices().getFirst().finishReason()).isEqualTo(ChatCompletion.Choice.FinishReason.LENGTH);
    }

    @Test
    void aStopStringEndsTheTextBeforeIt() {
        String reference = StreamingLoadTest.direct(served, PROMPT, 64).text();
        // A word from the middle of the greedy text (found also when split across tokens).
        String[] words = reference.substring(reference.length() / 3).trim().split("\\s+");
        String stop = " " + words[1];
        String expected = reference.substring(0, reference.indexOf(stop));
        com.openai.models.completions.Completion answer = client.completions()
                .create(completion().maxTokens(64).temperature(0.0).stop(stop).build());
        assertThat(answer.choices().getFirst().text()).isEqualTo(expected);
        assertThat(answer.choices().getFirst().finishReason()).isEqualTo(CompletionChoice.FinishReason.STOP);

        StringBuilder streamed = new StringBuilder();
        List<String> finishes = new ArrayList<>();
        try (StreamResponse<com.openai.models.completions.Completion> stream = client.completions().createStreaming(
                completion().maxTokens(64).temperature(0.0).stop(CompletionCreateParams.Stop.ofStrings(
                        List.of("never appears", stop))).build())) {
            stream.stream().forEach(chunk -> chunk.choices().forEach(c -> {
                streamed.append(c.text());
                if (!c._finishReason().isNull()) {
                    finishes.add(c.finishReason().asString());
                }
            }));
        }
        assertThat(streamed.toString()).isEqualTo(expected);
        assertThat(finishes).containsExactly("stop");
    }

    @Test
    void theSameSeedGivesTheSameText() {
        ChatCompletionCreateParams seeded = chat().maxCompletionTokens(40).temperature(1.0).seed(42).build();
        String first = client.chat().completions().create(seeded).choices().getFirst().message().content().orElseThrow();
        String second = client.chat().completions().create(seeded).choices().getFirst().message().content()
                .orElseThrow();
        assertThat(second).isEqualTo(first);
        List<String> others = new ArrayList<>();
        for (long seed = 43; seed < 46; seed++) {
            others.add(client.chat().completions().create(chat().maxCompletionTokens(40).temperature(1.0).seed(seed)
                    .build()).choices().getFirst().message().content().orElseThrow());
        }
        assertThat(others).as("other seeds draw other text").anyMatch(text -> !text.equals(first));
    }

    @Test
    void streamingChatGivesTheSameTextAsAWholeAnswerAndItsUsage() {
        ChatCompletion whole = client.chat().completions().create(chat().maxCompletionTokens(48).temperature(0.0).build());
        String text = whole.choices().getFirst().message().content().orElseThrow();
        assertThat(text).isNotBlank();

        StringBuilder streamed = new StringBuilder();
        List<CompletionUsage> usages = new ArrayList<>();
        List<ChatCompletionChunk.Choice.FinishReason> finishes = new ArrayList<>();
        List<String> roles = new ArrayList<>();
        try (StreamResponse<ChatCompletionChunk> stream = client.chat().completions().createStreaming(
                chat().maxCompletionTokens(48).temperature(0.0)
                        .streamOptions(ChatCompletionStreamOptions.builder().includeUsage(true).build()).build())) {
            stream.stream().forEach(chunk -> {
                chunk.usage().ifPresent(usages::add);
                for (ChatCompletionChunk.Choice choice : chunk.choices()) {
                    choice.delta().content().ifPresent(streamed::append);
                    choice.delta().role().ifPresent(role -> roles.add(role.asString()));
                    choice.finishReason().ifPresent(finishes::add);
                }
            });
        }
        assertThat(streamed.toString()).isEqualTo(text);
        assertThat(roles).containsExactly("assistant");
        assertThat(finishes).hasSize(1);
        assertThat(finishes.getFirst().asString()).isEqualTo(whole.choices().getFirst().finishReason().asString());
        assertThat(usages).hasSize(1);
        assertThat(usages.getFirst().completionTokens()).isEqualTo(whole.usage().orElseThrow().completionTokens());
        assertThat(usages.getFirst().promptTokens()).isEqualTo(whole.usage().orElseThrow().promptTokens());
    }

    @Test
    void errorsReachTheClientAsItsExceptions() {
        assertThatThrownBy(() -> client.chat().completions().create(chat().n(20).build()))
                .isInstanceOfSatisfying(BadRequestException.class, e -> {
                    assertThat(e.statusCode()).isEqualTo(400);
                    assertThat(e.getMessage()).contains("n must be");
                });
        assertThatThrownBy(() -> client.models().retrieve("gpt-4o")).isInstanceOf(NotFoundException.class);
        String tooLong = " a".repeat(served.model.config().contextLength() + 8);
        assertThatThrownBy(() -> client.completions().create(completion().prompt(tooLong).build()))
                .isInstanceOfSatisfying(BadRequestException.class, e -> assertThat(e.code())
                        .hasValueSatisfying(code -> assertThat(code).isEqualTo("context_length_exceeded")));
        assertThat(client.models().list().data()).singleElement()
                .satisfies(m -> assertThat(m.id()).isEqualTo(served.server.modelName()));
    }
}
