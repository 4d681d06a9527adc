package dev.tandem.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.IOException;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The kernels as a named module. The suite runs on the class path (see the parent pom), so
 * these tests read the compiled descriptor and start JVMs on the module path: without
 * {@code jdk.incubator.vector} the module still resolves ({@code requires static}) and runs the
 * scalar kernels; with it, the vector kernels.
 */
class ModuleBoundaryTest {

    private static Path location(Class<?> type) throws URISyntaxException {
        return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI());
    }

    @Test
    void theDescriptorExportsTheKernelsAndNeedsTheVectorModuleOnlyStatically() throws URISyntaxException {
        ModuleDescriptor descriptor = ModuleFinder.of(location(Ops.class)).find("dev.tandem.kernels")
                .orElseThrow().descriptor();
        assertThat(descriptor.exports()).singleElement().satisfies(export -> {
            assertThat(export.source()).isEqualTo("dev.tandem.kernels");
            assertThat(export.isQualified()).isFalse();
        });
        assertThat(descriptor.requires()).anySatisfy(requires -> {
            assertThat(requires.name()).isEqualTo("jdk.incubator.vector");
            assertThat(requires.modifiers()).contains(ModuleDescriptor.Requires.Modifier.STATIC);
        });
        assertThat(descriptor.requires()).noneSatisfy(requires -> assertThat(requires.name()).startsWith("dev.tandem"));
    }

    private static String runProbeOnTheModulePath(String... jvmOptions)
            throws IOException, InterruptedException, URISyntaxException {
        String java = ProcessHandle.current().info().command()
                .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        List<String> command = new ArrayList<>(List.of(java, "-Xlog:class+load=info"));
        command.addAll(List.of(jvmOptions));
        command.addAll(List.of(
                "--module-path", location(Ops.class) + File.pathSeparator + location(org.slf4j.LoggerFactory.class),
                // The probe is a test class of this package: patch it into the module.
                "--patch-module", "dev.tandem.kernels=" + location(ScalarFallbackProbe.class),
                "-m", "dev.tandem.kernels/" + ScalarFallbackProbe.class.getName()));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).as("the probe JVM ended").isTrue();
        assertThat(process.exitValue()).as("exit status of the probe JVM; its output:%n%s", output).isZero();
        assertThat(output)
                .as("probe output")
                .contains("matmulF32: [-2.0, -2.0, 12.0, 30.0]")
                .contains("argmax: 2")
                .contains("dequantize: q4_0 2.0 -5.0 0.0, f16 1.5, bf16 -2.0");
        return output;
    }

    @Test
    void onTheModulePathWithoutTheVectorModuleTheScalarKernelsRun()
            throws IOException, InterruptedException, URISyntaxException {
        String output = runProbeOnTheModulePath();
        assertThat(output).contains("vector module present: false").contains("preferred: scalar");
        assertThat(output).as("class loads").doesNotContain("dev.tandem.kernels.vector.");
    }

    @Test
    void onTheModulePathWithTheVectorModuleTheVectorKernelsRun()
            throws IOException, InterruptedException, URISyntaxException {
        String output = runProbeOnTheModulePath("--add-modules", "jdk.incubator.vector");
        assertThat(output).contains("vector module present: true").contains("preferred: vector");
    }
}
