package dev.tandem.kernels.vector;

import static dev.tandem.kernels.scalar.LittleEndian.F32;
import static dev.tandem.kernels.vector.VectorDequantize.widenF16;

import dev.tandem.kernels.MatmulOps;
import dev.tandem.kernels.TensorType;
import dev.tandem.kernels.scalar.LittleEndian;
import dev.tandem.kernels.scalar.NativeInt8;
import dev.tandem.kernels.scalar.Q4_0X16;
import dev.tandem.kernels.scalar.Scratch;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * The species, constants and small vector helpers that several vector kernel classes share: the
 * preferred float species, the 16-row species of the interleaved layouts, and the int8
 * quantization of the inputs that every block layout's matmul runs first.
 */
public final class VectorLanes {

    /** The preferred float species, and its lanes. */
    static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
    static final int L = S.length();
    static final ByteOrder LE = LittleEndian.ORDER;
    static final long F = Float.BYTES;

    private VectorLanes() {}

    static FloatVector load(MemorySegment segment, long offset) {
        return FloatVector.fromMemorySegment(S, segment, offset, LE);
    }

    /**
     * Whether {@link VectorQ4_0X16#matmul} runs vector loops: it needs 8 float lanes (256 bits), one
     * per row of half a group; without them it runs {@link Q4_0X16#row} for every row.
     */
    static final boolean X16_VECTORS = L >= 8;

    /** Whether {@link NativeInt8}'s kernels run (see there for when). */
    static final boolean NATIVE_INT8 = NativeInt8.available();

    /**
     * The fewest inputs each interleaved type's matmul hands to {@link NativeInt8}, by ordinal: the
     * system property {@code tandem.kernels.native<Type>Batch} (the file's type, e.g.
     * {@code nativeQ4_KBatch}), else 1, as every native loop measured faster at batch 1 and at
     * batch 8 (docs/performance-notes.md); a property, to measure again. Either side computes the
     * same bits, so the choice never changes a token.
     */
    private static final int[] NATIVE_BATCH = nativeBatches();

    private static int[] nativeBatches() {
        TensorType[] types = TensorType.values();
        int[] batches = new int[types.length];
        for (TensorType type : types) {
            TensorType file = type.source();
            batches[type.ordinal()] =
                    file == null ? Integer.MAX_VALUE : Integer.getInteger("tandem.kernels.native" + file.name() + "Batch", 1);
        }
        return batches;
    }

    /** The fewest inputs {@code type}'s matmul hands to {@link NativeInt8} ({@link #NATIVE_BATCH}). */
    public static int nativeBatch(TensorType type) {
        return NATIVE_BATCH[type.ordinal()];
    }

    /** The float lanes a group's sums widen to, one per row: 16 in one vector, or 8 in each of two. */
    static final VectorSpecies<Float> X16_FLOATS = L >= 16 ? FloatVector.SPECIES_512 : S;

    static final VectorSpecies<Integer> X16_INTS = VectorSpecies.of(int.class, X16_FLOATS.vectorShape());

    /** Two short lanes per row of {@link #X16_FLOATS}: the products of a pair of nibble bytes. */
    static final VectorSpecies<Short> X16_SHORTS = VectorSpecies.of(short.class, X16_FLOATS.vectorShape());

    /** The pairs of nibble bytes {@link #X16_SHORTS} widens, two per row. */
    private static final VectorSpecies<Byte> X16_BYTES =
            VectorSpecies.of(byte.class, VectorShape.forBitSize(X16_FLOATS.vectorBitSize() / 2));

    /** f16 scales, as many as {@link #X16_FLOATS} has lanes. */
    static final VectorSpecies<Short> X16_HALVES =
            VectorSpecies.of(short.class, VectorShape.forBitSize(X16_FLOATS.length() * Short.SIZE));

    /** Float vectors per group of 16 rows: 1 or 2. */
    static final int X16_PARTS = 16 / X16_FLOATS.length();

    /** Bytes of one part's rows in a pair of nibble bytes, and of its f16 scales: 2 per row. */
    static final long X16_PART_BYTES = 2L * X16_FLOATS.length();

