package dev.tandem.kernels;

import dev.tandem.kernels.vector.VectorOps;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The main class {@link VectorWidthTest} starts with a capped {@code -XX:MaxVectorSize}: it runs the
 * vector-against-scalar tests at the narrower preferred species, where q8_0 widens 16 bytes to two
 * or four float vectors instead of one, and prints one line per failure and a summary.
 */
final class VectorWidthProbe {

    private VectorWidthProbe() {}

    public static void main(String[] args) {
        Map<String, Runnable> checks = new LinkedHashMap<>();
        NormRopeElementwiseTest elementwise = new NormRopeElementwiseTest();
        AttentionOpsTest attention = new AttentionOpsTest();
        SamplingOpsTest sampling = new SamplingOpsTest();
        for (int size : Tensors.SIZES) {
            checks.put("rmsnorm n " + size, () -> elementwise.vectorRmsnormMatchesScalarAndTheDefinition(size));
            checks.put("siluMul n " + size, () -> elementwise.vectorSiluMulMatchesScalar(size));
            checks.put("qk headDim " + size, () -> attention.vectorQkMatchesScalar(size));
            checks.put("softmaxPrepare n " + size, () -> attention.vectorSoftmaxPrepareMatchesScalar(size));
            checks.put("pv headDim " + size, () -> attention.vectorPvMatchesScalar(size));
            checks.put(
                    "online headDim " + size, () -> attention.vectorOnlineUpdateAndNormalizeAreIdenticalToScalar(size));
            checks.put(
                    "argmax n " + size, () -> sampling.argmaxFindsTheMaximumInTheScalarTailAndInNegativeValues(size));
            checks.put("sample n " + size, () -> sampling.vectorSamplingMatchesScalarProbabilitiesAndTokens(size));
        }
        for (int cols : new int[] {32, 96, 544, 4096}) {
            checks.put(
                    "embedQ8_0 dim " + cols,
                    () -> elementwise.embeddingQ8DequantizesTheRowIdenticallyInBothImplementations(cols));
        }
        Q4_0X16Test x16 = new Q4_0X16Test();
        for (int[] shape : new int[][] {{16, 512, 0, 16}, {37, 1024, 16, 37}, {48, 96, 3, 35}, {64, 4096, 0, 64}}) {
            checks.put("matmulQ4_0_X16 " + java.util.Arrays.toString(shape),
                    () -> x16.vectorMatchesScalarBitForBit(shape[0], shape[1], shape[2], shape[3]));
        }
        checks.put("matmulQ4_0_X16 input rounding", x16::quantizationOfInputsRoundsAsDocumented);
        checks.put("matmulQ4_0_X16 every kind of scale", x16::everyKindOfScaleWidensAsTheScalarTwin);
        checks.put("matmulQ4_0_X16 extreme sums", x16::extremeNibblesAndQuantsDoNotWrapTheShortSums);
        Q4_KX16Test k16 = new Q4_KX16Test();
        for (int[] shape : new int[][] {{16, 256, 0, 16}, {37, 1024, 16, 37}, {48, 256, 3, 35}, {32, 4096, 0, 32}}) {
            checks.put("matmulQ4_K_X16 " + java.util.Arrays.toString(shape),
                    () -> k16.vectorMatchesScalarBitForBit(shape[0], shape[1], shape[2], shape[3]));
        }
        checks.put("matmulQ4_K_X16 extreme sums", k16::extremeNibblesAndScalesGiveTheExactSum);
        Q8_0X16Test q16 = new Q8_0X16Test();
        for (int[] shape : new int[][] {{16, 512, 0, 16}, {37, 1024, 16, 37}, {48, 96, 3, 35}, {64, 4096, 0, 64}}) {
            checks.put("matmulQ8_0_X16 " + java.util.Arrays.toString(shape),
                    () -> q16.vectorMatchesScalarBitForBit(shape[0], shape[1], shape[2], shape[3]));
        }
        checks.put("matmulQ8_0_X16 every kind of scale", q16::everyKindOfScaleWidensAsTheScalarTwin);
        FloatsX16Test floats = new FloatsX16Test();
        for (int[] shape : new int[][] {{16, 64, 0, 16}, {101, 33, 16, 101}, {96, 17, 3, 93}, {128, 1024, 0, 128}}) {
            checks.put("matmulF32_X16/F16_X16/BF16_X16 " + java.util.Arrays.toString(shape),
                    () -> floats.vectorMatchesScalarBitForBit(shape[0], shape[1], shape[2], shape[3]));
        }
        checks.put("matmulF32_X16/F16_X16/BF16_X16 alone and among others", floats::anInputGetsTheSameBitsAloneAndAmongOthers);
        checks.put("matmulF32_X16/F16_X16/BF16_X16 every kind of value", floats::everyKindOfValueGivesTheScalarTwinsBits);
        for (int headDim : new int[] {2, 8, 30, 34, 128}) {
            checks.put("rope headDim " + headDim, () -> elementwise.vectorRopeIsIdenticalToScalar(headDim));
        }
        QuantOpsTest quant = new QuantOpsTest();
        for (TensorType type : TensorType.values()) {
            if (!type.inFiles()) {
                continue;
            }
            for (int count : new int[] {1, 3, 17}) {
                checks.put(
                        "dequantize " + type + " x" + count,
                        () -> quant.vectorDequantizationIsIdenticalToScalar(type, count * type.blockSize()));
            }
        }
        checks.put("dequantize every f16", quant::everyF16BitPatternWidensExactly);
        checks.put("argmax NaN", () -> sampling.argmaxRejectsNaNNamingItsFirstIndex(130));
        checks.put(
                "paged attention",
                () -> new PagedAttentionTest()
                        .pagedPiecesComposeToFullAttention(
                                "vector", PagedAttentionTest.Layout.HEADS_INTERLEAVED, new int[] {33, 64, 128, 15}));

        System.out.println("vector kernels: " + VectorOps.INSTANCE.name());
        int failures = 0;
        for (Map.Entry<String, Runnable> check : checks.entrySet()) {
            try {
                check.getValue().run();
            } catch (AssertionError | RuntimeException failure) {
                failures++;
                System.out.println("FAILED " + check.getKey() + ": " + failure);
            }
        }
        System.out.println("checks: " + checks.size() + ", failures: " + failures);
        System.exit(failures == 0 ? 0 : 1);
    }
}
