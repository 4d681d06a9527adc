package dev.tandem.kernels;

import static dev.tandem.kernels.Tensors.PAD;
import static dev.tandem.kernels.Tensors.SCALAR;
import static dev.tandem.kernels.Tensors.VECTOR;
import static dev.tandem.kernels.Tensors.read;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Each paged-attention piece, vector against scalar; their composition is {@link PagedAttentionTest}. */
class AttentionOpsTest {

    @ParameterizedTest(name = "headDim = {0}")
    @ValueSource(ints = {1, 7, 31, 33, 64, 127, 4096})
    void vectorQkMatchesScalar(int headDim) {
        try (Tensors t = new Tensors(headDim)) {
            int rows = 5;
            int rowStride = headDim + 3;
            float[] q = t.uniform(headDim, -1f, 1f);
            float[] keys = t.uniform(rows * rowStride, -1f, 1f);
            MemorySegment qs = t.f32(q);
            MemorySegment ks = t.f32(keys);
            float scale = 0.125f;
            float[] scalar = qk(t, SCALAR, qs, ks, headDim, rowStride, rows, scale);
            float[] vector = qk(t, VECTOR, qs, ks, headDim, rowStride, rows, scale);
            float[] bound = new float[rows];
            for (int j = 0; j < rows; j++) {
                for (int c = 0; c < headDim; c++) {
                    bound[j] += Math.abs(scale * q[c] * keys[j * rowStride + c]);
                }
            }
            Tensors.assertWithin(
                    "vector qk, headDim " + headDim, vector, scalar, bound, AttentionOps.QK_RELATIVE_TOLERANCE);
        }
    }

    private static float[] qk(
            Tensors t,
            KernelOps ops,
            MemorySegment q,
            MemorySegment keys,
            int headDim,
            int rowStride,
            int rows,
            float scale) {
        MemorySegment scores = t.allocate((long) rows * Float.BYTES);
        ops.qk(q, PAD, keys, PAD, scores, PAD, headDim, rowStride, rows, scale);
        return read(scores, rows);
    }

    @ParameterizedTest(name = "n = {0}")
    @ValueSource(ints = {0, 1, 7, 31, 33, 127, 4096})
    void vectorSoftmaxPrepareMatchesScalar(int n) {
        try (Tensors t = new Tensors(n)) {
            float[] scores = t.uniform(n, -20f, 20f);
            float[][] results = new float[2][];
            float[][] stats = new float[2][];
            KernelOps[] both = {SCALAR, VECTOR};
            for (int i = 0; i < 2; i++) {
                MemorySegment s = t.f32(scores);
                MemorySegment st = t.allocate(2 * Float.BYTES);
                both[i].softmaxPrepare(s, PAD, st, PAD, n);
                results[i] = read(s, n);
                stats[i] = read(st, 2);
            }
            float[] ones = new float[n];
            java.util.Arrays.fill(ones, 1f);
            Tensors.assertWithin(
                    "vector exps, n " + n, results[1], results[0], ones, AttentionOps.SOFTMAX_ABSOLUTE_TOLERANCE);
            assertThat(stats[1][0]).as("vector block max").isEqualTo(stats[0][0]);
            Tensors.assertWithin(
                    "vector block sum, n " + n,
                    new float[] {stats[1][1]},
                    new float[] {stats[0][1]},
                    new float[] {Math.max(1, n)},
                    AttentionOps.SOFTMAX_ABSOLUTE_TOLERANCE);
            float max = Float.NEGATIVE_INFINITY;
            for (float s : scores) {
                max = Math.max(max, s);
            }
            assertThat(stats[0][0]).as("block max").isEqualTo(max);
        }
    }

    @Test
    void softmaxPrepareOfAFullyMaskedBlockIsZero() {
        try (Tensors t = new Tensors(1)) {
            for (KernelOps ops : new KernelOps[] {SCALAR, VECTOR}) {
                float[] masked = new float[20];
                java.util.Arrays.fill(masked, Float.NEGATIVE_INFINITY);
                MemorySegment s = t.f32(masked);
                MemorySegment st = t.allocate(2 * Float.BYTES);
                ops.softmaxPrepare(s, PAD, st, PAD, 20);
                assertThat(read(s, 20)).as(ops.name()).containsOnly(0f);
                assertThat(read(st, 2)).as(ops.name()).containsExactly(Float.NEGATIVE_INFINITY, 0f);
            }
        }
    }

