/*
 * qdot_body.h — the fast per-type block dequantizers and dot kernels,
 * written once with GNU C vector extensions (GCC >= 9, clang) and compiled
 * once per instruction set: qdot.c includes it for the baseline ISA and
 * qdot_avx2.c under `#pragma GCC target("avx2")`. A vector here is 8 f32
 * lanes; the canonical 16 accumulators of qdot.h are two such vectors, so
 * each lane performs exactly the canonical operations in the canonical
 * order and the results equal the reference (qdot.c, CPU_ISA_REF) bit for
 * bit. tests/test_cpu_ops.c checks that for every type and ISA.
 *
 * Every block formula is quant/dequant.c's (same roundings, no algebraic
 * rewrite): d*q, d*q + m, (d*sc)*q - (dmin*m). The f16 conversion is
 * branch-free and exact for all 65536 inputs, NaN payloads included; it
 * relies on the default FP environment (no FTZ/DAZ). The includer defines
 * QDOT_TABLE_FN, the name of the one function this body exports.
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

/* Every function that takes or returns a 32-byte vector is static, so
 * GCC's note that their calling convention depends on AVX (baseline build)
 * concerns no external interface. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

typedef float qk_v8f __attribute__((vector_size(32)));
typedef int32_t qk_v8i __attribute__((vector_size(32)));
typedef uint32_t qk_v8u __attribute__((vector_size(32)));
typedef uint16_t qk_v8h __attribute__((vector_size(16)));
typedef uint8_t qk_v8b __attribute__((vector_size(8)));
typedef int8_t qk_v8sb __attribute__((vector_size(8)));

/* ---- loads and conversions -------------------------------------------- */

static inline qk_v8f qk_ld8f(const float *p) {
    qk_v8f v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* 8 bytes -> 8 int32 lanes. GCC 12 lowers __builtin_convertvector from an
 * 8-byte vector through general registers, so x86 builds use the widening
 * instructions directly; the integer results are the same either way. */
#if defined(__AVX2__)
static inline qk_v8i qk_u8x8(const uint8_t *p) {
    return (qk_v8i)_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p));
}
static inline qk_v8i qk_s8x8(const uint8_t *p) {
    return (qk_v8i)_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p));
}
#elif defined(__SSE2__)
/* Two 4-lane halves: unpack with zeros (u8) or with the sign (s8). */
static inline qk_v8i qk_join4(__m128i lo, __m128i hi) {
    qk_v8i v;
    memcpy(&v, &lo, 16);
    memcpy((char *)&v + 16, &hi, 16);
    return v;
}
static inline qk_v8i qk_u8x8(const uint8_t *p) {
    const __m128i z = _mm_setzero_si128();
    const __m128i w = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(const void *)p), z);
    return qk_join4(_mm_unpacklo_epi16(w, z), _mm_unpackhi_epi16(w, z));
}
static inline qk_v8i qk_s8x8(const uint8_t *p) {
    const __m128i b = _mm_loadl_epi64((const __m128i *)(const void *)p);
    const __m128i w = _mm_srai_epi16(_mm_unpacklo_epi8(b, b), 8);
    return qk_join4(_mm_srai_epi32(_mm_unpacklo_epi16(w, w), 16),
                    _mm_srai_epi32(_mm_unpackhi_epi16(w, w), 16));
}
#else
static inline qk_v8i qk_u8x8(const uint8_t *p) {
    qk_v8b b;
    memcpy(&b, p, sizeof b);
    return __builtin_convertvector(b, qk_v8i);
}
static inline qk_v8i qk_s8x8(const uint8_t *p) {
    qk_v8sb b;
    memcpy(&b, p, sizeof b);
    return __builtin_convertvector(b, qk_v8i);
}
#endif

static inline qk_v8f qk_cvt(qk_v8i v) { return __builtin_convertvector(v, qk_v8f); }

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

/* The same conversion on 8 lanes (comparisons give all-ones masks). */
static inline qk_v8f qk_f16x8(const uint8_t *p) {
    qk_v8h hv;
    memcpy(&hv, p, sizeof hv);
    const qk_v8u h = __builtin_convertvector(hv, qk_v8u);
    qk_v8u o = (h & 0x7fffu) << 13;
    const qk_v8u e = o & 0x0f800000u;
    o += (qk_v8u)(e == 0x0f800000u) & (112u << 23);
    o += 112u << 23;
    const qk_v8f sub = (qk_v8f)(o + (1u << 23)) - qk_bits_f32(113u << 23);
    const qk_v8u is_sub = (qk_v8u)(e == 0u);
    const qk_v8u mag = (is_sub & (qk_v8u)sub) | (~is_sub & o);
    return (qk_v8f)(mag | (h & 0x8000u) << 16);
}

