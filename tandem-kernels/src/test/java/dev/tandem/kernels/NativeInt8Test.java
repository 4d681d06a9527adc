package dev.tandem.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.kernels.scalar.NativeInt8;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * When {@link NativeInt8} runs: wherever the build could compile it (gcc on the path that Maven
 * ran with, as this test does) on a CPU with the features, and nowhere else. That the native
 * kernels equal their scalar twins bit for bit is {@link Q4_0X16Test}'s to check: its vector
 * kernel is the native one wherever this test expects it to be.
 */
class NativeInt8Test {

    private static final List<String> FEATURES = List.of("avx2", "fma", "f16c", "sse2");

    @Test
    void runsWhereTheBuildHadACompilerAndTheCpuTheFeatures() throws IOException {
        String reason = NativeInt8.reasonNotToLoad(System.getProperty(NativeInt8.PROPERTY),
                System.getProperty("os.arch"), cpuFlags());
        boolean compiler = onPath("gcc");
        assertThat(NativeInt8.available())
                .as("native int8 kernels running; gcc on the path: %s; the CPU's reason not to: %s", compiler, reason)
                .isEqualTo(compiler && reason == null);
        assertThat(NativeInt8.class.getResource(NativeInt8.RESOURCE) != null)
                .as("the build's library on the class path where gcc is on the path (off x86-64 it never is)")
                .isEqualTo(compiler && isX86());
    }

    @Test
    void saysWhatIsMissing() {
        assertThat(NativeInt8.reasonNotToLoad(null, "amd64", FEATURES)).isNull();
        assertThat(NativeInt8.reasonNotToLoad("false", "amd64", FEATURES)).isEqualTo("tandem.kernels.native=false");
        assertThat(NativeInt8.reasonNotToLoad(null, "aarch64", FEATURES)).contains("aarch64");
        assertThat(NativeInt8.reasonNotToLoad(null, "amd64", List.of("avx", "fma", "f16c"))).contains("avx2");
        assertThat(NativeInt8.reasonNotToLoad(null, "x86_64", List.of("avx2", "f16c"))).contains("fma");
        assertThat(NativeInt8.reasonNotToLoad(null, "amd64", null)).contains("/proc/cpuinfo");
    }

    private static boolean isX86() {
        String arch = System.getProperty("os.arch");
        return arch.equals("amd64") || arch.equals("x86_64");
    }

    private static boolean onPath(String command) {
        String path = System.getenv("PATH");
        if (path == null) {
            return false;
        }
        return Arrays.stream(path.split(File.pathSeparator))
                .anyMatch(dir -> !dir.isEmpty() && Files.isExecutable(Path.of(dir, command)));
    }

    private static List<String> cpuFlags() throws IOException {
        Path cpuinfo = Path.of("/proc/cpuinfo");
        if (!Files.isReadable(cpuinfo)) {
            return null;
        }
        return Files.readAllLines(cpuinfo).stream().filter(l -> l.startsWith("flags")).findFirst()
                .map(l -> Arrays.asList(l.substring(l.indexOf(':') + 1).trim().split("\\s+"))).orElse(null);
    }
}
