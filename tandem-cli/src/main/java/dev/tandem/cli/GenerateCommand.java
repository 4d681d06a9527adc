package dev.tandem.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.CpuDeviceConfig;
import dev.tandem.Worker;
import dev.tandem.llm.Completion;
import dev.tandem.llm.EmbeddedModel;
import dev.tandem.llm.GenerateOptions;
import dev.tandem.llm.LanguageModel;
import dev.tandem.llm.model.KvType;
import dev.tandem.llm.chat.ChatMessage;
import dev.tandem.llm.sampling.SamplerConfig;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code tandem generate}: one completion, streamed to stdout. */
@Command(
        name = "generate",
        mixinStandardHelpOptions = true,
        description = "Stream the continuation of a prompt (or, with --chat, the model's reply to it).")
public final class GenerateCommand implements Runnable {

    @Option(names = "--model", paramLabel = "PATH|" + EmbeddedModel.NAME, defaultValue = EmbeddedModel.NAME,
            description = "A GGUF file, or " + EmbeddedModel.NAME + " for the embedded model (default).")
    String model;

    @Option(names = "--prompt", required = true, description = "The prompt text.")
    String prompt;

    @Option(names = "--chat", description = "Send the prompt as a user message through the model's chat template.")
    boolean chat;

    @Option(names = "--system", description = "With --chat, a system message first.")
    String system;

    @Option(names = "--max-tokens", defaultValue = "128", description = "Tokens to generate at most (default: ${DEFAULT-VALUE}).")
    int maxTokens;

    @Option(names = "--temperature", defaultValue = "0.8", description = "0 for greedy (default: ${DEFAULT-VALUE}).")
    float temperature;

    @Option(names = "--top-k", defaultValue = "40", description = "0 for off (default: ${DEFAULT-VALUE}).")
    int topK;

    @Option(names = "--top-p", defaultValue = "0.95", description = "1 for off (default: ${DEFAULT-VALUE}).")
    float topP;

    @Option(names = "--min-p", defaultValue = "0.05", description = "0 for off (default: ${DEFAULT-VALUE}).")
    float minP;

    @Option(names = "--repeat-penalty", defaultValue = "1.0", description = "1 for off (default: ${DEFAULT-VALUE}).")
    float repeatPenalty;

    @Option(names = "--presence-penalty", defaultValue = "0", description = "(default: ${DEFAULT-VALUE}).")
    float presencePenalty;

    @Option(names = "--frequency-penalty", defaultValue = "0", description = "(default: ${DEFAULT-VALUE}).")
    float frequencyPenalty;

    @Option(names = "--seed", description = "Seed of the draws; the same seed gives the same text (default: random).")
    Long seed;

    @Option(names = "--stop", description = "A string that ends the completion (repeatable).")
    List<String> stop = new ArrayList<>();

    @Option(names = "--cores", defaultValue = "0", description = "Device cores (default: available processors).")
    int cores;

    @Option(names = "--kv-type", paramLabel = "f16|f32", defaultValue = KvTypes.DEFAULT,
            converter = KvTypes.class, completionCandidates = KvTypes.class, description = KvTypes.DESCRIPTION)
    KvType kvType;

    @Option(names = "--json", description = "After the text, a last line of JSON: prompt_tokens, tokens, text,"
            + " finish_reason, tokens_per_s.")
    boolean json;

    @Override
    public void run() {
        long actualSeed = seed != null ? seed : System.nanoTime();
        SamplerConfig sampler = SamplerConfig.builder().temperature(temperature).topK(topK).topP(topP).minP(minP)
                .repetitionPenalty(repeatPenalty).presencePenalty(presencePenalty).frequencyPenalty(frequencyPenalty)
                .seed(actualSeed).build();
        GenerateOptions options = GenerateOptions.defaults().withMaxTokens(maxTokens).withSampler(sampler)
                .withStop(stop);
        int coreCount = cores == 0 ? Runtime.getRuntime().availableProcessors() : cores;
        PrintStream out = System.out;
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(coreCount))) {
            LanguageModel lm = LanguageModel.load(worker, EmbeddedModel.resolve(model), LanguageModel.DEFAULT_MAX_CONTEXT,
                    kvType);
            int[] promptTokens;
            if (chat) {
                List<ChatMessage> messages = new ArrayList<>();
                if (system != null) {
                    messages.add(ChatMessage.system(system));
                }
                messages.add(ChatMessage.user(prompt));
                promptTokens = lm.encodeChat(messages);
            } else {
                promptTokens = lm.encode(prompt);
            }
            long start = System.nanoTime();
            long first = 0;
            Completion completion = lm.generate(worker, promptTokens, options);
            int n = 0;
            for (Completion.Delta d : completion) {
                if (d.token() >= 0 && n++ == 0) {
                    first = System.nanoTime();
                }
                out.print(d.text());
                out.flush();
            }
            long end = System.nanoTime();
            out.println();
            if (json) {
                int generated = completion.tokens().length;
                double decodeSeconds = (end - first) / 1e9;
                ObjectMapper mapper = new ObjectMapper();
                ObjectNode node = mapper.createObjectNode();
                node.putPOJO("prompt_tokens", completion.promptTokens());
                node.putPOJO("tokens", completion.tokens());
                node.put("text", completion.text());
                node.put("finish_reason", completion.finishReason().wire());
                node.put("tokens_per_s", generated > 1 && decodeSeconds > 0 ? (generated - 1) / decodeSeconds : 0.0);
                node.put("ttft_ms", first == 0 ? 0.0 : (first - start) / 1e6);
                node.put("seed", actualSeed);
                node.put("model", lm.name());
                try {
                    out.println(mapper.writeValueAsString(node));
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }
            if (completion.finishReason() == dev.tandem.llm.FinishReason.ABORTED) {
                throw new IllegalStateException("generation aborted: " + completion.outcome());
            }
        }
    }
}
