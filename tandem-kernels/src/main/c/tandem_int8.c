/*
 * tandem's native int8 kernels: the integer dot products of the interleaved block types with
 * AVX2's vpmaddubsw (unsigned nibbles times signed int8 input quants, pairs summed into int16),
 * called through the FFM API by dev.tandem.kernels.NativeInt8 where /proc/cpuinfo lists avx2, fma
 * and f16c. The Java vector API has no such multiply-add of byte pairs.
 *
 * Every function computes what its Java scalar twin computes, bit for bit: the integer sums are
 * exact, and the float steps are the twin's, in its order (one fused multiply-add per block and
 * row; gcc must not contract or reassociate anything else: -ffp-contract=off, no -ffast-math).
 *
 * Built by tandem-kernels' Maven build when gcc is on the path (see its pom.xml); the build goes
 * on without it, and the Java kernels run.
 */
#include <immintrin.h>
#include <stdint.h>

/* Bytes of one block of a q4_0_x16 group: 16 f16 scales, then 8 x 32 nibble bytes. */
#define Q4_0_GROUP_BLOCK 288

/* Zeroes the 16 float accumulators of each of n inputs at o, outStride floats apart. */
static inline __attribute__((always_inline)) void zero_rows(float *o, int n, int64_t outStride) {
    for (int i = 0; i < n; i++) {
        _mm256_storeu_ps(o + i * outStride, _mm256_setzero_ps());
        _mm256_storeu_ps(o + i * outStride + 8, _mm256_setzero_ps());
    }
}

/*
 * One block's integer sums of 16 rows (s0 rows 0-7, s1 rows 8-15) added to their float
 * accumulators at o as the Java twins add them: acc = fma((float) sum, f * dx, acc), with f the
 * rows' factors (f0, f1) and dx the input's.
 */
static inline __attribute__((always_inline)) void fma_rows(float *o, __m256i s0, __m256i s1, __m256 f0, __m256 f1,
        __m256 dx) {
    _mm256_storeu_ps(o, _mm256_fmadd_ps(_mm256_cvtepi32_ps(s0), _mm256_mul_ps(f0, dx), _mm256_loadu_ps(o)));
    _mm256_storeu_ps(o + 8, _mm256_fmadd_ps(_mm256_cvtepi32_ps(s1), _mm256_mul_ps(f1, dx), _mm256_loadu_ps(o + 8)));
}

/* The int16 sums of a row's two halves of a block (low, high: a lane per row) added as int32: rows 0-7, 8-15. */
static inline __attribute__((always_inline)) void widen_rows(__m256i low, __m256i high, __m256i *s0, __m256i *s1) {
    *s0 = _mm256_add_epi32(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(low)),
            _mm256_cvtepi16_epi32(_mm256_castsi256_si128(high)));
    *s1 = _mm256_add_epi32(_mm256_cvtepi16_epi32(_mm256_extracti128_si256(low, 1)),
            _mm256_cvtepi16_epi32(_mm256_extracti128_si256(high, 1)));
}

/*
 * One group of 16 rows of q4_0_x16 against N inputs, blocks in order from 0, as Q4_0X16.row:
 * per block and row, isum = sum of (nibble * q) over the block's 32 values, then
 * acc = fma((float) (isum - sum8), dw * dx, acc).
 *   pairs: per input, per pair of quants (2m, 2m + 1), the two int8 quants as one 16-bit value
 *          twice in a 32-bit word (a vpbroadcastd gives the pair in every 16-bit lane);
 *          pairStride words apart from input to input.
 *   ds, sum8: per input, per block: the input's factor and 8 * sum q; dStride apart.
 *   out: 16 floats per input, outStride floats apart.
 */
static inline __attribute__((always_inline)) void q4_0_x16_tile(
        const uint8_t *group, int blocks, int n, const uint32_t *pairs, int64_t pairStride,
        const float *ds, const int32_t *sum8, int64_t dStride, float *out, int64_t outStride) {
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    /* The accumulators live in out (zeroed here): in registers, four inputs' float and int16
     * accumulators were more than AVX2's 16 and gcc spilled them in the inner loop. */
    zero_rows(out, n, outStride);
    for (int b = 0; b < blocks; b++) {
        const uint8_t *block = group + (int64_t) b * Q4_0_GROUP_BLOCK;
        __m256i low[4];
        __m256i high[4];
        for (int i = 0; i < n; i++) {
            low[i] = _mm256_setzero_si256();
            high[i] = _mm256_setzero_si256();
        }
        /* Not unrolled: unrolled, gcc computed all 64 products of a block first and spilled them. */
#pragma GCC unroll 1
        for (int j = 0; j < 8; j++) {
            __m256i w = _mm256_loadu_si256((const __m256i *) (block + 32 + 32 * j));
            __m256i l = _mm256_and_si256(w, nibble);
            __m256i h = _mm256_and_si256(_mm256_srli_epi16(w, 4), nibble);
            for (int i = 0; i < n; i++) {
                const uint32_t *p = pairs + i * pairStride + (int64_t) b * 16;
                /* at most 2 * 15 * 127 a product pair, 8 of them: within int16 */
                low[i] = _mm256_add_epi16(low[i], _mm256_maddubs_epi16(l, _mm256_set1_epi32((int) p[j])));
                high[i] = _mm256_add_epi16(high[i], _mm256_maddubs_epi16(h, _mm256_set1_epi32((int) p[8 + j])));
            }
        }
        __m256 dw0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) block));
        __m256 dw1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (block + 16)));
        for (int i = 0; i < n; i++) {
            __m256i s8 = _mm256_set1_epi32(sum8[i * dStride + b]);
            __m256i s0;
            __m256i s1;
            widen_rows(low[i], high[i], &s0, &s1);
            fma_rows(out + i * outStride, _mm256_sub_epi32(s0, s8), _mm256_sub_epi32(s1, s8), dw0, dw1,
                    _mm256_set1_ps(ds[i * dStride + b]));
        }
    }
}

/*
 * Groups [0, groups) of 16 rows each, groupBytes apart from weights + offset, against inputs
 * inputs: four at a time (each unpacked nibble vector serves four), the rest one at a time.
 * out + outOffset (bytes) is the first group's first input's row 0; groups are 16 floats apart.
 */
void tandem_q4_0_x16(const uint8_t *weights, int64_t offset, int64_t groupBytes, int groups, int blocks,
        int inputs, const uint32_t *pairs, int64_t pairStride, const float *ds, const int32_t *sum8,
        int64_t dStride, float *out, int64_t outOffset, int64_t outStride) {
    for (int g = 0; g < groups; g++) {
        const uint8_t *group = weights + offset + g * groupBytes;
        float *o = (float *) ((uint8_t *) out + outOffset) + 16 * g;
        int i = 0;
        for (; i + 4 <= inputs; i += 4) {
            q4_0_x16_tile(group, blocks, 4, pairs + i * pairStride, pairStride, ds + i * dStride,
                    sum8 + i * dStride, dStride, o + i * outStride, outStride);
        }
        for (; i < inputs; i++) {
            q4_0_x16_tile(group, blocks, 1, pairs + i * pairStride, pairStride, ds + i * dStride,
                    sum8 + i * dStride, dStride, o + i * outStride, outStride);
        }
    }
}

/*
 * q4_K_x16: a group's superblocks lie in chunks of (at most) four: the chunk's headers (256 bytes
 * each: 16 f16 d, 16 f16 dmin, then 12 scale bytes of the 16 rows, 16 bytes each), then their
 * nibbles (2048 bytes each: per pair of sub-blocks, 16 vectors of 32 bytes, a byte pair per row,
 * the low nibbles the even sub-block's, the high the odd one's). See Q4_KX16.headerAt/nibblesAt.
 */
#define Q4_K_GROUP_BLOCK (16 * 144)
#define Q4_K_CHUNK 4

static inline int64_t q4_k_header_at(int b) {
    int first = b - b % Q4_K_CHUNK;
    return (int64_t) first * Q4_K_GROUP_BLOCK + 256LL * (b - first);
}

static inline int64_t q4_k_nibbles_at(int b, int supers) {
    int first = b - b % Q4_K_CHUNK;
    int chunk = supers - first < Q4_K_CHUNK ? supers - first : Q4_K_CHUNK;
    return (int64_t) first * Q4_K_GROUP_BLOCK + 256LL * chunk + 2048LL * (b - first);
}

/*
 * A superblock's row factors, as Q4_KX16.row makes them: d * sc_t into f, dmin * m_t into g,
 * sub-block t's 16 rows each; the 6-bit scales and mins unpacked as ScalarOps.q4_KScale/q4_KMin.
 */
static inline void q4_k_factors(const uint8_t *header, float f[8][16], float g[8][16]) {
    for (int h = 0; h < 2; h++) {
        __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (header + 16 * h)));
        __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (header + 32 + 16 * h)));
        __m256i s[12];
        for (int k = 0; k < 12; k++) {
            s[k] = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *) (header + 64 + 16 * k + 8 * h)));
        }
        const __m256i six = _mm256_set1_epi32(63);
        const __m256i four = _mm256_set1_epi32(15);
        for (int t = 0; t < 4; t++) {
            __m256i sc = _mm256_and_si256(s[t], six);
            __m256i m = _mm256_and_si256(s[t + 4], six);
            _mm256_storeu_ps(f[t] + 8 * h, _mm256_mul_ps(d, _mm256_cvtepi32_ps(sc)));
            _mm256_storeu_ps(g[t] + 8 * h, _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(m)));
        }
        for (int t = 4; t < 8; t++) {
            __m256i sc = _mm256_or_si256(_mm256_and_si256(s[t + 4], four),
                    _mm256_slli_epi32(_mm256_srli_epi32(s[t - 4], 6), 4));
            __m256i m = _mm256_or_si256(_mm256_srli_epi32(s[t + 4], 4),
                    _mm256_slli_epi32(_mm256_srli_epi32(s[t], 6), 4));
            _mm256_storeu_ps(f[t] + 8 * h, _mm256_mul_ps(d, _mm256_cvtepi32_ps(sc)));
            _mm256_storeu_ps(g[t] + 8 * h, _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(m)));
        }
    }
}

