package dev.tandem.llm;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * The model shipped inside tandem: {@value #NAME}, a trained Llama-architecture story model of
 * 1.2 MB (see the README beside it in the resources). A checkpoint is memory-mapped, so it needs
 * a file: when the resource is a file (a build tree) that file is used; from a jar it is copied
 * once into the temporary directory, named by its checksum so concurrent first uses agree.
 */
public final class EmbeddedModel {
    /** The name a CLI or server accepts for it in place of a path. */
    public static final String NAME = "stories260K";

    private static final String RESOURCE = "models/stories260K.gguf";
    private static final String SHA256_PREFIX = "270cba1bd5109f42";

    private EmbeddedModel() {}

    /** The path of the embedded model's GGUF file. */
    public static Path path() {
        URL url = EmbeddedModel.class.getResource(RESOURCE);
        if (url == null) {
            throw new IllegalStateException("the embedded model resource " + RESOURCE + " is missing from the classpath");
        }
        try {
            if (url.getProtocol().equals("file")) {
                return Path.of(url.toURI());
            }
            Path target = Path.of(System.getProperty("java.io.tmpdir"), "tandem-" + NAME + "-" + SHA256_PREFIX + ".gguf");
            if (Files.isRegularFile(target) && Files.size(target) > 0) {
                return target;
            }
            Path partial = Files.createTempFile(target.getParent(), "tandem-" + NAME, ".part");
            try (InputStream in = url.openStream()) {
                Files.copy(in, partial, StandardCopyOption.REPLACE_EXISTING);
            }
            Files.move(partial, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            return target;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot extract the embedded model", e);
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Whether {@code path} is the embedded model's file (in the build tree or extracted). */
    public static boolean isEmbedded(Path path) {
        String file = path.getFileName() == null ? "" : path.getFileName().toString();
        return file.equals("stories260K.gguf") && path.toString().contains("dev/tandem/llm/models")
                || file.startsWith("tandem-" + NAME + "-");
    }

    /** {@code name} as a path: the embedded model for {@value #NAME}, else the path itself. */
    public static Path resolve(String name) {
        return NAME.equalsIgnoreCase(name) ? path() : Path.of(name);
    }
}
