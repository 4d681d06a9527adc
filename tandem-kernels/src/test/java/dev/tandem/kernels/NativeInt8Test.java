package dev.tandem.kernels;

import static dev.tandem.kernels.Tensors.PAD;
import static dev.tandem.kernels.Tensors.SCALAR;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.tandem.kernels.scalar.Iq4X16;
import dev.tandem.kernels.scalar.LittleEndian;
import dev.tandem.kernels.scalar.LowBitsKX16;
import dev.tandem.kernels.scalar.NativeInt8;
import dev.tandem.kernels.scalar.Q4_0X16;
import dev.tandem.kernels.scalar.Q5_KX16;
import dev.tandem.kernels.scalar.SmallBlocksX16;
import dev.tandem.kernels.vector.VectorLanes;
import java.io.File;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * When {@link NativeInt8} runs: wherever the build could compile it (gcc on the path that Maven
 * ran with, as this test does) on a CPU with the features, and nowhere else; and, where it runs,
 * that the kernels of q5_K, q2_K, q3_K, iq4_xs, iq4_nl, q4_1 and q5_1 equal their scalar twins bit
 * for bit, called directly (whatever batch the dispatch hands them from), on random blocks and on
 * quants at their extremes. That the older kernels (q4_0, q4_K, q5_0, q8_0, q6_K) equal theirs is
 * the types' own tests' to check ({@link Q4_0X16Test}, ...): their vector kernel is the native one
 * wherever this test expects it to be.
 */
class NativeInt8Test {

    private static final List<String> FEATURES = List.of("avx2", "fma", "f16c", "sse2");

    /**
     * Every interleaved type hands batch 1 and up to the native kernels unless its property says
     * otherwise (this JVM sets none); a type with no interleaved layout never does.
     */
    @Test
    void everyInterleavedTypeGoesNativeFromBatchOne() {
        for (TensorType type : TensorType.values()) {
            assertThat(VectorLanes.nativeBatch(type)).as("%s", type)
                    .isEqualTo(type.source() == null ? Integer.MAX_VALUE : 1);
        }
        assertThat(VectorLanes.nativeBatch(TensorType.Q5_K_X16)).isEqualTo(1);
        assertThat(VectorLanes.nativeBatch(TensorType.Q5_K)).isEqualTo(Integer.MAX_VALUE);
    }

    @Test
    void runsWhereTheBuildHadACompilerAndTheCpuTheFeatures() throws IOException {
        String reason = NativeInt8.reasonNotToLoad(System.getProperty(NativeInt8.PROPERTY),
                System.getProperty("os.arch"), cpuFlags());
        boolean compiler = onPath("gcc");
        assertThat(NativeInt8.available())
                .as("native int8 kernels running; gcc on the path: %s; the CPU's reason not to: %s", compiler, reason)
                .isEqualTo(compiler && reason == null);
        assertThat(NativeInt8.class.getResource(NativeInt8.RESOURCE) != null)
                .as("the build's library on the class path where gcc is on the path (off x86-64 it never is)")
                .isEqualTo(compiler && isX86());
    }

    @Test
    void saysWhatIsMissing() {
        assertThat(NativeInt8.reasonNotToLoad(null, "amd64", FEATURES)).isNull();
        assertThat(NativeInt8.reasonNotToLoad("false", "amd64", FEATURES)).isEqualTo("tandem.kernels.native=false");
        assertThat(NativeInt8.reasonNotToLoad(null, "aarch64", FEATURES)).contains("aarch64");
        assertThat(NativeInt8.reasonNotToLoad(null, "amd64", List.of("avx", "fma", "f16c"))).contains("avx2");
        assertThat(NativeInt8.reasonNotToLoad(null, "x86_64", List.of("avx2", "f16c"))).contains("fma");
        assertThat(NativeInt8.reasonNotToLoad(null, "amd64", null)).contains("/proc/cpuinfo");
    }