    private static final FloatVector X16_HALF = FloatVector.broadcast(X16_FLOATS, 0.5f);

    /** Inputs that {@link VectorQ4_0X16#x16Dots4} runs at once, sharing each unpacked byte of the weights. */
    static final int X16_INPUTS = 4;

    /** Inputs that {@link VectorQ4_0X16#x16Dots8} runs at once. */
    static final int X16_WIDE_INPUTS = 8; // Scratch.byEight's eight

    /**
     * The {@code batch} inputs at {@code x}, each quantized by {@link #quantizeX16} into
     * {@code scratch}, this thread's, or what it kept from the last call with the same nonzero {@code inputKey}
     * (see {@link MatmulOps#matmul(TensorType, MemorySegment, long, MemorySegment, long, MemorySegment,
     * long, int, int, int, int, int, long)}).
     */
    static Q4_0X16.Inputs quantizeInputs(Scratch scratch, MemorySegment x, long xOffset, int batch, int cols,
            long inputKey) {
        Q4_0X16.Inputs kept = scratch.quantizedOf(inputKey, x, xOffset, batch, cols);
        if (kept != null) {
            return kept;
        }
        int blocks = cols / 32;
        Q4_0X16.Inputs in = scratch.quantized(batch, cols);
        for (int b = 0; b < batch; b++) {
            quantizeX16(x, xOffset + (long) b * cols * F, blocks, in, b * cols, b * blocks);
        }
        if (batch >= X16_WIDE_INPUTS) {
            int eights = batch / X16_WIDE_INPUTS;
            Scratch.byEight(in.pairs(), eights, cols / 2, scratch.pairsByEight(eights * X16_WIDE_INPUTS * cols / 2));
        }
        scratch.quantizedAre(inputKey, x, xOffset, batch, cols);
        return in;
    }

    /** {@link Q4_0X16#quantizeBlock} for every block of one input, a block in {@code 32 / lanes} vectors. */
    public static void quantizeX16(MemorySegment x, long at, int blocks, Q4_0X16.Inputs in, int qBase, int blockBase) {
        if (!X16_VECTORS) {
            for (int block = 0; block < blocks; block++) {
                Q4_0X16.quantizeBlock(x, at, block, in, qBase, blockBase);
            }
            return;
        }
        int lanes = X16_FLOATS.length();
        for (int block = 0; block < blocks; block++) {
            long from = at + block * 32L * F;
            FloatVector max = FloatVector.zero(X16_FLOATS);
            for (int part = 0; part < 32 / lanes; part++) {
                max = max.max(FloatVector.fromMemorySegment(X16_FLOATS, x, from + part * lanes * F, LE).abs());
            }
            float amax = max.reduceLanes(VectorOperators.MAX);
            float scale = Q4_0X16.scale(amax);
            IntVector sum = IntVector.zero(X16_INTS);
            for (int part = 0; part < 32 / lanes; part++) {
                FloatVector t = FloatVector.fromMemorySegment(X16_FLOATS, x, from + part * lanes * F, LE).mul(scale);
                FloatVector half = X16_HALF.reinterpretAsInts().or(t.reinterpretAsInts().and(0x8000_0000))
                        .reinterpretAsFloats();
                IntVector q = (IntVector) t.add(half).convert(VectorOperators.F2I, 0);
                sum = sum.add(q);
                // Two quants to an int, the first in the low half: the vector's little-endian lanes.
                ((ShortVector) q.convertShape(VectorOperators.I2S, X16_HALVES, 0)).reinterpretAsInts()
                        .intoArray(in.pairs(), (qBase + block * 32 + part * lanes) / 2);
            }
            in.d()[blockBase + block] = Q4_0X16.factor(amax);
            in.sum8()[blockBase + block] = 8 * sum.reduceLanes(VectorOperators.ADD);
        }
    }

