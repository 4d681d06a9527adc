package dev.tandem.llm.gguf;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tandem.CpuDeviceConfig;
import dev.tandem.RunOptions;
import dev.tandem.Token;
import dev.tandem.TokenStream;
import dev.tandem.Worker;
import dev.tandem.kernels.Ops;
import dev.tandem.kernels.TensorType;
import dev.tandem.llm.model.LlamaConfig;
import dev.tandem.llm.model.LlamaModel;
import dev.tandem.llm.model.LlamaRequest;
import dev.tandem.llm.model.LlamaWeights.Tensor;
import dev.tandem.llm.reference.LlamaReference;
import dev.tandem.llm.reference.RandomWeights;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A random Llama written as GGUF with its matrices in each tensor type the loader reads, then
 * decoded through {@link GgufModel} and {@link LlamaModel} and checked against
 * {@link LlamaReference} on the same {@code GgufModel}; plus the loader's errors for what it
 * cannot read. Q4_K and Q6_K are quantised by {@link CrudeKQuants}.
 */
class GgufTensorTypesTest {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** Every matrix width a multiple of 256, the k-quants' block. */
    static final LlamaConfig SHAPE = new LlamaConfig(256, 2, 4, 2, 512, 256, 64, 10000f, 1e-5f, TensorType.F32);

    static final int[][] PROMPTS = {{1, 65, 66, 67}, {200, 3, 3, 90, 17, 254}};

    @TempDir
    Path dir;

    Path write(String name, LlamaConfig c, GgmlType type) throws IOException {
        Path p = dir.resolve(name + ".gguf");
        new GgufCheckpointWriter(new RandomWeights(c, 11)).matrixType(type).write(p);
        return p;
    }

    @ParameterizedTest
    @ValueSource(strings = {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K",
        "Q6_K", "IQ4_NL", "IQ4_XS"})
    void everyTensorTypeDecodesAsTheReferenceOnTheSameWeights(String typeName) throws IOException {
        GgmlType type = GgmlType.byName(typeName);
        Path p = write(typeName, SHAPE, type);
        try (GgufModel weights = GgufModel.open(p); Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
            TensorType expected = TensorType.valueOf(typeName);
            assertThat(weights.config().weightType()).isEqualTo(expected);
            assertThat(weights.file().tensor("blk.1.ffn_down.weight").orElseThrow().type()).isEqualTo(type);
            checkAgainstTheReference(worker, weights);
        }
    }

    static void checkAgainstTheReference(Worker worker, GgufModel weights) {
        LlamaModel model = LlamaModel.load(worker, weights, Ops.preferred(), LlamaModel.Options.defaults());
        LlamaReference reference = new LlamaReference(weights, model.options().kvType());
        int vocab = weights.config().vocab();
        for (int[] prompt : PROMPTS) {
            LlamaRequest request = LlamaRequest.of(prompt, 12).withLogits(true);
            TokenStream stream = worker.run(model.program(), request, RunOptions.defaults().withMaxTokens(12));
            List<Integer> tokens = new ArrayList<>();
            List<float[]> logits = new ArrayList<>();
            for (Token t : stream) {
                ByteBuffer b = ByteBuffer.wrap(t.bytes()).order(ByteOrder.LITTLE_ENDIAN);
                tokens.add(b.getInt());
                float[] row = new float[vocab];
                for (int i = 0; i < vocab; i++) {
                    row[i] = b.getFloat();
                }
                logits.add(row);
            }
            int[] actual = tokens.stream().mapToInt(Integer::intValue).toArray();
            assertThat(actual).hasSize(12);
            LlamaReference.Verdict verdict = reference.verify(prompt, actual, request.sampler(), 0);
            assertThat(verdict.ok()).as("%s", verdict).isTrue();
            // Teacher-forced logits: the reference runs the stream's own tokens.
            LlamaReference.Sequence s = reference.sequence();
            float[] expected = null;
            for (int token : prompt) {
                expected = s.forward(token);
            }
            for (int k = 0; k < actual.length; k++) {
                double scale = 0;
                double worst = 0;
                for (int i = 0; i < vocab; i++) {
                    scale = Math.max(scale, Math.abs(expected[i]));
                    worst = Math.max(worst, Math.abs(expected[i] - logits.get(k)[i]));
                }
                assertThat(worst).as("step %d", k).isLessThanOrEqualTo(reference.logitTolerance() * scale);
                if (k + 1 < actual.length) {
                    expected = s.forward(actual[k]);
                }
            }
        }
    }

