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
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The native int8 kernels ({@code src/main/c/tandem_int8.c}), called through the FFM API: the
 * integer dot products of q4_0_x16, q4_K_x16, q5_0_x16, q4_1_x16, q5_1_x16, q5_K_x16, q2_K_x16 and
 * q3_K_x16 with AVX2's {@code vpmaddubsw}, a multiply-add of byte pairs that the Vector API has no
 * operation for, and of q8_0_x16, q6_K_x16, iq4_nl_x16 and iq4_xs_x16 with {@code vpmaddwd} (the
 * quants widened to int16 once per block for all the inputs).
 * {@link #available()} when the build compiled the library (gcc on the path), the CPU lists
 * {@code avx2}, {@code fma} and {@code f16c}, and the system property {@value #PROPERTY} is not
 * {@code false}; otherwise the Java kernels run, after one INFO line through SLF4J that says why.
 *
 * <p>Each native kernel equals its Java scalar twin bit for bit ({@link Q4_0X16#row},
 * {@link Q4_KX16#row}, {@link SmallBlocksX16#row}, {@link Q8_0X16#row}, {@link Q6_KX16#row},
 * {@link Q5_KX16#row}, {@link LowBitsKX16#row}, {@link Iq4X16#row}: the
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

    /** The types that have a native kernel, each with the name of its C function. */
    private static final Map<TensorType, String> FUNCTIONS = functions();

    /** The kernels of {@link #FUNCTIONS}' types; empty where the native kernels do not run. */
    private static final Map<TensorType, MethodHandle> KERNELS;

    static {
        Map<TensorType, MethodHandle> kernels = new EnumMap<>(TensorType.class);
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
                    for (Map.Entry<TensorType, String> function : FUNCTIONS.entrySet()) {
                        kernels.put(function.getKey(), linker.downcallHandle(lookup.findOrThrow(function.getValue()),
                                groups, Linker.Option.critical(true)));
                    }
                }
            } catch (IOException | RuntimeException e) {
                reason = "the library did not load (" + e + ")";
                kernels.clear();
            }
        }
        KERNELS = kernels;
        if (reason != null) {
            LOG.info("native int8 kernels off, the Java kernels run: {}", reason);
        } else {
            LOG.debug("native int8 kernels on (AVX2)");
        }
    }

    private static Map<TensorType, String> functions() {
        Map<TensorType, String> functions = new EnumMap<>(TensorType.class);
        functions.put(TensorType.Q4_0_X16, "tandem_q4_0_x16");
        functions.put(TensorType.Q4_K_X16, "tandem_q4_k_x16");
        functions.put(TensorType.Q5_0_X16, "tandem_q5_0_x16");
        functions.put(TensorType.Q8_0_X16, "tandem_q8_0_x16");
        functions.put(TensorType.Q6_K_X16, "tandem_q6_k_x16");
        functions.put(TensorType.Q5_K_X16, "tandem_q5_k_x16");
        functions.put(TensorType.Q2_K_X16, "tandem_q2_k_x16");
        functions.put(TensorType.Q3_K_X16, "tandem_q3_k_x16");
        functions.put(TensorType.IQ4_NL_X16, "tandem_iq4_nl_x16");
        functions.put(TensorType.IQ4_XS_X16, "tandem_iq4_xs_x16");
        functions.put(TensorType.Q4_1_X16, "tandem_q4_1_x16");
        functions.put(TensorType.Q5_1_X16, "tandem_q5_1_x16");
        return functions;
    }

    private NativeInt8() {}

    /** Whether the native kernels run in this JVM. */
    public static boolean available() {
        return !KERNELS.isEmpty();
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
     * Full groups {@code [first, first + groups)} of 16 rows of a matrix of {@code type} (one that
     * {@link #FUNCTIONS} names) of {@code blocks} blocks a row (superblocks of 256 for the K
     * types and iq4_xs), against the {@code batch} inputs {@code in} quantized (each
     * {@code cols} values), into {@code out} as {@link MatmulOps#matmul} writes it: the type's
     * scalar twin's results bit for bit.
     */
    public static void x16(TensorType type, MemorySegment weights, long weightsOffset, int first, int groups, int blocks,
            Q4_0X16.Inputs in, int batch, int cols, MemorySegment out, long outOffset, int rows) {
        MethodHandle kernel = KERNELS.get(type);
        if (kernel == null) {
            throw new IllegalArgumentException("no native kernel for " + type);
        }
        long groupBytes = 16L * blocks * type.blockBytes();
        Staged staged = Staged.of(in, batch, cols, SHORT_PAIRS.contains(type), SUMS_OF_16.contains(type));
        try {
            kernel.invokeExact(weights, weightsOffset + (long) (first / 16) * groupBytes, groupBytes, groups, blocks,
                    batch,
                    staged.pairs, (long) cols / 2, staged.ds, staged.sums, (long) (cols / 32),
                    out, outOffset + (long) first * Float.BYTES, (long) rows);
        } catch (Throwable e) {
            throw new IllegalStateException("native " + type + " kernel failed", e);
        }
    }

    /**
     * The types whose kernels widen the quants to int16 pairs ({@code vpmaddwd}); the others
     * multiply bytes ({@code vpmaddubsw}).
     */
    private static final Set<TensorType> SHORT_PAIRS = EnumSet.of(TensorType.Q8_0_X16, TensorType.Q6_K_X16,
            TensorType.IQ4_NL_X16, TensorType.IQ4_XS_X16);

    /** The types whose kernels take the sums of each 16 quants (sub-blocks of 16) instead of {@code 8 * sum q}. */
    private static final Set<TensorType> SUMS_OF_16 = EnumSet.of(TensorType.Q2_K_X16, TensorType.Q3_K_X16);

    /**
     * One thread's inputs in native memory: the pairs of quants as the native kernels broadcast
     * them (two int8 in 16 bits, twice in a word; for {@link #SHORT_PAIRS} two int16 in a word, as
     * {@link Q4_0X16.Inputs#pairs} holds them), the factors, and per block of 32 {@code 8 * sum q}
     * or, for {@link #SUMS_OF_16}, per 16 quants their sum.
     */
    private static final class Staged {
        private static final ThreadLocal<Staged> OF_THREAD = ThreadLocal.withInitial(Staged::new);

        private MemorySegment pairs = MemorySegment.NULL;
        private MemorySegment ds = MemorySegment.NULL;
        private MemorySegment sums = MemorySegment.NULL;

        static Staged of(Q4_0X16.Inputs in, int batch, int cols, boolean shortPairs, boolean sumsOf16) {
            Staged staged = OF_THREAD.get();
            int pairCount = batch * cols / 2;
            int blocks = batch * (cols / 32);
            if (staged.pairs.byteSize() < pairCount * 4L || staged.ds.byteSize() < blocks * 4L) {
                Arena arena = Arena.ofAuto();
                staged.pairs = arena.allocate(pairCount * 4L, 64);
                staged.ds = arena.allocate(blocks * 4L, 64);
                staged.sums = arena.allocate(2 * blocks * 4L, 64);
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
            if (sumsOf16) {
                for (int c = 0; c < 2 * blocks; c++) {
                    int sum = 0;
                    for (int m = 8 * c; m < 8 * c + 8; m++) {
                        sum += (short) p[m] + (p[m] >> 16);
                    }
                    staged.sums.setAtIndex(ValueLayout.JAVA_INT, c, sum);
                }
            } else {
                MemorySegment.copy(in.sum8(), 0, staged.sums, ValueLayout.JAVA_INT, 0, blocks);
            }
            return staged;
        }
    }
}
