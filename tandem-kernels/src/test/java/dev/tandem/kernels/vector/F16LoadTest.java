package dev.tandem.kernels.vector;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.kernels.scalar.LittleEndian;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

/**
 * {@link VectorDequantize#widenF16} over {@link VectorDequantize#loadHalves}, the widening load of
 * the f16 KV cache ({@link VectorAttention#widenF16}) and of f16 weights, is
 * {@link Float#float16ToFloat} lane by lane for every one of the 65,536 f16 bit patterns:
 * normals, subnormals, both zeros and both infinities bit for bit, every NaN as a NaN with its
 * sign and payload.
 */
class F16LoadTest {
    private static final int QUIET = 0x0040_0000;

    /** Rounds of all 65,536: enough for C2 to compile the load, so its code is checked as well as the interpreter's. */
    private static final int ROUNDS = 40;

    @Test
    void everyHalfWidensAsFloat16ToFloat() {
        long pad = 6; // an offset that is no vector's alignment
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment halves = arena.allocate(pad + 65_536L * Short.BYTES, 1);
            for (int h = 0; h < 65_536; h++) {
                halves.set(LittleEndian.F16, pad + (long) h * Short.BYTES, (short) h);
            }
            StringBuilder first = new StringBuilder();
            int mismatches = 0;
            for (int round = 0; round < ROUNDS; round++) {
                mismatches += mismatches(halves, pad, first);
            }
            assertThat(mismatches).as("halves widened differently: %s", first).isZero();
        }
    }

    /** The halves {@code 0..65535} at {@code pad} that widen unlike {@code float16ToFloat}; the first few go to {@code first}. */
    private static int mismatches(MemorySegment halves, long pad, StringBuilder first) {
        int lanes = VectorLanes.L;
        float[] lane = new float[lanes];
        int mismatches = 0;
        for (int h0 = 0; h0 < 65_536; h0 += lanes) {
            VectorDequantize.widenF16(VectorDequantize.loadHalves(halves, pad + (long) h0 * Short.BYTES))
                    .intoArray(lane, 0);
            for (int i = 0; i < lanes; i++) {
                float expected = Float.float16ToFloat((short) (h0 + i));
                int want = Float.floatToRawIntBits(expected);
                int got = Float.floatToRawIntBits(lane[i]);
                // A NaN's quiet bit is the one thing float16ToFloat itself does not settle: its
                // intrinsic (x86's vcvtph2ps) sets it, its Java code does not.
                boolean same = Float.isNaN(expected)
                        ? Float.isNaN(lane[i]) && (want | QUIET) == (got | QUIET)
                        : want == got;
                if (!same && mismatches++ < 5 && first.length() < 400) {
                    first.append(String.format("0x%04x: 0x%08x, want 0x%08x; ", h0 + i, got, want));
                }
            }
        }
        return mismatches;
    }
}
