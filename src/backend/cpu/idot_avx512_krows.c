/*
 * idot_avx512_krows.c — the decode step's stored K rows (idot.h's
 * `rows`: one token against many rows; Q4_K and Q5_K here, Q6_K in
 * idot_avx512_q6rows.c), coarse and fine
 * forms, with AVX-512 VNNI (internal to backend/cpu). Decode is where a
 * CPU run spends its time, and AVX2's kernels (idot_avx2_body.inc) are bound
 * there by their instruction count (per 256 weights 16 multiply-pipe
 * operations and 8 scale shuffles), not by memory: on Zen 4 these read
 * Q4_K at 42 GB/s (coarse) and 28 GB/s (fine) against AVX2's 28 and 23
 * (bench_matmul, one thread, rows from RAM).
 *
 * Coarse form (Q4_K; Q5_K the same with its fifth bits). A 64-byte load
 * of a super-block's nibbles holds runs 2h and 2h+1 of 32 bytes: its low
 * nibbles are chunks 4h (low half) and 4h+2
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

/* The bytes of a Q4_K (q5 0) or Q5_K (q5 1) super-block, and where its
 * nibbles start. */
#define IZK_BYTES(q5) ((q5) ? 176u : 144u)
#define IZK_QS(q5) ((q5) ? 48u : 16u)

/* v with 16 (the value's fifth bit) added in the bytes where qh, in both
 * halves, has bit k0 (low half) or k1 (high half) set: Q5_K's chunk
 * values from their nibbles. */
IA_INLINE __m512i izk_bit5(__m512i v, __m512i qh, int k0, int k1) {
    const __m512i bits = _mm512_inserti64x4(_mm512_set1_epi8((char)(1 << k0)),
                                            _mm256_set1_epi8((char)(1 << k1)), 1);
    return _mm512_mask_add_epi8(v, _mm512_test_epi8_mask(qh, bits), v, _mm512_set1_epi8(16));
}

/* Super-block b of a row into the set acc: the canonical s[l] and m[l]
 * of idot.h, then its two float steps. Q5_K's high-nibble chunks take
 * their true values (with the fifth bit, 16 times a nibble would not fit
 * a byte) and the plain shift by 16; each sum of four products is at most
 * 4 * 31 * 127 = 15748. */