static inline qk_v8f qk_bf16x8(const uint8_t *p) {
    qk_v8h hv;
    memcpy(&hv, p, sizeof hv);
    return (qk_v8f)(__builtin_convertvector(hv, qk_v8u) << 16);
}

/* ---- blocks: a prep per block, then 8-element groups -------------------
 * qk_prep_<type>(src, &c) decodes a block's scales into c; then
 * qk_grp_<type>(src, &c, g) returns elements 8g..8g+7. Kernels call the
 * group function inside a fully unrolled loop and use each group at once,
 * so dequantized values live in registers, never in a stack buffer. */

typedef struct qk_ctx {
    float d, m;           /* block scale and offset (32-element types) */
    float dl[16], ml[16]; /* per sub-block scale and min (K-quants), by g/2 or g/4 */
} qk_ctx;

static inline void qk_prep_none(const uint8_t *s, qk_ctx *c) {
    (void)s;
    (void)c;
}

static inline qk_v8f qk_grp_f32(const uint8_t *s, const qk_ctx *c, int g) {
    (void)c;
    qk_v8f v;
    memcpy(&v, s + 32 * g, sizeof v);
    return v;
}

static inline qk_v8f qk_grp_f16(const uint8_t *s, const qk_ctx *c, int g) {
    (void)c;
    return qk_f16x8(s + 16 * g);
}

static inline qk_v8f qk_grp_bf16(const uint8_t *s, const qk_ctx *c, int g) {
    (void)c;
    return qk_bf16x8(s + 16 * g);
}

static inline void qk_prep_d(const uint8_t *s, qk_ctx *c) { c->d = qk_f16_at(s); }

static inline void qk_prep_dm(const uint8_t *s, qk_ctx *c) {
    c->d = qk_f16_at(s);
    c->m = qk_f16_at(s + 2);
}

/* Nibbles of a 32-block: elements 0..15 are the low nibbles of qs[0..15],
 * 16..31 the high ones. */
static inline qk_v8i qk_nibbles(const uint8_t *qs, int g) {
    const qk_v8i q = qk_u8x8(qs + 8 * (g & 1));
    return g < 2 ? (q & 15) : (q >> 4);
}

static inline qk_v8f qk_grp_q4_0(const uint8_t *s, const qk_ctx *c, int g) {
    return c->d * qk_cvt(qk_nibbles(s + 2, g) - 8);
}

static inline qk_v8f qk_grp_q4_1(const uint8_t *s, const qk_ctx *c, int g) {
    return c->d * qk_cvt(qk_nibbles(s + 4, g)) + c->m;
}

/* Q5: bit (8g + lane) of qh becomes bit 4 of the value; tested against a
 * lane mask, since baseline SSE2 has no per-lane shift. */
static inline qk_v8i qk_q5(const uint8_t *qh, const uint8_t *qs, int g) {
    const qk_v8i lane_bit = {1, 2, 4, 8, 16, 32, 64, 128};
    const qk_v8i hb = (qk_v8i){0} + (int32_t)qh[g];
    return qk_nibbles(qs, g) | (((hb & lane_bit) != 0) & 16);
}

static inline qk_v8f qk_grp_q5_0(const uint8_t *s, const qk_ctx *c, int g) {
    return c->d * qk_cvt(qk_q5(s + 2, s + 6, g) - 16);
}

static inline qk_v8f qk_grp_q5_1(const uint8_t *s, const qk_ctx *c, int g) {
    return c->d * qk_cvt(qk_q5(s + 4, s + 8, g)) + c->m;
}

static inline qk_v8f qk_grp_q8_0(const uint8_t *s, const qk_ctx *c, int g) {
    return c->d * qk_cvt(qk_s8x8(s + 2 + 8 * g));
}

/* Q2_K: scales[16] (low nibble scale, high nibble min), qs[64], d, dmin. */
static inline void qk_prep_q2_k(const uint8_t *s, qk_ctx *c) {
    const float d = qk_f16_at(s + 80), dmin = qk_f16_at(s + 82);
    for (int sb = 0; sb < 16; sb++) {
        c->dl[sb] = d * (float)(s[sb] & 15);
        c->ml[sb] = dmin * (float)(s[sb] >> 4);
    }
}

