/*
 * idot_avx2_body.h — idot.h's integer dots on 256-bit registers, compiled
 * twice (internal to backend/cpu): by idot_avx2.c for AVX2 + FMA + F16C
 * (IA_VNNI 0), and by idot_avxvnni.c for the same with AVX-VNNI
 * (IA_VNNI 1), the VEX-encoded vpdpbusd/vpdpwssd of AVX2-class CPUs
 * without AVX-512 (Alder Lake and later clients, Sierra Forest). Each
 * defines IA_VNNI, CPU_TARGET (the target string, target_begin.h) and
 * the names of its two table functions (IA_TABLE, IA_FINE_TABLE), then
 * includes it.
 *
 * Weight values are unpacked into 32 bytes and multiplied with 32
 * activation bytes, four products per int32 lane summed exactly: by
 * maddubs (u8 x s8 -> pairs summed to s16; no pair can saturate: |w| <=
 * 128 and |q| <= 127, or u <= 63) and madd (with 1, or with the sub-block
 * scale), or with AVX-VNNI by vpdpbusd (the four products at once) and
 * vpdpwssd (madd and the running integer sum in one). Integer sums are
 * exact in any grouping, so those lanes are the canonical lanes of idot.h
 * either way; floats enter once per block through one FMA (two for the K
 * types: the step and the offset step; the K types' fine form one per
 * chunk of 32, each with its own scale), so results equal the portable
 * kernels (idot.c) bit for bit. Each weight block is unpacked once for up
 * to CPU_IDOT_MAX_X activation rows; for prefill, rows are unpacked once
 * per row block into idot.h's unpacked layouts. Signed weights meet
 * signed activations through the sign trick: |w| * (q * sign(w)) == w * q.
 */
#if !defined(IA_VNNI) || !defined(CPU_TARGET) || !defined(IA_TABLE) || !defined(IA_FINE_TABLE)
#error "idot_avx2_body.h: define IA_VNNI, CPU_TARGET, IA_TABLE and IA_FINE_TABLE first"
#endif
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "backend/cpu/idot.h"
#include "quant/types.h"

const cpu_idot *IA_TABLE(void);
const cpu_idot *IA_FINE_TABLE(void);

#include "backend/cpu/target_begin.h"

#include "backend/cpu/idot_x86.h"

/* The four products u8 x s8 of each int32 lane, summed. */
IA_INLINE __m256i ia_dp4(__m256i u, __m256i x) {
#if IA_VNNI
    return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u, x);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, x), _mm256_set1_epi16(1));
#endif
}

/* sum + madd(p, sc): int16 pairs times scales into the running sum. */
IA_INLINE __m256i ia_madd_acc(__m256i sum, __m256i p, __m256i sc) {
#if IA_VNNI
    return _mm256_dpwssd_avx_epi32(sum, p, sc);
#else
    return _mm256_add_epi32(sum, _mm256_madd_epi16(p, sc));
#endif
}

/* Pins v to a register at this point. The integer sums of the K kernels
 * are exact in any order, so the compiler may regroup a running sum into
 * a tree whose operands it then spills to the stack; pinning each step
 * keeps the sums running in registers. */
#define IA_PIN(v) __asm__("" : "+x"(v))

/* One block b of a 32-element type into the accumulator set acc. */
IA_INLINE void ia_block32(ia_w32_fn wfn, ia_s32_fn sfn, const uint8_t *blk, uint64_t b, int nx,
                          const int8_t *const *q, const float *const *dx, __m256 *acc) {
    const __m256i w = wfn(blk);
    const __m256 dw = _mm256_set1_ps(sfn(blk));
    const __m256i aw = _mm256_sign_epi8(w, w);
    IA_UNROLL
    for (int t = 0; t < nx; t++) {
        const __m256i x = _mm256_sign_epi8(ia_load(q[t] + 32 * b), w);
        const __m256i s = ia_dp4(aw, x);
        acc[t] = ia_step(acc[t], ia_scale(dw, dx[t] + b), s);
    }
}