IA_INLINE void izk_block(int q5, const uint8_t *blk, const izk_x *x, const float *dx, uint64_t b,
                         __m256 *acc) {
    const __m512i m4 = _mm512_set1_epi8(15), zero = _mm512_setzero_si512();
    uint32_t w[4];
    ia_prefetch_ahead(blk, IZK_BYTES(q5));
    ia_k4_words(blk + 4, w);
    const __m512i qh = q5 ? _mm512_broadcast_i64x4(ia_load(blk + 16)) : zero;
    /* int16 scales 0..7 as dwords (sc[2i], sc[2i+1]); nibble register h
     * takes dword 2h in its low half (chunks 4h, 4h+1) and 2h+1 in its
     * high half (chunks 4h+2, 4h+3) */
    const __m512i scw =
        _mm512_castsi256_si512(_mm256_cvtepu8_epi16(_mm_set_epi32(0, 0, (int)w[1], (int)w[0])));
    const int8_t *xb = x->q + 256 * b;
    __m512i s = zero;
    IA_UNROLL
    for (int h = 0; h < 2; h++) {
        const __m512i v = _mm512_loadu_si512(blk + IZK_QS(q5) + 64 * h);
        __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_andnot_si512(m4, v);
        if (q5) { /* chunks 4h, 4h+2 (lo) and 4h+1, 4h+3 (hi) */
            lo = izk_bit5(lo, qh, 4 * h, 4 * h + 2);
            hi = izk_bit5(_mm512_srli_epi16(hi, 4), qh, 4 * h + 1, 4 * h + 3);
        }
        const __m512i plo = _mm512_dpbusd_epi32(zero, lo, _mm512_load_si512(xb + 128 * h));
        const __m512i phi = _mm512_dpbusd_epi32(zero, hi, _mm512_load_si512(xb + 128 * h + 64));
        const __m512i p =
            _mm512_mask_blend_epi16(0xaaaaaaaau, plo, _mm512_slli_epi32(phi, q5 ? 16 : 12));
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
IA_INLINE float izk_row(int q5, const uint8_t *row, const izk_x *x, const float *dx,
                        uint64_t nb) {
    const uint32_t bb = IZK_BYTES(q5);
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    uint64_t b = 0;
    for (; b + 1 < nb; b += 2) {
        izk_block(q5, row + bb * b, x, dx, b, &a0);
        izk_block(q5, row + bb * (b + 1), x, dx, b + 1, &a1);
    }
    if (b < nb)
        izk_block(q5, row + bb * b, x, dx, b, &a0);
    return ia_r8(a0, a1);
}

IA_INLINE void izk_rows(int q5, const uint8_t *rows, uint64_t rb, uint64_t n_rows,
                        const uint8_t *xq, uint64_t n, float *out) {
    if (n > IZK_MAX_N) {
        cpu_idot_table_avx2()[q5 ? SW_TYPE_Q5_K : SW_TYPE_Q4_K].rows(rows, rb, n_rows, xq, n,
                                                                     out);
        return;
    }
    izk_x x;
    izk_arrange(xq, n, &x);
    const float *dx = cpu_qact_scales(xq, n);
    for (uint64_t r = 0; r < n_rows; r++)
        out[r] = izk_row(q5, rows + r * rb, &x, dx, n / 256);
}
static void izk_rows_q4_k(const uint8_t *rows, uint64_t rb, uint64_t n_rows, const uint8_t *xq,
                          uint64_t n, float *out) {
    izk_rows(0, rows, rb, n_rows, xq, n, out);
}
static void izk_rows_q5_k(const uint8_t *rows, uint64_t rb, uint64_t n_rows, const uint8_t *xq,
                          uint64_t n, float *out) {
    izk_rows(1, rows, rb, n_rows, xq, n, out);
}

/* ---- fine form ---------------------------------------------------------- */

/* Super-block b of a row, fine form, into acc = [set 0 | set 1] of idot.h:
 * chunk pair p (2p low, 2p+1 high) from run p of the nibbles loaded into
 * both halves; Q4_K keeps the low half's low nibbles and the high half's
 * high ones in place (16 times their value there), Q5_K shifts the high
 * ones down and adds the fifth bits. The pair's products p_c enter as
 * floats: (float)P times the chunk's scale (with 1/16 in Q4_K's high
 * half) is exactly (float)(sc * P) of the canonical step (every value
 * here an integer below 2^24, each product exact). */
IA_INLINE void izf_block(int q5, const uint8_t *blk, const int8_t *xb, const float *dx8,
                         const int16_t *bs, __m512 *acc) {
    const __m512i nib = _mm512_inserti64x4(_mm512_set1_epi8(0x0f), _mm256_set1_epi8((char)0xf0), 1);
    const __m512i hi8 = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi32(8), 1);
    const __m512i zero = _mm512_setzero_si512();
    const __m512i m4 = _mm512_set1_epi8(15);
    const __m512i shift = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(4), 1);
    ia_prefetch_ahead(blk, IZK_BYTES(q5));
    uint32_t w[4];
    ia_k4_words(blk + 4, w);
    const __m512i qh = q5 ? _mm512_broadcast_i64x4(ia_load(blk + 16)) : _mm512_setzero_si512();
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
        const __m512i run = _mm512_broadcast_i64x4(ia_load(blk + IZK_QS(q5) + 32 * p));
        /* Q5_K: true values, with the fifth bit (chunks 2p, 2p+1) */
        const __m512i u = q5 ? izk_bit5(_mm512_and_si512(_mm512_srlv_epi16(run, shift), m4), qh,
                                        2 * p, 2 * p + 1)
                             : _mm512_and_si512(run, nib);
        const __m512i pp = _mm512_dpbusd_epi32(zero, u, _mm512_loadu_si512(xb + 64 * p));
        const __m512 sc =
            _mm512_permutexvar_ps(q5 ? idx : _mm512_add_epi32(idx, hi8), scz);
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

IA_INLINE void izf_rows(int q5, const uint8_t *rows, uint64_t rb, uint64_t n_rows,
                        const uint8_t *xq, uint64_t n, float *out) {
    const uint32_t bb = IZK_BYTES(q5);
    const int8_t *q = (const int8_t *)xq;
    const float *dx = cpu_qact_scales(xq, n);
    const int16_t *bs = cpu_qact_bsums(CPU_QACT_32, xq, n);
    for (uint64_t r = 0; r < n_rows; r++) {
        const uint8_t *row = rows + r * rb;
        __m512 acc = _mm512_setzero_ps();
        for (uint64_t b = 0; b < n / 256; b++)
            izf_block(q5, row + bb * b, q + 256 * b, dx + 8 * b, bs + 16 * b, &acc);
        out[r] = ia_r8(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
    }
}
static void izf_rows_q4_k(const uint8_t *rows, uint64_t rb, uint64_t n_rows, const uint8_t *xq,
                          uint64_t n, float *out) {
    izf_rows(0, rows, rb, n_rows, xq, n, out);
}
static void izf_rows_q5_k(const uint8_t *rows, uint64_t rb, uint64_t n_rows, const uint8_t *xq,
                          uint64_t n, float *out) {
    izf_rows(1, rows, rb, n_rows, xq, n, out);
}

/* Replaces Q4_K's and Q5_K's `rows` in a copy of AVX2's table (idot.c,
 * beside cpu_idot_avx512_patch; the fine one when `fine`). */
void cpu_idot_avx512_krows_patch(cpu_idot table[], int fine) {
    table[SW_TYPE_Q4_K].rows = fine ? izf_rows_q4_k : izk_rows_q4_k;
    table[SW_TYPE_Q5_K].rows = fine ? izf_rows_q5_k : izk_rows_q5_k;
}

#include "backend/cpu/target_end.h"
#else
/* ISO C wants at least one declaration in a translation unit. */
typedef int idot_avx512_krows_unavailable;
#endif
