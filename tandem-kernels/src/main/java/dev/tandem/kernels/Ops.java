package dev.tandem.kernels;

import dev.tandem.kernels.scalar.ScalarOps;
import dev.tandem.kernels.vector.VectorOps;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Chooses the kernels: {@link #preferred()} for callers, {@link #scalar()} for reference checks.
 *
 * <p>The vector kernels run when the module {@code jdk.incubator.vector} is in the boot layer (the
 * JVM was started with {@code --add-modules jdk.incubator.vector}) and the system property
 * {@value #SCALAR_PROPERTY} is not {@code true}. Otherwise the scalar kernels run, after one
 * warning through SLF4J that says why; the vector class is then never loaded, so a JVM without
 * the module never fails on it. Choosing the vector kernels also gives C2 their inline list
 * where the JVM was started without it ({@link InlineDirectives}).
 */
public final class Ops {

    /** Set to {@code true} to run the scalar kernels even when the Vector API is available. */
    public static final String SCALAR_PROPERTY = "tandem.kernels.scalar";

    static final String VECTOR_MODULE = "jdk.incubator.vector";

    private Ops() {}

    /** The kernels this JVM should run, chosen once per JVM. */
    public static KernelOps preferred() {
        return Preferred.OPS;
    }

    /** The scalar kernels: the reference every vector kernel is tested against. */
    public static KernelOps scalar() {
        return ScalarOps.INSTANCE;
    }

    /**
     * Why the scalar kernels must run, or {@code null} when the vector kernels may.
     *
     * @param vectorModulePresent whether {@code jdk.incubator.vector} is in the boot layer
     * @param scalarProperty the value of {@value #SCALAR_PROPERTY}, or {@code null}
     */
    static String scalarReason(boolean vectorModulePresent, String scalarProperty) {
        if (Boolean.parseBoolean(scalarProperty)) {
            return "the system property " + SCALAR_PROPERTY + " is true";
        }
        if (!vectorModulePresent) {
            return "the module " + VECTOR_MODULE + " is not in the boot layer; start the JVM with --add-modules "
                    + VECTOR_MODULE;
        }
        return null;
    }

    /**
     * Holds the choice; its class initialization runs the choice and logs the warning exactly once.
     * {@code VectorOps} is named only on the branch where its module is known present.
     */
    private static final class Preferred {

        static final KernelOps OPS = choose();

        private static KernelOps choose() {
            boolean vectorModulePresent =
                    ModuleLayer.boot().findModule(VECTOR_MODULE).isPresent();
            String reason = scalarReason(vectorModulePresent, System.getProperty(SCALAR_PROPERTY));
            if (reason == null) {
                InlineDirectives.installOnce();
                return VectorOps.INSTANCE;
            }
            Logger log = LoggerFactory.getLogger(Ops.class);
            log.warn("tandem kernels run scalar, several times slower: {}", reason);
            return ScalarOps.INSTANCE;
        }
    }
}
