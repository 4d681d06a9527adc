import dev.tandem.CpuDeviceConfig;
import dev.tandem.Worker;
import dev.tandem.llm.Completion;
import dev.tandem.llm.EmbeddedModel;
import dev.tandem.llm.GenerateOptions;
import dev.tandem.llm.LanguageModel;
import dev.tandem.llm.sampling.SamplerConfig;
import java.nio.file.Path;

/**
 * A completion from an application that embeds tandem: dev.tandem:tandem-llm on its class path,
 * the JVM flags the README lists, nothing else. Prints the text of a greedy completion of the
 * prompt (args: [model.gguf] [prompt]; the embedded stories260K without them).
 */
public final class EmbeddedCompletion {
    public static void main(String[] args) {
        Path model = args.length > 0 ? Path.of(args[0]) : EmbeddedModel.path();
        String prompt = args.length > 1 ? args[1] : "Once upon a time";
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
            LanguageModel lm = LanguageModel.load(worker, model);
            GenerateOptions options = GenerateOptions.defaults().withMaxTokens(32).withSampler(SamplerConfig.GREEDY);
            Completion completion = lm.generate(worker, prompt, options);
            for (Completion.Delta delta : completion) {
                System.out.print(delta.text());
            }
            System.out.println();
        }
    }
}
