package dev.tandem.cli;

import dev.tandem.bench.Json;
import java.io.PrintStream;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code tandem bench grammar}: constrained decoding's cost per token ({@link
 * dev.tandem.bench.GrammarBench}).
 */
@Command(name = "grammar", mixinStandardHelpOptions = true,
        description = "Constrained decoding's per-token cost: the sample step with and without a JSON Schema"
                + " grammar (and json_object) over each vocabulary, and whole greedy decoding of the embedded model;"
                + " contenders alternate, medians, ratio constrained/plain.")
final class BenchGrammarCommand implements Runnable {
    @picocli.CommandLine.Mixin
    BenchCommand.Common common = new BenchCommand.Common();

    @Option(names = "--vocab", paramLabel = "GGUF", split = ",", description = "Vocabulary-only (or full) GGUF"
            + " files whose vocabularies to measure besides the embedded one (default: none).")
    List<java.nio.file.Path> vocabularies = List.of();

    @Override
    public void run() {
        if (common.trace != null) {
            throw new IllegalArgumentException("bench grammar does not write traces");
        }
        dev.tandem.bench.GrammarBench.Result r = dev.tandem.bench.GrammarBench.run(vocabularies,
                common.quick ? 3 : 7);
        PrintStream out = System.out;
        out.print(r.markdown());
        if (common.json) {
            out.println(Json.write(r.toJson()));
        }
    }
}
