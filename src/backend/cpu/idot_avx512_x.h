/*
 * idot_avx512_x.h — pieces of idot.h's AVX-512 kernels that several of
 * its files share (internal to backend/cpu): two 32-element blocks'
 * 4- and 5-bit values, a token's pair of block scales as two half
 * registers, and the canonical R8 of four tokens' sums at once. Included after idot_x86.h inside an AVX-512 target
 * stretch, so it compiles for that instruction set; always inlined.
 */
#ifndef SW_BACKEND_CPU_IDOT_AVX512_X_H
#define SW_BACKEND_CPU_IDOT_AVX512_X_H

#include <string.h>

#include "backend/cpu/idot_x86.h"

/* The 4-bit values of two 32-element blocks as unsigned bytes, element
 * order, block 0 in the low half and block 1 in the high half; qs0, qs1
 * their 16 bytes of nibbles (`last`: block 0 alone, the high half a copy,
 * unused). Each block's nibbles fill two 128-bit lanes, the second shifted
 * down by 4 (its values 16..31 are the high nibbles). */
IA_INLINE __m512i iz_nibble_pair(const uint8_t *qs0, const uint8_t *qs1, int last) {
    /* the halves from two broadcast loads and a blend (either vector port;
     * an insert takes the shuffle port, as the scales' permutes do) */
    const __m512i v0 = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)qs0));
    const __m512i v = last ? v0
                           : _mm512_mask_blend_epi64(
                                 0xf0, v0, _mm512_broadcast_i32x4(_mm_loadu_si128(
                                               (const __m128i *)(const void *)qs1)));
    /* int16 lanes 8..15 and 24..31: the 128-bit lanes 1 and 3 */
    return _mm512_and_si512(_mm512_mask_srli_epi16(v, 0xff00ff00u, v, 4), _mm512_set1_epi8(15));
}

/* u of iz_nibble_pair plus 16 where the blocks' fifth bits are set: bit j
 * of a block's 32-bit qh (at qh0, qh1; `last`: block 0's alone) for its
 * value j. */
IA_INLINE __m512i iz_fifth_bits(__m512i u, const uint8_t *qh0, const uint8_t *qh1, int last) {
    uint32_t h0, h1 = 0;
    memcpy(&h0, qh0, sizeof h0);
    if (!last)
        memcpy(&h1, qh1, sizeof h1);
    const __mmask64 k = _cvtu64_mask64((uint64_t)h0 | (uint64_t)h1 << 32);
    return _mm512_mask_add_epi8(u, k, u, _mm512_set1_epi8(16));
}

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