    /** F32, F16 and BF16 matrices reach the worker as stored (the kernels widen F16 and BF16 in their loops). */
    @ParameterizedTest
    @ValueSource(strings = {"F32", "F16", "BF16"})
    void floatTypesLoadAsStored(String typeName) throws IOException {
        GgmlType type = GgmlType.byName(typeName);
        Path p = write(typeName, SHAPE, type);
        RandomWeights random = new RandomWeights(SHAPE, 11);
        try (GgufModel weights = GgufModel.open(p)) {
            for (Tensor t : new Tensor[] {Tensor.TOKEN_EMBEDDING, Tensor.WQ, Tensor.W2, Tensor.OUTPUT}) {
                float[] original = random.tensor(t, 1).toArray(F32);
                MemorySegment stored = GgufCheckpointWriter.encode(original, type);
                MemorySegment loaded = weights.tensor(t, 1);
                assertThat(weights.type(t, 1).name()).isEqualTo(typeName);
                assertThat(loaded.byteSize()).isEqualTo(stored.byteSize());
                assertThat(loaded.mismatch(stored)).as("%s %s", typeName, t).isEqualTo(-1L);
            }
            // Norms stay f32, as written.
            assertThat(weights.tensor(Tensor.FFN_NORM, 1).toArray(F32))
                    .containsExactly(random.tensor(Tensor.FFN_NORM, 1).toArray(F32));
        }
    }

    /** A file mixing F16 with F32 matrices runs as F32, every matrix widened exactly. */
    @ParameterizedTest
    @ValueSource(strings = {"F16", "BF16"})
    void halvesMixedWithF32LoadAsTheirExactlyWidenedValues(String typeName) throws IOException {
        GgmlType type = GgmlType.byName(typeName);
        Path p = dir.resolve("mixed-" + typeName + ".gguf");
        new GgufCheckpointWriter(new RandomWeights(SHAPE, 11)).matrixType(type).type("output.weight", GgmlType.F32)
                .write(p);
        RandomWeights random = new RandomWeights(SHAPE, 11);
        try (GgufModel weights = GgufModel.open(p)) {
            assertThat(weights.config().weightType()).isEqualTo(TensorType.F32);
            for (Tensor t : new Tensor[] {Tensor.TOKEN_EMBEDDING, Tensor.WQ, Tensor.W2}) {
                float[] original = random.tensor(t, 1).toArray(F32);
                MemorySegment stored = GgufCheckpointWriter.encode(original, type);
                float[] loaded = weights.tensor(t, 1).toArray(F32);
                assertThat(loaded).hasSameSizeAs(original);
                for (int i = 0; i < loaded.length; i++) {
                    float expected = typeName.equals("F16") ? Float.float16ToFloat(stored.getAtIndex(I16, i))
                            : Float.intBitsToFloat(stored.getAtIndex(I16, i) << 16);
                    assertThat(loaded[i]).as("%s %s[%d]", typeName, t, i).isEqualTo(expected);
                }
            }
        }
    }