/* Q2_K/Q3_K 2-bit fields: element 128h + 32s + l is bits 2s of
 * qs[32h + l]; group g = 16h + 4s + l/8; sub-block (scale) g/2. */
static inline qk_v8i qk_crumbs(const uint8_t *qs, int g) {
    const int h = g / 16, s = (g / 4) % 4, l8 = g % 4;
    return (qk_u8x8(qs + 32 * h + 8 * l8) >> (2 * s)) & 3;
}

static inline qk_v8f qk_grp_q2_k(const uint8_t *s, const qk_ctx *c, int g) {
    return c->dl[g / 2] * qk_cvt(qk_crumbs(s + 16, g)) - c->ml[g / 2];
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

/* Q3_K value: the 2-bit field minus 4 where bit (4h + s) of hmask[l] is
 * clear. */
static inline qk_v8f qk_grp_q3_k(const uint8_t *s, const qk_ctx *c, int g) {
    const int bit = 4 * (g / 16) + (g / 4) % 4;
    const qk_v8i hb = (qk_u8x8(s + 8 * (g % 4)) >> bit) & 1;
    return c->dl[g / 2] * qk_cvt(qk_crumbs(s + 32, g) - ((hb ^ 1) << 2));
}

/* Q4_K/Q5_K: 8 unsigned 6-bit scale/min pairs packed in 12 bytes; the
 * factors dl = d*sc, ml = dmin*mn are rounded first, as the reference. */
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

/* Sub-block j = g/4 (32 values) is nibble j%2 of qs[32(j/2) + l]. */
static inline qk_v8i qk_k4_nibbles(const uint8_t *qs, int g) {
    const int j = g / 4;
    return (qk_u8x8(qs + 32 * (j / 2) + 8 * (g % 4)) >> (4 * (j % 2))) & 15;
}

static inline qk_v8f qk_grp_q4_k(const uint8_t *s, const qk_ctx *c, int g) {
    return c->dl[g / 4] * qk_cvt(qk_k4_nibbles(s + 16, g)) - c->ml[g / 4];
}

/* Q5_K adds bit j of qh[l] as bit 4. */
static inline qk_v8f qk_grp_q5_k(const uint8_t *s, const qk_ctx *c, int g) {
    const qk_v8i hb = ((qk_u8x8(s + 16 + 8 * (g % 4)) >> (g / 4)) & 1) << 4;
    return c->dl[g / 4] * qk_cvt(qk_k4_nibbles(s + 48, g) | hb) - c->ml[g / 4];
}

/* Q6_K: ql[128], qh[64], int8 scales[16], d. */
static inline void qk_prep_q6_k(const uint8_t *s, qk_ctx *c) {
    const float d = qk_f16_at(s + 208);
    for (int sb = 0; sb < 16; sb++)
        c->dl[sb] = d * (float)(int8_t)s[192 + sb];
}

/* Element 128h + 32k + l is nibble k/2 of ql[64h + 32(k%2) + l] plus bits
 * 2k of qh[32h + l] as bits 4-5, minus 32; group 16h + 4k + l/8. */
static inline qk_v8f qk_grp_q6_k(const uint8_t *s, const qk_ctx *c, int g) {
    const int h = g / 16, k = (g / 4) % 4, l8 = g % 4;
    const qk_v8i lo = (qk_u8x8(s + 64 * h + 32 * (k % 2) + 8 * l8) >> (4 * (k / 2))) & 15;
    const qk_v8i hi = (qk_u8x8(s + 128 + 32 * h + 8 * l8) >> (2 * k)) & 3;
    return c->dl[g / 2] * qk_cvt((lo | hi << 4) - 32);
}

static inline void qk_prep_q8_k(const uint8_t *s, qk_ctx *c) { c->d = qk_bits_f32(qk_u32(s)); }

static inline qk_v8f qk_grp_q8_k(const uint8_t *s, const qk_ctx *c, int g) {
    return c->d * qk_cvt(qk_s8x8(s + 4 + 8 * g));
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

/* qdot.h's combine tree: lanes 0-7 are a0, lanes 8-15 are a1. */
static inline float qk_reduce(qk_v8f a0, qk_v8f a1) {
    const qk_v8f t = a0 + a1;
    const float u0 = t[0] + t[4], u1 = t[1] + t[5], u2 = t[2] + t[6], u3 = t[3] + t[7];
    return (u0 + u2) + (u1 + u3);
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
            acc[t][0] += qk_ld8f(wt) * qk_ld8f(xt);                                 \
            acc[t][1] += qk_ld8f(wt + 8) * qk_ld8f(xt + 8);                         \
        }                                                                           \
    } while (0)

/* QK_DOT_NX: out[t] = canonical dot of the row with x + t*xs, t < NX. Each
 * group of a block is dequantized once and used by all NX rows of x. */
#define QK_DOT_NX(name, PREP, BE, BB, NX, ONE, TAIL)                                 \
    static void qk_dot_##name##_x##NX(const uint8_t *row, const float *x, uint64_t xs, \
                                      uint64_t n, float *out) {                      \
        qk_v8f acc[NX][2];                                                           \
        qk_ctx c;                                                                    \
        for (int t = 0; t < (NX); t++)                                               \
            acc[t][0] = acc[t][1] = (qk_v8f){0};                                     \
        const uint64_t nb = n / (BE);                                                \
        for (uint64_t b = 0; b < nb; b++) {                                          \
            const uint8_t *src = row + b * (BB);                                     \
            const float *xb = x + b * (BE);                                          \
            PREP(src, &c);                                                           \
            for (int g = 0; g < (BE) / 8; g++) {                                     \
                const qk_v8f w = qk_grp_##name(src, &c, g);                          \
                for (int t = 0; t < (NX); t++)                                       \
                    acc[t][g & 1] += w * qk_ld8f(xb + (uint64_t)t * xs + 8 * g);      \
            }                                                                        \
        }                                                                            \
        if ((TAIL) && n % (BE) != 0)                                                 \
            QK_TAIL(ONE, NX);                                                        \
        for (int t = 0; t < (NX); t++)                                               \
            out[t] = qk_reduce(acc[t][0], acc[t][1]);                                \
    }

