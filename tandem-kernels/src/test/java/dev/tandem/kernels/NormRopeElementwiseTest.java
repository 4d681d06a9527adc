package dev.tandem.kernels;

import static dev.tandem.kernels.Tensors.PAD;
import static dev.tandem.kernels.Tensors.SCALAR;
import static dev.tandem.kernels.Tensors.VECTOR;
import static dev.tandem.kernels.Tensors.read;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.lang.foreign.MemorySegment;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class NormRopeElementwiseTest {

    @ParameterizedTest(name = "n = {0}")
    @ValueSource(ints = {1, 7, 31, 33, 127, 4096})
    void vectorRmsnormMatchesScalarAndTheDefinition(int n) {
        try (Tensors t = new Tensors(n)) {
            float[] x = t.uniform(n, -3f, 3f);
            float[] w = t.uniform(n, 0.5f, 1.5f);
            MemorySegment xs = t.f32(x);
            MemorySegment ws = t.f32(w);
            float eps = 1e-5f;
            float[] scalar = rmsnorm(t, SCALAR, xs, ws, n, eps);
            float[] vector = rmsnorm(t, VECTOR, xs, ws, n, eps);
            Tensors.assertWithin(
                    "vector rmsnorm, n " + n, vector, scalar, Tensors.abs(scalar), NormOps.RMSNORM_RELATIVE_TOLERANCE);

            double meanSquare = 0;
            for (float v : x) {
                meanSquare += (double) v * v / n;
            }
            float[] expected = new float[n];
            for (int i = 0; i < n; i++) {
                expected[i] = (float) (w[i] * x[i] / Math.sqrt(meanSquare + eps));
            }
            Tensors.assertWithin(
                    "scalar rmsnorm against double, n " + n,
                    scalar,
                    expected,
                    Tensors.abs(expected),
                    NormOps.RMSNORM_RELATIVE_TOLERANCE);
        }
    }

    private static float[] rmsnorm(Tensors t, KernelOps ops, MemorySegment x, MemorySegment w, int n, float eps) {
        MemorySegment out = t.allocate((long) n * Float.BYTES);
        ops.rmsnorm(x, PAD, w, PAD, out, PAD, n, eps);
        return read(out, n);
    }

    @Test
    void rmsnormMayWriteInPlace() {
        try (Tensors t = new Tensors(5)) {
            float[] x = t.uniform(100, -1f, 1f);
            MemorySegment w = t.f32(t.uniform(100, -1f, 1f));
            for (KernelOps ops : new KernelOps[] {SCALAR, VECTOR}) {
                MemorySegment inPlace = t.f32(x);
                float[] separate = rmsnorm(t, ops, t.f32(x), w, 100, 1e-6f);
                ops.rmsnorm(inPlace, PAD, w, PAD, inPlace, PAD, 100, 1e-6f);
                Tensors.assertIdentical(ops.name() + " rmsnorm in place", read(inPlace, 100), separate);
            }
        }
    }

    @ParameterizedTest(name = "headDim = {0}")
    @ValueSource(ints = {2, 8, 30, 34, 64, 128, 4096})
    void vectorRopeIsIdenticalToScalar(int headDim) {
        try (Tensors t = new Tensors(headDim)) {
            int heads = 3;
            float[] x = t.uniform(heads * headDim, -2f, 2f);
            for (int position : new int[] {0, 1, 17, 4095}) {
                MemorySegment scalar = t.f32(x);
                MemorySegment vector = t.f32(x);
                SCALAR.rope(scalar, PAD, heads, headDim, position, 10000f);
                VECTOR.rope(vector, PAD, heads, headDim, position, 10000f);
                Tensors.assertIdentical(
                        "vector rope, headDim " + headDim + " position " + position,
                        read(vector, heads * headDim),
                        read(scalar, heads * headDim));
            }
        }
    }

    @Test
    void ropeRotatesInterleavedPairsByPositionTimesFrequency() {
        try (Tensors t = new Tensors(6)) {
            int headDim = 4;
            float theta = 100f;
            int position = 3;
            // Two heads; pair 0 of each is (1, 0), pair 1 is (0, 1).
            float[] x = {1, 0, 0, 1, 1, 0, 0, 1};
            for (KernelOps ops : new KernelOps[] {SCALAR, VECTOR}) {
                MemorySegment s = t.f32(x);
                ops.rope(s, PAD, 2, headDim, position, theta);
                float[] r = read(s, 8);
                double a0 = position; // frequency 1 for pair 0
                double a1 = position * Math.pow(theta, -2.0 / headDim); // 3 / 10
                for (int h = 0; h < 2; h++) {
                    assertThat(r[4 * h]).isCloseTo((float) Math.cos(a0), within(1e-6f));
                    assertThat(r[4 * h + 1]).isCloseTo((float) Math.sin(a0), within(1e-6f));
                    assertThat(r[4 * h + 2]).isCloseTo((float) -Math.sin(a1), within(1e-6f));
                    assertThat(r[4 * h + 3]).isCloseTo((float) Math.cos(a1), within(1e-6f));
                }
            }
        }
    }

    @ParameterizedTest(name = "n = {0}")
    @ValueSource(ints = {1, 7, 31, 33, 127, 4096})
    void vectorSiluMulMatchesScalar(int n) {
        try (Tensors t = new Tensors(n)) {
            float[] gate = t.uniform(n, -20f, 20f);
            float[] up = t.uniform(n, -2f, 2f);
            MemorySegment gs = t.f32(gate);
            MemorySegment us = t.f32(up);
            float[] scalar = siluMul(t, SCALAR, gs, us, n);
            float[] vector = siluMul(t, VECTOR, gs, us, n);
            float[] scale = new float[n];
            for (int i = 0; i < n; i++) {
                scale[i] = Math.max(
                        Math.abs(scalar[i]),
                        ElementwiseOps.SILU_MUL_ABSOLUTE_TOLERANCE / ElementwiseOps.SILU_MUL_RELATIVE_TOLERANCE);
                double expected = gate[i] / (1 + Math.exp(-gate[i])) * up[i];
                assertThat((double) scalar[i])
                        .as("scalar siluMul[%d]", i)
                        .isCloseTo(expected, within(1e-6 * Math.abs(expected) + 1e-30));
            }
            Tensors.assertWithin(
                    "vector siluMul, n " + n, vector, scalar, scale, ElementwiseOps.SILU_MUL_RELATIVE_TOLERANCE);
        }
    }

    private static float[] siluMul(Tensors t, KernelOps ops, MemorySegment gate, MemorySegment up, int n) {
        MemorySegment out = t.allocate((long) n * Float.BYTES);
        ops.siluMul(gate, PAD, up, PAD, out, PAD, n);
        return read(out, n);
    }

    @Property(tries = 50)
    void vectorResidualAddIsIdenticalToScalar(@ForAll long seed, @ForAll @IntRange(min = 0, max = 300) int n) {
        try (Tensors t = new Tensors(seed)) {
            float[] acc = t.uniform(n, -10f, 10f);
            MemorySegment delta = t.f32(t.uniform(n, -10f, 10f));
            MemorySegment scalar = t.f32(acc);
            MemorySegment vector = t.f32(acc);
            SCALAR.residualAdd(scalar, PAD, delta, PAD, n);
            VECTOR.residualAdd(vector, PAD, delta, PAD, n);
            Tensors.assertIdentical("vector residualAdd, n " + n, read(vector, n), read(scalar, n));
            float[] deltas = read(delta, n);
            for (int i = 0; i < n; i++) {
                assertThat(read(scalar, n)[i]).isEqualTo(acc[i] + deltas[i]);
            }
        }
    }

    @ParameterizedTest(name = "dim = {0}")
    @ValueSource(ints = {1, 7, 31, 33, 127, 4096})
    void embeddingF32CopiesTheRow(int dim) {
        try (Tensors t = new Tensors(dim)) {
            int rows = 5;
            float[] table = t.uniform(rows * dim, -1f, 1f);
            MemorySegment ts = t.f32(table);
            for (KernelOps ops : new KernelOps[] {SCALAR, VECTOR}) {
                MemorySegment out = t.allocate((long) dim * Float.BYTES);
                ops.embedF32(ts, PAD, out, PAD, rows, dim, 3);
                assertThat(read(out, dim))
                        .as(ops.name())
                        .containsExactly(java.util.Arrays.copyOfRange(table, 3 * dim, 4 * dim));
            }
        }
    }

    @ParameterizedTest(name = "dim = {0}")
    @ValueSource(ints = {32, 96, 128, 4096})
    void embeddingQ8DequantizesTheRowIdenticallyInBothImplementations(int dim) {
        try (Tensors t = new Tensors(dim)) {
            int rows = 4;
            MemorySegment table = t.q8(t.uniform(rows * dim, -1f, 1f), rows, dim);
            float[] dequantized = t.dequantized(table, rows * dim);
            float[] expected = java.util.Arrays.copyOfRange(dequantized, 2 * dim, 3 * dim);
            for (KernelOps ops : new KernelOps[] {SCALAR, VECTOR}) {
                MemorySegment out = t.allocate((long) dim * Float.BYTES);
                ops.embedQ8_0(table, PAD, out, PAD, rows, dim, 2);
                Tensors.assertIdentical(ops.name() + " embedQ8_0, dim " + dim, read(out, dim), expected);
            }
        }
    }

    /** {@code embed} of every type gives the row {@code dequantize} gives, in both implementations. */
    @Test
    void embedOfEveryTypeIsTheDequantizedRow() {
        try (Tensors t = new Tensors(77)) {
            int rows = 3;
            int dim = 512;
            for (TensorType type : new TensorType[] {TensorType.F32, TensorType.Q8_0, TensorType.Q4_0, TensorType.Q4_K}) {
                MemorySegment table = GgufBlocks.random(t, type, (long) rows * dim);
                float[] all = GgufBlocks.dequantized(t, SCALAR, type, table, rows * dim);
                float[] expected = java.util.Arrays.copyOfRange(all, dim, 2 * dim);
                for (KernelOps ops : new KernelOps[] {SCALAR, VECTOR}) {
                    MemorySegment out = t.allocate((long) dim * Float.BYTES);
                    ops.embed(type, table, PAD, out, PAD, rows, dim, 1);
                    Tensors.assertIdentical(ops.name() + " embed " + type, read(out, dim), expected);
                }
            }
        }
    }
}