/*
 * Superblock b of a q4_K_x16 group against n inputs, added to their accumulators in out, as
 * Q4_KX16.row: per sub-block t and row, acc = fma(dot, d * sc * dx, acc), then
 * acc = fma(sum q, -(dmin * m * dx), acc).
 */
static inline __attribute__((always_inline)) void q4_k_x16_tile(
        const uint8_t *nibbles, int b, float f[8][16], float g[8][16], int n, const uint32_t *pairs,
        int64_t pairStride, const float *ds, const int32_t *sum8, int64_t dStride, float *out, int64_t outStride) {
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int t = 0; t < 8; t++) {
        const uint8_t *v = nibbles + 512 * (t / 2);
        int shift = 4 * (t % 2);
        __m256i first[4];
        __m256i second[4];
        for (int i = 0; i < n; i++) {
            first[i] = _mm256_setzero_si256();
            second[i] = _mm256_setzero_si256();
        }
        const uint32_t *p0 = pairs + (int64_t) b * 128 + t * 16;
#pragma GCC unroll 1
        for (int j = 0; j < 8; j++) {
            /* at most 2 * 15 * 127 a product pair, 8 of them a half: within int16 */
            __m256i a = _mm256_and_si256(_mm256_srli_epi16(_mm256_loadu_si256((const __m256i *) (v + 32 * j)),
                    shift), nibble);
            __m256i c = _mm256_and_si256(_mm256_srli_epi16(_mm256_loadu_si256((const __m256i *) (v + 256 + 32 * j)),
                    shift), nibble);
            for (int i = 0; i < n; i++) {
                const uint32_t *p = p0 + i * pairStride;
                first[i] = _mm256_add_epi16(first[i], _mm256_maddubs_epi16(a, _mm256_set1_epi32((int) p[j])));
                second[i] = _mm256_add_epi16(second[i], _mm256_maddubs_epi16(c, _mm256_set1_epi32((int) p[8 + j])));
            }
        }
        __m256 f0 = _mm256_loadu_ps(f[t]);
        __m256 f1 = _mm256_loadu_ps(f[t] + 8);
        __m256 g0 = _mm256_loadu_ps(g[t]);
        __m256 g1 = _mm256_loadu_ps(g[t] + 8);
        for (int i = 0; i < n; i++) {
            __m256i s0;
            __m256i s1;
            widen_rows(first[i], second[i], &s0, &s1);
            int block = b * 8 + t;
            __m256 dx = _mm256_set1_ps(ds[i * dStride + block]);
            __m256 sum = _mm256_set1_ps((float) (sum8[i * dStride + block] / 8));
            float *o = out + i * outStride;
            __m256 a0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s0), _mm256_mul_ps(f0, dx), _mm256_loadu_ps(o));
            __m256 a1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s1), _mm256_mul_ps(f1, dx), _mm256_loadu_ps(o + 8));
            a0 = _mm256_fmadd_ps(sum, _mm256_xor_ps(_mm256_mul_ps(g0, dx), sign), a0);
            a1 = _mm256_fmadd_ps(sum, _mm256_xor_ps(_mm256_mul_ps(g1, dx), sign), a1);
            _mm256_storeu_ps(o, a0);
            _mm256_storeu_ps(o + 8, a1);
        }
    }
}

/* As tandem_q4_0_x16, for q4_K_x16 (supers superblocks of 256 values a row). */
void tandem_q4_k_x16(const uint8_t *weights, int64_t offset, int64_t groupBytes, int groups, int supers,
        int inputs, const uint32_t *pairs, int64_t pairStride, const float *ds, const int32_t *sum8,
        int64_t dStride, float *out, int64_t outOffset, int64_t outStride) {
    float f[8][16];
    float g[8][16];
    for (int gr = 0; gr < groups; gr++) {
        const uint8_t *group = weights + offset + gr * groupBytes;
        float *o = (float *) ((uint8_t *) out + outOffset) + 16 * gr;
        zero_rows(o, inputs, outStride);
        for (int b = 0; b < supers; b++) {
            q4_k_factors(group + q4_k_header_at(b), f, g);
            const uint8_t *nibbles = group + q4_k_nibbles_at(b, supers);
            int i = 0;
            for (; i + 4 <= inputs; i += 4) {
                q4_k_x16_tile(nibbles, b, f, g, 4, pairs + i * pairStride, pairStride, ds + i * dStride,
                        sum8 + i * dStride, dStride, o + i * outStride, outStride);
            }
            for (; i < inputs; i++) {
                q4_k_x16_tile(nibbles, b, f, g, 1, pairs + i * pairStride, pairStride, ds + i * dStride,
                        sum8 + i * dStride, dStride, o + i * outStride, outStride);
            }
        }
    }
}

/*
 * q5_0_x16: a group's block of 16 rows is 352 bytes: 16 f16 scales, the 16 rows' 32 fifth bits
 * (qh, 4 bytes a row, at 32), then 8 x 32 nibble bytes as q4_0_x16's (at 96). See SmallBlocksX16.
 */
#define Q5_0_GROUP_BLOCK 352

/*
 * The fifth bits of a q5_0_x16 block (its qh at block + 32) spread for q5_0_decode: y[2 half + j / 4]
 * holds, in each row's pair of bytes, the bits of values (2j, 2j + 1) (low nibbles, half 0) or
 * (16 + 2j, 17 + 2j) (high, half 1) at bit 2j (mod 8) of both bytes.
 */
static inline __attribute__((always_inline)) void q5_0_high_bits(const uint8_t *block, __m256i y[4]) {
    const __m256i odd = _mm256_set1_epi16((short) 0xff00);
    /* Byte c of each row's qh, for rows 0-15 side by side, twice (bytes 2r and 2r + 1): per 128-bit
     * lane (four rows), bytes 0-7 take byte c of each row, bytes 8-15 byte c + 1. */
    const __m256i pick01 = _mm256_setr_epi8(0, 0, 4, 4, 8, 8, 12, 12, 1, 1, 5, 5, 9, 9, 13, 13,
            0, 0, 4, 4, 8, 8, 12, 12, 1, 1, 5, 5, 9, 9, 13, 13);
    const __m256i pick23 = _mm256_setr_epi8(2, 2, 6, 6, 10, 10, 14, 14, 3, 3, 7, 7, 11, 11, 15, 15,
            2, 2, 6, 6, 10, 10, 14, 14, 3, 3, 7, 7, 11, 11, 15, 15);
    __m256i qa = _mm256_loadu_si256((const __m256i *) (block + 32));
    __m256i qb = _mm256_loadu_si256((const __m256i *) (block + 64));
    for (int h = 0; h < 2; h++) {
        __m256i pick = h == 0 ? pick01 : pick23;
        __m256i sa = _mm256_shuffle_epi8(qa, pick);
        __m256i sb = _mm256_shuffle_epi8(qb, pick);
        __m256i x0 = _mm256_permute4x64_epi64(_mm256_unpacklo_epi64(sa, sb), 0xd8);
        __m256i x1 = _mm256_permute4x64_epi64(_mm256_unpackhi_epi64(sa, sb), 0xd8);
        /* the odd byte of each row shifted down by one: value 2j + 1's bit where value 2j's is */
        y[2 * h] = _mm256_blendv_epi8(x0, _mm256_srli_epi16(x0, 1), odd);
        y[2 * h + 1] = _mm256_blendv_epi8(x1, _mm256_srli_epi16(x1, 1), odd);
    }
}

/*
 * One block of a q5_0_x16 group decoded for the products: vector v (0 to 15) holds, for the 16
 * rows side by side, the pair of values (2v, 2v + 1) of the low nibbles (v < 8) or
 * (16 + 2(v - 8), 17 + 2(v - 8)) of the high ones, as signed w - 16 in s[v] and as |w - 16| in
 * a[v]: vpmaddubsw takes a[v] unsigned and the input quants with w's sign (vpsignb), so a pair of
 * products is at most 2 * 16 * 127 and eight of them stay within int16.
 */
static inline __attribute__((always_inline)) void q5_0_decode(const uint8_t *block, __m256i a[16], __m256i s[16]) {
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    const __m256i bit4 = _mm256_set1_epi8(0x10);
    const __m256i sixteen = _mm256_set1_epi8(16);
    __m256i y[4];
    q5_0_high_bits(block, y);
    for (int j = 0; j < 8; j++) {
        __m256i w = _mm256_loadu_si256((const __m256i *) (block + 96 + 32 * j));
        __m256i n[2] = {_mm256_and_si256(w, nibble), _mm256_and_si256(_mm256_srli_epi16(w, 4), nibble)};
        for (int half = 0; half < 2; half++) {
            /* bit 2j (mod 8) of each byte of y to bit 4 (a 16-bit shift: no bit crosses into bit 4 or 12) */
            __m256i c = y[2 * half + j / 4];
            __m256i b;
            switch (j % 4) {
            case 0: b = _mm256_slli_epi16(c, 4); break;
            case 1: b = _mm256_slli_epi16(c, 2); break;
            case 2: b = c; break;
            default: b = _mm256_srli_epi16(c, 2); break;
            }
            __m256i v = _mm256_sub_epi8(_mm256_or_si256(n[half], _mm256_and_si256(b, bit4)), sixteen);
            s[8 * half + j] = v;
            a[8 * half + j] = _mm256_abs_epi8(v);
        }
    }
}