IA_INLINE void ia_dot32(ia_w32_fn wfn, ia_s32_fn sfn, uint32_t bb, int nx, const uint8_t *row,
                        const uint8_t *xq, uint64_t xs, uint64_t n, float *out) {
    const int8_t *q[CPU_IDOT_MAX_X];
    const float *dx[CPU_IDOT_MAX_X];
    __m256 a0[CPU_IDOT_MAX_X], a1[CPU_IDOT_MAX_X];
    IA_UNROLL
    for (int t = 0; t < nx; t++) {
        q[t] = (const int8_t *)(xq + (uint64_t)t * xs);
        dx[t] = cpu_qact_scales(xq + (uint64_t)t * xs, n);
        a0[t] = a1[t] = _mm256_setzero_ps();
    }
    const uint64_t nb = n / 32;
    uint64_t b = 0;
    for (; b + 1 < nb; b += 2) {
        ia_block32(wfn, sfn, row + b * bb, b, nx, q, dx, a0);
        ia_block32(wfn, sfn, row + (b + 1) * bb, b + 1, nx, q, dx, a1);
    }
    if (b < nb)
        ia_block32(wfn, sfn, row + b * bb, b, nx, q, dx, a0);
    IA_UNROLL
    for (int t = 0; t < nx; t++)
        out[t] = ia_r8(a0[t], a1[t]);
}

/* ---- K types ------------------------------------------------------------ */

IA_INLINE __m256i ia_mac(__m256i sum, __m256i u, const int8_t *x, __m256i sc) {
    return ia_madd_acc(sum, _mm256_maddubs_epi16(u, ia_load(x)), sc);
}

/* One token's state over a super-block: the integer sum (coarse form), or
 * the products d * dx[8b+c] of the chunks' scales (fine form). With
 * AVX-VNNI the sum runs as two (even and odd chunks, added at the block's
 * end; exact in any grouping): vpdpwssd's latency on one chain of eight
 * would otherwise bound the loop. */
enum { IA_KSUMS = IA_VNNI ? 2 : 1 };
typedef struct ia_ksum {
    __m256i s[IA_KSUMS];
    _Alignas(32) float dd[8];
} ia_ksum;

IA_INLINE void ia_kstart(int fine, ia_ksum *k, int nx, __m256 d, const ia_xk *x, uint64_t b) {
    IA_UNROLL
    for (int t = 0; t < nx; t++) {
        if (fine)
            _mm256_store_ps(k[t].dd, _mm256_mul_ps(d, _mm256_loadu_ps(x->dx[t] + 8 * b)));
        else
            for (int i = 0; i < IA_KSUMS; i++)
                k[t].s[i] = _mm256_setzero_si256();
    }
}

/* Chunk c of super-block b for token t: into the integer sum (coarse), or
 * a0/a1 (the sets c % 2) through the chunk's own scale (fine). */
IA_INLINE void ia_kchunk(int fine, ia_ksum *k, __m256i u, const ia_xk *x, int t, uint64_t b,
                         int c, __m256i sc, __m256 *a0, __m256 *a1) {
    const int8_t *xb = x->q[t] + 256 * b + 32 * (uint64_t)c;
    if (fine) {
        const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(u, ia_load(xb)), sc);
        const __m256 ddc = _mm256_broadcast_ss(&k->dd[c]);
        __m256 *acc = c % 2 ? &a1[t] : &a0[t];
        *acc = _mm256_fmadd_ps(ddc, _mm256_cvtepi32_ps(p), *acc);
        IA_PIN(*acc);
    } else {
        __m256i *s = &k->s[c % IA_KSUMS];
        *s = ia_mac(*s, u, xb, sc);
        IA_PIN(*s);
    }
}

/* The end of super-block b for token t: the coarse form's step (scale d)
 * and offset step (scale ms) into a0, or the fine form's offset step. */
IA_INLINE void ia_kend(int fine, __m256 *a0, const ia_ksum *k, __m256 d, __m256 ms, __m256i mw,
                       const ia_xk *x, int t, uint64_t b) {
    if (fine) {
        const __m256 p = _mm256_mul_ps(ms, _mm256_loadu_ps(x->dx[t] + 8 * b));
        a0[t] = ia_offset_step(a0[t], p, mw, x->bs[t] + 16 * b);
        return;
    }
    const __m256i s = IA_KSUMS == 2 ? _mm256_add_epi32(k->s[0], k->s[IA_KSUMS - 1]) : k->s[0];
    a0[t] = ia_step(a0[t], ia_scale(d, x->dx[t] + b), s);
    a0[t] = ia_offset_step(a0[t], ia_scale(ms, x->dx[t] + b), mw, x->bs[t] + 16 * b);
}