    /**
     * The native kernel of {@code type} (an interleaved type) on the whole groups of random rows
     * (the groups from {@code first}), against its scalar twin row by row, at batches 1 to 9:
     * every bit equal. Block counts odd and even; the rows after the last group are the twin's
     * alone (the dispatch never hands them to the native kernel).
     */
    @ParameterizedTest(name = "{0}, rows = {1}, cols = {2}, from row {3}")
    @CsvSource({
        "Q5_K_X16, 16, 256, 0", "Q5_K_X16, 48, 768, 16", "Q5_K_X16, 37, 1280, 0",
        "Q2_K_X16, 16, 256, 0", "Q2_K_X16, 48, 768, 16", "Q2_K_X16, 37, 1280, 0",
        "Q3_K_X16, 16, 256, 0", "Q3_K_X16, 48, 768, 16", "Q3_K_X16, 37, 1280, 0",
        "IQ4_XS_X16, 16, 256, 0", "IQ4_XS_X16, 48, 768, 16", "IQ4_XS_X16, 37, 1280, 0",
        "IQ4_NL_X16, 16, 32, 0", "IQ4_NL_X16, 48, 224, 16", "IQ4_NL_X16, 37, 896, 0",
        "Q4_1_X16, 16, 32, 0", "Q4_1_X16, 48, 224, 16", "Q4_1_X16, 37, 896, 0",
        "Q5_1_X16, 16, 32, 0", "Q5_1_X16, 48, 224, 16", "Q5_1_X16, 37, 896, 0"
    })
    void newKernelsEqualTheirScalarTwinsBitForBit(TensorType type, int rows, int cols, int first) {
        assumeTrue(NativeInt8.available(), "the native kernels do not run here");
        try (Tensors t = new Tensors(rows * 31L + cols + type.ordinal())) {
            MemorySegment w = interleaved(t, type, GgufBlocks.random(t, type.source(), (long) rows * cols), rows, cols);
            for (int batch = 1; batch <= 9; batch++) {
                MemorySegment x = t.f32(t.uniform(batch * cols, -2f, 2f));
                assertNativeEqualsTwin(t, type, w, x, rows, cols, batch, first, type + " batch " + batch);
            }
        }
    }

