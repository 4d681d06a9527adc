/**
 * The vector kernels: the only package of the module that names {@code jdk.incubator.vector}.
 * {@link dev.tandem.kernels.vector.VectorOps} implements {@link dev.tandem.kernels.KernelOps} by
 * dispatching to one class per kernel family or interleaved layout: {@code VectorQ4_0X16},
 * {@code VectorQ8_0X16}, {@code VectorQ4_KX16}, {@code VectorQ6_KX16}, {@code VectorSmallBlocksX16}
 * (the other block layouts) and {@code VectorFloatsX16} for the matmuls, each the vector twin of
 * the layout class of the same name in {@code dev.tandem.kernels.scalar}; {@code VectorNormRope},
 * {@code VectorAttention}, {@code VectorSampling} and {@code VectorDequantize} for the other
 * interfaces; {@code VectorLanes} for the species and helpers several of them share.
 *
 * <p>The small helpers that take or return vectors are package-private statics named in
 * {@code bin/compile-commands}, which makes C2 inline them wherever they are called (out of line,
 * a helper passes its vectors as objects). Not exported; loaded only by {@code Ops.preferred()}
 * once it has found the Vector API in the boot layer.
 */
package dev.tandem.kernels.vector;