    @ParameterizedTest(name = "headDim = {0}")
    @ValueSource(ints = {1, 7, 31, 33, 64, 127, 4096})
    void vectorPvMatchesScalar(int headDim) {
        try (Tensors t = new Tensors(headDim)) {
            int n = 13;
            int rowStride = headDim + 1;
            float[] exps = t.uniform(n, 0f, 1f);
            float[] values = t.uniform(n * rowStride, -1f, 1f);
            MemorySegment es = t.f32(exps);
            MemorySegment vs = t.f32(values);
            float[] scalar = pv(t, SCALAR, es, vs, headDim, rowStride, n);
            float[] vector = pv(t, VECTOR, es, vs, headDim, rowStride, n);
            float[] bound = new float[headDim];
            for (int c = 0; c < headDim; c++) {
                for (int j = 0; j < n; j++) {
                    bound[c] += exps[j] * Math.abs(values[j * rowStride + c]);
                }
            }
            Tensors.assertWithin(
                    "vector pv, headDim " + headDim, vector, scalar, bound, AttentionOps.PV_RELATIVE_TOLERANCE);
        }
    }

    private static float[] pv(
            Tensors t, KernelOps ops, MemorySegment exps, MemorySegment values, int headDim, int rowStride, int n) {
        MemorySegment partial = t.allocate((long) headDim * Float.BYTES);
        ops.pv(exps, PAD, values, PAD, partial, PAD, headDim, rowStride, n);
        return read(partial, headDim);
    }

    /**
     * {@code n} values as f16 (each {@code Float.floatToFloat16} of a uniform value in [-1, 1]),
     * with the edge cases of the format among them: subnormals, the largest finite, both zeros
     * and, unless {@code finite}, both infinities.
     */
    private static short[] halves(Tensors t, int n, boolean finite) {
        short[] specials = finite
                ? new short[] {0x0001, 0x03ff, (short) 0x8001, 0x7bff, (short) 0xfbff, (short) 0x8000, 0x0400}
                : new short[] {0x0001, 0x03ff, (short) 0x8001, 0x7bff, (short) 0x8000, 0x7c00, (short) 0xfc00};
        float[] uniform = t.uniform(n, -1f, 1f);
        short[] h = new short[n];
        for (int i = 0; i < n; i++) {
            h[i] = i % 17 == 5 ? specials[i / 17 % specials.length] : Float.floatToFloat16(uniform[i]);
        }
        return h;
    }

    private static MemorySegment f16(Tensors t, short[] h) {
        MemorySegment segment = t.allocate((long) h.length * Short.BYTES);
        for (int i = 0; i < h.length; i++) {
            segment.set(dev.tandem.kernels.scalar.LittleEndian.F16, PAD + (long) i * Short.BYTES, h[i]);
        }
        return segment;
    }

    private static float[] widened(short[] h) {
        float[] f = new float[h.length];
        for (int i = 0; i < h.length; i++) {
            f[i] = Float.float16ToFloat(h[i]);
        }
        return f;
    }

    private static float[] widenF16(Tensors t, KernelOps ops, MemorySegment halves, int headDim, int rowStride,
            int rows) {
        MemorySegment out = t.allocate((long) rows * headDim * Float.BYTES);
        ops.widenF16(halves, PAD, headDim, rowStride, rows, out, PAD);
        return read(out, rows * headDim);
    }

    /**
     * {@code widenF16} is {@code Float.float16ToFloat} of each element of each row, bit for bit
     * (a NaN's quiet bit aside: the JDK's own conversion sets it when compiled, and not when
     * interpreted), in each implementation: the vector loop, the scalar tail of a row and rows
     * narrower than a vector, rows apart by more than their width.
     */
    @ParameterizedTest(name = "headDim = {0}")
    @ValueSource(ints = {1, 7, 8, 31, 33, 64, 127, 4096})
    void widenF16IsFloat16ToFloatOfEachElement(int headDim) {
        try (Tensors t = new Tensors(headDim)) {
            int rows = 5;
            int rowStride = headDim + 3;
            short[] h = halves(t, rows * rowStride, false);
            h[Math.min(4, h.length - 1)] = 0x7e01; // a NaN with a payload
            MemorySegment hs = f16(t, h);
            for (KernelOps ops : new KernelOps[] {SCALAR, VECTOR}) {
                float[] wide = widenF16(t, ops, hs, headDim, rowStride, rows);
                for (int j = 0; j < rows; j++) {
                    for (int c = 0; c < headDim; c++) {
                        float want = Float.float16ToFloat(h[j * rowStride + c]);
                        float got = wide[j * headDim + c];
                        int quiet = Float.isNaN(want) ? 0x0040_0000 : 0;
                        assertThat(Float.floatToRawIntBits(got) | quiet)
                                .as("%s: row %d, element %d (0x%04x)", ops.name(), j, c, h[j * rowStride + c])
                                .isEqualTo(Float.floatToRawIntBits(want) | quiet);
                    }
                }
            }
        }
    }

