package dev.tandem.llm.safetensors;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.DictionaryEntries;
import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.tandem.kernels.TensorType;
import dev.tandem.llm.model.LlamaConfig;
import dev.tandem.llm.model.RopeStyle;
import dev.tandem.llm.reference.RandomWeights;
import dev.tandem.llm.reference.SafetensorsWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Fuzzes {@link SafetensorsFile#open} (and every tensor's slice of a file that parses) with
 * Jazzer: the only acceptable outcomes are success or a {@link SafetensorsException}; any other
 * throwable is a finding.
 *
 * <p>The dictionary holds the header's keys and dtypes. To guide the fuzzer through Jackson's
 * parser too, add {@code JAZZER_INSTRUMENT='dev.tandem.**,com.fasterxml.jackson.**'} to the command
 * below.
 *
 * <p>In a normal build the fuzz test runs in Jazzer's regression mode, once on each seed in
 * {@code src/test/resources/dev/tandem/llm/safetensors/SafetensorsFuzzTestInputs/fuzzOpen/}
 * (small valid files the writers produced, see {@link #main}) and on the empty input. To fuzz for
 * {@code maxDuration} (five minutes; edit it for longer runs), from the repository root:
 *
 * <pre>
 *   JAZZER_FUZZ=1 JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64 ./mvnw -pl tandem-llm -am test \
 *       -Dtest=SafetensorsFuzzTest -Dsurefire.failIfNoSpecifiedTests=false
 * </pre>
 */
class SafetensorsFuzzTest {
    private static final Path FILE = temp();

    private static Path temp() {
        try {
            Path p = Files.createTempFile("tandem-fuzz", ".safetensors");
            p.toFile().deleteOnExit();
            return p;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @DictionaryEntries({"\"dtype\"", "\"shape\"", "\"data_offsets\"", "\"__metadata__\"", "\"F32\"", "\"F16\"",
        "\"BF16\"", "\"I64\"", "[0, 0]", "[]", "{}", "-1", "18446744073709551615", "1e400"})
    @FuzzTest(maxDuration = "5m")
    void fuzzOpen(byte[] data) throws IOException {
        Files.write(FILE, data);
        try (SafetensorsFile f = SafetensorsFile.open(FILE)) {
            for (SafetensorsTensor t : f.tensors()) {
                MemorySegment s = f.data(t);
                assertThat(s.byteSize()).isEqualTo(t.elements() * t.dtype().bytes());
                if (s.byteSize() > 0) {
                    s.get(ValueLayout.JAVA_BYTE, s.byteSize() - 1);
                }
            }
        } catch (SafetensorsException expected) {
            // A clear error is the right answer to a bad file.
        }
    }

    /** The seeds (all but the fuzzer's findings, kept as {@code finding-*}) stay valid files. */
    @Test
    void everySeedIsAValidFile() throws IOException {
        List<Path> seeds;
        try (Stream<Path> s = Files.list(seedDir(Path.of("src/test/resources")))) {
            seeds = s.filter(p -> !p.getFileName().toString().startsWith("finding-")).toList();
        }
        assertThat(seeds).hasSizeGreaterThanOrEqualTo(2);
        for (Path seed : seeds) {
            SafetensorsFile.open(seed).close();
        }
    }

    static Path seedDir(Path resources) {
        return resources.resolve("dev/tandem/llm/safetensors/SafetensorsFuzzTestInputs/fuzzOpen");
    }

    /** Writes the seed corpus; run with the test classpath from {@code tandem-llm/}. */
    public static void main(String[] args) throws IOException {
        Path dir = seedDir(Path.of(args.length > 0 ? args[0] : "src/test/resources"));
        Files.createDirectories(dir);
        new SafetensorsWriter().metadata("format", "pt")
                .f32("a", new long[] {2, 2}, new float[] {1, 2, 3, 4})
                .tensor("h", SafetensorsDtype.F16, new long[] {3}, MemorySegment.ofArray(new short[3]))
                .tensor("b", SafetensorsDtype.BF16, new long[] {}, MemorySegment.ofArray(new short[] {0x3f80}))
                .f32("empty", new long[] {0}, new float[0])
                .write(dir.resolve("small.safetensors"));
        LlamaConfig tiny = new LlamaConfig(8, 1, 2, 1, 4, 8, 8, 16, 10000f, RopeStyle.NEOX, false, 1e-5f,
                TensorType.F32, true, false, true);
        Path model = Files.createTempDirectory("tiny-hf");
        new HuggingFaceDirectoryWriter(new RandomWeights(tiny, 1)).modelType("qwen2").dtype(SafetensorsDtype.BF16)
                .write(model);
        Files.copy(model.resolve(SafetensorsModel.SINGLE_FILE), dir.resolve("tiny-qwen2-bf16.safetensors"),
                java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    }
}