/* int16 scale j of sc (8 int16 in both halves) in all 16 lanes */
IA_INLINE __m256i ia_bcast16(__m256i sc, int j) {
    const __m256i m = _mm256_set1_epi16((short)((2 * j) | (2 * j + 1) << 8));
    return _mm256_shuffle_epi8(sc, m);
}

/* Q4_K (qh NULL) and Q5_K super-block b. */
IA_INLINE void ia_block_k4(int fine, const uint8_t *blk, const uint8_t *qh, const uint8_t *qs,
                           uint64_t b, int nx, const ia_xk *x, __m256 *a0, __m256 *a1) {
    __m128i sc8, mn8;
    ia_k4_scales(blk + 4, &sc8, &mn8);
    const __m256i sc = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sc8));
    const __m256i mw = ia_k4_mw(mn8);
    const __m256 d = _mm256_set1_ps(ia_f16(blk)), dmin = _mm256_set1_ps(ia_f16(blk + 2));
    const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
    __m256i hv = qh != NULL ? ia_load(qh) : _mm256_setzero_si256();
    ia_ksum sum[CPU_IDOT_MAX_X];
    ia_kstart(fine, sum, nx, d, x, b);
    IA_UNROLL
    for (int j = 0; j < 4; j++) {
        const __m256i v = ia_load(qs + 32 * j);
        __m256i lo = _mm256_and_si256(v, m4);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        if (qh != NULL) {
            lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(hv, one), 4));
            hi = _mm256_or_si256(
                hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hv, 1), one), 4));
            hv = _mm256_srli_epi16(hv, 2);
        }
        const __m256i s_lo = ia_bcast16(sc, 2 * j), s_hi = ia_bcast16(sc, 2 * j + 1);
        IA_UNROLL
        for (int t = 0; t < nx; t++) {
            ia_kchunk(fine, &sum[t], lo, x, t, b, 2 * j, s_lo, a0, a1);
            ia_kchunk(fine, &sum[t], hi, x, t, b, 2 * j + 1, s_hi, a0, a1);
        }
    }
    IA_UNROLL
    for (int t = 0; t < nx; t++)
        ia_kend(fine, a0, &sum[t], d, dmin, mw, x, t, b);
}

/* The unsigned values of chunks 4h .. 4h+3 of a Q6_K super-block: low
 * nibbles from ql, two high bits each from qh. */
IA_INLINE void ia_q6_values(const uint8_t *blk, int h, __m256i u[4]) {
    const __m256i m4 = _mm256_set1_epi8(15), m3 = _mm256_set1_epi8(3);
    const __m256i qh = ia_load(blk + 128 + 32 * h);
    const __m256i l0 = ia_load(blk + 64 * h), l1 = ia_load(blk + 64 * h + 32);
    u[0] = _mm256_or_si256(_mm256_and_si256(l0, m4),
                           _mm256_slli_epi16(_mm256_and_si256(qh, m3), 4));
    u[1] = _mm256_or_si256(
        _mm256_and_si256(l1, m4),
        _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m3), 4));
    u[2] = _mm256_or_si256(
        _mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
        _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m3), 4));
    u[3] = _mm256_or_si256(
        _mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
        _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m3), 4));
}

/* Q6_K super-block b. */
IA_INLINE void ia_block_q6_k(int fine, const uint8_t *blk, uint64_t b, int nx, const ia_xk *x,
                             __m256 *a0, __m256 *a1) {
    const int8_t *scb = (const int8_t *)(blk + 192);
    const __m256 d = _mm256_set1_ps(ia_f16(blk + 208));
    ia_ksum sum[CPU_IDOT_MAX_X];
    ia_kstart(fine, sum, nx, d, x, b);
    IA_UNROLL /* c constant: the fine form's set c % 2 a register */
    for (int h = 0; h < 2; h++) {
        __m256i u[4];
        ia_q6_values(blk, h, u);
        IA_UNROLL
        for (int c4 = 0; c4 < 4; c4++) {
            const int c = 4 * h + c4;
            const __m256i scv = _mm256_set_m128i(_mm_set1_epi16(scb[2 * c + 1]),
                                                 _mm_set1_epi16(scb[2 * c]));
            IA_UNROLL
            for (int t = 0; t < nx; t++)
                ia_kchunk(fine, &sum[t], u[c4], x, t, b, c, scv, a0, a1);
        }
    }
    const __m256i mw = ia_q6_mw(scb);
    IA_UNROLL
    for (int t = 0; t < nx; t++)
        ia_kend(fine, a0, &sum[t], d, d, mw, x, t, b);
}