    /** The test quantisers write blocks the kernels decode to values close to the f32 ones. */
    @ParameterizedTest
    @ValueSource(strings = {"Q8_0:0.02", "Q4_0:0.12", "Q4_1:0.12", "Q5_0:0.06", "Q5_1:0.06", "Q4_K:0.12", "Q5_K:0.06",
        "Q6_K:0.04", "IQ4_NL:0.12", "IQ4_XS:0.12", "Q2_K:0.5", "Q3_K:0.3"})
    void quantisedBlocksDecodeCloseToTheOriginal(String spec) {
        GgmlType type = GgmlType.byName(spec.split(":")[0]);
        double bound = Double.parseDouble(spec.split(":")[1]);
        float[] original = new RandomWeights(SHAPE, 11).tensor(Tensor.W1, 0).toArray(F32);
        MemorySegment q = GgufCheckpointWriter.encode(original, type);
        MemorySegment back = Arena.ofAuto().allocate((long) original.length * Float.BYTES);
        Ops.scalar().dequantize(TensorType.valueOf(type.name()), q, 0, back, 0, original.length);
        double err = 0;
        double norm = 0;
        for (int i = 0; i < original.length; i++) {
            double d = back.getAtIndex(F32, i) - original[i];
            err += d * d;
            norm += (double) original[i] * original[i];
        }
        assertThat(Math.sqrt(err / norm)).as("relative RMS error of %s", type.name()).isLessThan(bound).isPositive();
    }

    /**
     * llama.cpp's own Q4_0 and Q4_K_M files keep some matrices in Q6_K (the classifier, the value
     * and down projections of some layers): such a model is Q8_0 by its label, but every matrix
     * of every layer runs as stored, including a value projection (inside the fused q/k/v task)
     * and a down projection whose layers differ, and the worker holds exactly the file's bytes.
     */
    @ParameterizedTest
    @ValueSource(strings = {"Q4_0", "Q4_K"})
    void aFourBitFileWithSomeQ6KMatricesRunsEveryLayerAsStored(String base) throws IOException {
        TensorType stored = TensorType.valueOf(base);
        Path p = dir.resolve("mixed-" + base + ".gguf");
        new GgufCheckpointWriter(new RandomWeights(SHAPE, 11)).matrixType(GgmlType.byName(base))
                .type("output.weight", GgmlType.Q6_K)
                .type("blk.0.attn_v.weight", GgmlType.Q6_K)
                .type("blk.1.ffn_down.weight", GgmlType.Q6_K)
                .write(p);
        try (GgufModel weights = GgufModel.open(p); Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
            assertThat(weights.config().weightType()).isEqualTo(TensorType.Q8_0);
            long matrixBytes = 0;
            for (Tensor t : new Tensor[] {Tensor.TOKEN_EMBEDDING, Tensor.WQ, Tensor.WK, Tensor.WV, Tensor.WO,
                    Tensor.W1, Tensor.W2, Tensor.W3, Tensor.OUTPUT}) {
                for (int l = 0; l < (t.perLayer() ? SHAPE.layers() : 1); l++) {
                    GgufTensor file = weights.file().tensor(GgufModel.name(t, l)).orElseThrow();
                    boolean six = t == Tensor.OUTPUT || (t == Tensor.WV && l == 0) || (t == Tensor.W2 && l == 1);
                    assertThat(file.type()).isEqualTo(six ? GgmlType.Q6_K : GgmlType.byName(base));
                    assertThat(weights.type(t, l)).as("%s layer %d", t, l).isEqualTo(six ? TensorType.Q6_K : stored);
                    assertThat(weights.tensor(t, l).byteSize()).as("%s layer %d bytes", t, l).isEqualTo(file.bytes());
                    matrixBytes += file.bytes();
                }
            }
            LlamaModel model = LlamaModel.load(worker, weights, Ops.preferred(), LlamaModel.Options.defaults());
            assertThat(model.weightType(Tensor.WV, 0)).isEqualTo(TensorType.Q6_K);
            assertThat(model.weightType(Tensor.WV, 1)).isEqualTo(stored);
            assertThat(model.weightType(Tensor.W2, 1)).isEqualTo(TensorType.Q6_K);
            assertThat(model.weightBytes()).isEqualTo(matrixBytes + normBytes(SHAPE));
            checkAgainstTheReference(worker, weights);
        }
    }

