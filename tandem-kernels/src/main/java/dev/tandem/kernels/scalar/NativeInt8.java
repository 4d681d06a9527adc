package dev.tandem.kernels.scalar;

import dev.tandem.kernels.MatmulOps;
import dev.tandem.kernels.TensorType;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Arrays;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The native int8 kernels ({@code src/main/c/tandem_int8.c}), called through the FFM API: the
 * integer dot products of q4_0_x16, q4_K_x16 and q5_0_x16 with AVX2's {@code vpmaddubsw}, a
 * multiply-add of byte pairs that the Vector API has no operation for, and of q8_0_x16 and
 * q6_K_x16 with {@code vpmaddwd} (the quants widened to int16 once per block for all the inputs).
 * {@link #available()} when the build compiled the library (gcc on the path), the CPU lists
 * {@code avx2}, {@code fma} and {@code f16c}, and the system property {@value #PROPERTY} is not
 * {@code false}; otherwise the Java kernels run, after one INFO line through SLF4J that says why.
 *
 * <p>Each native kernel equals its Java scalar twin bit for bit ({@link Q4_0X16#row},
 * {@link Q4_KX16#row}, {@link SmallBlocksX16#row}, {@link Q8_0X16#row}, {@link Q6_KX16#row}: the
 * integer sums are exact, the float steps the twin's in its order), so a machine with the library
 * and one without compute the same tokens; {@code NativeInt8Test} checks it. Any thread may call;
 * each stages its inputs in native memory of its own.
 */
public final class NativeInt8 {

    /** Set to {@code false} to run the Java kernels even where the native ones could. */
    public static final String PROPERTY = "tandem.kernels.native";

    /** The library's place among the module's resources, where the Maven build puts it. */
    public static final String RESOURCE = "/dev/tandem/kernels/native/libtandem_int8.so";

    private static final Logger LOG = LoggerFactory.getLogger(NativeInt8.class);

    /** {@code tandem_q4_0_x16}, or {@code null} where the native kernels do not run. */
    private static final MethodHandle Q4_0_X16;

    /** {@code tandem_q4_k_x16}, or {@code null} where the native kernels do not run. */
    private static final MethodHandle Q4_K_X16;

    /** {@code tandem_q5_0_x16}, or {@code null} where the native kernels do not run. */
    private static final MethodHandle Q5_0_X16;

    /** {@code tandem_q8_0_x16}, or {@code null} where the native kernels do not run. */
    private static final MethodHandle Q8_0_X16;

    /** {@code tandem_q6_k_x16}, or {@code null} where the native kernels do not run. */
    private static final MethodHandle Q6_K_X16;

    static {
        MethodHandle q4_0 = null;
        MethodHandle q4_K = null;
        MethodHandle q5_0 = null;
        MethodHandle q8_0 = null;
        MethodHandle q6_K = null;
        String reason = reasonNotToLoad(System.getProperty(PROPERTY), System.getProperty("os.arch"), cpuFlags());
        if (reason == null) {
            try {
                Path library = library();
                if (library == null) {
                    reason = "the build found no C compiler (" + RESOURCE + " is not on the class path)";
                } else {
                    SymbolLookup lookup = SymbolLookup.libraryLookup(library, Arena.global());
                    Linker linker = Linker.nativeLinker();
                    ValueLayout.OfLong j = ValueLayout.JAVA_LONG;
                    ValueLayout.OfInt i = ValueLayout.JAVA_INT;
                    java.lang.foreign.AddressLayout a = ValueLayout.ADDRESS;
                    FunctionDescriptor groups = FunctionDescriptor.ofVoid(a, j, j, i, i, i, a, j, a, a, j, a, j, j);
                    q4_0 = linker.downcallHandle(lookup.findOrThrow("tandem_q4_0_x16"), groups,
                            Linker.Option.critical(true));
                    q4_K = linker.downcallHandle(lookup.findOrThrow("tandem_q4_k_x16"), groups,
                            Linker.Option.critical(true));
                    q5_0 = linker.downcallHandle(lookup.findOrThrow("tandem_q5_0_x16"), groups,
                            Linker.Option.critical(true));
                    q8_0 = linker.downcallHandle(lookup.findOrThrow("tandem_q8_0_x16"), groups,
                            Linker.Option.critical(true));
                    q6_K = linker.downcallHandle(lookup.findOrThrow("tandem_q6_k_x16"), groups,
                            Linker.Option.critical(true));
                }
            } catch (IOException | RuntimeException e) {
                reason = "the library did not load (" + e + ")";
            }
        }
        Q4_0_X16 = q4_0 != null && q4_K != null && q5_0 != null && q8_0 != null && q6_K != null ? q4_0 : null;
        Q4_K_X16 = Q4_0_X16 != null ? q4_K : null;
        Q5_0_X16 = Q4_0_X16 != null ? q5_0 : null;
        Q8_0_X16 = Q4_0_X16 != null ? q8_0 : null;
        Q6_K_X16 = Q4_0_X16 != null ? q6_K : null;
        if (reason != null) {
            LOG.info("native int8 kernels off, the Java kernels run: {}", reason);
        } else {
            LOG.debug("native int8 kernels on (AVX2)");
        }
    }

    private NativeInt8() {}

    /** Whether the native kernels run in this JVM. */
    public static boolean available() {
        return Q4_0_X16 != null;
    }

    /**
     * Why the native kernels must not run, or {@code null} when they may.
     *
     * @param property the value of {@value #PROPERTY}, or {@code null}
     * @param arch {@code os.arch}
     * @param flags the CPU's flags from {@code /proc/cpuinfo}, or {@code null} where it is unreadable
     */
    public static String reasonNotToLoad(String property, String arch, List<String> flags) {
        if ("false".equals(property)) {
            return PROPERTY + "=false";
        }
        if (!"amd64".equals(arch) && !"x86_64".equals(arch)) {
            return "the CPU is " + arch + ", not x86-64";
        }
        if (flags == null) {
            return "/proc/cpuinfo lists no CPU flags";
        }
        for (String flag : List.of("avx2", "fma", "f16c")) {
            if (!flags.contains(flag)) {
                return "the CPU lacks " + flag;
            }
        }
        return null;
    }

    private static List<String> cpuFlags() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
                if (line.startsWith("flags")) {
                    return Arrays.asList(line.substring(line.indexOf(':') + 1).trim().split("\\s+"));
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux, or no /proc: no flags, the Java kernels
        }
        return null;
    }

    /** The library as a file: the resource itself when the classes are a directory, else a copy. */
    private static Path library() throws IOException {
        URL url = NativeInt8.class.getResource(RESOURCE);
        if (url == null) {
            return null;
        }
        if ("file".equals(url.getProtocol())) {
            return Path.of(java.net.URI.create(url.toString()));
        }
        Path copy = Files.createTempFile("tandem_int8", ".so");
        copy.toFile().deleteOnExit();
        try (InputStream in = url.openStream()) {
            Files.copy(in, copy, StandardCopyOption.REPLACE_EXISTING);
        }
        return copy;
    }

    /**
     * Full groups {@code [first, first + groups)} of 16 rows of a matrix of {@code type}
     * ({@link TensorType#Q4_0_X16}, {@link TensorType#Q4_K_X16}, {@link TensorType#Q5_0_X16},
     * {@link TensorType#Q8_0_X16} or {@link TensorType#Q6_K_X16}) of {@code blocks} blocks a row
     * (superblocks for the K types), against the {@code batch} inputs {@code in} quantized (each
     * {@code cols} values), into {@code out} as {@link MatmulOps#matmul} writes it: the type's
     * scalar twin's results bit for bit.
     */
    public static void x16(TensorType type, MemorySegment weights, long weightsOffset, int first, int groups, int blocks,
            Q4_0X16.Inputs in, int batch, int cols, MemorySegment out, long outOffset, int rows) {
        MethodHandle kernel = switch (type) {
            case Q4_0_X16 -> Q4_0_X16;
            case Q4_K_X16 -> Q4_K_X16;
            case Q5_0_X16 -> Q5_0_X16;
            case Q8_0_X16 -> Q8_0_X16;
            case Q6_K_X16 -> Q6_K_X16;
            default -> throw new IllegalArgumentException("no native kernel for " + type);
        };
        long groupBytes = 16L * blocks * type.blockBytes();
        // q8_0 and q6_K widen the quants to int16 pairs, the others multiply bytes
        Staged staged = Staged.of(in, batch, cols, type == TensorType.Q8_0_X16 || type == TensorType.Q6_K_X16);
        try {
            kernel.invokeExact(weights, weightsOffset + (long) (first / 16) * groupBytes, groupBytes, groups, blocks,
                    batch,
                    staged.pairs, (long) cols / 2, staged.ds, staged.sum8, (long) (cols / 32),
                    out, outOffset + (long) first * Float.BYTES, (long) rows);
        } catch (Throwable e) {
            throw new IllegalStateException("native " + type + " kernel failed", e);
        }
    }

    /**
     * One thread's inputs in native memory: the pairs of quants as the native kernels broadcast
     * them (two int8 in 16 bits, twice in a word; for q8_0_x16 and q6_K_x16 two int16 in a word, as
     * {@link Q4_0X16.Inputs#pairs} holds them), the factors and {@code 8 * sum q}.
     */
    private static final class Staged {
        private static final ThreadLocal<Staged> OF_THREAD = ThreadLocal.withInitial(Staged::new);

        private MemorySegment pairs = MemorySegment.NULL;
        private MemorySegment ds = MemorySegment.NULL;
        private MemorySegment sum8 = MemorySegment.NULL;

        static Staged of(Q4_0X16.Inputs in, int batch, int cols, boolean shortPairs) {
            Staged staged = OF_THREAD.get();
            int pairCount = batch * cols / 2;
            int blocks = batch * (cols / 32);
            if (staged.pairs.byteSize() < pairCount * 4L || staged.ds.byteSize() < blocks * 4L) {
                Arena arena = Arena.ofAuto();
                staged.pairs = arena.allocate(pairCount * 4L, 64);
                staged.ds = arena.allocate(blocks * 4L, 64);
                staged.sum8 = arena.allocate(blocks * 4L, 64);
            }
            int[] p = in.pairs();
            if (shortPairs) {
                MemorySegment.copy(p, 0, staged.pairs, ValueLayout.JAVA_INT, 0, pairCount);
            } else {
                for (int m = 0; m < pairCount; m++) {
                    int pair = p[m];
                    int bytes = (pair & 0xff) | (pair >>> 8 & 0xff00);
                    staged.pairs.setAtIndex(ValueLayout.JAVA_INT, m, bytes | bytes << 16);
                }
            }
            MemorySegment.copy(in.d(), 0, staged.ds, ValueLayout.JAVA_FLOAT, 0, blocks);
            MemorySegment.copy(in.sum8(), 0, staged.sum8, ValueLayout.JAVA_INT, 0, blocks);
            return staged;
        }
    }
}
