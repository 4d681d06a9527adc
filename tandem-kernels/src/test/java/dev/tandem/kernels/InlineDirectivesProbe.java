package dev.tandem.kernels;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;

/**
 * The main class {@link InlineDirectivesTest} starts in a JVM of its own: it chooses the kernels,
 * prints what {@link InlineDirectives} did and the JVM's directive stack, then runs rmsnorm
 * (whose loads are {@code VectorLanes.load}) until C2 has compiled it, so a {@code
 * -XX:+PrintInlining} run shows how C2 treated its helpers.
 */
final class InlineDirectivesProbe {

    private InlineDirectivesProbe() {}

    public static void main(String[] args) throws Exception {
        KernelOps ops = Ops.preferred();
        System.out.println("kernels: " + ops.getClass().getSimpleName());
        System.out.println("outcome: " + InlineDirectives.installOnce().get(60, TimeUnit.SECONDS));
        System.out.println(InlineDirectives.diagnosticCommand("compilerDirectivesPrint"));
        int n = 4096;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment x = arena.allocate((long) n * Float.BYTES, 64);
            MemorySegment weight = arena.allocate((long) n * Float.BYTES, 64);
            MemorySegment out = arena.allocate((long) n * Float.BYTES, 64);
            for (int i = 0; i < 20_000; i++) {
                ops.rmsnorm(x, 0, weight, 0, out, 0, n, 1e-5f);
            }
        }
        System.out.println("probe done");
    }
}
