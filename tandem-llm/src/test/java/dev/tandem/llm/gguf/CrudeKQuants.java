package dev.tandem.llm.gguf;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Test quantisers for the k-quants the kernels only dequantise: crude (one scale per sub-block
 * from its range, the block's f16 super-scales from the largest sub-block scale, round to
 * nearest; none of llama.cpp's search for the best scales), but they write valid blocks in the
 * layouts {@link dev.tandem.kernels.TensorType} documents, so a random model quantised with them
 * is a real Q4_K or Q6_K checkpoint whose values are close to the f32 ones.
 */
public final class CrudeKQuants {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort F16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private CrudeKQuants() {}

    /**
     * Q4_K: per 256 values, eight sub-blocks of 32, each {@code d * scale * q - dmin * min} with a
     * 6-bit scale and min and 4-bit {@code q}.
     */
    public static void q4K(MemorySegment src, MemorySegment dst, long elements) {
        kQuants(src, dst, elements, 4);
    }

    /**
     * Q5_K: as Q4_K with 5-bit {@code q}, the low four bits as Q4_K's nibbles and the fifth of
     * sub-block {@code t} at position {@code l} as bit {@code t} of the 32 bytes {@code qh}.
     */
    public static void q5K(MemorySegment src, MemorySegment dst, long elements) {
        kQuants(src, dst, elements, 5);
    }

    private static void kQuants(MemorySegment src, MemorySegment dst, long elements, int bits) {
        int top = (1 << bits) - 1;
        long blockBytes = bits == 4 ? 144 : 176;
        long quants = bits == 4 ? 16 : 48;
        for (long b = 0; b < elements / 256; b++) {
            float[] x = read(src, b * 256, 256);
            float[] scale = new float[8];
            float[] min = new float[8];
            for (int s = 0; s < 8; s++) {
                float lo = 0;
                float hi = 0;
                for (int j = 0; j < 32; j++) {
                    lo = Math.min(lo, x[s * 32 + j]);
                    hi = Math.max(hi, x[s * 32 + j]);
                }
                scale[s] = (hi - lo) / top;
                min[s] = -lo;
            }
            float d = half(max(scale) / 63f);
            float dmin = half(max(min) / 63f);
            int[] sc = new int[8];
            int[] mn = new int[8];
            for (int s = 0; s < 8; s++) {
                sc[s] = d == 0 ? 0 : clamp(Math.round(scale[s] / d), 0, 63);
                mn[s] = dmin == 0 ? 0 : clamp(Math.round(min[s] / dmin), 0, 63);
            }
            long at = b * blockBytes;
            dst.set(F16, at, Float.floatToFloat16(d));
            dst.set(F16, at + 2, Float.floatToFloat16(dmin));
            byte[] packed = new byte[12];
            for (int i = 0; i < 4; i++) {
                packed[i] = (byte) (sc[i] | (sc[i + 4] >> 4) << 6);
                packed[i + 4] = (byte) (mn[i] | (mn[i + 4] >> 4) << 6);
                packed[i + 8] = (byte) ((sc[i + 4] & 15) | (mn[i + 4] & 15) << 4);
            }
            MemorySegment.copy(packed, 0, dst, ValueLayout.JAVA_BYTE, at + 4, 12);
            byte[] high = new byte[32];
            for (int g = 0; g < 4; g++) {
                for (int l = 0; l < 32; l++) {
                    int low = level(x[64 * g + l], d * sc[2 * g], dmin * mn[2 * g], top);
                    int up = level(x[64 * g + 32 + l], d * sc[2 * g + 1], dmin * mn[2 * g + 1], top);
                    dst.set(ValueLayout.JAVA_BYTE, at + quants + 32 * g + l, (byte) ((low & 15) | (up & 15) << 4));
                    high[l] |= (byte) ((low >> 4) << (2 * g) | (up >> 4) << (2 * g + 1));
                }
            }
            if (bits == 5) {
                MemorySegment.copy(high, 0, dst, ValueLayout.JAVA_BYTE, at + 16, 32);
            }
        }
    }

    private static int level(float x, float step, float offset, int top) {
        return step == 0 ? 0 : clamp(Math.round((x + offset) / step), 0, top);
    }

    /** Q6_K: per 256 values, sixteen sub-blocks of 16, each {@code d * scale * (q - 32)} with an int8 scale. */
    public static void q6K(MemorySegment src, MemorySegment dst, long elements) {
        for (long b = 0; b < elements / 256; b++) {
            float[] x = read(src, b * 256, 256);
            float[] scale = new float[16];
            for (int s = 0; s < 16; s++) {
                float amax = 0;
                for (int j = 0; j < 16; j++) {
                    amax = Math.max(amax, Math.abs(x[s * 16 + j]));
                }
                scale[s] = amax / 31f;
            }
            float d = half(max(scale) / 127f);
            int[] sc = new int[16];
            for (int s = 0; s < 16; s++) {
                sc[s] = d == 0 ? 0 : clamp(Math.round(scale[s] / d), -128, 127);
            }
            int[] q = new int[256];
            for (int i = 0; i < 256; i++) {
                float step = d * sc[i / 16];
                q[i] = step == 0 ? 32 : clamp(Math.round(x[i] / step) + 32, 0, 63);
            }
            long at = b * 210;
            for (int h = 0; h < 2; h++) {
                for (int l = 0; l < 32; l++) {
                    int base = 128 * h;
                    int q1 = q[base + l];
                    int q2 = q[base + l + 32];
                    int q3 = q[base + l + 64];
                    int q4 = q[base + l + 96];
                    dst.set(ValueLayout.JAVA_BYTE, at + 64 * h + l, (byte) ((q1 & 15) | (q3 & 15) << 4));
                    dst.set(ValueLayout.JAVA_BYTE, at + 64 * h + l + 32, (byte) ((q2 & 15) | (q4 & 15) << 4));
                    dst.set(ValueLayout.JAVA_BYTE, at + 128 + 32 * h + l,
                            (byte) ((q1 >> 4) | (q2 >> 4) << 2 | (q3 >> 4) << 4 | (q4 >> 4) << 6));
                }
            }
            for (int s = 0; s < 16; s++) {
                dst.set(ValueLayout.JAVA_BYTE, at + 192 + s, (byte) sc[s]);
            }
            dst.set(F16, at + 208, Float.floatToFloat16(d));
        }
    }

    /**
     * Q2_K: per 256 values, sixteen sub-blocks of 16, each {@code d * sc * q - dmin * m} with 4-bit
     * {@code sc}, {@code m} and 2-bit {@code q}; value {@code 128n + 32j + 16h + l} in bits
     * {@code 2j, 2j + 1} of quant byte {@code 32n + 16h + l}.
     */
    public static void q2K(MemorySegment src, MemorySegment dst, long elements) {
        for (long b = 0; b < elements / 256; b++) {
            float[] x = read(src, b * 256, 256);
            float[] scale = new float[16];
            float[] min = new float[16];
            for (int s = 0; s < 16; s++) {
                float lo = 0;
                float hi = 0;
                for (int l = 0; l < 16; l++) {
                    lo = Math.min(lo, x[subBlockValue(s, l)]);
                    hi = Math.max(hi, x[subBlockValue(s, l)]);
                }
                scale[s] = (hi - lo) / 3f;
                min[s] = -lo;
            }
            float d = half(max(scale) / 15f);
            float dmin = half(max(min) / 15f);
            long at = b * 84;
            for (int s = 0; s < 16; s++) {
                int sc = d == 0 ? 0 : clamp(Math.round(scale[s] / d), 0, 15);
                int m = dmin == 0 ? 0 : clamp(Math.round(min[s] / dmin), 0, 15);
                dst.set(ValueLayout.JAVA_BYTE, at + s, (byte) (sc | m << 4));
                for (int l = 0; l < 16; l++) {
                    int q = level(x[subBlockValue(s, l)], d * sc, dmin * m, 3);
                    orByte(dst, at + 16 + quantByte(s, l), q << (2 * ((s / 2) % 4)));
                }
            }
            dst.set(F16, at + 80, Float.floatToFloat16(d));
            dst.set(F16, at + 82, Float.floatToFloat16(dmin));
        }
    }

    /**
     * Q3_K: per 256 values, sixteen sub-blocks of 16, each {@code d * (s - 32) * q} with a 6-bit
     * {@code s} and {@code q} in -4..3: its low two bits as Q2_K's, its third (set for q >= 0) bit
     * {@code 4n + j} of mask byte {@code 16h + l}; the scales packed as llama.cpp packs them.
     */
    public static void q3K(MemorySegment src, MemorySegment dst, long elements) {
        for (long b = 0; b < elements / 256; b++) {
            float[] x = read(src, b * 256, 256);
            float[] scale = new float[16];
            for (int s = 0; s < 16; s++) {
                float amax = 0;
                for (int l = 0; l < 16; l++) {
                    amax = Math.max(amax, Math.abs(x[subBlockValue(s, l)]));
                }
                scale[s] = amax / 4f;
            }
            float d = half(max(scale) / 31f);
            long at = b * 110;
            for (int s = 0; s < 16; s++) {
                int sc = d == 0 ? 32 : clamp(Math.round(scale[s] / d) + 32, 0, 63);
                orByte(dst, at + 96 + (s & 7), (sc & 15) << (s < 8 ? 0 : 4));
                orByte(dst, at + 96 + 8 + (s & 3), (sc >> 4) << (2 * (s / 4)));
                float step = d * (sc - 32);
                int n = s / 8;
                int j = (s / 2) % 4;
                for (int l = 0; l < 16; l++) {
                    int q = step == 0 ? 0 : clamp(Math.round(x[subBlockValue(s, l)] / step), -4, 3);
                    orByte(dst, at + 32 + quantByte(s, l), (q & 3) << (2 * j));
                    if (q >= 0) {
                        orByte(dst, at + 16 * (s % 2) + l, 1 << (4 * n + j));
                    }
                }
            }
            dst.set(F16, at + 108, Float.floatToFloat16(d));
        }
    }

    /** Value {@code l} of sub-block {@code s} of 16 in a Q2_K or Q3_K superblock. */
    private static int subBlockValue(int s, int l) {
        return 128 * (s / 8) + 32 * ((s / 2) % 4) + 16 * (s % 2) + l;
    }

    /** The quant byte of value {@code l} of sub-block {@code s}. */
    private static int quantByte(int s, int l) {
        return 32 * (s / 8) + 16 * (s % 2) + l;
    }

    private static void orByte(MemorySegment dst, long at, int bits) {
        dst.set(ValueLayout.JAVA_BYTE, at, (byte) (dst.get(ValueLayout.JAVA_BYTE, at) | bits));
    }

    /** llama.cpp's {@code kvalues_iq4nl}. */
    private static final int[] IQ4_VALUES = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

    /**
     * IQ4_NL ({@code xs} false: per 32 values an f16 scale {@code d = max / -127}, the value of
     * largest magnitude meeting the table's -127) or IQ4_XS ({@code xs}: per 256 values an f16
     * {@code d}, each sub-block of 32 its own such scale as {@code d * (ls - 32)} with a 6-bit
     * {@code ls}); each value the nibble of the nearest table entry.
     */
    public static void iq4(MemorySegment src, MemorySegment dst, long elements, boolean xs) {
        int per = xs ? 256 : 32;
        long blockBytes = xs ? 136 : 18;
        for (long b = 0; b < elements / per; b++) {
            float[] x = read(src, b * per, per);
            float[] wanted = new float[per / 32];
            for (int s = 0; s < wanted.length; s++) {
                float max = 0;
                for (int j = 0; j < 32; j++) {
                    if (Math.abs(x[32 * s + j]) > Math.abs(max)) {
                        max = x[32 * s + j];
                    }
                }
                wanted[s] = max / -127f;
            }
            long at = b * blockBytes;
            float d = half(xs ? maxAbs(wanted) / 31f : wanted[0]);
            dst.set(F16, at, Float.floatToFloat16(d));
            long nibbles = at + (xs ? 8 : 2);
            int scalesH = 0;
            for (int s = 0; s < wanted.length; s++) {
                float scale = d;
                if (xs) {
                    int ls = d == 0 ? 32 : clamp(Math.round(wanted[s] / d) + 32, 0, 63);
                    scalesH |= (ls >> 4) << (2 * s);
                    long l = at + 4 + s / 2;
                    dst.set(ValueLayout.JAVA_BYTE, l, (byte) (dst.get(ValueLayout.JAVA_BYTE, l) | (ls & 15) << (4 * (s % 2))));
                    scale = d * (ls - 32);
                }
                for (int j = 0; j < 16; j++) {
                    int low = nearest(x[32 * s + j], scale);
                    int high = nearest(x[32 * s + j + 16], scale);
                    dst.set(ValueLayout.JAVA_BYTE, nibbles + 16 * s + j, (byte) (low | high << 4));
                }
            }
            if (xs) {
                dst.set(F16, at + 2, (short) scalesH);
            }
        }
    }

    private static int nearest(float x, float scale) {
        int best = 8;
        for (int n = 0; n < 16; n++) {
            if (Math.abs(IQ4_VALUES[n] * scale - x) < Math.abs(IQ4_VALUES[best] * scale - x)) {
                best = n;
            }
        }
        return best;
    }

    private static float maxAbs(float[] values) {
        float m = 0;
        for (float v : values) {
            m = Math.max(m, Math.abs(v));
        }
        return m;
    }

    private static float[] read(MemorySegment src, long from, int n) {
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = src.getAtIndex(F32, from + i);
        }
        return x;
    }

    private static float half(float v) {
        return Float.float16ToFloat(Float.floatToFloat16(v));
    }

    private static float max(float[] v) {
        float m = 0;
        for (float x : v) {
            m = Math.max(m, x);
        }
        return m;
    }

    private static int clamp(int v, int lo, int hi) {
        return Math.max(lo, Math.min(hi, v));
    }
}
