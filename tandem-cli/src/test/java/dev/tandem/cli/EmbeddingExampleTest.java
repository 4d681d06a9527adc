package dev.tandem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.CpuDeviceConfig;
import dev.tandem.Worker;
import dev.tandem.llm.EmbeddedModel;
import dev.tandem.llm.GenerateOptions;
import dev.tandem.llm.LanguageModel;
import dev.tandem.llm.sampling.SamplerConfig;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The README's embedding example, as an application would build and run it: compiled against
 * tandem's library modules (core, kernels, llm; none of the CLI, server or bench) and third-party
 * jars, run
 * in a JVM of its own with only the flags the README lists as required, and its greedy text equal
 * to the same completion in this JVM.
 */
class EmbeddingExampleTest {

    @Test
    void theExampleCompilesAgainstTheLibraryAndRunsACompletion(@TempDir Path classes) throws Exception {
        Path source = Path.of("..", "examples", "embedded", "EmbeddedCompletion.java").toAbsolutePath().normalize();
        assertThat(source).exists();
        String classPath = Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
                .filter(EmbeddingExampleTest::libraryEntry).collect(Collectors.joining(File.pathSeparator));
        Process javac = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "javac").toString(), "-cp",
                classPath, "-d", classes.toString(), source.toString()).redirectErrorStream(true).start();
        String compiled = new String(javac.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(javac.waitFor()).as("the example compiles against the library alone: " + compiled).isZero();

        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> command = new ArrayList<>(List.of(java, "--add-modules", "jdk.incubator.vector",
                "--enable-native-access=ALL-UNNAMED", "-cp", classes + File.pathSeparator + classPath,
                "EmbeddedCompletion"));
        Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(120, TimeUnit.SECONDS)).isTrue();
        assertThat(process.exitValue()).as(out).isZero();

        String expected;
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
            LanguageModel model = LanguageModel.load(worker, EmbeddedModel.path());
            expected = model.generate(worker, "Once upon a time",
                    GenerateOptions.defaults().withMaxTokens(32).withSampler(SamplerConfig.GREEDY)).await();
        }
        assertThat(expected).isNotBlank();
        assertThat(out.strip()).isEqualTo(expected.strip());
    }

    /** A class-path entry an embedding application has: tandem's library modules and third-party jars, no tests. */
    private static boolean libraryEntry(String entry) {
        String path = entry.replace('\\', '/');
        if (path.contains("test-classes")) {
            return false;
        }
        if (path.contains("/tandem-")) {
            return path.contains("/tandem-core/") || path.contains("/tandem-kernels/") || path.contains("/tandem-llm/")
                    || path.matches(".*/tandem-(core|kernels|llm)-[^/]*\\.jar");
        }
        return Files.exists(Path.of(entry));
    }
}
