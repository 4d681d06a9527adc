package dev.tandem.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.kernels.vector.VectorAttention;
import dev.tandem.kernels.vector.VectorDequantize;
import dev.tandem.kernels.vector.VectorFloatsX16;
import dev.tandem.kernels.vector.VectorLanes;
import dev.tandem.kernels.vector.VectorNormRope;
import dev.tandem.kernels.vector.VectorOps;
import dev.tandem.kernels.vector.VectorQ4_0X16;
import dev.tandem.kernels.vector.VectorQ4_KX16;
import dev.tandem.kernels.vector.VectorQ6_KX16;
import dev.tandem.kernels.vector.VectorQ8_0X16;
import dev.tandem.kernels.vector.VectorSampling;
import dev.tandem.kernels.vector.VectorSmallBlocksX16;
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

    /** The classes that name vector types: {@link VectorOps}, the dispatcher, and one class per kernel family. */
    static final List<Class<?>> VECTOR_CLASSES = List.of(VectorOps.class, VectorLanes.class, VectorQ4_0X16.class,
            VectorQ8_0X16.class, VectorQ4_KX16.class, VectorQ6_KX16.class, VectorSmallBlocksX16.class,
            VectorFloatsX16.class, VectorNormRope.class, VectorSampling.class, VectorAttention.class,
            VectorDequantize.class);

    private static final String PREFIX = "dev/tandem/kernels/vector/";

    private static List<String> commands(String kind) throws IOException {
        return Files.readAllLines(Path.of("..", "bin", "compile-commands")).stream()
                .filter(l -> l.startsWith(kind + " ")).map(l -> l.substring(kind.length() + 1)).toList();
    }

    /** The methods {@code Class.name} of a line names, in the vector class it names. */
    private static List<Method> named(String target) {
        assertThat(target).startsWith(PREFIX);
        String className = target.substring(PREFIX.length(), target.lastIndexOf('.'));
        String name = target.substring(target.lastIndexOf('.') + 1);
        Class<?> type = VECTOR_CLASSES.stream().filter(c -> c.getSimpleName().equals(className)).findFirst()
                .orElseThrow(() -> new AssertionError(target + " names no vector class of the kernels"));
        return Arrays.stream(type.getDeclaredMethods()).filter(m -> m.getName().equals(name)).toList();
    }

    private static boolean passesVectors(Method m) {
        return Vector.class.isAssignableFrom(m.getReturnType())
                || VectorMask.class.isAssignableFrom(m.getReturnType())
                || Arrays.stream(m.getParameterTypes()).anyMatch(Vector.class::isAssignableFrom);
    }

    @Test
    void everyInlinedMethodIsASmallVectorHelperOfTheKernels() throws IOException {
        List<String> lines = Files.readAllLines(Path.of("..", "bin", "compile-commands")).stream()
                .filter(l -> !l.isBlank() && !l.startsWith("#")).toList();
        assertThat(lines).contains("quiet"); // or the JVM prints every command on stdout, the CLI's
        List<String> inlined = commands("inline");
        List<String> outOfLine = commands("dontinline");
        assertThat(lines).as("quiet, inline and dontinline lines only").hasSize(1 + inlined.size() + outOfLine.size());
        assertThat(inlined).isNotEmpty();
        for (String target : outOfLine) {
            assertThat(named(target)).as(target).isNotEmpty().allSatisfy(m ->
                    assertThat(passesVectors(m)).as("%s, called out of line, passes no vectors", m).isFalse());
        }
        for (String target : inlined) {
            assertThat(named(target)).as(target).isNotEmpty().allSatisfy(m -> {
                assertThat(Modifier.isStatic(m.getModifiers()) && !Modifier.isPublic(m.getModifiers()))
                        .as("%s is a static helper of the package", m).isTrue();
                assertThat(passesVectors(m)).as("%s takes or returns a vector", m).isTrue();
            });
        }
    }

    /**
     * The converse: every static helper of the vector classes that takes or returns a vector is in
     * the file, because a helper C2 leaves out of line passes its vectors as objects. Which helpers
     * C2 inlines by its own rules depends on the order it compiles them in (one run of the
     * allocation test in six found q4_0_x16 boxing a vector a block, from an x16Scales compiled on
     * its own first); the file makes it the same in every order. widenF16 alone stays out of line:
     * it runs only for infinite or NaN f16 scales, and inlined it would spend the callers' node
     * budget on a path real weights never take.
     */
    @Test
    void everyVectorHelperIsInlined() throws IOException {
        List<String> inlined = commands("inline");
        for (Class<?> type : VECTOR_CLASSES) {
            List<String> helpers = Arrays.stream(type.getDeclaredMethods())
                    .filter(m -> Modifier.isStatic(m.getModifiers()) && passesVectors(m))
                    .map(Method::getName)
                    .filter(name -> !name.equals("widenF16") && !name.startsWith("lambda$"))
                    .distinct().map(name -> PREFIX + type.getSimpleName() + "." + name).toList();
            assertThat(inlined).as("helpers of %s in bin/compile-commands", type.getSimpleName()).containsAll(helpers);
        }
    }
}
