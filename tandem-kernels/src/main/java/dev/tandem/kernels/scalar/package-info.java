/**
 * Everything the kernels run without the Vector API: {@link dev.tandem.kernels.scalar.ScalarOps}
 * (the scalar kernels, the fallback and the tests' reference), the interleaved layouts with their
 * scalar rows ({@code Q4_0X16}, {@code Q8_0X16}, {@code Q4_KX16}, {@code Q5_KX16}, {@code Q6_KX16},
 * {@code SmallBlocksX16}, {@code Iq4X16}, {@code LowBitsKX16}, {@code FloatsX16}: one class a layout,
 * which the vector kernels call for the rows a range cuts out of a group), the argument checks of
 * every kernel ({@code ArgumentChecks}), per-thread scratch ({@code Scratch}) and the native int8
 * kernels ({@code NativeInt8}).
 *
 * <p>Not exported: its public types are public only for {@code dev.tandem.kernels} and
 * {@code dev.tandem.kernels.vector}. Nothing here names {@code jdk.incubator.vector}.
 */
package dev.tandem.kernels.scalar;
