/*
 * qdot_body.h — the fast per-type block dequantizers and dot kernels,
 * written once with GNU C vector extensions (GCC >= 9, clang) and compiled
 * once per instruction set: qdot.c includes it for the baseline ISA and
 * qdot_avx2.c under `#pragma GCC target("avx2")`, qdot_avx512.c for
 * AVX-512. A vector holds QV f32 lanes (16 with AVX-512, 8 with AVX2,
 * else 4); the canonical 16 accumulators of qdot.h are
 * 16/QV such vectors, so each lane performs exactly the canonical
 * operations in the canonical order and every result equals the reference
 * (qdot.c, CPU_ISA_REF) bit for bit; tests/test_cpu_ops.c checks that for
 * every type and ISA.
 *
 * Every block formula is quant/dequant.c's (same roundings, no algebraic
 * rewrite): d*q, d*q + m, (d*sc)*q - (dmin*m). The f16 conversion is
 * branch-free and exact for all 65536 inputs, NaN payloads included; it
 * relies on the default FP environment (no FTZ/DAZ). Besides the per-type
 * dequantizers and fused dots, the body holds the f32 tile kernel of
 * cpu_matmul's multi-token path (cpu_tile_f32_fn), register-blocked over
 * rows and tokens, each lane's sum still canonical. The includer defines
 * QDOT_TABLE_FN, the name of the one function this body exports,
 * QDOT_AVX2 or QDOT_AVX512 when it compiles the body for that ISA, and
 * QDOT_F16C when F16C's conversion may be used.
 */
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "backend/cpu/qdot.h"
#include "quant/types.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the CPU dot kernels load little-endian GGUF data with memcpy"
#endif

/* Group loops are unrolled fully so that each group index is a constant
 * and every shift, offset and scale index folds away. */
#if defined(__clang__)
#define QK_UNROLL _Pragma("clang loop unroll(full)")
#else
#define QK_UNROLL _Pragma("GCC unroll 64")
#endif

/* ---- vectors of QV lanes, and the ISA-specific loads ------------------- */

#if defined(QDOT_AVX512)
#define QV 16
#elif defined(__AVX2__) || defined(QDOT_AVX2)
#define QV 8
#else
#define QV 4
#endif
enum { QACC = CPU_DOT_LANES / QV }; /* accumulator vectors per dot */

typedef float qk_vf __attribute__((vector_size(4 * QV)));
typedef int32_t qk_vi __attribute__((vector_size(4 * QV)));
typedef uint32_t qk_vu __attribute__((vector_size(4 * QV)));

static inline qk_vf qk_ldf(const void *p) {
    qk_vf v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* QV bytes (unsigned, signed) or u16s -> QV int32 lanes. GCC 12 lowers
 * __builtin_convertvector from such short vectors through general
 * registers, so x86 builds use the widening instructions directly. */
#if defined(QDOT_AVX512)
static inline __m128i qk_ld16b(const uint8_t *p) {
    return _mm_loadu_si128((const __m128i *)(const void *)p);
}
static inline qk_vi qk_u8v(const uint8_t *p) { return (qk_vi)_mm512_cvtepu8_epi32(qk_ld16b(p)); }
static inline qk_vi qk_s8v(const uint8_t *p) { return (qk_vi)_mm512_cvtepi8_epi32(qk_ld16b(p)); }
static inline qk_vu qk_u16v(const uint8_t *p) {
    return (qk_vu)_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)p));
}
#elif defined(__AVX2__) || defined(QDOT_AVX2)
static inline __m128i qk_ld8b(const uint8_t *p) {
    return _mm_loadl_epi64((const __m128i *)(const void *)p);
}
static inline qk_vi qk_u8v(const uint8_t *p) { return (qk_vi)_mm256_cvtepu8_epi32(qk_ld8b(p)); }
static inline qk_vi qk_s8v(const uint8_t *p) { return (qk_vi)_mm256_cvtepi8_epi32(qk_ld8b(p)); }
static inline qk_vu qk_u16v(const uint8_t *p) {
    return (qk_vu)_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)p));
}
#elif defined(__SSE2__)
static inline __m128i qk_ld4b(const uint8_t *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return _mm_cvtsi32_si128(v);
}
static inline qk_vi qk_u8v(const uint8_t *p) {
    const __m128i z = _mm_setzero_si128();
    return (qk_vi)_mm_unpacklo_epi16(_mm_unpacklo_epi8(qk_ld4b(p), z), z);
}
static inline qk_vi qk_s8v(const uint8_t *p) {
    const __m128i b = qk_ld4b(p);
    const __m128i w = _mm_unpacklo_epi8(b, b);
    return (qk_vi)_mm_srai_epi32(_mm_unpacklo_epi16(w, w), 24);
}
static inline qk_vu qk_u16v(const uint8_t *p) {
    const __m128i h = _mm_loadl_epi64((const __m128i *)(const void *)p);
    return (qk_vu)_mm_unpacklo_epi16(h, _mm_setzero_si128());
}
#else
typedef uint8_t qk_vb __attribute__((vector_size(QV)));
typedef int8_t qk_vsb __attribute__((vector_size(QV)));
typedef uint16_t qk_vh __attribute__((vector_size(2 * QV)));
static inline qk_vi qk_u8v(const uint8_t *p) {
    qk_vb b;
    memcpy(&b, p, sizeof b);
    return __builtin_convertvector(b, qk_vi);
}
static inline qk_vi qk_s8v(const uint8_t *p) {
    qk_vsb b;
    memcpy(&b, p, sizeof b);
    return __builtin_convertvector(b, qk_vi);
}
static inline qk_vu qk_u16v(const uint8_t *p) {
    qk_vh h;
    memcpy(&h, p, sizeof h);
    return __builtin_convertvector(h, qk_vu);
}
#endif

