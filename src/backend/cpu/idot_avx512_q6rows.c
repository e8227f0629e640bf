/*
 * idot_avx512_q6rows.c — the decode step's stored Q6_K rows (idot.h's
 * `rows`: one token against many rows), coarse and fine forms, with
 * AVX-512 VNNI (internal to backend/cpu): the Q6_K counterpart of
 * idot_avx512_krows.c (why, and the float steps), for the LM head and the
 * half of the down projections that Q4_K_M files keep in Q6_K. Q6_K's
 * stored layout already pairs chunks 4h, 4h+1 and 4h+2, 4h+3 in 64
 * bytes, so the activations are read as they are. One Zen 4 core,
 * 10240 x 10240, one token, rows from RAM: coarse 38 against AVX2's 27
 * GB/s, fine 36 against 22. Bit for bit the portable kernels' results.
 */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "backend/cpu/idot.h"
#include "quant/types.h"

void cpu_idot_avx512_q6rows_patch(cpu_idot table[], int fine);

#define CPU_TARGET "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"
#include "backend/cpu/target_begin.h"

#include "backend/cpu/idot_x86.h"

/* The unsigned 6-bit values of half h (chunks 4h .. 4h+3) of a Q6_K
 * super-block as two registers: lo = [chunk 4h | 4h+1], hi = [4h+2 |
 * 4h+3], each half 32 values. The 64 bytes of ql give the low nibbles
 * (low half of the register: its first 32 bytes, chunk 4h; high half:
 * the next 32, chunk 4h+1) and the high nibbles (chunks 4h+2, 4h+3); the
 * 32 bytes of qh, in both halves, give two bits per chunk (bits 0-1 for
 * chunk 4h, 2-3 for 4h+1, 4-5 for 4h+2, 6-7 for 4h+3), moved to bits
 * 4-5 by a 16-bit shift per half (bits spilled from the neighbouring
 * byte fall outside the mask). The same values as ia_q6_values. */
IA_INLINE void iz6_values(const uint8_t *blk, int h, __m512i *lo, __m512i *hi) {
    const __m512i m4 = _mm512_set1_epi8(15), m30 = _mm512_set1_epi8(0x30);
    const __m512i up = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
    const __m512i down = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
    const __m512i v = _mm512_loadu_si512(blk + 64 * h);
    const __m512i qh = _mm512_broadcast_i64x4(ia_load(blk + 128 + 32 * h));
    /* (a & b) | c: ternary-logic table 0xea */
    *lo = _mm512_ternarylogic_epi32(_mm512_sllv_epi16(qh, up), m30, _mm512_and_si512(v, m4),
                                    0xea);
    *hi = _mm512_ternarylogic_epi32(_mm512_srlv_epi16(qh, down), m30,
                                    _mm512_and_si512(_mm512_srli_epi16(v, 4), m4), 0xea);
}

/* For half h: int16 slot 2L + e (lane L; e = 0: lo's chunk, e = 1: hi's)
 * takes the scale of lane L % 8 of chunk c = 4h + L / 8 + 2e, which is
 * sc[2c + (L % 8) / 4] of the 16 int8 scales. */
static const _Alignas(64) int16_t iz6_scale_idx[2][32] = {
#define IZ6_S(h, L, e) (int16_t)(2 * (4 * (h) + (L) / 8 + 2 * (e)) + ((L) % 8) / 4)
#define IZ6_S2(h, L) IZ6_S(h, L, 0), IZ6_S(h, L, 1)
#define IZ6_S8(h, L0) IZ6_S2(h, L0), IZ6_S2(h, L0 + 1), IZ6_S2(h, L0 + 2), IZ6_S2(h, L0 + 3)
    {IZ6_S8(0, 0), IZ6_S8(0, 4), IZ6_S8(0, 8), IZ6_S8(0, 12)},
    {IZ6_S8(1, 0), IZ6_S8(1, 4), IZ6_S8(1, 8), IZ6_S8(1, 12)},
#undef IZ6_S8
#undef IZ6_S2
#undef IZ6_S
};

/* Coarse form, super-block b into the set acc: as izk_block, the chunks
 * in their stored order (the activations need no arranging), each lane's
 * two scales picked from the 16 signed ones, and the offset step with
 * ms = d and mw = 32 * sc (idot.h). Every sum of four products is at
 * most 4 * 63 * 128 = 32256, an int16. */
IA_INLINE void izk6_block(const uint8_t *blk, const int8_t *xb, const float *dx,
                          const int16_t *bs, __m256 *acc) {
    const __m512i zero = _mm512_setzero_si512();
    ia_prefetch_ahead(blk, 210);
    const __m512i sc16 = _mm512_castsi256_si512(
        _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(blk + 192))));
    __m512i s = zero;
    IA_UNROLL
    for (int h = 0; h < 2; h++) {
        __m512i lo, hi;
        iz6_values(blk, h, &lo, &hi);
        const __m512i plo = _mm512_dpbusd_epi32(zero, lo, _mm512_loadu_si512(xb + 128 * h));
        const __m512i phi = _mm512_dpbusd_epi32(zero, hi, _mm512_loadu_si512(xb + 128 * h + 64));
        const __m512i p = _mm512_mask_blend_epi16(0xaaaaaaaau, plo, _mm512_slli_epi32(phi, 16));
        const __m512i sc = _mm512_permutexvar_epi16(_mm512_load_si512(iz6_scale_idx[h]), sc16);
        s = _mm512_dpwssd_epi32(s, p, sc);
    }
    const __m256i s8 =
        _mm256_add_epi32(_mm512_castsi512_si256(s), _mm512_extracti64x4_epi64(s, 1));
    const __m256 dd = ia_scale(_mm256_set1_ps(ia_f16(blk + 208)), dx);
    *acc = ia_step(*acc, dd, s8);
    *acc = ia_offset_step(*acc, dd, ia_q6_mw((const int8_t *)(blk + 192)), bs);
}

