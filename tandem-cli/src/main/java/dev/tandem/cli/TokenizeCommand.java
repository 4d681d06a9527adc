package dev.tandem.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.llm.EmbeddedModel;
import dev.tandem.llm.tokenizer.Tokenizer;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code tandem tokenize}: the token ids of a text under a model's tokenizer. */
@Command(
        name = "tokenize",
        mixinStandardHelpOptions = true,
        description = "Print the token ids of a text (no BOS unless --bos). Works on vocabulary-only GGUF files too.")
public final class TokenizeCommand implements Runnable {

    @Option(names = "--model", required = true, paramLabel = "PATH|" + EmbeddedModel.NAME,
            description = "A GGUF file or Hugging Face model directory, or " + EmbeddedModel.NAME + ".")
    String model;

    static final class Input {
        @Option(names = "--text", description = "The text.")
        String text;

        @Option(names = "--file", paramLabel = "FILE",
                description = "A file whose every line is one JSON string; each output line is the JSON array of its ids.")
        Path file;
    }

    @ArgGroup(multiplicity = "1")
    Input input;

    @Option(names = "--bos", description = "Add the BOS token (when the vocabulary adds one).")
    boolean bos;

    @Option(names = "--no-special", description = "Treat the text of special tokens as plain text.")
    boolean noSpecial;

    @Option(names = "--json", description = "Print a JSON array (the default for --file).")
    boolean json;

    @Override
    public void run() {
        PrintStream out = System.out;
        Tokenizer tokenizer = Checkpoints.tokenizer(EmbeddedModel.resolve(model));
        ObjectMapper mapper = new ObjectMapper();
        try {
            if (input.file != null) {
                List<String> lines = Files.readAllLines(input.file, StandardCharsets.UTF_8);
                for (int i = 0; i < lines.size(); i++) {
                    if (lines.get(i).isBlank()) {
                        continue;
                    }
                    String text;
                    try {
                        text = mapper.readValue(lines.get(i), String.class);
                    } catch (com.fasterxml.jackson.core.JacksonException e) {
                        throw new IllegalArgumentException(input.file + ":" + (i + 1) + ": not a JSON string: "
                                + e.getOriginalMessage());
                    }
                    out.println(mapper.writeValueAsString(tokenizer.encode(text, bos, !noSpecial)));
                }
                return;
            }
            int[] ids = tokenizer.encode(input.text, bos, !noSpecial);
            if (json) {
                out.println(mapper.writeValueAsString(ids));
            } else {
                out.println(Arrays.stream(ids).mapToObj(Integer::toString).collect(Collectors.joining(" ")));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
