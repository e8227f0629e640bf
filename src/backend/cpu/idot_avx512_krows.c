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
 * Fine form: see the section's comment. Both give the portable kernels'
 * bits.
 *
 * Coarse form: one row at a time, in order: two rows interleaved
 * (sharing the activation loads) ran at half the speed from RAM, their
 * two streams defeating the hardware prefetcher. The fine form takes two
 * rows at a time all the same, each stream with its own software
 * prefetch (izf_rows): its float steps are one chain per row, too long
 * for one row to hide.
 */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "backend/cpu/idot.h"
#include "quant/types.h"

void cpu_idot_avx512_krows_patch(cpu_idot table[], int fine);
const cpu_idot *cpu_idot_table_avx2(void);
const cpu_idot *cpu_idot_fine_table_avx2(void);

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

/* ---- fine form ----------------------------------------------------------
 * Register lane 2l holds lane l of chunk 2p, lane 2l+1 lane l of chunk
 * 2p+1 (the pair's two chunks interleaved, set 0 in the even lanes and
 * set 1 in the odd ones), so that each step's per-lane factors — the
 * chunk scales, d * dx — repeat every two lanes and come from memory
 * with one 64-bit broadcast (a load, no shuffle), and one 32-byte run of
 * nibbles, each dword doubled, holds the pair's values (low nibbles
 * chunk 2p, high nibbles chunk 2p+1, in place: 16 times their value in
 * Q4_K, whose scale there is taken over 16). The per-token parts (the
 * activations in that order, the offset step's block-sum pairs and dx
 * in the even lanes) are arranged once per call. The plain layout
 * ([chunk 2p | chunk 2p+1] halves) took two lane permutes per pair for
 * the factors and was bound by the core, not by memory (one Xeon core
 * with AVX-512, rows in L2: Q4_K 15.5 GB/s; this layout 17.5, and two
 * rows at a time from RAM). The float steps are idot.h's,
 * in its order: set 0 takes chunks 0 2 4 6 and then the offset step,
 * set 1 chunks 1 3 5 7, and every factor is the same value (P and m are
 * integers below 2^24, each product with a scale exact). */

/* One token's activations arranged for the fine rows (izf_arrange). */
typedef struct izf_x {
    _Alignas(64) int8_t q[IZK_MAX_N];        /* per chunk pair, dwords interleaved */
    _Alignas(64) int32_t bp[IZK_MAX_N / 16]; /* lane 2l: bsum[2l] + bsum[2l+1]; odd: 0 */
    _Alignas(64) float dxe[IZK_MAX_N / 16];  /* lane 2l: dx[8b + l]; odd: 0 */
} izf_x;

static void izf_arrange(const uint8_t *xq, uint64_t n, izf_x *x) {
    const int8_t *q = (const int8_t *)xq;
    const float *dx = cpu_qact_scales(xq, n);
    const int16_t *bs = cpu_qact_bsums(CPU_QACT_32, xq, n);
    /* dword 2l from the first source, 2l+1 from the second */
    const __m512i ilv = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    for (uint64_t c = 0; c < n / 64; c++) {
        const __m512i a = _mm512_castsi256_si512(ia_load(q + 64 * c));
        const __m512i b = _mm512_castsi256_si512(ia_load(q + 64 * c + 32));
        _mm512_store_si512(x->q + 64 * c, _mm512_permutex2var_epi32(a, ilv, b));
    }
    const __m512i zero = _mm512_setzero_si512();
    for (uint64_t b = 0; b < n / 256; b++) {
        /* pairs of int16 summed into int32, then spread to the even lanes */
        const __m256i pr = _mm256_madd_epi16(ia_load(bs + 16 * b), _mm256_set1_epi16(1));
        _mm512_store_si512(x->bp + 16 * b,
                           _mm512_permutex2var_epi32(_mm512_castsi256_si512(pr), ilv, zero));
        const __m512 d8 = _mm512_castps256_ps512(_mm256_loadu_ps(dx + 8 * b));
        _mm512_store_ps(x->dxe + 16 * b,
                        _mm512_permutex2var_ps(d8, ilv, _mm512_setzero_ps()));
    }
}

/* The pair of floats at p in all 8 lane pairs: a load, no shuffle. */
IA_INLINE __m512 izf_pair(const float *p) {
    double v;
    memcpy(&v, p, sizeof v);
    return _mm512_castpd_ps(_mm512_set1_pd(v));
}

