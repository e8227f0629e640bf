/*
 * idot_avx512_x.h — pieces of idot.h's AVX-512 kernels that several of
 * its files share (internal to backend/cpu): a token's pair of block
 * scales as two half registers, and the canonical R8 of four tokens'
 * sums at once. Included after idot_x86.h inside an AVX-512 target
 * stretch, so it compiles for that instruction set; always inlined.
 */
#ifndef SW_BACKEND_CPU_IDOT_AVX512_X_H
#define SW_BACKEND_CPU_IDOT_AVX512_X_H

#include "backend/cpu/idot_x86.h"

/* p[0] in lanes 0..7, p[1] in lanes 8..15 */
IA_INLINE __m512 iz_pair_bcast(const float *p) {
    const __m128 v = _mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)(const void *)p));
    const __m512i idx = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(v));
}

/* R8 of idot.h for four tokens at once, from their 8-lane sums s = acc[0]
 * + acc[1] (tokens 0, 1 in s01's halves, 2, 3 in s23's): the same
 * additions of the same values as ia_r8, lane-parallel across the tokens
 * (IEEE addition is commutative, so a + b and b + a agree). */
IA_INLINE __m128 iz_r8_s4(__m512 s01, __m512 s23) {
    /* t_j = s_j + s_{j+4}: token k's four in 128-bit lane k */
    const __m512 t = _mm512_add_ps(_mm512_shuffle_f32x4(s01, s23, 0x88),
                                   _mm512_shuffle_f32x4(s01, s23, 0xdd));
    /* (t0 + t2) and (t1 + t3), then their sum, in lane 0 of each */
    const __m512 u = _mm512_add_ps(t, _mm512_permute_ps(t, 0x4e));
    const __m512 r = _mm512_add_ps(u, _mm512_permute_ps(u, 0xb1));
    const __m512i idx = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 8, 4, 0);
    return _mm512_castps512_ps128(_mm512_permutexvar_ps(idx, r));
}

/* The halves of a and b side by side: [a.lo + a.hi | b.lo + b.hi]. */
IA_INLINE __m512 iz_fold2(__m512 a, __m512 b) {
    return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xee));
}

#endif