    /**
     * Every quant byte of every block 0xff (the largest quants: q5_K's and q5_1's 31, q3_K's 3 with
     * the mask bit set, iq4's 113) or 0x00 (the smallest: 0, q3_K's -4, iq4's -127), row by row,
     * against inputs of 127 in every lane or 127 and -127 alternating: the sums that would wrap an
     * int16 lane first. Native and twin equal bit for bit.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"Q5_K_X16", "Q2_K_X16", "Q3_K_X16", "IQ4_XS_X16", "IQ4_NL_X16", "Q4_1_X16", "Q5_1_X16"})
    void extremeQuantsEqualTheScalarTwinBitForBit(TensorType type) {
        assumeTrue(NativeInt8.available(), "the native kernels do not run here");
        TensorType file = type.source();
        int rows = 32;
        int cols = 768;
        int[] quants = switch (file) { // the block's bytes [from, to) that hold quants
            case Q5_K -> new int[] {16, 176};
            case Q2_K -> new int[] {16, 80};
            case Q3_K -> new int[] {0, 96};
            case IQ4_XS -> new int[] {8, 136};
            case IQ4_NL -> new int[] {2, 18};
            case Q4_1 -> new int[] {4, 20};
            case Q5_1 -> new int[] {4, 24};
            default -> throw new AssertionError(file);
        };
        try (Tensors t = new Tensors(7 + type.ordinal())) {
            MemorySegment q = GgufBlocks.random(t, file, (long) rows * cols);
            long rowBytes = file.rowBytes(cols);
            for (int r = 0; r < rows; r++) {
                for (int b = 0; b < cols / file.blockSize(); b++) {
                    for (int j = quants[0]; j < quants[1]; j++) {
                        q.set(LittleEndian.I8, PAD + r * rowBytes + (long) b * file.blockBytes() + j,
                                (byte) (r % 2 == 0 ? 0xff : 0x00));
                    }
                }
            }
            MemorySegment w = interleaved(t, type, q, rows, cols);
            for (int batch = 1; batch <= 5; batch++) {
                MemorySegment x = t.f32(GgufBlocks.extremeInputs(batch, cols));
                assertNativeEqualsTwin(t, type, w, x, rows, cols, batch, 0, type + " batch " + batch);
            }
        }
    }

    private static MemorySegment interleaved(Tensors t, TensorType type, MemorySegment q, int rows, int cols) {
        MemorySegment x16 = t.allocate(type.rowBytes(cols) * rows);
        SCALAR.interleave(type.source(), q, PAD, x16, PAD, rows, cols);
        return x16;
    }

    private static void assertNativeEqualsTwin(Tensors t, TensorType type, MemorySegment w, MemorySegment x,
            int rows, int cols, int batch, int first, String what) {
        int blocks = cols / type.blockSize();
        int groups = (rows - first) / 16;
        Q4_0X16.Inputs in = Q4_0X16.quantized(x, PAD, batch, cols);
        MemorySegment out = t.allocate((long) batch * rows * Float.BYTES);
        NativeInt8.x16(type, w, PAD, first, groups, blocks, in, batch, cols, out, PAD, rows);
        float[] got = new float[batch * groups * 16];
        float[] expected = new float[got.length];
        for (int b = 0; b < batch; b++) {
            for (int k = 0; k < groups * 16; k++) {
                int r = first + k;
                got[b * groups * 16 + k] = out.get(LittleEndian.F32, PAD + ((long) b * rows + r) * Float.BYTES);
                expected[b * groups * 16 + k] = twin(type, w, rows, blocks, r, in, b, cols);
            }
        }
        Tensors.assertIdentical(what, got, expected);
    }

    private static float twin(TensorType type, MemorySegment w, int rows, int blocks, int r, Q4_0X16.Inputs in,
            int b, int cols) {
        int qBase = b * cols;
        int blockBase = b * (cols / 32);
        return switch (type) {
            case Q5_K_X16 -> Q5_KX16.row(w, PAD, rows, blocks, r, in, qBase, blockBase);
            case Q2_K_X16, Q3_K_X16 -> LowBitsKX16.row(type == TensorType.Q3_K_X16, w, PAD, rows, blocks, r, in, qBase,
                    blockBase);
            case IQ4_NL_X16, IQ4_XS_X16 -> Iq4X16.row(type == TensorType.IQ4_XS_X16, w, PAD, rows, blocks, r, in, qBase,
                    blockBase);
            case Q4_1_X16, Q5_1_X16 -> SmallBlocksX16.row(type.source(), w, PAD, rows, blocks, r, in, qBase, blockBase);
            default -> throw new AssertionError(type);
        };
    }

    private static boolean isX86() {
        String arch = System.getProperty("os.arch");
        return arch.equals("amd64") || arch.equals("x86_64");
    }

    private static boolean onPath(String command) {
        String path = System.getenv("PATH");
        if (path == null) {
            return false;
        }
        return Arrays.stream(path.split(File.pathSeparator))
                .anyMatch(dir -> !dir.isEmpty() && Files.isExecutable(Path.of(dir, command)));
    }

    private static List<String> cpuFlags() throws IOException {
        Path cpuinfo = Path.of("/proc/cpuinfo");
        if (!Files.isReadable(cpuinfo)) {
            return null;
        }
        return Files.readAllLines(cpuinfo).stream().filter(l -> l.startsWith("flags")).findFirst()
                .map(l -> Arrays.asList(l.substring(l.indexOf(':') + 1).trim().split("\\s+"))).orElse(null);
    }
}