static inline qk_vf qk_cvt(qk_vi v) { return __builtin_convertvector(v, qk_vf); }

static inline float qk_bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint32_t qk_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline uint32_t qk_u16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }

static inline uint32_t qk_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* f16 -> f32: rebias the exponent (by 224 for inf/NaN, to reach 255) and
 * build subnormals as (2^-14 + m*2^-24) - 2^-14, which is exact. */
static inline float qk_f16_at(const uint8_t *p) {
    const uint32_t h = qk_u16(p);
    uint32_t o = (h & 0x7fffu) << 13;
    const uint32_t e = o & 0x0f800000u;
    o += e == 0x0f800000u ? 224u << 23 : 112u << 23;
    const float sub = qk_bits_f32(o + (1u << 23)) - qk_bits_f32(113u << 23);
    return qk_bits_f32((e == 0 ? qk_f32_bits(sub) : o) | (h & 0x8000u) << 16);
}

/* The same conversion on QV lanes (comparisons give all-ones masks). */
static inline qk_vf qk_f16v_exact(const uint8_t *p) {
    const qk_vu h = qk_u16v(p);
    qk_vu o = (h & 0x7fffu) << 13;
    const qk_vu e = o & 0x0f800000u;
    o += (qk_vu)(e == 0x0f800000u) & (112u << 23);
    o += 112u << 23;
    const qk_vf sub = (qk_vf)(o + (1u << 23)) - qk_bits_f32(113u << 23);
    const qk_vu is_sub = (qk_vu)(e == 0u);
    return (qk_vf)((is_sub & (qk_vu)sub) | (~is_sub & o) | (h & 0x8000u) << 16);
}

#if defined(QDOT_F16C) && QV == 16
/* As below, 16 lanes. */
static inline qk_vf qk_f16v(const uint8_t *p) {
    const __m512 r = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)p));
    if (_mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q) != 0)
        return qk_f16v_exact(p);
    return (qk_vf)r;
}
#elif defined(QDOT_F16C)
/* F16C's conversion is exact but for NaNs, whose signalling ones it
 * quiets: a group holding a NaN takes the bit-exact path above, so the
 * result keeps every payload (rare; one compare and a branch otherwise). */
static inline qk_vf qk_f16v(const uint8_t *p) {
    const __m256 r = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p));
    if (_mm256_movemask_ps(_mm256_cmp_ps(r, r, _CMP_UNORD_Q)) != 0)
        return qk_f16v_exact(p);
    return (qk_vf)r;
}
#else
static inline qk_vf qk_f16v(const uint8_t *p) { return qk_f16v_exact(p); }
#endif

/* ---- blocks: a prep per block, then groups of QV elements ---------------
 * qk_prep(src, &c) decodes a block's scales into c; then qk_grp_<type>(src,
 * &c, e) returns elements e..e+QV-1 (e a multiple of QV). Kernels call the
 * group function in a fully unrolled loop and use each group at once, so
 * dequantized values stay in registers, never in a stack buffer. */

typedef struct qk_ctx {
    float d, m;           /* block scale and offset (32-element types) */
    float dl[16], ml[16]; /* sub-block scales and mins (K-quants) */
} qk_ctx;

static inline void qk_prep_none(const uint8_t *s, qk_ctx *c) {
    (void)s;
    (void)c;
}

static inline qk_vf qk_grp_f32(const uint8_t *s, const qk_ctx *c, int e) {
    (void)c;
    return qk_ldf(s + 4 * e);
}

static inline qk_vf qk_grp_f16(const uint8_t *s, const qk_ctx *c, int e) {
    (void)c;
    return qk_f16v(s + 2 * e);
}

static inline qk_vf qk_grp_bf16(const uint8_t *s, const qk_ctx *c, int e) {
    (void)c;
    return (qk_vf)(qk_u16v(s + 2 * e) << 16);
}

static inline void qk_prep_d(const uint8_t *s, qk_ctx *c) { c->d = qk_f16_at(s); }

static inline void qk_prep_dm(const uint8_t *s, qk_ctx *c) {
    c->d = qk_f16_at(s);
    c->m = qk_f16_at(s + 2);
}

