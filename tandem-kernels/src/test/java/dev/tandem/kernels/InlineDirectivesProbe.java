package dev.tandem.kernels;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;

/**
 * The main class {@link InlineDirectivesTest} starts in a JVM of its own: it chooses the kernels,
 * prints what {@link InlineDirectives} did and the JVM's directive stack, then runs an f32 matmul
 * until C2 has compiled it, so a {@code -XX:+PrintInlining} run shows how C2 treated its helpers.
 */
final class InlineDirectivesProbe {

    private InlineDirectivesProbe() {}

    public static void main(String[] args) throws Exception {
        KernelOps ops = Ops.preferred();
        System.out.println("kernels: " + ops.getClass().getSimpleName());
        System.out.println("outcome: " + InlineDirectives.installOnce().get(60, TimeUnit.SECONDS));
        System.out.println(InlineDirectives.diagnosticCommand("compilerDirectivesPrint"));
        int rows = 16;
        int cols = 256;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment w = arena.allocate((long) rows * cols * Float.BYTES, 64);
            MemorySegment x = arena.allocate((long) cols * Float.BYTES, 64);
            MemorySegment out = arena.allocate((long) rows * Float.BYTES, 64);
            for (int i = 0; i < 20_000; i++) {
                ops.matmul(TensorType.F32, w, 0, x, 0, out, 0, rows, cols, 1, 0, rows);
            }
        }
        System.out.println("probe done");
    }
}
