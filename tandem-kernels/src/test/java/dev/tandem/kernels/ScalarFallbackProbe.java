package dev.tandem.kernels;

import static dev.tandem.kernels.scalar.LittleEndian.F32;

import dev.tandem.kernels.scalar.LittleEndian;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * The main class {@link OpsTest} starts in a JVM without {@code jdk.incubator.vector}: it reports
 * which kernels {@link Ops#preferred()} chose and what two of them compute.
 */
final class ScalarFallbackProbe {

    private ScalarFallbackProbe() {}

    public static void main(String[] args) {
        System.out.println("vector module present: "
                + ModuleLayer.boot().findModule(Ops.VECTOR_MODULE).isPresent());
        KernelOps ops = Ops.preferred();
        System.out.println("preferred: " + ops.name());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment w = f32(arena, 1, 2, 3, 4, 5, 6);
            MemorySegment x = f32(arena, 1, 0, -1, 2, 2, 2);
            MemorySegment out = arena.allocate(4 * Float.BYTES);
            ops.matmulF32_X16(w, 0, x, 0, out, 0, 2, 3, 2, 0, 2); // two rows: no group of 16 to interleave
            float[] result = new float[4];
            for (int i = 0; i < 4; i++) {
                result[i] = out.get(F32, (long) i * Float.BYTES);
            }
            System.out.println("matmulF32: " + Arrays.toString(result));
            System.out.println("argmax: " + ops.argmax(f32(arena, 1, 3, 7, 7, 2), 0, 5));
            // A q4_0 block: d = f16 0x3c00 = 1, byte 0 = 0x3a (values 0 and 16: 10 - 8 = 2, 3 - 8 = -5), the
            // rest 0x88 (0); then the f16 1.5 (0x3e00) and the bf16 -2 (0xc000).
            MemorySegment q4 = arena.allocate(18);
            q4.set(LittleEndian.F16, 0, (short) 0x3c00);
            q4.set(LittleEndian.I8, 2, (byte) 0x3a);
            for (int j = 1; j < 16; j++) {
                q4.set(LittleEndian.I8, 2 + j, (byte) 0x88);
            }
            MemorySegment q4Out = arena.allocate(32 * Float.BYTES);
            ops.dequantize(TensorType.Q4_0, q4, 0, q4Out, 0, 32);
            MemorySegment half = arena.allocate(2);
            half.set(LittleEndian.F16, 0, (short) 0x3e00);
            MemorySegment halfOut = arena.allocate(Float.BYTES);
            ops.dequantize(TensorType.F16, half, 0, halfOut, 0, 1);
            half.set(LittleEndian.F16, 0, (short) 0xc000);
            MemorySegment bf16Out = arena.allocate(Float.BYTES);
            ops.dequantize(TensorType.BF16, half, 0, bf16Out, 0, 1);
            System.out.println("dequantize: q4_0 " + q4Out.get(F32, 0) + " " + q4Out.get(F32, 16 * Float.BYTES) + " "
                    + q4Out.get(F32, 31 * Float.BYTES) + ", f16 " + halfOut.get(F32, 0) + ", bf16 "
                    + bf16Out.get(F32, 0));
        }
    }

    private static MemorySegment f32(Arena arena, float... values) {
        MemorySegment segment = arena.allocate((long) values.length * Float.BYTES);
        for (int i = 0; i < values.length; i++) {
            segment.set(F32, (long) i * Float.BYTES, values[i]);
        }
        return segment;
    }
}
