/*
 * qact_avx512.c — qact.h's quantization of one row with AVX-512 (F, BW):
 * 16 elements per register, the same operations as qact.c's plain C on
 * each (max of |x|, the factor 127 / amax, round to nearest even, which is
 * what the conversion does in the default rounding mode and what qact.c's
 * add-and-subtract gives), so the same bytes; tests/test_idot.c compares
 * the two on rows with zeros, subnormals, NaNs and infinities.
 */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "backend/cpu/qact.h"

void cpu_qact_row_avx512(cpu_qact_fmt fmt, const float *x, uint64_t n, uint8_t *dst);

#define CPU_TARGET "avx2,avx512f,avx512bw"
#include "backend/cpu/target_begin.h"

/* One block of m elements (a multiple of 16): q, the int16 sums per 16,
 * and the scale, as qact.c's qact_block and row loop. */
static inline float qz_block(const float *x, uint32_t m, int8_t *q, int16_t *bs) {
    const __m512 inf = _mm512_set1_ps(INFINITY);
    __m512 amax = _mm512_setzero_ps();
    __mmask16 finite = 0xffff;
    for (uint32_t i = 0; i < m; i += 16) {
        const __m512 a = _mm512_abs_ps(_mm512_loadu_ps(x + i));
        finite &= _mm512_cmp_ps_mask(a, inf, _CMP_LT_OQ); /* false for NaN and inf */
        amax = _mm512_max_ps(amax, a);
    }
    const float am = _mm512_reduce_max_ps(amax);
    const float id = 127.0f / am;
    if (finite != 0xffff || am == 0.0f || !isfinite(id)) {
        memset(q, 0, m);
        memset(bs, 0, m / 16 * sizeof *bs);
        return finite != 0xffff ? NAN : 0.0f;
    }
    const __m512 idv = _mm512_set1_ps(id);
    for (uint32_t i = 0; i < m; i += 16) {
        const __m512i v = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + i), idv));
        _mm_storeu_si128((__m128i *)(void *)(q + i), _mm512_cvtepi32_epi8(v));
        bs[i / 16] = (int16_t)_mm512_reduce_add_epi32(v);
    }
    return am / 127.0f;
}

void cpu_qact_row_avx512(cpu_qact_fmt fmt, const float *x, uint64_t n, uint8_t *dst) {
    const uint64_t nb = n / (uint64_t)fmt;
    int8_t *q = (int8_t *)dst;
    float *d = (float *)(void *)(dst + n);
    int16_t *bs = (int16_t *)(void *)(dst + n + 4 * nb);
    for (uint64_t b = 0; b < nb; b++)
        d[b] = qz_block(x + b * (uint64_t)fmt, (uint32_t)fmt, q + b * (uint64_t)fmt,
                        bs + b * (uint64_t)fmt / 16);
}

#include "backend/cpu/target_end.h"
#else
/* ISO C wants at least one declaration in a translation unit. */
typedef int qact_avx512_unavailable;
#endif
