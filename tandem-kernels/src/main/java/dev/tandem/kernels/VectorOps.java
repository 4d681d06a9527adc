package dev.tandem.kernels;

import static dev.tandem.kernels.LittleEndian.F32;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/**
 * The vector kernels, on {@code FloatVector.SPECIES_PREFERRED}: the only class of this module that
 * names {@code jdk.incubator.vector}. Loading it without that module fails, so only
 * {@link Ops#preferred()} refers to it, and only after checking the boot layer.
 *
 * <h2>Implementation Overview</h2>
 *
 * <p>Every kernel has llama3.java's shape: a vector loop over {@code loopBound(n)} elements (FMA
 * where it accumulates), {@code reduceLanes} where it reduces, then a scalar tail that computes
 * what {@link ScalarOps} computes for the remaining elements. Argument checks are
 * {@link ArgumentChecks}, shared with the scalar kernels.
 *
 * <ul>
 *   <li>Matmul walks rows outside and the batch inside, four inputs at a time: each weight vector
 *       is loaded once and feeds four accumulators, so a weight row is read once per four inputs
 *       from cache and once per call from memory. Each dot product is the simplest loop, which C2
 *       unrolls and bounds-checks once: probes on AVX-512 showed these loops bound by the two
 *       vector ports rather than by memory, hand-unrolled loops with two or four accumulators
 *       slower (C2 stops unrolling them and checks every load), and eight-input groups over
 *       column tiles of interleaved inputs no faster in 256 KiB row-block tasks. q8_0 at batch
 *       1 sums even and odd blocks into two accumulators (one FMA latency per block was the
 *       bound on short rows), and at batch 4 and more takes two rows against four inputs.
 *       f32 takes four rows against four inputs ({@link #dotF32Tile}) and the interleaved q8_0
 *       eight inputs per widened vector ({@link #q8x16Group8}): enough independent FMA chains
 *       to hide the FMA latency, which four chains did not.
 *   <li>q8_0 loads 16 int8 weights as one 128-bit {@code ByteVector} and widens them to
 *       {@link #Q8_PARTS} float vectors with {@code castShape}, one switch case per part so that
 *       every call names a constant part, as llama3.java does. The f16 block scale comes from a
 *       table of all 65536 f16 values ({@link #F16_TO_F32}), which moves its widening off the
 *       vector ports. The 256- and 128-bit paths (two and four parts) are tested by running the
 *       tests under a smaller {@code -XX:MaxVectorSize}.
 *   <li>Maxima use four independent accumulators: a lane-wise max with {@link Math#max} semantics
 *       (NaN wins) takes several instructions, and one chain of them was the bottleneck.
 *   <li>rope computes cos and sin once per pair (the scalar {@link Math#cos}/{@link Math#sin} of
 *       {@link RopeOps#angle}, as the scalar kernel does), places them in vectors of
 *       {@code [c0, c0, c1, c1, ...]} and {@code [-s0, s0, -s1, s1, ...]}, and rotates every head of
 *       the span with one lane swap, two multiplies and one add per vector.
 *   <li>Exponentials use the vector {@code EXP}, which may differ from {@link Math#exp} in the last
 *       bit; the tolerances in the interfaces allow for it.
 * </ul>
 */
final class VectorOps implements KernelOps {

    static final VectorOps INSTANCE = new VectorOps();

    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
    private static final int L = S.length();
    private static final ByteOrder LE = LittleEndian.ORDER;
    private static final long F = Float.BYTES;

    /** q8_0 weights are loaded 16 at a time. */
    private static final VectorSpecies<Byte> Q8_BYTES = ByteVector.SPECIES_128;

    /** The float species q8_0 widens to: the preferred one when 16 bytes widen to 1, 2 or 4 of it. */
    private static final VectorSpecies<Float> Q8_FLOATS =
            L > 16 ? FloatVector.SPECIES_512 : L < 4 ? FloatVector.SPECIES_128 : S;

    private static final int Q8_LANES = Q8_FLOATS.length();

    /** Float vectors per 16 widened bytes: 1, 2 or 4. */
    private static final int Q8_PARTS = 16 / Q8_LANES;

    /**
     * Whether the 4-bit kernels dequantize by table: with 16 float lanes, a vector holds a value
     * for each of the 16 nibbles, and a lane permutation indexed by the zero-extended bytes (it
     * uses the low four bits of each index, {@link IntVector#selectFrom} wraps them the same way)
     * turns 16 nibbles into 16 dequantized weights in one instruction, with neither a mask, an
     * offset nor an int-to-float conversion.
     */
    private static final boolean NIBBLE_TABLES = Q8_LANES == 16;

    /** Ints as wide as {@link #Q8_FLOATS}: the zero-extended bytes that index a nibble table. */
    private static final VectorSpecies<Integer> NIBBLE_INDEXES = VectorSpecies.of(int.class, Q8_FLOATS.vectorShape());

    /** {@code [0, 1, ..., 15]}: a q4_K table is {@code IOTA * (d * scale) - dmin * min}. */
    private static final FloatVector NIBBLES = FloatVector.zero(Q8_FLOATS).addIndex(1);

    /** {@code [-8, -7, ..., 7]}: a q4_0 table is this times {@code d}. */
    private static final FloatVector NIBBLES_LESS_8 = NIBBLES.sub(8f);

    /** Int lanes in the preferred shape: as many as {@link #S} has float lanes. */
    private static final VectorSpecies<Integer> INTS = VectorSpecies.of(int.class, S.vectorShape());

    /** f16 and bf16 are loaded {@link #L} at a time, half a preferred vector of shorts. */
    private static final VectorSpecies<Short> HALVES =
            VectorSpecies.of(short.class, VectorShape.forBitSize(L * Short.SIZE));

    /** Swaps the lanes of each pair: {@code [x1, x0, x3, x2, ...]}. */
    private static final VectorShuffle<Float> SWAP_PAIRS = VectorShuffle.fromOp(S, lane -> lane ^ 1);

    private VectorOps() {}

    @Override
    public String name() {
        return "vector (" + S.vectorBitSize() + "-bit, " + L + " f32 lanes)";
    }

    private static FloatVector load(MemorySegment segment, long offset) {
        return FloatVector.fromMemorySegment(S, segment, offset, LE);
    }

    // ---- matmul ----

    /** The interleaved kernels keep their converted inputs from call to call under {@code inputKey}. */
    @Override
    public void matmul(
            TensorType type,
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd,
            long inputKey) {
        switch (type) {
            case Q4_0_X16 -> matmulQ4_0_X16(weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                    rowStart, rowEnd, inputKey);
            case Q4_K_X16 -> matmulQ4_K_X16(weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                    rowStart, rowEnd, inputKey);
            case Q8_0_X16 -> matmulQ8_0_X16(weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                    rowStart, rowEnd, inputKey);
            case Q6_K_X16 -> matmulQ6_K_X16(weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                    rowStart, rowEnd, inputKey);
            case Q5_0_X16, Q5_K_X16, Q4_1_X16, Q5_1_X16, IQ4_NL_X16, IQ4_XS_X16, Q2_K_X16, Q3_K_X16 ->
                    matmulFiveBitsX16(type, weights, weightsOffset, x, xOffset, out, outOffset,
                    rows, cols, batch, rowStart, rowEnd, inputKey);
            case F32_X16, F16_X16, BF16_X16 -> matmulFloatsX16(type, weights, weightsOffset, x, xOffset, out,
                    outOffset, rows, cols, batch, rowStart, rowEnd, inputKey);
            case null, default -> matmul(type, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                    rowStart, rowEnd);
        }
    }

    @Override
    public void matmulF32(
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd) {
        ArgumentChecks.matmulF32(
                weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd);
        long inputBytes = (long) cols * F;
        long outStride = (long) rows * F;
        int r = rowStart;
        while (r < rowEnd) {
            long row = weightsOffset + r * inputBytes;
            long at = outOffset + r * F;
            int b = 0;
            if (r + 4 <= rowEnd) {
                // Four rows against four inputs: sixteen independent chains, each weight and input
                // vector loaded once for four FMAs, where a row against four inputs loaded five
                // vectors for four and its four chains waited on the FMA latency.
                for (; b + 4 <= batch; b += 4) {
                    dotF32Tile(weights, row, inputBytes, x, xOffset + b * inputBytes, cols, out,
                            at + b * outStride, outStride);
                }
                // The inputs left over (all of them at batch 1) meet the four rows one at a time.
                for (; b < batch; b++) {
                    dotF32Four(weights, row, inputBytes, x, xOffset + b * inputBytes, 0, cols, out,
                            at + b * outStride, F);
                }
                r += 4;
            } else {
                for (; b + 4 <= batch; b += 4) {
                    dotF32Four(weights, row, 0, x, xOffset + b * inputBytes, inputBytes, cols, out,
                            at + b * outStride, outStride);
                }
                for (; b < batch; b++) {
                    out.set(F32, at + b * outStride, dotF32(weights, row, x, xOffset + b * inputBytes, cols));
                }
                r++;
            }
        }
    }

    // ---- f16 and bf16 weights, f32 inputs ----

    /** Widened in the loop, rows and inputs in {@link #matmulF32}'s tiles. */
    @Override
    public void matmulF16(
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd) {
        ArgumentChecks.matmulHalves("matmulF16",
                weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd);
        matmulHalves(false, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd);
    }

    /** As {@link #matmulF16}. */
    @Override
    public void matmulBF16(
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd) {
        ArgumentChecks.matmulHalves("matmulBF16",
                weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd);
        matmulHalves(true, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd);
    }

    /**
     * Two rows at a time against four inputs, or against one, each weight widened once for all the
     * inputs it meets: bf16 in the loop ({@link #bf16Tile}), f16 first into this thread's scratch
     * ({@link #halvesToFloats}, then {@link #wideTile}).
     */
    private static void matmulHalves(boolean bf16, MemorySegment weights, long weightsOffset, MemorySegment x,
            long xOffset, MemorySegment out, long outOffset, int rows, int cols, int batch, int rowStart, int rowEnd) {
        long rowBytes = 2L * cols;
        long inputBytes = (long) cols * F;
        long outStride = (long) rows * F;
        Scratch scratch = bf16 ? null : Scratch.get();
        float[] wide = bf16 ? null : scratch.wide(2 * cols);
        int r = rowStart;
        while (r < rowEnd) {
            int pair = r + 2 <= rowEnd ? 2 : 1;
            long row = weightsOffset + r * rowBytes;
            long at = outOffset + r * F;
            if (!bf16) {
                // The Vector API has no f16 conversion, but C2 compiles a counted loop of
                // Float.float16ToFloat into a heap array to the processor's (vcvtph2ps).
                halvesToFloats(weights, row, wide, pair * cols);
            }
            int b = 0;
            for (; b + 4 <= batch; b += 4) {
                if (bf16) {
                    bf16Tile(weights, row, pair == 2 ? rowBytes : 0, x, xOffset + b * inputBytes, inputBytes, 4, cols,
                            out, at + b * outStride, outStride);
                } else {
                    wideTile(wide, pair == 2 ? cols : 0, x, xOffset + b * inputBytes, inputBytes, 4, cols, out,
                            at + b * outStride, outStride);
                }
            }
            for (; b < batch; b++) {
                if (bf16) {
                    bf16Tile(weights, row, pair == 2 ? rowBytes : 0, x, xOffset + b * inputBytes, 0, 1, cols, out,
                            at + b * outStride, outStride);
                } else {
                    wideTile(wide, pair == 2 ? cols : 0, x, xOffset + b * inputBytes, 0, 1, cols, out,
                            at + b * outStride, outStride);
                }
            }
            r += pair;
        }
    }

    /**
     * {@code n} f16 at {@code from} to floats, exactly: a loop with an int counter into an array,
     * on its own, which C2 compiles to the processor's conversion (vcvtph2ps, 16 a time; 0.02 ns a
     * value against 0.3 with a long counter, which is no counted loop). Inlined into the matmul's
     * loops it stayed scalar in some compilations (a large f16 decode at half the speed); through
     * a heap copy of the bits ({@code MemorySegment.copy}), the copy's stub read the weights at
     * half the rate.
     */
    private static void halvesToFloats(MemorySegment w, long from, float[] wide, int n) {
        for (int i = 0; i < n; i++) {
            wide[i] = Float.float16ToFloat(w.get(LittleEndian.F16, from + 2L * i));
        }
    }

    /**
     * {@link #bf16Tile} on two rows already widened into {@code w} (the second {@code second}
     * floats on; 0: one row, computed twice and written once).
     */
    private static void wideTile(float[] w, int second, MemorySegment x, long input, long inputStride, int inputs,
            int n, MemorySegment out, long at, long outStride) {
        long x1 = input + inputStride;
        long x2 = x1 + inputStride;
        long x3 = x2 + inputStride;
        FloatVector a00 = FloatVector.zero(S);
        FloatVector a01 = a00;
        FloatVector a02 = a00;
        FloatVector a03 = a00;
        FloatVector a10 = a00;
        FloatVector a11 = a00;
        FloatVector a12 = a00;
        FloatVector a13 = a00;
        int upper = S.loopBound(n);
        int k = 0;
        for (; k < upper; k += L) {
            long kb = k * F;
            FloatVector r0 = FloatVector.fromArray(S, w, k);
            FloatVector r1 = FloatVector.fromArray(S, w, second + k);
            FloatVector v0 = load(x, input + kb);
            a00 = r0.fma(v0, a00);
            a10 = r1.fma(v0, a10);
            if (inputs == 4) {
                FloatVector v1 = load(x, x1 + kb);
                FloatVector v2 = load(x, x2 + kb);
                FloatVector v3 = load(x, x3 + kb);
                a01 = r0.fma(v1, a01);
                a02 = r0.fma(v2, a02);
                a03 = r0.fma(v3, a03);
                a11 = r1.fma(v1, a11);
                a12 = r1.fma(v2, a12);
                a13 = r1.fma(v3, a13);
            }
        }
        int rowsWritten = second == 0 ? 1 : 2;
        out.set(F32, at, a00.reduceLanes(VectorOperators.ADD));
        if (rowsWritten == 2) {
            out.set(F32, at + F, a10.reduceLanes(VectorOperators.ADD));
        }
        if (inputs == 4) {
            out.set(F32, at + outStride, a01.reduceLanes(VectorOperators.ADD));
            out.set(F32, at + 2 * outStride, a02.reduceLanes(VectorOperators.ADD));
            out.set(F32, at + 3 * outStride, a03.reduceLanes(VectorOperators.ADD));
            if (rowsWritten == 2) {
                out.set(F32, at + F + outStride, a11.reduceLanes(VectorOperators.ADD));
                out.set(F32, at + F + 2 * outStride, a12.reduceLanes(VectorOperators.ADD));
                out.set(F32, at + F + 3 * outStride, a13.reduceLanes(VectorOperators.ADD));
            }
        }
        for (; k < n; k++) {
            for (int i = 0; i < rowsWritten; i++) {
                float wk = w[i * second + k];
                for (int j = 0; j < inputs; j++) {
                    long o = at + i * F + j * outStride;
                    out.set(F32, o, out.get(F32, o) + wk * x.get(F32, input + j * inputStride + k * F));
                }
            }
        }
    }

    /** {@link #L} bf16 weights at {@code at}, widened exactly (a 16-bit shift, as {@link HalfFloats#bf16ToF32}). */
    private static FloatVector bf16s(MemorySegment w, long at) {
        return loadHalves(w, at).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
    }

    /**
     * Two bf16 rows ({@code rowStride} bytes of halves apart; 0: one row, computed twice and
     * written once) against {@code inputs} inputs (4, or 1: the others then alias it), each weight
     * vector widened once: eight chains of FMAs at most. Row {@code i} with input {@code j} is
     * written at {@code at + i * 4 + j * outStride}.
     */
    private static void bf16Tile(MemorySegment w, long row, long rowStride, MemorySegment x, long input,
            long inputStride, int inputs, int n, MemorySegment out, long at, long outStride) {
        long w1 = row + rowStride;
        long x1 = input + inputStride;
        long x2 = x1 + inputStride;
        long x3 = x2 + inputStride;
        FloatVector a00 = FloatVector.zero(S);
        FloatVector a01 = a00;
        FloatVector a02 = a00;
        FloatVector a03 = a00;
        FloatVector a10 = a00;
        FloatVector a11 = a00;
        FloatVector a12 = a00;
        FloatVector a13 = a00;
        int upper = S.loopBound(n);
        int k = 0;
        for (; k < upper; k += L) {
            long kh = k * 2L;
            long kb = k * F;
            FloatVector r0 = bf16s(w, row + kh);
            FloatVector r1 = bf16s(w, w1 + kh);
            FloatVector v0 = load(x, input + kb);
            a00 = r0.fma(v0, a00);
            a10 = r1.fma(v0, a10);
            if (inputs == 4) {
                FloatVector v1 = load(x, x1 + kb);
                FloatVector v2 = load(x, x2 + kb);
                FloatVector v3 = load(x, x3 + kb);
                a01 = r0.fma(v1, a01);
                a02 = r0.fma(v2, a02);
                a03 = r0.fma(v3, a03);
                a11 = r1.fma(v1, a11);
                a12 = r1.fma(v2, a12);
                a13 = r1.fma(v3, a13);
            }
        }
        int rowsWritten = rowStride == 0 ? 1 : 2;
        out.set(F32, at, a00.reduceLanes(VectorOperators.ADD));
        if (rowsWritten == 2) {
            out.set(F32, at + F, a10.reduceLanes(VectorOperators.ADD));
        }
        if (inputs == 4) {
            out.set(F32, at + outStride, a01.reduceLanes(VectorOperators.ADD));
            out.set(F32, at + 2 * outStride, a02.reduceLanes(VectorOperators.ADD));
            out.set(F32, at + 3 * outStride, a03.reduceLanes(VectorOperators.ADD));
            if (rowsWritten == 2) {
                out.set(F32, at + F + outStride, a11.reduceLanes(VectorOperators.ADD));
                out.set(F32, at + F + 2 * outStride, a12.reduceLanes(VectorOperators.ADD));
                out.set(F32, at + F + 3 * outStride, a13.reduceLanes(VectorOperators.ADD));
            }
        }
        // The columns past the last whole vector, added one by one.
        for (; k < n; k++) {
            for (int i = 0; i < rowsWritten; i++) {
                float wk = HalfFloats.bf16ToF32(w.get(LittleEndian.F16, row + i * rowStride + k * 2L));
                for (int j = 0; j < inputs; j++) {
                    long o = at + i * F + j * outStride;
                    out.set(F32, o, out.get(F32, o) + wk * x.get(F32, input + j * inputStride + k * F));
                }
            }
        }
    }

    /** {@code sum_k a[k] * b[k]} over {@code n} f32. */
    private static float dotF32(MemorySegment a, long aOffset, MemorySegment b, long bOffset, int n) {
        int upper = S.loopBound(n);
        FloatVector acc = FloatVector.zero(S);
        int k = 0;
        for (; k < upper; k += L) {
            acc = load(a, aOffset + k * F).fma(load(b, bOffset + k * F), acc);
        }
        float sum = acc.reduceLanes(VectorOperators.ADD);
        for (; k < n; k++) {
            sum += a.get(F32, aOffset + k * F) * b.get(F32, bOffset + k * F);
        }
        return sum;
    }

    /**
     * Four dot products side by side, each summed in {@link #dotF32}'s order (so the same bits):
     * pair j is the row at {@code row + j * rowStride} times the input at {@code input + j *
     * inputStride}, written at {@code at + j * outStride}. One row with four inputs (rowStride 0)
     * or four rows with one input (inputStride 0): four independent chains of FMAs either way.
     */
    private static void dotF32Four(MemorySegment w, long row, long rowStride, MemorySegment x, long input,
            long inputStride, int n, MemorySegment out, long at, long outStride) {
        long w1 = row + rowStride;
        long w2 = w1 + rowStride;
        long w3 = w2 + rowStride;
        long x1 = input + inputStride;
        long x2 = x1 + inputStride;
        long x3 = x2 + inputStride;
        FloatVector acc0 = FloatVector.zero(S);
        FloatVector acc1 = FloatVector.zero(S);
        FloatVector acc2 = FloatVector.zero(S);
        FloatVector acc3 = FloatVector.zero(S);
        int upper = S.loopBound(n);
        int k = 0;
        for (; k < upper; k += L) {
            long kb = k * F;
            acc0 = load(w, row + kb).fma(load(x, input + kb), acc0);
            acc1 = load(w, w1 + kb).fma(load(x, x1 + kb), acc1);
            acc2 = load(w, w2 + kb).fma(load(x, x2 + kb), acc2);
            acc3 = load(w, w3 + kb).fma(load(x, x3 + kb), acc3);
        }
        float sum0 = acc0.reduceLanes(VectorOperators.ADD);
        float sum1 = acc1.reduceLanes(VectorOperators.ADD);
        float sum2 = acc2.reduceLanes(VectorOperators.ADD);
        float sum3 = acc3.reduceLanes(VectorOperators.ADD);
        for (; k < n; k++) {
            long kb = k * F;
            sum0 += w.get(F32, row + kb) * x.get(F32, input + kb);
            sum1 += w.get(F32, w1 + kb) * x.get(F32, x1 + kb);
            sum2 += w.get(F32, w2 + kb) * x.get(F32, x2 + kb);
            sum3 += w.get(F32, w3 + kb) * x.get(F32, x3 + kb);
        }
        out.set(F32, at, sum0);
        out.set(F32, at + outStride, sum1);
        out.set(F32, at + 2 * outStride, sum2);
        out.set(F32, at + 3 * outStride, sum3);
    }

    /**
     * Sixteen dot products side by side, each summed in {@link #dotF32}'s order (so the same bits):
     * the four rows {@code row}, {@code row + stride}, ... against the four inputs {@code input},
     * {@code input + stride}, ... (rows and inputs both {@code n} floats, {@code stride} bytes
     * apart); row {@code i} with input {@code j} is written at {@code at + 4 i + j * outStride}.
     * 24 vector registers: the AVX-512 file holds them, and C2 keeps them there.
     */
    private static void dotF32Tile(MemorySegment w, long row, long stride, MemorySegment x, long input, int n,
            MemorySegment out, long at, long outStride) {
        long w1 = row + stride;
        long w2 = w1 + stride;
        long w3 = w2 + stride;
        long x1 = input + stride;
        long x2 = x1 + stride;
        long x3 = x2 + stride;
        FloatVector a00 = FloatVector.zero(S);
        FloatVector a01 = a00;
        FloatVector a02 = a00;
        FloatVector a03 = a00;
        FloatVector a10 = a00;
        FloatVector a11 = a00;
        FloatVector a12 = a00;
        FloatVector a13 = a00;
        FloatVector a20 = a00;
        FloatVector a21 = a00;
        FloatVector a22 = a00;
        FloatVector a23 = a00;
        FloatVector a30 = a00;
        FloatVector a31 = a00;
        FloatVector a32 = a00;
        FloatVector a33 = a00;
        int upper = S.loopBound(n);
        int k = 0;
        for (; k < upper; k += L) {
            long kb = k * F;
            FloatVector v0 = load(x, input + kb);
            FloatVector v1 = load(x, x1 + kb);
            FloatVector v2 = load(x, x2 + kb);
            FloatVector v3 = load(x, x3 + kb);
            FloatVector r = load(w, row + kb);
            a00 = r.fma(v0, a00);
            a01 = r.fma(v1, a01);
            a02 = r.fma(v2, a02);
            a03 = r.fma(v3, a03);
            r = load(w, w1 + kb);
            a10 = r.fma(v0, a10);
            a11 = r.fma(v1, a11);
            a12 = r.fma(v2, a12);
            a13 = r.fma(v3, a13);
            r = load(w, w2 + kb);
            a20 = r.fma(v0, a20);
            a21 = r.fma(v1, a21);
            a22 = r.fma(v2, a22);
            a23 = r.fma(v3, a23);
            r = load(w, w3 + kb);
            a30 = r.fma(v0, a30);
            a31 = r.fma(v1, a31);
            a32 = r.fma(v2, a32);
            a33 = r.fma(v3, a33);
        }
        long o1 = at + outStride;
        long o2 = o1 + outStride;
        long o3 = o2 + outStride;
        out.set(F32, at, a00.reduceLanes(VectorOperators.ADD));
        out.set(F32, o1, a01.reduceLanes(VectorOperators.ADD));
        out.set(F32, o2, a02.reduceLanes(VectorOperators.ADD));
        out.set(F32, o3, a03.reduceLanes(VectorOperators.ADD));
        out.set(F32, at + F, a10.reduceLanes(VectorOperators.ADD));
        out.set(F32, o1 + F, a11.reduceLanes(VectorOperators.ADD));
        out.set(F32, o2 + F, a12.reduceLanes(VectorOperators.ADD));
        out.set(F32, o3 + F, a13.reduceLanes(VectorOperators.ADD));
        out.set(F32, at + 2 * F, a20.reduceLanes(VectorOperators.ADD));
        out.set(F32, o1 + 2 * F, a21.reduceLanes(VectorOperators.ADD));
        out.set(F32, o2 + 2 * F, a22.reduceLanes(VectorOperators.ADD));
        out.set(F32, o3 + 2 * F, a23.reduceLanes(VectorOperators.ADD));
        out.set(F32, at + 3 * F, a30.reduceLanes(VectorOperators.ADD));
        out.set(F32, o1 + 3 * F, a31.reduceLanes(VectorOperators.ADD));
        out.set(F32, o2 + 3 * F, a32.reduceLanes(VectorOperators.ADD));
        out.set(F32, o3 + 3 * F, a33.reduceLanes(VectorOperators.ADD));
        if (k < n) {
            dotF32TileTail(w, row, stride, x, input, k, n, out, at, outStride);
        }
    }

    /** The columns {@code [k, n)} of {@link #dotF32Tile}, added one at a time to the sums it wrote, as {@link #dotF32} adds them. */
    private static void dotF32TileTail(MemorySegment w, long row, long stride, MemorySegment x, long input, int k,
            int n, MemorySegment out, long at, long outStride) {
        for (int i = 0; i < 4; i++) {
            for (int j = 0; j < 4; j++) {
                long o = at + i * F + j * outStride;
                float sum = out.get(F32, o);
                for (int c = k; c < n; c++) {
                    sum += w.get(F32, row + i * stride + c * F) * x.get(F32, input + j * stride + c * F);
                }
                out.set(F32, o, sum);
            }
        }
    }

    @Override
    public void matmulQ8_0(
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd) {
        ArgumentChecks.matmulQ8_0(
                weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd);
        int blocks = cols / Q8_0.BLOCK_SIZE;
        long rowBytes = (long) blocks * Q8_0.BLOCK_BYTES;
        long inputBytes = (long) cols * F;
        long outStride = (long) rows * F;
        int r = rowStart;
        if (batch >= 4) {
            for (; r + 2 <= rowEnd; r += 2) {
                long row = weightsOffset + r * rowBytes;
                int b = 0;
                for (; b + 4 <= batch; b += 4) {
                    dotQ8x4x2(weights, row, rowBytes, x, xOffset + b * inputBytes, inputBytes, blocks, out,
                            outOffset + b * outStride + r * F, outStride);
                }
                for (; b < batch; b++) {
                    out.set(F32, outOffset + b * outStride + r * F,
                            dotQ8(weights, row, x, xOffset + b * inputBytes, blocks));
                    out.set(F32, outOffset + b * outStride + (r + 1) * F,
                            dotQ8(weights, row + rowBytes, x, xOffset + b * inputBytes, blocks));
                }
            }
        }
        for (; r < rowEnd; r++) {
            long row = weightsOffset + r * rowBytes;
            int b = 0;
            for (; b + 4 <= batch; b += 4) {
                dotQ8x4(
                        weights,
                        row,
                        x,
                        xOffset + b * inputBytes,
                        inputBytes,
                        blocks,
                        out,
                        outOffset + b * outStride + r * F,
                        outStride);
            }
            for (; b < batch; b++) {
                out.set(
                        F32,
                        outOffset + b * outStride + r * F,
                        dotQ8(weights, row, x, xOffset + b * inputBytes, blocks));
            }
        }
    }

    /**
     * Every f16 value widened to f32 ({@link Float#float16ToFloat}), indexed by its 16 bits: 256 KiB,
     * of which one tensor's scales touch a few KiB. A q8_0 block's scale is then a 16-bit load and a
     * broadcast from this table, two load-port instructions, instead of a move into a vector
     * register, an f16 conversion and a broadcast, three on the two vector ports that the widening
     * of the quants already saturates on AVX-512.
     */
    private static final float[] F16_TO_F32 = new float[1 << 16];

    static {
        for (int bits = 0; bits < F16_TO_F32.length; bits++) {
            F16_TO_F32[bits] = Float.float16ToFloat((short) bits);
        }
    }

    /** The f32 value of the f16 scale at {@code offset}, exactly {@link Q8_0#scale}, from the table. */
    private static float scale(MemorySegment w, long offset) {
        return F16_TO_F32[w.get(LittleEndian.F16, offset) & 0xffff];
    }

    /** Widens part {@code part} of 16 int8 weights to f32; each case has a constant part number. */
    private static FloatVector widen(ByteVector q, int part) {
        return switch (part) {
            case 0 -> (FloatVector) q.castShape(Q8_FLOATS, 0);
            case 1 -> (FloatVector) q.castShape(Q8_FLOATS, 1);
            case 2 -> (FloatVector) q.castShape(Q8_FLOATS, 2);
            case 3 -> (FloatVector) q.castShape(Q8_FLOATS, 3);
            default -> throw new AssertionError("q8_0 part " + part + " of " + Q8_PARTS);
        };
    }

