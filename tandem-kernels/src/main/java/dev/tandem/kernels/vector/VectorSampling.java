package dev.tandem.kernels.vector;

import static dev.tandem.kernels.scalar.LittleEndian.F32;
import static dev.tandem.kernels.vector.VectorLanes.F;
import static dev.tandem.kernels.vector.VectorLanes.L;
import static dev.tandem.kernels.vector.VectorLanes.LE;
import static dev.tandem.kernels.vector.VectorLanes.S;
import static dev.tandem.kernels.vector.VectorLanes.load;
import static dev.tandem.kernels.vector.VectorLanes.maxOf;

import dev.tandem.kernels.SamplingOps;
import dev.tandem.kernels.scalar.ArgumentChecks;
import dev.tandem.kernels.scalar.ScalarOps;
import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;

/** The vector kernels of {@link SamplingOps}. */
public final class VectorSampling {

    private VectorSampling() {}

    static int argmax(MemorySegment values, long offset, int n) {
        ArgumentChecks.argmax(values, offset, n);
        return argmaxChecked(values, offset, n);
    }

    private static int argmaxChecked(MemorySegment values, long offset, int n) {
        float max = maxOf(values, offset, n);
        if (Float.isNaN(max)) {
            throw ArgumentChecks.nanAt("argmax", firstNaN(values, offset, n));
        }
        int upper = S.loopBound(n);
        int i = 0;
        for (; i < upper; i += L) {
            VectorMask<Float> hits = load(values, offset + i * F).eq(max);
            if (hits.anyTrue()) {
                return i + hits.firstTrue();
            }
        }
        for (; i < n; i++) {
            if (values.get(F32, offset + i * F) == max) {
                return i;
            }
        }
        throw new AssertionError("argmax: the maximum " + max + " was not found again");
    }

    private static int firstNaN(MemorySegment values, long offset, int n) {
        for (int i = 0; i < n; i++) {
            if (Float.isNaN(values.get(F32, offset + i * F))) {
                return i;
            }
        }
        throw new AssertionError("argmax: a NaN maximum without a NaN value");
    }

    static int sample(
            MemorySegment logits,
            long logitsOffset,
            MemorySegment probs,
            long probsOffset,
            int n,
            float temperature,
            float topP,
            long seed) {
        ArgumentChecks.sample(logits, logitsOffset, probs, probsOffset, n, temperature, topP);
        if (temperature == 0f) {
            return argmaxChecked(logits, logitsOffset, n);
        }
        float max = maxOf(logits, logitsOffset, n);
        ArgumentChecks.sampleMax(max);
        float inverseTemperature = 1f / temperature;
        int upper = S.loopBound(n);
        FloatVector sums = FloatVector.zero(S);
        int i = 0;
        for (; i < upper; i += L) {
            FloatVector e = load(logits, logitsOffset + i * F)
                    .sub(max)
                    .mul(inverseTemperature)
                    .lanewise(VectorOperators.EXP);
            e.intoMemorySegment(probs, probsOffset + i * F, LE);
            sums = sums.add(e);
        }
        float sum = VectorTails.softmaxFrom(i, logits, logitsOffset, probs, probsOffset, n, max, inverseTemperature,
                sums.reduceLanes(VectorOperators.ADD));
        float inverseSum = 1f / sum;
        i = 0;
        for (; i < upper; i += L) {
            long at = probsOffset + i * F;
            load(probs, at).mul(inverseSum).intoMemorySegment(probs, at, LE);
        }
        VectorTails.scaleFrom(i, probs, probsOffset, probs, probsOffset, n, inverseSum);
        // The largest probability is exp(0) * inverseSum.
        float threshold = nucleusThreshold(probs, probsOffset, n, topP, inverseSum);
        float nucleusMass = massAtLeast(probs, probsOffset, n, threshold);
        return ScalarOps.draw(probs, probsOffset, n, threshold, nucleusMass, seed);
    }

    /** The bisection of {@code ScalarOps.nucleusThreshold}, over the vector {@link #massAtLeast}. */
    private static float nucleusThreshold(MemorySegment probs, long offset, int n, float topP, float largest) {
        if (topP >= 1f) {
            return 0f;
        }
        if (largest >= topP) {
            return largest;
        }
        int low = 0;
        int high = Float.floatToRawIntBits(largest) + 1;
        while (high - low > 1) {
            int middle = (low + high) >>> 1;
            if (massAtLeast(probs, offset, n, Float.intBitsToFloat(middle)) >= topP) {
                low = middle;
            } else {
                high = middle;
            }
        }
        return Float.intBitsToFloat(low);
    }

    private static float massAtLeast(MemorySegment probs, long offset, int n, float threshold) {
        int upper = S.loopBound(n);
        FloatVector masses = FloatVector.zero(S);
        int i = 0;
        for (; i < upper; i += L) {
            FloatVector p = load(probs, offset + i * F);
            masses = masses.add(p, p.compare(VectorOperators.GE, threshold));
        }
        return VectorTails.massAtLeastFrom(i, probs, offset, n, threshold, masses.reduceLanes(VectorOperators.ADD));
    }
}