/* Nibbles of a 32-block: elements 0..15 are the low nibbles of qs[0..15],
 * 16..31 the high ones. */
static inline qk_vi qk_nibbles(const uint8_t *qs, int e) {
    const qk_vi q = qk_u8v(qs + e % 16);
    return e < 16 ? (q & 15) : (q >> 4);
}

static inline qk_vf qk_grp_q4_0(const uint8_t *s, const qk_ctx *c, int e) {
    return c->d * qk_cvt(qk_nibbles(s + 2, e) - 8);
}

static inline qk_vf qk_grp_q4_1(const uint8_t *s, const qk_ctx *c, int e) {
    return c->d * qk_cvt(qk_nibbles(s + 4, e)) + c->m;
}

/* Q5: bit e+lane of the 32-bit qh becomes bit 4 of the value; tested with
 * a lane mask, since baseline SSE2 has no per-lane shift. */
static inline qk_vi qk_q5(const uint8_t *qh, const uint8_t *qs, int e) {
#if QV == 16
    const qk_vi lane_bit = {1,   2,   4,   8,    16,   32,   64,    128,
                            256, 512, 1024, 2048, 4096, 8192, 16384, 32768};
#elif QV == 8
    const qk_vi lane_bit = {1, 2, 4, 8, 16, 32, 64, 128};
#else
    const qk_vi lane_bit = {1, 2, 4, 8};
#endif
    const qk_vi hb = (qk_vi){0} + (int32_t)((qk_u32(qh) >> e) & 65535u);
    return qk_nibbles(qs, e) | (((hb & lane_bit) != 0) & 16);
}

static inline qk_vf qk_grp_q5_0(const uint8_t *s, const qk_ctx *c, int e) {
    return c->d * qk_cvt(qk_q5(s + 2, s + 6, e) - 16);
}

static inline qk_vf qk_grp_q5_1(const uint8_t *s, const qk_ctx *c, int e) {
    return c->d * qk_cvt(qk_q5(s + 4, s + 8, e)) + c->m;
}

static inline qk_vf qk_grp_q8_0(const uint8_t *s, const qk_ctx *c, int e) {
    return c->d * qk_cvt(qk_s8v(s + 2 + e));
}

/* Q2_K: scales[16] (low nibble scale, high nibble min), qs[64], d, dmin. */
static inline void qk_prep_q2_k(const uint8_t *s, qk_ctx *c) {
    const float d = qk_f16_at(s + 80), dmin = qk_f16_at(s + 82);
    for (int sb = 0; sb < 16; sb++) {
        c->dl[sb] = d * (float)(s[sb] & 15);
        c->ml[sb] = dmin * (float)(s[sb] >> 4);
    }
}

/* Q2_K/Q3_K 2-bit fields: element e = 128h + 32s + l is bits 2s of
 * qs[32h + l]; its scale is sub-block e/16. */
static inline qk_vi qk_crumbs(const uint8_t *qs, int e) {
    return (qk_u8v(qs + 32 * (e / 128) + e % 32) >> (2 * ((e / 32) % 4))) & 3;
}

static inline qk_vf qk_grp_q2_k(const uint8_t *s, const qk_ctx *c, int e) {
    return c->dl[e / 16] * qk_cvt(qk_crumbs(s + 16, e)) - c->ml[e / 16];
}

/* Q3_K: 16 signed 6-bit scales (low 4 bits from the nibbles of s[0..7],
 * high 2 bits from s[8..11]), bias 32. */
static inline void qk_prep_q3_k(const uint8_t *s, qk_ctx *c) {
    const uint8_t *s12 = s + 96;
    const float d = qk_f16_at(s + 108);
    for (int sb = 0; sb < 16; sb++) {
        const int lo4 = sb < 8 ? (s12[sb] & 15) : (s12[sb - 8] >> 4);
        const int hi2 = (s12[8 + sb % 4] >> (2 * (sb / 4))) & 3;
        c->dl[sb] = d * (float)((lo4 | hi2 << 4) - 32);
    }
}

/* Q3_K value: the 2-bit field minus 4 where bit e/32 of hmask[e % 32] is
 * clear. */
static inline qk_vf qk_grp_q3_k(const uint8_t *s, const qk_ctx *c, int e) {
    const qk_vi hb = (qk_u8v(s + e % 32) >> (e / 32)) & 1;
    return c->dl[e / 16] * qk_cvt(qk_crumbs(s + 32, e) - ((hb ^ 1) << 2));
}

/* Q4_K/Q5_K: 8 unsigned 6-bit scale/min pairs packed in 12 bytes; the
 * factors dl = d*sc and ml = dmin*mn are rounded first, as the reference. */