    /**
     * What {@code llama-quantize ... Q4_K_M} writes for a model whose width is not a multiple of
     * 256 (Qwen2.5-0.5B's 896): the matrices with rows of {@code dim} values fall back from Q4_K to
     * Q5_0 (the embedding among them) and from Q6_K to Q8_0 (the classifier), while rows of the FFN
     * width stay Q4_K and Q6_K. Every matrix runs as stored, the Q5_0 embedding's rows are looked
     * up, and the decode equals the reference.
     */
    @Test
    void aQ4KMFileWithQ5_0FallbacksRunsEveryMatrixAsStored() throws IOException {
        LlamaConfig narrow = new LlamaConfig(192, 2, 4, 2, 512, 256, 64, 10000f, 1e-5f, TensorType.F32);
        Path p = dir.resolve("q4_k_m-like.gguf");
        GgufCheckpointWriter writer = new GgufCheckpointWriter(new RandomWeights(narrow, 11))
                .matrixType(GgmlType.Q5_0).type("output.weight", GgmlType.Q8_0);
        for (int l = 0; l < narrow.layers(); l++) {
            writer.type("blk." + l + ".ffn_down.weight", l == 0 ? GgmlType.Q6_K : GgmlType.Q4_K);
        }
        writer.write(p);
        try (GgufModel weights = GgufModel.open(p); Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
            assertThat(weights.type(Tensor.TOKEN_EMBEDDING, 0)).isEqualTo(TensorType.Q5_0);
            assertThat(weights.type(Tensor.WQ, 1)).isEqualTo(TensorType.Q5_0);
            assertThat(weights.type(Tensor.W2, 1)).isEqualTo(TensorType.Q4_K);
            assertThat(weights.type(Tensor.OUTPUT, 0)).isEqualTo(TensorType.Q8_0);
            LlamaModel model = LlamaModel.load(worker, weights, Ops.preferred(), LlamaModel.Options.defaults());
            assertThat(model.weightType(Tensor.W1, 0)).isEqualTo(TensorType.Q5_0);
            checkAgainstTheReference(worker, weights);
        }
    }

    /** Bytes of the f32 vectors of a model of {@code c}. */
    private static long normBytes(LlamaConfig c) {
        long bytes = 0;
        for (Tensor t : Tensor.values()) {
            if (t.present(c) && t.norm()) {
                bytes += t.bytes(c) * (t.perLayer() ? c.layers() : 1);
            }
        }
        return bytes;
    }

    /** The gate and up projections share their row blocks, sized by the wider rows, even when their types differ. */
    @Test
    void gateAndUpProjectionsOfDifferentTypesBothRunAsStored() throws IOException {
        Path p = dir.resolve("gate-up.gguf");
        GgufCheckpointWriter writer = new GgufCheckpointWriter(new RandomWeights(SHAPE, 11)).matrixType(GgmlType.Q4_K);
        for (int l = 0; l < SHAPE.layers(); l++) {
            writer.type("blk." + l + ".ffn_up.weight", GgmlType.Q8_0);
        }
        writer.write(p);
        try (GgufModel weights = GgufModel.open(p); Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
            for (int l = 0; l < SHAPE.layers(); l++) {
                assertThat(weights.type(Tensor.W1, l)).isEqualTo(TensorType.Q4_K);
                assertThat(weights.type(Tensor.W3, l)).isEqualTo(TensorType.Q8_0);
                assertThat(weights.type(Tensor.W2, l)).isEqualTo(TensorType.Q4_K);
            }
            checkAgainstTheReference(worker, weights);
        }
    }

    @Test
    void tiedEmbeddingsServeAsTheClassifierWhenTheFileHasNoOutputWeight() throws IOException {
        LlamaConfig tied = SHAPE.withVariants(false, false, true);
        Path p = write("tied", tied, GgmlType.Q8_0);
        try (GgufModel weights = GgufModel.open(p); Worker worker = Worker.create(CpuDeviceConfig.withCores(2))) {
            assertThat(weights.file().tensor("output.weight")).isEmpty();
            assertThat(weights.config().tiedEmbeddings()).isTrue();
            assertThat(weights.tensor(Tensor.OUTPUT, 0).toArray(ValueLayout.JAVA_BYTE))
                    .containsExactly(weights.tensor(Tensor.TOKEN_EMBEDDING, 0).toArray(ValueLayout.JAVA_BYTE));
            checkAgainstTheReference(worker, weights);
        }
    }