    /**
     * An f16 cache's attention, {@code qk} and {@code pv} over {@code widenF16}'s rows, gives the
     * bits they give over the same values widened by {@code Float.float16ToFloat} and laid out as
     * the cache's rows: the f16 cache differs from an f32 one only by the rounding of what it
     * stores. In each implementation, whose own sums (vector against scalar) agree as the f32
     * kernels' do.
     */
    @ParameterizedTest(name = "headDim = {0}")
    @ValueSource(ints = {1, 7, 8, 31, 33, 64, 127, 4096})
    void qkAndPvOverWidenedRowsAreTheF32KernelsOverTheSameValues(int headDim) {
        try (Tensors t = new Tensors(headDim)) {
            int rows = 7;
            int rowStride = headDim + 3;
            MemorySegment q = t.f32(t.uniform(headDim, -1f, 1f));
            MemorySegment exps = t.f32(t.uniform(rows, 0f, 1f));
            short[] h = halves(t, rows * rowStride, false);
            MemorySegment halfRows = f16(t, h);
            MemorySegment wideRows = t.f32(widened(h));
            for (KernelOps ops : new KernelOps[] {SCALAR, VECTOR}) {
                MemorySegment widenedByOps = t.f32(widenF16(t, ops, halfRows, headDim, rowStride, rows));
                Tensors.assertIdentical(ops.name() + " qk over widened f16, headDim " + headDim,
                        qk(t, ops, q, widenedByOps, headDim, headDim, rows, 0.125f),
                        qk(t, ops, q, wideRows, headDim, rowStride, rows, 0.125f));
                Tensors.assertIdentical(ops.name() + " pv over widened f16, headDim " + headDim,
                        pv(t, ops, exps, widenedByOps, headDim, headDim, rows),
                        pv(t, ops, exps, wideRows, headDim, rowStride, rows));
            }
        }
    }

    @ParameterizedTest(name = "headDim = {0}")
    @ValueSource(ints = {1, 7, 31, 33, 127, 4096})
    void vectorOnlineUpdateAndNormalizeAreIdenticalToScalar(int headDim) {
        try (Tensors t = new Tensors(headDim)) {
            float[][] outputs = new float[2][];
            float[][] stats = new float[2][];
            KernelOps[] both = {SCALAR, VECTOR};
            float[][] partials = {t.uniform(headDim, -3f, 3f), t.uniform(headDim, -3f, 3f), t.uniform(headDim, -3f, 3f)
            };
            float[][] blockStats = {{1.5f, 3f}, {4f, 2.5f}, {Float.NEGATIVE_INFINITY, 0f}};
            for (int i = 0; i < 2; i++) {
                MemorySegment running = t.allocate(2 * Float.BYTES);
                MemorySegment out = t.allocate((long) headDim * Float.BYTES);
                both[i].onlineInit(running, PAD, out, PAD, headDim);
                for (int block = 0; block < 3; block++) {
                    both[i].onlineUpdate(
                            running,
                            PAD,
                            out,
                            PAD,
                            t.f32(blockStats[block]),
                            PAD,
                            t.f32(partials[block]),
                            PAD,
                            headDim);
                }
                both[i].normalize(running, PAD, out, PAD, out, PAD, headDim);
                outputs[i] = read(out, headDim);
                stats[i] = read(running, 2);
            }
            Tensors.assertIdentical("vector online output, headDim " + headDim, outputs[1], outputs[0]);
            Tensors.assertIdentical("vector running stats", stats[1], stats[0]);
            assertThat(stats[0][0]).as("running max").isEqualTo(4f);
            assertThat(stats[0][1]).as("running sum").isEqualTo((float) (3 * Math.exp(-2.5)) + 2.5f);
        }
    }

    @Test
    void normalizeRejectsAnEmptyContext() {
        try (Tensors t = new Tensors(2)) {
            for (KernelOps ops : new KernelOps[] {SCALAR, VECTOR}) {
                MemorySegment running = t.allocate(2 * Float.BYTES);
                MemorySegment out = t.allocate(4 * Float.BYTES);
                ops.onlineInit(running, PAD, out, PAD, 4);
                assertThatThrownBy(() -> ops.normalize(running, PAD, out, PAD, out, PAD, 4))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageStartingWith("normalize: running sum = 0.0 must be > 0");
            }
        }
    }
}