static inline void qk_prep_k4(const uint8_t *s, qk_ctx *c) {
    const uint8_t *p = s + 4;
    const float d = qk_f16_at(s), dmin = qk_f16_at(s + 2);
    for (int j = 0; j < 4; j++) {
        c->dl[j] = d * (float)(p[j] & 63);
        c->ml[j] = dmin * (float)(p[j + 4] & 63);
        c->dl[j + 4] = d * (float)((p[j + 8] & 15) | (p[j] >> 6) << 4);
        c->ml[j + 4] = dmin * (float)((p[j + 8] >> 4) | (p[j + 4] >> 6) << 4);
    }
}

/* Sub-block j = e/32 is nibble j%2 of qs[32(j/2) + e%32]. */
static inline qk_vi qk_k4_nibbles(const uint8_t *qs, int e) {
    const int j = e / 32;
    return (qk_u8v(qs + 32 * (j / 2) + e % 32) >> (4 * (j % 2))) & 15;
}

static inline qk_vf qk_grp_q4_k(const uint8_t *s, const qk_ctx *c, int e) {
    return c->dl[e / 32] * qk_cvt(qk_k4_nibbles(s + 16, e)) - c->ml[e / 32];
}

/* Q5_K adds bit e/32 of qh[e % 32] as bit 4. */
static inline qk_vf qk_grp_q5_k(const uint8_t *s, const qk_ctx *c, int e) {
    const qk_vi hb = ((qk_u8v(s + 16 + e % 32) >> (e / 32)) & 1) << 4;
    return c->dl[e / 32] * qk_cvt(qk_k4_nibbles(s + 48, e) | hb) - c->ml[e / 32];
}

/* Q6_K: ql[128], qh[64], int8 scales[16], d. */
static inline void qk_prep_q6_k(const uint8_t *s, qk_ctx *c) {
    const float d = qk_f16_at(s + 208);
    for (int sb = 0; sb < 16; sb++)
        c->dl[sb] = d * (float)(int8_t)s[192 + sb];
}

/* Element e = 128h + 32k + l is nibble k/2 of ql[64h + 32(k%2) + l] plus
 * bits 2k of qh[32h + l] as bits 4-5, minus 32; scale e/16. */
static inline qk_vf qk_grp_q6_k(const uint8_t *s, const qk_ctx *c, int e) {
    const int h = e / 128, k = (e / 32) % 4, l = e % 32;
    const qk_vi lo = (qk_u8v(s + 64 * h + 32 * (k % 2) + l) >> (4 * (k / 2))) & 15;
    const qk_vi hi = (qk_u8v(s + 128 + 32 * h + l) >> (2 * k)) & 3;
    return c->dl[e / 16] * qk_cvt((lo | hi << 4) - 32);
}

static inline void qk_prep_q8_k(const uint8_t *s, qk_ctx *c) { c->d = qk_bits_f32(qk_u32(s)); }

static inline qk_vf qk_grp_q8_k(const uint8_t *s, const qk_ctx *c, int e) {
    return c->d * qk_cvt(qk_s8v(s + 4 + e));
}

/* ---- scalar elements, for the n % 16 tail of plain-type rows ----------- */

static inline float qk_one_f32(const uint8_t *row, uint64_t i) {
    return qk_bits_f32(qk_u32(row + 4 * i));
}
static inline float qk_one_f16(const uint8_t *row, uint64_t i) { return qk_f16_at(row + 2 * i); }
static inline float qk_one_bf16(const uint8_t *row, uint64_t i) {
    return qk_bits_f32(qk_u16(row + 2 * i) << 16);
}
static inline float qk_one_none(const uint8_t *row, uint64_t i) {
    (void)row;
    (void)i;
    return 0.0f;
}

/* ---- the canonical dot ------------------------------------------------ */

/* qdot.h's combine tree over the 16 lanes (vector a holds lanes
 * QV*a .. QV*a + QV-1). Runs once per dot, so plain scalar code. */
static inline float qk_reduce(const qk_vf acc[QACC]) {
    float a[CPU_DOT_LANES], t[8], u[4];
    memcpy(a, acc, sizeof a);
    for (int j = 0; j < 8; j++)
        t[j] = a[j] + a[j + 8];
    for (int j = 0; j < 4; j++)
        u[j] = t[j] + t[j + 4];
    return (u[0] + u[2]) + (u[1] + u[3]);
}

/* qk_reduce on vectors: the same additions of the same values in the
 * same tree, with the first two levels done lane-parallel (lane j of
 * t = a[j] + a[j+8], then of u = t[j] + t[j+4]), so the result is
 * qk_reduce's bit for bit. */
typedef float qk_v4f __attribute__((vector_size(16)));

static inline float qk_reduce_vec(const qk_vf acc[QACC]) {
#if QV == 16
    typedef float qk_v8f __attribute__((vector_size(32)));
    qk_v8f lo, hi;
    memcpy(&lo, &acc[0], sizeof lo);
    memcpy(&hi, (const float *)&acc[0] + 8, sizeof hi);
    const qk_v8f t = lo + hi;
    const qk_v4f u = (qk_v4f){t[0], t[1], t[2], t[3]} + (qk_v4f){t[4], t[5], t[6], t[7]};
#elif QV == 8
    const qk_vf t = acc[0] + acc[1];
    const qk_v4f u = (qk_v4f){t[0], t[1], t[2], t[3]} + (qk_v4f){t[4], t[5], t[6], t[7]};
#else
    const qk_v4f u = (acc[0] + acc[2]) + (acc[1] + acc[3]);
#endif
    return (u[0] + u[2]) + (u[1] + u[3]);
}

