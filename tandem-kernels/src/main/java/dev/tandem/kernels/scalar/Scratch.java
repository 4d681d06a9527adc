package dev.tandem.kernels.scalar;

import dev.tandem.kernels.MatmulOps;
import java.lang.foreign.MemorySegment;

/**
 * The working arrays of the vector kernels, one set per thread, grown on demand and reused call
 * after call. A matmul is called once per part of a split task, hundreds of times per decode
 * step: allocating its arrays per call made it most of the decoder's garbage (JFR on a batch-1
 * Q8_0 decode: the q8_0 input copies were 64% of the bytes allocated). Every user writes the
 * range it reads before reading it, so what a previous call left behind is never seen, with one
 * exception: the inputs converted by a matmul called with an input key ({@link
 * MatmulOps#matmul(TensorType, MemorySegment, long, MemorySegment, long, MemorySegment, long, int,
 * int, int, int, int, long)}) stay readable by the next call with that key and input, until any
 * other call takes their array ({@link #inputs} and {@link #quantized} forget the key). No kernel
 * calls another that uses the same array, so one set per thread is enough.
 */
public final class Scratch {
    private static final ThreadLocal<Scratch> OF_THREAD = ThreadLocal.withInitial(Scratch::new);

    private float[] inputs = new float[0];
    private float[] factors = new float[0];
    private byte[] bytes = new byte[0];
    private short[] shorts = new short[0];
    private float[] wide = new float[0];
    private Q4_0X16.Inputs quantized = new Q4_0X16.Inputs(new int[0], new float[0], new int[0]);
    private int[] pairsByEight = new int[0];
    private short[][] shortsByEight = new short[8][0];
    private float[] inputsByEight = new float[0];
    private float[] quantFloats = new float[0];
    private float[] quantFloatsByEight = new float[0];

    /** What {@link #inputs} and {@link #quantized} hold a conversion of, for calls with an input key. */
    private final Kept inputsKept = new Kept();
    private final Kept quantizedKept = new Kept();

    /**
     * The input an array holds a conversion of, named by the caller's key (0: nothing that may be
     * reused), for the calls of {@link MatmulOps#matmul(TensorType, MemorySegment, long, MemorySegment,
     * long, MemorySegment, long, int, int, int, int, int, long)} with an input key. Mutable, so that
     * keeping costs no allocation on the kernels' path.
     */
    private static final class Kept {
        private long key;
        private MemorySegment x;
        private long offset;
        private int batch;
        private int cols;

        boolean holds(long key, MemorySegment x, long offset, int batch, int cols) {
            return key != 0 && key == this.key && x == this.x && offset == this.offset && batch == this.batch
                    && cols == this.cols;
        }

        void set(long key, MemorySegment x, long offset, int batch, int cols) {
            if (key != 0) {
                this.key = key;
                this.x = x;
                this.offset = offset;
                this.batch = batch;
                this.cols = cols;
            }
        }

        void forget() {
            key = 0;
            x = null;
        }
    }

    private Scratch() {}

    /** This thread's arrays. */
    public static Scratch get() {
        return OF_THREAD.get();
    }

    /** At least {@code n} floats for a copy of the inputs; what they held may no longer be reused. */
    public float[] inputs(int n) {
        inputsKept.forget();
        if (inputs.length < n) {
            inputs = new float[n];
        }
        return inputs;
    }

    /** At least {@code n} floats for per-row or per-block factors. */
    public float[] factors(int n) {
        if (factors.length < n) {
            factors = new float[n];
        }
        return factors;
    }

    /** At least {@code n} bytes. */
    public byte[] bytes(int n) {
        if (bytes.length < n) {
            bytes = new byte[n];
        }
        return bytes;
    }

    /** At least {@code n} shorts. */
    public short[] shorts(int n) {
        if (shorts.length < n) {
            shorts = new short[n];
        }
        return shorts;
    }

    /** At least {@code n} floats for weights widened to f32. */
    public float[] wide(int n) {
        if (wide.length < n) {
            wide = new float[n];
        }
        return wide;
    }

    /** Room for {@code batch} inputs of {@code cols} values quantized as {@link Q4_0X16.Inputs#of} sizes them. */
    public Q4_0X16.Inputs quantized(int batch, int cols) {
        quantizedKept.forget();
        int values = batch * cols;
        int blocks = batch * (cols / 32);
        if (quantized.pairs().length < values / 2 || quantized.d().length < blocks) {
            quantized = Q4_0X16.Inputs.of(batch, cols);
        }
        return quantized;
    }

    /** Eight arrays of at least {@code n} shorts each. */
    public short[][] shortsByEight(int n) {
        if (shortsByEight[0].length < n) {
            for (int i = 0; i < 8; i++) {
                shortsByEight[i] = new short[n];
            }
        }
        return shortsByEight;
    }

    /**
     * Room for {@code n} ints: the pairs of quants of {@link #quantized}, eight inputs side by side,
     * written with them and kept with them.
     */
    public int[] pairsByEight(int n) {
        if (pairsByEight.length < n) {
            pairsByEight = new int[n];
        }
        return pairsByEight;
    }

