package dev.tandem.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import jdk.incubator.vector.Vector;
import jdk.incubator.vector.VectorMask;
import org.junit.jupiter.api.Test;

/**
 * {@code bin/compile-commands}, which the launcher and this module's tests hand to the JVM, names
 * methods that exist: a renamed helper would silently drop out of it, and C2 could box its vectors
 * again; what it keeps out of line passes no vectors.
 */
class CompileCommandsTest {

    @Test
    void everyInlinedMethodIsASmallVectorHelperOfTheKernels() throws IOException {
        Path file = Path.of("..", "bin", "compile-commands");
        List<String> lines = Files.readAllLines(file).stream()
                .filter(l -> !l.isBlank() && !l.startsWith("#")).toList();
        assertThat(lines).contains("quiet"); // or the JVM prints every command on stdout, the CLI's
        List<String> inlined = lines.stream().filter(l -> l.startsWith("inline ")).toList();
        List<String> outOfLine = lines.stream().filter(l -> l.startsWith("dontinline ")).toList();
        assertThat(lines).as("quiet, inline and dontinline lines only").hasSize(1 + inlined.size() + outOfLine.size());
        assertThat(inlined).isNotEmpty().allSatisfy(l -> assertThat(l).startsWith("inline dev/tandem/kernels/VectorOps."));
        for (String line : outOfLine) {
            assertThat(line).startsWith("dontinline dev/tandem/kernels/VectorOps.");
            String name = line.substring(line.lastIndexOf('.') + 1);
            List<Method> methods = Arrays.stream(VectorOps.class.getDeclaredMethods())
                    .filter(m -> m.getName().equals(name)).toList();
            assertThat(methods).as("VectorOps.%s", name).isNotEmpty().allSatisfy(m -> {
                boolean vectors = Vector.class.isAssignableFrom(m.getReturnType())
                        || Arrays.stream(m.getParameterTypes()).anyMatch(Vector.class::isAssignableFrom);
                assertThat(vectors).as("%s, called out of line, passes no vectors", m).isFalse();
            });
        }
        for (String line : inlined) {
            String name = line.substring(line.lastIndexOf('.') + 1);
            List<Method> methods = Arrays.stream(VectorOps.class.getDeclaredMethods())
                    .filter(m -> m.getName().equals(name)).toList();
            assertThat(methods).as("VectorOps.%s", name).isNotEmpty();
            assertThat(methods).allSatisfy(m -> {
                assertThat(Modifier.isStatic(m.getModifiers()) && Modifier.isPrivate(m.getModifiers()))
                        .as("%s is a private static helper", m).isTrue();
                boolean vectors = Vector.class.isAssignableFrom(m.getReturnType())
                        || VectorMask.class.isAssignableFrom(m.getReturnType())
                        || Arrays.stream(m.getParameterTypes()).anyMatch(Vector.class::isAssignableFrom);
                assertThat(vectors).as("%s takes or returns a vector", m).isTrue();
            });
        }
    }

    /**
     * The converse: every private helper of {@code VectorOps} that takes or returns a vector is in
     * the file, because a helper C2 leaves out of line passes its vectors as objects. Which helpers
     * C2 inlines by its own rules depends on the order it compiles them in (one run of the
     * allocation test in six found q4_0_x16 boxing a vector a block, from an x16Scales compiled on
     * its own first); the file makes it the same in every order. widenF16 alone stays out of line:
     * it runs only for infinite or NaN f16 scales, and inlined it would spend the callers' node
     * budget on a path real weights never take.
     */
    @Test
    void everyVectorHelperIsInlined() throws IOException {
        Path file = Path.of("..", "bin", "compile-commands");
        List<String> inlined = Files.readAllLines(file).stream()
                .filter(l -> l.startsWith("inline dev/tandem/kernels/VectorOps."))
                .map(l -> l.substring(l.lastIndexOf('.') + 1)).toList();
        List<String> helpers = Arrays.stream(VectorOps.class.getDeclaredMethods())
                .filter(m -> Modifier.isStatic(m.getModifiers()) && Modifier.isPrivate(m.getModifiers()))
                .filter(m -> Vector.class.isAssignableFrom(m.getReturnType())
                        || Arrays.stream(m.getParameterTypes()).anyMatch(Vector.class::isAssignableFrom))
                .map(Method::getName)
                .filter(name -> !name.equals("widenF16") && !name.startsWith("lambda$"))
                .distinct().toList();
        assertThat(inlined).as("helpers in bin/compile-commands").containsAll(helpers);
    }
}
