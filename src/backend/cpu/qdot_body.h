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

/* ---- block dequantizers: src -> w[block_elems / 8] --------------------- */

static inline void qk_blk_f32(const uint8_t *s, qk_v8f w[2]) {
    memcpy(w, s, 2 * sizeof(qk_v8f));
}

static inline void qk_blk_f16(const uint8_t *s, qk_v8f w[2]) {
    w[0] = qk_f16x8(s);
    w[1] = qk_f16x8(s + 16);
}

static inline void qk_blk_bf16(const uint8_t *s, qk_v8f w[2]) {
    w[0] = qk_bf16x8(s);
    w[1] = qk_bf16x8(s + 16);
}

/* Nibbles of a 32-block: elements 0..15 are the low nibbles of qs[0..15],
 * 16..31 the high ones; group g holds elements 8g..8g+7. */
static inline qk_v8i qk_nibbles(const uint8_t *qs, int g) {
    const qk_v8i q = qk_u8x8(qs + 8 * (g & 1));
    return g < 2 ? (q & 15) : (q >> 4);
}

static inline void qk_blk_q4_0(const uint8_t *s, qk_v8f w[4]) {
    const float d = qk_f16_at(s);
    for (int g = 0; g < 4; g++)
        w[g] = d * qk_cvt(qk_nibbles(s + 2, g) - 8);
}

static inline void qk_blk_q4_1(const uint8_t *s, qk_v8f w[4]) {
    const float d = qk_f16_at(s), m = qk_f16_at(s + 2);
    for (int g = 0; g < 4; g++)
        w[g] = d * qk_cvt(qk_nibbles(s + 4, g)) + m;
}

/* Q5: bit (8g + lane) of qh becomes bit 4 of the value; tested against a
 * lane mask, since baseline SSE2 has no per-lane shift. */
static inline qk_v8i qk_q5(const uint8_t *qh, const uint8_t *qs, int g) {
    const qk_v8i lane_bit = {1, 2, 4, 8, 16, 32, 64, 128};
    const qk_v8i hb = (qk_v8i){0} + (int32_t)((qk_u32(qh) >> (8 * g)) & 255u);
    return qk_nibbles(qs, g) | (((hb & lane_bit) != 0) & 16);
}

static inline void qk_blk_q5_0(const uint8_t *s, qk_v8f w[4]) {
    const float d = qk_f16_at(s);
    for (int g = 0; g < 4; g++)
        w[g] = d * qk_cvt(qk_q5(s + 2, s + 6, g) - 16);
}

static inline void qk_blk_q5_1(const uint8_t *s, qk_v8f w[4]) {
    const float d = qk_f16_at(s), m = qk_f16_at(s + 2);
    for (int g = 0; g < 4; g++)
        w[g] = d * qk_cvt(qk_q5(s + 4, s + 8, g)) + m;
}

static inline void qk_blk_q8_0(const uint8_t *s, qk_v8f w[4]) {
    const float d = qk_f16_at(s);
    for (int g = 0; g < 4; g++)
        w[g] = d * qk_cvt(qk_s8x8(s + 2 + 8 * g));
}

/* Q2_K/Q3_K 2-bit fields: element 128h + 32s + l is bits 2s of
 * qs[32h + l]; group g = 16h + 4s + l/8; sub-block (scale) g/2. */
static inline qk_v8i qk_crumbs(const uint8_t *qs, int g) {
    const int h = g / 16, s = (g / 4) % 4, l8 = g % 4;
    return (qk_u8x8(qs + 32 * h + 8 * l8) >> (2 * s)) & 3;
}

static inline void qk_blk_q2_k(const uint8_t *s, qk_v8f w[32]) {
    float dl[16], ml[16];
    const float d = qk_f16_at(s + 80), dmin = qk_f16_at(s + 82);
    for (int sb = 0; sb < 16; sb++) {
        dl[sb] = d * (float)(s[sb] & 15);
        ml[sb] = dmin * (float)(s[sb] >> 4);
    }
    for (int g = 0; g < 32; g++)
        w[g] = dl[g / 2] * qk_cvt(qk_crumbs(s + 16, g)) - ml[g / 2];
}

