/*
 * idot_avx512_krows.c — the decode step's stored Q4_K rows (idot.h's
 * `rows`: one token against many rows), coarse and fine forms, with
 * AVX-512 VNNI (internal to backend/cpu). Decode is where a CPU run spends
 * its time, and AVX2's kernels (idot_avx2_body.h) are bound there by their
 * instruction count (per 256 weights 16 multiply-pipe operations and 8
 * scale shuffles), not by memory: on Zen 4 these read 42 GB/s (coarse)
 * and 28 GB/s (fine) against AVX2's 28 and 23 (bench_matmul, one thread,
 * rows from RAM).
 *
 * Coarse form. A 64-byte load of a super-block's nibbles holds runs 2h and
 * 2h+1 of 32 bytes: its low nibbles are chunks 4h (low half) and 4h+2
 * (high half), its high ones chunks 4h+1 and 4h+3. The token's
 * activations are copied once per call with each super-block's chunks in
 * the order 0 2 1 3 4 6 5 7, so each nibble register meets its
 * activations in one plain load. vpdpbusd sums each lane's four products,
 * the high nibbles left in place (16 times their value) and that sum
 * shifted by 12 instead of 16: the true sum lands in the lane's high
 * int16, beside the low nibbles' sum in its low int16 (each at most 4 * 15
 * * 127 = 7620 in magnitude), and one vpdpwssd applies both chunks'
 * scales. Integer sums are exact in any grouping, so folding the halves
 * gives the canonical s[l]; the offset term takes the token's block sums
 * paired once per call (bsum[2l] + bsum[2l+1], an int16: m[l] = mn[l] *
 * that pair, one vpmaddwd). Then the two float steps of idot.h on 8 lanes.
 *
 * Fine form: see izf_block. Both give the portable kernels' bits.
 *
 * One row at a time, in order: two rows interleaved (sharing the
 * activation loads) ran at half the speed from RAM, their two streams
 * defeating the hardware prefetcher.
 */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "backend/cpu/idot.h"
#include "quant/types.h"

void cpu_idot_avx512_krows_patch(cpu_idot table[], int fine);
const cpu_idot *cpu_idot_table_avx2(void);

#define CPU_TARGET "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"
#include "backend/cpu/target_begin.h"

#include "backend/cpu/idot_x86.h"

/* The widest row whose activations this kernel rearranges on the stack
 * (36 KiB); wider rows take AVX2's kernel, the same bits. Gemma's widest
 * input is 21504 (31B's MLP). */
enum { IZK_MAX_N = 32768 };

/* One token's activations rearranged for the Q4_K rows. */
typedef struct izk_x {
    _Alignas(64) int8_t q[IZK_MAX_N];       /* chunks 0 2 1 3 4 6 5 7 per super-block */
    _Alignas(64) int32_t bp[IZK_MAX_N / 32]; /* bsum[2l] + bsum[2l+1], 8 per super-block */
} izk_x;

static void izk_arrange(const uint8_t *xq, uint64_t n, izk_x *x) {
    const int8_t *q = (const int8_t *)xq;
    const int16_t *bs = cpu_qact_bsums(CPU_QACT_256, xq, n);
    for (uint64_t b = 0; b < n / 256; b++) {
        const int8_t *s = q + 256 * b;
        int8_t *d = x->q + 256 * b;
        for (int h = 0; h < 2; h++) {
            const __m256i c0 = ia_load(s + 128 * h), c1 = ia_load(s + 128 * h + 32);
            const __m256i c2 = ia_load(s + 128 * h + 64), c3 = ia_load(s + 128 * h + 96);
            _mm256_storeu_si256((__m256i *)(void *)(d + 128 * h), c0);
            _mm256_storeu_si256((__m256i *)(void *)(d + 128 * h + 32), c2);
            _mm256_storeu_si256((__m256i *)(void *)(d + 128 * h + 64), c1);
            _mm256_storeu_si256((__m256i *)(void *)(d + 128 * h + 96), c3);
        }
        /* pairs of int16 summed into int32: madd with ones */
        const __m256i v = ia_load(bs + 16 * b);
        _mm256_storeu_si256((__m256i *)(void *)(x->bp + 8 * b),
                            _mm256_madd_epi16(v, _mm256_set1_epi16(1)));
    }
}