    /** The pair of nibble bytes of a part's rows at {@code at}, zero-extended (see {@link VectorQ4_0X16#x16Bytes}). */
    static ShortVector x16Load(MemorySegment w, long at) {
        return (ShortVector) ByteVector.fromMemorySegment(X16_BYTES, w, at, LE)
                .convertShape(VectorOperators.ZERO_EXTEND_B2S, X16_SHORTS, 0);
    }

    /** The low nibbles of {@link VectorQ4_0X16#x16Bytes}. */
    static ShortVector x16Low(ShortVector packed) {
        return packed.and((short) 0x0f);
    }

    /** The high nibbles of {@link VectorQ4_0X16#x16Bytes}. */
    static ShortVector x16High(ShortVector packed) {
        return packed.lanewise(VectorOperators.LSHR, 4);
    }

    /** Quants {@code 2m} and {@code 2m + 1} in every even and odd short lane, to multiply {@link VectorQ4_0X16#x16Bytes} with. */
    static ShortVector x16Pair(int[] pairs, int m) {
        return IntVector.broadcast(X16_INTS, pairs[m]).reinterpretAsShorts();
    }

    /**
     * One part's integer dot products of a block as floats: each row's two short lanes added (as
     * the halves of an int, sign-extended), less {@code sum8} (each nibble means itself less 8).
     */
    static FloatVector x16Sums(ShortVector sums, int sum8) {
        IntVector both = sums.reinterpretAsInts();
        return (FloatVector) both.lanewise(VectorOperators.LSHL, 16).lanewise(VectorOperators.ASHR, 16)
                .add(both.lanewise(VectorOperators.ASHR, 16))
                .sub(sum8)
                .convert(VectorOperators.I2F, 0);
    }

    static FloatVector x16Scales(MemorySegment w, long block) {
        IntVector h = (IntVector) ShortVector.fromMemorySegment(X16_HALVES, w, block, LE).castShape(X16_INTS, 0);
        IntVector magnitude = h.and(0x7fff);
        if (magnitude.compare(VectorOperators.GE, 0x7c00).anyTrue()) {
            return widenF16(h);
        }
        // Normal and subnormal halves: their bits shifted into a float's place are the value
        // times 2^-112, exactly; widenF16 (too big to inline once compiled on its own) only for
        // infinities and NaNs. One small method, so C2 inlines it whole into the group loops
        // (split in two, the decoder's compilations left the inner one out of line, boxed).
        return magnitude.lanewise(VectorOperators.LSHL, 13).reinterpretAsFloats().mul(0x1p112f)
                .reinterpretAsInts().or(h.and(0x8000).lanewise(VectorOperators.LSHL, 16)).reinterpretAsFloats();
    }

    /** One scale byte of each row of a part: as many bytes as {@link #X16_FLOATS} has lanes. */
    static final VectorSpecies<Byte> X16_SCALE_BYTES = // 64 bits where X16_VECTORS is false
            VectorSpecies.of(byte.class, VectorShape.forBitSize(Math.max(64, X16_FLOATS.length() * Byte.SIZE)));

    /** The largest of {@code n} values; NaN if any value is NaN ({@link Math#max} semantics). */
    static float maxOf(MemorySegment values, long offset, int n) {
        FloatVector maxima0 = FloatVector.broadcast(S, Float.NEGATIVE_INFINITY);
        FloatVector maxima1 = maxima0;
        FloatVector maxima2 = maxima0;
        FloatVector maxima3 = maxima0;
        int i = 0;
        for (; i + 4 * L <= n; i += 4 * L) {
            long at = offset + i * F;
            maxima0 = maxima0.max(load(values, at));
            maxima1 = maxima1.max(load(values, at + L * F));
            maxima2 = maxima2.max(load(values, at + 2 * L * F));
            maxima3 = maxima3.max(load(values, at + 3 * L * F));
        }
        int upper = S.loopBound(n);
        for (; i < upper; i += L) {
            maxima0 = maxima0.max(load(values, offset + i * F));
        }
        float max = maxima0.max(maxima1).max(maxima2.max(maxima3)).reduceLanes(VectorOperators.MAX);
        for (; i < n; i++) {
            max = Math.max(max, values.get(F32, offset + i * F));
        }
        return max;
    }
}
