package dev.tandem.llm;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The real model files of the development and CI machines ({@code ../shared/models} beside the
 * repository, or the directory the system property {@code tandem.shared} names). A test that
 * needs them fails with a message saying where it looked; it never skips.
 */
public final class SharedModels {
    private SharedModels() {}

    /** The {@code models} directory. */
    public static Path dir() {
        String property = System.getProperty("tandem.shared");
        if (property != null) {
            Path models = Path.of(property).resolve("models");
            if (Files.isDirectory(models)) {
                return models;
            }
            throw new AssertionError("tandem.shared = " + property + " has no models/ directory");
        }
        Path here = Path.of("").toAbsolutePath();
        for (Path p = here; p != null; p = p.getParent()) {
            Path models = p.resolve("../shared/models").normalize();
            if (Files.isDirectory(models)) {
                return models;
            }
        }
        throw new AssertionError("no ../shared/models above " + here
                + ": the real-model tests need the shared model files (or -Dtandem.shared=DIR)");
    }

    public static Path file(String name) {
        Path p = dir().resolve(name);
        if (!Files.exists(p)) {
            throw new AssertionError("missing shared model file " + p);
        }
        return p;
    }
}