/* ---- the f32 tile kernel ----------------------------------------------
 * qk_tile_block adds elements [k0, k1) of MR rows of w times NT rows of x
 * (MR*NT <= 12) into their partial sums. The 16 canonical lanes form QACC
 * groups of QV lanes, and group g (elements 16k + QV*g + l, l < QV) is
 * summed in a pass of its own: a pass keeps just MR*NT accumulator
 * vectors, which stay in registers with room for the loads, and each
 * loaded vector feeds NT (w) or MR (x) products. Every canonical lane
 * still adds its own products in increasing k — chunks in order, and
 * within a chunk — so every result is the canonical dot, bit for bit.
 * The chunk at k0 = 0 starts from +0.0, as the canonical sum does.
 * Chunks of QT_KC elements keep the x rows of a pass in L1 for wide rows.
 * MR and NT are constants in each instance, so the loops unroll fully. */

enum {
    QT_MAX_MR = 8, QT_MAX_NT = 4,
    QT_KC = 512,   /* elements per chunk: 4 x rows of it take 8 KiB */
    QT_ROWS = 24   /* rows whose partial sums one driver pass keeps */
};

/* The partial sums of a row group: [row][x][lane group]. */
typedef qk_vf qk_tile_part[QT_MAX_NT][QACC];

static inline __attribute__((always_inline)) void
qk_tile_block(const float *w, uint64_t ws, const float *x, uint64_t xs, uint64_t k0,
              uint64_t k1, qk_tile_part *part, const int mr, const int nt) {
    for (int g = 0; g < QACC; g++) {
        qk_vf acc[QT_MAX_MR][QT_MAX_NT];
        QK_UNROLL
        for (int r = 0; r < mr; r++)
            QK_UNROLL
            for (int t = 0; t < nt; t++)
                acc[r][t] = k0 == 0 ? (qk_vf){0} : part[r][t][g];
        for (uint64_t i = k0 + (uint64_t)(QV * g); i < k1; i += CPU_DOT_LANES) {
            qk_vf wv[QT_MAX_MR];
            QK_UNROLL
            for (int r = 0; r < mr; r++)
                wv[r] = qk_ldf(w + (uint64_t)r * ws + i);
            QK_UNROLL
            for (int t = 0; t < nt; t++) {
                const qk_vf xv = qk_ldf(x + (uint64_t)t * xs + i);
                QK_UNROLL
                for (int r = 0; r < mr; r++)
                    acc[r][t] += wv[r] * xv;
            }
        }
        QK_UNROLL
        for (int r = 0; r < mr; r++)
            QK_UNROLL
            for (int t = 0; t < nt; t++)
                part[r][t][g] = acc[r][t];
    }
}

#define QK_TILE_SHAPE(MR, NT)                                                        \
    static void qk_tile_##MR##x##NT(const float *w, uint64_t ws, const float *x,     \
                                    uint64_t xs, uint64_t k0, uint64_t k1,           \
                                    qk_tile_part *part) {                            \
        qk_tile_block(w, ws, x, xs, k0, k1, part, MR, NT);                           \
    }
/* Per count of x (1..4), blocks of 12 or 8 accumulators, and smaller
 * ones for the last rows of a group. */
QK_TILE_SHAPE(8, 1)
QK_TILE_SHAPE(4, 1)
QK_TILE_SHAPE(2, 1)
QK_TILE_SHAPE(1, 1)
QK_TILE_SHAPE(4, 2)
QK_TILE_SHAPE(2, 2)
QK_TILE_SHAPE(1, 2)
QK_TILE_SHAPE(3, 3)
QK_TILE_SHAPE(2, 3)
QK_TILE_SHAPE(1, 3)
QK_TILE_SHAPE(3, 4)
QK_TILE_SHAPE(2, 4)
QK_TILE_SHAPE(1, 4)

typedef void (*qk_tile_shape_fn)(const float *w, uint64_t ws, const float *x, uint64_t xs,
                                 uint64_t k0, uint64_t k1, qk_tile_part *part);

/* For each count of x: shapes by descending rows, ending with one row. */
static const struct qk_tile_shape {
    uint32_t mr;
    qk_tile_shape_fn fn;
} qk_tile_shapes[QT_MAX_NT + 1][4] = {
    [1] = {{8, qk_tile_8x1}, {4, qk_tile_4x1}, {2, qk_tile_2x1}, {1, qk_tile_1x1}},
    [2] = {{4, qk_tile_4x2}, {2, qk_tile_2x2}, {1, qk_tile_1x2}, {1, qk_tile_1x2}},
    [3] = {{3, qk_tile_3x3}, {2, qk_tile_2x3}, {1, qk_tile_1x3}, {1, qk_tile_1x3}},
    [4] = {{3, qk_tile_3x4}, {2, qk_tile_2x4}, {1, qk_tile_1x4}, {1, qk_tile_1x4}},
};

