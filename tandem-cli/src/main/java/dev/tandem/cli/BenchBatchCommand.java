package dev.tandem.cli;

import dev.tandem.bench.Json;
import java.io.PrintStream;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code tandem bench batch}: the batcher's prefill orders, by short prompts' time to first token
 * ({@link dev.tandem.bench.BatchBench}).
 */
@Command(name = "batch", mixinStandardHelpOptions = true,
        description = "The batcher's prefill orders: time to first token of short prompts that arrive with a long"
                + " one while others decode.")
final class BenchBatchCommand implements Runnable {
    @picocli.CommandLine.Mixin
    BenchCommand.Common common = new BenchCommand.Common();

    @Option(names = "--model", paramLabel = "PATH", defaultValue = "stories260K",
            description = "A GGUF file or stories260K (default: ${DEFAULT-VALUE}).")
    String model;

    @Option(names = "--decoders", defaultValue = "4", description = "Members decoding meanwhile (default: ${DEFAULT-VALUE}).")
    int decoders;

    @Option(names = "--shorts", defaultValue = "3", description = "Short prompts arriving (default: ${DEFAULT-VALUE}).")
    int shorts;

    @Option(names = "--long", defaultValue = "480", description = "Tokens of the long prompt (default: ${DEFAULT-VALUE}).")
    int longPrompt;

    @Option(names = "--budget", defaultValue = "64", description = "Rows a step (default: ${DEFAULT-VALUE}).")
    int budget;

    @Option(names = "--cores", defaultValue = "0", description = "Device cores (default: available processors).")
    int cores;

    @Override
    public void run() {
        if (decoders < 0 || shorts < 1 || longPrompt < 1 || budget <= decoders + shorts + 1 || cores < 0) {
            throw new IllegalArgumentException("--decoders >= 0, --shorts >= 1, --long >= 1, --cores >= 0 and"
                    + " --budget > decoders + shorts + 1 are needed");
        }
        java.nio.file.Path path = dev.tandem.llm.EmbeddedModel.resolve(model);
        int coreCount = cores == 0 ? Runtime.getRuntime().availableProcessors() : cores;
        int rounds = common.quick ? 3 : 7;
        PrintStream out = System.out;
        out.printf(Locale.ROOT, "batch: %d decoding; a %d-token prompt then %d short ones arrive; %d rows a step;"
                + " %d core(s); median of %d alternating rounds%n", decoders, longPrompt, shorts, budget, coreCount,
                rounds);
        List<dev.tandem.bench.BatchBench.Row> rows;
        try {
            rows = dev.tandem.bench.BatchBench.run(path, coreCount, decoders, shorts, longPrompt, budget, rounds);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
        out.printf(Locale.ROOT, "%-15s %16s %15s %18s%n", "prefill order", "short ttft ms", "long ttft ms",
                "decode tokens/s");
        for (dev.tandem.bench.BatchBench.Row r : rows) {
            out.printf(Locale.ROOT, "%-15s %16.1f %15.1f %18.1f%n", r.order(), r.shortTtftMs(), r.longTtftMs(),
                    r.decodeTokensPerSecond());
        }
        if (common.json) {
            java.util.Map<String, Object> json = new java.util.LinkedHashMap<>();
            json.put("rows", rows.stream().map(dev.tandem.bench.BatchBench.Row::toJson).toList());
            json.put("cores", coreCount);
            out.println(Json.write(json));
        }
    }
}
