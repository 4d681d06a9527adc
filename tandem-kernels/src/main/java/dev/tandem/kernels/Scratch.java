package dev.tandem.kernels;

/**
 * The working arrays of the vector kernels, one set per thread, grown on demand and reused call
 * after call. A matmul is called once per part of a split task, hundreds of times per decode
 * step: allocating its arrays per call made it most of the decoder's garbage (JFR on a batch-1
 * Q8_0 decode: the q8_0 input copies were 64% of the bytes allocated). Every user writes the
 * range it reads before reading it, so what a previous call left behind is never seen; no kernel
 * calls another that uses the same array, so one set per thread is enough.
 */
final class Scratch {
    private static final ThreadLocal<Scratch> OF_THREAD = ThreadLocal.withInitial(Scratch::new);

    private float[] inputs = new float[0];
    private float[] factors = new float[0];
    private byte[] bytes = new byte[0];
    private short[] shorts = new short[0];
    private Q4_0X16.Inputs quantized = new Q4_0X16.Inputs(new int[0], new float[0], new int[0]);

    private Scratch() {}

    /** This thread's arrays. */
    static Scratch get() {
        return OF_THREAD.get();
    }

    /** At least {@code n} floats for a copy of the inputs. */
    float[] inputs(int n) {
        if (inputs.length < n) {
            inputs = new float[n];
        }
        return inputs;
    }

    /** At least {@code n} floats for per-row or per-block factors. */
    float[] factors(int n) {
        if (factors.length < n) {
            factors = new float[n];
        }
        return factors;
    }

    /** At least {@code n} bytes. */
    byte[] bytes(int n) {
        if (bytes.length < n) {
            bytes = new byte[n];
        }
        return bytes;
    }

    /** At least {@code n} shorts. */
    short[] shorts(int n) {
        if (shorts.length < n) {
            shorts = new short[n];
        }
        return shorts;
    }

    /** Room for {@code batch} inputs of {@code cols} values quantized as {@link Q4_0X16.Inputs#of} sizes them. */
    Q4_0X16.Inputs quantized(int batch, int cols) {
        int values = batch * cols;
        int blocks = batch * (cols / 32);
        if (quantized.pairs().length < values / 2 || quantized.d().length < blocks) {
            quantized = Q4_0X16.Inputs.of(batch, cols);
        }
        return quantized;
    }
}
