package dev.tandem.kernels;

import java.lang.foreign.MemorySegment;

/** Element-wise kernels; outputs may alias inputs. */
public interface ElementwiseOps {

    /**
     * Vector and scalar {@code siluMul} agree within this fraction of each output's magnitude (the
     * vector exponential may differ from {@link Math#exp} in the last bit), or within
     * {@link #SILU_MUL_ABSOLUTE_TOLERANCE}, whichever is larger.
     */
    float SILU_MUL_RELATIVE_TOLERANCE = 1e-6f;

    /** The absolute floor of the {@code siluMul} tolerance, for outputs that round to near zero. */
    float SILU_MUL_ABSOLUTE_TOLERANCE = Float.MIN_NORMAL;

    /** Vector and scalar {@code residualAdd} agree bit for bit: one f32 addition per element. */
    float RESIDUAL_ADD_TOLERANCE = 0f;

    /** {@code out[i] = silu(gate[i]) * up[i]} with {@code silu(g) = g / (1 + exp(-g))}. */
    void siluMul(
            MemorySegment gate,
            long gateOffset,
            MemorySegment up,
            long upOffset,
            MemorySegment out,
            long outOffset,
            int n);

    /** {@code acc[i] += delta[i]}, in place. */
    void residualAdd(MemorySegment acc, long accOffset, MemorySegment delta, long deltaOffset, int n);
}