/*
 * Block b of a q5_0_x16 group (decoded in a, s) against n inputs, added to their accumulators in
 * out, as SmallBlocksX16.row: per row and input, isum = sum of (w - 16) q over the block's 32
 * values, then acc = fma((float) isum, dw * dx, acc).
 */
static inline __attribute__((always_inline)) void q5_0_x16_tile(
        const __m256i a[16], const __m256i s[16], __m256 dw0, __m256 dw1, int b, int n, const uint32_t *pairs,
        int64_t pairStride, const float *ds, int64_t dStride, float *out, int64_t outStride) {
    __m256i low[4];
    __m256i high[4];
    for (int i = 0; i < n; i++) {
        low[i] = _mm256_setzero_si256();
        high[i] = _mm256_setzero_si256();
    }
#pragma GCC unroll 1
    for (int j = 0; j < 8; j++) {
        __m256i al = a[j];
        __m256i ah = a[8 + j];
        __m256i sl = s[j];
        __m256i sh = s[8 + j];
        for (int i = 0; i < n; i++) {
            const uint32_t *p = pairs + i * pairStride + (int64_t) b * 16;
            /* at most 2 * 16 * 127 a product pair, 8 of them: within int16 */
            low[i] = _mm256_add_epi16(low[i], _mm256_maddubs_epi16(al,
                    _mm256_sign_epi8(_mm256_set1_epi32((int) p[j]), sl)));
            high[i] = _mm256_add_epi16(high[i], _mm256_maddubs_epi16(ah,
                    _mm256_sign_epi8(_mm256_set1_epi32((int) p[8 + j]), sh)));
        }
    }
    for (int i = 0; i < n; i++) {
        __m256i s0;
        __m256i s1;
        widen_rows(low[i], high[i], &s0, &s1);
        fma_rows(out + i * outStride, s0, s1, dw0, dw1, _mm256_set1_ps(ds[i * dStride + b]));
    }
}

/*
 * As tandem_q4_0_x16, for q5_0_x16, the blocks outermost: each block's weights are decoded once
 * for all the inputs (four at a time, then one at a time), whose accumulators wait in out.
 */
void tandem_q5_0_x16(const uint8_t *weights, int64_t offset, int64_t groupBytes, int groups, int blocks,
        int inputs, const uint32_t *pairs, int64_t pairStride, const float *ds, const int32_t *sum8,
        int64_t dStride, float *out, int64_t outOffset, int64_t outStride) {
    (void) sum8;
    __m256i a[16];
    __m256i s[16];
    for (int g = 0; g < groups; g++) {
        const uint8_t *group = weights + offset + g * groupBytes;
        float *o = (float *) ((uint8_t *) out + outOffset) + 16 * g;
        zero_rows(o, inputs, outStride);
        for (int b = 0; b < blocks; b++) {
            const uint8_t *block = group + (int64_t) b * Q5_0_GROUP_BLOCK;
            q5_0_decode(block, a, s);
            __m256 dw0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) block));
            __m256 dw1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (block + 16)));
            int i = 0;
            for (; i + 4 <= inputs; i += 4) {
                q5_0_x16_tile(a, s, dw0, dw1, b, 4, pairs + i * pairStride, pairStride, ds + i * dStride, dStride,
                        o + i * outStride, outStride);
            }
            for (; i < inputs; i++) {
                q5_0_x16_tile(a, s, dw0, dw1, b, 1, pairs + i * pairStride, pairStride, ds + i * dStride, dStride,
                        o + i * outStride, outStride);
            }
        }
    }
}

/*
 * q8_0_x16: blocks lie in pairs (b even, b + 1) of 1088 bytes: block b's 16 f16 scales, block
 * b + 1's, then for each k from 0 to 31 quant k of block b of the 16 rows and quant k of block
 * b + 1 (16 bytes each); a last odd block takes 544 bytes alone: its scales, then quant k at
 * 32 + 16 k. See Q8_0X16.scaleAt/quantAt.
 */
#define Q8_0_GROUP_BLOCK 544

/*
 * Block b's quants as int16 for vpmaddwd: w[2j] holds rows 0-7, w[2j + 1] rows 8-15, each row's
 * quants 2j and 2j + 1 side by side (a product pair is at most 2 * 128 * 127, within int32 with
 * room: the block's sum is exact).
 */
static inline __attribute__((always_inline)) void q8_0_decode(const uint8_t *quants, int64_t stride, __m256i w[32]) {
    for (int j = 0; j < 16; j++) {
        __m128i a = _mm_loadu_si128((const __m128i *) (quants + stride * 2 * j));
        __m128i c = _mm_loadu_si128((const __m128i *) (quants + stride * (2 * j + 1)));
        w[2 * j] = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a, c));
        w[2 * j + 1] = _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(a, c));
    }
}

/*
 * Block b of a q8_0_x16 group (decoded in w) against n inputs, added to their accumulators in
 * out, as Q8_0X16.row: per row and input, isum = sum of w q over the block's 32 values, then
 * acc = fma((float) isum, dw * dx, acc). Here pairs are the inputs' quants as int16 pairs
 * (quant 2m in the low half of word m, 2m + 1 in the high half).
 */
static inline __attribute__((always_inline)) void q8_0_x16_tile(
        const __m256i w[32], __m256 dw0, __m256 dw1, int b, int n, const uint32_t *pairs, int64_t pairStride,
        const float *ds, int64_t dStride, float *out, int64_t outStride) {
    __m256i low[4];
    __m256i high[4];
    for (int i = 0; i < n; i++) {
        low[i] = _mm256_setzero_si256();
        high[i] = _mm256_setzero_si256();
    }
#pragma GCC unroll 2
    for (int j = 0; j < 16; j++) {
        for (int i = 0; i < n; i++) {
            __m256i q = _mm256_set1_epi32((int) pairs[i * pairStride + (int64_t) b * 16 + j]);
            low[i] = _mm256_add_epi32(low[i], _mm256_madd_epi16(w[2 * j], q));
            high[i] = _mm256_add_epi32(high[i], _mm256_madd_epi16(w[2 * j + 1], q));
        }
    }
    for (int i = 0; i < n; i++) {
        fma_rows(out + i * outStride, low[i], high[i], dw0, dw1, _mm256_set1_ps(ds[i * dStride + b]));
    }
}

/*
 * As tandem_q5_0_x16, for q8_0_x16 with int8 inputs (as int16 pairs, see q8_0_x16_tile): each
 * block's quants widened once for all the inputs.
 */
void tandem_q8_0_x16(const uint8_t *weights, int64_t offset, int64_t groupBytes, int groups, int blocks,
        int inputs, const uint32_t *pairs, int64_t pairStride, const float *ds, const int32_t *sum8,
        int64_t dStride, float *out, int64_t outOffset, int64_t outStride) {
    (void) sum8;
    __m256i w[32];
    int paired = blocks - blocks % 2;
    for (int g = 0; g < groups; g++) {
        const uint8_t *group = weights + offset + g * groupBytes;
        float *o = (float *) ((uint8_t *) out + outOffset) + 16 * g;
        zero_rows(o, inputs, outStride);
        for (int b = 0; b < blocks; b++) {
            int odd = b % 2;
            const uint8_t *pair = group + (int64_t) (b - odd) * Q8_0_GROUP_BLOCK;
            const uint8_t *scales = b < paired ? pair + 32 * odd : pair;
            if (b < paired) {
                q8_0_decode(pair + 64 + 16 * odd, 32, w);
            } else {
                q8_0_decode(pair + 32, 16, w);
            }
            __m256 dw0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) scales));
            __m256 dw1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (scales + 16)));
            int i = 0;
            for (; i + 4 <= inputs; i += 4) {
                q8_0_x16_tile(w, dw0, dw1, b, 4, pairs + i * pairStride, pairStride, ds + i * dStride, dStride,
                        o + i * outStride, outStride);
            }
            for (; i < inputs; i++) {
                q8_0_x16_tile(w, dw0, dw1, b, 1, pairs + i * pairStride, pairStride, ds + i * dStride, dStride,
                        o + i * outStride, outStride);
            }
        }
    }
}

/*
 * q6_K_x16: a group's superblock of 16 rows is 3360 bytes: 16 f16 d, the rows' 16 int8 scales
 * (scale s of the 16 rows at 32 + 16 s), then 32 runs of 96 bytes at 288: run p = 16 h + 8 s' + t
 * holds, for the 16 rows side by side, the pair of ql bytes (l, l + 1), the pair (l + 32, l + 33)
 * and the pair of qh bytes (l, l + 1) of half h, l = 16 s' + 2 t. See Q6_KX16.byteAt.
 */
#define Q6_K_GROUP_BLOCK 3360

/*
 * Where a decoded superblock (q6_k_decode) keeps the values of run p = 16 h + 8 s + t that lie
 * in quarter k of half h (sub-block 8 h + 2 k + s): w[q6_k_at(h, s, k, t)] for rows 0-7 and the
 * next for rows 8-15, each row's values (l, l + 1), l = 16 s + 2 t, side by side as int16 q - 32.
 * A sub-block's eight runs lie one after another, in the order its sum takes them.
 */