/* Fine form, super-block b into acc = [set 0 | set 1]: chunk pair p is
 * lo (p even) or hi (p odd) of half p / 2, as stored; (float)P times the
 * lane's scale as a float is exactly (float)(sc * P) (|sc * P| <= 128 *
 * 32256 < 2^24). */
IA_INLINE void izf6_block(const uint8_t *blk, const int8_t *xb, const float *dx8,
                          const int16_t *bs, __m512 *acc) {
    const __m512i zero = _mm512_setzero_si512();
    ia_prefetch_ahead(blk, 210);
    const __m512 scf = _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(blk + 192))));
    const float d = ia_f16(blk + 208);
    const __m256 dd = _mm256_mul_ps(_mm256_set1_ps(d), _mm256_loadu_ps(dx8));
    IA_UNROLL
    for (int h = 0; h < 2; h++) {
        __m512i u[2];
        iz6_values(blk, h, &u[0], &u[1]);
        IA_UNROLL
        for (int e = 0; e < 2; e++) {
            const int p = 2 * h + e;
            /* scales: sc[4p + L / 4] in lane L; d * dx: chunk 2p low, 2p+1 high */
            const __m512i sidx = _mm512_set_epi32(4 * p + 3, 4 * p + 3, 4 * p + 3, 4 * p + 3,
                                                  4 * p + 2, 4 * p + 2, 4 * p + 2, 4 * p + 2,
                                                  4 * p + 1, 4 * p + 1, 4 * p + 1, 4 * p + 1,
                                                  4 * p, 4 * p, 4 * p, 4 * p);
            const __m512i didx = _mm512_inserti64x4(_mm512_set1_epi32(2 * p),
                                                    _mm256_set1_epi32(2 * p + 1), 1);
            const __m512i pp = _mm512_dpbusd_epi32(zero, u[e], _mm512_loadu_si512(xb + 64 * p));
            const __m512 pc =
                _mm512_mul_ps(_mm512_cvtepi32_ps(pp), _mm512_permutexvar_ps(sidx, scf));
            *acc = _mm512_fmadd_ps(_mm512_permutexvar_ps(didx, _mm512_castps256_ps512(dd)), pc,
                                   *acc);
        }
    }
    const __m256i m = _mm256_madd_epi16(ia_q6_mw((const int8_t *)(blk + 192)), ia_load(bs));
    *acc = _mm512_mask3_fnmadd_ps(_mm512_zextps256_ps512(dd),
                                  _mm512_zextps256_ps512(_mm256_cvtepi32_ps(m)), *acc,
                                  (__mmask16)0x00ff);
}

static void izk_rows_q6_k(const uint8_t *rows, uint64_t rb, uint64_t n_rows, const uint8_t *xq,
                          uint64_t n, float *out) {
    const int8_t *q = (const int8_t *)xq;
    const float *dx = cpu_qact_scales(xq, n);
    const int16_t *bs = cpu_qact_bsums(CPU_QACT_256, xq, n);
    const uint64_t nb = n / 256;
    for (uint64_t r = 0; r < n_rows; r++) {
        const uint8_t *row = rows + r * rb;
        __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
        uint64_t b = 0;
        for (; b + 1 < nb; b += 2) {
            izk6_block(row + 210 * b, q + 256 * b, dx + b, bs + 16 * b, &a0);
            izk6_block(row + 210 * (b + 1), q + 256 * (b + 1), dx + b + 1, bs + 16 * (b + 1),
                       &a1);
        }
        if (b < nb)
            izk6_block(row + 210 * b, q + 256 * b, dx + b, bs + 16 * b, &a0);
        out[r] = ia_r8(a0, a1);
    }
}

static void izf_rows_q6_k(const uint8_t *rows, uint64_t rb, uint64_t n_rows, const uint8_t *xq,
                          uint64_t n, float *out) {
    const int8_t *q = (const int8_t *)xq;
    const float *dx = cpu_qact_scales(xq, n);
    const int16_t *bs = cpu_qact_bsums(CPU_QACT_32, xq, n);
    for (uint64_t r = 0; r < n_rows; r++) {
        const uint8_t *row = rows + r * rb;
        __m512 acc = _mm512_setzero_ps();
        for (uint64_t b = 0; b < n / 256; b++)
            izf6_block(row + 210 * b, q + 256 * b, dx + 8 * b, bs + 16 * b, &acc);
        out[r] = ia_r8(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
    }
}

/* Replaces Q6_K's `rows` in a copy of AVX2's table (idot.c, beside
 * cpu_idot_avx512_patch; the fine one when `fine`). */
void cpu_idot_avx512_q6rows_patch(cpu_idot table[], int fine) {
    table[SW_TYPE_Q6_K].rows = fine ? izf_rows_q6_k : izk_rows_q6_k;
}

#include "backend/cpu/target_end.h"
#else
/* ISO C wants at least one declaration in a translation unit. */
typedef int idot_avx512_q6rows_unavailable;
#endif