/* ---- unpacked K rows (idot.h's CPU_IDOT_UK layout) -------------------- */

/* Unpacked super-block b into acc: per chunk one load of 32 values and one
 * shuffle for the scales, then three operations per token (four in the
 * fine form: the convert and FMA replace the integer add). */
IA_INLINE void ia_block_uk(int fine, const uint8_t *blk, uint64_t b, int nx, const ia_xk *x,
                           __m256 *a0, __m256 *a1) {
    const __m256i scv = ia_load(blk + CPU_IDOT_UK_SC);
    const __m256 d = _mm256_broadcast_ss((const float *)(const void *)(blk + CPU_IDOT_UK_D));
    const __m256 ms = _mm256_broadcast_ss((const float *)(const void *)(blk + CPU_IDOT_UK_MS));
    ia_ksum sum[CPU_IDOT_MAX_X];
    ia_kstart(fine, sum, nx, d, x, b);
    IA_UNROLL8 /* c constant: each shuffle mask a constant */
    for (int c = 0; c < 8; c++) {
        const __m256i u = ia_load(blk + 32 * c);
        const __m256i sc = ia_bcast16(scv, c);
        IA_UNROLL
        for (int t = 0; t < nx; t++)
            ia_kchunk(fine, &sum[t], u, x, t, b, c, sc, a0, a1);
    }
    const __m256i mw = ia_load(blk + CPU_IDOT_UK_MW);
    IA_UNROLL
    for (int t = 0; t < nx; t++)
        ia_kend(fine, a0, &sum[t], d, ms, mw, x, t, b);
}

/* The stored K types, and IA_UK: a row of any of them unpacked. */
enum { IA_Q4_K, IA_Q5_K, IA_Q6_K, IA_UK };

/* The coarse form takes a0 (the caller alternates the sets by
 * super-block); the fine form both (by chunk). */
IA_INLINE void ia_blockk(int kind, int fine, const uint8_t *blk, uint64_t b, int nx,
                         const ia_xk *x, __m256 *a0, __m256 *a1) {
    if (kind != IA_UK)
        ia_prefetch_ahead(blk, kind == IA_Q4_K ? 144 : kind == IA_Q5_K ? 176 : 210);
    if (kind == IA_Q4_K)
        ia_block_k4(fine, blk, NULL, blk + 16, b, nx, x, a0, a1);
    else if (kind == IA_Q5_K)
        ia_block_k4(fine, blk, blk + 16, blk + 48, b, nx, x, a0, a1);
    else if (kind == IA_Q6_K)
        ia_block_q6_k(fine, blk, b, nx, x, a0, a1);
    else
        ia_block_uk(fine, blk, b, nx, x, a0, a1);
}

IA_INLINE void ia_dotk(int kind, int fine, uint32_t bb, int nx, const uint8_t *row,
                       const uint8_t *xq, uint64_t xs, uint64_t n, float *out) {
    const ia_xk x = ia_xk_of(fine, nx, xq, xs, n);
    __m256 a0[CPU_IDOT_MAX_X], a1[CPU_IDOT_MAX_X];
    IA_UNROLL
    for (int t = 0; t < nx; t++)
        a0[t] = a1[t] = _mm256_setzero_ps();
    const uint64_t nb = n / 256;
    uint64_t b = 0;
    for (; b + 1 < nb; b += 2) {
        ia_blockk(kind, fine, row + b * bb, b, nx, &x, a0, a1);
        ia_blockk(kind, fine, row + (b + 1) * bb, b + 1, nx, &x, fine ? a0 : a1,
                  fine ? a1 : a0);
    }
    if (b < nb)
        ia_blockk(kind, fine, row + b * bb, b, nx, &x, a0, a1);
    IA_UNROLL
    for (int t = 0; t < nx; t++)
        out[t] = ia_r8(a0[t], a1[t]);
}

/* ---- unpacking rows for prefill (idot.h's CPU_IDOT_UK layout) ------------ */

