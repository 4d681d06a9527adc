package dev.tandem.llm.gguf;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.tandem.kernels.TensorType;
import dev.tandem.llm.model.LlamaConfig;
import dev.tandem.llm.reference.GgufWriter;
import dev.tandem.llm.reference.RandomWeights;
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
 * Fuzzes {@link GgufFile#open} (and, when a file parses, {@link GgufModel#open} and every tensor's
 * slice) with Jazzer: the only acceptable outcomes are success or a {@link GgufException}; any
 * other throwable (an index out of bounds, an {@code OutOfMemoryError}, a negative array size) is
 * a finding.
 *
 * <p>In a normal build the fuzz test runs in Jazzer's regression mode: once on each seed in
 * {@code src/test/resources/dev/tandem/llm/gguf/GgufFuzzTestInputs/fuzzOpen/} (small valid files
 * the writers produced, see {@link #main}) and on the empty input, in well under a second. To
 * fuzz, for {@code maxDuration} (five minutes; edit it for longer runs), from the repository root:
 *
 * <pre>
 *   JAZZER_FUZZ=1 JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64 ./mvnw -pl tandem-llm -am test \
 *       -Dtest=GgufFuzzTest -Dsurefire.failIfNoSpecifiedTests=false
 * </pre>
 *
 * <p>Jazzer keeps its generated corpus in {@code tandem-llm/.cifuzz-corpus/} and writes a crashing
 * input into the inputs directory above, where it then runs as a regression test.
 */
class GgufFuzzTest {
    private static final Path FILE = temp();

    private static Path temp() {
        try {
            Path p = Files.createTempFile("tandem-fuzz", ".gguf");
            p.toFile().deleteOnExit();
            return p;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @FuzzTest(maxDuration = "5m")
    void fuzzOpen(byte[] data) throws IOException {
        Files.write(FILE, data);
        try (GgufFile f = GgufFile.open(FILE)) {
            for (GgufTensor t : f.tensors()) {
                MemorySegment s = f.data(t);
                if (s.byteSize() > 0) {
                    s.get(ValueLayout.JAVA_BYTE, s.byteSize() - 1);
                }
            }
            f.metadata().asMap().forEach((k, v) -> v.toString());
        } catch (GgufException expected) {
            return;
        }
        try (GgufModel m = GgufModel.open(FILE, 64)) {
            assertThat(m.config()).isNotNull();
        } catch (GgufException expected) {
            // Parses as GGUF, but is not a model tandem runs.
        }
    }

    /**
     * The seeds (all but the fuzzer's findings, kept as {@code finding-*}) stay valid files: each
     * opens, so the fuzzer starts from inside the format.
     */
    @Test
    void everySeedIsAValidFile() throws IOException {
        List<Path> seeds;
        try (Stream<Path> s = Files.list(seedDir(Path.of("src/test/resources")))) {
            seeds = s.filter(p -> !p.getFileName().toString().startsWith("finding-")).toList();
        }
        assertThat(seeds).hasSizeGreaterThanOrEqualTo(3);
        for (Path seed : seeds) {
            GgufFile.open(seed).close();
        }
    }

    static Path seedDir(Path resources) {
        return resources.resolve("dev/tandem/llm/gguf/GgufFuzzTestInputs/fuzzOpen");
    }

    /** Writes the seed corpus; run with the test classpath from {@code tandem-llm/}. */
    public static void main(String[] args) throws IOException {
        Path dir = seedDir(Path.of(args.length > 0 ? args[0] : "src/test/resources"));
        Files.createDirectories(dir);
        new GgufWriter().put("general.architecture", "llama").put("general.alignment", GgufValue.uint32(32))
                .put("a.u8", GgufValue.integers(GgufValueType.UINT8, 1, 2))
                .put("a.f", 1.5f).put("a.b", true).put("a.s", GgufValue.strings("x", "yz"))
                .tensor("t", GgmlType.F32, new long[] {4}, MemorySegment.ofArray(new float[] {1, 2, 3, 4}))
                .tensor("q", GgmlType.Q8_0, new long[] {32, 1}, MemorySegment.ofArray(new byte[34]))
                .write(dir.resolve("small.gguf"));
        new GgufWriter().version(2).put("general.name", "v2").write(dir.resolve("empty-v2.gguf"));
        LlamaConfig tiny = new LlamaConfig(8, 1, 2, 1, 8, 8, 16, 10000f, 1e-5f, TensorType.F32);
        new GgufCheckpointWriter(new RandomWeights(tiny, 1)).write(dir.resolve("tiny-llama.gguf"));
        new GgufCheckpointWriter(new RandomWeights(tiny.withVariants(true, true, true), 1)).architecture("qwen3")
                .matrixType(GgmlType.F16).write(dir.resolve("tiny-qwen3-f16.gguf"));
    }
}