static inline int q6_k_at(int h, int s, int k, int t) {
    return ((((h * 2 + s) * 4 + k) * 8) + t) * 2;
}

/* A superblock's 256 quants of the 16 rows decoded as q6_k_at places them (8 KB). */

static inline __attribute__((always_inline)) void q6_k_decode(const uint8_t *super, __m256i *w) {
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    const __m256i two = _mm256_set1_epi8(0x30);
    const __m256i offset = _mm256_set1_epi8(32);
    for (int p = 0; p < 32; p++) {
        const uint8_t *run = super + 288 + 96 * p;
        __m256i a = _mm256_loadu_si256((const __m256i *) run);
        __m256i c = _mm256_loadu_si256((const __m256i *) (run + 32));
        __m256i hb = _mm256_loadu_si256((const __m256i *) (run + 64));
        __m256i q[4];
        /* bits 2k, 2k + 1 of qh to bits 4, 5 (16-bit shifts, masked per byte) */
        q[0] = _mm256_or_si256(_mm256_and_si256(a, nibble), _mm256_and_si256(_mm256_slli_epi16(hb, 4), two));
        q[1] = _mm256_or_si256(_mm256_and_si256(c, nibble), _mm256_and_si256(_mm256_slli_epi16(hb, 2), two));
        q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), nibble), _mm256_and_si256(hb, two));
        q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(c, 4), nibble),
                _mm256_and_si256(_mm256_srli_epi16(hb, 2), two));
        int h = p / 16;
        int s = (p / 8) % 2;
        int t = p % 8;
        for (int k = 0; k < 4; k++) {
            __m256i v = _mm256_sub_epi8(q[k], offset);
            int at = q6_k_at(h, s, k, t);
            w[at] = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(v));
            w[at + 1] = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(v, 1));
        }
    }
}

/*
 * Superblock b of a q6_K_x16 group (decoded in w, row factors d * sc in f) against n inputs,
 * added to their accumulators in out, as Q6_KX16.row: per sub-block in its order (per half h,
 * per s', k from 0 to 3: sub-block 8 h + 2 k + s') isum = sum of (q - 32) x over its 16 values,
 * then acc = fma((float) isum, (d * sc) * dx, acc). pairs as for q8_0_x16 (int16 pairs).
 */
static inline __attribute__((always_inline)) void q6_k_x16_tile(
        const __m256i *w, float f[16][16], int b, int n, const uint32_t *pairs, int64_t pairStride,
        const float *ds, int64_t dStride, float *out, int64_t outStride) {
    for (int h = 0; h < 2; h++) {
        for (int s = 0; s < 2; s++) {
            for (int k = 0; k < 4; k++) {
                __m256i low[4];
                __m256i high[4];
                for (int i = 0; i < n; i++) {
                    low[i] = _mm256_setzero_si256();
                    high[i] = _mm256_setzero_si256();
                }
                const __m256i *v = w + q6_k_at(h, s, k, 0);
                /* word of values (l, l + 1), l = 16 s + 2 t, of quarter k of half h */
                int64_t word = (int64_t) b * 128 + 64 * h + 16 * k + 8 * s;
                for (int t = 0; t < 8; t++) {
                    for (int i = 0; i < n; i++) {
                        __m256i q = _mm256_set1_epi32((int) pairs[i * pairStride + word + t]);
                        low[i] = _mm256_add_epi32(low[i], _mm256_madd_epi16(v[2 * t], q));
                        high[i] = _mm256_add_epi32(high[i], _mm256_madd_epi16(v[2 * t + 1], q));
                    }
                }
                int sub = 8 * h + 2 * k + s;
                __m256 f0 = _mm256_loadu_ps(f[sub]);
                __m256 f1 = _mm256_loadu_ps(f[sub] + 8);
                for (int i = 0; i < n; i++) {
                    fma_rows(out + i * outStride, low[i], high[i], f0, f1,
                            _mm256_set1_ps(ds[i * dStride + b * 8 + 4 * h + k]));
                }
            }
        }
    }
}

/*
 * As tandem_q5_0_x16, for q6_K_x16 (supers superblocks of 256 values a row): each superblock's
 * quants widened once for all the inputs. pairs as for q8_0_x16.
 */
void tandem_q6_k_x16(const uint8_t *weights, int64_t offset, int64_t groupBytes, int groups, int supers,
        int inputs, const uint32_t *pairs, int64_t pairStride, const float *ds, const int32_t *sum8,
        int64_t dStride, float *out, int64_t outOffset, int64_t outStride) {
    (void) sum8;
    __m256i w[2 * 128];
    float f[16][16];
    for (int g = 0; g < groups; g++) {
        const uint8_t *group = weights + offset + g * groupBytes;
        float *o = (float *) ((uint8_t *) out + outOffset) + 16 * g;
        zero_rows(o, inputs, outStride);
        for (int b = 0; b < supers; b++) {
            const uint8_t *super = group + (int64_t) b * Q6_K_GROUP_BLOCK;
            q6_k_decode(super, w);
            __m256 d0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) super));
            __m256 d1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (super + 16)));
            for (int sub = 0; sub < 16; sub++) {
                __m128i sc = _mm_loadu_si128((const __m128i *) (super + 32 + 16 * sub));
                _mm256_storeu_ps(f[sub], _mm256_mul_ps(d0, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc))));
                _mm256_storeu_ps(f[sub] + 8, _mm256_mul_ps(d1,
                        _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(sc, 8)))));
            }
            int i = 0;
            for (; i + 4 <= inputs; i += 4) {
                q6_k_x16_tile(w, f, b, 4, pairs + i * pairStride, pairStride, ds + i * dStride, dStride,
                        o + i * outStride, outStride);
            }
            for (; i < inputs; i++) {
                q6_k_x16_tile(w, f, b, 1, pairs + i * pairStride, pairStride, ds + i * dStride, dStride,
                        o + i * outStride, outStride);
            }
        }
    }
}

/*
 * q5_K_x16: a group's superblock of 16 rows is 2816 bytes: a 256-byte header as q4_K_x16's (16
 * f16 d, 16 f16 dmin, 12 x 16 scale bytes), the rows' 32 bytes of fifth bits in pairs (at 256:
 * per pair of bytes (2m, 2m + 1), a vector of 32 bytes, a byte pair per row), then the 128 nibble
 * bytes in pairs (at 768), as q4_K_x16's nibbles of one superblock. See Q5_KX16.byteAt.
 */
#define Q5_K_GROUP_BLOCK (16 * 176)

/*
 * The 5-bit quants w (0 to 31) of sub-block t of the vector of nibble pairs at nibbles (the low
 * nibbles for an even t, the high for an odd), bit t of the fifth-bit pairs at high above them,
 * as signed w - 16: a nibble less 16 is the nibble with bits 4-7 set, and a fifth bit adds 16.
 */
static inline __attribute__((always_inline)) __m256i q5_k_values(const uint8_t *nibbles, const uint8_t *high,
        int shift, __m256i bit) {
    __m256i n = _mm256_and_si256(_mm256_srli_epi16(_mm256_loadu_si256((const __m256i *) nibbles), shift),
            _mm256_set1_epi8(0x0f));
    __m256i h = _mm256_and_si256(_mm256_loadu_si256((const __m256i *) high), bit);
    return _mm256_or_si256(n, _mm256_andnot_si256(_mm256_cmpeq_epi8(h, bit), _mm256_set1_epi8((char) 0xf0)));
}

/*
 * Superblock b of a q5_K_x16 group at super against n inputs, added to their accumulators in
 * out, as Q5_KX16.row: per sub-block t and row, dot = sum of w q (w the 5-bit quant) over its 32
 * values, then acc = fma(dot, d * sc * dx, acc) and acc = fma(sum q, -(dmin * m * dx), acc). The
 * products take w - 16 (vpmaddubsw: |w - 16| unsigned, q with w - 16's sign: a pair at most
 * 2 * 16 * 127, eight within int16) and dot adds the 16 back: 16 sum q = 2 * sum8.
 */
