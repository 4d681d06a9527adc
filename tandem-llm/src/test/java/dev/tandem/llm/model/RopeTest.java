package dev.tandem.llm.model;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.kernels.TensorType;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

class RopeTest {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private static LlamaConfig config(RopeStyle style) {
        return new LlamaConfig(64, 1, 4, 2, 16, 128, 256, 4096, 10000f, style, false, 1e-5f, TensorType.F32, false,
                false, false);
    }

    /** The angles as the rotation defines them, in double precision, rounded once. */
    private static float[][] expected(LlamaConfig c, int position, float[] factors) {
        int pairs = c.headDim() / 2;
        float[][] cs = new float[2][pairs];
        for (int i = 0; i < pairs; i++) {
            double f = Math.pow(c.ropeTheta(), -2.0 * i / c.headDim()) / (factors == null ? 1 : factors[i]);
            cs[0][i] = (float) Math.cos(position * f);
            cs[1][i] = (float) Math.sin(position * f);
        }
        return cs;
    }

    @Test
    void anglesOfPositionsThatShareASlotAreEachTheirOwn() {
        LlamaConfig c = config(RopeStyle.INTERLEAVED);
        Rope rope = new Rope(c, null);
        int[] positions = {0, 1, Rope.RECENT, 1, 2 * Rope.RECENT + 1, 0, 4095, 4095 - Rope.RECENT, 4095};
        for (int p : positions) {
            Rope.Angles angles = rope.angles(p);
            float[][] want = expected(c, p, null);
            assertThat(angles.position()).isEqualTo(p);
            assertThat(angles.cos()).containsExactly(want[0]);
            assertThat(angles.sin()).containsExactly(want[1]);
        }
    }

    @Test
    void aRecentPositionsAnglesAreMadeOnce() {
        Rope rope = new Rope(config(RopeStyle.NEOX), null);
        Rope.Angles first = rope.angles(77);
        assertThat(rope.angles(77)).isSameAs(first);
        rope.angles(77 + Rope.RECENT);
        Rope.Angles again = rope.angles(77);
        assertThat(again).isNotSameAs(first);
        assertThat(again.cos()).containsExactly(first.cos());
        assertThat(again.sin()).containsExactly(first.sin());
    }

    @Test
    void factorsDivideTheFrequencies() {
        LlamaConfig c = config(RopeStyle.INTERLEAVED);
        float[] factors = new float[c.headDim() / 2];
        for (int i = 0; i < factors.length; i++) {
            factors[i] = 1 + i / 4f;
        }
        Rope rope = new Rope(c, factors);
        float[][] want = expected(c, 1000, factors);
        assertThat(rope.angles(1000).cos()).containsExactly(want[0]);
        assertThat(rope.angles(1000).sin()).containsExactly(want[1]);
    }

    @Test
    void factorsMustBeFiniteAndPositive() {
        LlamaConfig c = config(RopeStyle.INTERLEAVED);
        for (float bad : new float[] {0f, -1f, Float.NaN, Float.POSITIVE_INFINITY}) {
            float[] factors = new float[c.headDim() / 2];
            java.util.Arrays.fill(factors, 1f);
            factors[3] = bad;
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> new Rope(c, factors))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("rope factor 3 = " + bad);
        }
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> new Rope(c, new float[3]))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("3 given");
    }

    @Test
    void applyRotatesThePairsOfEachStyle() {
        for (RopeStyle style : RopeStyle.values()) {
            LlamaConfig c = config(style);
            Rope rope = new Rope(c, null);
            int heads = 3;
            int hd = c.headDim();
            Random random = new Random(3);
            try (Arena arena = Arena.ofConfined()) {
                long offset = 8;
                MemorySegment x = arena.allocate(offset + (long) heads * hd * 4);
                float[] before = new float[heads * hd];
                for (int i = 0; i < before.length; i++) {
                    before[i] = random.nextFloat() * 2 - 1;
                    x.set(F32, offset + i * 4L, before[i]);
                }
                int position = 333;
                rope.apply(x, offset, heads, rope.angles(position));
                float[][] cs = expected(c, position, null);
                for (int h = 0; h < heads; h++) {
                    for (int i = 0; i < hd / 2; i++) {
                        int a = h * hd + (style == RopeStyle.INTERLEAVED ? 2 * i : i);
                        int b = h * hd + (style == RopeStyle.INTERLEAVED ? 2 * i + 1 : i + hd / 2);
                        assertThat(x.get(F32, offset + a * 4L)).isEqualTo(before[a] * cs[0][i] - before[b] * cs[1][i]);
                        assertThat(x.get(F32, offset + b * 4L)).isEqualTo(before[a] * cs[1][i] + before[b] * cs[0][i]);
                    }
                }
            }
        }
    }

    @Test
    void coresSharingTheCacheEachSeeTheirPositionsAngles() throws Exception {
        LlamaConfig c = config(RopeStyle.NEOX);
        Rope rope = new Rope(c, null);
        float[][][] want = new float[1024][][];
        for (int p = 0; p < want.length; p++) {
            want[p] = expected(c, p, null);
        }
        try (ExecutorService pool = Executors.newFixedThreadPool(4)) {
            List<Callable<Integer>> work = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                int seed = t;
                work.add(() -> {
                    Random random = new Random(seed);
                    int wrong = 0;
                    for (int k = 0; k < 200_000; k++) {
                        int p = random.nextInt(want.length);
                        Rope.Angles angles = rope.angles(p);
                        if (angles.position() != p || angles.cos()[7] != want[p][0][7] || angles.sin()[3] != want[p][1][3]) {
                            wrong++;
                        }
                    }
                    return wrong;
                });
            }
            for (Future<Integer> f : pool.invokeAll(work)) {
                assertThat(f.get()).isZero();
            }
        }
    }
}
