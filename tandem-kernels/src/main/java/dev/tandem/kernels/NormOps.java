package dev.tandem.kernels;

import java.lang.foreign.MemorySegment;

/** Normalisation. */
public interface NormOps {

    /**
     * Vector and scalar {@code rmsnorm} agree within this fraction of each output's magnitude for
     * {@code n <= 4096}: only the sum of squares is accumulated in a different order.
     */
    float RMSNORM_RELATIVE_TOLERANCE = 1e-5f;

    /**
     * {@code out[i] = weight[i] * (x[i] / sqrt(mean(x^2) + eps))} over {@code n} values; {@code out}
     * may be {@code x}.
     */
    void rmsnorm(
            MemorySegment x,
            long xOffset,
            MemorySegment weight,
            long weightOffset,
            MemorySegment out,
            long outOffset,
            int n,
            float eps);
}
