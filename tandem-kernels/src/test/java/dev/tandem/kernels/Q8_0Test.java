package dev.tandem.kernels;

import static dev.tandem.kernels.Tensors.PAD;
import static dev.tandem.kernels.scalar.LittleEndian.F16;
import static dev.tandem.kernels.scalar.LittleEndian.I8;
import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.MemorySegment;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.FloatRange;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

class Q8_0Test {

    @Test
    void blockIsAHalfScaleThenThirtyTwoSignedBytes() {
        try (Tensors t = new Tensors(1)) {
            float[] values = new float[32];
            for (int j = 0; j < 32; j++) {
                values[j] = j - 16;
            }
            MemorySegment q8 = t.q8(values, 1, 32);
            float d = 16f / 127f;
            assertThat(q8.get(F16, PAD)).as("f16 bits of the scale").isEqualTo(Float.floatToFloat16(d));
            assertThat(q8.get(I8, PAD + 2)).as("q[0] of -16").isEqualTo((byte) -127);
            assertThat(q8.get(I8, PAD + 2 + 16)).as("q[16] of 0").isEqualTo((byte) 0);
            assertThat(q8.get(I8, PAD + 2 + 31)).as("q[31] of 15").isEqualTo((byte) Math.round(15 * 127f / 16f));
            assertThat(Q8_0.rowBytes(64)).isEqualTo(68);
        }
    }

    @Test
    void roundsHalfAwayFromZeroLikeCRoundf() {
        try (Tensors t = new Tensors(2)) {
            // amax = 127 makes d = 1, so each value is quantized as itself.
            float[] values = new float[32];
            values[0] = 127f;
            values[1] = 2.5f;
            values[2] = -2.5f;
            values[3] = -0.5f;
            values[4] = 0.49f;
            MemorySegment q8 = t.q8(values, 1, 32);
            assertThat(q8.get(I8, PAD + 2 + 1)).isEqualTo((byte) 3);
            assertThat(q8.get(I8, PAD + 2 + 2)).isEqualTo((byte) -3);
            assertThat(q8.get(I8, PAD + 2 + 3)).isEqualTo((byte) -1);
            assertThat(q8.get(I8, PAD + 2 + 4)).isEqualTo((byte) 0);
        }
    }

    @Test
    void zeroBlockHasZeroScaleAndZeroValues() {
        try (Tensors t = new Tensors(3)) {
            MemorySegment q8 = t.q8(new float[64], 1, 64);
            assertThat(t.dequantized(q8, 64)).containsOnly(0f);
            assertThat(q8.get(F16, PAD + Q8_0.BLOCK_BYTES)).isEqualTo(Float.floatToFloat16(0f));
        }
    }

    @Property(tries = 200)
    void roundTripMovesEachValueByAtMostTheDocumentedFractionOfItsBlockMax(
            @ForAll long seed,
            @ForAll @FloatRange(min = 0.01f, max = 1e6f) float magnitude,
            @ForAll @IntRange(min = 1, max = 8) int blocks) {
        try (Tensors t = new Tensors(seed)) {
            int count = blocks * Q8_0.BLOCK_SIZE;
            float[] values = t.uniform(count, -magnitude, magnitude);
            for (int block = 0; block < blocks; block++) {
                // Pin each block's largest magnitude, with either sign.
                values[block * Q8_0.BLOCK_SIZE + t.random.nextInt(Q8_0.BLOCK_SIZE)] =
                        t.random.nextBoolean() ? magnitude : -magnitude;
            }
            float[] roundTrip = t.dequantized(t.q8(values, 1, count), count);
            float bound = Q8_0.ROUND_TRIP_RELATIVE_ERROR * magnitude;
            for (int i = 0; i < count; i++) {
                assertThat(Math.abs(roundTrip[i] - values[i]))
                        .as("|dequantize(quantize(x)) - x| at %d for x = %s, block max %s", i, values[i], magnitude)
                        .isLessThanOrEqualTo(bound);
            }
        }
    }
}