/* QK_TYPE: the x1 and x4 dots, the multi-x driver and the row dequantizer
 * of one type. TAIL: 1 for plain types (rows of any length). */
#define QK_TYPE(name, PREP, BE, BB, ONE, TAIL)                                        \
    QK_DOT_NX(name, PREP, BE, BB, 1, ONE, TAIL)                                      \
    QK_DOT_NX(name, PREP, BE, BB, 4, ONE, TAIL)                                      \
    static void qk_dot_##name(const uint8_t *row, const float *x, uint64_t xs,       \
                              uint32_t n_x, uint64_t n, float *out) {                \
        uint32_t t = 0;                                                              \
        for (; t + 4 <= n_x; t += 4)                                                 \
            qk_dot_##name##_x4(row, x + (uint64_t)t * xs, xs, n, out + t);           \
        for (; t < n_x; t++)                                                         \
            qk_dot_##name##_x1(row, x + (uint64_t)t * xs, xs, n, out + t);           \
    }                                                                                \
    static void qk_deq_##name(const uint8_t *src, float *dst, uint64_t n) {          \
        qk_ctx c;                                                                    \
        const uint64_t nb = n / (BE);                                                \
        for (uint64_t b = 0; b < nb; b++) {                                          \
            PREP(src + b * (BB), &c);                                                \
            for (int g = 0; g < (BE) / 8; g++) {                                     \
                const qk_v8f w = qk_grp_##name(src + b * (BB), &c, g);               \
                memcpy(dst + b * (BE) + 8 * g, &w, sizeof w);                        \
            }                                                                        \
        }                                                                            \
        for (uint64_t i = nb * (BE); i < n; i++)                                     \
            dst[i] = ONE(src, i);                                                    \
    }

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
QK_TYPE(q6_k, qk_prep_q6_k, 256, 210, qk_one_none, 0)
QK_TYPE(q8_k, qk_prep_q8_k, 256, 292, qk_one_none, 0)

/* The canonical dot of two f32 arrays (attention scores). */
static float qk_dot_f32_plain(const float *a, const float *b, uint64_t n) {
    float out;
    qk_dot_f32_x1((const uint8_t *)a, b, 0, n, &out);
    return out;
}

#define QK_ENTRY(id, name) [id] = {qk_deq_##name, qk_dot_##name}

const cpu_qkernel *QDOT_TABLE_FN(cpu_dot_f32_fn *dot_f32) {
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
    return table;
}
