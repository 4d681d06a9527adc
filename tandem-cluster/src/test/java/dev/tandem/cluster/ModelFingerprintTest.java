package dev.tandem.cluster;

import dev.tandem.llm.ModelFingerprint;
import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.bench.RandomGguf;
import dev.tandem.llm.EmbeddedModel;
import dev.tandem.llm.LanguageModel;
import dev.tandem.llm.gguf.GgmlType;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A model's fingerprint tells apart two files of one name, even two whose headers and sizes are
 * byte for byte the same, and is the same for the same content wherever it lies.
 */
class ModelFingerprintTest {
    private static final Path DIR = Path.of("target", "cluster-test-models").toAbsolutePath();

    @Test
    void twoFilesOfOneNameHeaderAndSizeDifferByTheirWeights() throws Exception {
        Path a = RandomGguf.cached(DIR.resolve("random-64x2.gguf"), RandomGguf.shape(64, 2, 4, 4, 192), GgmlType.F32,
                48, true);
        Path b = RandomGguf.cached(DIR.resolve("random-64x2-seed49.gguf"), RandomGguf.shape(64, 2, 4, 4, 192),
                GgmlType.F32, 49, true);
        assertThat(LanguageModel.loadText(b).name()).as("one name").isEqualTo(LanguageModel.loadText(a).name());
        assertThat(Files.size(b)).as("one size").isEqualTo(Files.size(a));

        assertThat(ModelFingerprint.of(a)).matches("[0-9a-f]{16}").isNotEqualTo(ModelFingerprint.of(b));
        assertThat(ModelFingerprint.of(a)).as("stable").isEqualTo(ModelFingerprint.of(a));
        assertThat(ModelFingerprint.of(EmbeddedModel.path())).isNotEqualTo(ModelFingerprint.of(a));
    }

    @Test
    void theSameContentElsewhereHasTheSameFingerprint(@TempDir Path tmp) throws Exception {
        Path copy = Files.copy(EmbeddedModel.path(), tmp.resolve("elsewhere.gguf"));
        assertThat(ModelFingerprint.of(copy)).isEqualTo(ModelFingerprint.of(EmbeddedModel.path()));
    }

    @Test
    void aDirectorysFingerprintFollowsItsFiles(@TempDir Path tmp) throws Exception {
        Path one = Files.createDirectory(tmp.resolve("one"));
        Path two = Files.createDirectory(tmp.resolve("two"));
        byte[] weights = new byte[3 << 20]; // past the head read whole: only samples of the rest are read
        for (Path dir : new Path[] {one, two}) {
            Files.writeString(dir.resolve("tokenizer.json"), "{\"model\":{}}");
            Files.write(dir.resolve("model.safetensors"), weights);
        }
        assertThat(ModelFingerprint.of(two)).as("same files, another directory").isEqualTo(ModelFingerprint.of(one));
        Files.writeString(two.resolve("tokenizer.json"), "{\"model\":{\"x\":1}}");
        assertThat(ModelFingerprint.of(two)).as("another tokenizer").isNotEqualTo(ModelFingerprint.of(one));
    }
}