/* Q3_K: the 2-bit value minus 4 where bit (4h + s) of hmask[l] is clear;
 * 16 signed 6-bit scales (low 4 bits from s[0..7] nibbles, high 2 bits
 * from s[8..11]), bias 32. */
static inline void qk_blk_q3_k(const uint8_t *s, qk_v8f w[32]) {
    const uint8_t *hmask = s, *s12 = s + 96;
    float dl[16];
    const float d = qk_f16_at(s + 108);
    for (int sb = 0; sb < 16; sb++) {
        const int lo4 = sb < 8 ? (s12[sb] & 15) : (s12[sb - 8] >> 4);
        const int hi2 = (s12[8 + sb % 4] >> (2 * (sb / 4))) & 3;
        dl[sb] = d * (float)((lo4 | hi2 << 4) - 32);
    }
    for (int g = 0; g < 32; g++) {
        const int bit = 4 * (g / 16) + (g / 4) % 4;
        const qk_v8i hb = (qk_u8x8(hmask + 8 * (g % 4)) >> bit) & 1;
        w[g] = dl[g / 2] * qk_cvt(qk_crumbs(s + 32, g) - ((hb ^ 1) << 2));
    }
}

/* Q4_K/Q5_K scales and mins: 8 unsigned 6-bit pairs packed in 12 bytes. */
static inline void qk_scale_min_k4(const uint8_t *s, int sc[8], int mn[8]) {
    for (int j = 0; j < 4; j++) {
        sc[j] = s[j] & 63;
        mn[j] = s[j + 4] & 63;
        sc[j + 4] = (s[j + 8] & 15) | (s[j] >> 6) << 4;
        mn[j + 4] = (s[j + 8] >> 4) | (s[j + 4] >> 6) << 4;
    }
}

/* Q4_K/Q5_K: sub-block j (32 values, groups 4j..4j+3) is nibble j%2 of
 * qs[32(j/2) + l]; qh (Q5_K, else NULL) adds bit j of qh[l] as bit 4. */
static inline void qk_blk_k4(const uint8_t *s, const uint8_t *qh, const uint8_t *qs,
                             qk_v8f w[32]) {
    int sc[8], mn[8];
    const float d = qk_f16_at(s), dmin = qk_f16_at(s + 2);
    qk_scale_min_k4(s + 4, sc, mn);
    for (int j = 0; j < 8; j++) {
        const float dl = d * (float)sc[j], ml = dmin * (float)mn[j];
        for (int gg = 0; gg < 4; gg++) {
            qk_v8i q = (qk_u8x8(qs + 32 * (j / 2) + 8 * gg) >> (4 * (j % 2))) & 15;
            if (qh != NULL)
                q |= ((qk_u8x8(qh + 8 * gg) >> j) & 1) << 4;
            w[4 * j + gg] = dl * qk_cvt(q) - ml;
        }
    }
}

static inline void qk_blk_q4_k(const uint8_t *s, qk_v8f w[32]) {
    qk_blk_k4(s, NULL, s + 16, w);
}

static inline void qk_blk_q5_k(const uint8_t *s, qk_v8f w[32]) {
    qk_blk_k4(s, s + 16, s + 48, w);
}

/* Q6_K: element 128h + 32k + l is nibble k/2 of ql[64h + 32(k%2) + l]
 * plus bits 2k of qh[32h + l] as bits 4-5, minus 32; group 16h + 4k + l/8,
 * int8 scale g/2. */
static inline void qk_blk_q6_k(const uint8_t *s, qk_v8f w[32]) {
    float dl[16];
    const float d = qk_f16_at(s + 208);
    for (int sb = 0; sb < 16; sb++)
        dl[sb] = d * (float)(int8_t)s[192 + sb];
    for (int g = 0; g < 32; g++) {
        const int h = g / 16, k = (g / 4) % 4, l8 = g % 4;
        const qk_v8i lo = (qk_u8x8(s + 64 * h + 32 * (k % 2) + 8 * l8) >> (4 * (k / 2))) & 15;
        const qk_v8i hi = (qk_u8x8(s + 128 + 32 * h + 8 * l8) >> (2 * k)) & 3;
        w[g] = dl[g / 2] * qk_cvt((lo | hi << 4) - 32);
    }
}

