package dev.tandem.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.kernels.scalar.ScalarOps;
import dev.tandem.kernels.vector.VectorOps;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class OpsTest {

    @Test
    void thisJvmHasTheVectorModuleSoThePreferredKernelsAreVector() {
        assertThat(ModuleLayer.boot().findModule(Ops.VECTOR_MODULE))
                .as("the test JVM's boot layer")
                .isPresent();
        assertThat(Ops.preferred()).isSameAs(VectorOps.INSTANCE);
        assertThat(Ops.preferred().name()).startsWith("vector (");
        assertThat(Ops.scalar()).isSameAs(ScalarOps.INSTANCE);
    }

    @Test
    void scalarReasonNamesTheCause() {
        assertThat(Ops.scalarReason(true, null)).isNull();
        assertThat(Ops.scalarReason(true, "false")).isNull();
        assertThat(Ops.scalarReason(true, "true")).isEqualTo("the system property tandem.kernels.scalar is true");
        assertThat(Ops.scalarReason(false, null))
                .isEqualTo("the module jdk.incubator.vector is not in the boot layer;"
                        + " start the JVM with --add-modules jdk.incubator.vector");
    }

    /**
     * Runs {@link ScalarFallbackProbe} in a fresh JVM started without {@code --add-modules
     * jdk.incubator.vector}, logging every class load.
     */
    @Test
    void withoutTheVectorModuleAFreshJvmRunsTheScalarKernelsAndNeverLoadsVectorOps()
            throws IOException, InterruptedException {
        String java = ProcessHandle.current()
                .info()
                .command()
                .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        List<String> command = List.of(
                java,
                "-Xlog:class+load=info",
                "-cp",
                System.getProperty("java.class.path"),
                ScalarFallbackProbe.class.getName());
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(60, TimeUnit.SECONDS))
                .as("the probe JVM ended")
                .isTrue();
        assertThat(process.exitValue())
                .as("exit status of the probe JVM; its output:%n%s", output)
                .isZero();
        assertThat(output)
                .as("probe output")
                .contains("vector module present: false")
                .contains("preferred: scalar")
                .contains("matmulF32: [-2.0, -2.0, 12.0, 30.0]")
                .contains("argmax: 2")
                .contains("dequantize: q4_0 2.0 -5.0 0.0, f16 1.5, bf16 -2.0");
        assertThat(output).as("class loads of the probe JVM").doesNotContain("dev.tandem.kernels.VectorOps");
    }
}
