/*
 * idot_x86.h — the pieces of idot.h's x86 kernels that the AVX2 and the
 * AVX-512 sets share (internal to backend/cpu): loads, the canonical
 * float steps on one 8-lane set, the horizontal sum R8, and the 32-element
 * types' weight unpacking into 32 bytes. Included by idot_avx2.c and
 * idot_avx512.c inside their target pragmas, so each compiles it for its
 * own instruction set; everything here is always inlined.
 */
#ifndef SW_BACKEND_CPU_IDOT_X86_H
#define SW_BACKEND_CPU_IDOT_X86_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "backend/cpu/idot.h"

#define IA_INLINE static inline __attribute__((always_inline))

/* Token loops are unrolled fully (nx is a constant after inlining) so
 * that every accumulator stays in a register. */
#if defined(__clang__)
#define IA_UNROLL _Pragma("clang loop unroll(full)")
#define IA_UNROLL8 _Pragma("clang loop unroll(full)")
#else
#define IA_UNROLL _Pragma("GCC unroll 4")
#define IA_UNROLL8 _Pragma("GCC unroll 8")
#endif

IA_INLINE float ia_f16(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

IA_INLINE __m256i ia_load(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* dw * dx[b] in all lanes (dwv: dw in all lanes), as a vector product of
 * two broadcasts: the same bits as the scalar product, and the token's
 * scale is broadcast straight from memory, a shuffle fewer per block. */
IA_INLINE __m256 ia_scale(__m256 dwv, const float *dxb) {
    return _mm256_mul_ps(dwv, _mm256_broadcast_ss(dxb));
}

/* acc + d * s, the canonical step */
IA_INLINE __m256 ia_step(__m256 acc, __m256 d, __m256i s) {
    return _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(s), acc);
}

/* acc - p * m, the offset step of the K types (p = ms * dx[b]);
 * m = madd(mw, bsum) */
IA_INLINE __m256 ia_offset_step(__m256 acc, __m256 p, __m256i mw, const int16_t *bs) {
    const __m256i m = _mm256_madd_epi16(mw, ia_load(bs));
    return _mm256_fnmadd_ps(p, _mm256_cvtepi32_ps(m), acc);
}

/* Stored weight rows stream from memory once per token (decode) or per
 * few tokens; the hardware prefetcher alone leaves a single core well short
 * of memory's speed there (measured on Zen 4: 31 GB/s, 42 GB/s with this),
 * so the kernels that read them ask for the bytes IA_PREFETCH_BYTES ahead
 * of the block at hand (past a row's end: the next rows, which a decode
 * call reads next). A prefetch never faults, wherever it points. */
enum { IA_PREFETCH_BYTES = 9216 };
IA_INLINE void ia_prefetch_ahead(const uint8_t *blk, uint32_t bytes) {
    for (uint32_t i = 0; i < bytes; i += 64)
        _mm_prefetch((const char *)(blk + IA_PREFETCH_BYTES + i), _MM_HINT_T0);
}

/* R8(a + b) of idot.h */
IA_INLINE float ia_r8(__m256 a, __m256 b) {
    const __m256 s = _mm256_add_ps(a, b);
    const __m128 t = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    const __m128 u = _mm_add_ps(t, _mm_movehl_ps(t, t));
    return _mm_cvtss_f32(_mm_add_ss(u, _mm_shuffle_ps(u, u, 1)));
}

/* ---- 32-element types --------------------------------------------------- */

IA_INLINE __m256i ia_nibbles(const uint8_t *qs) {
    const __m128i q = _mm_loadu_si128((const __m128i *)(const void *)qs);
    const __m256i v = _mm256_set_m128i(_mm_srli_epi16(q, 4), q);
    return _mm256_and_si256(v, _mm256_set1_epi8(15));
}

IA_INLINE __m256i ia_w_q4_0(const uint8_t *b) {
    return _mm256_sub_epi8(ia_nibbles(b + 2), _mm256_set1_epi8(8));
}

/* bit j of the 32-bit qh as 0x10 in byte j */
IA_INLINE __m256i ia_q5_high(const uint8_t *qh4) {
    uint32_t qh;
    memcpy(&qh, qh4, sizeof qh);
    const __m256i sh = _mm256_set_epi64x(0x0303030303030303LL, 0x0202020202020202LL,
                                         0x0101010101010101LL, 0x0000000000000000LL);
    const __m256i bits = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)qh), sh);
    v = _mm256_cmpeq_epi8(_mm256_and_si256(v, bits), bits);
    return _mm256_and_si256(v, _mm256_set1_epi8(0x10));
}

IA_INLINE __m256i ia_w_q5_0(const uint8_t *b) {
    const __m256i v = _mm256_or_si256(ia_nibbles(b + 6), ia_q5_high(b + 2));
    return _mm256_sub_epi8(v, _mm256_set1_epi8(16));
}

IA_INLINE __m256i ia_w_q8_0(const uint8_t *b) { return ia_load(b + 2); }

/* the unpacked layout of idot.h: f32 scale, then 32 int8 */
IA_INLINE __m256i ia_w_u32(const uint8_t *b) { return ia_load(b + 4); }
IA_INLINE float ia_s_u32(const uint8_t *b) {
    float d;
    memcpy(&d, b, sizeof d);
    return d;
}

typedef __m256i (*ia_w32_fn)(const uint8_t *b);
typedef float (*ia_s32_fn)(const uint8_t *b);

/* ---- K blocks: scales, and the unpacked layout's tail ----------------- */