static inline __attribute__((always_inline)) void q5_k_x16_tile(
        const uint8_t *super, int b, float f[8][16], float g[8][16], int n, const uint32_t *pairs,
        int64_t pairStride, const float *ds, const int32_t *sum8, int64_t dStride, float *out, int64_t outStride) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const uint8_t *high = super + 256;
    for (int t = 0; t < 8; t++) {
        const uint8_t *v = super + 768 + 512 * (t / 2);
        int shift = 4 * (t % 2);
        const __m256i bit = _mm256_set1_epi8((char) (1 << t));
        __m256i first[4];
        __m256i second[4];
        for (int i = 0; i < n; i++) {
            first[i] = _mm256_setzero_si256();
            second[i] = _mm256_setzero_si256();
        }
        const uint32_t *p0 = pairs + (int64_t) b * 128 + t * 16;
#pragma GCC unroll 1
        for (int j = 0; j < 8; j++) {
            __m256i sa = q5_k_values(v + 32 * j, high + 32 * j, shift, bit);
            __m256i sc = q5_k_values(v + 256 + 32 * j, high + 256 + 32 * j, shift, bit);
            __m256i aa = _mm256_abs_epi8(sa);
            __m256i ac = _mm256_abs_epi8(sc);
            for (int i = 0; i < n; i++) {
                const uint32_t *p = p0 + i * pairStride;
                first[i] = _mm256_add_epi16(first[i], _mm256_maddubs_epi16(aa,
                        _mm256_sign_epi8(_mm256_set1_epi32((int) p[j]), sa)));
                second[i] = _mm256_add_epi16(second[i], _mm256_maddubs_epi16(ac,
                        _mm256_sign_epi8(_mm256_set1_epi32((int) p[8 + j]), sc)));
            }
        }
        __m256 f0 = _mm256_loadu_ps(f[t]);
        __m256 f1 = _mm256_loadu_ps(f[t] + 8);
        /* -(g * dx) is (-g) * dx, bit for bit: a product rounds the same whatever its sign */
        __m256 ng0 = _mm256_xor_ps(_mm256_loadu_ps(g[t]), sign);
        __m256 ng1 = _mm256_xor_ps(_mm256_loadu_ps(g[t] + 8), sign);
        for (int i = 0; i < n; i++) {
            __m256i s0;
            __m256i s1;
            widen_rows(first[i], second[i], &s0, &s1);
            int block = b * 8 + t;
            int32_t s8 = sum8[i * dStride + block];
            __m256i back = _mm256_set1_epi32(2 * s8);
            __m256 dx = _mm256_set1_ps(ds[i * dStride + block]);
            __m256 sum = _mm256_set1_ps((float) (s8 / 8));
            float *o = out + i * outStride;
            __m256 a0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(s0, back)), _mm256_mul_ps(f0, dx),
                    _mm256_loadu_ps(o));
            __m256 a1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(s1, back)), _mm256_mul_ps(f1, dx),
                    _mm256_loadu_ps(o + 8));
            a0 = _mm256_fmadd_ps(sum, _mm256_mul_ps(ng0, dx), a0);
            a1 = _mm256_fmadd_ps(sum, _mm256_mul_ps(ng1, dx), a1);
            _mm256_storeu_ps(o, a0);
            _mm256_storeu_ps(o + 8, a1);
        }
    }
}

/*
 * As q5_k_x16_tile, for one input: the quants as they are (0 to 31, unsigned), with no sign to
 * copy onto the input, a vector op fewer per product and two per decoded vector; a pair of
 * products is at most 2 * 31 * 127, so four of them, not eight, share an int16 lane (two
 * accumulators per half of a sub-block, which one input leaves the registers for).
 */
static inline __attribute__((always_inline)) void q5_k_x16_tile1(
        const uint8_t *super, int b, float f[8][16], float g[8][16], const uint32_t *pairs, const float *ds,
        const int32_t *sum8, float *out) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    const __m256i bit4 = _mm256_set1_epi8(0x10);
    const uint8_t *high = super + 256;
    for (int t = 0; t < 8; t++) {
        const uint8_t *v = super + 768 + 512 * (t / 2);
        int shift = 4 * (t % 2);
        /* bit t of each fifth-bit byte to bit 4 (a 16-bit shift by -3 to 4: no bit crosses into bit 4 or 12) */
        int up = 4 - t;
        const uint32_t *p = pairs + (int64_t) b * 128 + t * 16;
        __m256i s0 = _mm256_setzero_si256();
        __m256i s1 = _mm256_setzero_si256();
        for (int k = 0; k < 2; k++) {
            __m256i first = _mm256_setzero_si256();
            __m256i second = _mm256_setzero_si256();
#pragma GCC unroll 4
            for (int j = 4 * k; j < 4 * k + 4; j++) {
                __m256i ha = _mm256_loadu_si256((const __m256i *) (high + 32 * j));
                __m256i hc = _mm256_loadu_si256((const __m256i *) (high + 256 + 32 * j));
                ha = up >= 0 ? _mm256_slli_epi16(ha, up) : _mm256_srli_epi16(ha, -up);
                hc = up >= 0 ? _mm256_slli_epi16(hc, up) : _mm256_srli_epi16(hc, -up);
                __m256i a = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(
                        _mm256_loadu_si256((const __m256i *) (v + 32 * j)), shift), nibble), _mm256_and_si256(ha, bit4));
                __m256i c = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(
                        _mm256_loadu_si256((const __m256i *) (v + 256 + 32 * j)), shift), nibble),
                        _mm256_and_si256(hc, bit4));
                first = _mm256_add_epi16(first, _mm256_maddubs_epi16(a, _mm256_set1_epi32((int) p[j])));
                second = _mm256_add_epi16(second, _mm256_maddubs_epi16(c, _mm256_set1_epi32((int) p[8 + j])));
            }
            __m256i w0;
            __m256i w1;
            widen_rows(first, second, &w0, &w1);
            s0 = _mm256_add_epi32(s0, w0);
            s1 = _mm256_add_epi32(s1, w1);
        }
        int block = b * 8 + t;
        __m256 dx = _mm256_set1_ps(ds[block]);
        __m256 sum = _mm256_set1_ps((float) (sum8[block] / 8));
        __m256 a0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s0), _mm256_mul_ps(_mm256_loadu_ps(f[t]), dx),
                _mm256_loadu_ps(out));
        __m256 a1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s1), _mm256_mul_ps(_mm256_loadu_ps(f[t] + 8), dx),
                _mm256_loadu_ps(out + 8));
        a0 = _mm256_fmadd_ps(sum, _mm256_mul_ps(_mm256_xor_ps(_mm256_loadu_ps(g[t]), sign), dx), a0);
        a1 = _mm256_fmadd_ps(sum, _mm256_mul_ps(_mm256_xor_ps(_mm256_loadu_ps(g[t] + 8), sign), dx), a1);
        _mm256_storeu_ps(out, a0);
        _mm256_storeu_ps(out + 8, a1);
    }
}

/* As tandem_q4_k_x16, for q5_K_x16 (supers superblocks of 256 values a row). */
void tandem_q5_k_x16(const uint8_t *weights, int64_t offset, int64_t groupBytes, int groups, int supers,
        int inputs, const uint32_t *pairs, int64_t pairStride, const float *ds, const int32_t *sum8,
        int64_t dStride, float *out, int64_t outOffset, int64_t outStride) {
    float f[8][16];
    float g[8][16];
    for (int gr = 0; gr < groups; gr++) {
        const uint8_t *group = weights + offset + gr * groupBytes;
        float *o = (float *) ((uint8_t *) out + outOffset) + 16 * gr;
        zero_rows(o, inputs, outStride);
        for (int b = 0; b < supers; b++) {
            const uint8_t *super = group + (int64_t) b * Q5_K_GROUP_BLOCK;
            q4_k_factors(super, f, g);
            int i = 0;
            for (; i + 4 <= inputs; i += 4) {
                q5_k_x16_tile(super, b, f, g, 4, pairs + i * pairStride, pairStride, ds + i * dStride,
                        sum8 + i * dStride, dStride, o + i * outStride, outStride);
            }
            for (; i < inputs; i++) {
                q5_k_x16_tile1(super, b, f, g, pairs + i * pairStride, ds + i * dStride, sum8 + i * dStride,
                        o + i * outStride);
            }
        }
    }
}

/*
 * q2_K_x16 and q3_K_x16 (see LowBitsKX16): 256 values a row in sixteen sub-blocks of 16,
 * sub-block is = 8 n + 2 j + h holding values 128 n + 32 j + 16 h + l, whose two low bits are bits
 * 2j, 2j + 1 of quant byte 32 n + 16 h + l. A group's superblock holds, for the 16 rows side by
 * side, q2_K (1344 bytes): the 16 scale bytes (byte s of row i at 16 s + i), d (at 256), dmin (at
 * 288), the quant bytes in pairs (at 320); q3_K (1760 bytes): the 32 mask bytes in pairs (at 0;
 * value's third bit: bit 4 n + j of mask byte 16 h + l), the quant bytes in pairs (at 512), the 12
 * scale bytes (at 1536 + 16 s + i), d (at 1728).
 *
 * Here sum16 holds, per input, the sum of each 16 quants (cols / 16 of them, 2 * dStride apart).
 */
#define Q2_K_GROUP_BLOCK (16 * 84)
#define Q3_K_GROUP_BLOCK (16 * 110)

/* q2_K's row factors of a superblock: d * (sc & 15) into f, -(dmin * (sc >> 4)) into ng, per sub-block. */
static inline void q2_k_factors(const uint8_t *super, float f[16][16], float ng[16][16]) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256i fifteen = _mm256_set1_epi32(15);
    for (int h = 0; h < 2; h++) {
        __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (super + 256 + 16 * h)));
        __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (super + 288 + 16 * h)));
        for (int is = 0; is < 16; is++) {
            __m256i sc = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *) (super + 16 * is + 8 * h)));
            _mm256_storeu_ps(f[is] + 8 * h, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_and_si256(sc, fifteen))));
            _mm256_storeu_ps(ng[is] + 8 * h, _mm256_xor_ps(_mm256_mul_ps(dmin,
                    _mm256_cvtepi32_ps(_mm256_srli_epi32(sc, 4))), sign));
        }
    }
}

