package dev.tandem.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * An application's JVM started without {@code -XX:CompileCommandFile} still gets the kernels'
 * inline list: {@link InlineDirectives} turns {@code bin/compile-commands} into a compiler
 * directive and adds it, and C2 then force-inlines the vector helpers as the launcher's flag makes
 * it; a JVM that names compile commands of its own is left alone.
 */
class InlineDirectivesTest {

    @Test
    void theCompileCommandsBecomeOneInlineDirectiveForTandemsMethods() {
        String directive = InlineDirectives.directive(List.of(
                "# a comment", "", "quiet", "inline dev/tandem/kernels/VectorOps.load",
                "dontinline dev/tandem/kernels/VectorOps.widenF16", "  inline dev/tandem/kernels/VectorOps.x16Low  "));
        assertThat(directive).isEqualTo("[{ match: \"dev/tandem/*.*\", inline: [\"+dev/tandem/kernels/VectorOps.load\","
                + " \"-dev/tandem/kernels/VectorOps.widenF16\", \"+dev/tandem/kernels/VectorOps.x16Low\"] }]\n");
    }

    @Test
    void aCommandTheDirectiveCannotCarryIsRefusedNotDropped() {
        assertThatThrownBy(() -> InlineDirectives.directive(List.of("quiet", "exclude dev/tandem/kernels/VectorOps.load")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("exclude");
        assertThatThrownBy(() -> InlineDirectives.directive(List.of("inline dev/tandem/kernels/VectorOps.load extra")))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> InlineDirectives.directive(List.of("inline a\"b.c")))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> InlineDirectives.directive(List.of("quiet")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no inline");
    }

    @Test
    void theModuleCarriesTheLaunchersFile() throws IOException {
        List<String> launchers = Files.readAllLines(Path.of("..", "bin", "compile-commands"));
        assertThat(InlineDirectives.commands()).isEqualTo(launchers);
        assertThat(InlineDirectives.directive(launchers)).contains("+dev/tandem/kernels/vector/VectorLanes.load");
    }

    @Test
    void aJvmWithCompileCommandsOfItsOwnIsLeftAlone() throws Exception {
        assertThat(InlineDirectives.compileCommandsOption(List.of("-Xss2m", "-XX:CompileCommandFile=/x/compile-commands")))
                .isEqualTo("-XX:CompileCommandFile=/x/compile-commands");
        assertThat(InlineDirectives.compileCommandsOption(List.of("-XX:CompileCommand=quiet"))).isNotNull();
        assertThat(InlineDirectives.compileCommandsOption(List.of("-XX:CompilerDirectivesFile=d.json"))).isNotNull();
        assertThat(InlineDirectives.compileCommandsOption(List.of("-Xss2m", "--add-modules", "jdk.incubator.vector")))
                .isNull();
        // This module's tests run with the launcher's file (its pom), so this JVM needs nothing.
        assertThat(InlineDirectives.installOnce().get(60, TimeUnit.SECONDS)).startsWith("not needed");
    }

    @Test
    void aJvmWithoutTheFlagGetsTheDirectiveAndC2ForceInlinesTheHelpers() throws Exception {
        String output = probe();
        assertThat(output).contains("kernels: VectorOps").contains("outcome: installed: 1 compiler directives added")
                .contains("matching: dev/tandem/*.*").contains("+dev/tandem/kernels/vector/VectorLanes.load")
                .contains("probe done");
        assertThat(output.lines().filter(l -> l.contains("dev.tandem.kernels.vector.VectorLanes::load ")))
                .as("C2's inlining of VectorLanes.load; the probe's output:%n%s", output)
                .isNotEmpty().anySatisfy(l -> assertThat(l).contains("force inline by CompileCommand"));
    }

    @Test
    void aJvmWithTheFlagKeepsItsOwnCommands() throws Exception {
        // A command line as long as the launcher's (its class path): the JVM's arguments as the OS
        // lists them are then truncated, and the option must still be seen.
        String output = probe("-XX:CompileCommandFile=" + Path.of("..", "bin", "compile-commands").toAbsolutePath(),
                "-Dtandem.test.padding=" + "x".repeat(10_000));
        assertThat(output).contains("outcome: not needed: the JVM was started with -XX:CompileCommandFile=")
                .doesNotContain("matching: dev/tandem/*.*");
    }

    private static String probe(String... flags) throws IOException, InterruptedException {
        String java = ProcessHandle.current().info().command()
                .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        List<String> command = new ArrayList<>(List.of(java, "--add-modules", Ops.VECTOR_MODULE,
                "-XX:+UnlockDiagnosticVMOptions", "-XX:+PrintInlining"));
        command.addAll(List.of(flags));
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), InlineDirectivesProbe.class.getName()));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(120, TimeUnit.SECONDS)).as("the probe JVM ended").isTrue();
        assertThat(process.exitValue()).as("exit status of the probe JVM; its output:%n%s", output).isZero();
        return output;
    }
}
