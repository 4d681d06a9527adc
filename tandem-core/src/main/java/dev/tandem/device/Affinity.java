package dev.tandem.device;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Arrays;
import java.util.Locale;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Thread affinity on Linux through libc's {@code sched_getaffinity} and
 * {@code sched_setaffinity} (the calling thread's mask, {@code pid} 0), called with the
 * foreign function API. Elsewhere, or where the calls are refused, nothing is pinned.
 *
 * <p>Why the CPU device pins its cores: a core that runs out of work spins, yields and then
 * parks, and the core that releases work wakes it. Linux places a woken thread on the waker's
 * CPU when that CPU looks cache-hot, and a yielding spinner always does; measured on a 2-CPU
 * virtual machine, the two core threads of a device then shared one CPU for most of a decode
 * run (each thread's CPU sampled every 200 ms: the same CPU in 15 of 20 samples), so one core
 * ran nearly every task while the other CPU served the host's step builds, and the device did
 * the work of one core. A core pinned to its own CPU cannot be stacked.
 */
final class Affinity {

    private static final Logger log = LoggerFactory.getLogger(Affinity.class);

    /** Bytes of the mask passed to the kernel: 1024 CPUs, glibc's {@code cpu_set_t}. */
    private static final int MASK_BYTES = 128;

    private static final MethodHandle GET;
    private static final MethodHandle SET;

    static {
        MethodHandle get = null;
        MethodHandle set = null;
        if (System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("linux")) {
            try {
                Linker linker = Linker.nativeLinker();
                FunctionDescriptor signature = FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS);
                Optional<MemorySegment> getAddress = linker.defaultLookup().find("sched_getaffinity");
                Optional<MemorySegment> setAddress = linker.defaultLookup().find("sched_setaffinity");
                if (getAddress.isPresent() && setAddress.isPresent()) {
                    get = linker.downcallHandle(getAddress.get(), signature);
                    set = linker.downcallHandle(setAddress.get(), signature);
                }
            } catch (RuntimeException | LinkageError e) {
                log.debug("thread affinity unavailable: {}", e.toString());
            }
        }
        GET = get;
        SET = set;
    }

    private Affinity() {}

    /** Whether this platform lets threads be pinned (Linux with libc reachable). */
    static boolean supported() {
        return GET != null;
    }

    /** The CPUs the calling thread may run on, ascending; empty where unknown. */
    static int[] allowed() {
        if (GET == null) {
            return new int[0];
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mask = arena.allocate(MASK_BYTES, 8);
            int result = (int) GET.invokeExact(0, (long) MASK_BYTES, mask);
            return result != 0 ? new int[0] : cpus(mask);
        } catch (Throwable e) {
            log.debug("sched_getaffinity failed: {}", e.toString());
            return new int[0];
        }
    }

    /** The CPUs set in a {@code cpu_set_t} mask (bit {@code c % 8} of byte {@code c / 8}), ascending. */
    static int[] cpus(MemorySegment mask) {
        int bits = (int) Math.min(mask.byteSize() * 8, Integer.MAX_VALUE);
        int[] cpus = new int[bits];
        int n = 0;
        for (int cpu = 0; cpu < bits; cpu++) {
            if ((mask.get(ValueLayout.JAVA_BYTE, cpu >>> 3) & (1 << (cpu & 7))) != 0) {
                cpus[n++] = cpu;
            }
        }
        return Arrays.copyOf(cpus, n);
    }

    /** Sets {@code cpu}'s bit in a {@code cpu_set_t} mask. */
    static void add(MemorySegment mask, int cpu) {
        long at = cpu >>> 3;
        mask.set(ValueLayout.JAVA_BYTE, at, (byte) (mask.get(ValueLayout.JAVA_BYTE, at) | (1 << (cpu & 7))));
    }

    /** Pins the calling thread to {@code cpu}; false if that is not possible here. */
    static boolean pin(int cpu) {
        if (SET == null || cpu < 0 || cpu >= MASK_BYTES * 8) {
            return false;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mask = arena.allocate(MASK_BYTES, 8);
            add(mask, cpu);
            int result = (int) SET.invokeExact(0, (long) MASK_BYTES, mask);
            if (result != 0) {
                log.debug("sched_setaffinity to CPU {} refused", cpu);
            }
            return result == 0;
        } catch (Throwable e) {
            log.debug("sched_setaffinity failed: {}", e.toString());
            return false;
        }
    }
}
