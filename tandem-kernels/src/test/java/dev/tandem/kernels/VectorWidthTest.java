package dev.tandem.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The vector kernels at narrower vector widths than this machine's: each case runs
 * {@link VectorWidthProbe} in a fresh JVM whose {@code -XX:MaxVectorSize} caps the preferred species,
 * so the 256-bit and 128-bit paths (two and four q8_0 parts per 16 bytes) are tested on a machine
 * whose preferred width is 512 bits, and the 512-bit path elsewhere by the in-process tests.
 */
class VectorWidthTest {

    @ParameterizedTest(name = "MaxVectorSize = {0} bytes")
    @ValueSource(ints = {16, 32})
    void vectorKernelsMatchScalarAtANarrowerPreferredWidth(int maxVectorBytes)
            throws IOException, InterruptedException {
        String java = ProcessHandle.current()
                .info()
                .command()
                .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        List<String> command = List.of(
                java,
                "--add-modules",
                Ops.VECTOR_MODULE,
                "-XX:MaxVectorSize=" + maxVectorBytes,
                "-cp",
                System.getProperty("java.class.path"),
                VectorWidthProbe.class.getName());
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(120, TimeUnit.SECONDS))
                .as("the probe JVM ended")
                .isTrue();
        assertThat(process.exitValue())
                .as("exit status of the probe JVM; its output:%n%s", output)
                .isZero();
        assertThat(output).as("probe output").contains("failures: 0");
        Matcher width = Pattern.compile("vector kernels: vector \\(\\d+-bit, (\\d+) f32 lanes\\)")
                .matcher(output);
        assertThat(width.find())
                .as("the probe names its vector width; its output:%n%s", output)
                .isTrue();
        assertThat(Integer.parseInt(width.group(1)))
                .as("f32 lanes under MaxVectorSize = %d", maxVectorBytes)
                .isLessThanOrEqualTo(maxVectorBytes / Float.BYTES);
    }
}