/* Super-block b of a row into the set acc: the canonical s[l] and m[l]
 * of idot.h, then its two float steps. */
IA_INLINE void izk_block(const uint8_t *blk, const izk_x *x, const float *dx, uint64_t b,
                         __m256 *acc) {
    const __m512i m4 = _mm512_set1_epi8(15), zero = _mm512_setzero_si512();
    uint32_t w[4];
    ia_prefetch_ahead(blk, 144);
    ia_k4_words(blk + 4, w);
    /* int16 scales 0..7 as dwords (sc[2i], sc[2i+1]); nibble register h
     * takes dword 2h in its low half (chunks 4h, 4h+1) and 2h+1 in its
     * high half (chunks 4h+2, 4h+3) */
    const __m512i scw =
        _mm512_castsi256_si512(_mm256_cvtepu8_epi16(_mm_set_epi32(0, 0, (int)w[1], (int)w[0])));
    const int8_t *xb = x->q + 256 * b;
    __m512i s = zero;
    IA_UNROLL
    for (int h = 0; h < 2; h++) {
        const __m512i v = _mm512_loadu_si512(blk + 16 + 64 * h);
        const __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_andnot_si512(m4, v);
        const __m512i plo = _mm512_dpbusd_epi32(zero, lo, _mm512_load_si512(xb + 128 * h));
        const __m512i phi = _mm512_dpbusd_epi32(zero, hi, _mm512_load_si512(xb + 128 * h + 64));
        const __m512i p = _mm512_mask_blend_epi16(0xaaaaaaaau, plo, _mm512_slli_epi32(phi, 12));
        const __m512i idx = _mm512_inserti64x4(_mm512_set1_epi32(2 * h),
                                               _mm256_set1_epi32(2 * h + 1), 1);
        s = _mm512_dpwssd_epi32(s, p, _mm512_permutexvar_epi32(idx, scw));
    }
    const __m256i s8 =
        _mm256_add_epi32(_mm512_castsi512_si256(s), _mm512_extracti64x4_epi64(s, 1));
    const __m256i mn = _mm256_cvtepu8_epi32(_mm_set_epi32(0, 0, (int)w[3], (int)w[2]));
    const __m256i m = _mm256_madd_epi16(mn, ia_load(x->bp + 8 * b));
    *acc = ia_step(*acc, ia_scale(_mm256_set1_ps(ia_f16(blk)), dx + b), s8);
    *acc = _mm256_fnmadd_ps(ia_scale(_mm256_set1_ps(ia_f16(blk + 2)), dx + b),
                            _mm256_cvtepi32_ps(m), *acc);
}

/* One row against the arranged token: its dot. */
IA_INLINE float izk_row(const uint8_t *row, const izk_x *x, const float *dx, uint64_t nb) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    uint64_t b = 0;
    for (; b + 1 < nb; b += 2) {
        izk_block(row + 144 * b, x, dx, b, &a0);
        izk_block(row + 144 * (b + 1), x, dx, b + 1, &a1);
    }
    if (b < nb)
        izk_block(row + 144 * b, x, dx, b, &a0);
    return ia_r8(a0, a1);
}

static void izk_rows_q4_k(const uint8_t *rows, uint64_t rb, uint64_t n_rows, const uint8_t *xq,
                          uint64_t n, float *out) {
    if (n > IZK_MAX_N) {
        cpu_idot_table_avx2()[SW_TYPE_Q4_K].rows(rows, rb, n_rows, xq, n, out);
        return;
    }
    izk_x x;
    izk_arrange(xq, n, &x);
    const float *dx = cpu_qact_scales(xq, n);
    for (uint64_t r = 0; r < n_rows; r++)
        out[r] = izk_row(rows + r * rb, &x, dx, n / 256);
}

/* ---- fine form ---------------------------------------------------------- */

/* Super-block b of a row, fine form, into acc = [set 0 | set 1] of idot.h:
 * chunk pair p (2p low, 2p+1 high) from run p of the nibbles loaded into
 * both halves, the low half's low nibbles and the high half's high ones
 * kept in place (16 times their value there). The pair's products p_c
 * enter as floats: (float)P times the chunk's scale, with 1/16 in the
 * high half's, is exactly (float)(sc * P) of the canonical step (every
 * value here an integer below 2^24, each product exact). */
