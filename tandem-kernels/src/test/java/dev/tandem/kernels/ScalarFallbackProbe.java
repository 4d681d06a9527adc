package dev.tandem.kernels;

import static dev.tandem.kernels.LittleEndian.F32;

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
            ops.matmulF32(w, 0, x, 0, out, 0, 2, 3, 2, 0, 2);
            float[] result = new float[4];
            for (int i = 0; i < 4; i++) {
                result[i] = out.get(F32, (long) i * Float.BYTES);
            }
            System.out.println("matmulF32: " + Arrays.toString(result));
            System.out.println("argmax: " + ops.argmax(f32(arena, 1, 3, 7, 7, 2), 0, 5));
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