    // ---- what the loader refuses -------------------------------------------------------------------

    @Test
    void aMatrixWhoseRowsAreNotWholeBlocksIsTheLoadersError() throws IOException {
        // Written as F32 of rows of 48, then retyped as Q8_0 (blocks of 32) in place.
        Path p = dir.resolve("ragged.gguf");
        new GgufCheckpointWriter(new RandomWeights(SHAPE, 11)).dims("blk.0.attn_q.weight", new long[] {48, 8}).write(p);
        patchType(p, "blk.0.attn_q.weight", GgmlType.Q8_0.id());
        assertThatThrownBy(() -> GgufModel.open(p)).isInstanceOf(GgufException.class).hasMessage(p
                + ": tensor blk.0.attn_q.weight of type Q8_0 has rows of 48 elements, not a multiple of its block size 32");
        // Q4_K of a 64-wide model: rows of 64, blocks of 256.
        LlamaConfig narrow = new LlamaConfig(64, 1, 4, 2, 128, 64, 32, 10000f, 1e-5f, TensorType.F32);
        Path k = dir.resolve("narrow.gguf");
        new GgufCheckpointWriter(new RandomWeights(narrow, 1)).write(k);
        patchType(k, "blk.0.ffn_gate.weight", GgmlType.Q4_K.id());
        assertThatThrownBy(() -> GgufModel.open(k)).isInstanceOf(GgufException.class).hasMessage(k
                + ": tensor blk.0.ffn_gate.weight of type Q4_K has rows of 64 elements, not a multiple of its block"
                + " size 256");
    }

    @Test
    void anUnsupportedTensorTypeIsNamed() throws IOException {
        Path p = dir.resolve("iq2xxs.gguf");
        new GgufCheckpointWriter(new RandomWeights(SHAPE, 11)).unencodedType("blk.0.attn_q.weight",
                GgmlType.byName("IQ2_XXS"))
                .write(p);
        assertThatThrownBy(() -> GgufModel.open(p)).isInstanceOf(GgufException.class).hasMessage(p
                + ": tensor blk.0.attn_q.weight has type IQ2_XXS (16), unsupported (supported: BF16, F16, F32, IQ4_NL,"
                + " IQ4_XS, Q2_K, Q3_K, Q4_0, Q4_1, Q4_K, Q5_0, Q5_1, Q5_K, Q6_K, Q8_0)");
    }

    @Test
    void anUnsupportedArchitectureIsNamed() throws IOException {
        Path p = dir.resolve("gpt2.gguf");
        new GgufCheckpointWriter(new RandomWeights(SHAPE, 11)).architecture("gpt2").write(p);
        assertThatThrownBy(() -> GgufModel.open(p)).isInstanceOf(GgufException.class)
                .hasMessage(p + ": unsupported architecture 'gpt2' (supported: llama, mistral, qwen2, qwen3, gemma2, gemma3, phi3)");
    }

    @Test
    void aMissingTensorIsNamed() throws IOException {
        Path p = dir.resolve("missing.gguf");
        new GgufCheckpointWriter(new RandomWeights(SHAPE, 11)).omit("blk.1.ffn_up.weight").write(p);
        assertThatThrownBy(() -> GgufModel.open(p)).isInstanceOf(GgufException.class)
                .hasMessage(p + ": has no tensor blk.1.ffn_up.weight (architecture llama)");
    }

    /** Rewrites the ggml type id of tensor {@code name} in the tensor infos of a GGUF file. */
    static void patchType(Path p, String name, int typeId) throws IOException {
        byte[] data = Files.readAllBytes(p);
        byte[] key = name.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN);
        for (int at = 8; at + 8 + key.length < data.length; at++) {
            if (b.getLong(at - 8) == key.length && java.util.Arrays.equals(data, at, at + key.length, key, 0,
                    key.length)) {
                int nDims = b.getInt(at + key.length);
                b.putInt(at + key.length + 4 + 8 * nDims, typeId);
                Files.write(p, data);
                return;
            }
        }
        throw new AssertionError("no tensor info " + name + " in " + p);
    }
}