/* Rows [0, nr) (nr <= QT_ROWS) of w with nt x: every chunk of every row
 * block, each block the widest shape that fits, then the reduction of
 * each dot into y. */
static void qk_tile_rows(const float *w, uint64_t ws, uint32_t nr, const float *x, uint64_t xs,
                         uint32_t nt, uint64_t n, float *y, uint64_t ys) {
    const struct qk_tile_shape *sh = qk_tile_shapes[nt];
    qk_tile_part part[QT_ROWS]; /* the first chunk starts from zero */
    for (uint64_t k0 = 0; k0 < n; k0 += QT_KC) {
        const uint64_t k1 = n - k0 < QT_KC ? n : k0 + QT_KC;
        for (uint32_t r = 0, i = 0; r < nr; r += sh[i].mr) {
            while (sh[i].mr > nr - r)
                i++;
            sh[i].fn(w + (uint64_t)r * ws, ws, x, xs, k0, k1, part + r);
        }
    }
    for (uint32_t r = 0; r < nr; r++)
        for (uint32_t t = 0; t < nt; t++)
            y[(uint64_t)t * ys + r] = qk_reduce_vec(part[r][t]);
}

/* cpu_tile_f32_fn: x in groups of up to 4, rows in groups of QT_ROWS.
 * The rows of a call should fit in L2: they are read once per x group. */
static void qk_tile_f32(const float *w, uint64_t ws, uint32_t n_rows, const float *x,
                        uint64_t xs, uint32_t n_x, uint64_t n, float *y, uint64_t ys) {
    if (n == 0) { /* no chunk: every dot is the sum of nothing, +0.0 */
        for (uint32_t t = 0; t < n_x; t++)
            memset(y + (uint64_t)t * ys, 0, n_rows * sizeof(float));
        return;
    }
    for (uint32_t t = 0; t < n_x;) {
        const uint32_t nt = n_x - t < QT_MAX_NT ? n_x - t : QT_MAX_NT;
        for (uint32_t r = 0; r < n_rows; r += QT_ROWS)
            qk_tile_rows(w + (uint64_t)r * ws, ws, n_rows - r < QT_ROWS ? n_rows - r : QT_ROWS,
                         x + (uint64_t)t * xs, xs, nt, n, y + (uint64_t)t * ys + r, ys);
        t += nt;
    }
}

/* The last n % 16 elements of a plain-type row, as one padded chunk: pad
 * lanes get w = -0.0 and x = +0.0, whose product -0.0 leaves every
 * accumulator exactly as it was (a + -0.0 == a, signed zeros included),
 * which is the canonical order's "no term for that lane". */
#define QK_TAIL(ONE, NX)                                                            \
    do {                                                                            \
        float wt[16], xt[16];                                                       \
        const uint64_t i0 = nb * 16, rem = n - i0;                                  \
        for (int l = 0; l < 16; l++)                                                \
            wt[l] = (uint64_t)l < rem ? ONE(row, i0 + (uint64_t)l) : -0.0f;         \
        for (int t = 0; t < (NX); t++) {                                            \
            for (int l = 0; l < 16; l++)                                            \
                xt[l] = (uint64_t)l < rem ? x[(uint64_t)t * xs + i0 + (uint64_t)l] : 0.0f; \
            for (int a = 0; a < QACC; a++)                                          \
                acc[t][a] += qk_ldf(wt + QV * a) * qk_ldf(xt + QV * a);             \
        }                                                                           \
    } while (0)

/* QK_DOT_NX: out[t] = canonical dot of the row with x + t*xs, t < NX. Each
 * group of a block is dequantized once and used by all NX rows of x;
 * element e lands in accumulator vector (e / QV) % QACC, lane e % QV,
 * i.e. canonical lane e % 16. The t loop is unrolled too, so that every
 * accumulator index is a constant and acc stays in registers. */
#define QK_DOT_NX(name, PREP, BE, BB, NX, ONE, TAIL)                                 \
    static void qk_dot_##name##_x##NX(const uint8_t *row, const float *x, uint64_t xs, \
                                      uint64_t n, float *out) {                      \
        qk_vf acc[NX][QACC];                                                         \
        qk_ctx c;                                                                    \
        memset(acc, 0, sizeof acc);                                                  \
        const uint64_t nb = n / (BE);                                                \
        for (uint64_t b = 0; b < nb; b++) {                                          \
            const uint8_t *src = row + b * (BB);                                     \
            const float *xb = x + b * (BE);                                          \
            PREP(src, &c);                                                           \
            QK_UNROLL                                                                \
            for (int e = 0; e < (BE); e += QV) {                                     \
                const qk_vf w = qk_grp_##name(src, &c, e);                           \
                QK_UNROLL                                                            \
                for (int t = 0; t < (NX); t++)                                       \
                    acc[t][(e / QV) % QACC] += w * qk_ldf(xb + (uint64_t)t * xs + e); \
            }                                                                        \
        }                                                                            \
        if ((TAIL) && n % (BE) != 0)                                                 \
            QK_TAIL(ONE, NX);                                                        \
        for (int t = 0; t < (NX); t++)                                               \
            out[t] = qk_reduce(acc[t]);                                              \
    }

