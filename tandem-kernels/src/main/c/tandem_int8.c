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
    for (int i = 0; i < n; i++) {
        _mm256_storeu_ps(out + i * outStride, _mm256_setzero_ps());
        _mm256_storeu_ps(out + i * outStride + 8, _mm256_setzero_ps());
    }
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
            __m256i s0 = _mm256_add_epi32(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(low[i])),
                    _mm256_cvtepi16_epi32(_mm256_castsi256_si128(high[i])));
            __m256i s1 = _mm256_add_epi32(_mm256_cvtepi16_epi32(_mm256_extracti128_si256(low[i], 1)),
                    _mm256_cvtepi16_epi32(_mm256_extracti128_si256(high[i], 1)));
            __m256 dx = _mm256_set1_ps(ds[i * dStride + b]);
            float *o = out + i * outStride;
            _mm256_storeu_ps(o, _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(s0, s8)),
                    _mm256_mul_ps(dw0, dx), _mm256_loadu_ps(o)));
            _mm256_storeu_ps(o + 8, _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(s1, s8)),
                    _mm256_mul_ps(dw1, dx), _mm256_loadu_ps(o + 8)));
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