    /**
     * The copy of the {@code batch} inputs of {@code cols} floats at {@code x} and {@code offset}
     * that {@link #inputs} holds since a call with the same nonzero {@code key} ({@link #inputsAre}),
     * or null.
     */
    private float[] inputsOf(long key, MemorySegment x, long offset, int batch, int cols) {
        return inputsKept.holds(key, x, offset, batch, cols) ? inputs : null;
    }

    /** {@link #inputs} now holds the inputs at {@code x} and {@code offset}, named by {@code key}. */
    private void inputsAre(long key, MemorySegment x, long offset, int batch, int cols) {
        inputsKept.set(key, x, offset, batch, cols);
    }

    /**
     * The {@code batch} inputs of {@code cols} floats at {@code x} and {@code offset} on the heap:
     * what {@link #inputsOf} keeps for {@code key}, or a fresh copy into {@link #inputs}, kept for
     * the next call with {@code key}.
     */
    public float[] heapInputs(long key, MemorySegment x, long offset, int batch, int cols) {
        float[] kept = inputsOf(key, x, offset, batch, cols);
        if (kept != null) {
            return kept;
        }
        float[] copy = inputs(batch * cols);
        MemorySegment.copy(x, LittleEndian.F32, offset, copy, 0, batch * cols);
        int eights = batch / 8;
        if (eights > 0) {
            if (inputsByEight.length < eights * 8 * cols) {
                inputsByEight = new float[eights * 8 * cols];
            }
            byEight(copy, eights, cols, inputsByEight);
        }
        inputsAre(key, x, offset, batch, cols);
        return copy;
    }

    /**
     * The first {@code eights * 8} rows of {@code n} values of {@code rows} with every eight rows'
     * value {@code k} side by side: row {@code 8g + i}'s at {@code (g * n + k) * 8 + i}, into
     * {@code into}. The layout of {@link #heapInputsByEight} and {@link #pairsByEight}.
     */
    public static void byEight(float[] rows, int eights, int n, float[] into) {
        for (int g = 0; g < eights; g++) {
            for (int i = 0; i < 8; i++) {
                int from = (g * 8 + i) * n;
                int to = g * 8 * n + i;
                for (int k = 0; k < n; k++) {
                    into[to + 8 * k] = rows[from + k];
                }
            }
        }
    }

    /** {@link #byEight(float[], int, int, float[])} for ints. */
    public static void byEight(int[] rows, int eights, int n, int[] into) {
        for (int g = 0; g < eights; g++) {
            for (int i = 0; i < 8; i++) {
                int from = (g * 8 + i) * n;
                int to = g * 8 * n + i;
                for (int k = 0; k < n; k++) {
                    into[to + 8 * k] = rows[from + k];
                }
            }
        }
    }

    /**
     * The inputs of the last {@link #heapInputs} call, the first {@code batch / 8 * 8} of them,
     * every eight side by side: input {@code 8g + i}'s value {@code k} at {@code (g * cols + k) * 8
     * + i}, so that the eight-input loops broadcast from one base at constant offsets. Written and
     * kept with them.
     */
    public float[] heapInputsByEight() {
        return inputsByEight;
    }

    /**
     * The quants of the {@code batch} quantized inputs {@code in} (each {@code cols} values) as
     * floats, input after input, and the first {@code batch / 8 * 8} of them also as
     * {@link #quantFloatsByEight} holds them.
     */
    public float[] quantFloats(Q4_0X16.Inputs in, int batch, int cols) {
        int n = batch * cols;
        if (quantFloats.length < n) {
            quantFloats = new float[n];
        }
        for (int i = 0; i < n; i++) {
            quantFloats[i] = in.quant(i);
        }
        int eights = batch / 8;
        if (eights > 0) {
            if (quantFloatsByEight.length < eights * 8 * cols) {
                quantFloatsByEight = new float[eights * 8 * cols];
            }
            byEight(quantFloats, eights, cols, quantFloatsByEight);
        }
        return quantFloats;
    }

    /** The quants of the last {@link #quantFloats} call's first {@code batch / 8 * 8} inputs, eight side by side as in {@link #byEight}. */
    public float[] quantFloatsByEight() {
        return quantFloatsByEight;
    }

    /**
     * The {@code batch} inputs of {@code cols} values at {@code x} and {@code offset} as
     * {@link #quantized} holds them since a call with the same nonzero {@code key}
     * ({@link #quantizedAre}), or null.
     */
    public Q4_0X16.Inputs quantizedOf(long key, MemorySegment x, long offset, int batch, int cols) {
        return quantizedKept.holds(key, x, offset, batch, cols) ? quantized : null;
    }

    /** {@link #quantized} now holds the inputs at {@code x} and {@code offset}, named by {@code key}. */
    public void quantizedAre(long key, MemorySegment x, long offset, int batch, int cols) {
        quantizedKept.set(key, x, offset, batch, cols);
    }
}