/* The values of chunk pair p (chunks 2p, 2p+1) of a Q4_K (q5 0) or Q5_K
 * (q5 1) super-block, interleaved; qhd: Q5_K's 32 high-bit bytes with
 * each dword doubled the same way. */
IA_INLINE __m512i izf_values(int q5, const uint8_t *blk, __m512i qhd, int p) {
    const __m512i dup = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
    const __m512i run =
        _mm512_permutexvar_epi32(dup, _mm512_castsi256_si512(ia_load(blk + IZK_QS(q5) + 32 * p)));
    if (!q5) /* low nibbles in the even dwords, high nibbles (in place) in the odd */
        return _mm512_and_si512(run, _mm512_set1_epi64((long long)0xf0f0f0f00f0f0f0fULL));
    const __m512i v = _mm512_and_si512(_mm512_srlv_epi32(run, _mm512_set1_epi64(4LL << 32)),
                                       _mm512_set1_epi8(15));
    /* bit c of each qh byte (c = 2p even dwords, 2p+1 odd) to bit 4: a
     * rotation moves every bit at c mod 8 to 4 mod 8, none other there */
    const __m512i rot = _mm512_set1_epi64((long long)(((uint64_t)((4 - 2 * p - 1) & 31) << 32) |
                                                      (uint64_t)((4 - 2 * p) & 31)));
    /* v | (rotated & 0x10): ternary-logic table 0xf8 (a | (b & c)) */
    return _mm512_ternarylogic_epi32(v, _mm512_rolv_epi32(qhd, rot), _mm512_set1_epi8(16), 0xf8);
}

/* The 8 scales and the 8 mins of a Q4_K/Q5_K block (ia_k4_words'
 * values) from its 12 scale bytes, computed in 64-bit words: k[0] the
 * scales, k[1] the mins, 8 bytes each. */
IA_INLINE void izf_words(const uint8_t s12[12], uint64_t k[2]) {
    uint64_t a;
    uint32_t c;
    memcpy(&a, s12, sizeof a);
    memcpy(&c, s12 + 8, sizeof c);
    const uint64_t c2 = (uint64_t)c | (uint64_t)(c >> 4) << 32;
    const uint64_t lo = a & 0x3f3f3f3f3f3f3f3fULL; /* scales 0..3, mins 0..3 */
    const uint64_t hi = (c2 & 0x0f0f0f0f0f0f0f0fULL) | ((a >> 6) & 0x0303030303030303ULL) << 4;
    k[0] = (lo & 0xffffffffULL) | hi << 32;
    k[1] = lo >> 32 | (hi & 0xffffffff00000000ULL);
}

/* Super-block b of one row into acc (sets interleaved as above). */
IA_INLINE void izf_block(int q5, const uint8_t *blk, const uint8_t *pf, const izf_x *x,
                         const float *dx8, uint64_t b, __m512 *acc) {
    const __m512i zero = _mm512_setzero_si512();
    /* Through memory, read back by a pointer the compiler cannot see
     * through: each pair's factors become broadcast loads, not shuffles
     * (the shuffle port is the one the values' unpacking needs). */
    _Alignas(32) float f[20]; /* scales, d * dx[8b + c], d, dmin, 0, 0 */
    _Alignas(16) uint64_t k[2]; /* scale bytes, min bytes */
    for (uint32_t i = 0; i < IZK_BYTES(q5); i += 64)
        _mm_prefetch((const char *)(pf + i), _MM_HINT_T0);
    izf_words(blk + 4, k);
    const uint64_t *kp = k;
    __asm__("" : "+r"(kp) : "m"(k));
    uint32_t dm;
    memcpy(&dm, blk, sizeof dm);
    const __m128 dmf = _mm_cvtph_ps(_mm_cvtsi32_si128((int)dm)); /* d, dmin */
    /* the scales as floats, over 16 in Q4_K's odd chunks (high nibbles) */
    __m256 scf = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)kp)));
    if (!q5)
        scf = _mm256_mul_ps(scf, _mm256_setr_ps(1, 0.0625f, 1, 0.0625f, 1, 0.0625f, 1, 0.0625f));
    _mm256_store_ps(f, scf);
    _mm256_store_ps(f + 8, _mm256_mul_ps(_mm256_broadcastss_ps(dmf), _mm256_loadu_ps(dx8)));
    _mm_store_ps(f + 16, dmf);
    const float *fp = f;
    __asm__("" : "+r"(fp) : "m"(f));
    const float *sc = fp, *dd = fp + 8;
    const __m512i qhd = q5 ? _mm512_permutexvar_epi32(
                                 _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0),
                                 _mm512_castsi256_si512(ia_load(blk + 16)))
                           : zero;
    const int8_t *xb = x->q + 256 * b;
    IA_UNROLL
    for (int p = 0; p < 4; p++) {
        const __m512i pp = _mm512_dpbusd_epi32(zero, izf_values(q5, blk, qhd, p),
                                               _mm512_load_si512(xb + 64 * p));
        const __m512 pc = _mm512_mul_ps(_mm512_cvtepi32_ps(pp), izf_pair(sc + 2 * p));
        *acc = _mm512_fmadd_ps(izf_pair(dd + 2 * p), pc, *acc);
    }
    /* the offset step, set 0 (even lanes): m[l] = mn[l] * bp[l] */
    const __m512i mn = _mm512_cvtepu8_epi64(_mm_loadl_epi64((const __m128i *)(kp + 1)));
    const __m512 m = _mm512_cvtepi32_ps(_mm512_madd_epi16(mn, _mm512_load_si512(x->bp + 16 * b)));
    const __m512 ms = _mm512_mul_ps(_mm512_set1_ps(fp[17]),
                                    _mm512_load_ps(x->dxe + 16 * b));
    *acc = _mm512_mask3_fnmadd_ps(ms, m, *acc, (__mmask16)0x5555);
}