/* Q4_K (qh NULL) and Q5_K super-blocks of a row into unpacked blocks. */
static void ia_unpack_k4(uint32_t bb, uint32_t qh_off, uint32_t qs_off, const uint8_t *row,
                         uint64_t n, uint8_t *dst) {
    const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
    for (uint64_t b = 0; b < n / 256; b++, dst += CPU_IDOT_UK_BYTES) {
        const uint8_t *blk = row + b * bb, *qs = blk + qs_off;
        __m256i hv = qh_off != 0 ? ia_load(blk + qh_off) : _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {
            const __m256i v = ia_load(qs + 32 * j);
            __m256i lo = _mm256_and_si256(v, m4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
            if (qh_off != 0) {
                lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(hv, one), 4));
                hi = _mm256_or_si256(
                    hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hv, 1), one), 4));
                hv = _mm256_srli_epi16(hv, 2);
            }
            _mm256_storeu_si256((__m256i *)(void *)(dst + 64 * j), lo);
            _mm256_storeu_si256((__m256i *)(void *)(dst + 64 * j + 32), hi);
        }
        ia_k4_store_tail(blk, dst);
    }
}
static void ia_unpack_q4_k(const uint8_t *row, uint64_t n, uint8_t *dst) {
    ia_unpack_k4(144, 0, 16, row, n, dst);
}
static void ia_unpack_q5_k(const uint8_t *row, uint64_t n, uint8_t *dst) {
    ia_unpack_k4(176, 16, 48, row, n, dst);
}

static void ia_unpack_q6_k(const uint8_t *row, uint64_t n, uint8_t *dst) {
    for (uint64_t b = 0; b < n / 256; b++, dst += CPU_IDOT_UK_BYTES) {
        const uint8_t *blk = row + b * 210;
        for (int h = 0; h < 2; h++) {
            __m256i u[4];
            ia_q6_values(blk, h, u);
            for (int c4 = 0; c4 < 4; c4++)
                _mm256_storeu_si256((__m256i *)(void *)(dst + 32 * (4 * h + c4)), u[c4]);
        }
        /* even sub-blocks (lanes 0..3 of each chunk) low, odd high;
         * mw[g] = 32 * sc[g] */
        const __m128i sc8 = _mm_loadu_si128((const __m128i *)(const void *)(blk + 192));
        const __m128i evod = _mm_shuffle_epi8(
            sc8, _mm_set_epi8(15, 13, 11, 9, 7, 5, 3, 1, 14, 12, 10, 8, 6, 4, 2, 0));
        const float d = ia_f16(blk + 208);
        ia_uk_store(dst, _mm256_cvtepi8_epi16(evod), ia_q6_mw((const int8_t *)(blk + 192)), d, d);
    }
}

/* ---- one entry point per type, each with the token count a constant ---- */

#define IA_ENTRY_DOT(name, call) IX_ENTRY_DOT(ia_##name, call)
#define IA_ENTRY(name, call) IX_ENTRY(ia_##name, ia_rows_##name, call)
#define IA_Q4_0_(NX_) ia_dot32(ia_w_q4_0, ia_f16, 18, NX_, row, xq, xs, n, out)
#define IA_Q5_0_(NX_) ia_dot32(ia_w_q5_0, ia_f16, 22, NX_, row, xq, xs, n, out)
#define IA_Q8_0_(NX_) ia_dot32(ia_w_q8_0, ia_f16, 34, NX_, row, xq, xs, n, out)
#define IA_U32_(NX_) ia_dot32(ia_w_u32, ia_s_u32, CPU_IDOT_U32_BYTES, NX_, row, xq, xs, n, out)
#define IA_UK_(NX_) ia_dotk(IA_UK, 0, CPU_IDOT_UK_BYTES, NX_, row, xq, xs, n, out)
#define IA_Q4_K_(NX_) ia_dotk(IA_Q4_K, 0, 144, NX_, row, xq, xs, n, out)
#define IA_Q5_K_(NX_) ia_dotk(IA_Q5_K, 0, 176, NX_, row, xq, xs, n, out)
#define IA_Q6_K_(NX_) ia_dotk(IA_Q6_K, 0, 210, NX_, row, xq, xs, n, out)
#define IA_UK_FINE_(NX_) ia_dotk(IA_UK, 1, CPU_IDOT_UK_BYTES, NX_, row, xq, xs, n, out)
#define IA_Q4_K_FINE_(NX_) ia_dotk(IA_Q4_K, 1, 144, NX_, row, xq, xs, n, out)
#define IA_Q5_K_FINE_(NX_) ia_dotk(IA_Q5_K, 1, 176, NX_, row, xq, xs, n, out)
#define IA_Q6_K_FINE_(NX_) ia_dotk(IA_Q6_K, 1, 210, NX_, row, xq, xs, n, out)
IA_ENTRY_DOT(u32, IA_U32_)
IA_ENTRY_DOT(uk, IA_UK_)
IA_ENTRY_DOT(uk_fine, IA_UK_FINE_)
IA_ENTRY(q4_0, IA_Q4_0_)
IA_ENTRY(q5_0, IA_Q5_0_)
IA_ENTRY(q8_0, IA_Q8_0_)
IA_ENTRY(q4_k, IA_Q4_K_)
IA_ENTRY(q5_k, IA_Q5_K_)
IA_ENTRY(q6_k, IA_Q6_K_)
IA_ENTRY(q4_k_fine, IA_Q4_K_FINE_)
IA_ENTRY(q5_k_fine, IA_Q5_K_FINE_)
IA_ENTRY(q6_k_fine, IA_Q6_K_FINE_)

