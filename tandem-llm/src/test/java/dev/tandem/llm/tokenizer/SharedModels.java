package dev.tandem.llm.tokenizer;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The real model files under {@code shared/models}: the system property {@code tandem.shared}, or
 * the first {@code shared} folder beside the module directory or one of its ancestors (the repository
 * root's sibling {@code ../shared}). Tests fail, never skip, when it is absent.
 */
final class SharedModels {
    private SharedModels() {}

    static Path models() {
        String property = System.getProperty("tandem.shared");
        if (property != null && !property.isBlank()) {
            Path models = Path.of(property).resolve("models");
            if (!Files.isDirectory(models)) {
                fail("tandem.shared = " + property + " has no models folder");
            }
            return models;
        }
        Path start = Path.of("").toAbsolutePath();
        for (Path dir = start; dir != null; dir = dir.getParent()) {
            Path models = dir.resolve("shared").resolve("models");
            if (Files.isDirectory(models)) {
                return models;
            }
        }
        return fail("no shared/models beside " + start + " or any folder above it; set -Dtandem.shared=DIR");
    }

    /**
     * Small files committed with the tests ({@code src/test/resources/models}, under 2 MB each: the
     * Phi-3 vocabulary and its vectors, from llama.cpp's {@code models/}, MIT), read before
     * {@code shared/models}.
     */
    static final Path COMMITTED = Path.of("src", "test", "resources", "models");

    static Path file(String relative) {
        if (Files.isRegularFile(COMMITTED.resolve(relative))) {
            return COMMITTED.resolve(relative);
        }
        Path path = models().resolve(relative);
        if (!Files.isRegularFile(path)) {
            fail("missing shared model file " + path);
        }
        return path;
    }

    /** One test vector: a text and the ids llama.cpp gives it (no BOS). */
    record Case(int index, String text, int[] ids) {
        @Override
        public String toString() {
            return "#" + index + " " + escape(text);
        }
    }

    /**
     * The test vectors of {@code vocab/NAME.gguf}: its {@code .inp} holds texts each followed by a line
     * {@code __ggml_vocab_test__} (the newline before the separator is part of the separator, as
     * llama.cpp's test-tokenizer-0 reads it), its {@code .out} one line of ids per text.
     */
    static List<Case> vectors(String name) throws IOException {
        String inp = Files.readString(file("vocab/" + name + ".gguf.inp"), StandardCharsets.UTF_8);
        List<String> out = Files.readAllLines(file("vocab/" + name + ".gguf.out"), StandardCharsets.UTF_8);
        String separator = "\n__ggml_vocab_test__\n";
        List<String> texts = new ArrayList<>();
        int pos = 0;
        while (pos < inp.length()) {
            int next = inp.indexOf(separator, pos);
            if (next < 0) {
                texts.add(inp.substring(pos));
                break;
            }
            texts.add(inp.substring(pos, next));
            pos = next + separator.length();
        }
        if (texts.size() != out.size()) {
            fail(name + ": " + texts.size() + " texts but " + out.size() + " lines of ids");
        }
        List<Case> cases = new ArrayList<>();
        for (int i = 0; i < texts.size(); i++) {
            String line = out.get(i).strip();
            int[] ids = line.isEmpty() ? new int[0] : Arrays.stream(line.split(" +")).mapToInt(Integer::parseInt).toArray();
            cases.add(new Case(i, texts.get(i), ids));
        }
        return cases;
    }

    static String escape(String text) {
        StringBuilder b = new StringBuilder("'");
        text.codePoints().forEach(cp -> {
            switch (cp) {
                case '\n' -> b.append("\\n");
                case '\t' -> b.append("\\t");
                case '\r' -> b.append("\\r");
                default -> b.appendCodePoint(cp);
            }
        });
        return b.append("'").toString();
    }
}