    private static ByteVector quants(MemorySegment w, long blockOffset, int half) {
        return ByteVector.fromMemorySegment(Q8_BYTES, w, blockOffset + 2 + half * 16L, LE);
    }

    private static FloatVector loadQ8Input(MemorySegment x, long blockInput, int half, int part) {
        return FloatVector.fromMemorySegment(Q8_FLOATS, x, blockInput + (half * 16L + (long) part * Q8_LANES) * F, LE);
    }

    /**
     * The dot product of one q8_0 row of {@code blocks} blocks with one f32 input. Even and odd
     * blocks feed two accumulators, so consecutive blocks' scale FMAs do not wait for each
     * other: with one accumulator, the chain of one FMA latency per block bounded 512-column
     * rows (16 blocks) at 2.5 ns a block on AVX-512, against 1.4 ns with two. Each block's first
     * product is a multiply, not an FMA into zero.
     */
    private static float dotQ8(MemorySegment w, long row, MemorySegment x, long input, int blocks) {
        FloatVector even = FloatVector.zero(Q8_FLOATS);
        FloatVector odd = FloatVector.zero(Q8_FLOATS);
        int block = 0;
        for (; block + 2 <= blocks; block += 2) {
            long blockOffset = row + (long) block * Q8_0.BLOCK_BYTES;
            long blockInput = input + (long) block * Q8_0.BLOCK_SIZE * F;
            long nextOffset = blockOffset + Q8_0.BLOCK_BYTES;
            long nextInput = blockInput + Q8_0.BLOCK_SIZE * F;
            ByteVector q0 = quants(w, blockOffset, 0);
            ByteVector q1 = quants(w, blockOffset, 1);
            ByteVector q2 = quants(w, nextOffset, 0);
            ByteVector q3 = quants(w, nextOffset, 1);
            FloatVector sum0 = widen(q0, 0).mul(loadQ8Input(x, blockInput, 0, 0));
            FloatVector sum1 = widen(q2, 0).mul(loadQ8Input(x, nextInput, 0, 0));
            for (int part = 1; part < Q8_PARTS; part++) {
                sum0 = widen(q0, part).fma(loadQ8Input(x, blockInput, 0, part), sum0);
                sum1 = widen(q2, part).fma(loadQ8Input(x, nextInput, 0, part), sum1);
            }
            for (int part = 0; part < Q8_PARTS; part++) {
                sum0 = widen(q1, part).fma(loadQ8Input(x, blockInput, 1, part), sum0);
                sum1 = widen(q3, part).fma(loadQ8Input(x, nextInput, 1, part), sum1);
            }
            even = sum0.fma(FloatVector.broadcast(Q8_FLOATS, scale(w, blockOffset)), even);
            odd = sum1.fma(FloatVector.broadcast(Q8_FLOATS, scale(w, nextOffset)), odd);
        }
        if (block < blocks) {
            long blockOffset = row + (long) block * Q8_0.BLOCK_BYTES;
            long blockInput = input + (long) block * Q8_0.BLOCK_SIZE * F;
            FloatVector blockSum = FloatVector.zero(Q8_FLOATS);
            for (int half = 0; half < 2; half++) {
                ByteVector q = quants(w, blockOffset, half);
                for (int part = 0; part < Q8_PARTS; part++) {
                    blockSum = widen(q, part).fma(loadQ8Input(x, blockInput, half, part), blockSum);
                }
            }
            even = blockSum.fma(FloatVector.broadcast(Q8_FLOATS, scale(w, blockOffset)), even);
        }
        return even.add(odd).reduceLanes(VectorOperators.ADD);
    }

    /**
     * Eight dot products: two adjacent q8_0 rows ({@code rowBytes} apart) with four inputs. Each
     * input vector is loaded once for both rows and each widened weight vector serves four
     * inputs; the block scale multiplies the widened weights (one multiply per vector, shared by
     * four inputs) instead of each input's block sum.
     */
    private static void dotQ8x4x2(
            MemorySegment w,
            long row,
            long rowBytes,
            MemorySegment x,
            long input,
            long inputStride,
            int blocks,
            MemorySegment out,
            long at,
            long outStride) {
        FloatVector a0 = FloatVector.zero(Q8_FLOATS);
        FloatVector a1 = FloatVector.zero(Q8_FLOATS);
        FloatVector a2 = FloatVector.zero(Q8_FLOATS);
        FloatVector a3 = FloatVector.zero(Q8_FLOATS);
        FloatVector b0 = FloatVector.zero(Q8_FLOATS);
        FloatVector b1 = FloatVector.zero(Q8_FLOATS);
        FloatVector b2 = FloatVector.zero(Q8_FLOATS);
        FloatVector b3 = FloatVector.zero(Q8_FLOATS);
        for (int block = 0; block < blocks; block++) {
            long first = row + (long) block * Q8_0.BLOCK_BYTES;
            long second = first + rowBytes;
            long in0 = input + (long) block * Q8_0.BLOCK_SIZE * F;
            long in1 = in0 + inputStride;
            long in2 = in1 + inputStride;
            long in3 = in2 + inputStride;
            FloatVector d = FloatVector.broadcast(Q8_FLOATS, scale(w, first));
            FloatVector e = FloatVector.broadcast(Q8_FLOATS, scale(w, second));
            for (int half = 0; half < 2; half++) {
                ByteVector p = quants(w, first, half);
                ByteVector q = quants(w, second, half);
                for (int part = 0; part < Q8_PARTS; part++) {
                    FloatVector wp = widen(p, part).mul(d);
                    FloatVector wq = widen(q, part).mul(e);
                    FloatVector x0 = loadQ8Input(x, in0, half, part);
                    a0 = wp.fma(x0, a0);
                    b0 = wq.fma(x0, b0);
                    FloatVector x1 = loadQ8Input(x, in1, half, part);
                    a1 = wp.fma(x1, a1);
                    b1 = wq.fma(x1, b1);
                    FloatVector x2 = loadQ8Input(x, in2, half, part);
                    a2 = wp.fma(x2, a2);
                    b2 = wq.fma(x2, b2);
                    FloatVector x3 = loadQ8Input(x, in3, half, part);
                    a3 = wp.fma(x3, a3);
                    b3 = wq.fma(x3, b3);
                }
            }
        }
        out.set(F32, at, a0.reduceLanes(VectorOperators.ADD));
        out.set(F32, at + outStride, a1.reduceLanes(VectorOperators.ADD));
        out.set(F32, at + 2 * outStride, a2.reduceLanes(VectorOperators.ADD));
        out.set(F32, at + 3 * outStride, a3.reduceLanes(VectorOperators.ADD));
        out.set(F32, at + F, b0.reduceLanes(VectorOperators.ADD));
        out.set(F32, at + F + outStride, b1.reduceLanes(VectorOperators.ADD));
        out.set(F32, at + F + 2 * outStride, b2.reduceLanes(VectorOperators.ADD));
        out.set(F32, at + F + 3 * outStride, b3.reduceLanes(VectorOperators.ADD));
    }

    /** Four dot products of one q8_0 row with four inputs {@code inputStride} bytes apart. */
    private static void dotQ8x4(
            MemorySegment w,
            long row,
            MemorySegment x,
            long input,
            long inputStride,
            int blocks,
            MemorySegment out,
            long at,
            long outStride) {
        FloatVector acc0 = FloatVector.zero(Q8_FLOATS);
        FloatVector acc1 = FloatVector.zero(Q8_FLOATS);
        FloatVector acc2 = FloatVector.zero(Q8_FLOATS);
        FloatVector acc3 = FloatVector.zero(Q8_FLOATS);
        for (int block = 0; block < blocks; block++) {
            long blockOffset = row + (long) block * Q8_0.BLOCK_BYTES;
            long in0 = input + (long) block * Q8_0.BLOCK_SIZE * F;
            long in1 = in0 + inputStride;
            long in2 = in1 + inputStride;
            long in3 = in2 + inputStride;
            FloatVector sum0 = FloatVector.zero(Q8_FLOATS);
            FloatVector sum1 = FloatVector.zero(Q8_FLOATS);
            FloatVector sum2 = FloatVector.zero(Q8_FLOATS);
            FloatVector sum3 = FloatVector.zero(Q8_FLOATS);
            for (int half = 0; half < 2; half++) {
                ByteVector q = quants(w, blockOffset, half);
                for (int part = 0; part < Q8_PARTS; part++) {
                    FloatVector wv = widen(q, part);
                    sum0 = wv.fma(loadQ8Input(x, in0, half, part), sum0);
                    sum1 = wv.fma(loadQ8Input(x, in1, half, part), sum1);
                    sum2 = wv.fma(loadQ8Input(x, in2, half, part), sum2);
                    sum3 = wv.fma(loadQ8Input(x, in3, half, part), sum3);
                }
            }
            FloatVector d = FloatVector.broadcast(Q8_FLOATS, scale(w, blockOffset));
            acc0 = sum0.fma(d, acc0);
            acc1 = sum1.fma(d, acc1);
            acc2 = sum2.fma(d, acc2);
            acc3 = sum3.fma(d, acc3);
        }
        out.set(F32, at, acc0.reduceLanes(VectorOperators.ADD));
        out.set(F32, at + outStride, acc1.reduceLanes(VectorOperators.ADD));
        out.set(F32, at + 2 * outStride, acc2.reduceLanes(VectorOperators.ADD));
        out.set(F32, at + 3 * outStride, acc3.reduceLanes(VectorOperators.ADD));
    }

    @Override
    public void matmulQ4_0(
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd) {
        ArgumentChecks.matmulBlocks(TensorType.Q4_0,
                weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd);
        int blocks = cols / 32;
        long rowBytes = (long) blocks * Q4_0_BLOCK_BYTES;
        long inputBytes = (long) cols * F;
        long outStride = (long) rows * F;
        for (int r = rowStart; r < rowEnd; r++) {
            long row = weightsOffset + r * rowBytes;
            int b = 0;
            for (; b + 4 <= batch; b += 4) {
                if (NIBBLE_TABLES) {
                    tableQ4_0x4(weights, row, x, xOffset + b * inputBytes, inputBytes, blocks, out,
                            outOffset + b * outStride + r * F, outStride);
                } else {
                    dotQ4_0x4(weights, row, x, xOffset + b * inputBytes, inputBytes, blocks, out,
                            outOffset + b * outStride + r * F, outStride);
                }
            }
            for (; b < batch; b++) {
                out.set(F32, outOffset + b * outStride + r * F, NIBBLE_TABLES
                        ? tableQ4_0(weights, row, x, xOffset + b * inputBytes, blocks)
                        : dotQ4_0(weights, row, x, xOffset + b * inputBytes, blocks));
            }
        }
    }

    private static final int Q4_0_BLOCK_BYTES = TensorType.Q4_0.blockBytes();

    /**
     * Half {@code half} of a q4_0 block's values as signed bytes {@code q - 8}: the low nibbles of
     * its 16 bytes (values 0 to 15), or the high nibbles (values 16 to 31).
     */
    private static ByteVector q4_0Half(MemorySegment w, long blockOffset, int half) {
        ByteVector packed = ByteVector.fromMemorySegment(Q8_BYTES, w, blockOffset + 2, LE);
        return (half == 0 ? packed : highNibbles(packed)).and((byte) 0x0f).sub((byte) 8);
    }

    /**
     * Each byte's high nibble in its low four bits (the high four are garbage, for the caller to
     * mask): a 16-bit shift, one instruction, where a byte shift compiles to six.
     */
    private static ByteVector highNibbles(ByteVector packed) {
        return packed.reinterpretAsShorts().lanewise(VectorOperators.LSHR, 4).reinterpretAsBytes();
    }

    /** One q4_0 row with one input. */
    private static float dotQ4_0(MemorySegment w, long row, MemorySegment x, long input, int blocks) {
        FloatVector acc = FloatVector.zero(Q8_FLOATS);
        for (int block = 0; block < blocks; block++) {
            long blockOffset = row + (long) block * Q4_0_BLOCK_BYTES;
            long blockInput = input + (long) block * 32 * F;
            FloatVector blockSum = FloatVector.zero(Q8_FLOATS);
            for (int half = 0; half < 2; half++) {
                ByteVector q = q4_0Half(w, blockOffset, half);
                for (int part = 0; part < Q8_PARTS; part++) {
                    blockSum = widen(q, part).fma(loadQ8Input(x, blockInput, half, part), blockSum);
                }
            }
            acc = blockSum.fma(FloatVector.broadcast(Q8_FLOATS, scale(w, blockOffset)), acc);
        }
        return acc.reduceLanes(VectorOperators.ADD);
    }

    /** Four dot products of one q4_0 row with four inputs {@code inputStride} bytes apart. */
    private static void dotQ4_0x4(
            MemorySegment w,
            long row,
            MemorySegment x,
            long input,
            long inputStride,
            int blocks,
            MemorySegment out,
            long at,
            long outStride) {
        FloatVector acc0 = FloatVector.zero(Q8_FLOATS);
        FloatVector acc1 = FloatVector.zero(Q8_FLOATS);
        FloatVector acc2 = FloatVector.zero(Q8_FLOATS);
        FloatVector acc3 = FloatVector.zero(Q8_FLOATS);
        for (int block = 0; block < blocks; block++) {
            long blockOffset = row + (long) block * Q4_0_BLOCK_BYTES;
            long in0 = input + (long) block * 32 * F;
            long in1 = in0 + inputStride;
            long in2 = in1 + inputStride;
            long in3 = in2 + inputStride;
            FloatVector sum0 = FloatVector.zero(Q8_FLOATS);
            FloatVector sum1 = FloatVector.zero(Q8_FLOATS);
            FloatVector sum2 = FloatVector.zero(Q8_FLOATS);
            FloatVector sum3 = FloatVector.zero(Q8_FLOATS);
            for (int half = 0; half < 2; half++) {
                ByteVector q = q4_0Half(w, blockOffset, half);
                for (int part = 0; part < Q8_PARTS; part++) {
                    FloatVector wv = widen(q, part);
                    sum0 = wv.fma(loadQ8Input(x, in0, half, part), sum0);
                    sum1 = wv.fma(loadQ8Input(x, in1, half, part), sum1);
                    sum2 = wv.fma(loadQ8Input(x, in2, half, part), sum2);
                    sum3 = wv.fma(loadQ8Input(x, in3, half, part), sum3);
                }
            }
            FloatVector d = FloatVector.broadcast(Q8_FLOATS, scale(w, blockOffset));
            acc0 = sum0.fma(d, acc0);
            acc1 = sum1.fma(d, acc1);
            acc2 = sum2.fma(d, acc2);
            acc3 = sum3.fma(d, acc3);
        }
        out.set(F32, at, acc0.reduceLanes(VectorOperators.ADD));
        out.set(F32, at + outStride, acc1.reduceLanes(VectorOperators.ADD));
        out.set(F32, at + 2 * outStride, acc2.reduceLanes(VectorOperators.ADD));
        out.set(F32, at + 3 * outStride, acc3.reduceLanes(VectorOperators.ADD));
    }

    // ---- q4_0 interleaved by 16 rows, int8 inputs ----

    /**
     * Whether {@link #matmulQ4_0_X16} runs vector loops: it needs 8 float lanes (256 bits), one
     * per row of half a group; without them it runs {@link Q4_0X16#row} for every row.
     */
    private static final boolean X16_VECTORS = L >= 8;

    /** Whether {@link NativeInt8}'s kernels run (see there for when). */
    private static final boolean NATIVE_INT8 = NativeInt8.available();

    /**
     * The fewest inputs q4_0_x16 hands to {@link NativeInt8}: 1, as the native loop measured
     * faster at batch 1 and at batch 8 (docs/performance-notes.md); a property, to measure again.
     * Either side computes the same bits, so the choice never changes a token.
     */
    private static final int NATIVE_Q4_0_BATCH = Integer.getInteger("tandem.kernels.nativeQ4_0Batch", 1);

    /** As {@link #NATIVE_Q4_0_BATCH}, for q4_K_x16. */
    private static final int NATIVE_Q4_K_BATCH = Integer.getInteger("tandem.kernels.nativeQ4_KBatch", 1);

    /**
     * As {@link #NATIVE_Q4_0_BATCH}, for the types of {@link #matmulFiveBitsX16} other than
     * q5_0_x16 (which always goes native), by type: a property each, named after the type
     * ({@code tandem.kernels.nativeQ5_KBatch}, ...; a large value keeps the Java loops).
     */
    private static final int NATIVE_Q5_K_BATCH = Integer.getInteger("tandem.kernels.nativeQ5_KBatch", 1);

    private static final int NATIVE_Q2_K_BATCH = Integer.getInteger("tandem.kernels.nativeQ2_KBatch", 1);

    private static final int NATIVE_Q3_K_BATCH = Integer.getInteger("tandem.kernels.nativeQ3_KBatch", 1);

    private static final int NATIVE_IQ4_XS_BATCH = Integer.getInteger("tandem.kernels.nativeIQ4_XSBatch", 1);

    private static final int NATIVE_IQ4_NL_BATCH = Integer.getInteger("tandem.kernels.nativeIQ4_NLBatch", 1);

    private static final int NATIVE_Q4_1_BATCH = Integer.getInteger("tandem.kernels.nativeQ4_1Batch", 1);

    private static final int NATIVE_Q5_1_BATCH = Integer.getInteger("tandem.kernels.nativeQ5_1Batch", 1);

    /** The fewest inputs {@code type}'s matmul hands to {@link NativeInt8} (of {@link #matmulFiveBitsX16}'s types). */
    private static int nativeBatch(TensorType type) {
        return switch (type) {
            case Q5_0_X16 -> 1;
            case Q5_K_X16 -> NATIVE_Q5_K_BATCH;
            case Q2_K_X16 -> NATIVE_Q2_K_BATCH;
            case Q3_K_X16 -> NATIVE_Q3_K_BATCH;
            case IQ4_XS_X16 -> NATIVE_IQ4_XS_BATCH;
            case IQ4_NL_X16 -> NATIVE_IQ4_NL_BATCH;
            case Q4_1_X16 -> NATIVE_Q4_1_BATCH;
            case Q5_1_X16 -> NATIVE_Q5_1_BATCH;
            default -> Integer.MAX_VALUE;
        };
    }

    /** The float lanes a group's sums widen to, one per row: 16 in one vector, or 8 in each of two. */
    private static final VectorSpecies<Float> X16_FLOATS = L >= 16 ? FloatVector.SPECIES_512 : S;

    private static final VectorSpecies<Integer> X16_INTS = VectorSpecies.of(int.class, X16_FLOATS.vectorShape());

    /** Two short lanes per row of {@link #X16_FLOATS}: the products of a pair of nibble bytes. */
    private static final VectorSpecies<Short> X16_SHORTS = VectorSpecies.of(short.class, X16_FLOATS.vectorShape());

    /** The pairs of nibble bytes {@link #X16_SHORTS} widens, two per row. */
    private static final VectorSpecies<Byte> X16_BYTES =
            VectorSpecies.of(byte.class, VectorShape.forBitSize(X16_FLOATS.vectorBitSize() / 2));

    /** f16 scales, as many as {@link #X16_FLOATS} has lanes. */
    private static final VectorSpecies<Short> X16_HALVES =
            VectorSpecies.of(short.class, VectorShape.forBitSize(X16_FLOATS.length() * Short.SIZE));

    /** Float vectors per group of 16 rows: 1 or 2. */
    private static final int X16_PARTS = 16 / X16_FLOATS.length();

    /** Bytes of one part's rows in a pair of nibble bytes, and of its f16 scales: 2 per row. */
    private static final long X16_PART_BYTES = 2L * X16_FLOATS.length();

    private static final FloatVector X16_HALF = FloatVector.broadcast(X16_FLOATS, 0.5f);

    /** Inputs that {@link #x16Dots4} runs at once, sharing each unpacked byte of the weights. */
    private static final int X16_INPUTS = 4;

    /** Inputs that {@link #x16Dots8} runs at once. */
    private static final int X16_WIDE_INPUTS = 8; // Scratch.byEight's eight

    /** Blocks that {@link #x16Dots4} runs before {@link #x16Sums2} takes their sums: a few KB of scratch. */
    private static final int X16_CHUNK = 16;

    /**
     * Groups of 16 rows by vector loops, one row at a time where the range cuts a group, and the
     * last {@code rows % 16} rows one at a time (they are in the q4_0 layout): {@link Q4_0X16#row}
     * for both, the same operations as the vector loops lane by lane. Two inputs at a time share
     * the unpacking of each byte of the weights.
     */
    @Override
    public void matmulQ4_0_X16(
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd) {
        matmulQ4_0_X16(weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd, 0);
    }

    private static void matmulQ4_0_X16(
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd,
            long inputKey) {
        ArgumentChecks.matmulBlocks(TensorType.Q4_0_X16,
                weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd);
        int blocks = cols / 32;
        Scratch scratch = Scratch.get();
        Q4_0X16.Inputs in = quantizeInputs(scratch, x, xOffset, batch, cols, inputKey);
        long rowBytes = blocks * 18L;
        long outStride = (long) rows * F;
        int groupEnd = Math.min(rowEnd, rows - rows % TensorType.X16_ROWS);
        short[] sums = batch >= X16_INPUTS ? scratch.shorts(X16_CHUNK * X16_WIDE_INPUTS * X16_SHORTS.length()) : null;
        float[] scales = batch >= X16_INPUTS ? scratch.factors(blocks * X16_FLOATS.length()) : null;
        int[] byEight = batch >= X16_WIDE_INPUTS ? scratch.pairsByEight(batch / X16_WIDE_INPUTS * X16_WIDE_INPUTS * cols / 2)
                : null;
        int r = rowStart;
        while (r < rowEnd) {
            if (NATIVE_INT8 && batch >= NATIVE_Q4_0_BATCH && r % TensorType.X16_ROWS == 0
                    && r + TensorType.X16_ROWS <= groupEnd) {
                int groups = (groupEnd - r) / TensorType.X16_ROWS;
                NativeInt8.x16(TensorType.Q4_0_X16, weights, weightsOffset, r, groups, blocks, in, batch, cols, out,
                        outOffset, rows);
                r += groups * TensorType.X16_ROWS;
            } else if (X16_VECTORS && r % TensorType.X16_ROWS == 0 && r + TensorType.X16_ROWS <= groupEnd) {
                long group = weightsOffset + r * rowBytes;
                for (int part = 0; part < X16_PARTS; part++) {
                    long from = group + part * X16_PART_BYTES;
                    long at = outOffset + r * F + part * X16_FLOATS.length() * F;
                    int b = 0;
                    if (batch >= X16_INPUTS) {
                        x16AllScales(weights, from, blocks, scales);
                    }
                    while (b + X16_INPUTS <= batch) {
                        int inputs = b + X16_WIDE_INPUTS <= batch ? X16_WIDE_INPUTS : X16_INPUTS;
                        x16Groups(weights, from, blocks, in, byEight, b, inputs, cols, out, at + b * outStride,
                                outStride, sums, scales);
                        b += inputs;
                    }
                    for (; b < batch; b++) {
                        x16Group(weights, from, blocks, in, b * cols, b * blocks, out, at + b * outStride);
                    }
                }
                r += TensorType.X16_ROWS;
            } else {
                for (int b = 0; b < batch; b++) {
                    out.set(F32, outOffset + b * outStride + r * F,
                            Q4_0X16.row(weights, weightsOffset, rows, blocks, r, in, b * cols, b * blocks));
                }
                r++;
            }
        }
    }

    // ---- q8_0 interleaved by 16 rows, f32 inputs ----

    /**
     * Quant {@code k} of one part's rows, a byte per row: as many as {@link #X16_FLOATS} has lanes
     * (at least 64 bits, the narrowest byte vector, where {@link #X16_VECTORS} is false anyway).
     */
    private static final VectorSpecies<Byte> Q8X_BYTES =
            VectorSpecies.of(byte.class, VectorShape.forBitSize(Math.max(64, X16_FLOATS.length() * Byte.SIZE)));

    /** Inputs {@link #q8x16Group4} runs at once, sharing each widened vector of quants. */
    private static final int Q8X_INPUTS = 4;

    /**
     * Inputs {@link #q8x16Group8} runs at once: eight chains of FMAs per widened vector, where
     * four chains were bound by the FMA latency (1.6x the GB/s at batch 8, one thread).
     */
    private static final int Q8X_WIDE_INPUTS = 8;

    /**
     * The inputs quantized as for q4_0_x16, then groups of 16 rows by {@link NativeInt8} where it
     * runs, else by vector loops ({@link #q8x16Group}, four or eight inputs at a time by
     * {@link #q8x16Group4} and {@link #q8x16Group8}); one row at a time where the range cuts a
     * group and for the last {@code rows % 16} rows ({@link Q8_0X16#row}, the same operations lane
     * by lane). In the vector loops, per block and value, one 16-byte load holds the value's quant
     * in all 16 rows: widened to floats, it meets the input's quant broadcast as a float in one
     * fused multiply-add, with no sum across lanes anywhere; a block's sum of products is an
     * integer below 2^24, so the float chain is the exact integer sum.
     */
    @Override
    public void matmulQ8_0_X16(
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd) {
        matmulQ8_0_X16(weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd, 0);
    }

    private static void matmulQ8_0_X16(
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd,
            long inputKey) {
        ArgumentChecks.matmulBlocks(TensorType.Q8_0_X16,
                weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd);
        int blocks = cols / 32;
        Scratch scratch = Scratch.get();
        Q4_0X16.Inputs in = quantizeInputs(scratch, x, xOffset, batch, cols, inputKey);
        long rowBytes = blocks * 34L;
        long outStride = (long) rows * F;
        int lanes = X16_FLOATS.length();
        int groupEnd = Math.min(rowEnd, rows - rows % TensorType.X16_ROWS);
        float[] qs = null;
        float[] q8 = null;
        int r = rowStart;
        while (r < rowEnd) {
            if (NATIVE_INT8 && r % TensorType.X16_ROWS == 0 && r + TensorType.X16_ROWS <= groupEnd) {
                int groups = (groupEnd - r) / TensorType.X16_ROWS;
                NativeInt8.x16(TensorType.Q8_0_X16, weights, weightsOffset, r, groups, blocks, in, batch, cols, out,
                        outOffset, rows);
                r += groups * TensorType.X16_ROWS;
            } else if (X16_VECTORS && r % TensorType.X16_ROWS == 0 && r + TensorType.X16_ROWS <= groupEnd) {
                if (qs == null) {
                    // The quants as floats: each block's sum of products is an integer below 2^24,
                    // exact in an f32 chain of multiply-adds, and the loops broadcast floats.
                    qs = scratch.quantFloats(in, batch, cols);
                    q8 = scratch.quantFloatsByEight();
                }
                float[] ds = in.d();
                long group = weightsOffset + r * rowBytes;
                for (int part = 0; part < X16_PARTS; part++) {
                    long at = outOffset + (long) (r + part * lanes) * F;
                    int b = 0;
                    for (; b + Q8X_WIDE_INPUTS <= batch; b += Q8X_WIDE_INPUTS) {
                        q8x16Group8(weights, group, part, blocks, q8, b * cols, ds, b * blocks, out,
                                at + b * outStride, outStride);
                    }
                    for (; b + Q8X_INPUTS <= batch; b += Q8X_INPUTS) {
                        q8x16Group4(weights, group, part, blocks, qs, b * cols, cols, ds, b * blocks, out,
                                at + b * outStride, outStride);
                    }
                    for (; b < batch; b++) {
                        q8x16Group(weights, group, part, blocks, qs, b * cols, ds, b * blocks, out, at + b * outStride);
                    }
                }
                r += TensorType.X16_ROWS;
            } else {
                for (int b = 0; b < batch; b++) {
                    out.set(F32, outOffset + b * outStride + r * F,
                            Q8_0X16.row(weights, weightsOffset, rows, blocks, r, in, b * cols, b * blocks));
                }
                r++;
            }
        }
    }

    /** {@link #matmulFloatsX16}. */
    @Override
    public void matmulF32_X16(
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd) {
        matmulFloatsX16(TensorType.F32_X16, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                rowStart, rowEnd, 0);
    }