/* q3_K's row factors of a superblock: d * (s - 32) into f, per sub-block (LowBitsKX16.q3Scale). */
static inline void q3_k_factors(const uint8_t *super, float f[16][16]) {
    const __m256i fifteen = _mm256_set1_epi32(15);
    const __m256i three = _mm256_set1_epi32(3);
    const __m256i thirtyTwo = _mm256_set1_epi32(32);
    for (int h = 0; h < 2; h++) {
        __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (super + 1728 + 16 * h)));
        __m256i s[12];
        for (int k = 0; k < 12; k++) {
            s[k] = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *) (super + 1536 + 16 * k + 8 * h)));
        }
        for (int is = 0; is < 16; is++) {
            __m256i low = is < 8 ? _mm256_and_si256(s[is & 7], fifteen) : _mm256_srli_epi32(s[is & 7], 4);
            __m256i high = _mm256_and_si256(_mm256_srli_epi32(s[8 + (is & 3)], 2 * (is / 4)), three);
            __m256i sc = _mm256_sub_epi32(_mm256_or_si256(low, _mm256_slli_epi32(high, 4)), thirtyTwo);
            _mm256_storeu_ps(f[is] + 8 * h, _mm256_mul_ps(d, _mm256_cvtepi32_ps(sc)));
        }
    }
}

/*
 * Superblock b of a q2_K_x16 (three 0) or q3_K_x16 group at super against n inputs, added to
 * their accumulators in out, as LowBitsKX16.row: per sub-block in the order of is, the exact sum
 * of w q over its 16 values, then acc = fma(sum, d * scale * dx, acc), and for q2_K
 * acc = fma(sum16, -(dmin * min * dx), acc). vpmaddubsw takes the unsigned u (q2_K's quant; for
 * q3_K the two bits with the mask's bit as the third, 0 to 7, so that w = u - 4 and the sum takes
 * 4 sum16 off): a pair at most 2 * 7 * 127, eight within int16.
 */
static inline __attribute__((always_inline)) void low_bits_k_x16_tile(int three,
        const uint8_t *super, int b, float f[16][16], float ng[16][16], int n, const uint32_t *pairs,
        int64_t pairStride, const float *ds, const int32_t *sum16, int64_t dStride, float *out, int64_t outStride) {
    const __m256i two = _mm256_set1_epi8(3);
    const __m256i four = _mm256_set1_epi8(4);
    const uint8_t *quants = super + (three ? 512 : 320);
    for (int is = 0; is < 16; is++) {
        int half = is / 8;
        int j = (is / 2) % 4;
        int h = is % 2;
        const uint8_t *qv = quants + 32 * (16 * half + 8 * h);
        const uint8_t *mv = super + 32 * (8 * h);
        /* the mask's bit 4 half + j to bit 2 (a 16-bit shift by -2 to 5: no bit crosses into bit 2 or 10) */
        int up = 2 - (4 * half + j);
        __m256i acc[4];
        for (int i = 0; i < n; i++) {
            acc[i] = _mm256_setzero_si256();
        }
        const uint32_t *p0 = pairs + (int64_t) b * 128 + 64 * half + 16 * j + 8 * h;
#pragma GCC unroll 2
        for (int m = 0; m < 8; m++) {
            __m256i u = _mm256_and_si256(_mm256_srli_epi16(_mm256_loadu_si256((const __m256i *) (qv + 32 * m)), 2 * j),
                    two);
            if (three) {
                __m256i mask = _mm256_loadu_si256((const __m256i *) (mv + 32 * m));
                mask = up >= 0 ? _mm256_slli_epi16(mask, up) : _mm256_srli_epi16(mask, -up);
                u = _mm256_or_si256(u, _mm256_and_si256(mask, four));
            }
            for (int i = 0; i < n; i++) {
                acc[i] = _mm256_add_epi16(acc[i], _mm256_maddubs_epi16(u,
                        _mm256_set1_epi32((int) p0[i * pairStride + m])));
            }
        }
        __m256 f0 = _mm256_loadu_ps(f[is]);
        __m256 f1 = _mm256_loadu_ps(f[is] + 8);
        for (int i = 0; i < n; i++) {
            __m256i s0 = _mm256_cvtepi16_epi32(_mm256_castsi256_si128(acc[i]));
            __m256i s1 = _mm256_cvtepi16_epi32(_mm256_extracti128_si256(acc[i], 1));
            int32_t sum = sum16[2 * i * dStride + b * 16 + is];
            __m256 dx = _mm256_set1_ps(ds[i * dStride + b * 8 + 4 * half + j]);
            float *o = out + i * outStride;
            if (three) {
                __m256i back = _mm256_set1_epi32(4 * sum);
                fma_rows(o, _mm256_sub_epi32(s0, back), _mm256_sub_epi32(s1, back), f0, f1, dx);
            } else {
                __m256 s = _mm256_set1_ps((float) sum);
                __m256 a0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s0), _mm256_mul_ps(f0, dx), _mm256_loadu_ps(o));
                __m256 a1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s1), _mm256_mul_ps(f1, dx), _mm256_loadu_ps(o + 8));
                a0 = _mm256_fmadd_ps(s, _mm256_mul_ps(_mm256_loadu_ps(ng[is]), dx), a0);
                a1 = _mm256_fmadd_ps(s, _mm256_mul_ps(_mm256_loadu_ps(ng[is] + 8), dx), a1);
                _mm256_storeu_ps(o, a0);
                _mm256_storeu_ps(o + 8, a1);
            }
        }
    }
}

/*
 * As low_bits_k_x16_tile, for one input: its two row accumulators stay in registers over the
 * superblock, the m loop is unrolled, and q3_K's 4 sum16 comes off the int16 lanes (at most
 * 8 * 2 * 7 * 127 + 4 * 16 * 127: within int16).
 */
static inline __attribute__((always_inline)) void low_bits_k_x16_tile1(int three,
        const uint8_t *super, int b, float f[16][16], float ng[16][16], const uint32_t *pairs, const float *ds,
        const int32_t *sum16, float *out) {
    const __m256i two = _mm256_set1_epi8(3);
    const __m256i four = _mm256_set1_epi8(4);
    const uint8_t *quants = super + (three ? 512 : 320);
    __m256 r0 = _mm256_loadu_ps(out);
    __m256 r1 = _mm256_loadu_ps(out + 8);
    for (int is = 0; is < 16; is++) {
        int half = is / 8;
        int j = (is / 2) % 4;
        int h = is % 2;
        const uint8_t *qv = quants + 32 * (16 * half + 8 * h);
        const uint8_t *mv = super + 32 * (8 * h);
        int up = 2 - (4 * half + j);
        __m256i acc = _mm256_setzero_si256();
        const uint32_t *p = pairs + (int64_t) b * 128 + 64 * half + 16 * j + 8 * h;
#pragma GCC unroll 8
        for (int m = 0; m < 8; m++) {
            __m256i u = _mm256_and_si256(_mm256_srli_epi16(_mm256_loadu_si256((const __m256i *) (qv + 32 * m)), 2 * j),
                    two);
            if (three) {
                __m256i mask = _mm256_loadu_si256((const __m256i *) (mv + 32 * m));
                mask = up >= 0 ? _mm256_slli_epi16(mask, up) : _mm256_srli_epi16(mask, -up);
                u = _mm256_or_si256(u, _mm256_and_si256(mask, four));
            }
            acc = _mm256_add_epi16(acc, _mm256_maddubs_epi16(u, _mm256_set1_epi32((int) p[m])));
        }
        int32_t sum = sum16[b * 16 + is];
        if (three) {
            acc = _mm256_sub_epi16(acc, _mm256_set1_epi16((short) (4 * sum)));
        }
        __m256i s0 = _mm256_cvtepi16_epi32(_mm256_castsi256_si128(acc));
        __m256i s1 = _mm256_cvtepi16_epi32(_mm256_extracti128_si256(acc, 1));
        __m256 dx = _mm256_set1_ps(ds[b * 8 + 4 * half + j]);
        r0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s0), _mm256_mul_ps(_mm256_loadu_ps(f[is]), dx), r0);
        r1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s1), _mm256_mul_ps(_mm256_loadu_ps(f[is] + 8), dx), r1);
        if (!three) {
            __m256 s = _mm256_set1_ps((float) sum);
            r0 = _mm256_fmadd_ps(s, _mm256_mul_ps(_mm256_loadu_ps(ng[is]), dx), r0);
            r1 = _mm256_fmadd_ps(s, _mm256_mul_ps(_mm256_loadu_ps(ng[is] + 8), dx), r1);
        }
    }
    _mm256_storeu_ps(out, r0);
    _mm256_storeu_ps(out + 8, r1);
}

static inline __attribute__((always_inline)) void low_bits_k_x16(int three, const uint8_t *weights, int64_t offset,
        int64_t groupBytes, int groups, int supers, int inputs, const uint32_t *pairs, int64_t pairStride,
        const float *ds, const int32_t *sum16, int64_t dStride, float *out, int64_t outOffset, int64_t outStride) {
    float f[16][16];
    float ng[16][16];
    int64_t superBytes = three ? Q3_K_GROUP_BLOCK : Q2_K_GROUP_BLOCK;
    for (int gr = 0; gr < groups; gr++) {
        const uint8_t *group = weights + offset + gr * groupBytes;
        float *o = (float *) ((uint8_t *) out + outOffset) + 16 * gr;
        zero_rows(o, inputs, outStride);
        for (int b = 0; b < supers; b++) {
            const uint8_t *super = group + (int64_t) b * superBytes;
            if (three) {
                q3_k_factors(super, f);
            } else {
                q2_k_factors(super, f, ng);
            }
            int i = 0;
            for (; i + 4 <= inputs; i += 4) {
                low_bits_k_x16_tile(three, super, b, f, ng, 4, pairs + i * pairStride, pairStride, ds + i * dStride,
                        sum16 + 2 * i * dStride, dStride, o + i * outStride, outStride);
            }
            for (; i < inputs; i++) {
                low_bits_k_x16_tile1(three, super, b, f, ng, pairs + i * pairStride, ds + i * dStride,
                        sum16 + 2 * i * dStride, o + i * outStride);
            }
        }
    }
}

