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
 * {@code bin/compile-commands}, which the launcher hands to the JVM, names methods that exist:
 * a renamed helper would silently drop out of it, and C2 could box its vectors again.
 */
class CompileCommandsTest {

    @Test
    void everyInlinedMethodIsASmallVectorHelperOfTheKernels() throws IOException {
        Path file = Path.of("..", "bin", "compile-commands");
        List<String> lines = Files.readAllLines(file).stream()
                .filter(l -> !l.isBlank() && !l.startsWith("#")).toList();
        assertThat(lines).contains("quiet"); // or the JVM prints every command on stdout, the CLI's
        List<String> inlined = lines.stream().filter(l -> !l.equals("quiet")).toList();
        assertThat(inlined).isNotEmpty().allSatisfy(l -> assertThat(l).startsWith("inline dev/tandem/kernels/VectorOps."));
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
}
