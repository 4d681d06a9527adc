package dev.tandem.cli;

import java.nio.file.Path;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code tandem bench ...}: the benchmarks, each with a table for people and a JSON last line. */
@Command(
        name = "bench",
        mixinStandardHelpOptions = true,
        description = "Run a benchmark. The last line printed with --json is one JSON object.",
        subcommands = {BenchOverheadCommand.class, BenchPipelineCommand.class, BenchRequestsCommand.class,
                BenchDecodeCommand.class, BenchServeCommand.class,
                BenchBatchCommand.class, BenchKernelsCommand.class, BenchFirstRunCommand.class,
                BenchGrammarCommand.class})
public final class BenchCommand implements Runnable {

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }

    /** A {@code --types} entry: a ggml type the GGUF loader reads. */
    static dev.tandem.llm.gguf.GgmlType matrixType(String name) {
        dev.tandem.llm.gguf.GgmlType type = dev.tandem.llm.gguf.GgmlType.byName(name);
        if (type == null || !dev.tandem.llm.gguf.GgufModel.TENSOR_TYPES.contains(type.name())) {
            throw new IllegalArgumentException("--types: " + name + " is not one of "
                    + dev.tandem.llm.gguf.GgufModel.TENSOR_TYPES);
        }
        return type;
    }

    /** Options every benchmark takes. */
    static final class Common {
        @Option(names = "--quick", description = "A short run (at most about a minute on 2 cores).")
        boolean quick;

        @Option(names = "--json", description = "Print the results as one JSON object on the last line.")
        boolean json;

        @Option(names = "--trace", paramLabel = "FILE", description = "Write a Perfetto trace of the bench's tandem worker"
                + " to FILE (one file per worker where a bench runs several: FILE with the configuration in its name).")
        Path trace;

        /** {@code FILE} with {@code -suffix} before its extension. */
        Path traceFile(String suffix) {
            String name = trace.getFileName().toString();
            int dot = name.lastIndexOf('.');
            String stem = dot > 0 ? name.substring(0, dot) : name;
            String extension = dot > 0 ? name.substring(dot) : "";
            return trace.resolveSibling(stem + "-" + suffix + extension);
        }
    }
}
