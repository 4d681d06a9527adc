package dev.tandem.kernels;

import static dev.tandem.kernels.Tensors.PAD;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every kernel rejects each bad argument, in both implementations, with a message naming the kernel, the argument
 * and the limit.
 */
class ArgumentChecksTest {

    private static final Tensors T = new Tensors(0);

    /** Segments that each hold 64 f32 (or 256 bytes) after the pad. */
    private static final MemorySegment A = T.allocate(256);

    private static final MemorySegment B = T.allocate(256);
    private static final MemorySegment C = T.allocate(256);
    private static final MemorySegment SMALL = T.allocate(8);

    @AfterAll
    static void close() {
        T.close();
    }

    private record Case(String message, Consumer<KernelOps> call) {}

    private static List<Case> cases() {
        List<Case> cases = new ArrayList<>();
        // matmul
        cases.add(new Case(
                "matmulF32_X16: rows = -1 must be >= 0", ops -> ops.matmulF32_X16(A, PAD, B, PAD, C, PAD, -1, 4, 1, 0, 0)));
        cases.add(new Case(
                "matmulF32_X16: batch = -2 must be >= 0", ops -> ops.matmulF32_X16(A, PAD, B, PAD, C, PAD, 4, 4, -2, 0, 4)));
        cases.add(new Case(
                "matmulF32_X16: rowStart = 5 is outside [0, rows = 4]",
                ops -> ops.matmulF32_X16(A, PAD, B, PAD, C, PAD, 4, 4, 1, 5, 5)));
        cases.add(new Case(
                "matmulF32_X16: rowEnd = 5 is outside [rowStart = 1, rows = 4]",
                ops -> ops.matmulF32_X16(A, PAD, B, PAD, C, PAD, 4, 4, 1, 1, 5)));
        cases.add(new Case(
                "matmulF32_X16: rowEnd = 0 is outside [rowStart = 1, rows = 4]",
                ops -> ops.matmulF32_X16(A, PAD, B, PAD, C, PAD, 4, 4, 1, 1, 0)));
        cases.add(new Case(
                "matmulF32_X16: weights segment of 268 bytes is too small: 320 bytes needed at weightsOffset = 12",
                ops -> ops.matmulF32_X16(A, PAD, B, PAD, C, PAD, 10, 8, 1, 0, 10)));
        cases.add(new Case(
                "matmulF32_X16: x segment of 268 bytes is too small: 288 bytes needed at xOffset = 12",
                ops -> ops.matmulF32_X16(A, PAD, B, PAD, C, PAD, 2, 8, 9, 0, 2)));
        cases.add(new Case(
                "matmulF32_X16: out segment of 20 bytes is too small: 16 bytes needed at outOffset = 12",
                ops -> ops.matmulF32_X16(A, PAD, B, PAD, SMALL, PAD, 4, 4, 1, 0, 4)));
        cases.add(new Case(
                "matmulF32_X16: xOffset = -4 must be >= 0", ops -> ops.matmulF32_X16(A, PAD, B, -4, C, PAD, 4, 4, 1, 0, 4)));
        cases.add(new Case(
                "matmulF32_X16: weights segment is null", ops -> ops.matmulF32_X16(null, 0, B, PAD, C, PAD, 4, 4, 1, 0, 4)));
        cases.add(new Case(
                "matmulQ8_0_X16: cols = 33 must be a multiple of the q8_0_x16 block size 32",
                ops -> ops.matmulQ8_0_X16(A, PAD, B, PAD, C, PAD, 1, 33, 1, 0, 1)));
        cases.add(new Case(
                "matmulQ8_0_X16: weights segment of 268 bytes is too small: 272 bytes needed at weightsOffset = 12",
                ops -> ops.matmulQ8_0_X16(A, PAD, B, PAD, C, PAD, 8, 32, 1, 0, 8)));
        cases.add(new Case(
                "matmulQ4_0_X16: cols = 48 must be a multiple of the q4_0_x16 block size 32",
                ops -> ops.matmulQ4_0_X16(A, PAD, B, PAD, C, PAD, 1, 48, 1, 0, 1)));
        cases.add(new Case(
                "matmulQ4_0_X16: weights segment of 268 bytes is too small: 288 bytes needed at weightsOffset = 12",
                ops -> ops.matmulQ4_0_X16(A, PAD, B, PAD, C, PAD, 16, 32, 1, 0, 16)));
        cases.add(new Case(
                "matmulQ4_0_X16: x segment of 268 bytes is too small: 512 bytes needed at xOffset = 12",
                ops -> ops.matmulQ4_0_X16(A, PAD, B, PAD, C, PAD, 1, 128, 1, 0, 1)));
        cases.add(new Case(
                "matmulQ4_0_X16: out segment of 20 bytes is too small: 16 bytes needed at outOffset = 12",
                ops -> ops.matmulQ4_0_X16(A, PAD, B, PAD, SMALL, PAD, 4, 32, 1, 0, 4)));
        cases.add(new Case(
                "matmulQ4_0_X16: rowEnd = 3 is outside [rowStart = 0, rows = 2]",
                ops -> ops.matmulQ4_0_X16(A, PAD, B, PAD, C, PAD, 2, 32, 1, 0, 3)));
        cases.add(new Case(
                "matmulQ4_K_X16: cols = 128 must be a multiple of the q4_K_x16 block size 256",
                ops -> ops.matmulQ4_K_X16(A, PAD, B, PAD, C, PAD, 1, 128, 1, 0, 1)));
        cases.add(new Case(
                "matmulQ4_K_X16: weights segment of 268 bytes is too small: 288 bytes needed at weightsOffset = 12",
                ops -> ops.matmulQ4_K_X16(A, PAD, B, PAD, C, PAD, 2, 256, 1, 0, 2)));
        cases.add(new Case(
                "matmulQ6_K_X16: cols = 128 must be a multiple of the q6_K_x16 block size 256",
                ops -> ops.matmulQ6_K_X16(A, PAD, B, PAD, C, PAD, 1, 128, 1, 0, 1)));
        cases.add(new Case(
                "matmulQ6_K_X16: weights segment of 268 bytes is too small: 420 bytes needed at weightsOffset = 12",
                ops -> ops.matmulQ6_K_X16(A, PAD, B, PAD, C, PAD, 2, 256, 1, 0, 2)));
        cases.add(new Case(
                "matmulQ6_K_X16: x segment of 268 bytes is too small: 2048 bytes needed at xOffset = 12",
                ops -> ops.matmul(TensorType.Q6_K_X16, A, PAD, B, PAD, C, PAD, 1, 256, 2, 0, 1)));
        cases.add(new Case("matmul: type = Q8_0 runs in its interleaved layout only, Q8_0_X16 (QuantOps.interleave makes it)",
                ops -> ops.matmul(TensorType.Q8_0, A, PAD, B, PAD, C, PAD, 1, 32, 1, 0, 1)));
        cases.add(new Case(
                "matmul: type is null", ops -> ops.matmul(null, A, PAD, B, PAD, C, PAD, 1, 256, 1, 0, 1)));
        cases.add(new Case("embed q4_0: token = 5 is outside [0, rows = 5)",
                ops -> ops.embed(TensorType.Q4_0, A, PAD, C, PAD, 5, 32, 5)));
        cases.add(new Case("embed q4_K: dim = 32 must be a multiple of the q4_K block size 256",
                ops -> ops.embed(TensorType.Q4_K, A, PAD, C, PAD, 1, 32, 0)));
        cases.add(new Case(
                "embed q4_0: table segment of 268 bytes is too small: 288 bytes needed at tableOffset = 12",
                ops -> ops.embed(TensorType.Q4_0, A, PAD, C, PAD, 16, 32, 0)));
        // norm, rope, element-wise
        cases.add(new Case("rmsnorm: n = -1 must be >= 0", ops -> ops.rmsnorm(A, PAD, B, PAD, C, PAD, -1, 1e-5f)));
        cases.add(new Case(
                "rmsnorm: eps = NaN must be finite and >= 0",
                ops -> ops.rmsnorm(A, PAD, B, PAD, C, PAD, 4, Float.NaN)));
        cases.add(new Case(
                "rmsnorm: out segment of 20 bytes is too small: 16 bytes needed at outOffset = 12",
                ops -> ops.rmsnorm(A, PAD, B, PAD, SMALL, PAD, 4, 1e-5f)));
        cases.add(new Case(
                "rope: headDim = 7 must be even (rope rotates pairs)", ops -> ops.rope(A, PAD, 1, 7, 0, 10000f)));
        cases.add(new Case("rope: heads = -1 must be >= 0", ops -> ops.rope(A, PAD, -1, 8, 0, 10000f)));
        cases.add(new Case("rope: position = -3 must be >= 0", ops -> ops.rope(A, PAD, 1, 8, -3, 10000f)));
        cases.add(new Case("rope: theta = 0.0 must be finite and > 0", ops -> ops.rope(A, PAD, 1, 8, 0, 0f)));
        cases.add(new Case(
                "rope: x segment of 268 bytes is too small: 512 bytes needed at xOffset = 12",
                ops -> ops.rope(A, PAD, 4, 32, 0, 10000f)));
        cases.add(new Case("siluMul: n = -1 must be >= 0", ops -> ops.siluMul(A, PAD, B, PAD, C, PAD, -1)));
        cases.add(new Case(
                "siluMul: up segment of 20 bytes is too small: 16 bytes needed at upOffset = 12",
                ops -> ops.siluMul(A, PAD, SMALL, PAD, C, PAD, 4)));
        cases.add(new Case(
                "residualAdd: delta segment of 268 bytes is too small: 256 bytes needed at deltaOffset = 16",
                ops -> ops.residualAdd(A, PAD, B, PAD + 4, 64)));
        // embedding
        cases.add(
                new Case("embedF32: token = 4 is outside [0, rows = 4)", ops -> ops.embedF32(A, PAD, B, PAD, 4, 8, 4)));
        cases.add(new Case(
                "embedF32: token = -1 is outside [0, rows = 4)", ops -> ops.embedF32(A, PAD, B, PAD, 4, 8, -1)));
        cases.add(new Case(
                "embedF32: table segment of 268 bytes is too small: 320 bytes needed at tableOffset = 12",
                ops -> ops.embedF32(A, PAD, B, PAD, 10, 8, 0)));
        cases.add(new Case(
                "embedQ8_0: dim = 48 must be a multiple of the q8_0 block size 32",
                ops -> ops.embedQ8_0(A, PAD, B, PAD, 2, 48, 0)));
        // argmax and sampling
        cases.add(new Case("argmax: n = 0 must be >= 1", ops -> ops.argmax(A, PAD, 0)));
        cases.add(new Case(
                "argmax: values segment of 20 bytes is too small: 12 bytes needed at valuesOffset = 12",
                ops -> ops.argmax(SMALL, PAD, 3)));
        cases.add(new Case(
                "sample: temperature = -1.0 must be finite and >= 0",
                ops -> ops.sample(A, PAD, B, PAD, 4, -1f, 0.9f, 0)));
        cases.add(new Case("sample: topP = 0.0 is outside (0, 1]", ops -> ops.sample(A, PAD, B, PAD, 4, 1f, 0f, 0)));
        cases.add(new Case("sample: topP = 1.5 is outside (0, 1]", ops -> ops.sample(A, PAD, B, PAD, 4, 1f, 1.5f, 0)));
        cases.add(new Case(
                "sample: probs segment of 20 bytes is too small: 16 bytes needed at probsOffset = 12",
                ops -> ops.sample(A, PAD, SMALL, PAD, 4, 1f, 0.9f, 0)));
        // paged attention
        cases.add(new Case(
                "qk: rowStride = 4 is less than headDim = 8", ops -> ops.qk(A, PAD, B, PAD, C, PAD, 8, 4, 2, 1f)));
        cases.add(new Case("qk: validRows = -1 must be >= 0", ops -> ops.qk(A, PAD, B, PAD, C, PAD, 8, 8, -1, 1f)));
        cases.add(new Case(
                "qk: keys segment of 268 bytes is too small: 316 bytes needed at keysOffset = 12",
                ops -> ops.qk(A, PAD, B, PAD, C, PAD, 9, 10, 8, 1f)));
        cases.add(new Case(
                "qk: scale = Infinity must be finite",
                ops -> ops.qk(A, PAD, B, PAD, C, PAD, 8, 8, 2, Float.POSITIVE_INFINITY)));
        cases.add(new Case(
                "softmaxPrepare: blockStats segment of 20 bytes is too small: 8 bytes needed at blockStatsOffset = 16",
                ops -> ops.softmaxPrepare(A, PAD, SMALL, PAD + 4, 4)));
        cases.add(new Case("pv: n = -1 must be >= 0", ops -> ops.pv(A, PAD, B, PAD, C, PAD, 8, 8, -1)));
        cases.add(new Case(
                "pv: values segment of 268 bytes is too small: 288 bytes needed at valuesOffset = 12",
                ops -> ops.pv(A, PAD, B, PAD, C, PAD, 8, 8, 9)));
        cases.add(new Case(
                "widenF16: halves segment of 268 bytes is too small: 318 bytes needed at halvesOffset = 12",
                ops -> ops.widenF16(B, PAD, 9, 10, 16, C, PAD)));
        cases.add(new Case(
                "widenF16: rowStride = 4 is less than headDim = 8", ops -> ops.widenF16(B, PAD, 8, 4, 2, C, PAD)));
        cases.add(new Case(
                "widenF16: out segment of 268 bytes is too small: 288 bytes needed at outOffset = 12",
                ops -> ops.widenF16(B, PAD, 8, 8, 9, C, PAD)));
        cases.add(new Case("onlineInit: headDim = -1 must be >= 0", ops -> ops.onlineInit(A, PAD, B, PAD, -1)));
        cases.add(new Case(
                "onlineUpdate: partial segment of 20 bytes is too small: 16 bytes needed at partialOffset = 12",
                ops -> ops.onlineUpdate(A, PAD, B, PAD, C, PAD, SMALL, PAD, 4)));
        cases.add(new Case(
                "normalize: out segment of 20 bytes is too small: 32 bytes needed at outOffset = 12",
                ops -> ops.normalize(A, PAD, B, PAD, SMALL, PAD, 8)));
        // dequantize and quantize
        cases.add(new Case(
                "dequantize: type is null", ops -> ops.dequantize(null, A, PAD, B, PAD, 32)));
        cases.add(new Case(
                "dequantize: elements = -1 must be >= 0",
                ops -> ops.dequantize(TensorType.F16, A, PAD, B, PAD, -1)));
        cases.add(new Case(
                "dequantize: elements = 100 must be a multiple of the Q4_K block size 256",
                ops -> ops.dequantize(TensorType.Q4_K, A, PAD, B, PAD, 100)));
        cases.add(new Case(
                "dequantize: elements = 33 must be a multiple of the Q8_0 block size 32",
                ops -> ops.dequantize(TensorType.Q8_0, A, PAD, B, PAD, 33)));
        cases.add(new Case(
                "dequantize: src segment of 268 bytes is too small: 288 bytes needed at srcOffset = 12",
                ops -> ops.dequantize(TensorType.Q4_0, A, PAD, B, PAD, 512)));
        cases.add(new Case(
                "dequantize: dst segment of 20 bytes is too small: 128 bytes needed at dstOffset = 12",
                ops -> ops.dequantize(TensorType.Q8_0, A, PAD, SMALL, PAD, 32)));
        cases.add(new Case(
                "dequantize: srcOffset = -1 must be >= 0",
                ops -> ops.dequantize(TensorType.F32, A, -1, B, PAD, 4)));
        cases.add(new Case(
                "dequantize: src segment of 268 bytes is too small: 4 bytes needed at srcOffset = 300",
                ops -> ops.dequantize(TensorType.BF16, A, 300, B, PAD, 2)));
        cases.add(new Case(
                "dequantize: dst segment is null", ops -> ops.dequantize(TensorType.Q6_K, A, PAD, null, PAD, 0)));
        // The names in overflow messages are put together only when thrown; they still say which product.
        cases.add(new Case(
                "matmulF32_X16: rows * cols bytes = 4611686014132420609 * 4 overflows a long",
                ops -> ops.matmulF32_X16(A, PAD, B, PAD, C, PAD, Integer.MAX_VALUE, Integer.MAX_VALUE, 1, 0, 0)));
        cases.add(new Case(
                "dequantize: blocks * block bytes = 9223372036854775807 * 4 overflows a long",
                ops -> ops.dequantize(TensorType.F32, A, PAD, B, PAD, Long.MAX_VALUE)));
        cases.add(new Case(
                "quantize: type = Q4_K has no quantizer; tandem quantizes to F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1",
                ops -> ops.quantize(TensorType.Q4_K, A, PAD, B, PAD, 256)));
        cases.add(new Case(
                "quantize: type = Q6_K has no quantizer; tandem quantizes to F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1",
                ops -> ops.quantize(TensorType.Q6_K, A, PAD, B, PAD, 0)));
        cases.add(new Case(
                "quantize: elements = 48 must be a multiple of the Q4_0 block size 32",
                ops -> ops.quantize(TensorType.Q4_0, A, PAD, B, PAD, 48)));
        cases.add(new Case(
                "quantize: dst segment of 20 bytes is too small: 18 bytes needed at dstOffset = 12",
                ops -> ops.quantize(TensorType.Q4_0, A, PAD, SMALL, PAD, 32)));
        cases.add(new Case(
                "quantize: src segment of 20 bytes is too small: 64 bytes needed at srcOffset = 12",
                ops -> ops.quantize(TensorType.F16, SMALL, PAD, B, PAD, 16)));
        return cases;
    }

