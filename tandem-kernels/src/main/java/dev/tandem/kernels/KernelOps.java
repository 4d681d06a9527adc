package dev.tandem.kernels;

/**
 * Every kernel of this module. {@link Ops#preferred()} returns the vector kernels when the JVM can
 * run them, {@link Ops#scalar()} the scalar ones.
 */
public interface KernelOps
        extends MatmulOps, NormOps, RopeOps, ElementwiseOps, EmbeddingOps, AttentionOps, SamplingOps,
                QuantOps {

    /** {@code "vector"} or {@code "scalar"}, followed by a detail such as the vector width. */
    String name();
}