/* R8(set 0 + set 1) of the interleaved sets. */
IA_INLINE float izf_sum(__m512 acc) {
    const __m512i evens = _mm512_set_epi32(15, 13, 11, 9, 7, 5, 3, 1, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512 s = _mm512_permutexvar_ps(evens, acc);
    return ia_r8(_mm512_castps512_ps256(s), _mm512_extractf32x8_ps(s, 1));
}

/* Two rows side by side: each row's float steps are one chain (five
 * dependent multiply-adds per super-block), so two rows' independent
 * chains keep the core busy where one would wait on their latency. Each
 * row asks for its bytes IA_PREFETCH_BYTES ahead along its own stream,
 * which goes on past the row's end in the same slot of the next pair of
 * rows (2 * rb further), not in the neighbouring row read beside it. */
IA_INLINE void izf_rows(int q5, const uint8_t *rows, uint64_t rb, uint64_t n_rows,
                        const uint8_t *xq, uint64_t n, float *out) {
    if (n > IZK_MAX_N) {
        cpu_idot_fine_table_avx2()[q5 ? SW_TYPE_Q5_K : SW_TYPE_Q4_K].rows(rows, rb, n_rows, xq,
                                                                          n, out);
        return;
    }
    izf_x x;
    izf_arrange(xq, n, &x);
    const uint32_t bb = IZK_BYTES(q5);
    const uint64_t nb = n / 256;
    const float *dx = cpu_qact_scales(xq, n);
    /* the distance as whole rows (2 * rb apart in a slot's stream) plus
     * skip bytes; blocks from b_wrap on reach one row further */
    const uint64_t skip = rb != 0 ? IA_PREFETCH_BYTES % rb : IA_PREFETCH_BYTES;
    const uint64_t ahead = rb != 0 ? IA_PREFETCH_BYTES / rb * 2 * rb : 0;
    const uint64_t b_wrap = rb != 0 ? (rb - skip + bb - 1) / bb : nb;
    uint64_t r = 0;
    for (; r + 2 <= n_rows; r += 2) {
        const uint8_t *r0 = rows + r * rb, *r1 = r0 + rb, *pf = r0 + skip + ahead;
        __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
        for (uint64_t b = 0; b < nb; b++) {
            const uint8_t *p0 = pf + bb * b + (b < b_wrap ? 0 : rb);
            izf_block(q5, r0 + bb * b, p0, &x, dx + 8 * b, b, &a0);
            izf_block(q5, r1 + bb * b, p0 + rb, &x, dx + 8 * b, b, &a1);
        }
        out[r] = izf_sum(a0);
        out[r + 1] = izf_sum(a1);
    }
    for (; r < n_rows; r++) {
        const uint8_t *row = rows + r * rb;
        __m512 acc = _mm512_setzero_ps();
        for (uint64_t b = 0; b < nb; b++)
            izf_block(q5, row + bb * b, row + bb * b + IA_PREFETCH_BYTES, &x, dx + 8 * b, b, &acc);
        out[r] = izf_sum(acc);
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
