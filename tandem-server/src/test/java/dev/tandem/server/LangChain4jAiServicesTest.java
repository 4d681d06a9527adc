package dev.tandem.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.langchain4j.model.chat.Capability;
import dev.langchain4j.model.openai.OpenAiChatModel;
import dev.langchain4j.service.AiServices;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * LangChain4j's AiServices with a record as the return type: it sends the record's JSON Schema as
 * a strict {@code response_format}, and the embedded model's reply, held to that schema on the
 * device, parses into the record.
 */
@Timeout(120)
class LangChain4jAiServicesTest {
    private static Served served;

    record Pet(String kind, int legs, boolean friendly) {}

    interface PetWriter {
        Pet describe(String story);
    }

    @BeforeAll
    static void start() {
        served = Served.start();
    }

    @AfterAll
    static void stop() {
        served.close();
    }

    @Test
    void aRecordReturnTypeComesBackFromTheSchemaHeldReply() {
        OpenAiChatModel model = OpenAiChatModel.builder().baseUrl(served.baseUrl()).apiKey("unused")
                .modelName("gpt-4o-mini").supportedCapabilities(Capability.RESPONSE_FORMAT_JSON_SCHEMA)
                .strictJsonSchema(true).maxTokens(120).seed(7).timeout(Duration.ofSeconds(90)).maxRetries(0)
                .build();
        PetWriter writer = AiServices.create(PetWriter.class, model);
        Pet pet = writer.describe("Tom had a little dog with four legs.");
        assertThat(pet).isNotNull();
        assertThat(pet.kind()).isNotNull();
    }
}