    /**
     * One input against {@code groups} (4, 2 or 1) whole groups from {@code at}, {@code groupBytes}
     * apart, part {@code part} of each: four streams of weights and four chains, one broadcast of
     * the input; with fewer groups the spare chains repeat the first group's and are dropped. The
     * outputs of each group at {@code to}, 64 bytes apart. One group at a time (one stream, one
     * chain), batch 1 from memory (16384 x 2816, two threads) read 0.58-1.02x the GB/s of the
     * row-major f32 loop; four at a time 1.09-1.16x, two 1.37-1.63x one in 32-row ranges. The
     * rows' sums are the same either way.
     */
    private static void f32x16Groups(MemorySegment w, long at, long groupBytes, int groups, int cols, int part,
            float[] x, int x0, MemorySegment out, long to) {
        long p = at + (long) part * X16_FLOATS.length() * F;
        long g1 = groups > 1 ? groupBytes : 0;
        long g2 = groups > 2 ? 2 * groupBytes : 0;
        long g3 = groups > 2 ? 3 * groupBytes : 0;
        FloatVector a0 = FloatVector.zero(X16_FLOATS);
        FloatVector a1 = a0;
        FloatVector a2 = a0;
        FloatVector a3 = a0;
        for (int k = 0; k < cols; k++) {
            long wk = p + k * FloatsX16.F32_VALUE_BYTES;
            FloatVector xk = FloatVector.broadcast(X16_FLOATS, x[x0 + k]);
            a0 = FloatVector.fromMemorySegment(X16_FLOATS, w, wk, LE).fma(xk, a0);
            a1 = FloatVector.fromMemorySegment(X16_FLOATS, w, wk + g1, LE).fma(xk, a1);
            a2 = FloatVector.fromMemorySegment(X16_FLOATS, w, wk + g2, LE).fma(xk, a2);
            a3 = FloatVector.fromMemorySegment(X16_FLOATS, w, wk + g3, LE).fma(xk, a3);
        }
        long groupOut = (long) TensorType.X16_ROWS * F;
        a0.intoMemorySegment(out, to, LE);
        if (groups > 1) {
            a1.intoMemorySegment(out, to + groupOut, LE);
        }
        if (groups > 2) {
            a2.intoMemorySegment(out, to + 2 * groupOut, LE);
            a3.intoMemorySegment(out, to + 3 * groupOut, LE);
        }
    }