/* Stored row -> unpacked blocks (f32 scale, 32 int8). */
IA_INLINE void ia_unpack32(ia_w32_fn wfn, uint32_t bb, const uint8_t *row, uint64_t n,
                           uint8_t *dst) {
    for (uint64_t b = 0; b < n / 32; b++, dst += CPU_IDOT_U32_BYTES) {
        const float d = ia_f16(row + b * bb);
        memcpy(dst, &d, sizeof d);
        _mm256_storeu_si256((__m256i *)(void *)(dst + 4), wfn(row + b * bb));
    }
}
static void ia_unpack_q4_0(const uint8_t *row, uint64_t n, uint8_t *dst) {
    ia_unpack32(ia_w_q4_0, 18, row, n, dst);
}
static void ia_unpack_q5_0(const uint8_t *row, uint64_t n, uint8_t *dst) {
    ia_unpack32(ia_w_q5_0, 22, row, n, dst);
}
static void ia_unpack_q8_0(const uint8_t *row, uint64_t n, uint8_t *dst) {
    ia_unpack32(ia_w_q8_0, 34, row, n, dst);
}

#define IA_TABLE32(name)                                                              \
    {.fmt = CPU_QACT_32, .dot = ia_##name, .rows = ia_rows_##name,                    \
     .unpack = ia_unpack_##name, .unpacked_dot = ia_u32, .unpack_elems = 32,          \
     .unpack_bytes = CPU_IDOT_U32_BYTES}
#define IA_TABLEK(name)                                                               \
    {.fmt = CPU_QACT_256, .dot = ia_##name, .rows = ia_rows_##name,                   \
     .unpack = ia_unpack_##name, .unpacked_dot = ia_uk, .unpack_elems = 256,          \
     .unpack_bytes = CPU_IDOT_UK_BYTES}
#define IA_TABLEK_FINE(name)                                                          \
    {.fmt = CPU_QACT_32, .dot = ia_##name##_fine, .rows = ia_rows_##name##_fine,      \
     .unpack = ia_unpack_##name, .unpacked_dot = ia_uk_fine, .unpack_elems = 256,     \
     .unpack_bytes = CPU_IDOT_UK_BYTES}
static const cpu_idot ia_table[SW_TYPE_COUNT] = {
    [SW_TYPE_Q4_0] = IA_TABLE32(q4_0), [SW_TYPE_Q5_0] = IA_TABLE32(q5_0),
    [SW_TYPE_Q8_0] = IA_TABLE32(q8_0), [SW_TYPE_Q4_K] = IA_TABLEK(q4_k),
    [SW_TYPE_Q5_K] = IA_TABLEK(q5_k), [SW_TYPE_Q6_K] = IA_TABLEK(q6_k),
};
static const cpu_idot ia_fine_table[SW_TYPE_COUNT] = {
    [SW_TYPE_Q4_0] = IA_TABLE32(q4_0), [SW_TYPE_Q5_0] = IA_TABLE32(q5_0),
    [SW_TYPE_Q8_0] = IA_TABLE32(q8_0), [SW_TYPE_Q4_K] = IA_TABLEK_FINE(q4_k),
    [SW_TYPE_Q5_K] = IA_TABLEK_FINE(q5_k), [SW_TYPE_Q6_K] = IA_TABLEK_FINE(q6_k),
};

const cpu_idot *IA_TABLE(void) { return ia_table; }
const cpu_idot *IA_FINE_TABLE(void) { return ia_fine_table; }

#include "backend/cpu/target_end.h"
#else
/* ISO C wants at least one declaration in a translation unit. */
typedef int idot_avx2_body_unavailable;
#endif