    static List<Arguments> casesForBothImplementations() {
        List<Arguments> arguments = new ArrayList<>();
        for (KernelOps ops : new KernelOps[] {Tensors.SCALAR, Tensors.VECTOR}) {
            for (Case c : cases()) {
                arguments.add(Arguments.of(ops.name().split(" ")[0], c.message(), ops, c.call()));
            }
        }
        return arguments;
    }

    @ParameterizedTest(name = "{0}: {1}")
    @MethodSource("casesForBothImplementations")
    void badArgumentIsRejectedWithItsMessage(String opsName, String message, KernelOps ops, Consumer<KernelOps> call) {
        assertThatThrownBy(() -> call.accept(ops))
                .as("%s kernels", opsName)
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(message);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("quantizerCases")
    void quantizerRejectsBadCounts(String message, Runnable call) {
        assertThatThrownBy(call::run)
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(message);
    }

    static List<Arguments> quantizerCases() {
        return List.of(
                Arguments.of("Q8_0.quantize: count = 33 must be a multiple of the q8_0 block size 32", (Runnable)
                        () -> Q8_0.quantize(A, PAD, B, PAD, 33)),
                Arguments.of(
                        "Q8_0.quantize: dst segment of 20 bytes is too small: 34 bytes needed at dstOffset = 12",
                        (Runnable) () -> Q8_0.quantize(A, PAD, SMALL, PAD, 32)),
                Arguments.of("Q8_0.dequantize: count = -32 must be >= 0", (Runnable)
                        () -> Q8_0.dequantize(A, PAD, B, PAD, -32)),
                Arguments.of("Q8_0.rowBytes: cols = 40 must be a non-negative multiple of 32", (Runnable)
                        () -> Q8_0.rowBytes(40)));
    }
}