IA_INLINE void izf_block(const uint8_t *blk, const int8_t *xb, const float *dx8,
                         const int16_t *bs, __m512 *acc) {
    const __m512i nib = _mm512_inserti64x4(_mm512_set1_epi8(0x0f), _mm256_set1_epi8((char)0xf0), 1);
    const __m512i hi8 = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi32(8), 1);
    const __m512i zero = _mm512_setzero_si512();
    ia_prefetch_ahead(blk, 144);
    uint32_t w[4];
    ia_k4_words(blk + 4, w);
    const __m256 scf = _mm256_cvtepi32_ps(
        _mm256_cvtepu8_epi32(_mm_set_epi32(0, 0, (int)w[1], (int)w[0])));
    /* the 8 scales, then the same over 16 */
    const __m512 scz = _mm512_insertf32x8(_mm512_castps256_ps512(scf),
                                          _mm256_mul_ps(scf, _mm256_set1_ps(0.0625f)), 1);
    const __m256 dd = _mm256_mul_ps(_mm256_set1_ps(ia_f16(blk)), _mm256_loadu_ps(dx8));
    IA_UNROLL
    for (int p = 0; p < 4; p++) {
        const __m512i idx = _mm512_inserti64x4(_mm512_set1_epi32(2 * p),
                                               _mm256_set1_epi32(2 * p + 1), 1);
        const __m512i u = _mm512_and_si512(_mm512_broadcast_i64x4(ia_load(blk + 16 + 32 * p)), nib);
        const __m512i pp = _mm512_dpbusd_epi32(zero, u, _mm512_loadu_si512(xb + 64 * p));
        const __m512 sc = _mm512_permutexvar_ps(_mm512_add_epi32(idx, hi8), scz);
        const __m512 pc = _mm512_mul_ps(_mm512_cvtepi32_ps(pp), sc);
        *acc = _mm512_fmadd_ps(_mm512_permutexvar_ps(idx, _mm512_castps256_ps512(dd)), pc, *acc);
    }
    const __m256i m = _mm256_madd_epi16(ia_k4_mw(_mm_set_epi32(0, 0, (int)w[3], (int)w[2])),
                                        ia_load(bs));
    const __m256 ms = _mm256_mul_ps(_mm256_set1_ps(ia_f16(blk + 2)), _mm256_loadu_ps(dx8));
    *acc = _mm512_mask3_fnmadd_ps(_mm512_zextps256_ps512(ms),
                                  _mm512_zextps256_ps512(_mm256_cvtepi32_ps(m)), *acc,
                                  (__mmask16)0x00ff);
}

static void izf_rows_q4_k(const uint8_t *rows, uint64_t rb, uint64_t n_rows, const uint8_t *xq,
                          uint64_t n, float *out) {
    const int8_t *q = (const int8_t *)xq;
    const float *dx = cpu_qact_scales(xq, n);
    const int16_t *bs = cpu_qact_bsums(CPU_QACT_32, xq, n);
    for (uint64_t r = 0; r < n_rows; r++) {
        const uint8_t *row = rows + r * rb;
        __m512 acc = _mm512_setzero_ps();
        for (uint64_t b = 0; b < n / 256; b++)
            izf_block(row + 144 * b, q + 256 * b, dx + 8 * b, bs + 16 * b, &acc);
        out[r] = ia_r8(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
    }
}

/* ---- Q6_K ----------------------------------------------------------------- */

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

/* Replaces the Q4_K and Q6_K `rows` of a copy of AVX2's table (idot.c,
 * beside cpu_idot_avx512_patch; the fine one when `fine`). Q5_K keeps
 * AVX2's. */
void cpu_idot_avx512_krows_patch(cpu_idot table[], int fine) {
    table[SW_TYPE_Q4_K].rows = fine ? izf_rows_q4_k : izk_rows_q4_k;
    table[SW_TYPE_Q6_K].rows = fine ? izf_rows_q6_k : izk_rows_q6_k;
}

#include "backend/cpu/target_end.h"
#else
/* ISO C wants at least one declaration in a translation unit. */
typedef int idot_avx512_krows_unavailable;
#endif