/* As tandem_q4_k_x16, for q2_K_x16, with sum16 (see above) where the others take sum8. */
void tandem_q2_k_x16(const uint8_t *weights, int64_t offset, int64_t groupBytes, int groups, int supers,
        int inputs, const uint32_t *pairs, int64_t pairStride, const float *ds, const int32_t *sum16,
        int64_t dStride, float *out, int64_t outOffset, int64_t outStride) {
    low_bits_k_x16(0, weights, offset, groupBytes, groups, supers, inputs, pairs, pairStride, ds, sum16, dStride,
            out, outOffset, outStride);
}

/* As tandem_q2_k_x16, for q3_K_x16. */
void tandem_q3_k_x16(const uint8_t *weights, int64_t offset, int64_t groupBytes, int groups, int supers,
        int inputs, const uint32_t *pairs, int64_t pairStride, const float *ds, const int32_t *sum16,
        int64_t dStride, float *out, int64_t outOffset, int64_t outStride) {
    low_bits_k_x16(1, weights, offset, groupBytes, groups, supers, inputs, pairs, pairStride, ds, sum16, dStride,
            out, outOffset, outStride);
}

/*
 * iq4_nl_x16 (q4_0_x16's layout: blocks of 288 bytes, 16 f16 d, then 8 x 32 nibble bytes) and
 * iq4_xs_x16 (superblocks of 2176 bytes: 16 f16 d, the rows' 16-bit scales_h at 32, their four
 * scales_l bytes at 64 + 4 i, then per sub-block of 32 values 8 x 32 nibble bytes at 128 + 256 ib).
 * A nibble means llama.cpp's kvalues_iq4nl entry (Iq4X16.VALUES), -127 to 113: too wide for
 * vpmaddubsw's int16 pair sums, so the values are widened to int16 and multiplied with vpmaddwd
 * (pairs as for q8_0_x16: the inputs' quants as int16 pairs).
 */
#define IQ4_NL_GROUP_BLOCK 288
#define IQ4_XS_GROUP_BLOCK (16 * 136)

/*
 * The block of 32 values at nibbles (8 vectors of nibble pairs, the low nibbles values 2j and
 * 2j + 1, the high ones 16 + 2j and 17 + 2j) against n inputs, their block block, added to their
 * accumulators in out as Iq4X16.row: isum = sum of VALUES[nibble] q, exact in int32, then
 * acc = fma((float) isum, dw * dx, acc), dw the rows' factors (f0, f1).
 */
static inline __attribute__((always_inline)) void iq4_x16_tile(
        const uint8_t *nibbles, __m256 f0, __m256 f1, int64_t block, int n, const uint32_t *pairs,
        int64_t pairStride, const float *ds, int64_t dStride, float *out, int64_t outStride) {
    const __m256i table = _mm256_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
            -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    __m256i low[4];
    __m256i high[4];
    for (int i = 0; i < n; i++) {
        low[i] = _mm256_setzero_si256();
        high[i] = _mm256_setzero_si256();
    }
#pragma GCC unroll 1
    for (int j = 0; j < 8; j++) {
        __m256i w = _mm256_loadu_si256((const __m256i *) (nibbles + 32 * j));
        __m256i l = _mm256_shuffle_epi8(table, _mm256_and_si256(w, nibble));
        __m256i h = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(w, 4), nibble));
        __m256i l0 = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(l));
        __m256i l1 = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(l, 1));
        __m256i h0 = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(h));
        __m256i h1 = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(h, 1));
        for (int i = 0; i < n; i++) {
            const uint32_t *p = pairs + i * pairStride + block * 16;
            __m256i ql = _mm256_set1_epi32((int) p[j]);
            __m256i qh = _mm256_set1_epi32((int) p[8 + j]);
            low[i] = _mm256_add_epi32(low[i], _mm256_add_epi32(_mm256_madd_epi16(l0, ql), _mm256_madd_epi16(h0, qh)));
            high[i] = _mm256_add_epi32(high[i], _mm256_add_epi32(_mm256_madd_epi16(l1, ql), _mm256_madd_epi16(h1, qh)));
        }
    }
    for (int i = 0; i < n; i++) {
        fma_rows(out + i * outStride, low[i], high[i], f0, f1, _mm256_set1_ps(ds[i * dStride + block]));
    }
}

/* As tandem_q5_0_x16, for iq4_nl_x16 (pairs as for q8_0_x16). */
void tandem_iq4_nl_x16(const uint8_t *weights, int64_t offset, int64_t groupBytes, int groups, int blocks,
        int inputs, const uint32_t *pairs, int64_t pairStride, const float *ds, const int32_t *sum8,
        int64_t dStride, float *out, int64_t outOffset, int64_t outStride) {
    (void) sum8;
    for (int g = 0; g < groups; g++) {
        const uint8_t *group = weights + offset + g * groupBytes;
        float *o = (float *) ((uint8_t *) out + outOffset) + 16 * g;
        zero_rows(o, inputs, outStride);
        for (int b = 0; b < blocks; b++) {
            const uint8_t *block = group + (int64_t) b * IQ4_NL_GROUP_BLOCK;
            __m256 d0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) block));
            __m256 d1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (block + 16)));
            int i = 0;
            for (; i + 4 <= inputs; i += 4) {
                iq4_x16_tile(block + 32, d0, d1, b, 4, pairs + i * pairStride, pairStride, ds + i * dStride, dStride,
                        o + i * outStride, outStride);
            }
            for (; i < inputs; i++) {
                iq4_x16_tile(block + 32, d0, d1, b, 1, pairs + i * pairStride, pairStride, ds + i * dStride, dStride,
                        o + i * outStride, outStride);
            }
        }
    }
}

/* iq4_xs's row factors of a superblock: d * (ls - 32) per sub-block (Iq4X16.xsScale). */
static inline void iq4_xs_factors(const uint8_t *super, float f[8][16]) {
    const __m256i fifteen = _mm256_set1_epi32(15);
    const __m256i three = _mm256_set1_epi32(3);
    const __m256i thirtyTwo = _mm256_set1_epi32(32);
    for (int h = 0; h < 2; h++) {
        __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (super + 16 * h)));
        __m256i sh = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *) (super + 32 + 16 * h)));
        __m256i sl = _mm256_loadu_si256((const __m256i *) (super + 64 + 32 * h));
        for (int ib = 0; ib < 8; ib++) {
            __m256i low = _mm256_and_si256(_mm256_srli_epi32(sl, 4 * ib), fifteen);
            __m256i high = _mm256_and_si256(_mm256_srli_epi32(sh, 2 * ib), three);
            __m256i sc = _mm256_sub_epi32(_mm256_or_si256(low, _mm256_slli_epi32(high, 4)), thirtyTwo);
            _mm256_storeu_ps(f[ib] + 8 * h, _mm256_mul_ps(d, _mm256_cvtepi32_ps(sc)));
        }
    }
}

/* As tandem_q4_k_x16, for iq4_xs_x16 (supers superblocks of 256 values a row; pairs as for q8_0_x16). */
void tandem_iq4_xs_x16(const uint8_t *weights, int64_t offset, int64_t groupBytes, int groups, int supers,
        int inputs, const uint32_t *pairs, int64_t pairStride, const float *ds, const int32_t *sum8,
        int64_t dStride, float *out, int64_t outOffset, int64_t outStride) {
    (void) sum8;
    float f[8][16];
    for (int g = 0; g < groups; g++) {
        const uint8_t *group = weights + offset + g * groupBytes;
        float *o = (float *) ((uint8_t *) out + outOffset) + 16 * g;
        zero_rows(o, inputs, outStride);
        for (int b = 0; b < supers; b++) {
            const uint8_t *super = group + (int64_t) b * IQ4_XS_GROUP_BLOCK;
            iq4_xs_factors(super, f);
            for (int ib = 0; ib < 8; ib++) {
                __m256 f0 = _mm256_loadu_ps(f[ib]);
                __m256 f1 = _mm256_loadu_ps(f[ib] + 8);
                const uint8_t *nibbles = super + 128 + 256 * ib;
                int64_t block = (int64_t) b * 8 + ib;
                int i = 0;
                for (; i + 4 <= inputs; i += 4) {
                    iq4_x16_tile(nibbles, f0, f1, block, 4, pairs + i * pairStride, pairStride, ds + i * dStride,
                            dStride, o + i * outStride, outStride);
                }
                for (; i < inputs; i++) {
                    iq4_x16_tile(nibbles, f0, f1, block, 1, pairs + i * pairStride, pairStride, ds + i * dStride,
                            dStride, o + i * outStride, outStride);
                }
            }
        }
    }
}

/*
 * q4_1_x16 (blocks of 320 bytes: 16 f16 d, 16 f16 m, then 8 x 32 nibble bytes) and q5_1_x16
 * (384 bytes: d, m, the rows' four qh bytes at 64 + 4 i, then the nibbles at 128), see
 * SmallBlocksX16: values w d + m, w the 4- or 5-bit unsigned quant.
 */
#define Q4_1_GROUP_BLOCK 320
#define Q5_1_GROUP_BLOCK 384

/* The input's term of a block's min, as SmallBlocksX16.inputSum: dx * sum q rounded to f16. */
static inline float input_sum(float dx, int32_t sum8) {
    return _cvtsh_ss(_cvtss_sh(dx * (float) (sum8 / 8), _MM_FROUND_TO_NEAREST_INT));
}