    /** One group at {@code at}, part {@code part}, with four inputs {@code cols} floats apart, their outputs {@code outStride} bytes apart. */
    private static void f32x16Group4(MemorySegment w, long at, int cols, int part, float[] x, int x0,
            MemorySegment out, long to, long outStride) {
        long p = at + (long) part * X16_FLOATS.length() * F;
        FloatVector a0 = FloatVector.zero(X16_FLOATS);
        FloatVector a1 = a0;
        FloatVector a2 = a0;
        FloatVector a3 = a0;
        for (int k = 0; k < cols; k++) {
            FloatVector v = FloatVector.fromMemorySegment(X16_FLOATS, w, p + k * FloatsX16.F32_VALUE_BYTES, LE);
            int xk = x0 + k;
            a0 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk]), a0);
            a1 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + cols]), a1);
            a2 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 2 * cols]), a2);
            a3 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 3 * cols]), a3);
        }
        a0.intoMemorySegment(out, to, LE);
        a1.intoMemorySegment(out, to + outStride, LE);
        a2.intoMemorySegment(out, to + 2 * outStride, LE);
        a3.intoMemorySegment(out, to + 3 * outStride, LE);
    }

    /**
     * {@link #f32x16Group4} for eight inputs: eight chains per loaded vector of weights, the
     * inputs side by side in {@code x} from {@code x0} ({@link Scratch#heapInputsByEight}), so
     * the eight broadcasts of a value are at one index and constant offsets.
     */
    private static void f32x16Group8(MemorySegment w, long at, int cols, int part, float[] x, int x0,
            MemorySegment out, long to, long outStride) {
        long p = at + (long) part * X16_FLOATS.length() * F;
        FloatVector a0 = FloatVector.zero(X16_FLOATS);
        FloatVector a1 = a0;
        FloatVector a2 = a0;
        FloatVector a3 = a0;
        FloatVector a4 = a0;
        FloatVector a5 = a0;
        FloatVector a6 = a0;
        FloatVector a7 = a0;
        for (int k = 0; k < cols; k++) {
            FloatVector v = FloatVector.fromMemorySegment(X16_FLOATS, w, p + k * FloatsX16.F32_VALUE_BYTES, LE);
            int xk = x0 + 8 * k;
            a0 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk]), a0);
            a1 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 1]), a1);
            a2 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 2]), a2);
            a3 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 3]), a3);
            a4 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 4]), a4);
            a5 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 5]), a5);
            a6 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 6]), a6);
            a7 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 7]), a7);
        }
        a0.intoMemorySegment(out, to, LE);
        a1.intoMemorySegment(out, to + outStride, LE);
        a2.intoMemorySegment(out, to + 2 * outStride, LE);
        a3.intoMemorySegment(out, to + 3 * outStride, LE);
        a4.intoMemorySegment(out, to + 4 * outStride, LE);
        a5.intoMemorySegment(out, to + 5 * outStride, LE);
        a6.intoMemorySegment(out, to + 6 * outStride, LE);
        a7.intoMemorySegment(out, to + 7 * outStride, LE);
    }

    @Override
    public void matmulF16_X16(
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd) {
        matmulFloatsX16(TensorType.F16_X16, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                rowStart, rowEnd, 0);
    }

    @Override
    public void matmulBF16_X16(
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd) {
        matmulFloatsX16(TensorType.BF16_X16, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                rowStart, rowEnd, 0);
    }

    /**
     * The float types interleaved by 16 rows ({@code type} {@link TensorType#F32_X16},
     * {@link TensorType#F16_X16} or {@link TensorType#BF16_X16}): groups of 16 rows by vector loops,
     * eight inputs at a time ({@link #f32x16Group8}, {@link #f16x16Group8}, {@link #bf16x16Group8}),
     * four at a time ({@code ...Group4}), the rest one at a time against four or two groups at once
     * where the range holds them ({@code ...Groups}); one row at a time where the range cuts a group
     * and for the last {@code rows % 16} rows ({@link FloatsX16#row}, the same operations lane by
     * lane). Per value, one load holds it in all 16 rows; each input's value, broadcast from a copy
     * of the inputs on the heap, meets it in one fused multiply-add. Each (row, input) is one chain
     * in the order of the values, at every batch. Halves are widened exactly where they are used
     * ({@link #bf16x16}, {@link #f16x16Groups}), except f16 eight inputs at a time, which widen 64
     * values of a group at a time into scratch ({@link #f16x16Group8}). f16 through that scratch at
     * batch 1 read 15-22 GB/s from memory on two threads, as the row-major f16 loop does; in the
     * loop, against the row-major loops (two threads, in-JVM, 64-row parts): f16 batch 1 from
     * memory 3.4-3.7x, batch 8 1.22x; bf16 batch 1 1.62-1.81x, batch 8 1.22x, batch 64 1.81x.
     * The loops of the three types are near-copies on purpose: one loop over a per-type widening
     * helper boxed its vectors wherever C2 compiled the helper on its own and left it out of line
     * (see {@link #f16x16Groups}).
     */
    private static void matmulFloatsX16(
            TensorType type,
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd,
            long inputKey) {
        ArgumentChecks.matmulBlocks(type,
                weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd);
        TensorType plain = type.source();
        long rowBytes = plain.rowBytes(cols);
        long groupBytes = TensorType.X16_ROWS * rowBytes;
        long outStride = (long) rows * F;
        long xStride = (long) cols * F;
        int lanes = X16_FLOATS.length();
        int groupEnd = Math.min(rowEnd, rows - rows % TensorType.X16_ROWS);
        int fours = batch - batch % 4;
        float[] xs = null;
        float[] x8 = null;
        float[] wide = null;
        int r = rowStart;
        while (r < rowEnd) {
            if (X16_VECTORS && r % TensorType.X16_ROWS == 0 && r + TensorType.X16_ROWS <= groupEnd) {
                if (xs == null) {
                    Scratch scratch = Scratch.get();
                    xs = scratch.heapInputs(inputKey, x, xOffset, batch, cols);
                    x8 = scratch.heapInputsByEight();
                    wide = type == TensorType.F16_X16 && batch >= 8 ? scratch.wide(F16_CHUNK * TensorType.X16_ROWS)
                            : null;
                }
                int whole = fours < batch ? (groupEnd - r) / TensorType.X16_ROWS : 1;
                int groups = whole >= 4 ? 4 : whole >= 2 ? 2 : 1;
                for (int g = 0; g < groups; g++) {
                    long group = weightsOffset + (r + g * TensorType.X16_ROWS) * rowBytes;
                    for (int part = 0; part < X16_PARTS; part++) {
                        long at = outOffset + (long) (r + g * TensorType.X16_ROWS + part * lanes) * F;
                        int b = 0;
                        for (; b + 8 <= batch; b += 8) {
                            long to = at + b * outStride;
                            switch (type) {
                                case F32_X16 -> f32x16Group8(weights, group, cols, part, x8, b * cols, out, to, outStride);
                                case F16_X16 -> f16x16Group8(weights, group, cols, wide, part, xs, b * cols, out, to,
                                        outStride);
                                default -> bf16x16Group8(weights, group, cols, part, x8, b * cols, out, to, outStride);
                            }
                        }
                        for (; b < fours; b += 4) {
                            long to = at + b * outStride;
                            switch (type) {
                                case F32_X16 -> f32x16Group4(weights, group, cols, part, xs, b * cols, out, to, outStride);
                                case F16_X16 -> f16x16Group4(weights, group, cols, part, xs, b * cols, out, to, outStride);
                                default -> bf16x16Group4(weights, group, cols, part, xs, b * cols, out, to, outStride);
                            }
                        }
                    }
                }
                long group = weightsOffset + r * rowBytes;
                for (int b = fours; b < batch; b++) {
                    for (int part = 0; part < X16_PARTS; part++) {
                        long to = outOffset + b * outStride + (long) (r + part * lanes) * F;
                        switch (type) {
                            case F32_X16 -> f32x16Groups(weights, group, groupBytes, groups, cols, part, xs, b * cols,
                                    out, to);
                            case F16_X16 -> f16x16Groups(weights, group, groupBytes, groups, cols, part, xs, b * cols,
                                    out, to);
                            default -> bf16x16Groups(weights, group, groupBytes, groups, cols, part, xs, b * cols,
                                    out, to);
                        }
                    }
                }
                r += groups * TensorType.X16_ROWS;
            } else {
                for (int b = 0; b < batch; b++) {
                    out.set(F32, outOffset + b * outStride + r * F,
                            FloatsX16.row(plain, weights, weightsOffset, rows, cols, r, x, xOffset + b * xStride));
                }
                r++;
            }
        }
    }

    /** Value {@code k} of one part's rows of a bf16_x16 group, at {@code at}, widened exactly: one 16-bit shift. */
    private static FloatVector bf16x16(MemorySegment w, long at) {
        return ((IntVector) ShortVector.fromMemorySegment(X16_HALVES, w, at, LE).castShape(X16_INTS, 0))
                .lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
    }

    /**
     * {@link #f32x16Groups} for bf16, widened in the loop.
     */
    private static void bf16x16Groups(MemorySegment w, long at, long groupBytes, int groups, int cols, int part,
            float[] x, int x0, MemorySegment out, long to) {
        long p = at + 2L * part * X16_FLOATS.length();
        long g1 = groups > 1 ? groupBytes : 0;
        long g2 = groups > 2 ? 2 * groupBytes : 0;
        long g3 = groups > 2 ? 3 * groupBytes : 0;
        FloatVector a0 = FloatVector.zero(X16_FLOATS);
        FloatVector a1 = a0;
        FloatVector a2 = a0;
        FloatVector a3 = a0;
        for (int k = 0; k < cols; k++) {
            FloatVector xk = FloatVector.broadcast(X16_FLOATS, x[x0 + k]);
            long wk = p + k * FloatsX16.HALF_VALUE_BYTES;
            a0 = bf16x16(w, wk).fma(xk, a0);
            a1 = bf16x16(w, wk + g1).fma(xk, a1);
            a2 = bf16x16(w, wk + g2).fma(xk, a2);
            a3 = bf16x16(w, wk + g3).fma(xk, a3);
        }
        long groupOut = (long) TensorType.X16_ROWS * F;
        a0.intoMemorySegment(out, to, LE);
        if (groups > 1) {
            a1.intoMemorySegment(out, to + groupOut, LE);
        }
        if (groups > 2) {
            a2.intoMemorySegment(out, to + 2 * groupOut, LE);
            a3.intoMemorySegment(out, to + 3 * groupOut, LE);
        }
    }

    /** One group at {@code at}, part {@code part}, with four inputs {@code cols} floats apart, their outputs {@code outStride} bytes apart. */
    private static void bf16x16Group4(MemorySegment w, long at, int cols, int part, float[] x, int x0,
            MemorySegment out, long to, long outStride) {
        long p = at + 2L * part * X16_FLOATS.length();
        FloatVector a0 = FloatVector.zero(X16_FLOATS);
        FloatVector a1 = a0;
        FloatVector a2 = a0;
        FloatVector a3 = a0;
        for (int k = 0; k < cols; k++) {
            FloatVector v = bf16x16(w, p + k * FloatsX16.HALF_VALUE_BYTES);
            int xk = x0 + k;
            a0 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk]), a0);
            a1 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + cols]), a1);
            a2 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 2 * cols]), a2);
            a3 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 3 * cols]), a3);
        }
        a0.intoMemorySegment(out, to, LE);
        a1.intoMemorySegment(out, to + outStride, LE);
        a2.intoMemorySegment(out, to + 2 * outStride, LE);
        a3.intoMemorySegment(out, to + 3 * outStride, LE);
    }

    /** {@link #bf16x16Group4} for eight inputs side by side (as {@link #f32x16Group8}): eight chains per widened vector. */
    private static void bf16x16Group8(MemorySegment w, long at, int cols, int part, float[] x, int x0,
            MemorySegment out, long to, long outStride) {
        long p = at + 2L * part * X16_FLOATS.length();
        FloatVector a0 = FloatVector.zero(X16_FLOATS);
        FloatVector a1 = a0;
        FloatVector a2 = a0;
        FloatVector a3 = a0;
        FloatVector a4 = a0;
        FloatVector a5 = a0;
        FloatVector a6 = a0;
        FloatVector a7 = a0;
        for (int k = 0; k < cols; k++) {
            FloatVector v = bf16x16(w, p + k * FloatsX16.HALF_VALUE_BYTES);
            int xk = x0 + 8 * k;
            a0 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk]), a0);
            a1 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 1]), a1);
            a2 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 2]), a2);
            a3 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 3]), a3);
            a4 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 4]), a4);
            a5 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 5]), a5);
            a6 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 6]), a6);
            a7 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 7]), a7);
        }
        a0.intoMemorySegment(out, to, LE);
        a1.intoMemorySegment(out, to + outStride, LE);
        a2.intoMemorySegment(out, to + 2 * outStride, LE);
        a3.intoMemorySegment(out, to + 3 * outStride, LE);
        a4.intoMemorySegment(out, to + 4 * outStride, LE);
        a5.intoMemorySegment(out, to + 5 * outStride, LE);
        a6.intoMemorySegment(out, to + 6 * outStride, LE);
        a7.intoMemorySegment(out, to + 7 * outStride, LE);
    }

    /**
     * {@link #bf16x16Groups} for f16, each finite half widened exactly in the loop, written out (as
     * a helper, C2 compiled it alone in the suite's JVM and then left it out of line, boxing the
     * vectors): its magnitude's bits moved to an f32's and scaled by 2^112 (exact for subnormals
     * too), then its sign, bit 31 of the lane as {@code castShape} sign-extends the half (a mask;
     * moving bit 15 up cost a shift more a value, and 24% of the loop's speed from memory). f16_x16
     * holds no infinities or NaN ({@link QuantOps#interleaveF16});
     * handling them here, by a branch to {@link #widenF16}, a blend or a masked or, boxed.
     */
    private static void f16x16Groups(MemorySegment w, long at, long groupBytes, int groups, int cols, int part,
            float[] x, int x0, MemorySegment out, long to) {
        long p = at + 2L * part * X16_FLOATS.length();
        long g1 = groups > 1 ? groupBytes : 0;
        long g2 = groups > 2 ? 2 * groupBytes : 0;
        long g3 = groups > 2 ? 3 * groupBytes : 0;
        FloatVector a0 = FloatVector.zero(X16_FLOATS);
        FloatVector a1 = a0;
        FloatVector a2 = a0;
        FloatVector a3 = a0;
        for (int k = 0; k < cols; k++) {
            FloatVector xk = FloatVector.broadcast(X16_FLOATS, x[x0 + k]);
            long wk = p + k * FloatsX16.HALF_VALUE_BYTES;
            IntVector h0 = (IntVector) ShortVector.fromMemorySegment(X16_HALVES, w, wk, LE)
                    .castShape(X16_INTS, 0);
            a0 = h0.and(0x7fff).lanewise(VectorOperators.LSHL, 13).reinterpretAsFloats().mul(0x1p112f)
                    .reinterpretAsInts().or(h0.and(0x8000_0000))
                    .reinterpretAsFloats().fma(xk, a0);
            IntVector h1 = (IntVector) ShortVector.fromMemorySegment(X16_HALVES, w, wk + g1, LE)
                    .castShape(X16_INTS, 0);
            a1 = h1.and(0x7fff).lanewise(VectorOperators.LSHL, 13).reinterpretAsFloats().mul(0x1p112f)
                    .reinterpretAsInts().or(h1.and(0x8000_0000))
                    .reinterpretAsFloats().fma(xk, a1);
            IntVector h2 = (IntVector) ShortVector.fromMemorySegment(X16_HALVES, w, wk + g2, LE)
                    .castShape(X16_INTS, 0);
            a2 = h2.and(0x7fff).lanewise(VectorOperators.LSHL, 13).reinterpretAsFloats().mul(0x1p112f)
                    .reinterpretAsInts().or(h2.and(0x8000_0000))
                    .reinterpretAsFloats().fma(xk, a2);
            IntVector h3 = (IntVector) ShortVector.fromMemorySegment(X16_HALVES, w, wk + g3, LE)
                    .castShape(X16_INTS, 0);
            a3 = h3.and(0x7fff).lanewise(VectorOperators.LSHL, 13).reinterpretAsFloats().mul(0x1p112f)
                    .reinterpretAsInts().or(h3.and(0x8000_0000))
                    .reinterpretAsFloats().fma(xk, a3);
        }
        long groupOut = (long) TensorType.X16_ROWS * F;
        a0.intoMemorySegment(out, to, LE);
        if (groups > 1) {
            a1.intoMemorySegment(out, to + groupOut, LE);
        }
        if (groups > 2) {
            a2.intoMemorySegment(out, to + 2 * groupOut, LE);
            a3.intoMemorySegment(out, to + 3 * groupOut, LE);
        }
    }

    /** {@link #bf16x16Group4} for f16, widened as in {@link #f16x16Groups}. */
    private static void f16x16Group4(MemorySegment w, long at, int cols, int part, float[] x, int x0,
            MemorySegment out, long to, long outStride) {
        long p = at + 2L * part * X16_FLOATS.length();
        FloatVector a0 = FloatVector.zero(X16_FLOATS);
        FloatVector a1 = a0;
        FloatVector a2 = a0;
        FloatVector a3 = a0;
        for (int k = 0; k < cols; k++) {
            IntVector h = (IntVector) ShortVector.fromMemorySegment(X16_HALVES, w, p + k * FloatsX16.HALF_VALUE_BYTES, LE)
                    .castShape(X16_INTS, 0);
            FloatVector v = h.and(0x7fff).lanewise(VectorOperators.LSHL, 13).reinterpretAsFloats().mul(0x1p112f)
                    .reinterpretAsInts().or(h.and(0x8000_0000))
                    .reinterpretAsFloats();
            int xk = x0 + k;
            a0 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk]), a0);
            a1 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + cols]), a1);
            a2 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 2 * cols]), a2);
            a3 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 3 * cols]), a3);
        }
        a0.intoMemorySegment(out, to, LE);
        a1.intoMemorySegment(out, to + outStride, LE);
        a2.intoMemorySegment(out, to + 2 * outStride, LE);
        a3.intoMemorySegment(out, to + 3 * outStride, LE);
    }

    /**
     * {@link #bf16x16Group8} for f16: {@link #F16_CHUNK} values of the group at a time widened into
     * this thread's scratch by {@link #f16sToFloats} (the {@code vcvtph2ps} loop), which costs less
     * per eight inputs than widening in the loop as {@link #f16x16Groups} does (small F16 prompt,
     * decoder A/B: 1741/2071 tokens/s in the loop, 1975/2803 through the scratch, the row-major
     * build 1749-2253).
     */
    private static void f16x16Group8(MemorySegment w, long at, int cols, float[] wide, int part, float[] x, int x0,
            MemorySegment out, long to, long outStride) {
        int lanes = X16_FLOATS.length();
        FloatVector a0 = FloatVector.zero(X16_FLOATS);
        FloatVector a1 = a0;
        FloatVector a2 = a0;
        FloatVector a3 = a0;
        FloatVector a4 = a0;
        FloatVector a5 = a0;
        FloatVector a6 = a0;
        FloatVector a7 = a0;
        for (int k0 = 0; k0 < cols; k0 += F16_CHUNK) {
            int n = Math.min(F16_CHUNK, cols - k0);
            f16sToFloats(w, at + k0 * FloatsX16.HALF_VALUE_BYTES, wide, n * TensorType.X16_ROWS);
            int xk0 = x0 + k0;
            for (int k = 0; k < n; k++) {
                FloatVector v = FloatVector.fromArray(X16_FLOATS, wide, k * TensorType.X16_ROWS + part * lanes);
                int xk = xk0 + k;
                a0 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk]), a0);
                a1 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + cols]), a1);
                a2 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 2 * cols]), a2);
                a3 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 3 * cols]), a3);
                a4 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 4 * cols]), a4);
                a5 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 5 * cols]), a5);
                a6 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 6 * cols]), a6);
                a7 = v.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 7 * cols]), a7);
            }
        }
        a0.intoMemorySegment(out, to, LE);
        a1.intoMemorySegment(out, to + outStride, LE);
        a2.intoMemorySegment(out, to + 2 * outStride, LE);
        a3.intoMemorySegment(out, to + 3 * outStride, LE);
        a4.intoMemorySegment(out, to + 4 * outStride, LE);
        a5.intoMemorySegment(out, to + 5 * outStride, LE);
        a6.intoMemorySegment(out, to + 6 * outStride, LE);
        a7.intoMemorySegment(out, to + 7 * outStride, LE);
    }

    /** Values of a group {@link #f16x16Group8} widens at a time: 4 KB of floats. */
    private static final int F16_CHUNK = 64;

    /** As {@link #halvesToFloats(MemorySegment, long, float[], int)}: {@code n} f16 from {@code from} into {@code wide}. */
    private static void f16sToFloats(MemorySegment w, long from, float[] wide, int n) {
        for (int i = 0; i < n; i++) {
            wide[i] = Float.float16ToFloat(w.get(LittleEndian.F16, from + 2L * i));
        }
    }

    /** Quant {@code k} of one part's rows (at {@code at}), widened to floats. */
    private static FloatVector q8x16Quants(MemorySegment w, long at) {
        return (FloatVector) ByteVector.fromMemorySegment(Q8X_BYTES, w, at, LE)
                .convertShape(VectorOperators.B2F, X16_FLOATS, 0);
    }

    /**
     * One part of a group of 16 rows with one input at {@code x0}: per block, 32 multiply-adds,
     * then one with the scales. A pair of blocks at a time ({@link Q8_0X16#scaleAt}'s layout), each
     * its own chain of multiply-adds, side by side in one pass over the pair's bytes. One block's
     * chain of 32 dependent multiply-adds bounded the loop by their latency: a matrix in the
     * caches, one thread, read 21.4 GB/s that way, where q4_0_x16, with twice the values per
     * byte, read 25, and two chains 29.2. Two blocks' chains in q8_0's order of the blocks read
     * two streams 544 bytes apart and ran slower from memory (0.74-0.80x). A last odd block runs
     * alone, its second chain reading its own quants again and then dropped (one loop body, not
     * two: a second loop for the odd block passed C2's node budget and boxed every vector).
     */
    private static void q8x16Group(MemorySegment w, long group, int part, int blocks, float[] x, int x0,
            float[] ds, int d0, MemorySegment out, long at) {
        int lanes = X16_FLOATS.length();
        FloatVector acc = FloatVector.zero(X16_FLOATS);
        for (int b = 0; b < blocks; b += 2) {
            boolean pair = b + 1 < blocks;
            // Q8_0X16.scaleAt and quantAt for b even, written out (through them: 0.93-0.95x).
            long block = group + b * Q8_0X16.GROUP_BLOCK_BYTES;
            long quants = block + (pair ? 64 : 32) + (long) part * lanes;
            long stride = pair ? 32 : 16;
            long second = pair ? 16 : 0;
            int xb = x0 + b * 32;
            int xNext = pair ? xb + 32 : xb;
            FloatVector sum = FloatVector.zero(X16_FLOATS);
            FloatVector sumNext = sum;
            for (int k = 0; k < 32; k++) {
                long q = quants + stride * k;
                sum = q8x16Quants(w, q).fma(FloatVector.broadcast(X16_FLOATS, x[xb + k]), sum);
                sumNext = q8x16Quants(w, q + second).fma(FloatVector.broadcast(X16_FLOATS, x[xNext + k]), sumNext);
            }
            // The scales widened as x16Scales does, written out: as a helper of their own, C2
            // compiled them alone in the decoder's order of compilation (and in the test suite's,
            // without bin/compile-commands) and then left them out of line, boxing the vectors
            // (JFR: convert0 and ternaryOp fallbacks).
            IntVector h = (IntVector) ShortVector.fromMemorySegment(X16_HALVES, w, block + 2L * part * lanes, LE)
                    .castShape(X16_INTS, 0);
            IntVector magnitude = h.and(0x7fff);
            FloatVector d = magnitude.compare(VectorOperators.GE, 0x7c00).anyTrue() ? widenF16(h)
                    : magnitude.lanewise(VectorOperators.LSHL, 13).reinterpretAsFloats().mul(0x1p112f)
                            .reinterpretAsInts().or(h.and(0x8000).lanewise(VectorOperators.LSHL, 16))
                            .reinterpretAsFloats();
            acc = sum.fma(d.mul(ds[d0 + b]), acc);
            if (pair) {
                IntVector hNext = (IntVector) ShortVector.fromMemorySegment(X16_HALVES, w,
                        block + 32 + 2L * part * lanes, LE).castShape(X16_INTS, 0);
                IntVector magnitudeNext = hNext.and(0x7fff);
                FloatVector dNext = magnitudeNext.compare(VectorOperators.GE, 0x7c00).anyTrue() ? widenF16(hNext)
                        : magnitudeNext.lanewise(VectorOperators.LSHL, 13).reinterpretAsFloats().mul(0x1p112f)
                                .reinterpretAsInts().or(hNext.and(0x8000).lanewise(VectorOperators.LSHL, 16))
                                .reinterpretAsFloats();
                acc = sumNext.fma(dNext.mul(ds[d0 + b + 1]), acc);
            }
        }
        acc.intoMemorySegment(out, at, LE);
    }

    /**
     * {@link #q8x16Group} for eight inputs side by side in {@code x} from {@code x0}
     * ({@link Scratch#heapInputsByEight}), their outputs {@code outStride} bytes apart: each
     * input's sums in {@link #q8x16Group}'s order, so the same bits as one input at a time. With
     * the inputs side by side rather than {@code cols} floats apart, the eight broadcasts of a
     * value sit at one index and constant offsets: 60.2 → 67.5 GMAC/s (512 x 512, in cache) and
     * 30.4 → 34.8 (65536 x 1024, from memory), one thread, the two builds alternating in one JVM;
     * f32 and bf16 gained more from memory (1.75x and 1.9x in the same runs), while
     * f16's loop, which widens its weights into scratch first, lost 7-10% in cache and reads the
     * inputs {@code cols} apart as before.
     */
    private static void q8x16Group8(MemorySegment w, long group, int part, int blocks, float[] x, int x0,
            float[] ds, int d0, MemorySegment out, long at, long outStride) {
        int lanes = X16_FLOATS.length();
        FloatVector a0 = FloatVector.zero(X16_FLOATS);
        FloatVector a1 = a0;
        FloatVector a2 = a0;
        FloatVector a3 = a0;
        FloatVector a4 = a0;
        FloatVector a5 = a0;
        FloatVector a6 = a0;
        FloatVector a7 = a0;
        int paired = Q8_0X16.paired(blocks);
        for (int b = 0; b < blocks; b++) {
            // Q8_0X16.scaleAt and quantAt, written out: called here per block they cost 3-7%
            // (batch 8 and batch 1, both orders in one JVM).
            int odd = b % 2;
            boolean inPair = b < paired;
            long block = group + (b - odd) * Q8_0X16.GROUP_BLOCK_BYTES + (inPair ? 32L * odd : 0);
            long quants = group + (b - odd) * Q8_0X16.GROUP_BLOCK_BYTES + (inPair ? 64 + 16L * odd : 32)
                    + (long) part * lanes;
            long stride = inPair ? 32 : 16;
            int xb = x0 + b * 32 * 8;
            FloatVector s0 = FloatVector.zero(X16_FLOATS);
            FloatVector s1 = s0;
            FloatVector s2 = s0;
            FloatVector s3 = s0;
            FloatVector s4 = s0;
            FloatVector s5 = s0;
            FloatVector s6 = s0;
            FloatVector s7 = s0;
            for (int k = 0; k < 32; k++) {
                FloatVector q = q8x16Quants(w, quants + stride * k);
                int xk = xb + 8 * k;
                s0 = q.fma(FloatVector.broadcast(X16_FLOATS, x[xk]), s0);
                s1 = q.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 1]), s1);
                s2 = q.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 2]), s2);
                s3 = q.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 3]), s3);
                s4 = q.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 4]), s4);
                s5 = q.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 5]), s5);
                s6 = q.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 6]), s6);
                s7 = q.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 7]), s7);
            }
            // The scales widened as in q8x16Group, written out for the same reason.
            IntVector h = (IntVector) ShortVector.fromMemorySegment(X16_HALVES, w, block + 2L * part * lanes, LE)
                    .castShape(X16_INTS, 0);
            IntVector magnitude = h.and(0x7fff);
            FloatVector d = magnitude.compare(VectorOperators.GE, 0x7c00).anyTrue() ? widenF16(h)
                    : magnitude.lanewise(VectorOperators.LSHL, 13).reinterpretAsFloats().mul(0x1p112f)
                            .reinterpretAsInts().or(h.and(0x8000).lanewise(VectorOperators.LSHL, 16))
                            .reinterpretAsFloats();
            int db = d0 + b;
            a0 = s0.fma(d.mul(ds[db]), a0);
            a1 = s1.fma(d.mul(ds[db + blocks]), a1);
            a2 = s2.fma(d.mul(ds[db + 2 * blocks]), a2);
            a3 = s3.fma(d.mul(ds[db + 3 * blocks]), a3);
            a4 = s4.fma(d.mul(ds[db + 4 * blocks]), a4);
            a5 = s5.fma(d.mul(ds[db + 5 * blocks]), a5);
            a6 = s6.fma(d.mul(ds[db + 6 * blocks]), a6);
            a7 = s7.fma(d.mul(ds[db + 7 * blocks]), a7);
        }
        a0.intoMemorySegment(out, at, LE);
        a1.intoMemorySegment(out, at + outStride, LE);
        a2.intoMemorySegment(out, at + 2 * outStride, LE);
        a3.intoMemorySegment(out, at + 3 * outStride, LE);
        a4.intoMemorySegment(out, at + 4 * outStride, LE);
        a5.intoMemorySegment(out, at + 5 * outStride, LE);
        a6.intoMemorySegment(out, at + 6 * outStride, LE);
        a7.intoMemorySegment(out, at + 7 * outStride, LE);
    }

    /** {@link #q8x16Group} for four inputs {@code xStride} floats apart, their outputs {@code outStride} bytes apart. */
    private static void q8x16Group4(MemorySegment w, long group, int part, int blocks, float[] x, int x0,
            int xStride, float[] ds, int d0, MemorySegment out, long at, long outStride) {
        int lanes = X16_FLOATS.length();
        FloatVector a0 = FloatVector.zero(X16_FLOATS);
        FloatVector a1 = a0;
        FloatVector a2 = a0;
        FloatVector a3 = a0;
        int paired = Q8_0X16.paired(blocks);
        for (int b = 0; b < blocks; b++) {
            // Q8_0X16.scaleAt and quantAt, written out: called here per block they cost 3-7%
            // (batch 8 and batch 1, both orders in one JVM).
            int odd = b % 2;
            boolean inPair = b < paired;
            long block = group + (b - odd) * Q8_0X16.GROUP_BLOCK_BYTES + (inPair ? 32L * odd : 0);
            long quants = group + (b - odd) * Q8_0X16.GROUP_BLOCK_BYTES + (inPair ? 64 + 16L * odd : 32)
                    + (long) part * lanes;
            long stride = inPair ? 32 : 16;
            int xb = x0 + b * 32;
            FloatVector s0 = FloatVector.zero(X16_FLOATS);
            FloatVector s1 = s0;
            FloatVector s2 = s0;
            FloatVector s3 = s0;
            for (int k = 0; k < 32; k++) {
                FloatVector q = q8x16Quants(w, quants + stride * k);
                int xk = xb + k;
                s0 = q.fma(FloatVector.broadcast(X16_FLOATS, x[xk]), s0);
                s1 = q.fma(FloatVector.broadcast(X16_FLOATS, x[xk + xStride]), s1);
                s2 = q.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 2 * xStride]), s2);
                s3 = q.fma(FloatVector.broadcast(X16_FLOATS, x[xk + 3 * xStride]), s3);
            }
            // The scales widened as x16Scales does, written out: as a helper of their own, C2
            // compiled them alone in the decoder's order of compilation and then left them out of
            // line, boxing the vectors (JFR: convert0 and ternaryOp fallbacks).
            IntVector h = (IntVector) ShortVector.fromMemorySegment(X16_HALVES, w, block + 2L * part * lanes, LE)
                    .castShape(X16_INTS, 0);
            IntVector magnitude = h.and(0x7fff);
            FloatVector d = magnitude.compare(VectorOperators.GE, 0x7c00).anyTrue() ? widenF16(h)
                    : magnitude.lanewise(VectorOperators.LSHL, 13).reinterpretAsFloats().mul(0x1p112f)
                            .reinterpretAsInts().or(h.and(0x8000).lanewise(VectorOperators.LSHL, 16))
                            .reinterpretAsFloats();
            int db = d0 + b;
            a0 = s0.fma(d.mul(ds[db]), a0);
            a1 = s1.fma(d.mul(ds[db + blocks]), a1);
            a2 = s2.fma(d.mul(ds[db + 2 * blocks]), a2);
            a3 = s3.fma(d.mul(ds[db + 3 * blocks]), a3);
        }
        a0.intoMemorySegment(out, at, LE);
        a1.intoMemorySegment(out, at + outStride, LE);
        a2.intoMemorySegment(out, at + 2 * outStride, LE);
        a3.intoMemorySegment(out, at + 3 * outStride, LE);
    }

    /**
     * The {@code batch} inputs at {@code x}, each quantized by {@link #quantizeX16} into
     * {@code scratch}, this thread's, or what it kept from the last call with the same nonzero {@code inputKey}
     * (see {@link MatmulOps#matmul(TensorType, MemorySegment, long, MemorySegment, long, MemorySegment,
     * long, int, int, int, int, int, long)}).
     */
    private static Q4_0X16.Inputs quantizeInputs(Scratch scratch, MemorySegment x, long xOffset, int batch, int cols,
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
    static void quantizeX16(MemorySegment x, long at, int blocks, Q4_0X16.Inputs in, int qBase, int blockBase) {
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

    /**
     * Nibble bytes {@code 2j} and {@code 2j + 1} of one part's rows of a block (at {@code block},
     * already moved to the part), zero-extended: row {@code i}'s in lanes {@code 2i} and {@code 2i + 1}.
     */
    private static ShortVector x16Bytes(MemorySegment w, long block, int j) {
        return x16Load(w, block + 32 + 32L * j);
    }

    /** The pair of nibble bytes of a part's rows at {@code at}, zero-extended (see {@link #x16Bytes}). */
    private static ShortVector x16Load(MemorySegment w, long at) {
        return (ShortVector) ByteVector.fromMemorySegment(X16_BYTES, w, at, LE)
                .convertShape(VectorOperators.ZERO_EXTEND_B2S, X16_SHORTS, 0);
    }

    /** The low nibbles of {@link #x16Bytes}. */
    private static ShortVector x16Low(ShortVector packed) {
        return packed.and((short) 0x0f);
    }

    /** The high nibbles of {@link #x16Bytes}. */
    private static ShortVector x16High(ShortVector packed) {
        return packed.lanewise(VectorOperators.LSHR, 4);
    }

    /** Quants {@code 2m} and {@code 2m + 1} in every even and odd short lane, to multiply {@link #x16Bytes} with. */
    private static ShortVector x16Pair(int[] pairs, int m) {
        return IntVector.broadcast(X16_INTS, pairs[m]).reinterpretAsShorts();
    }

    /**
     * One part's integer dot products of a block as floats: each row's two short lanes added (as
     * the halves of an int, sign-extended), less {@code sum8} (each nibble means itself less 8).
     */
    private static FloatVector x16Sums(ShortVector sums, int sum8) {
        IntVector both = sums.reinterpretAsInts();
        return (FloatVector) both.lanewise(VectorOperators.LSHL, 16).lanewise(VectorOperators.ASHR, 16)
                .add(both.lanewise(VectorOperators.ASHR, 16))
                .sub(sum8)
                .convert(VectorOperators.I2F, 0);
    }

    /** One part's f16 scales of a block (at {@code block}, already moved to the part), widened. */
    /**
     * Every block's scales of a part ({@link #x16Scales}) into {@code scales}, a vector per block:
     * widened once for all the part's inputs, where {@link #x16Sums2} widened them again for every
     * two inputs.
     */
    private static void x16AllScales(MemorySegment w, long part, int blocks, float[] scales) {
        int lanes = X16_FLOATS.length();
        for (int b = 0; b < blocks; b++) {
            x16Scales(w, part + b * Q4_0X16.GROUP_BLOCK_BYTES).intoArray(scales, b * lanes);
        }
    }

    private static FloatVector x16Scales(MemorySegment w, long block) {
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


    /**
     * One part of a group of 16 rows (its weights from {@code part}, which is the group's start
     * moved to the part) with one input: per block, each pair of nibble bytes times the pair of
     * quants it meets, in short lanes (at most {@code 15 * 127} in magnitude, and each lane adds 16
     * of them), then {@code sum8} taken off once per block (each nibble means itself less 8) and
     * one fused multiply-add per row, as {@link #x16Dots4} does. Taking the 8 off each nibble
     * instead, two operations a pair, once measured faster here (8.4 against 6.5 GB/s on one
     * thread, before the launcher's compile commands); with them, two threads, both orders in one
     * JVM, taking {@code sum8} off is 1.05-1.08x the GB/s, from the caches and from memory.
     */
    private static void x16Group(MemorySegment w, long part, int blocks, Q4_0X16.Inputs in, int qBase, int blockBase,
            MemorySegment out, long at) {
        int[] pairs = in.pairs();
        float[] ds = in.d();
        int[] sum8 = in.sum8();
        FloatVector acc = FloatVector.zero(X16_FLOATS);
        for (int b = 0; b < blocks; b++) {
            long block = part + b * Q4_0X16.GROUP_BLOCK_BYTES;
            int m = (qBase + b * 32) / 2;
            ShortVector sums = ShortVector.zero(X16_SHORTS);
            for (int j = 0; j < 8; j++) {
                ShortVector packed = x16Bytes(w, block, j);
                sums = x16Low(packed).mul(x16Pair(pairs, m + j)).add(sums);
                sums = x16High(packed).mul(x16Pair(pairs, m + 8 + j)).add(sums);
            }
            acc = x16Sums(sums, sum8[blockBase + b]).fma(x16Scales(w, block).mul(ds[blockBase + b]), acc);
        }
        acc.intoMemorySegment(out, at, LE);
    }


    /**
     * {@link #x16Group} for the {@code inputs} inputs from {@code first} ({@link #X16_WIDE_INPUTS}
     * with their pairs of quants side by side in {@code byEight}, or {@link #X16_INPUTS}), their
     * outputs {@code outStride} bytes apart, in chunks of {@link #X16_CHUNK} blocks: the dots
     * ({@link #x16Dots8} or {@link #x16Dots4}) leave a chunk's short sums in {@code scratch},
     * {@link #x16Sums2} adds them to the outputs. Two loops, because one that did both was past
     * C2's budget of nodes for inlining, and a vector helper it did not inline boxed the vectors.
     */
    private static void x16Groups(MemorySegment w, long part, int blocks, Q4_0X16.Inputs in, int[] byEight, int first,
            int inputs, int cols, MemorySegment out, long at, long outStride, short[] scratch, float[] scales) {
        FloatVector zero = FloatVector.zero(X16_FLOATS);
        for (int i = 0; i < inputs; i++) {
            zero.intoMemorySegment(out, at + i * outStride, LE);
        }
        for (int b = 0; b < blocks; b += X16_CHUNK) {
            int end = Math.min(blocks, b + X16_CHUNK);
            if (inputs == X16_WIDE_INPUTS) {
                x16Dots8(w, part, b, end, byEight, first * (cols / 2) + b * 16 * X16_WIDE_INPUTS, scratch);
            } else {
                x16Dots4(w, part, b, end, in.pairs(), first * cols / 2 + b * 16, cols / 2, scratch);
            }
            for (int input = 0; input < inputs; input += 2) {
                x16Sums2(scales, b, end, in, (first + input) * blocks, blocks, scratch, input, inputs, out,
                        at + input * outStride, outStride);
            }
        }
    }

    /**
     * The short sums of blocks {@code [from, end)} for eight inputs into {@code scratch}, block by
     * block, input by input; their pairs of quants side by side in {@code byEight} from {@code m}
     * ({@link Scratch#byEight}). Per nibble vector of the weights, eight chains of products,
     * each pair of quants at one base and a constant offset: 1.6x the multiply-adds a second of
     * {@link #x16Dots4} run twice (130 against 81 GMAC/s, one thread, weights in the caches),
     * which kept four chains and eight indexes apart, and broadcast half its pairs through a
     * general register; the whole kernel at batch 8, 83 against 59.
     */
    private static void x16Dots8(MemorySegment w, long part, int from, int end, int[] byEight, int m,
            short[] scratch) {
        int lanes = X16_SHORTS.length();
        for (int b = from; b < end; b++) {
            long block = part + b * Q4_0X16.GROUP_BLOCK_BYTES;
            int o = m + (b - from) * 16 * X16_WIDE_INPUTS;
            ShortVector s0 = ShortVector.zero(X16_SHORTS);
            ShortVector s1 = s0;
            ShortVector s2 = s0;
            ShortVector s3 = s0;
            ShortVector s4 = s0;
            ShortVector s5 = s0;
            ShortVector s6 = s0;
            ShortVector s7 = s0;
            for (int k = 0; k < 16; k++) {
                ShortVector packed = x16Bytes(w, block, k & 7);
                ShortVector v = k < 8 ? x16Low(packed) : x16High(packed);
                int q = o + k * X16_WIDE_INPUTS;
                s0 = v.mul(x16Pair(byEight, q)).add(s0);
                s1 = v.mul(x16Pair(byEight, q + 1)).add(s1);
                s2 = v.mul(x16Pair(byEight, q + 2)).add(s2);
                s3 = v.mul(x16Pair(byEight, q + 3)).add(s3);
                s4 = v.mul(x16Pair(byEight, q + 4)).add(s4);
                s5 = v.mul(x16Pair(byEight, q + 5)).add(s5);
                s6 = v.mul(x16Pair(byEight, q + 6)).add(s6);
                s7 = v.mul(x16Pair(byEight, q + 7)).add(s7);
            }
            int s = (b - from) * X16_WIDE_INPUTS * lanes;
            s0.intoArray(scratch, s);
            s1.intoArray(scratch, s + lanes);
            s2.intoArray(scratch, s + 2 * lanes);
            s3.intoArray(scratch, s + 3 * lanes);
            s4.intoArray(scratch, s + 4 * lanes);
            s5.intoArray(scratch, s + 5 * lanes);
            s6.intoArray(scratch, s + 6 * lanes);
            s7.intoArray(scratch, s + 7 * lanes);
        }
    }

    /**
     * The short sums of blocks {@code [from, end)} for four inputs, their pairs of quants from
     * {@code m} and {@code stride} ints apart, into {@code scratch}: block by block, input by input.
     * The nibbles as they are: a product is at most {@code 15 * 127}, and 16 of them fit a short.
     */
    private static void x16Dots4(MemorySegment w, long part, int from, int end, int[] pairs, int m, int stride,
            short[] scratch) {
        int lanes = X16_SHORTS.length();
        int m1 = m + stride;
        int m2 = m1 + stride;
        int m3 = m2 + stride;
        for (int b = from; b < end; b++) {
            long block = part + b * Q4_0X16.GROUP_BLOCK_BYTES;
            int o = (b - from) * 16;
            ShortVector s0 = ShortVector.zero(X16_SHORTS);
            ShortVector s1 = s0;
            ShortVector s2 = s0;
            ShortVector s3 = s0;
            for (int j = 0; j < 8; j++) {
                ShortVector packed = x16Bytes(w, block, j);
                ShortVector low = x16Low(packed);
                s0 = low.mul(x16Pair(pairs, m + o + j)).add(s0);
                s1 = low.mul(x16Pair(pairs, m1 + o + j)).add(s1);
                s2 = low.mul(x16Pair(pairs, m2 + o + j)).add(s2);
                s3 = low.mul(x16Pair(pairs, m3 + o + j)).add(s3);
                ShortVector high = x16High(packed);
                s0 = high.mul(x16Pair(pairs, m + o + 8 + j)).add(s0);
                s1 = high.mul(x16Pair(pairs, m1 + o + 8 + j)).add(s1);
                s2 = high.mul(x16Pair(pairs, m2 + o + 8 + j)).add(s2);
                s3 = high.mul(x16Pair(pairs, m3 + o + 8 + j)).add(s3);
            }
            int s = (b - from) * X16_INPUTS * lanes;
            s0.intoArray(scratch, s);
            s1.intoArray(scratch, s + lanes);
            s2.intoArray(scratch, s + 2 * lanes);
            s3.intoArray(scratch, s + 3 * lanes);
        }
    }

    /**
     * Blocks {@code [from, end)}'s sums from {@link #x16Dots4} for two of its inputs (the
     * {@code input}-th and the next), scaled, added to their outputs at {@code at} and
     * {@code outStride} further; their factors from {@code i} and {@code stride} apart. Two inputs
     * a call: four made a loop past C2's node budget.
     */
    private static void x16Sums2(float[] scales, int from, int end, Q4_0X16.Inputs in, int i, int stride,
            short[] scratch, int input, int inputs, MemorySegment out, long at, long outStride) {
        int lanes = X16_SHORTS.length();
        float[] ds = in.d();
        int[] sum8 = in.sum8();
        long at1 = at + outStride;
        FloatVector a0 = FloatVector.fromMemorySegment(X16_FLOATS, out, at, LE);
        FloatVector a1 = FloatVector.fromMemorySegment(X16_FLOATS, out, at1, LE);
        for (int b = from; b < end; b++) {
            FloatVector dw = FloatVector.fromArray(X16_FLOATS, scales, b * X16_FLOATS.length());
            int s = ((b - from) * inputs + input) * lanes;
            int i0 = i + b;
            a0 = x16Sums(ShortVector.fromArray(X16_SHORTS, scratch, s), sum8[i0]).fma(dw.mul(ds[i0]), a0);
            int i1 = i0 + stride;
            a1 = x16Sums(ShortVector.fromArray(X16_SHORTS, scratch, s + lanes), sum8[i1]).fma(dw.mul(ds[i1]), a1);
        }
        a0.intoMemorySegment(out, at, LE);
        a1.intoMemorySegment(out, at1, LE);
    }

    // ---- q4_K interleaved by 16 rows, int8 inputs ----

    /** One scale byte of each row of a part: as many bytes as {@link #X16_FLOATS} has lanes. */
    private static final VectorSpecies<Byte> X16_SCALE_BYTES = // 64 bits where X16_VECTORS is false
            VectorSpecies.of(byte.class, VectorShape.forBitSize(Math.max(64, X16_FLOATS.length() * Byte.SIZE)));

    /** The f16 bits of a part's {@code d} or {@code dmin}, as bytes: two per row. */
    private static final VectorSpecies<Byte> X16_HALF_BYTES =
            VectorSpecies.of(byte.class, VectorShape.forBitSize(X16_FLOATS.length() * Short.SIZE));

    /** The bytes {@link #x16KHalves} moves a header in: the preferred vector's. */
    private static final VectorSpecies<Byte> X16_HEADER_BYTES = ByteVector.SPECIES_PREFERRED;

    /** Superblocks whose factors {@link #x16KFactors} unpacks before {@link #x16KDots4} uses them. */
    private static final int X16_K_CHUNK = 2;

    /** Bytes of a q4_K_x16 superblock's header: 16 {@code d}, 16 {@code dmin}, 12 x 16 scale bytes. */
    private static final int X16_K_HEADER = Q4_KX16.HEADER_BYTES;

    /**
     * Groups of 16 rows by vector loops, the rest one row at a time by {@link Q4_KX16#row}, as
     * {@link #matmulQ4_0_X16} does. With fewer than {@link #X16_INPUTS} inputs (a decode step's
     * one), per group and part, {@link #X16_K_UNPACKED} superblocks at a time: {@link #x16KUnpack}
     * widens their {@code d} and {@code dmin} and unpacks their scales' bytes, then {@link
     * #x16KDotsUnpacked} runs each input over their nibbles (which the caches hold for the next
     * input), making each factor where it is used. With more, {@link #X16_K_CHUNK} superblocks at a
     * time: {@link #x16KFactors} makes their rows' {@code d * sc} and {@code dmin * m} once for
     * every eight inputs ({@link #x16KDots8}), then every four ({@link #x16KDots4}), both scaled
     * by {@link #x16KScale}, and the inputs left over unpack
     * the chunk for themselves. The loops doing vector work are methods of more than 325 bytecodes
     * ({@link #x16KSixBitFactors}, {@link #x16KDotsUnpacked}, {@link #x16KDots4}, {@link #x16KScale}),
     * which C2 never inlines into a caller, and {@link #x16KHalves}, small enough to inline whole:
     * inlined into one method, they passed C2's node budget, and the vector operations it then
     * left out of line boxed every vector (0.2 to 1.6 GB/s).
     */
    @Override
    public void matmulQ4_K_X16(
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd) {
        matmulQ4_K_X16(weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd, 0);
    }

    private static void matmulQ4_K_X16(
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd,
            long inputKey) {
        ArgumentChecks.matmulBlocks(TensorType.Q4_K_X16,
                weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd);
        int blocks = cols / 32;
        int supers = cols / 256;
        Scratch scratch = Scratch.get();
        Q4_0X16.Inputs in = quantizeInputs(scratch, x, xOffset, batch, cols, inputKey);
        long rowBytes = supers * 144L;
        long outStride = (long) rows * F;
        byte[] headers = scratch.bytes(Math.max(X16_K_CHUNK, X16_K_UNPACKED) * X16_K_HEADER);
        int fours = batch - batch % X16_INPUTS;
        short[] sums = fours > 0 ? scratch.shorts(X16_K_CHUNK * 8 * X16_WIDE_INPUTS * X16_SHORTS.length()) : null;
        int[] byEight = batch >= X16_WIDE_INPUTS ? scratch.pairsByEight(batch / X16_WIDE_INPUTS * X16_WIDE_INPUTS * cols / 2)
                : null;
        float[] factors = scratch.factors(Math.max(X16_K_CHUNK * (8 + 1), X16_K_UNPACKED) * 2 * X16_FLOATS.length());
        int chunk = fours > 0 ? X16_K_CHUNK : X16_K_UNPACKED;
        int groupEnd = Math.min(rowEnd, rows - rows % TensorType.X16_ROWS);
        int r = rowStart;
        while (r < rowEnd) {
            if (NATIVE_INT8 && batch >= NATIVE_Q4_K_BATCH && r % TensorType.X16_ROWS == 0
                    && r + TensorType.X16_ROWS <= groupEnd) {
                int groups = (groupEnd - r) / TensorType.X16_ROWS;
                NativeInt8.x16(TensorType.Q4_K_X16, weights, weightsOffset, r, groups, supers, in, batch, cols, out,
                        outOffset, rows);
                r += groups * TensorType.X16_ROWS;
            } else if (X16_VECTORS && r % TensorType.X16_ROWS == 0 && r + TensorType.X16_ROWS <= groupEnd) {
                long group = weightsOffset + r * rowBytes;
                for (int part = 0; part < X16_PARTS; part++) {
                    long at = outOffset + r * F + part * X16_FLOATS.length() * F;
                    FloatVector zero = FloatVector.zero(X16_FLOATS);
                    for (int b = 0; b < batch; b++) {
                        zero.intoMemorySegment(out, at + b * outStride, LE);
                    }
                    for (int from = 0; from < supers; from += chunk) {
                        int end = Math.min(supers, from + chunk);
                        if (fours > 0) {
                            x16KFactors(false, weights, group, part, from, end, headers, factors);
                            int b = 0;
                            for (; b + X16_WIDE_INPUTS <= fours; b += X16_WIDE_INPUTS) {
                                x16KDots8(weights, group, part, from, end, supers, byEight, b * (cols / 2), sums);
                                x16KScale(from, end, in, b * blocks, blocks, sums, X16_WIDE_INPUTS, factors, out,
                                        at + b * outStride, outStride);
                            }
                            for (; b < fours; b += X16_INPUTS) {
                                x16KDots4(weights, group, part, from, end, supers, in.pairs(), b * cols / 2, cols / 2,
                                        sums);
                                x16KScale(from, end, in, b * blocks, blocks, sums, X16_INPUTS, factors, out,
                                        at + b * outStride, outStride);
                            }
                        }
                        if (fours < batch) {
                            // After the fours (their factors used), the rest unpack the chunk for themselves.
                            x16KUnpack(weights, group, part, from, end, factors, headers);
                            for (int b = fours; b < batch; b++) {
                                x16KDotsUnpacked(weights, group, part, from, end, supers, in, b * cols, factors, headers,
                                        out, at + b * outStride);
                            }
                        }
                    }
                }
                r += TensorType.X16_ROWS;
            } else {
                for (int b = 0; b < batch; b++) {
                    out.set(F32, outOffset + b * outStride + r * F,
                            Q4_KX16.row(weights, weightsOffset, rows, supers, r, in, b * cols, b * blocks));
                }
                r++;
            }
        }
    }

    /**
     * Per superblock of {@code [from, end)} and sub-block {@code t}, a part's rows' {@code d * sc_t}
     * and {@code dmin * m_t} into {@code factors}, side by side; the 6-bit scales and mins unpacked
     * as {@link ScalarOps#q4_KScale} and {@link ScalarOps#q4_KMin} do. Each superblock's header is
     * first copied into {@code headers} (vector loads from an array cost C2 far fewer nodes than
     * from a segment), and the widening of {@code d} and {@code dmin}, sub-blocks 0-3 and 4-7 are
     * three loops of their own: in fewer, C2 passed its node budget and boxed the vectors.
     */
    private static void x16KFactors(boolean q5K, MemorySegment w, long group, int part, int from, int end,
            byte[] headers, float[] factors) {
        x16KHalves(q5K, w, group, part, from, end, headers, factors);
        x16KSixBitFactors(true, part, from, end, headers, factors);
        x16KSixBitFactors(false, part, from, end, headers, factors);
    }

    /**
     * Copies the headers and widens each one's {@code d} and {@code dmin}, kept after the factors.
     * q5_K_x16's header is q4_K_x16's (d, dmin, the 12 scale bytes, 16 rows each), at the start of
     * each superblock's group rather than in {@link Q4_KX16#headerAt}'s chunks.
     */
    private static void x16KHalves(boolean q5K, MemorySegment w, long group, int part, int from, int end,
            byte[] headers, float[] factors) {
        int lanes = X16_FLOATS.length();
        int halves = part * 2 * lanes;
        int dd = X16_K_CHUNK * 8 * 2 * lanes;
        for (int b = from; b < end; b++) {
            int h = (b - from) * X16_K_HEADER;
            // Vector moves, not MemorySegment.copy: its checks per call cost as much as a
            // superblock's dot products on narrow rows (9% of a decode's samples).
            long from16 = group + (q5K ? b * Q5_KX16.GROUP_BLOCK_BYTES : Q4_KX16.headerAt(b));
            for (int k = 0; k < X16_K_HEADER; k += X16_HEADER_BYTES.length()) {
                ByteVector.fromMemorySegment(X16_HEADER_BYTES, w, from16 + k, LE).intoArray(headers, h + k);
            }
            // d, then dmin, widened as x16Scales does, written out: through helpers that take
            // and return vectors, the decoder's order of compilation left them out of line and
            // boxed every vector (JFR on a large q4_K decode: 2 GB/s of garbage, all from here).
            for (int j = 0; j < 2; j++) {
                IntVector half = (IntVector) ByteVector.fromArray(X16_HALF_BYTES, headers, h + 32 * j + halves)
                        .reinterpretAsShorts().convertShape(VectorOperators.ZERO_EXTEND_S2I, X16_INTS, 0);
                IntVector magnitude = half.and(0x7fff);
                FloatVector widened = magnitude.compare(VectorOperators.GE, 0x7c00).anyTrue() ? widenF16(half)
                        : magnitude.lanewise(VectorOperators.LSHL, 13).reinterpretAsFloats().mul(0x1p112f)
                                .reinterpretAsInts().or(half.and(0x8000).lanewise(VectorOperators.LSHL, 16))
                                .reinterpretAsFloats();
                widened.intoArray(factors, dd + (b - from) * 2 * lanes + j * lanes);
            }
        }
    }

    /**
     * Sub-blocks 0-3's factors ({@code high} false: the low 6 bits of scale bytes {@code t} and
     * {@code t + 4}) or 4-7's ({@code high} true: the nibbles of scale byte {@code t + 8} with the
     * top two bits of bytes {@code t} and {@code t + 4} above them; {@code (b >> 2) & 0x30} moves
     * bits 6-7 to 4-5 whatever the byte's sign). One method for both halves, each call with a
     * constant: at more than 325 bytecodes C2 never inlines it into its caller, where the two
     * halves' vector code came out boxed (the caller's node budget spent) in the decoder's
     * compilations, though not in a kernel benchmark's.
     */
    private static void x16KSixBitFactors(boolean high, int part, int from, int end, byte[] headers,
            float[] factors) {
        int lanes = X16_FLOATS.length();
        int bytes = 64 + part * lanes;
        int dd = X16_K_CHUNK * 8 * 2 * lanes;
        for (int b = from; b < end; b++) {
            int h = (b - from) * X16_K_HEADER + bytes;
            FloatVector d = FloatVector.fromArray(X16_FLOATS, factors, dd + (b - from) * 2 * lanes);
            FloatVector dmin = FloatVector.fromArray(X16_FLOATS, factors, dd + (b - from) * 2 * lanes + lanes);
            int f0 = (b - from) * 8 * 2 * lanes;
            if (high) {
                for (int t = 0; t < 4; t++) {
                    // In int lanes: a shift of byte lanes has no instruction of its own (C2 widens,
                    // shifts and packs each), and the ints are on their way to floats anyway.
                    IntVector low = (IntVector) ByteVector.fromArray(X16_SCALE_BYTES, headers, h + 16 * t)
                            .convertShape(VectorOperators.ZERO_EXTEND_B2I, X16_INTS, 0);
                    IntVector mid = (IntVector) ByteVector.fromArray(X16_SCALE_BYTES, headers, h + 16 * (t + 4))
                            .convertShape(VectorOperators.ZERO_EXTEND_B2I, X16_INTS, 0);
                    IntVector top = (IntVector) ByteVector.fromArray(X16_SCALE_BYTES, headers, h + 16 * (t + 8))
                            .convertShape(VectorOperators.ZERO_EXTEND_B2I, X16_INTS, 0);
                    int g = f0 + (t + 4) * 2 * lanes;
                    d.mul((FloatVector) top.and(0x0f).or(low.lanewise(VectorOperators.LSHR, 2).and(0x30))
                            .convert(VectorOperators.I2F, 0)).intoArray(factors, g);
                    dmin.mul((FloatVector) top.lanewise(VectorOperators.LSHR, 4)
                            .or(mid.lanewise(VectorOperators.LSHR, 2).and(0x30))
                            .convert(VectorOperators.I2F, 0)).intoArray(factors, g + lanes);
                }
            } else {
                for (int t = 0; t < 4; t++) {
                    int f = f0 + t * 2 * lanes;
                    d.mul(x16KSixBits(ByteVector.fromArray(X16_SCALE_BYTES, headers, h + 16 * t).and((byte) 63)))
                            .intoArray(factors, f);
                    dmin.mul(x16KSixBits(ByteVector.fromArray(X16_SCALE_BYTES, headers, h + 16 * (t + 4))
                            .and((byte) 63))).intoArray(factors, f + lanes);
                }
            }
        }
    }

    /**
     * {@link #x16KDots4} for eight inputs, their pairs of quants side by side in {@code byEight}
     * from {@code m} ({@link Scratch#byEight}): one sub-block of 32 values at a time, eight
     * chains of products per nibble vector, each pair at one index and a constant offset (as
     * {@link #x16Dots8}). Its chains are a near-copy of {@link #x16Dots8}'s on purpose: a shared
     * helper would have to take or return the eight accumulators, which C2 then boxes, and only
     * the loops around them (blocks of 16 rows against sub-blocks of a superblock) differ.
     */
    private static void x16KDots8(MemorySegment w, long group, int part, int from, int end, int supers, int[] byEight,
            int m, short[] sums) {
        int lanes = X16_SHORTS.length();
        long halves = part * X16_PART_BYTES;
        for (int sub = from * 8; sub < end * 8; sub++) {
            int b = sub >> 3;
            long quants = group + Q4_KX16.nibblesAt(b, supers) + halves + 512L * ((sub & 7) >> 1);
            int o = m + (b * 128 + (sub & 7) * 16) * X16_WIDE_INPUTS;
            boolean high = (sub & 1) != 0;
            ShortVector s0 = ShortVector.zero(X16_SHORTS);
            ShortVector s1 = s0;
            ShortVector s2 = s0;
            ShortVector s3 = s0;
            ShortVector s4 = s0;
            ShortVector s5 = s0;
            ShortVector s6 = s0;
            ShortVector s7 = s0;
            for (int j = 0; j < 16; j++) {
                ShortVector packed = x16Load(w, quants + 32L * j);
                ShortVector v = high ? x16High(packed) : x16Low(packed);
                int q = o + j * X16_WIDE_INPUTS;
                s0 = v.mul(x16Pair(byEight, q)).add(s0);
                s1 = v.mul(x16Pair(byEight, q + 1)).add(s1);
                s2 = v.mul(x16Pair(byEight, q + 2)).add(s2);
                s3 = v.mul(x16Pair(byEight, q + 3)).add(s3);
                s4 = v.mul(x16Pair(byEight, q + 4)).add(s4);
                s5 = v.mul(x16Pair(byEight, q + 5)).add(s5);
                s6 = v.mul(x16Pair(byEight, q + 6)).add(s6);
                s7 = v.mul(x16Pair(byEight, q + 7)).add(s7);
            }
            int s = (sub - from * 8) * X16_WIDE_INPUTS * lanes;
            s0.intoArray(sums, s);
            s1.intoArray(sums, s + lanes);
            s2.intoArray(sums, s + 2 * lanes);
            s3.intoArray(sums, s + 3 * lanes);
            s4.intoArray(sums, s + 4 * lanes);
            s5.intoArray(sums, s + 5 * lanes);
            s6.intoArray(sums, s + 6 * lanes);
            s7.intoArray(sums, s + 7 * lanes);
        }
    }

    /**
     * {@link #x16KDotsUnpacked}' short sums for four inputs at once (their pairs of quants from {@code m}
     * and {@code stride} ints apart), sharing each unpacked byte of the nibbles: into {@code sums},
     * per superblock and sub-block, the four inputs' sums in order. The nibbles' products for the
     * four inputs in one loop, their scaling in another ({@link #x16KScale}): both in one passed
     * C2's node budget, as in {@link #x16Groups}.
     */
    private static void x16KDots4(MemorySegment w, long group, int part, int from, int end, int supers, int[] pairs, int m,
            int stride, short[] sums) {
        int lanes = X16_SHORTS.length();
        long halves = part * X16_PART_BYTES;
        int m1 = m + stride;
        int m2 = m1 + stride;
        int m3 = m2 + stride;
        for (int b = from; b < end; b++) {
            long block = group + Q4_KX16.nibblesAt(b, supers) + halves;
            for (int g = 0; g < 4; g++) {
                long quants = block + 512L * g;
                int o = b * 128 + g * 32;
                ShortVector l0 = ShortVector.zero(X16_SHORTS);
                ShortVector l1 = l0;
                ShortVector l2 = l0;
                ShortVector l3 = l0;
                ShortVector h0 = l0;
                ShortVector h1 = l0;
                ShortVector h2 = l0;
                ShortVector h3 = l0;
                for (int j = 0; j < 16; j++) {
                    ShortVector packed = x16Load(w, quants + 32L * j);
                    ShortVector low = x16Low(packed);
                    l0 = low.mul(x16Pair(pairs, m + o + j)).add(l0);
                    l1 = low.mul(x16Pair(pairs, m1 + o + j)).add(l1);
                    l2 = low.mul(x16Pair(pairs, m2 + o + j)).add(l2);
                    l3 = low.mul(x16Pair(pairs, m3 + o + j)).add(l3);
                    ShortVector high = x16High(packed);
                    h0 = high.mul(x16Pair(pairs, m + o + 16 + j)).add(h0);
                    h1 = high.mul(x16Pair(pairs, m1 + o + 16 + j)).add(h1);
                    h2 = high.mul(x16Pair(pairs, m2 + o + 16 + j)).add(h2);
                    h3 = high.mul(x16Pair(pairs, m3 + o + 16 + j)).add(h3);
                }
                int s = ((b - from) * 8 + 2 * g) * X16_INPUTS * lanes;
                l0.intoArray(sums, s);
                l1.intoArray(sums, s + lanes);
                l2.intoArray(sums, s + 2 * lanes);
                l3.intoArray(sums, s + 3 * lanes);
                int t = s + X16_INPUTS * lanes;
                h0.intoArray(sums, t);
                h1.intoArray(sums, t + lanes);
                h2.intoArray(sums, t + 2 * lanes);
                h3.intoArray(sums, t + 3 * lanes);
            }
        }
    }

    /**
     * {@link #x16KDots4}'s four inputs (their outputs at {@code at} and {@code outStride} apart,
     * their blocks of 32 from {@code i} and {@code stride} apart), scaled as {@link
     * #x16KDotsUnpacked} scales its sums, with the factors {@link #x16KFactors} made: two inputs a
     * pass (four passed C2's node budget), both passes in this one method, which at more than 325
     * bytecodes C2 never inlines into its caller.
     */
    private static void x16KScale(int from, int end, Q4_0X16.Inputs in, int i, int stride, short[] sums, int inputs,
            float[] factors, MemorySegment out, long at, long outStride) {
        int lanes = X16_FLOATS.length();
        int shorts = X16_SHORTS.length();
        float[] ds = in.d();
        int[] sum8 = in.sum8();
        for (int input = 0; input < inputs; input += 2) {
            long at0 = at + input * outStride;
            long at1 = at0 + outStride;
            int first = i + input * stride;
            FloatVector a0 = FloatVector.fromMemorySegment(X16_FLOATS, out, at0, LE);
            FloatVector a1 = FloatVector.fromMemorySegment(X16_FLOATS, out, at1, LE);
            for (int k = 0; k < (end - from) * 8; k++) {
                FloatVector dsc = FloatVector.fromArray(X16_FLOATS, factors, k * 2 * lanes);
                FloatVector dm = FloatVector.fromArray(X16_FLOATS, factors, k * 2 * lanes + lanes);
                int s = (k * inputs + input) * shorts;
                int i0 = first + from * 8 + k;
                float dx = ds[i0];
                a0 = x16Sums(ShortVector.fromArray(X16_SHORTS, sums, s), 0).fma(dsc.mul(dx), a0);
                a0 = FloatVector.broadcast(X16_FLOATS, (float) (sum8[i0] >> 3)).fma(dm.mul(dx).neg(), a0);
                int i1 = i0 + stride;
                float dy = ds[i1];
                a1 = x16Sums(ShortVector.fromArray(X16_SHORTS, sums, s + shorts), 0).fma(dsc.mul(dy), a1);
                a1 = FloatVector.broadcast(X16_FLOATS, (float) (sum8[i1] >> 3)).fma(dm.mul(dy).neg(), a1);
            }
            a0.intoMemorySegment(out, at0, LE);
            a1.intoMemorySegment(out, at1, LE);
        }
    }


    /** A 6-bit scale or min per row, at most 63, as floats. */
    private static FloatVector x16KSixBits(ByteVector sixBits) {
        return (FloatVector) sixBits.convertShape(VectorOperators.B2F, X16_FLOATS, 0);
    }

    /** Ints of a header's scale bytes, four rows' bytes an int, for {@link #x16KUnpack}. */
    private static final VectorSpecies<Integer> X16_K_UNPACK = IntVector.SPECIES_PREFERRED;

    /**
     * Superblocks {@link #x16KUnpack} unpacks before {@link #x16KDotsUnpacked} runs over them.
     * Four, measured on a matrix in memory, two threads, one input: against {@link #x16KFactors}'
     * chunks, 1.11-1.24x the GB/s with 1024 or 2816 columns; one or two superblocks gained
     * nothing, and a whole row's (11 at 2816 columns) lost, its headers read 2304 bytes apart
     * ahead of their nibbles.
     */
    private static final int X16_K_UNPACKED = Q4_KX16.CHUNK;

    /**
     * Per superblock of {@code [from, end)} of a group, its rows' {@code d} and {@code dmin}
     * widened into {@code halves} (16 floats each, side by side) and its 6-bit scales and mins
     * unpacked into {@code unpacked}, a byte each: 256 bytes a superblock, the 16 rows' scales of
     * sub-block {@code t} at {@code 16t}, their mins at {@code 128 + 16t}. In int lanes, four
     * rows a lane: the masks keep each byte's bits from its neighbours' ({@link
     * ScalarOps#q4_KScale} and {@link ScalarOps#q4_KMin} unpack the same bits).
     */
    private static void x16KUnpack(MemorySegment w, long group, int part, int from, int end, float[] halves,
            byte[] unpacked) {
        int lanes = X16_FLOATS.length();
        long offset = part * X16_PART_BYTES;
        int step = X16_K_UNPACK.vectorByteSize();
        for (int b = from; b < end; b++) {
            long header = group + Q4_KX16.headerAt(b);
            x16Scales(w, header + offset).intoArray(halves, 2 * (b - from) * lanes);
            x16Scales(w, header + 32 + offset).intoArray(halves, (2 * (b - from) + 1) * lanes);
            int u = (b - from) * 256;
            for (int k = 0; k < 64; k += step) {
                IntVector low = IntVector.fromMemorySegment(X16_K_UNPACK, w, header + 64 + k, LE);
                IntVector mid = IntVector.fromMemorySegment(X16_K_UNPACK, w, header + 128 + k, LE);
                IntVector top = IntVector.fromMemorySegment(X16_K_UNPACK, w, header + 192 + k, LE);
                low.and(0x3f3f3f3f).reinterpretAsBytes().intoArray(unpacked, u + k);
                top.and(0x0f0f0f0f).or(low.lanewise(VectorOperators.LSHR, 2).and(0x30303030))
                        .reinterpretAsBytes().intoArray(unpacked, u + 64 + k);
                mid.and(0x3f3f3f3f).reinterpretAsBytes().intoArray(unpacked, u + 128 + k);
                top.lanewise(VectorOperators.LSHR, 4).and(0x0f0f0f0f)
                        .or(mid.lanewise(VectorOperators.LSHR, 2).and(0x30303030))
                        .reinterpretAsBytes().intoArray(unpacked, u + 192 + k);
            }
        }
    }

    /**
     * One input ({@code qBase} its first quant) over superblocks {@code [from, end)} of a part of a
     * group of 16 q4_K rows, unpacked by {@link #x16KUnpack}, added to its accumulators at
     * {@code at}: per group of 64 values (two sub-blocks), each pair of nibble bytes times its pair
     * of quants in short lanes, the low nibbles' products for the first sub-block and the high
     * nibbles' for the second (16 products of at most {@code 15 * 127} a lane); then each
     * sub-block's two fused multiply-adds as {@link Q4_KX16#row} does them: the integer dot
     * products times {@code (d * sc) * dx}, then the input block's sum of quants times
     * {@code -((dmin * m) * dx)}, each factor made here in the same operations as {@link
     * #x16KSixBitFactors}, so the same bits as the four inputs' path. It makes no floats of
     * factors to store and load again, the work that made {@link #x16KFactors} a third of a
     * superblock's time with one input (the matrix in the caches: 1.48x the GB/s with the
     * factors left out altogether).
     */
    private static void x16KDotsUnpacked(MemorySegment w, long group, int part, int from, int end, int supers,
            Q4_0X16.Inputs in, int qBase, float[] halvesOf, byte[] unpacked, MemorySegment out, long at) {
        int lanes = X16_FLOATS.length();
        int[] pairs = in.pairs();
        float[] ds = in.d();
        int[] sum8 = in.sum8();
        long halves = part * X16_PART_BYTES;
        FloatVector acc = FloatVector.fromMemorySegment(X16_FLOATS, out, at, LE);
        for (int b = from; b < end; b++) {
            FloatVector d = FloatVector.fromArray(X16_FLOATS, halvesOf, 2 * (b - from) * lanes);
            FloatVector dmin = FloatVector.fromArray(X16_FLOATS, halvesOf, (2 * (b - from) + 1) * lanes);
            long block = group + Q4_KX16.nibblesAt(b, supers) + halves;
            for (int g = 0; g < 4; g++) {
                long quants = block + 512L * g;
                int m = (qBase + b * 256 + g * 64) / 2;
                ShortVector low = ShortVector.zero(X16_SHORTS);
                ShortVector high = low;
                for (int j = 0; j < 16; j++) {
                    ShortVector packed = x16Load(w, quants + 32L * j);
                    low = x16Low(packed).mul(x16Pair(pairs, m + j)).add(low);
                    high = x16High(packed).mul(x16Pair(pairs, m + 16 + j)).add(high);
                }
                int i = (qBase + b * 256 + g * 64) / 32;
                float dx = ds[i];
                float dy = ds[i + 1];
                int t = (b - from) * 256 + g * 32 + part * lanes;
                FloatVector sc0 = x16KSixBits(ByteVector.fromArray(X16_SCALE_BYTES, unpacked, t));
                FloatVector sc1 = x16KSixBits(ByteVector.fromArray(X16_SCALE_BYTES, unpacked, t + 16));
                FloatVector m0 = x16KSixBits(ByteVector.fromArray(X16_SCALE_BYTES, unpacked, t + 128));
                FloatVector m1 = x16KSixBits(ByteVector.fromArray(X16_SCALE_BYTES, unpacked, t + 144));
                acc = x16Sums(low, 0).fma(d.mul(sc0).mul(dx), acc);
                acc = FloatVector.broadcast(X16_FLOATS, (float) (sum8[i] >> 3)).fma(dmin.mul(m0).mul(dx).neg(), acc);
                acc = x16Sums(high, 0).fma(d.mul(sc1).mul(dy), acc);
                acc = FloatVector.broadcast(X16_FLOATS, (float) (sum8[i + 1] >> 3))
                        .fma(dmin.mul(m1).mul(dy).neg(), acc);
            }
        }
        acc.intoMemorySegment(out, at, LE);
    }

    // ---- q5_0 and q5_K interleaved by 16 rows, int8 inputs ----

    /**
     * Rows' bytes of one part, one per float lane: a q5_K scale byte of each row. Below 8 float
     * lanes no x16 loop runs ({@link #X16_VECTORS}), and 64 bits is the narrowest shape there is.
     */
    private static final VectorSpecies<Byte> X16_ROW_BYTES =
            VectorSpecies.of(byte.class, VectorShape.forBitSize(Math.max(64, X16_FLOATS.length() * Byte.SIZE)));

    @Override
    public void matmulQ5_0_X16(
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd) {
        matmulFiveBitsX16(TensorType.Q5_0_X16, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                rowStart, rowEnd, 0);
    }

    @Override
    public void matmulQ2_K_X16(
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd) {
        matmulFiveBitsX16(TensorType.Q2_K_X16, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                rowStart, rowEnd, 0);
    }

    @Override
    public void matmulQ3_K_X16(
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd) {
        matmulFiveBitsX16(TensorType.Q3_K_X16, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                rowStart, rowEnd, 0);
    }

    @Override
    public void matmulIQ4_NL_X16(
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd) {
        matmulFiveBitsX16(TensorType.IQ4_NL_X16, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols,
                batch, rowStart, rowEnd, 0);
    }

    @Override
    public void matmulIQ4_XS_X16(
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd) {
        matmulFiveBitsX16(TensorType.IQ4_XS_X16, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols,
                batch, rowStart, rowEnd, 0);
    }

    @Override
    public void matmulQ4_1_X16(
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd) {
        matmulFiveBitsX16(TensorType.Q4_1_X16, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                rowStart, rowEnd, 0);
    }

    @Override
    public void matmulQ5_1_X16(
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd) {
        matmulFiveBitsX16(TensorType.Q5_1_X16, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                rowStart, rowEnd, 0);
    }

    @Override
    public void matmulQ5_K_X16(
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd) {
        matmulFiveBitsX16(TensorType.Q5_K_X16, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch,
                rowStart, rowEnd, 0);
    }

    /**
     * {@link TensorType#Q5_0_X16}, {@link TensorType#Q4_1_X16}, {@link TensorType#Q5_1_X16},
     * {@link TensorType#Q5_K_X16}, the iq4 and the q2_K/q3_K types: groups of 16 rows by
     * {@link NativeInt8} where it runs (from {@link #nativeBatch} inputs), else by
     * {@link #x16SmallBlocksGroup}, {@link #x16Q5KGroup}, {@link #x16Iq4Group} or
     * {@link #x16LowBitsKGroup}, one input at a time (each part's weights stay in the caches from
     * input to input), one row at a time where the range cuts a group, and the last
     * {@code rows % 16} rows one at a time (they are in the file's layout): the type's scalar twin
     * ({@link SmallBlocksX16#row}, {@link Q5_KX16#row}, ...) for both, the same operations as the
     * vector loops lane by lane.
     */
    private static void matmulFiveBitsX16(
            TensorType type,
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd,
            long inputKey) {
        matmulFiveBitsX16(type, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd,
                inputKey, NATIVE_INT8);
    }

    /**
     * {@link #matmul} of a type of {@link #matmulFiveBitsX16} by its Java loops, even where
     * {@link NativeInt8} would take it: for the tests, which hold both to the scalar twin.
     */
    static void matmulFiveBitsX16JavaLoops(
            TensorType type,
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd) {
        matmulFiveBitsX16(type, weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd,
                0, false);
    }

    private static void matmulFiveBitsX16(
            TensorType type,
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd,
            long inputKey,
            boolean allowNative) {
        ArgumentChecks.matmulBlocks(type,
                weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd);
        boolean k = type == TensorType.Q5_K_X16;
        boolean iq4 = type == TensorType.IQ4_NL_X16 || type == TensorType.IQ4_XS_X16;
        boolean xs = type == TensorType.IQ4_XS_X16;
        boolean lowBits = type == TensorType.Q2_K_X16 || type == TensorType.Q3_K_X16;
        boolean three = type == TensorType.Q3_K_X16;
        int blocks = cols / type.blockSize();
        Scratch scratch = Scratch.get();
        Q4_0X16.Inputs in = quantizeInputs(scratch, x, xOffset, batch, cols, inputKey);
        // At most two per 16 values, or (q5_K) x16KFactors' chunk of superblocks and their d and dmin.
        float[] factors = scratch.factors(Math.max(cols / 16, X16_K_CHUNK * (8 + 1)) * 2 * X16_FLOATS.length());
        byte[] headers = k ? scratch.bytes(X16_K_CHUNK * X16_K_HEADER) : null;
        long rowBytes = type.rowBytes(cols);
        long outStride = (long) rows * F;
        int groupEnd = Math.min(rowEnd, rows - rows % TensorType.X16_ROWS);
        boolean nativeKernel = allowNative && batch >= nativeBatch(type);
        int r = rowStart;
        while (r < rowEnd) {
            if (nativeKernel && r % TensorType.X16_ROWS == 0 && r + TensorType.X16_ROWS <= groupEnd) {
                int groups = (groupEnd - r) / TensorType.X16_ROWS;
                NativeInt8.x16(type, weights, weightsOffset, r, groups, blocks, in, batch, cols, out,
                        outOffset, rows);
                r += groups * TensorType.X16_ROWS;
            } else if (X16_VECTORS && r % TensorType.X16_ROWS == 0 && r + TensorType.X16_ROWS <= groupEnd) {
                long group = weightsOffset + r * rowBytes;
                for (int part = 0; part < X16_PARTS; part++) {
                    long at = outOffset + r * F + part * X16_FLOATS.length() * F;
                    if (k) {
                        FloatVector zero = FloatVector.zero(X16_FLOATS);
                        for (int b = 0; b < batch; b++) {
                            zero.intoMemorySegment(out, at + b * outStride, LE);
                        }
                        for (int from = 0; from < blocks; from += X16_K_CHUNK) {
                            int end = Math.min(blocks, from + X16_K_CHUNK);
                            x16KFactors(true, weights, group, part, from, end, headers, factors);
                            for (int b = 0; b < batch; b++) {
                                x16Q5KGroup(weights, group, part, from, end, in, b * cols, b * (cols / 32), factors,
                                        out, at + b * outStride);
                            }
                        }
                        continue;
                    }
                    if (lowBits) {
                        if (three) {
                            x16Q3KFactors(weights, group, part, blocks, factors);
                        } else {
                            x16Q2KFactors(weights, group, part, blocks, factors);
                        }
                    } else if (iq4) {
                        x16Iq4Factors(xs, weights, group, part, blocks, factors);
                    } else {
                        x16SmallBlocksFactors(type.source(), weights, group, part, blocks, factors);
                    }
                    for (int b = 0; b < batch; b++) {
                        if (lowBits) {
                            x16LowBitsKGroup(three, weights, group, part, blocks, in, b * cols, b * (cols / 32),
                                    factors, out, at + b * outStride);
                        } else if (iq4) {
                            x16Iq4Group(xs, weights, group, part, blocks, in, b * cols, b * (cols / 32), factors,
                                    out, at + b * outStride);
                        } else {
                            x16SmallBlocksGroup(type.source(), weights, group, part, blocks, in, b * cols, b * blocks,
                                    factors, out, at + b * outStride);
                        }
                    }
                }
                r += TensorType.X16_ROWS;
            } else {
                for (int b = 0; b < batch; b++) {
                    float value = lowBits
                            ? LowBitsKX16.row(three, weights, weightsOffset, rows, blocks, r, in, b * cols, b * (cols / 32))
                            : iq4 ? Iq4X16.row(xs, weights, weightsOffset, rows, blocks, r, in, b * cols, b * (cols / 32))
                            : k ? Q5_KX16.row(weights, weightsOffset, rows, blocks, r, in, b * cols, b * (cols / 32))
                            : SmallBlocksX16.row(type.source(), weights, weightsOffset, rows, blocks, r, in, b * cols,
                                    b * blocks);
                    out.set(F32, outOffset + b * outStride + r * F, value);
                }
                r++;
            }
        }
    }

    /**
     * One part of a group of 16 rows of q5_K with one input: per sub-block of 32, each pair of
     * nibbles joined with its fifth bits (the pair of {@code qh} bytes of the 16 rows, side by side
     * as the nibble pairs are) and less 16, times the pair of quants it meets, in short lanes (16
     * products of at most {@code 16 * 127} a lane: exact); each row's two lanes added as ints with
     * the 16 taken back ({@code 2 * sum8} is {@code 16 Σ q}), then two fused multiply-adds per row
     * as {@link Q5_KX16#row} does them, with the 6-bit scale and min unpacked in int lanes.
     */
    private static void x16Q5KGroup(MemorySegment w, long group, int part, int from, int end, Q4_0X16.Inputs in,
            int qBase, int blockBase, float[] factors, MemorySegment out, long at) {
        int[] pairs = in.pairs();
        float[] ds = in.d();
        int[] sum8 = in.sum8();
        int lanes = X16_FLOATS.length();
        long pairsAt = part * 2L * lanes;
        FloatVector acc = FloatVector.fromMemorySegment(X16_FLOATS, out, at, LE);
        for (int b = from; b < end; b++) {
            long block = group + b * Q5_KX16.GROUP_BLOCK_BYTES;
            long highBits = block + Q5_KX16.HIGH_BITS + pairsAt;
            for (int t = 0; t < 8; t++) {
                int m = (qBase + b * 256 + t * 32) / 2;
                long nibbles = block + Q5_KX16.NIBBLES + pairsAt + 32L * 16 * (t / 2);
                ShortVector sums = ShortVector.zero(X16_SHORTS);
                for (int p = 0; p < 16; p++) {
                    ShortVector packed = x16Load(w, nibbles + 32L * p);
                    ShortVector nibble = t % 2 == 0 ? x16Low(packed) : x16High(packed);
                    ShortVector fifth = x16Load(w, highBits + 32L * p).lanewise(VectorOperators.LSHR, t)
                            .and((short) 1).lanewise(VectorOperators.LSHL, 4);
                    sums = nibble.or(fifth).sub((short) 16).mul(x16Pair(pairs, m + p)).add(sums);
                }
                int i = blockBase + b * 8 + t;
                float dx = ds[i];
                int f = ((b - from) * 8 + t) * 2 * lanes;
                FloatVector scale = FloatVector.fromArray(X16_FLOATS, factors, f);
                FloatVector min = FloatVector.fromArray(X16_FLOATS, factors, f + lanes);
                acc = x16Sums(sums, -2 * sum8[i]).fma(scale.mul(dx), acc);
                acc = FloatVector.broadcast(X16_FLOATS, (float) (sum8[i] / 8)).fma(min.mul(dx).neg(), acc);
            }
        }
        acc.intoMemorySegment(out, at, LE);
    }

    /** llama.cpp's iq4 table in every short lane {@code l}: {@code VALUES[l % 16]}, for {@code selectFrom}. */
    private static final ShortVector IQ4_VALUES =
            ShortVector.fromArray(X16_SHORTS, iq4Lanes(X16_SHORTS.length()), 0);

    private static short[] iq4Lanes(int lanes) {
        short[] values = new short[lanes];
        for (int l = 0; l < lanes; l++) {
            values[l] = Iq4X16.VALUES[l % 16];
        }
        return values;
    }

    /**
     * One part of a group of 16 rows of iq4_nl ({@code xs} false, {@code blocks} blocks) or iq4_xs
     * ({@code blocks} superblocks of eight sub-blocks) with one input: per block of 32, each pair
     * of nibble bytes looked up in the table ({@code selectFrom} on the zero-extended nibbles), times
     * the pair of quants it meets; a low and a high product (at most {@code 2 * 127 * 127}) fit a
     * short, so each pair's two are added there and widened to the row's int lane at once. Then one
     * fused multiply-add per row with {@code dw * dx}, as {@link Iq4X16#row} does.
     */
    private static void x16Iq4Group(boolean xs, MemorySegment w, long group, int part, int blocks,
            Q4_0X16.Inputs in, int qBase, int blockBase, float[] factors, MemorySegment out, long at) {
        int[] pairs = in.pairs();
        float[] ds = in.d();
        int lanes = X16_FLOATS.length();
        long pairsAt = part * 2L * lanes;
        long blockBytes = xs ? Iq4X16.XS_GROUP_BLOCK_BYTES : Q4_0X16.GROUP_BLOCK_BYTES;
        int subBlocks = xs ? 8 : 1;
        FloatVector acc = FloatVector.zero(X16_FLOATS);
        for (int b = 0; b < blocks; b++) {
            long block = group + b * blockBytes;
            long nibbles = block + (xs ? Iq4X16.XS_NIBBLES : 32) + pairsAt;
            for (int ib = 0; ib < subBlocks; ib++) {
                int m = (qBase + (b * subBlocks + ib) * 32) / 2;
                IntVector sums = IntVector.zero(X16_INTS);
                for (int j = 0; j < 8; j++) {
                    ShortVector packed = x16Load(w, nibbles + 32L * (8 * ib + j));
                    ShortVector two = x16Low(packed).selectFrom(IQ4_VALUES).mul(x16Pair(pairs, m + j))
                            .add(x16High(packed).selectFrom(IQ4_VALUES).mul(x16Pair(pairs, m + 8 + j)));
                    IntVector both = two.reinterpretAsInts();
                    sums = sums.add(both.lanewise(VectorOperators.LSHL, 16).lanewise(VectorOperators.ASHR, 16))
                            .add(both.lanewise(VectorOperators.ASHR, 16));
                }
                FloatVector dw = FloatVector.fromArray(X16_FLOATS, factors, (b * subBlocks + ib) * lanes);
                FloatVector sumsF = (FloatVector) sums.convert(VectorOperators.I2F, 0);
                acc = sumsF.fma(dw.mul(ds[blockBase + b * subBlocks + ib]), acc);
            }
        }
        acc.intoMemorySegment(out, at, LE);
    }

    /**
     * The row factors of one part of a group of iq4_nl or iq4_xs ({@link #x16Iq4Group}'s): per
     * block of 32, {@code d} (iq4_xs: times the sub-block's 6-bit scale less 32), a vector each,
     * in {@code factors}; once for all the inputs (see {@link #x16Q5KGroup}).
     */
    private static void x16Iq4Factors(boolean xs, MemorySegment w, long group, int part, int blocks,
            float[] factors) {
        int lanes = X16_FLOATS.length();
        long pairsAt = part * 2L * lanes;
        long blockBytes = xs ? Iq4X16.XS_GROUP_BLOCK_BYTES : Q4_0X16.GROUP_BLOCK_BYTES;
        for (int b = 0; b < blocks; b++) {
            long block = group + b * blockBytes;
            FloatVector d = x16Scales(w, block + pairsAt);
            if (!xs) {
                d.intoArray(factors, b * lanes);
                continue;
            }
            IntVector scalesH = x16Scales16(w, block + 32 + pairsAt);
            IntVector scalesL = IntVector.fromMemorySegment(X16_INTS, w, block + 64 + part * 4L * lanes, LE);
            for (int ib = 0; ib < 8; ib++) {
                IntVector ls = scalesL.lanewise(VectorOperators.LSHR, 4 * ib).and(0x0f)
                        .or(scalesH.lanewise(VectorOperators.LSHR, 2 * ib).and(3).lanewise(VectorOperators.LSHL, 4))
                        .sub(32);
                d.mul((FloatVector) ls.convert(VectorOperators.I2F, 0)).intoArray(factors, (b * 8 + ib) * lanes);
            }
        }
    }

    /**
     * One part of a group of 16 rows of q2_K ({@code three} false) or q3_K with one input: per
     * sub-block of 16, in {@link LowBitsKX16}'s order, each pair of quant bytes shifted to the
     * sub-block's two bits (and for q3_K joined with its mask bit, less 4), times the pair of input
     * quants it meets, in short lanes (8 products of at most {@code 4 * 127} a lane); each row's two
     * lanes added as ints and one fused multiply-add per row with the sub-block's factor (for q2_K a
     * second with the min and the input's {@code Σ q}), as {@link LowBitsKX16#row} does.
     */
    private static void x16LowBitsKGroup(boolean three, MemorySegment w, long group, int part, int supers,
            Q4_0X16.Inputs in, int qBase, int blockBase, float[] factors, MemorySegment out, long at) {
        int[] pairs = in.pairs();
        float[] ds = in.d();
        int lanes = X16_FLOATS.length();
        long pairsAt = part * 2L * lanes;
        long blockBytes = three ? LowBitsKX16.Q3_GROUP_BLOCK_BYTES : LowBitsKX16.Q2_GROUP_BLOCK_BYTES;
        FloatVector acc = FloatVector.zero(X16_FLOATS);
        for (int b = 0; b < supers; b++) {
            long block = group + b * blockBytes;
            long quants = block + (three ? LowBitsKX16.Q3_QUANTS : LowBitsKX16.Q2_QUANTS) + pairsAt;
            for (int is = 0; is < 16; is++) {
                int n = is / 8;
                int j = (is / 2) % 4;
                int h = is % 2;
                int x = qBase + b * 256 + 128 * n + 32 * j + 16 * h;
                int m = x / 2;
                ShortVector sums = ShortVector.zero(X16_SHORTS);
                for (int p = 0; p < 8; p++) {
                    ShortVector q = x16Load(w, quants + 32L * (16 * n + 8 * h + p)).lanewise(VectorOperators.LSHR, 2 * j)
                            .and((short) 3);
                    if (three) {
                        ShortVector mask = x16Load(w, block + pairsAt + 32L * (8 * h + p));
                        q = q.or(mask.lanewise(VectorOperators.LSHR, 4 * n + j).and((short) 1)
                                .lanewise(VectorOperators.LSHL, 2)).sub((short) 4);
                    }
                    sums = q.mul(x16Pair(pairs, m + p)).add(sums);
                }
                float dx = ds[blockBase + b * 8 + 4 * n + j];
                FloatVector dot = x16Sums(sums, 0);
                int f = (b * 16 + is) * 2 * lanes;
                acc = dot.fma(FloatVector.fromArray(X16_FLOATS, factors, f).mul(dx), acc);
                if (!three) {
                    acc = FloatVector.broadcast(X16_FLOATS, (float) LowBitsKX16.sum16(in, x))
                            .fma(FloatVector.fromArray(X16_FLOATS, factors, f + lanes).mul(dx).neg(), acc);
                }
            }
        }
        acc.intoMemorySegment(out, at, LE);
    }

    /**
     * The row factors of one part of a group of q2_K ({@link #x16LowBitsKGroup}'s): per sub-block of
     * 16, {@code d * scale} and {@code dmin * min}, a vector each, side by side in {@code factors};
     * once for all the inputs (see {@link #x16Q5KGroup}).
     */
    private static void x16Q2KFactors(MemorySegment w, long group, int part, int supers, float[] factors) {
        int lanes = X16_FLOATS.length();
        long pairsAt = part * 2L * lanes;
        long rowsAt = (long) part * lanes;
        for (int b = 0; b < supers; b++) {
            long block = group + b * LowBitsKX16.Q2_GROUP_BLOCK_BYTES;
            FloatVector d = x16Scales(w, block + LowBitsKX16.Q2_D + pairsAt);
            FloatVector dmin = x16Scales(w, block + LowBitsKX16.Q2_D + 32 + pairsAt);
            for (int is = 0; is < 16; is++) {
                int f = (b * 16 + is) * 2 * lanes;
                IntVector sc = x16RowBytes(w, block + 16L * is + rowsAt);
                d.mul((FloatVector) sc.and(15).convert(VectorOperators.I2F, 0)).intoArray(factors, f);
                dmin.mul((FloatVector) sc.lanewise(VectorOperators.LSHR, 4).convert(VectorOperators.I2F, 0))
                        .intoArray(factors, f + lanes);
            }
        }
    }

    /** The row factors of one part of a group of q3_K: per sub-block of 16, {@code d * scale}, as {@link #x16Q2KFactors} lays them out. */
    private static void x16Q3KFactors(MemorySegment w, long group, int part, int supers, float[] factors) {
        int lanes = X16_FLOATS.length();
        long pairsAt = part * 2L * lanes;
        long rowsAt = (long) part * lanes;
        for (int b = 0; b < supers; b++) {
            long block = group + b * LowBitsKX16.Q3_GROUP_BLOCK_BYTES;
            FloatVector d = x16Scales(w, block + LowBitsKX16.Q3_D + pairsAt);
            long scales = block + LowBitsKX16.Q3_SCALES + rowsAt;
            for (int is = 0; is < 16; is++) {
                IntVector low = x16RowBytes(w, scales + 16L * (is & 7));
                low = is < 8 ? low.and(0x0f) : low.lanewise(VectorOperators.LSHR, 4);
                IntVector high = x16RowBytes(w, scales + 16L * (8 + (is & 3)))
                        .lanewise(VectorOperators.LSHR, 2 * (is / 4)).and(3);
                FloatVector scale = (FloatVector) low.or(high.lanewise(VectorOperators.LSHL, 4)).sub(32)
                        .convert(VectorOperators.I2F, 0);
                d.mul(scale).intoArray(factors, (b * 16 + is) * 2 * lanes);
            }
        }
    }

    /** One part's 16-bit fields of the rows at {@code at} (two bytes a row, side by side), zero-extended to ints. */
    private static IntVector x16Scales16(MemorySegment w, long at) {
        return ((IntVector) ShortVector.fromMemorySegment(X16_HALVES, w, at, LE).castShape(X16_INTS, 0)).and(0xffff);
    }

    /** A byte of each row of a part at {@code at} (one per row, side by side), zero-extended to int lanes. */
    private static IntVector x16RowBytes(MemorySegment w, long at) {
        return (IntVector) ByteVector.fromMemorySegment(X16_ROW_BYTES, w, at, LE)
                .convertShape(VectorOperators.ZERO_EXTEND_B2I, X16_INTS, 0);
    }

    /**
     * One part of a group of 16 rows of q5_0, q4_1 or q5_1 ({@code source}) with one input: per
     * block, each pair of nibble bytes (joined with its fifth bits and less 16, for the 5-bit
     * types), times the pair of quants it meets, in short lanes (16 products of at most
     * {@code 16 * 127}, or {@code 15 * 127} for q4_1, a lane: exact); each row's two lanes added as
     * ints (with {@code 16 Σ q}, which is {@code 2 * sum8}, added back for q5_1), one fused
     * multiply-add per row with {@code dw * dx}, and for q4_1 and q5_1 one with the min, as
     * {@link SmallBlocksX16#row} does. The fifth bits of the part's rows are one int lane each; for
     * the pair of values {@code 2j, 2j + 1} of a half, bit {@code 2j} goes to bit 4 of the row's
     * even short lane and bit {@code 2j + 1} to bit 4 of its odd one: the half's 16 bits spread once
     * per block to {@code bits | (bits >>> 1) << 16}, then per pair a shift, a mask and a shift.
     */
    private static void x16SmallBlocksGroup(TensorType source, MemorySegment w, long group, int part, int blocks,
            Q4_0X16.Inputs in, int qBase, int blockBase, float[] factors, MemorySegment out, long at) {
        int[] pairs = in.pairs();
        float[] ds = in.d();
        int[] sum8 = in.sum8();
        boolean fifth = SmallBlocksX16.hasHighBits(source);
        boolean mins = SmallBlocksX16.hasMins(source);
        boolean addBack = fifth && mins; // q5_1: its quants are not centred, the products less 16 are
        int lanes = X16_FLOATS.length();
        long blockBytes = SmallBlocksX16.groupBlockBytes(source);
        long highBits = group + SmallBlocksX16.highBitsAt(source) + part * 4L * lanes;
        long nibbles = group + SmallBlocksX16.nibblesAt(source) + part * 2L * lanes;
        FloatVector acc = FloatVector.zero(X16_FLOATS);
        for (int b = 0; b < blocks; b++) {
            long o = b * blockBytes;
            int m = (qBase + b * 32) / 2;
            IntVector low = IntVector.zero(X16_INTS); // never null: a vector that may be null is boxed
            IntVector high = low;
            if (fifth) {
                IntVector qh = IntVector.fromMemorySegment(X16_INTS, w, highBits + o, LE);
                low = qh.and(0xffff);
                low = low.or(low.lanewise(VectorOperators.LSHR, 1).lanewise(VectorOperators.LSHL, 16));
                high = qh.lanewise(VectorOperators.LSHR, 16);
                high = high.or(high.lanewise(VectorOperators.LSHR, 1).lanewise(VectorOperators.LSHL, 16));
            }
            ShortVector sums = ShortVector.zero(X16_SHORTS);
            for (int j = 0; j < 8; j++) {
                ShortVector packed = x16Load(w, nibbles + o + 32L * j);
                ShortVector first = x16Low(packed);
                ShortVector second = x16High(packed);
                if (fifth) {
                    first = first.or(low.lanewise(VectorOperators.LSHR, 2 * j).and(0x0001_0001)
                            .lanewise(VectorOperators.LSHL, 4).reinterpretAsShorts()).sub((short) 16);
                    second = second.or(high.lanewise(VectorOperators.LSHR, 2 * j).and(0x0001_0001)
                            .lanewise(VectorOperators.LSHL, 4).reinterpretAsShorts()).sub((short) 16);
                }
                sums = first.mul(x16Pair(pairs, m + j)).add(sums);
                sums = second.mul(x16Pair(pairs, m + 8 + j)).add(sums);
            }
            int i = blockBase + b;
            float dx = ds[i];
            int f = b * 2 * lanes;
            acc = x16Sums(sums, addBack ? -2 * sum8[i] : 0).fma(FloatVector.fromArray(X16_FLOATS, factors, f).mul(dx),
                    acc);
            if (mins) {
                acc = FloatVector.fromArray(X16_FLOATS, factors, f + lanes).fma(FloatVector.broadcast(X16_FLOATS,
                        SmallBlocksX16.inputSum(dx, sum8[i])), acc);
            }
        }
        acc.intoMemorySegment(out, at, LE);
    }

    /**
     * The row factors of one part of a group of q5_0, q4_1 or q5_1 ({@link #x16SmallBlocksGroup}'s):
     * per block, {@code d} and (q4_1, q5_1) {@code m}, widened, in {@code factors} two vectors
     * apart; once for all the inputs (see {@link #x16Q5KGroup}).
     */
    private static void x16SmallBlocksFactors(TensorType source, MemorySegment w, long group, int part, int blocks,
            float[] factors) {
        boolean mins = SmallBlocksX16.hasMins(source);
        int lanes = X16_FLOATS.length();
        long blockBytes = SmallBlocksX16.groupBlockBytes(source);
        long scales = group + part * 2L * lanes;
        for (int b = 0; b < blocks; b++) {
            long o = b * blockBytes;
            x16Scales(w, scales + o).intoArray(factors, b * 2 * lanes);
            if (mins) {
                x16Scales(w, scales + 32 + o).intoArray(factors, b * 2 * lanes + lanes);
            }
        }
    }

    // ---- q6_K interleaved by 16 rows, int8 inputs ----

    /**
     * Groups of 16 rows by {@link NativeInt8} where it runs, else by vector loops
     * ({@link #x16Q6Dots8} eight inputs at a time, then {@link #x16Q6Dots} one at a time), the rest
     * one row at a time by {@link Q6_KX16#row}, as {@link #matmulQ4_K_X16} does.
     */
    @Override
    public void matmulQ6_K_X16(
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd) {
        matmulQ6_K_X16(weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd, 0);
    }

    private static void matmulQ6_K_X16(
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd,
            long inputKey) {
        ArgumentChecks.matmulBlocks(TensorType.Q6_K_X16,
                weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd);
        int blocks = cols / 32;
        int supers = cols / 256;
        Scratch scratch = Scratch.get();
        Q4_0X16.Inputs in = quantizeInputs(scratch, x, xOffset, batch, cols, inputKey);
        long rowBytes = supers * 210L;
        long outStride = (long) rows * F;
        short[] sums = scratch.shorts(X16_K_CHUNK * 16 * X16_SHORTS.length());
        int[] byEight = batch >= X16_WIDE_INPUTS ? scratch.pairsByEight(batch / X16_WIDE_INPUTS * X16_WIDE_INPUTS * cols / 2)
                : null;
        short[][] sumsByEight = batch >= X16_WIDE_INPUTS
                ? scratch.shortsByEight(X16_K_CHUNK * 16 * X16_SHORTS.length()) : null;
        float[] factors = scratch.factors(X16_K_CHUNK * 16 * X16_FLOATS.length());
        int groupEnd = Math.min(rowEnd, rows - rows % TensorType.X16_ROWS);
        int r = rowStart;
        while (r < rowEnd) {
            if (NATIVE_INT8 && r % TensorType.X16_ROWS == 0 && r + TensorType.X16_ROWS <= groupEnd) {
                int groups = (groupEnd - r) / TensorType.X16_ROWS;
                NativeInt8.x16(TensorType.Q6_K_X16, weights, weightsOffset, r, groups, supers, in, batch, cols, out,
                        outOffset, rows);
                r += groups * TensorType.X16_ROWS;
            } else if (X16_VECTORS && r % TensorType.X16_ROWS == 0 && r + TensorType.X16_ROWS <= groupEnd) {
                long group = weightsOffset + r * rowBytes;
                for (int part = 0; part < X16_PARTS; part++) {
                    long from = group + part * X16_PART_BYTES;
                    long at = outOffset + r * F + part * X16_FLOATS.length() * F;
                    for (int b = 0; b < batch; b++) {
                        FloatVector.zero(X16_FLOATS).intoMemorySegment(out, at + b * outStride, LE);
                    }
                    for (int s = 0; s < supers; s += X16_K_CHUNK) {
                        int end = Math.min(supers, s + X16_K_CHUNK);
                        x16Q6Factors(weights, from, part, s, end, factors); // once for every input
                        // One call site each: x16Q6Scale, small enough to inline, inlined at two
                        // sites passed this method's node budget and boxed its vectors.
                        for (int b = 0; b < batch; ) {
                            boolean eight = b + X16_WIDE_INPUTS <= batch;
                            if (eight) {
                                x16Q6Dots8(weights, from, s, end, byEight, b * (cols / 2), sumsByEight);
                            } else {
                                x16Q6Dots(weights, from, s, end, in.pairs(), (b * cols) / 2, sums);
                            }
                            int n = eight ? X16_WIDE_INPUTS : 1;
                            for (int i = 0; i < n; i++, b++) {
                                x16Q6Scale(s, end, in.d(), b * blocks, eight ? sumsByEight[i] : sums, factors, out,
                                        at + b * outStride);
                            }
                        }
                    }
                }
                r += TensorType.X16_ROWS;
            } else {
                for (int b = 0; b < batch; b++) {
                    out.set(F32, outOffset + b * outStride + r * F,
                            Q6_KX16.row(weights, weightsOffset, rows, supers, r, in, b * cols, b * blocks));
                }
                r++;
            }
        }
    }

    /**
     * {@link #x16Q6Dots} for eight inputs, their pairs of quants side by side in {@code byEight}
     * from {@code m} ({@link Scratch#byEight}), each input's sums in its own array of
     * {@code sums}, laid out as {@link #x16Q6Dots} lays out one input's (so that one
     * {@link #x16Q6Scale} serves both): one set at a time, its 6-bit values made once per run and
     * met by eight chains of products, where one input at a time made every value again for every
     * input. The four sets of a run differ only in which bytes and shifts make their values, taken
     * as variables so that one loop serves all four.
     */
    private static void x16Q6Dots8(MemorySegment w, long part, int from, int end, int[] byEight, int m,
            short[][] sums) {
        int lanes = X16_SHORTS.length();
        short[] u0 = sums[0];
        short[] u1 = sums[1];
        short[] u2 = sums[2];
        short[] u3 = sums[3];
        short[] u4 = sums[4];
        short[] u5 = sums[5];
        short[] u6 = sums[6];
        short[] u7 = sums[7];
        ShortVector low = ShortVector.broadcast(X16_SHORTS, (short) 0x0f);
        ShortVector high = ShortVector.broadcast(X16_SHORTS, (short) 0x30);
        ShortVector offset = ShortVector.broadcast(X16_SHORTS, (short) 32);
        for (int set = from * 16; set < end * 16; set++) {
            int b = set >> 4;
            int n = (set >> 2) & 3; // as in x16Q6Dots: half n / 2, sub-block half n % 2
            int q = set & 3; // x16Q6Dots' s0 to s3
            long run = part + b * Q6_KX16.GROUP_BLOCK_BYTES + Q6_KX16.QUANTS + (long) Q6_KX16.RUN * 8 * n + 32L * (q & 1);
            int lowShift = (q >> 1) * 4;
            int topLeft = q == 0 ? 4 : q == 1 ? 2 : 0;
            int topRight = q == 3 ? 2 : 0;
            int o = m + (b * 128 + 64 * (n >> 1) + 8 * (n & 1) + 16 * q) * X16_WIDE_INPUTS;
            ShortVector s0 = ShortVector.zero(X16_SHORTS);
            ShortVector s1 = s0;
            ShortVector s2 = s0;
            ShortVector s3 = s0;
            ShortVector s4 = s0;
            ShortVector s5 = s0;
            ShortVector s6 = s0;
            ShortVector s7 = s0;
            for (int j = 0; j < 8; j++) {
                long at = run + (long) Q6_KX16.RUN * j;
                ShortVector top = x16Load(w, at + 64 - 32L * (q & 1));
                ShortVector v = x16Load(w, at).lanewise(VectorOperators.LSHR, lowShift).and(low)
                        .or(top.lanewise(VectorOperators.LSHL, topLeft).lanewise(VectorOperators.LSHR, topRight)
                                .and(high))
                        .sub(offset);
                int k = o + j * X16_WIDE_INPUTS;
                s0 = v.mul(x16Pair(byEight, k)).add(s0);
                s1 = v.mul(x16Pair(byEight, k + 1)).add(s1);
                s2 = v.mul(x16Pair(byEight, k + 2)).add(s2);
                s3 = v.mul(x16Pair(byEight, k + 3)).add(s3);
                s4 = v.mul(x16Pair(byEight, k + 4)).add(s4);
                s5 = v.mul(x16Pair(byEight, k + 5)).add(s5);
                s6 = v.mul(x16Pair(byEight, k + 6)).add(s6);
                s7 = v.mul(x16Pair(byEight, k + 7)).add(s7);
            }
            int at = (set - from * 16) * lanes;
            s0.intoArray(u0, at);
            s1.intoArray(u1, at);
            s2.intoArray(u2, at);
            s3.intoArray(u3, at);
            s4.intoArray(u4, at);
            s5.intoArray(u5, at);
            s6.intoArray(u6, at);
            s7.intoArray(u7, at);
        }
    }

    /**
     * One input's short sums over superblocks {@code [from, end)} of a part of a group of 16 q6_K
     * rows (its bytes from {@code part}, the group's start moved to the part), into {@code sums}
     * a vector per sub-block, in {@link Q6_KX16#subBlock}'s order: per half and sub-block half,
     * each pair of {@code ql} bytes and its pair of {@code qh} bytes give four pairs of 6-bit
     * quants (of the half's four quarters), each less 32 times its pair of input quants (from
     * {@code pairs[m]}) in short lanes, 8 products of at most {@code 32 * 127} a lane. The
     * scaling is {@link #x16Q6Scale}'s: both in one method passed C2's node budget and boxed
     * every vector.
     */
    private static void x16Q6Dots(MemorySegment w, long part, int from, int end, int[] pairs, int m, short[] sums) {
        int lanes = X16_SHORTS.length();
        // Constants as vectors once: an operation with a scalar broadcasts it again each time,
        // and those broadcasts spent C2's inlining budget (the last pair's, left out of line,
        // boxed a vector per product).
        ShortVector low = ShortVector.broadcast(X16_SHORTS, (short) 0x0f);
        ShortVector high = ShortVector.broadcast(X16_SHORTS, (short) 0x30);
        ShortVector offset = ShortVector.broadcast(X16_SHORTS, (short) 32);
        for (int b = from; b < end; b++) {
            long block = part + b * Q6_KX16.GROUP_BLOCK_BYTES;
            for (int n = 0; n < 4; n++) { // half n / 2, sub-block half n % 2
                int p = m + b * 128 + 64 * (n >> 1) + 8 * (n & 1);
                long run = block + Q6_KX16.QUANTS + (long) Q6_KX16.RUN * 8 * n;
                ShortVector s0 = ShortVector.zero(X16_SHORTS);
                ShortVector s1 = s0;
                ShortVector s2 = s0;
                ShortVector s3 = s0;
                for (int j = 0; j < 8; j++) {
                    long at = run + (long) Q6_KX16.RUN * j;
                    ShortVector a = x16Load(w, at);
                    ShortVector c = x16Load(w, at + 32);
                    ShortVector top = x16Load(w, at + 64);
                    s0 = a.and(low).or(top.lanewise(VectorOperators.LSHL, 4).and(high)).sub(offset)
                            .mul(x16Pair(pairs, p + j)).add(s0);
                    s1 = c.and(low).or(top.lanewise(VectorOperators.LSHL, 2).and(high)).sub(offset)
                            .mul(x16Pair(pairs, p + 16 + j)).add(s1);
                    s2 = a.lanewise(VectorOperators.LSHR, 4).or(top.and(high)).sub(offset)
                            .mul(x16Pair(pairs, p + 32 + j)).add(s2);
                    s3 = c.lanewise(VectorOperators.LSHR, 4).or(top.lanewise(VectorOperators.LSHR, 2).and(high))
                            .sub(offset).mul(x16Pair(pairs, p + 48 + j)).add(s3);
                }
                int at = ((b - from) * 16 + 4 * n) * lanes;
                s0.intoArray(sums, at);
                s1.intoArray(sums, at + lanes);
                s2.intoArray(sums, at + 2 * lanes);
                s3.intoArray(sums, at + 3 * lanes);
            }
        }
    }

    /**
     * The factors {@code d * sc} of superblocks {@code [from, end)} of a part of a group of 16
     * q6_K rows into {@code factors}, a vector per sub-block in its natural order: {@code d} the
     * rows' f16 factors, {@code sc} their int8 scales of the sub-block.
     */
    private static void x16Q6Factors(MemorySegment w, long part, int partIndex, int from, int end, float[] factors) {
        int lanes = X16_FLOATS.length();
        long scaleLanes = Q6_KX16.SCALES + partIndex * (lanes - X16_PART_BYTES);
        for (int b = from; b < end; b++) {
            long block = part + b * Q6_KX16.GROUP_BLOCK_BYTES;
            FloatVector d = x16Scales(w, block);
            for (int s = 0; s < 16; s++) {
                d.mul((FloatVector) ByteVector.fromMemorySegment(X16_SCALE_BYTES, w, block + scaleLanes + 16L * s, LE)
                        .convertShape(VectorOperators.B2F, X16_FLOATS, 0)).intoArray(factors, ((b - from) * 16 + s) * lanes);
            }
        }
    }

    /**
     * {@link #x16Q6Dots}' sums of superblocks {@code [from, end)} added to one input's
     * accumulators at {@code at}, each sub-block's with the fused multiply-add
     * {@link Q6_KX16#row} does, in its order: times {@code (d * sc) * dx}, the factors from
     * {@link #x16Q6Factors}, {@code dx} the factor of the sub-block's input block (from
     * {@code ds[i]}).
     */
    private static void x16Q6Scale(int from, int end, float[] ds, int i, short[] sums, float[] factors,
            MemorySegment out, long at) {
        int lanes = X16_FLOATS.length();
        int shorts = X16_SHORTS.length();
        FloatVector acc = FloatVector.fromMemorySegment(X16_FLOATS, out, at, LE);
        for (int b = from; b < end; b++) {
            for (int n = 0; n < 16; n++) {
                int s = Q6_KX16.subBlock(n);
                FloatVector factor = FloatVector.fromArray(X16_FLOATS, factors, ((b - from) * 16 + s) * lanes);
                acc = x16Sums(ShortVector.fromArray(X16_SHORTS, sums, ((b - from) * 16 + n) * shorts), 0)
                        .fma(factor.mul(ds[i + b * 8 + s / 2]), acc);
            }
        }
        acc.intoMemorySegment(out, at, LE);
    }

    /**
     * Each row's 6-bit quants are first unpacked, less 32, into a byte per value, and its factors
     * {@code d * scale} into a float per 16 values (one pass over the row, {@link #unpackQ6_K});
     * the dot products then read those bytes as the q8_0 kernel reads its quants. Two
     * loops instead of one: fused, the unpacking and the dot products made one loop body too big for
     * C2 to inline the vector operations into (it then boxes every vector, at a tenth of the speed).
     */
    @Override
    public void matmulQ6_K(
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd) {
        ArgumentChecks.matmulBlocks(TensorType.Q6_K,
                weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd);
        int blocks = cols / 256;
        long rowBytes = (long) blocks * Q6_K_BLOCK_BYTES;
        long inputBytes = (long) cols * F;
        long outStride = (long) rows * F;
        Scratch scratch = Scratch.get();
        byte[] quants = scratch.bytes(cols);
        float[] factors = scratch.factors(cols / 16);
        for (int r = rowStart; r < rowEnd; r++) {
            long row = weightsOffset + r * rowBytes;
            for (int block = 0; block < blocks; block++) {
                unpackQ6_K(weights, row + (long) block * Q6_K_BLOCK_BYTES, quants, factors, block);
            }
            int b = 0;
            for (; b + 4 <= batch; b += 4) {
                dotQ6_Kx4(quants, factors, x, xOffset + b * inputBytes, inputBytes, cols, out,
                        outOffset + b * outStride + r * F, outStride);
            }
            for (; b < batch; b++) {
                out.set(F32, outOffset + b * outStride + r * F, dotQ6_K(quants, factors, x, xOffset + b * inputBytes, cols));
            }
        }
    }

    private static final int Q6_K_BLOCK_BYTES = TensorType.Q6_K.blockBytes();

    /**
     * Unpacks the 256 quants of q6_K block {@code index} of a row (at {@code block}), less 32, into
     * {@code quants[256 index, 256 index + 256)}, in value order, and its 16 factors
     * {@code d * scale} into {@code factors[16 index, 16 index + 16)}. llama.cpp's layout: in half {@code h}, 16-byte
     * slice {@code s}, quarter {@code k} (values {@code 128 h + 32 k + 16 s} on) takes the low
     * ({@code k < 2}) or high nibbles of the {@code ql} bytes at {@code 64 h + 32 (k % 2) + 16 s},
     * below bit pair {@code k} of the {@code qh} bytes at {@code 128 + 32 h + 16 s}. Shifts are
     * 16-bit, one instruction each (a byte shift compiles to six); each mask drops the bits such a
     * shift carries across a byte.
     */
    private static void unpackQ6_K(MemorySegment w, long block, byte[] quants, float[] factors, int index) {
        int at = index * 256;
        FloatVector d = FloatVector.broadcast(Q8_FLOATS, ScalarOps.half(w, block + 208));
        ByteVector scales = bytes16(w, block + 192);
        for (int part = 0; part < Q8_PARTS; part++) {
            widen(scales, part).mul(d).intoArray(factors, index * 16 + part * Q8_LANES);
        }
        for (int slice = 0; slice < 4; slice++) {
            int half = slice >> 1;
            int s = slice & 1;
            long ql = block + half * 64 + s * 16;
            ByteVector low = bytes16(w, ql);
            ByteVector high = bytes16(w, ql + 32);
            ByteVector top = bytes16(w, block + 128 + half * 32 + s * 16);
            int to = at + half * 128 + s * 16;
            low.and((byte) 0x0f).or(shift16(top, VectorOperators.LSHL, 4).and((byte) 0x30)).sub((byte) 32)
                    .intoArray(quants, to);
            high.and((byte) 0x0f).or(shift16(top, VectorOperators.LSHL, 2).and((byte) 0x30)).sub((byte) 32)
                    .intoArray(quants, to + 32);
            highNibbles(low).and((byte) 0x0f).or(top.and((byte) 0x30)).sub((byte) 32).intoArray(quants, to + 64);
            highNibbles(high).and((byte) 0x0f).or(shift16(top, VectorOperators.LSHR, 2).and((byte) 0x30))
                    .sub((byte) 32).intoArray(quants, to + 96);
        }
    }

    private static ByteVector shift16(ByteVector v, VectorOperators.Binary shift, int bits) {
        return v.reinterpretAsShorts().lanewise(shift, bits).reinterpretAsBytes();
    }

    /** The lane-wise products of the 16 quants at {@code quants[at]} and the 16 floats at {@code in}, summed over parts. */
    private static FloatVector q6_KGroupSum(byte[] quants, int at, MemorySegment x, long in) {
        ByteVector q = ByteVector.fromArray(Q8_BYTES, quants, at);
        FloatVector sum = widen(q, 0).mul(FloatVector.fromMemorySegment(Q8_FLOATS, x, in, LE));
        for (int part = 1; part < Q8_PARTS; part++) {
            sum = widen(q, part).fma(FloatVector.fromMemorySegment(Q8_FLOATS, x, in + (long) part * Q8_LANES * F, LE),
                    sum);
        }
        return sum;
    }

    /**
     * The dot product of one unpacked q6_K row of {@code cols} values with one f32 input. Each
     * group of 16 values is summed unscaled, then added times its factor, into one of two
     * accumulators by parity so that consecutive groups do not wait on each other.
     */
    private static float dotQ6_K(byte[] quants, float[] factors, MemorySegment x, long input, int cols) {
        FloatVector even = FloatVector.zero(Q8_FLOATS);
        FloatVector odd = FloatVector.zero(Q8_FLOATS);
        for (int group = 0; group < cols / 16; group += 2) {
            long in = input + group * 16L * F;
            even = q6_KGroupSum(quants, group * 16, x, in).fma(FloatVector.broadcast(Q8_FLOATS, factors[group]), even);
            odd = q6_KGroupSum(quants, group * 16 + 16, x, in + 16 * F)
                    .fma(FloatVector.broadcast(Q8_FLOATS, factors[group + 1]), odd);
        }
        return even.add(odd).reduceLanes(VectorOperators.ADD);
    }

    /** Four dot products of one unpacked q6_K row with four inputs {@code inputStride} bytes apart. */
    private static void dotQ6_Kx4(
            byte[] quants,
            float[] factors,
            MemorySegment x,
            long input,
            long inputStride,
            int cols,
            MemorySegment out,
            long at,
            long outStride) {
        FloatVector acc0 = FloatVector.zero(Q8_FLOATS);
        FloatVector acc1 = FloatVector.zero(Q8_FLOATS);
        FloatVector acc2 = FloatVector.zero(Q8_FLOATS);
        FloatVector acc3 = FloatVector.zero(Q8_FLOATS);
        for (int group = 0; group < cols / 16; group++) {
            int q = group * 16;
            FloatVector factor = FloatVector.broadcast(Q8_FLOATS, factors[group]);
            long in = input + (long) q * F;
            acc0 = q6_KGroupSum(quants, q, x, in).fma(factor, acc0);
            acc1 = q6_KGroupSum(quants, q, x, in + inputStride).fma(factor, acc1);
            acc2 = q6_KGroupSum(quants, q, x, in + 2 * inputStride).fma(factor, acc2);
            acc3 = q6_KGroupSum(quants, q, x, in + 3 * inputStride).fma(factor, acc3);
        }
        out.set(F32, at, acc0.reduceLanes(VectorOperators.ADD));
        out.set(F32, at + outStride, acc1.reduceLanes(VectorOperators.ADD));
        out.set(F32, at + 2 * outStride, acc2.reduceLanes(VectorOperators.ADD));
        out.set(F32, at + 3 * outStride, acc3.reduceLanes(VectorOperators.ADD));
    }

    @Override
    public void matmulQ4_K(
            MemorySegment weights,
            long weightsOffset,
            MemorySegment x,
            long xOffset,
            MemorySegment out,
            long outOffset,
            int rows,
            int cols,
            int batch,
            int rowStart,
            int rowEnd) {
        ArgumentChecks.matmulBlocks(TensorType.Q4_K,
                weights, weightsOffset, x, xOffset, out, outOffset, rows, cols, batch, rowStart, rowEnd);
        int blocks = cols / 256;
        long rowBytes = (long) blocks * Q4_K_BLOCK_BYTES;
        long inputBytes = (long) cols * F;
        long outStride = (long) rows * F;
        float[] factors = Scratch.get().factors(blocks * 16);
        for (int r = rowStart; r < rowEnd; r++) {
            long row = weightsOffset + r * rowBytes;
            if (NIBBLE_TABLES) {
                q4_KFactorsByVector(weights, row, blocks, factors);
            } else {
                q4_KFactors(weights, row, blocks, factors);
            }
            int b = 0;
            for (; b + 4 <= batch; b += 4) {
                if (NIBBLE_TABLES) {
                    tableQ4_Kx4(weights, row, x, xOffset + b * inputBytes, inputBytes, blocks * 4, factors, out,
                            outOffset + b * outStride + r * F, outStride);
                } else {
                    dotQ4_Kx4(weights, row, x, xOffset + b * inputBytes, inputBytes, blocks * 8, factors, out,
                            outOffset + b * outStride + r * F, outStride);
                }
            }
            for (; b < batch; b++) {
                out.set(F32, outOffset + b * outStride + r * F, NIBBLE_TABLES
                        ? tableQ4_K(weights, row, x, xOffset + b * inputBytes, blocks * 4, factors)
                        : dotQ4_K(weights, row, x, xOffset + b * inputBytes, blocks * 8, factors));
            }
        }
    }

    private static final int Q4_K_BLOCK_BYTES = TensorType.Q4_K.blockBytes();


    /** q4_K factor lanes {@code 2 * sub} take their 6 bits from these packed bytes... */
    private static final VectorShuffle<Byte> Q4_K_SIX_BITS = VectorShuffle.fromArray(Q8_BYTES,
            new int[] {0, 4, 1, 5, 2, 6, 3, 7, 8, 8, 9, 9, 10, 10, 11, 11}, 0);

    /** ...and, for sub-blocks 4 to 7, their top two bits from these. */
    private static final VectorShuffle<Byte> Q4_K_TOP_BITS = VectorShuffle.fromArray(Q8_BYTES,
            new int[] {0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 1, 5, 2, 6, 3, 7}, 0);

    /** Odd lanes: the mins. */
    private static final VectorMask<Byte> Q4_K_MIN_LANES = VectorMask.fromLong(Q8_BYTES, 0xaaaaL);

    /** Lanes 8 to 15: sub-blocks 4 to 7. */
    private static final VectorMask<Byte> Q4_K_HIGH_SUBS = VectorMask.fromLong(Q8_BYTES, 0xff00L);

    /** Odd float lanes, when there are 16 ({@link #NIBBLE_TABLES}). */
    private static final VectorMask<Float> ODD_FLOAT_LANES = VectorMask.fromLong(Q8_FLOATS, 0xaaaaL);

    /**
     * {@link #q4_KFactors} in vector code, when a float vector has 16 lanes: per block, one load of
     * the 12 packed bytes (and 4 of the quants, unused), two byte shuffles that put each
     * sub-block's scale and min bits in its lanes, masks and blends for the 6-bit values, a
     * widening to f32 and one multiply by {@code [d, -dmin, d, -dmin, ...]}.
     */
    private static void q4_KFactorsByVector(MemorySegment w, long row, int blocks, float[] factors) {
        for (int block = 0; block < blocks; block++) {
            long at = row + (long) block * Q4_K_BLOCK_BYTES;
            ByteVector packed = ByteVector.fromMemorySegment(Q8_BYTES, w, at + 4, LE);
            ByteVector bits = packed.rearrange(Q4_K_SIX_BITS);
            ByteVector top = packed.rearrange(Q4_K_TOP_BITS).reinterpretAsShorts().lanewise(VectorOperators.LSHR, 2)
                    .reinterpretAsBytes().and((byte) 0x30);
            ByteVector nibble = bits.and((byte) 0x0f).blend(highNibbles(bits).and((byte) 0x0f), Q4_K_MIN_LANES);
            ByteVector six = bits.and((byte) 63).blend(nibble.or(top), Q4_K_HIGH_SUBS);
            FloatVector values = (FloatVector) ((IntVector) six.convertShape(VectorOperators.ZERO_EXTEND_B2I,
                    NIBBLE_INDEXES, 0)).convertShape(VectorOperators.I2F, Q8_FLOATS, 0);
            FloatVector dm = FloatVector.broadcast(Q8_FLOATS, scale(w, at))
                    .blend(-scale(w, at + 2), ODD_FLOAT_LANES);
            values.mul(dm).intoArray(factors, block * 16);
        }
    }

    /**
     * Fills {@code factors} with {@code d * scale} (at {@code 2 * sub}) and {@code -dmin * min} (at
     * {@code 2 * sub + 1}) of every sub-block {@code sub} of the {@code blocks} q4_K blocks from
     * {@code row}, unpacked by {@code ScalarOps.q4_KScale} and {@code q4_KMin}: a scalar pass over the
     * row's headers (below 512 bits; {@link #q4_KFactorsByVector} at 512), so that the vector pass is
     * one uniform loop over its sub-blocks.
     */
    private static void q4_KFactors(MemorySegment w, long row, int blocks, float[] factors) {
        for (int block = 0; block < blocks; block++) {
            long at = row + (long) block * Q4_K_BLOCK_BYTES;
            float d = scale(w, at);
            float negativeMin = -scale(w, at + 2);
            for (int sub = 0; sub < 8; sub++) {
                factors[block * 16 + 2 * sub] = d * ScalarOps.q4_KScale(w, at + 4, sub);
                factors[block * 16 + 2 * sub + 1] = negativeMin * ScalarOps.q4_KMin(w, at + 4, sub);
            }
        }
    }

    /**
     * One q4_K row with one input, its sub-blocks' factors already in {@code factors}: one uniform
     * loop over the row's groups of 64 values (32 bytes, an even and an odd sub-block). Each weight
     * is dequantized with one fused multiply-add, {@code q * (d * scale) + (-dmin * min)}, then
     * multiplied into one of four accumulators.
     */
    private static float dotQ4_K(MemorySegment w, long row, MemorySegment x, long input, int subs, float[] factors) {
        FloatVector acc0 = FloatVector.zero(Q8_FLOATS);
        FloatVector acc1 = FloatVector.zero(Q8_FLOATS);
        FloatVector acc2 = FloatVector.zero(Q8_FLOATS);
        FloatVector acc3 = FloatVector.zero(Q8_FLOATS);
        for (int group = 0; group < subs / 2; group++) {
            long quants = row + (long) (group >> 2) * Q4_K_BLOCK_BYTES + 16 + (group & 3) * 32L;
            long even = input + group * 64L * F;
            long odd = even + 32 * F;
            FloatVector scaleE = FloatVector.broadcast(Q8_FLOATS, factors[4 * group]);
            FloatVector minE = FloatVector.broadcast(Q8_FLOATS, factors[4 * group + 1]);
            FloatVector scaleO = FloatVector.broadcast(Q8_FLOATS, factors[4 * group + 2]);
            FloatVector minO = FloatVector.broadcast(Q8_FLOATS, factors[4 * group + 3]);
            ByteVector p0 = ByteVector.fromMemorySegment(Q8_BYTES, w, quants, LE);
            ByteVector p1 = ByteVector.fromMemorySegment(Q8_BYTES, w, quants + 16, LE);
            ByteVector lo0 = p0.and((byte) 0x0f);
            ByteVector lo1 = p1.and((byte) 0x0f);
            ByteVector hi0 = highNibbles(p0).and((byte) 0x0f);
            ByteVector hi1 = highNibbles(p1).and((byte) 0x0f);
            for (int part = 0; part < Q8_PARTS; part++) {
                acc0 = widen(lo0, part).fma(scaleE, minE).fma(loadQ8Input(x, even, 0, part), acc0);
                acc1 = widen(lo1, part).fma(scaleE, minE).fma(loadQ8Input(x, even, 1, part), acc1);
                acc2 = widen(hi0, part).fma(scaleO, minO).fma(loadQ8Input(x, odd, 0, part), acc2);
                acc3 = widen(hi1, part).fma(scaleO, minO).fma(loadQ8Input(x, odd, 1, part), acc3);
            }
        }
        return acc0.add(acc1).add(acc2.add(acc3)).reduceLanes(VectorOperators.ADD);
    }

    /**
     * The nibbles of 16 q4_K bytes: low ones for an even sub-block, high ones for an odd one, by a
     * 16-bit shift of 0 or 4 and a mask, without a branch.
     */
    private static ByteVector q4_KNibbles(MemorySegment w, long offset, int sub) {
        ByteVector packed = ByteVector.fromMemorySegment(Q8_BYTES, w, offset, LE);
        return packed.reinterpretAsShorts().lanewise(VectorOperators.LSHR, (sub & 1) << 2).reinterpretAsBytes()
                .and((byte) 0x0f);
    }

    /** Four dot products of one q4_K row with four inputs {@code inputStride} bytes apart. */
    private static void dotQ4_Kx4(
            MemorySegment w,
            long row,
            MemorySegment x,
            long input,
            long inputStride,
            int subs,
            float[] factors,
            MemorySegment out,
            long at,
            long outStride) {
        FloatVector acc0 = FloatVector.zero(Q8_FLOATS);
        FloatVector acc1 = FloatVector.zero(Q8_FLOATS);
        FloatVector acc2 = FloatVector.zero(Q8_FLOATS);
        FloatVector acc3 = FloatVector.zero(Q8_FLOATS);
        for (int sub = 0; sub < subs; sub++) {
            long quants = row + (long) (sub >> 3) * Q4_K_BLOCK_BYTES + 16 + ((sub & 7) >> 1) * 32L;
            long in0 = input + sub * 32L * F;
            long in1 = in0 + inputStride;
            long in2 = in1 + inputStride;
            long in3 = in2 + inputStride;
            FloatVector scaleV = FloatVector.broadcast(Q8_FLOATS, factors[2 * sub]);
            FloatVector minV = FloatVector.broadcast(Q8_FLOATS, factors[2 * sub + 1]);
            for (int half = 0; half < 2; half++) {
                ByteVector q = q4_KNibbles(w, quants + half * 16L, sub);
                for (int part = 0; part < Q8_PARTS; part++) {
                    FloatVector wv = widen(q, part).fma(scaleV, minV);
                    acc0 = wv.fma(loadQ8Input(x, in0, half, part), acc0);
                    acc1 = wv.fma(loadQ8Input(x, in1, half, part), acc1);
                    acc2 = wv.fma(loadQ8Input(x, in2, half, part), acc2);
                    acc3 = wv.fma(loadQ8Input(x, in3, half, part), acc3);
                }
            }
        }
        out.set(F32, at, acc0.reduceLanes(VectorOperators.ADD));
        out.set(F32, at + outStride, acc1.reduceLanes(VectorOperators.ADD));
        out.set(F32, at + 2 * outStride, acc2.reduceLanes(VectorOperators.ADD));
        out.set(F32, at + 3 * outStride, acc3.reduceLanes(VectorOperators.ADD));
    }

    /** The 16 bytes at {@code offset} zero-extended to ints: nibble-table indexes. */
    private static IntVector nibbleIndexes(MemorySegment w, long offset) {
        return (IntVector) ByteVector.fromMemorySegment(Q8_BYTES, w, offset, LE)
                .convertShape(VectorOperators.ZERO_EXTEND_B2I, NIBBLE_INDEXES, 0);
    }

    /** The entries of {@code table} at the low nibbles of {@code indexes} (high bits ignored). */
    private static FloatVector lookUp(IntVector indexes, FloatVector table) {
        return indexes.selectFrom(table.reinterpretAsInts()).reinterpretAsFloats();
    }

    /** The entries of {@code table} at the high nibbles of the bytes in {@code indexes}. */
    private static FloatVector lookUpHigh(IntVector indexes, FloatVector table) {
        return lookUp(indexes.lanewise(VectorOperators.LSHR, 4), table);
    }

    /**
     * One q4_0 row with one input, by nibble table ({@link #NIBBLE_TABLES}): per block, the table
     * {@code (k - 8) * d} and two look-ups give its 32 weights dequantized, exactly as
     * {@code dequantize} computes them.
     */
    private static float tableQ4_0(MemorySegment w, long row, MemorySegment x, long input, int blocks) {
        FloatVector low = FloatVector.zero(Q8_FLOATS);
        FloatVector high = FloatVector.zero(Q8_FLOATS);
        FloatVector nextLow = FloatVector.zero(Q8_FLOATS);
        FloatVector nextHigh = FloatVector.zero(Q8_FLOATS);
        int block = 0;
        for (; block + 2 <= blocks; block += 2) {
            long at = row + (long) block * Q4_0_BLOCK_BYTES;
            long in = input + (long) block * 32 * F;
            long nextAt = at + Q4_0_BLOCK_BYTES;
            long nextIn = in + 32 * F;
            FloatVector table = NIBBLES_LESS_8.mul(scale(w, at));
            FloatVector nextTable = NIBBLES_LESS_8.mul(scale(w, nextAt));
            IntVector q = nibbleIndexes(w, at + 2);
            IntVector nextQ = nibbleIndexes(w, nextAt + 2);
            low = lookUp(q, table).fma(FloatVector.fromMemorySegment(Q8_FLOATS, x, in, LE), low);
            high = lookUpHigh(q, table).fma(FloatVector.fromMemorySegment(Q8_FLOATS, x, in + 16 * F, LE), high);
            nextLow = lookUp(nextQ, nextTable).fma(FloatVector.fromMemorySegment(Q8_FLOATS, x, nextIn, LE), nextLow);
            nextHigh = lookUpHigh(nextQ, nextTable)
                    .fma(FloatVector.fromMemorySegment(Q8_FLOATS, x, nextIn + 16 * F, LE), nextHigh);
        }
        low = low.add(nextLow);
        high = high.add(nextHigh);
        for (; block < blocks; block++) {
            long at = row + (long) block * Q4_0_BLOCK_BYTES;
            long in = input + (long) block * 32 * F;
            FloatVector table = NIBBLES_LESS_8.mul(scale(w, at));
            IntVector q = nibbleIndexes(w, at + 2);
            low = lookUp(q, table).fma(FloatVector.fromMemorySegment(Q8_FLOATS, x, in, LE), low);
            high = lookUpHigh(q, table).fma(FloatVector.fromMemorySegment(Q8_FLOATS, x, in + 16 * F, LE), high);
        }
        return low.add(high).reduceLanes(VectorOperators.ADD);
    }

    /** {@link #tableQ4_0} for four inputs {@code inputStride} bytes apart. */
    private static void tableQ4_0x4(
            MemorySegment w,
            long row,
            MemorySegment x,
            long input,
            long inputStride,
            int blocks,
            MemorySegment out,
            long at,
            long outStride) {
        FloatVector acc0 = FloatVector.zero(Q8_FLOATS);
        FloatVector acc1 = FloatVector.zero(Q8_FLOATS);
        FloatVector acc2 = FloatVector.zero(Q8_FLOATS);
        FloatVector acc3 = FloatVector.zero(Q8_FLOATS);
        for (int block = 0; block < blocks; block++) {
            long blockOffset = row + (long) block * Q4_0_BLOCK_BYTES;
            long in0 = input + (long) block * 32 * F;
            FloatVector table = NIBBLES_LESS_8.mul(scale(w, blockOffset));
            IntVector q = nibbleIndexes(w, blockOffset + 2);
            for (int half = 0; half < 2; half++) {
                FloatVector wv = half == 0 ? lookUp(q, table) : lookUpHigh(q, table);
                long in = in0 + half * 16 * F;
                acc0 = wv.fma(FloatVector.fromMemorySegment(Q8_FLOATS, x, in, LE), acc0);
                acc1 = wv.fma(FloatVector.fromMemorySegment(Q8_FLOATS, x, in + inputStride, LE), acc1);
                acc2 = wv.fma(FloatVector.fromMemorySegment(Q8_FLOATS, x, in + 2 * inputStride, LE), acc2);
                acc3 = wv.fma(FloatVector.fromMemorySegment(Q8_FLOATS, x, in + 3 * inputStride, LE), acc3);
            }
        }
        out.set(F32, at, acc0.reduceLanes(VectorOperators.ADD));
        out.set(F32, at + outStride, acc1.reduceLanes(VectorOperators.ADD));
        out.set(F32, at + 2 * outStride, acc2.reduceLanes(VectorOperators.ADD));
        out.set(F32, at + 3 * outStride, acc3.reduceLanes(VectorOperators.ADD));
    }

    /**
     * One q4_K row with one input by nibble table, its sub-blocks' factors already in
     * {@code factors}: one uniform loop over the row's groups of 64 values (32 bytes, an even and an
     * odd sub-block), where the tables {@code k * (d * scale) - dmin * min} of the two sub-blocks
     * (one fused multiply-add each) and four look-ups give the weights dequantized.
     */
    private static float tableQ4_K(MemorySegment w, long row, MemorySegment x, long input, int groups,
            float[] factors) {
        FloatVector acc0 = FloatVector.zero(Q8_FLOATS);
        FloatVector acc1 = FloatVector.zero(Q8_FLOATS);
        FloatVector acc2 = FloatVector.zero(Q8_FLOATS);
        FloatVector acc3 = FloatVector.zero(Q8_FLOATS);
        for (int group = 0; group < groups; group++) {
            long quants = row + (long) (group >> 2) * Q4_K_BLOCK_BYTES + 16 + (group & 3) * 32L;
            long even = input + group * 64L * F;
            FloatVector tableE = NIBBLES.fma(factors[4 * group], factors[4 * group + 1]);
            FloatVector tableO = NIBBLES.fma(factors[4 * group + 2], factors[4 * group + 3]);
            IntVector q0 = nibbleIndexes(w, quants);
            IntVector q1 = nibbleIndexes(w, quants + 16);
            acc0 = lookUp(q0, tableE).fma(FloatVector.fromMemorySegment(Q8_FLOATS, x, even, LE), acc0);
            acc1 = lookUp(q1, tableE).fma(FloatVector.fromMemorySegment(Q8_FLOATS, x, even + 16 * F, LE), acc1);
            acc2 = lookUpHigh(q0, tableO).fma(FloatVector.fromMemorySegment(Q8_FLOATS, x, even + 32 * F, LE), acc2);
            acc3 = lookUpHigh(q1, tableO).fma(FloatVector.fromMemorySegment(Q8_FLOATS, x, even + 48 * F, LE), acc3);
        }
        return acc0.add(acc1).add(acc2.add(acc3)).reduceLanes(VectorOperators.ADD);
    }

    /**
     * {@link #tableQ4_K} for four inputs {@code inputStride} bytes apart: per group, its 32 bytes
     * are loaded and looked up once for all four, into two accumulators per input (the even and
     * the odd sub-block), so that eight chains of multiply-adds overlap.
     */
    private static void tableQ4_Kx4(
            MemorySegment w,
            long row,
            MemorySegment x,
            long input,
            long inputStride,
            int groups,
            float[] factors,
            MemorySegment out,
            long at,
            long outStride) {
        FloatVector even0 = FloatVector.zero(Q8_FLOATS);
        FloatVector even1 = FloatVector.zero(Q8_FLOATS);
        FloatVector even2 = FloatVector.zero(Q8_FLOATS);
        FloatVector even3 = FloatVector.zero(Q8_FLOATS);
        FloatVector odd0 = FloatVector.zero(Q8_FLOATS);
        FloatVector odd1 = FloatVector.zero(Q8_FLOATS);
        FloatVector odd2 = FloatVector.zero(Q8_FLOATS);
        FloatVector odd3 = FloatVector.zero(Q8_FLOATS);
        for (int group = 0; group < groups; group++) {
            long quants = row + (long) (group >> 2) * Q4_K_BLOCK_BYTES + 16 + (group & 3) * 32L;
            long in = input + group * 64L * F;
            FloatVector tableE = NIBBLES.fma(factors[4 * group], factors[4 * group + 1]);
            FloatVector tableO = NIBBLES.fma(factors[4 * group + 2], factors[4 * group + 3]);
            for (int half = 0; half < 2; half++) {
                IntVector q = nibbleIndexes(w, quants + half * 16L);
                FloatVector we = lookUp(q, tableE);
                FloatVector wo = lookUpHigh(q, tableO);
                long e = in + half * 16 * F;
                long o = e + 32 * F;
                even0 = we.fma(FloatVector.fromMemorySegment(Q8_FLOATS, x, e, LE), even0);
                even1 = we.fma(FloatVector.fromMemorySegment(Q8_FLOATS, x, e + inputStride, LE), even1);
                even2 = we.fma(FloatVector.fromMemorySegment(Q8_FLOATS, x, e + 2 * inputStride, LE), even2);
                even3 = we.fma(FloatVector.fromMemorySegment(Q8_FLOATS, x, e + 3 * inputStride, LE), even3);
                odd0 = wo.fma(FloatVector.fromMemorySegment(Q8_FLOATS, x, o, LE), odd0);
                odd1 = wo.fma(FloatVector.fromMemorySegment(Q8_FLOATS, x, o + inputStride, LE), odd1);
                odd2 = wo.fma(FloatVector.fromMemorySegment(Q8_FLOATS, x, o + 2 * inputStride, LE), odd2);
                odd3 = wo.fma(FloatVector.fromMemorySegment(Q8_FLOATS, x, o + 3 * inputStride, LE), odd3);
            }
        }
        out.set(F32, at, even0.add(odd0).reduceLanes(VectorOperators.ADD));
        out.set(F32, at + outStride, even1.add(odd1).reduceLanes(VectorOperators.ADD));
        out.set(F32, at + 2 * outStride, even2.add(odd2).reduceLanes(VectorOperators.ADD));
        out.set(F32, at + 3 * outStride, even3.add(odd3).reduceLanes(VectorOperators.ADD));
    }

    // ---- norm, rope, element-wise ----

    @Override
    public void rmsnorm(
            MemorySegment x,
            long xOffset,
            MemorySegment weight,
            long weightOffset,
            MemorySegment out,
            long outOffset,
            int n,
            float eps) {
        ArgumentChecks.rmsnorm(x, xOffset, weight, weightOffset, out, outOffset, n, eps);
        if (n == 0) {
            return;
        }
        int upper = S.loopBound(n);
        FloatVector acc = FloatVector.zero(S);
        int i = 0;
        for (; i < upper; i += L) {
            FloatVector v = load(x, xOffset + i * F);
            acc = v.fma(v, acc);
        }
        float sumOfSquares = acc.reduceLanes(VectorOperators.ADD);
        for (; i < n; i++) {
            float v = x.get(F32, xOffset + i * F);
            sumOfSquares += v * v;
        }
        float inverseRms = ScalarOps.rmsInverse(sumOfSquares, n, eps);
        i = 0;
        for (; i < upper; i += L) {
            FloatVector normalized = load(x, xOffset + i * F).mul(inverseRms);
            load(weight, weightOffset + i * F).mul(normalized).intoMemorySegment(out, outOffset + i * F, LE);
        }
        for (; i < n; i++) {
            float normalized = x.get(F32, xOffset + i * F) * inverseRms;
            out.set(F32, outOffset + i * F, weight.get(F32, weightOffset + i * F) * normalized);
        }
    }

    @Override
    public void rope(MemorySegment x, long xOffset, int heads, int headDim, int position, float theta) {
        ArgumentChecks.rope(x, xOffset, heads, headDim, position, theta);
        // L is a power of two >= 2, so a vector holds whole pairs.
        int upper = S.loopBound(headDim);
        long headBytes = (long) headDim * F;
        for (int c = 0; c < upper; c += L) {
            FloatVector cos = FloatVector.zero(S);
            FloatVector sin = FloatVector.zero(S);
            for (int lane = 0; lane < L; lane += 2) {
                double angle = RopeOps.angle(position, (c + lane) / 2, headDim, theta);
                float cosine = (float) Math.cos(angle);
                float sine = (float) Math.sin(angle);
                cos = cos.withLane(lane, cosine).withLane(lane + 1, cosine);
                sin = sin.withLane(lane, -sine).withLane(lane + 1, sine);
            }
            for (int h = 0; h < heads; h++) {
                long at = xOffset + h * headBytes + c * F;
                FloatVector v = load(x, at);
                // lane 2i: x0 * cos + x1 * -sin; lane 2i+1: x1 * cos + x0 * sin.
                v.mul(cos).add(v.rearrange(SWAP_PAIRS).mul(sin)).intoMemorySegment(x, at, LE);
            }
        }
        for (int pair = upper / 2; pair < headDim / 2; pair++) {
            double angle = RopeOps.angle(position, pair, headDim, theta);
            float cosine = (float) Math.cos(angle);
            float sine = (float) Math.sin(angle);
            for (int h = 0; h < heads; h++) {
                ScalarOps.rotatePair(x, xOffset + h * headBytes + 2L * pair * F, cosine, sine);
            }
        }
    }

    @Override
    public void siluMul(
            MemorySegment gate,
            long gateOffset,
            MemorySegment up,
            long upOffset,
            MemorySegment out,
            long outOffset,
            int n) {
        ArgumentChecks.siluMul(gate, gateOffset, up, upOffset, out, outOffset, n);
        int upper = S.loopBound(n);
        int i = 0;
        for (; i < upper; i += L) {
            FloatVector g = load(gate, gateOffset + i * F);
            FloatVector silu = g.div(g.neg().lanewise(VectorOperators.EXP).add(1f));
            silu.mul(load(up, upOffset + i * F)).intoMemorySegment(out, outOffset + i * F, LE);
        }
        for (; i < n; i++) {
            float g = gate.get(F32, gateOffset + i * F);
            float silu = g / (1f + (float) Math.exp(-g));
            out.set(F32, outOffset + i * F, silu * up.get(F32, upOffset + i * F));
        }
    }

    @Override
    public void residualAdd(MemorySegment acc, long accOffset, MemorySegment delta, long deltaOffset, int n) {
        ArgumentChecks.residualAdd(acc, accOffset, delta, deltaOffset, n);
        int upper = S.loopBound(n);
        int i = 0;
        for (; i < upper; i += L) {
            long at = accOffset + i * F;
            load(acc, at).add(load(delta, deltaOffset + i * F)).intoMemorySegment(acc, at, LE);
        }
        for (; i < n; i++) {
            long at = accOffset + i * F;
            acc.set(F32, at, acc.get(F32, at) + delta.get(F32, deltaOffset + i * F));
        }
    }

    // ---- embedding ----

    /** A row copy: {@link MemorySegment#copy} is already the vector loop. */
    @Override
    public void embedF32(
            MemorySegment table, long tableOffset, MemorySegment out, long outOffset, int rows, int dim, int token) {
        ArgumentChecks.embedF32(table, tableOffset, out, outOffset, rows, dim, token);
        MemorySegment.copy(table, tableOffset + (long) token * dim * F, out, outOffset, dim * F);
    }

    @Override
    public void embedQ8_0(
            MemorySegment table, long tableOffset, MemorySegment out, long outOffset, int rows, int dim, int token) {
        ArgumentChecks.embedQ8_0(table, tableOffset, out, outOffset, rows, dim, token);
        long row = tableOffset + (long) token * Q8_0.rowBytes(dim);
        for (int block = 0; block < dim / Q8_0.BLOCK_SIZE; block++) {
            dequantizeQ8_0Block(
                    table, row + (long) block * Q8_0.BLOCK_BYTES, out, outOffset + (long) block * Q8_0.BLOCK_SIZE * F);
        }
    }

    // ---- argmax and sampling ----

    @Override
    public int argmax(MemorySegment values, long offset, int n) {
        ArgumentChecks.argmax(values, offset, n);
        return argmaxChecked(values, offset, n);
    }

    private static int argmaxChecked(MemorySegment values, long offset, int n) {
        float max = maxOf(values, offset, n);
        if (Float.isNaN(max)) {
            throw ScalarOps.nanAt("argmax", firstNaN(values, offset, n));
        }
        int upper = S.loopBound(n);
        int i = 0;
        for (; i < upper; i += L) {
            VectorMask<Float> hits = load(values, offset + i * F).eq(max);
            if (hits.anyTrue()) {
                return i + hits.firstTrue();
            }
        }
        for (; i < n; i++) {
            if (values.get(F32, offset + i * F) == max) {
                return i;
            }
        }
        throw new AssertionError("argmax: the maximum " + max + " was not found again");
    }

    /** The largest of {@code n} values; NaN if any value is NaN ({@link Math#max} semantics). */
    private static float maxOf(MemorySegment values, long offset, int n) {
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

    private static int firstNaN(MemorySegment values, long offset, int n) {
        for (int i = 0; i < n; i++) {
            if (Float.isNaN(values.get(F32, offset + i * F))) {
                return i;
            }
        }
        throw new AssertionError("argmax: a NaN maximum without a NaN value");
    }

    @Override
    public int sample(
            MemorySegment logits,
            long logitsOffset,
            MemorySegment probs,
            long probsOffset,
            int n,
            float temperature,
            float topP,
            long seed) {
        ArgumentChecks.sample(logits, logitsOffset, probs, probsOffset, n, temperature, topP);
        if (temperature == 0f) {
            return argmaxChecked(logits, logitsOffset, n);
        }
        float max = maxOf(logits, logitsOffset, n);
        ScalarOps.checkSampleMax(max);
        float inverseTemperature = 1f / temperature;
        int upper = S.loopBound(n);
        FloatVector sums = FloatVector.zero(S);
        int i = 0;
        for (; i < upper; i += L) {
            FloatVector e = load(logits, logitsOffset + i * F)
                    .sub(max)
                    .mul(inverseTemperature)
                    .lanewise(VectorOperators.EXP);
            e.intoMemorySegment(probs, probsOffset + i * F, LE);
            sums = sums.add(e);
        }
        float sum = sums.reduceLanes(VectorOperators.ADD);
        for (; i < n; i++) {
            float e = (float) Math.exp((logits.get(F32, logitsOffset + i * F) - max) * inverseTemperature);
            probs.set(F32, probsOffset + i * F, e);
            sum += e;
        }
        float inverseSum = 1f / sum;
        i = 0;
        for (; i < upper; i += L) {
            long at = probsOffset + i * F;
            load(probs, at).mul(inverseSum).intoMemorySegment(probs, at, LE);
        }
        for (; i < n; i++) {
            long at = probsOffset + i * F;
            probs.set(F32, at, probs.get(F32, at) * inverseSum);
        }
        // The largest probability is exp(0) * inverseSum.
        float threshold = nucleusThreshold(probs, probsOffset, n, topP, inverseSum);
        float nucleusMass = massAtLeast(probs, probsOffset, n, threshold);
        return ScalarOps.draw(probs, probsOffset, n, threshold, nucleusMass, seed);
    }

    /** The bisection of {@code ScalarOps.nucleusThreshold}, over the vector {@link #massAtLeast}. */
    private static float nucleusThreshold(MemorySegment probs, long offset, int n, float topP, float largest) {
        if (topP >= 1f) {
            return 0f;
        }
        if (largest >= topP) {
            return largest;
        }
        int low = 0;
        int high = Float.floatToRawIntBits(largest) + 1;
        while (high - low > 1) {
            int middle = (low + high) >>> 1;
            if (massAtLeast(probs, offset, n, Float.intBitsToFloat(middle)) >= topP) {
                low = middle;
            } else {
                high = middle;
            }
        }
        return Float.intBitsToFloat(low);
    }

    private static float massAtLeast(MemorySegment probs, long offset, int n, float threshold) {
        int upper = S.loopBound(n);
        FloatVector masses = FloatVector.zero(S);
        int i = 0;
        for (; i < upper; i += L) {
            FloatVector p = load(probs, offset + i * F);
            masses = masses.add(p, p.compare(VectorOperators.GE, threshold));
        }
        float mass = masses.reduceLanes(VectorOperators.ADD);
        for (; i < n; i++) {
            float p = probs.get(F32, offset + i * F);
            if (p >= threshold) {
                mass += p;
            }
        }
        return mass;
    }

    // ---- paged attention ----

    @Override
    public void qk(
            MemorySegment q,
            long qOffset,
            MemorySegment keys,
            long keysOffset,
            MemorySegment scores,
            long scoresOffset,
            int headDim,
            int rowStride,
            int validRows,
            float scale) {
        ArgumentChecks.qk(q, qOffset, keys, keysOffset, scores, scoresOffset, headDim, rowStride, validRows, scale);
        long rowBytes = (long) rowStride * F;
        int upper = S.loopBound(headDim);
        int j = 0;
        // Four keys at a time: each query vector is loaded once for four independent chains of
        // FMAs, where one key's chain waited an FMA latency per vector. Each key's sum is taken
        // in the order dotF32 takes it, so the scores are the same.
        for (; j + 4 <= validRows; j += 4) {
            long k0 = keysOffset + j * rowBytes;
            long k1 = k0 + rowBytes;
            long k2 = k1 + rowBytes;
            long k3 = k2 + rowBytes;
            FloatVector a0 = FloatVector.zero(S);
            FloatVector a1 = FloatVector.zero(S);
            FloatVector a2 = FloatVector.zero(S);
            FloatVector a3 = FloatVector.zero(S);
            int k = 0;
            for (; k < upper; k += L) {
                FloatVector qv = load(q, qOffset + k * F);
                a0 = qv.fma(load(keys, k0 + k * F), a0);
                a1 = qv.fma(load(keys, k1 + k * F), a1);
                a2 = qv.fma(load(keys, k2 + k * F), a2);
                a3 = qv.fma(load(keys, k3 + k * F), a3);
            }
            float s0 = a0.reduceLanes(VectorOperators.ADD);
            float s1 = a1.reduceLanes(VectorOperators.ADD);
            float s2 = a2.reduceLanes(VectorOperators.ADD);
            float s3 = a3.reduceLanes(VectorOperators.ADD);
            for (; k < headDim; k++) {
                float qk = q.get(F32, qOffset + k * F);
                s0 += qk * keys.get(F32, k0 + k * F);
                s1 += qk * keys.get(F32, k1 + k * F);
                s2 += qk * keys.get(F32, k2 + k * F);
                s3 += qk * keys.get(F32, k3 + k * F);
            }
            long at = scoresOffset + j * F;
            scores.set(F32, at, s0 * scale);
            scores.set(F32, at + F, s1 * scale);
            scores.set(F32, at + 2 * F, s2 * scale);
            scores.set(F32, at + 3 * F, s3 * scale);
        }
        // The last keys one at a time, as dotF32 sums, written out: called from here, dotF32 was
        // left in C1's code in a decode (JFR: its boxed vectors were a third of the bytes allocated).
        for (; j < validRows; j++) {
            long kj = keysOffset + j * rowBytes;
            FloatVector a0 = FloatVector.zero(S);
            int k = 0;
            for (; k < upper; k += L) {
                a0 = load(q, qOffset + k * F).fma(load(keys, kj + k * F), a0);
            }
            float s0 = a0.reduceLanes(VectorOperators.ADD);
            for (; k < headDim; k++) {
                s0 += q.get(F32, qOffset + k * F) * keys.get(F32, kj + k * F);
            }
            scores.set(F32, scoresOffset + j * F, s0 * scale);
        }
    }

    @Override
    public void softmaxPrepare(
            MemorySegment scores, long scoresOffset, MemorySegment blockStats, long blockStatsOffset, int n) {
        ArgumentChecks.softmaxPrepare(scores, scoresOffset, blockStats, blockStatsOffset, n);
        float max = maxOf(scores, scoresOffset, n);
        float sum = 0f;
        if (max == Float.NEGATIVE_INFINITY) {
            scores.asSlice(scoresOffset, n * F).fill((byte) 0);
        } else {
            int upper = S.loopBound(n);
            FloatVector sums = FloatVector.zero(S);
            int j = 0;
            for (; j < upper; j += L) {
                long at = scoresOffset + j * F;
                FloatVector e = load(scores, at).sub(max).lanewise(VectorOperators.EXP);
                e.intoMemorySegment(scores, at, LE);
                sums = sums.add(e);
            }
            sum = sums.reduceLanes(VectorOperators.ADD);
            for (; j < n; j++) {
                long at = scoresOffset + j * F;
                float e = (float) Math.exp(scores.get(F32, at) - max);
                scores.set(F32, at, e);
                sum += e;
            }
        }
        blockStats.set(F32, blockStatsOffset, max);
        blockStats.set(F32, blockStatsOffset + F, sum);
    }

    @Override
    public void pv(
            MemorySegment exps,
            long expsOffset,
            MemorySegment values,
            long valuesOffset,
            MemorySegment partial,
            long partialOffset,
            int headDim,
            int rowStride,
            int n) {
        ArgumentChecks.pv(exps, expsOffset, values, valuesOffset, partial, partialOffset, headDim, rowStride, n);
        long rowBytes = (long) rowStride * F;
        int upper = S.loopBound(headDim);
        int c = 0;
        // Four column vectors at a time, so four chains of FMAs overlap where one waited an FMA
        // latency per position; each column's sum keeps its order.
        for (; c + 4 * L <= upper; c += 4 * L) {
            FloatVector a0 = FloatVector.zero(S);
            FloatVector a1 = FloatVector.zero(S);
            FloatVector a2 = FloatVector.zero(S);
            FloatVector a3 = FloatVector.zero(S);
            for (int j = 0; j < n; j++) {
                FloatVector e = FloatVector.broadcast(S, exps.get(F32, expsOffset + j * F));
                long at = valuesOffset + j * rowBytes + c * F;
                a0 = load(values, at).fma(e, a0);
                a1 = load(values, at + L * F).fma(e, a1);
                a2 = load(values, at + 2 * L * F).fma(e, a2);
                a3 = load(values, at + 3 * L * F).fma(e, a3);
            }
            long to = partialOffset + c * F;
            a0.intoMemorySegment(partial, to, LE);
            a1.intoMemorySegment(partial, to + L * F, LE);
            a2.intoMemorySegment(partial, to + 2 * L * F, LE);
            a3.intoMemorySegment(partial, to + 3 * L * F, LE);
        }
        for (; c < upper; c += L) {
            FloatVector acc = FloatVector.zero(S);
            for (int j = 0; j < n; j++) {
                FloatVector e = FloatVector.broadcast(S, exps.get(F32, expsOffset + j * F));
                acc = load(values, valuesOffset + j * rowBytes + c * F).fma(e, acc);
            }
            acc.intoMemorySegment(partial, partialOffset + c * F, LE);
        }
        for (; c < headDim; c++) {
            float sum = 0f;
            for (int j = 0; j < n; j++) {
                sum += exps.get(F32, expsOffset + j * F) * values.get(F32, valuesOffset + j * rowBytes + c * F);
            }
            partial.set(F32, partialOffset + c * F, sum);
        }
    }

    @Override
    public void onlineInit(
            MemorySegment runningStats,
            long runningStatsOffset,
            MemorySegment runningOut,
            long runningOutOffset,
            int headDim) {
        // Two stores and a fill: nothing to vectorise.
        ScalarOps.INSTANCE.onlineInit(runningStats, runningStatsOffset, runningOut, runningOutOffset, headDim);
    }

    @Override
    public void onlineUpdate(
            MemorySegment runningStats,
            long runningStatsOffset,
            MemorySegment runningOut,
            long runningOutOffset,
            MemorySegment blockStats,
            long blockStatsOffset,
            MemorySegment partial,
            long partialOffset,
            int headDim) {
        ArgumentChecks.onlineUpdate(
                runningStats,
                runningStatsOffset,
                runningOut,
                runningOutOffset,
                blockStats,
                blockStatsOffset,
                partial,
                partialOffset,
                headDim);
        long scales = OnlineSoftmax.foldStats(runningStats, runningStatsOffset, blockStats, blockStatsOffset);
        if (scales == OnlineSoftmax.NO_BLOCK) {
            return;
        }
        float runningScale = OnlineSoftmax.runningScale(scales);
        float blockScale = OnlineSoftmax.blockScale(scales);
        int upper = S.loopBound(headDim);
        int c = 0;
        for (; c < upper; c += L) {
            long at = runningOutOffset + c * F;
            FloatVector rescaled = load(runningOut, at).mul(runningScale);
            rescaled.add(load(partial, partialOffset + c * F).mul(blockScale)).intoMemorySegment(runningOut, at, LE);
        }
        OnlineSoftmax.rescale(runningOut, runningOutOffset, partial, partialOffset, c, headDim, scales);
    }

    @Override
    public void normalize(
            MemorySegment runningStats,
            long runningStatsOffset,
            MemorySegment runningOut,
            long runningOutOffset,
            MemorySegment out,
            long outOffset,
            int headDim) {
        ArgumentChecks.normalize(
                runningStats, runningStatsOffset, runningOut, runningOutOffset, out, outOffset, headDim);
        float sum = runningStats.get(F32, runningStatsOffset + F);
        ArgumentChecks.attendedSomething(sum);
        float inverseSum = 1f / sum;
        int upper = S.loopBound(headDim);
        int c = 0;
        for (; c < upper; c += L) {
            load(runningOut, runningOutOffset + c * F).mul(inverseSum).intoMemorySegment(out, outOffset + c * F, LE);
        }
        for (; c < headDim; c++) {
            out.set(F32, outOffset + c * F, runningOut.get(F32, runningOutOffset + c * F) * inverseSum);
        }
    }

    // ---- dequantize and quantize ----

    /**
     * Dequantization, bit for bit what {@link ScalarOps} computes. Block types load 16 bytes at a
     * time as a 128-bit {@code ByteVector}, unpack nibbles and bit fields with byte-lane shifts and
     * masks, widen as q8_0 does and apply the scale with a multiply (and a subtract for q4_K's min),
     * never an FMA. f16 widens in int lanes: normals by shifting and re-biasing the exponent,
     * subnormals through an exact int-to-float conversion times {@code 2^-24}, infinities and NaNs
     * by a second re-bias and the quiet bit, chosen per lane by masks.
     */
    @Override
    public void dequantize(
            TensorType type, MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long elements) {
        ArgumentChecks.dequantize(type, src, srcOffset, dst, dstOffset, elements);
        long blocks = elements / type.blockSize();
        long blockBytes = type.blockBytes();
        long blockFloats = type.blockSize() * F;
        switch (type) {
            case F32 -> MemorySegment.copy(src, srcOffset, dst, dstOffset, elements * F);
            case F16 -> dequantizeF16(src, srcOffset, dst, dstOffset, elements);
            case BF16 -> dequantizeBf16(src, srcOffset, dst, dstOffset, elements);
            case Q8_0 -> {
                for (long b = 0; b < blocks; b++) {
                    dequantizeQ8_0Block(src, srcOffset + b * blockBytes, dst, dstOffset + b * blockFloats);
                }
            }
            case Q4_0 -> {
                for (long b = 0; b < blocks; b++) {
                    dequantizeQ4_0Block(src, srcOffset + b * blockBytes, dst, dstOffset + b * blockFloats);
                }
            }
            case Q5_0 -> {
                for (long b = 0; b < blocks; b++) {
                    ScalarOps.dequantizeQ5_0Block(src, srcOffset + b * blockBytes, dst, dstOffset + b * blockFloats);
                }
            }
            case Q2_K, Q3_K -> {
                for (long b = 0; b < blocks; b++) {
                    ScalarOps.dequantizeLowBitsKBlock(type == TensorType.Q3_K, src, srcOffset + b * blockBytes, dst,
                            dstOffset + b * blockFloats);
                }
            }
            case IQ4_NL, IQ4_XS -> {
                for (long b = 0; b < blocks; b++) {
                    ScalarOps.dequantizeIq4Block(type == TensorType.IQ4_XS, src, srcOffset + b * blockBytes, dst,
                            dstOffset + b * blockFloats);
                }
            }
            case Q4_1, Q5_1 -> {
                for (long b = 0; b < blocks; b++) {
                    ScalarOps.dequantizeMinBlock(type == TensorType.Q5_1, src, srcOffset + b * blockBytes, dst,
                            dstOffset + b * blockFloats);
                }
            }
            case Q5_K -> {
                for (long b = 0; b < blocks; b++) {
                    ScalarOps.dequantizeQ5_KBlock(src, srcOffset + b * blockBytes, dst, dstOffset + b * blockFloats);
                }
            }
            case Q4_K -> {
                for (long b = 0; b < blocks; b++) {
                    dequantizeQ4_KBlock(src, srcOffset + b * blockBytes, dst, dstOffset + b * blockFloats);
                }
            }
            case Q6_K -> {
                for (long b = 0; b < blocks; b++) {
                    dequantizeQ6_KBlock(src, srcOffset + b * blockBytes, dst, dstOffset + b * blockFloats);
                }
            }
        }
    }

    /** {@link #L} f16 or bf16 at {@code offset}, sign-extended to int lanes (one widening load). */
    private static IntVector loadHalves(MemorySegment src, long offset) {
        return (IntVector) ShortVector.fromMemorySegment(HALVES, src, offset, LE).castShape(INTS, 0);
    }

    /** The f16 values in the low 16 bits of each lane, widened exactly as {@link HalfFloats#f16ToF32}. */
    private static FloatVector widenF16(IntVector h) {
        IntVector sign = h.and(0x8000).lanewise(VectorOperators.LSHL, 16);
        IntVector exponent = h.and(0x7c00);
        IntVector mantissa = h.and(0x3ff);
        IntVector normal = h.and(0x7fff).lanewise(VectorOperators.LSHL, 13).add(HalfFloats.F16_REBIAS);
        VectorMask<Integer> special = exponent.eq(0x7c00);
        IntVector magnitude = normal.add(HalfFloats.F16_REBIAS, special)
                .lanewise(VectorOperators.OR, 0x0040_0000, special.and(mantissa.compare(VectorOperators.NE, 0)));
        IntVector subnormal = ((FloatVector) mantissa.convert(VectorOperators.I2F, 0))
                .mul(HalfFloats.F16_SUBNORMAL_UNIT)
                .reinterpretAsInts();
        return magnitude.blend(subnormal, exponent.eq(0)).or(sign).reinterpretAsFloats();
    }

    private static void dequantizeF16(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long n) {
        long upper = n - n % L;
        long i = 0;
        for (; i < upper; i += L) {
            // sign-extended: only the low 16 bits are used
            widenF16(loadHalves(src, srcOffset + i * 2)).intoMemorySegment(dst, dstOffset + i * F, LE);
        }
        ScalarOps.dequantizeF16(src, srcOffset, dst, dstOffset, i, n);
    }

    private static void dequantizeBf16(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long n) {
        long upper = n - n % L;
        long i = 0;
        for (; i < upper; i += L) {
            loadHalves(src, srcOffset + i * 2)
                    .lanewise(VectorOperators.LSHL, 16)
                    .reinterpretAsFloats()
                    .intoMemorySegment(dst, dstOffset + i * F, LE);
        }
        ScalarOps.dequantizeBf16(src, srcOffset, dst, dstOffset, i, n);
    }

    private static ByteVector bytes16(MemorySegment src, long offset) {
        return ByteVector.fromMemorySegment(Q8_BYTES, src, offset, LE);
    }

    /** Stores the 16 signed bytes {@code q} times {@code d} as 16 f32 at {@code to}. */
    private static void storeScaled(ByteVector q, FloatVector d, MemorySegment dst, long to) {
        for (int part = 0; part < Q8_PARTS; part++) {
            widen(q, part).mul(d).intoMemorySegment(dst, to + (long) part * Q8_LANES * F, LE);
        }
    }

    private static void dequantizeQ8_0Block(MemorySegment src, long block, MemorySegment dst, long to) {
        FloatVector d = FloatVector.broadcast(Q8_FLOATS, ScalarOps.half(src, block));
        storeScaled(bytes16(src, block + 2), d, dst, to);
        storeScaled(bytes16(src, block + 18), d, dst, to + 16 * F);
    }

    private static void dequantizeQ4_0Block(MemorySegment src, long block, MemorySegment dst, long to) {
        FloatVector d = FloatVector.broadcast(Q8_FLOATS, ScalarOps.half(src, block));
        ByteVector packed = bytes16(src, block + 2);
        storeScaled(packed.and((byte) 0x0f).sub((byte) 8), d, dst, to);
        storeScaled(packed.lanewise(VectorOperators.LSHR, 4).sub((byte) 8), d, dst, to + 16 * F);
    }

    /** Stores the 16 nibbles {@code q} as {@code d * q - m}, 16 f32 at {@code to}. */
    private static void storeScaledLessMin(ByteVector q, FloatVector d, FloatVector m, MemorySegment dst, long to) {
        for (int part = 0; part < Q8_PARTS; part++) {
            widen(q, part).mul(d).sub(m).intoMemorySegment(dst, to + (long) part * Q8_LANES * F, LE);
        }
    }

    private static void dequantizeQ4_KBlock(MemorySegment src, long block, MemorySegment dst, long to) {
        float d = ScalarOps.half(src, block);
        float dmin = ScalarOps.half(src, block + 2);
        long scales = block + 4;
        long quants = block + 16;
        for (int group = 0; group < 4; group++) {
            FloatVector d1 = FloatVector.broadcast(Q8_FLOATS, d * ScalarOps.q4_KScale(src, scales, 2 * group));
            FloatVector m1 = FloatVector.broadcast(Q8_FLOATS, dmin * ScalarOps.q4_KMin(src, scales, 2 * group));
            FloatVector d2 = FloatVector.broadcast(Q8_FLOATS, d * ScalarOps.q4_KScale(src, scales, 2 * group + 1));
            FloatVector m2 = FloatVector.broadcast(Q8_FLOATS, dmin * ScalarOps.q4_KMin(src, scales, 2 * group + 1));
            long out = to + group * 64 * F;
            for (int sixteen = 0; sixteen < 2; sixteen++) {
                ByteVector packed = bytes16(src, quants + group * 32 + sixteen * 16);
                storeScaledLessMin(packed.and((byte) 0x0f), d1, m1, dst, out + sixteen * 16 * F);
                storeScaledLessMin(packed.lanewise(VectorOperators.LSHR, 4), d2, m2, dst, out + (32 + sixteen * 16) * F);
            }
        }
    }

    private static void dequantizeQ6_KBlock(MemorySegment src, long block, MemorySegment dst, long to) {
        float d = ScalarOps.half(src, block + 208);
        for (int half = 0; half < 2; half++) {
            long ql = block + half * 64;
            long qh = block + 128 + half * 32;
            long sc = block + 192 + half * 8;
            long out = to + half * 128 * F;
            for (int is = 0; is < 2; is++) {
                ByteVector low = bytes16(src, ql + is * 16);
                ByteVector high = bytes16(src, ql + 32 + is * 16);
                ByteVector top = bytes16(src, qh + is * 16);
                ByteVector q1 = low.and((byte) 0x0f).or(top.and((byte) 3).lanewise(VectorOperators.LSHL, 4));
                ByteVector q2 = high.and((byte) 0x0f)
                        .or(top.lanewise(VectorOperators.LSHR, 2).and((byte) 3).lanewise(VectorOperators.LSHL, 4));
                ByteVector q3 = low.lanewise(VectorOperators.LSHR, 4)
                        .or(top.lanewise(VectorOperators.LSHR, 4).and((byte) 3).lanewise(VectorOperators.LSHL, 4));
                ByteVector q4 = high.lanewise(VectorOperators.LSHR, 4)
                        .or(top.lanewise(VectorOperators.LSHR, 6).lanewise(VectorOperators.LSHL, 4));
                long at = out + is * 16 * F;
                storeScaled(q1.sub((byte) 32), q6_KScale(d, src, sc + is), dst, at);
                storeScaled(q2.sub((byte) 32), q6_KScale(d, src, sc + is + 2), dst, at + 32 * F);
                storeScaled(q3.sub((byte) 32), q6_KScale(d, src, sc + is + 4), dst, at + 64 * F);
                storeScaled(q4.sub((byte) 32), q6_KScale(d, src, sc + is + 6), dst, at + 96 * F);
            }
        }
    }

    /** {@code d * sc}, the factor of the q6_K values of the int8 scale at {@code scale}. */
    private static FloatVector q6_KScale(float d, MemorySegment src, long scale) {
        return FloatVector.broadcast(Q8_FLOATS, d * src.get(LittleEndian.I8, scale));
    }

    /** The quantizers run their scalar twins: they run once per checkpoint written, not per token. */
    @Override
    public void quantize(
            TensorType type, MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long elements) {
        ScalarOps.INSTANCE.quantize(type, src, srcOffset, dst, dstOffset, elements);
    }
}
