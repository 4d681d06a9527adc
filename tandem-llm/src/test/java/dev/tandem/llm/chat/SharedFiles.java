package dev.tandem.llm.chat;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The project's shared test files ({@code shared/} beside the repository): the directory the system
 * property {@code tandem.shared} names, else the first {@code shared} directory found beside the
 * module directory or one of its parents (the repository's {@code ../shared} on CI and in a clone,
 * also found from a worktree nested deeper). Missing files fail the test, never skip it.
 */
final class SharedFiles {

    private SharedFiles() {}

    static Path root() {
        String property = System.getProperty("tandem.shared");
        if (property != null && !property.isBlank()) {
            Path path = Path.of(property).toAbsolutePath().normalize();
            if (!Files.isDirectory(path)) {
                fail("-Dtandem.shared=" + property + " is not a directory");
            }
            return path;
        }
        Path module = Path.of("").toAbsolutePath().normalize();
        for (Path dir = module; dir != null; dir = dir.getParent()) {
            Path candidate = dir.resolveSibling("shared");
            if (dir.getParent() != null && Files.isDirectory(candidate.resolve("models"))) {
                return candidate;
            }
        }
        return fail("shared test files not found: no shared/models beside " + module
                + " or any parent (expected the repository's ../shared); set -Dtandem.shared=DIR to point elsewhere");
    }

    static String read(String relative) {
        Path path = root().resolve(relative);
        if (!Files.isRegularFile(path)) {
            fail("shared test file missing: " + path);
        }
        try {
            return Files.readString(path);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + path, e);
        }
    }

    static String template(String name) {
        return read("models/templates/" + name + ".jinja");
    }
}