static inline void qk_blk_q8_k(const uint8_t *s, qk_v8f w[32]) {
    const float d = qk_bits_f32(qk_u32(s));
    for (int g = 0; g < 32; g++)
        w[g] = d * qk_cvt(qk_s8x8(s + 4 + 8 * g));
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
 * block is dequantized once into w[] and used by all NX rows of x. */
#define QK_DOT_NX(name, BE, BB, NX, ONE, TAIL)                                       \
    static void qk_dot_##name##_x##NX(const uint8_t *row, const float *x, uint64_t xs, \
                                      uint64_t n, float *out) {                      \
        qk_v8f acc[NX][2], w[(BE) / 8];                                              \
        for (int t = 0; t < (NX); t++)                                               \
            acc[t][0] = acc[t][1] = (qk_v8f){0};                                     \
        const uint64_t nb = n / (BE);                                                \
        for (uint64_t b = 0; b < nb; b++) {                                          \
            qk_blk_##name(row + b * (BB), w);                                        \
            const float *xb = x + b * (BE);                                          \
            for (int g = 0; g < (BE) / 8; g++)                                       \
                for (int t = 0; t < (NX); t++)                                       \
                    acc[t][g & 1] += w[g] * qk_ld8f(xb + (uint64_t)t * xs + 8 * g);   \
        }                                                                            \
        if ((TAIL) && n % (BE) != 0)                                                 \
            QK_TAIL(ONE, NX);                                                        \
        for (int t = 0; t < (NX); t++)                                               \
            out[t] = qk_reduce(acc[t][0], acc[t][1]);                                \
    }

/* QK_TYPE: the x1 and x4 dots, the multi-x driver and the row dequantizer
 * of one type. TAIL: 1 for plain types (rows of any length). */
#define QK_TYPE(name, BE, BB, ONE, TAIL)                                              \
    QK_DOT_NX(name, BE, BB, 1, ONE, TAIL)                                            \
    QK_DOT_NX(name, BE, BB, 4, ONE, TAIL)                                            \
    static void qk_dot_##name(const uint8_t *row, const float *x, uint64_t xs,       \
                              uint32_t n_x, uint64_t n, float *out) {                \
        uint32_t t = 0;                                                              \
        for (; t + 4 <= n_x; t += 4)                                                 \
            qk_dot_##name##_x4(row, x + (uint64_t)t * xs, xs, n, out + t);           \
        for (; t < n_x; t++)                                                         \
            qk_dot_##name##_x1(row, x + (uint64_t)t * xs, xs, n, out + t);           \
    }                                                                                \
    static void qk_deq_##name(const uint8_t *src, float *dst, uint64_t n) {          \
        qk_v8f w[(BE) / 8];                                                          \
        const uint64_t nb = n / (BE);                                                \
        for (uint64_t b = 0; b < nb; b++) {                                          \
            qk_blk_##name(src + b * (BB), w);                                        \
            memcpy(dst + b * (BE), w, sizeof w);                                     \
        }                                                                            \
        for (uint64_t i = nb * (BE); i < n; i++)                                     \
            dst[i] = ONE(src, i);                                                    \
    }

QK_TYPE(f32, 16, 64, qk_one_f32, 1)
QK_TYPE(f16, 16, 32, qk_one_f16, 1)
QK_TYPE(bf16, 16, 32, qk_one_bf16, 1)
QK_TYPE(q4_0, 32, 18, qk_one_none, 0)
QK_TYPE(q4_1, 32, 20, qk_one_none, 0)
QK_TYPE(q5_0, 32, 22, qk_one_none, 0)
QK_TYPE(q5_1, 32, 24, qk_one_none, 0)
QK_TYPE(q8_0, 32, 34, qk_one_none, 0)
QK_TYPE(q2_k, 256, 84, qk_one_none, 0)
QK_TYPE(q3_k, 256, 110, qk_one_none, 0)
QK_TYPE(q4_k, 256, 144, qk_one_none, 0)
QK_TYPE(q5_k, 256, 176, qk_one_none, 0)
QK_TYPE(q6_k, 256, 210, qk_one_none, 0)
QK_TYPE(q8_k, 256, 292, qk_one_none, 0)

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