/* QK_DOTS: the x1, x2 and x4 dots and the multi-x driver of one type (two
 * query heads per KV head, as Gemma 2 2B has, take x2). TAIL:
 * 1 for plain types (rows of any length). */
#define QK_DOTS(name, PREP, BE, BB, ONE, TAIL)                                        \
    QK_DOT_NX(name, PREP, BE, BB, 1, ONE, TAIL)                                      \
    QK_DOT_NX(name, PREP, BE, BB, 2, ONE, TAIL)                                      \
    QK_DOT_NX(name, PREP, BE, BB, 4, ONE, TAIL)                                      \
    static void qk_dot_##name(const uint8_t *row, const float *x, uint64_t xs,       \
                              uint32_t n_x, uint64_t n, float *out) {                \
        uint32_t t = 0;                                                              \
        for (; t + 4 <= n_x; t += 4)                                                 \
            qk_dot_##name##_x4(row, x + (uint64_t)t * xs, xs, n, out + t);           \
        for (; t + 2 <= n_x; t += 2)                                                 \
            qk_dot_##name##_x2(row, x + (uint64_t)t * xs, xs, n, out + t);           \
        for (; t < n_x; t++)                                                         \
            qk_dot_##name##_x1(row, x + (uint64_t)t * xs, xs, n, out + t);           \
    }

/* QK_DEQ: the row dequantizer of one type, group by group. */
#define QK_DEQ(name, PREP, BE, BB, ONE)                                               \
    static void qk_deq_##name(const uint8_t *src, float *dst, uint64_t n) {          \
        qk_ctx c;                                                                    \
        const uint64_t nb = n / (BE);                                                \
        for (uint64_t b = 0; b < nb; b++) {                                          \
            PREP(src + b * (BB), &c);                                                \
            QK_UNROLL                                                                \
            for (int e = 0; e < (BE); e += QV) {                                     \
                const qk_vf w = qk_grp_##name(src + b * (BB), &c, e);                \
                memcpy(dst + b * (BE) + e, &w, sizeof w);                            \
            }                                                                        \
        }                                                                            \
        for (uint64_t i = nb * (BE); i < n; i++)                                     \
            dst[i] = ONE(src, i);                                                    \
    }

#define QK_TYPE(name, PREP, BE, BB, ONE, TAIL)                                        \
    QK_DOTS(name, PREP, BE, BB, ONE, TAIL)                                           \
    QK_DEQ(name, PREP, BE, BB, ONE)

QK_TYPE(f32, qk_prep_none, 16, 64, qk_one_f32, 1)
QK_TYPE(f16, qk_prep_none, 16, 32, qk_one_f16, 1)
QK_TYPE(bf16, qk_prep_none, 16, 32, qk_one_bf16, 1)
QK_TYPE(q4_0, qk_prep_d, 32, 18, qk_one_none, 0)
QK_TYPE(q4_1, qk_prep_dm, 32, 20, qk_one_none, 0)
QK_TYPE(q5_0, qk_prep_d, 32, 22, qk_one_none, 0)
QK_TYPE(q5_1, qk_prep_dm, 32, 24, qk_one_none, 0)
QK_TYPE(q8_0, qk_prep_d, 32, 34, qk_one_none, 0)
QK_TYPE(q2_k, qk_prep_q2_k, 256, 84, qk_one_none, 0)
QK_TYPE(q3_k, qk_prep_q3_k, 256, 110, qk_one_none, 0)
QK_TYPE(q4_k, qk_prep_k4, 256, 144, qk_one_none, 0)
QK_TYPE(q5_k, qk_prep_k4, 256, 176, qk_one_none, 0)
QK_DOTS(q6_k, qk_prep_q6_k, 256, 210, qk_one_none, 0)
QK_TYPE(q8_k, qk_prep_q8_k, 256, 292, qk_one_none, 0)

/* ---- Q6_K's row dequantizer ---------------------------------------------
 * The tiled matmul dequantizes whole rows, and Q6_K's group function
 * (two byte loads, widened and shifted per group) is its slowest. The
 * row loop below assembles the same 6-bit integers QB bytes at a time
 * with byte-wide operations, then widens and scales them by the same
 * formula as qk_grp_q6_k, so the values are the same bit for bit. (The
 * same treatment measured no faster for Q8_0 and Q4_K, whose group
 * functions are already a load and an extension or two.) */

/* QB bytes in a vector register (32 with AVX2 and AVX-512: Q6_K's runs
 * are 32 bytes long; else 16). */
