package dev.tandem.cli;

import dev.tandem.llm.gguf.GgufVocabulary;
import dev.tandem.llm.tokenizer.Tokenizer;
import dev.tandem.llm.tokenizer.Vocabulary;
import java.nio.file.Files;
import java.nio.file.Path;

/** Opens what the {@code --model} options name. */
final class Checkpoints {
    private Checkpoints() {}

    /** The tokenizer of a GGUF file (tensors or not) or of a Hugging Face directory. */
    static Tokenizer tokenizer(Path path) {
        if (Files.isDirectory(path)) {
            Path json = path.resolve("tokenizer.json");
            Path config = path.resolve("tokenizer_config.json");
            return Tokenizer.of(Vocabulary.fromHuggingFace(json, Files.exists(config) ? config : null));
        }
        return Tokenizer.of(GgufVocabulary.read(path));
    }
}