/* The 8 scales and 8 mins of a Q4_K/Q5_K block (quant/dequant_k.c's layout)
 * as bytes, from its 12 scale bytes with 32-bit word operations: w[0], w[1]
 * the scales (4 bytes each), w[2], w[3] the mins. */
IA_INLINE void ia_k4_words(const uint8_t s12[12], uint32_t w[4]) {
    uint32_t u[3];
    memcpy(u, s12, sizeof u);
    const uint32_t lo6 = 0x3f3f3f3fu, lo4 = 0x0f0f0f0fu, lo2 = 0x03030303u;
    w[0] = u[0] & lo6;
    w[1] = (u[2] & lo4) | ((u[0] >> 6) & lo2) << 4;
    w[2] = u[1] & lo6;
    w[3] = ((u[2] >> 4) & lo4) | ((u[1] >> 6) & lo2) << 4;
}

/* The same as two registers of 8 bytes each. */
IA_INLINE void ia_k4_scales(const uint8_t s12[12], __m128i *sc8, __m128i *mn8) {
    uint32_t w[4];
    ia_k4_words(s12, w);
    *sc8 = _mm_set_epi32(0, 0, (int)w[1], (int)w[0]);
    *mn8 = _mm_set_epi32(0, 0, (int)w[3], (int)w[2]);
}

/* mw of idot.h for Q4_K/Q5_K: mn[g / 2] in int16 g, from the 8 mins */
IA_INLINE __m256i ia_k4_mw(__m128i mn8) {
    const __m128i mn16 = _mm_cvtepu8_epi16(mn8);
    return _mm256_set_m128i(_mm_unpackhi_epi16(mn16, mn16), _mm_unpacklo_epi16(mn16, mn16));
}

/* mw of idot.h for Q6_K: 32 * sc[g] */
IA_INLINE __m256i ia_q6_mw(const int8_t *scb) {
    const __m128i sc8 = _mm_loadu_si128((const __m128i *)(const void *)scb);
    return _mm256_slli_epi16(_mm256_cvtepi8_epi16(sc8), 5);
}

IA_INLINE void ia_uk_store(uint8_t *dst, __m256i sc16, __m256i mw16, float d, float ms) {
    _mm256_storeu_si256((__m256i *)(void *)(dst + CPU_IDOT_UK_SC), sc16);
    _mm256_storeu_si256((__m256i *)(void *)(dst + CPU_IDOT_UK_MW), mw16);
    _mm256_storeu_si256((__m256i *)(void *)(dst + CPU_IDOT_UK_D), _mm256_setzero_si256());
    memcpy(dst + CPU_IDOT_UK_D, &d, sizeof d);
    memcpy(dst + CPU_IDOT_UK_MS, &ms, sizeof ms);
}

/* The unpacked block's tail for the Q4_K/Q5_K block blk: sc[c] for both
 * lane halves, mw[g] = mn[g / 2], d and dmin. */
IA_INLINE void ia_k4_store_tail(const uint8_t *blk, uint8_t *dst) {
    __m128i sc8, mn8;
    ia_k4_scales(blk + 4, &sc8, &mn8);
    ia_uk_store(dst, _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sc8)), ia_k4_mw(mn8),
                ia_f16(blk), ia_f16(blk + 2));
}

/* A kernel entry point `fname` for 1 to CPU_IDOT_MAX_X tokens, each
 * count a constant in its own instance of call(NX_); IX_ENTRY adds the
 * decode form `rows_fname` (one token, many rows), which IX_ENTRY_ROWS
 * makes alone. */
#define IX_ENTRY_DOT(fname, call)                                                       \
    static void fname(const uint8_t *row, const uint8_t *xq, uint64_t xs,               \
                      uint32_t n_x, uint64_t n, float *out) {                       \
        switch (n_x) {                                                                  \
        case 1: call(1); break;                                                         \
        case 2: call(2); break;                                                         \
        case 3: call(3); break;                                                         \
        default: call(4); break;                                                        \
        }                                                                               \
    }
#define IX_ENTRY(fname, rows_fname, call)                                               \
    IX_ENTRY_DOT(fname, call)                                                           \
    IX_ENTRY_ROWS(rows_fname, call)
#define IX_ENTRY_ROWS(rows_fname, call)                                                 \
    static void rows_fname(const uint8_t *rows, uint64_t rb, uint64_t n_rows,           \
                           const uint8_t *xq, uint64_t n, float *outs) {            \
        const uint64_t xs = 0;                                                          \
        for (uint64_t r_ = 0; r_ < n_rows; r_++) {                                      \
            const uint8_t *row = rows + r_ * rb;                                        \
            float *out = outs + r_;                                                     \
            call(1);                                                                    \
        }                                                                               \
    }

/* One to CPU_IDOT_MAX_X tokens' activations over a row. */
typedef struct ia_xk {
    const int8_t *q[CPU_IDOT_MAX_X];
    const float *dx[CPU_IDOT_MAX_X];
    const int16_t *bs[CPU_IDOT_MAX_X];
} ia_xk;

/* The nx rows of quantized activations from xq, xs bytes apart (fine:
 * CPU_QACT_32's block sums, else CPU_QACT_256's). */
IA_INLINE ia_xk ia_xk_of(int fine, int nx, const uint8_t *xq, uint64_t xs, uint64_t n) {
    ia_xk x;
    IA_UNROLL
    for (int t = 0; t < nx; t++) {
        const uint8_t *r = xq + (uint64_t)t * xs;
        x.q[t] = (const int8_t *)r;
        x.dx[t] = cpu_qact_scales(r, n);
        x.bs[t] = cpu_qact_bsums(fine ? CPU_QACT_32 : CPU_QACT_256, r, n);
    }
    return x;
}

#endif