#if QV == 16
#define QB 32
#else
#define QB (4 * QV)
#endif
typedef uint8_t qk_vb __attribute__((vector_size(QB)));

static inline qk_vb qk_ldb(const uint8_t *p) {
    qk_vb v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Bytes e..e+QV-1 of v (e a multiple of QV), sign-extended. */
#if QV == 16
static inline qk_vi qk_vb_s8v(qk_vb v, int e) {
    const __m256i b = (__m256i)v;
    const __m128i h = e < 16 ? _mm256_castsi256_si128(b) : _mm256_extracti128_si256(b, 1);
    return (qk_vi)_mm512_cvtepi8_epi32(h);
}
#elif defined(__AVX2__) || defined(QDOT_AVX2)
static inline __m128i qk_vb_half8(qk_vb v, int e) {
    const __m256i b = (__m256i)v;
    const __m128i h = e < 16 ? _mm256_castsi256_si128(b) : _mm256_extracti128_si256(b, 1);
    return e % 16 != 0 ? _mm_unpackhi_epi64(h, h) : h;
}
static inline qk_vi qk_vb_s8v(qk_vb v, int e) {
    return (qk_vi)_mm256_cvtepi8_epi32(qk_vb_half8(v, e));
}
#else
static inline qk_vi qk_vb_s8v(qk_vb v, int e) {
    uint8_t b[QB];
    memcpy(b, &v, sizeof b);
    return qk_s8v(b + e);
}
#endif

/* Q6_K: for half h and bytes l..l+QB-1 of its 32-byte runs, A = ql[64h+l..],
 * B = ql[64h+32+l..] and H = qh[32h+l..]; run k (elements 128h + 32k + l)
 * is nibble k/2 of A or B (k%2) with bits 2k..2k+1 of H above it
 * (qk_grp_q6_k), minus 32 as a signed byte. */
static void qk_deq_q6_k(const uint8_t *src, float *dst, uint64_t n) {
    qk_ctx c;
    for (uint64_t b = 0; b < n / 256; b++) {
        const uint8_t *s = src + b * 210;
        float *o = dst + b * 256;
        qk_prep_q6_k(s, &c);
        QK_UNROLL
        for (int hl = 0; hl < 64; hl += QB) {
            const int h = hl / 32, l = hl % 32;
            const qk_vb a = qk_ldb(s + 64 * h + l), bq = qk_ldb(s + 64 * h + 32 + l);
            const qk_vb hb = qk_ldb(s + 128 + 32 * h + l);
            const qk_vb q[4] = {
                ((a & 15) | ((hb << 4) & 0x30)) - 32, ((bq & 15) | ((hb << 2) & 0x30)) - 32,
                ((a >> 4) | (hb & 0x30)) - 32, ((bq >> 4) | ((hb >> 2) & 0x30)) - 32,
            };
            QK_UNROLL
            for (int k = 0; k < 4; k++) {
                QK_UNROLL
                for (int e = 0; e < QB; e += QV) {
                    const int el = 128 * h + 32 * k + l + e;
                    const qk_vf w = c.dl[el / 16] * qk_cvt(qk_vb_s8v(q[k], e));
                    memcpy(o + el, &w, sizeof w);
                }
            }
        }
    }
}

/* The canonical dot of two f32 arrays (attention scores). */
static float qk_dot_f32_plain(const float *a, const float *b, uint64_t n) {
    float out;
    qk_dot_f32_x1((const uint8_t *)a, b, 0, n, &out);
    return out;
}

#define QK_ENTRY(id, name) [id] = {qk_deq_##name, qk_dot_##name}

const cpu_qkernel *QDOT_TABLE_FN(cpu_dot_f32_fn *dot_f32, cpu_tile_f32_fn *tile_f32) {
    static const cpu_qkernel table[SW_TYPE_COUNT] = {
        QK_ENTRY(SW_TYPE_F32, f32),   QK_ENTRY(SW_TYPE_F16, f16),
        QK_ENTRY(SW_TYPE_BF16, bf16), QK_ENTRY(SW_TYPE_Q4_0, q4_0),
        QK_ENTRY(SW_TYPE_Q4_1, q4_1), QK_ENTRY(SW_TYPE_Q5_0, q5_0),
        QK_ENTRY(SW_TYPE_Q5_1, q5_1), QK_ENTRY(SW_TYPE_Q8_0, q8_0),
        QK_ENTRY(SW_TYPE_Q2_K, q2_k), QK_ENTRY(SW_TYPE_Q3_K, q3_k),
        QK_ENTRY(SW_TYPE_Q4_K, q4_k), QK_ENTRY(SW_TYPE_Q5_K, q5_k),
        QK_ENTRY(SW_TYPE_Q6_K, q6_k), QK_ENTRY(SW_TYPE_Q8_K, q8_k),
    };
    *dot_f32 = qk_dot_f32_plain;
    *tile_f32 = qk_tile_f32;
    return table;
}
