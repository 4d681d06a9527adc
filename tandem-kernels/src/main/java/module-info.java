/**
 * The CPU kernels: {@code dev.tandem.kernels.KernelOps} and its families, with a Vector API
 * implementation ({@code dev.tandem.kernels.vector}) and a scalar twin
 * ({@code dev.tandem.kernels.scalar}), neither exported.
 *
 * <p>{@code jdk.incubator.vector} is required statically: the module resolves without it, and
 * {@code Ops.preferred()} then chooses the scalar kernels (and never loads a class that names a
 * vector type). Start the JVM with {@code --add-modules jdk.incubator.vector} to get the vector
 * kernels.
 */
module dev.tandem.kernels {
    requires static jdk.incubator.vector;
    requires java.management; // InlineDirectives gives C2 the kernels' inline list through a diagnostic command
    requires org.slf4j;

    exports dev.tandem.kernels;
}
