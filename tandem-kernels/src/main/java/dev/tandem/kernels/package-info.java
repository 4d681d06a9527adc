/**
 * CPU kernels for decoder inference: pure functions over {@link java.lang.foreign.MemorySegment}s.
 *
 * <h2>Implementation Overview</h2>
 *
 * <p>Every kernel is a method of one small interface per concept ({@link MatmulOps}, {@link NormOps},
 * {@link RopeOps}, {@link ElementwiseOps}, {@link EmbeddingOps}, {@link AttentionOps},
 * {@link SamplingOps}, {@link QuantOps}); {@link KernelOps} is all of them. {@link TensorType} names
 * the GGUF tensor types and their block layouts, which {@link QuantOps} converts to and from f32.
 * {@link KernelOps} has two implementations with identical
 * signatures and identical argument checks, each in a package this module does not export:
 *
 * <ul>
 *   <li>{@code dev.tandem.kernels.vector}: the vector kernels, on {@code jdk.incubator.vector} (a
 *       vector loop with FMA over {@code FloatVector.SPECIES_PREFERRED}, {@code reduceLanes}, then
 *       a scalar tail), one class per kernel family or interleaved layout behind the dispatcher
 *       {@code VectorOps}. The only package of this module that names the incubator module;
 *   <li>{@code dev.tandem.kernels.scalar}: the scalar kernels ({@code ScalarOps}: plain loops, the
 *       test oracle of the vector kernels and their fallback), and what both share: the layout
 *       classes with their scalar rows, the argument checks, per-thread scratch, the native int8
 *       kernels.
 * </ul>
 *
 * <p>{@link Ops#preferred()} picks the vector kernels when {@code jdk.incubator.vector} is in the
 * boot layer and the system property {@code tandem.kernels.scalar} is not {@code true}; otherwise
 * it logs one warning and returns the scalar kernels, without ever loading a vector class.
 *
 * <p>Conventions shared by all kernels:
 *
 * <ul>
 *   <li>Each tensor is a segment plus a byte offset; sizes are element counts. Values are
 *       little-endian f32 read and written unaligned, so any segment and any offset work.
 *   <li>Kernels hold no state and allocate nothing that outlives a call; they are safe to call
 *       from any number of threads on disjoint outputs.
 *   <li>Every kernel first checks its scalar arguments and that each segment holds the extent it
 *       will touch, and throws {@link IllegalArgumentException} naming the kernel, the argument
 *       and the limit. Past those checks a kernel throws only where its documentation says so:
 *       {@code argmax} on a NaN, {@code sample} on logits without a finite maximum,
 *       {@code normalize} of a context with no key.
 *   <li>Outputs may alias inputs only where a kernel says so (element-wise kernels allow it).
 *   <li>The vector and scalar results agree within the tolerance stated as a constant next to
 *       each kernel; where the tolerance is 0 the two compute the same floating-point operations
 *       in the same order and agree bit for bit.
 * </ul>
 *
 * <p>Revisit the vector loops when the Vector API leaves incubation or when a kernel's measured
 * throughput falls below the memory bandwidth it should reach.
 */
package dev.tandem.kernels;