/*
 * Block b of a q4_1_x16 (five 0: its quants the nibbles of the 8 vectors at block + 64, as
 * q4_0_x16's) or q5_1_x16 group (five 1: decoded by q5_0_decode into a, s, as w - 16) against n
 * inputs, added to their accumulators in out as SmallBlocksX16.row: isum = sum of w q over the
 * block (q5_1's products take w - 16 with vpmaddubsw's sign trick and isum adds 16 sum q =
 * 2 * sum8 back; q4_1's take the nibbles as they are, a pair at most 2 * 15 * 127), then
 * acc = fma((float) isum, dw * dx, acc) and acc = fma(m, inputSum, acc).
 */
static inline __attribute__((always_inline)) void mins_x16_tile(int five,
        const uint8_t *block, const __m256i a[16], const __m256i s[16], int b, int n, const uint32_t *pairs,
        int64_t pairStride, const float *ds, const int32_t *sum8, int64_t dStride, float *out, int64_t outStride) {
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    __m256i low[4];
    __m256i high[4];
    for (int i = 0; i < n; i++) {
        low[i] = _mm256_setzero_si256();
        high[i] = _mm256_setzero_si256();
    }
#pragma GCC unroll 1
    for (int j = 0; j < 8; j++) {
        if (five) {
            for (int i = 0; i < n; i++) {
                const uint32_t *p = pairs + i * pairStride + (int64_t) b * 16;
                low[i] = _mm256_add_epi16(low[i], _mm256_maddubs_epi16(a[j],
                        _mm256_sign_epi8(_mm256_set1_epi32((int) p[j]), s[j])));
                high[i] = _mm256_add_epi16(high[i], _mm256_maddubs_epi16(a[8 + j],
                        _mm256_sign_epi8(_mm256_set1_epi32((int) p[8 + j]), s[8 + j])));
            }
        } else {
            __m256i w = _mm256_loadu_si256((const __m256i *) (block + 64 + 32 * j));
            __m256i l = _mm256_and_si256(w, nibble);
            __m256i h = _mm256_and_si256(_mm256_srli_epi16(w, 4), nibble);
            for (int i = 0; i < n; i++) {
                const uint32_t *p = pairs + i * pairStride + (int64_t) b * 16;
                low[i] = _mm256_add_epi16(low[i], _mm256_maddubs_epi16(l, _mm256_set1_epi32((int) p[j])));
                high[i] = _mm256_add_epi16(high[i], _mm256_maddubs_epi16(h, _mm256_set1_epi32((int) p[8 + j])));
            }
        }
    }
    __m256 d0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) block));
    __m256 d1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (block + 16)));
    __m256 m0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (block + 32)));
    __m256 m1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (block + 48)));
    for (int i = 0; i < n; i++) {
        __m256i s0;
        __m256i s1;
        widen_rows(low[i], high[i], &s0, &s1);
        int32_t s8 = sum8[i * dStride + b];
        if (five) {
            __m256i back = _mm256_set1_epi32(2 * s8);
            s0 = _mm256_add_epi32(s0, back);
            s1 = _mm256_add_epi32(s1, back);
        }
        float dx = ds[i * dStride + b];
        float *o = out + i * outStride;
        fma_rows(o, s0, s1, d0, d1, _mm256_set1_ps(dx));
        __m256 in = _mm256_set1_ps(input_sum(dx, s8));
        _mm256_storeu_ps(o, _mm256_fmadd_ps(m0, in, _mm256_loadu_ps(o)));
        _mm256_storeu_ps(o + 8, _mm256_fmadd_ps(m1, in, _mm256_loadu_ps(o + 8)));
    }
}

/*
 * As mins_x16_tile for q5_1_x16 and one input, decoding as it goes: the 5-bit quants unsigned
 * (nibble and fifth bit, w as it is: no vpabsb per decoded vector, no vpsignb per product), so a
 * pair of products is at most 2 * 31 * 127 and four of them, not eight, share an int16 lane.
 */
static inline __attribute__((always_inline)) void q5_1_x16_block1(
        const uint8_t *block, int b, const uint32_t *pairs, const float *ds, const int32_t *sum8, float *out) {
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    const __m256i bit4 = _mm256_set1_epi8(0x10);
    __m256i y[4];
    q5_0_high_bits(block + 32, y);
    const uint32_t *p = pairs + (int64_t) b * 16;
    __m256i s0 = _mm256_setzero_si256();
    __m256i s1 = _mm256_setzero_si256();
    for (int k = 0; k < 2; k++) {
        __m256i low = _mm256_setzero_si256();
        __m256i high = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int j = 4 * k; j < 4 * k + 4; j++) {
            __m256i w = _mm256_loadu_si256((const __m256i *) (block + 128 + 32 * j));
            __m256i n[2] = {_mm256_and_si256(w, nibble), _mm256_and_si256(_mm256_srli_epi16(w, 4), nibble)};
            __m256i u[2];
            for (int half = 0; half < 2; half++) {
                /* as q5_0_decode: bit 2j (mod 8) of y to bit 4 */
                __m256i c = y[2 * half + j / 4];
                __m256i bits;
                switch (j % 4) {
                case 0: bits = _mm256_slli_epi16(c, 4); break;
                case 1: bits = _mm256_slli_epi16(c, 2); break;
                case 2: bits = c; break;
                default: bits = _mm256_srli_epi16(c, 2); break;
                }
                u[half] = _mm256_or_si256(n[half], _mm256_and_si256(bits, bit4));
            }
            low = _mm256_add_epi16(low, _mm256_maddubs_epi16(u[0], _mm256_set1_epi32((int) p[j])));
            high = _mm256_add_epi16(high, _mm256_maddubs_epi16(u[1], _mm256_set1_epi32((int) p[8 + j])));
        }
        __m256i w0;
        __m256i w1;
        widen_rows(low, high, &w0, &w1);
        s0 = _mm256_add_epi32(s0, w0);
        s1 = _mm256_add_epi32(s1, w1);
    }
    __m256 d0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) block));
    __m256 d1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (block + 16)));
    __m256 m0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (block + 32)));
    __m256 m1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (block + 48)));
    float dx = ds[b];
    fma_rows(out, s0, s1, d0, d1, _mm256_set1_ps(dx));
    __m256 in = _mm256_set1_ps(input_sum(dx, sum8[b]));
    _mm256_storeu_ps(out, _mm256_fmadd_ps(m0, in, _mm256_loadu_ps(out)));
    _mm256_storeu_ps(out + 8, _mm256_fmadd_ps(m1, in, _mm256_loadu_ps(out + 8)));
}

static inline __attribute__((always_inline)) void mins_x16(int five, const uint8_t *weights, int64_t offset,
        int64_t groupBytes, int groups, int blocks, int inputs, const uint32_t *pairs, int64_t pairStride,
        const float *ds, const int32_t *sum8, int64_t dStride, float *out, int64_t outOffset, int64_t outStride) {
    __m256i a[16];
    __m256i s[16];
    int64_t blockBytes = five ? Q5_1_GROUP_BLOCK : Q4_1_GROUP_BLOCK;
    for (int g = 0; g < groups; g++) {
        const uint8_t *group = weights + offset + g * groupBytes;
        float *o = (float *) ((uint8_t *) out + outOffset) + 16 * g;
        zero_rows(o, inputs, outStride);
        for (int b = 0; b < blocks; b++) {
            const uint8_t *block = group + (int64_t) b * blockBytes;
            if (five && inputs > 1) {
                /* q5_0_decode reads qh at 32 and the nibbles at 96 from where it is given */
                q5_0_decode(block + 32, a, s);
            }
            int i = 0;
            for (; i + 4 <= inputs; i += 4) {
                mins_x16_tile(five, block, a, s, b, 4, pairs + i * pairStride, pairStride, ds + i * dStride,
                        sum8 + i * dStride, dStride, o + i * outStride, outStride);
            }
            /* one input alone decodes as it goes; more share q5_0_decode's decoding */
            for (; i < inputs; i++) {
                if (five && inputs == 1) {
                    q5_1_x16_block1(block, b, pairs + i * pairStride, ds + i * dStride, sum8 + i * dStride,
                            o + i * outStride);
                } else {
                    mins_x16_tile(five, block, a, s, b, 1, pairs + i * pairStride, pairStride, ds + i * dStride,
                            sum8 + i * dStride, dStride, o + i * outStride, outStride);
                }
            }
        }
    }
}

/* As tandem_q5_0_x16, for q4_1_x16. */
void tandem_q4_1_x16(const uint8_t *weights, int64_t offset, int64_t groupBytes, int groups, int blocks,
        int inputs, const uint32_t *pairs, int64_t pairStride, const float *ds, const int32_t *sum8,
        int64_t dStride, float *out, int64_t outOffset, int64_t outStride) {
    mins_x16(0, weights, offset, groupBytes, groups, blocks, inputs, pairs, pairStride, ds, sum8, dStride, out,
            outOffset, outStride);
}

/* As tandem_q5_0_x16, for q5_1_x16. */
void tandem_q5_1_x16(const uint8_t *weights, int64_t offset, int64_t groupBytes, int groups, int blocks,
        int inputs, const uint32_t *pairs, int64_t pairStride, const float *ds, const int32_t *sum8,
        int64_t dStride, float *out, int64_t outOffset, int64_t outStride) {
    mins_x16(1, weights, offset, groupBytes, groups, blocks, inputs, pairs, pairStride, ds, sum8, dStride, out,
            outOffset, outStride);
}
