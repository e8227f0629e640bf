/*
 * idot.c — the portable integer dot kernels: idot.h's canonical
 * definition written out in plain C, one weight block at a time, and the
 * choice of kernel set per CPU. The AVX2 kernels (idot_avx2.c) give the
 * same bits. Types: Q4_0, Q5_0, Q8_0; Q4_1, Q5_1 (with a min); Q4_K,
 * Q5_K, Q6_K.
 */
#include "backend/cpu/idot.h"

#include <math.h>
#include <string.h>

#include "quant/dequant.h"
#include "quant/half.h"
#include "quant/types.h"

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define IDOT_HAVE_AVX2 1
#include <pthread.h>
const cpu_idot *cpu_idot_table_avx2(void);
const cpu_idot *cpu_idot_fine_table_avx2(void);
const cpu_idot *cpu_idot_table_avxvnni(void);
const cpu_idot *cpu_idot_fine_table_avxvnni(void);
void cpu_idot_avx512_patch(cpu_idot table[], int fine);
void cpu_idot_avx512_krows_patch(cpu_idot table[], int fine);
void cpu_idot_avx512_q6rows_patch(cpu_idot table[], int fine);
void cpu_idot_avx512_rows32_patch(cpu_idot table[]);
void cpu_idot_avx512_rows32m_patch(cpu_idot table[]);
#else
#define IDOT_HAVE_AVX2 0
#endif

enum { LANES = 8 };

/* R8 of idot.h on one set of lanes. */
static float r8_lanes(const float s[LANES]) {
    float t[4];
    for (int j = 0; j < 4; j++)
        t[j] = s[j] + s[j + 4];
    return (t[0] + t[2]) + (t[1] + t[3]);
}

static float r8(float a[2][LANES]) {
    float s[LANES];
    for (int l = 0; l < LANES; l++)
        s[l] = a[0][l] + a[1][l];
    return r8_lanes(s);
}

/* ---- 32-element types: signed values w[32] and the scale ---------------- */

typedef float (*unpack32_fn)(const uint8_t *blk, int w[32]);

static float unpack_q4_0(const uint8_t *b, int w[32]) {
    for (int j = 0; j < 16; j++) {
        w[j] = (b[2 + j] & 15) - 8;
        w[j + 16] = (b[2 + j] >> 4) - 8;
    }
    return half_load_f16(b);
}

static float unpack_q5_0(const uint8_t *b, int w[32]) {
    const uint32_t qh = (uint32_t)b[2] | (uint32_t)b[3] << 8 | (uint32_t)b[4] << 16 |
                        (uint32_t)b[5] << 24;
    for (int j = 0; j < 16; j++) {
        w[j] = ((b[6 + j] & 15) | (int)((qh >> j) & 1) << 4) - 16;
        w[j + 16] = ((b[6 + j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4) - 16;
    }
    return half_load_f16(b);
}

static float unpack_q8_0(const uint8_t *b, int w[32]) {
    for (int j = 0; j < 32; j++)
        w[j] = (int8_t)b[2 + j];
    return half_load_f16(b);
}

/* The unpacked layout of idot.h: f32 scale, 32 int8 values. */
static float unpack_u32(const uint8_t *b, int w[32]) {
    float d;
    memcpy(&d, b, sizeof d);
    for (int j = 0; j < 32; j++)
        w[j] = (int8_t)b[4 + j];
    return d;
}

static void unpack_row32(unpack32_fn unpack, uint32_t block_bytes, const uint8_t *row,
                         uint64_t n, uint8_t *dst) {
    for (uint64_t b = 0; b < n / 32; b++, dst += CPU_IDOT_U32_BYTES) {
        int w[32];
        const float d = unpack(row + b * block_bytes, w);
        memcpy(dst, &d, sizeof d);
        for (int j = 0; j < 32; j++)
            dst[4 + j] = (uint8_t)(int8_t)w[j];
    }
}

static void dot32(unpack32_fn unpack, uint32_t block_bytes, const uint8_t *row,
                  const uint8_t *xq, uint64_t xs, uint32_t n_x, uint64_t n, float *out) {
    const uint64_t nb = n / 32;
    for (uint32_t t = 0; t < n_x; t++) {
        const int8_t *q = (const int8_t *)(xq + t * xs);
        const float *dx = cpu_qact_scales(xq + t * xs, n);
        float acc[2][LANES] = {{0}};
        for (uint64_t b = 0; b < nb; b++) {
            int w[32];
            const float dw = unpack(row + b * block_bytes, w);
            const float d = dw * dx[b];
            for (int l = 0; l < LANES; l++) {
                int s = 0;
                for (int k = 0; k < 4; k++)
                    s += w[4 * l + k] * q[32 * b + (uint64_t)(4 * l + k)];
                acc[b % 2][l] = fmaf(d, (float)s, acc[b % 2][l]);
            }
        }
        out[t] = r8(acc);
    }
}

/* ---- 32-element types with a min: unsigned values u[32], d and m ------- */

typedef void (*unpack32m_fn)(const uint8_t *blk, int u[32], float *d, float *m);

static void unpack_q4_1(const uint8_t *b, int u[32], float *d, float *m) {
    for (int j = 0; j < 16; j++) {
        u[j] = b[4 + j] & 15;
        u[j + 16] = b[4 + j] >> 4;
    }
    *d = half_load_f16(b);
    *m = half_load_f16(b + 2);
}

static void unpack_q5_1(const uint8_t *b, int u[32], float *d, float *m) {
    const uint32_t qh = (uint32_t)b[4] | (uint32_t)b[5] << 8 | (uint32_t)b[6] << 16 |
                        (uint32_t)b[7] << 24;
    for (int j = 0; j < 16; j++) {
        u[j] = (b[8 + j] & 15) | (int)((qh >> j) & 1) << 4;
        u[j + 16] = (b[8 + j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
    }
    *d = half_load_f16(b);
    *m = half_load_f16(b + 2);
}

/* The unpacked layout of idot.h: f32 d, f32 m, 32 u8 values. */
static void unpack_u32m(const uint8_t *b, int u[32], float *d, float *m) {
    memcpy(d, b, sizeof *d);
    memcpy(m, b + 4, sizeof *m);
    for (int j = 0; j < 32; j++)
        u[j] = b[8 + j];
}

static void unpack_row32m(unpack32m_fn unpack, uint32_t block_bytes, const uint8_t *row,
                          uint64_t n, uint8_t *dst) {
    for (uint64_t b = 0; b < n / 32; b++, dst += CPU_IDOT_U32M_BYTES) {
        int u[32];
        float d, m;
        unpack(row + b * block_bytes, u, &d, &m);
        memcpy(dst, &d, sizeof d);
        memcpy(dst + 4, &m, sizeof m);
        for (int j = 0; j < 32; j++)
            dst[8 + j] = (uint8_t)u[j];
    }
}

/* idot.h's canonical dot of the min types: the scaled part as dot32's,
 * the mins' part by block into accm[b % 8]. */
static void dot32m(unpack32m_fn unpack, uint32_t block_bytes, const uint8_t *row,
                   const uint8_t *xq, uint64_t xs, uint32_t n_x, uint64_t n, float *out) {
    const uint64_t nb = n / 32;
    for (uint32_t t = 0; t < n_x; t++) {
        const int8_t *q = (const int8_t *)(xq + t * xs);
        const float *dx = cpu_qact_scales(xq + t * xs, n);
        const int16_t *bs = cpu_qact_bsums(CPU_QACT_32, xq + t * xs, n);
        float acc[2][LANES] = {{0}}, accm[LANES] = {0};
        for (uint64_t b = 0; b < nb; b++) {
            int u[32];
            float dw, mw;
            unpack(row + b * block_bytes, u, &dw, &mw);
            const float d = dw * dx[b];
            for (int l = 0; l < LANES; l++) {
                int s = 0;
                for (int k = 0; k < 4; k++)
                    s += u[4 * l + k] * q[32 * b + (uint64_t)(4 * l + k)];
                acc[b % 2][l] = fmaf(d, (float)s, acc[b % 2][l]);
            }
            const int xsum = bs[2 * b] + bs[2 * b + 1];
            accm[b % 8] = fmaf(mw * dx[b], (float)xsum, accm[b % 8]);
        }
        float sum[LANES];
        for (int l = 0; l < LANES; l++)
            sum[l] = (acc[0][l] + acc[1][l]) + accm[l];
        out[t] = r8_lanes(sum);
    }
}

/* ---- K types: unsigned values u[256], scales, and the offset term ------- */

typedef struct kblock {
    int u[256];
    int sc[16];   /* Q4_K/Q5_K: 8 sub-block scales; Q6_K: 16 */
    int mn[8];    /* Q4_K/Q5_K mins */
    float d, dm;  /* scale of s, and of m (dmin; d for Q6_K) */
    int q6;       /* Q6_K: scales per 16 and m = 32 * sum sc * bsum */
} kblock;

typedef void (*unpackk_fn)(const uint8_t *blk, kblock *k);

static void unpack_k4(const uint8_t *b, const uint8_t *qh, const uint8_t *qs, kblock *k) {
    k->d = half_load_f16(b);
    k->dm = half_load_f16(b + 2);
    k->q6 = 0;
    unpack_scale_min_k4(b + 4, k->sc, k->mn);
    for (int c = 0; c < 8; c++)
        for (int l = 0; l < 32; l++) {
            int v = (qs[32 * (c / 2) + l] >> (4 * (c % 2))) & 15;
            if (qh != NULL)
                v |= ((qh[l] >> c) & 1) << 4;
            k->u[32 * c + l] = v;
        }
}

static void unpack_q4_k(const uint8_t *b, kblock *k) { unpack_k4(b, NULL, b + 16, k); }
static void unpack_q5_k(const uint8_t *b, kblock *k) { unpack_k4(b, b + 16, b + 48, k); }

static void unpack_q6_k(const uint8_t *b, kblock *k) {
    k->d = half_load_f16(b + 208);
    k->dm = k->d;
    k->q6 = 1;
    for (int g = 0; g < 16; g++)
        k->sc[g] = (int8_t)b[192 + g];
    for (int i = 0; i < 256; i++) {
        const int h = i / 128, r = i % 128;
        const uint8_t *ql = b + 64 * h, *qh = b + 128 + 32 * h;
        k->u[i] = ((ql[r % 64] >> (4 * (r / 64))) & 15) | ((qh[r % 32] >> (2 * (r / 32))) & 3) << 4;
    }
}

/* ---- unpacked K rows: idot.h's CPU_IDOT_UK layout ----------------------- */

static void kblock_store(const kblock *k, uint8_t *dst) {
    int16_t sc[16], mw[16];
    for (int c = 0; c < 8; c++) {
        sc[c] = (int16_t)(k->q6 ? k->sc[2 * c] : k->sc[c]);
        sc[8 + c] = (int16_t)(k->q6 ? k->sc[2 * c + 1] : k->sc[c]);
    }
    for (int g = 0; g < 16; g++)
        mw[g] = (int16_t)(k->q6 ? 32 * k->sc[g] : k->mn[g / 2]);
    memset(dst, 0, CPU_IDOT_UK_BYTES);
    for (int i = 0; i < 256; i++)
        dst[i] = (uint8_t)k->u[i];
    memcpy(dst + CPU_IDOT_UK_SC, sc, sizeof sc);
    memcpy(dst + CPU_IDOT_UK_MW, mw, sizeof mw);
    memcpy(dst + CPU_IDOT_UK_D, &k->d, sizeof k->d);
    memcpy(dst + CPU_IDOT_UK_MS, &k->dm, sizeof k->dm);
}

static void unpack_rowk(unpackk_fn unpack, uint32_t block_bytes, const uint8_t *row,
                        uint64_t n, uint8_t *dst) {
    kblock k;
    for (uint64_t b = 0; b < n / 256; b++, dst += CPU_IDOT_UK_BYTES) {
        unpack(row + b * block_bytes, &k);
        kblock_store(&k, dst);
    }
}

/* One token's activations over a row: q, scales, block sums. */
typedef struct kx {
    const int8_t *q;
    const float *dx;
    const int16_t *bs;
} kx;

static kx kx_of(cpu_qact_fmt fmt, const uint8_t *xq, uint64_t n) {
    return (kx){(const int8_t *)xq, cpu_qact_scales(xq, n), cpu_qact_bsums(fmt, xq, n)};
}

/* Super-block b (unpacked) of idot.h's canonical K dot into acc: the
 * coarse form into the set b % 2, the fine form (per-chunk scales) chunk
 * c into the set c % 2 and the offset into set 0. */
static void uk_block(const uint8_t *blk, const kx *x, uint64_t b, int fine,
                     float acc[2][LANES]) {
    int16_t sc[16], mw[16];
    float d, ms;
    memcpy(sc, blk + CPU_IDOT_UK_SC, sizeof sc);
    memcpy(mw, blk + CPU_IDOT_UK_MW, sizeof mw);
    memcpy(&d, blk + CPU_IDOT_UK_D, sizeof d);
    memcpy(&ms, blk + CPU_IDOT_UK_MS, sizeof ms);
    const int8_t *qb = x->q + 256 * b;
    const int16_t *bb = x->bs + 16 * b;
    for (int l = 0; l < LANES; l++) {
        int s = 0;
        for (int c = 0; c < 8; c++) {
            int p = 0;
            for (int j = 0; j < 4; j++)
                p += blk[32 * c + 4 * l + j] * qb[32 * c + 4 * l + j];
            p *= sc[c + 8 * (l / 4)];
            if (fine)
                acc[c % 2][l] = fmaf(d * x->dx[8 * b + (uint64_t)c], (float)p, acc[c % 2][l]);
            else
                s += p;
        }
        const int m = mw[2 * l] * bb[2 * l] + mw[2 * l + 1] * bb[2 * l + 1];
        if (fine) {
            acc[0][l] = fmaf(-(ms * x->dx[8 * b + (uint64_t)l]), (float)m, acc[0][l]);
        } else {
            acc[b % 2][l] = fmaf(d * x->dx[b], (float)s, acc[b % 2][l]);
            acc[b % 2][l] = fmaf(-(ms * x->dx[b]), (float)m, acc[b % 2][l]);
        }
    }
}

/* The canonical K dot of stored rows (unpack == NULL: unpacked rows). */
static void dotk(unpackk_fn unpack, uint32_t block_bytes, int fine, const uint8_t *row,
                 const uint8_t *xq, uint64_t xs, uint32_t n_x, uint64_t n, float *out) {
    const uint64_t nb = n / 256;
    const cpu_qact_fmt fmt = fine ? CPU_QACT_32 : CPU_QACT_256;
    uint8_t blk[CPU_IDOT_UK_BYTES];
    kblock k;
    for (uint32_t t = 0; t < n_x; t++) {
        const kx x = kx_of(fmt, xq + t * xs, n);
        float acc[2][LANES] = {{0}};
        for (uint64_t b = 0; b < nb; b++) {
            const uint8_t *ub = row + b * CPU_IDOT_UK_BYTES;
            if (unpack != NULL) {
                unpack(row + b * block_bytes, &k);
                kblock_store(&k, blk);
                ub = blk;
            }
            uk_block(ub, &x, b, fine, acc);
        }
        out[t] = r8(acc);
    }
}

static void ref_uk(const uint8_t *row, const uint8_t *xq, uint64_t xs, uint32_t n_x,
                   uint64_t n, float *out) {
    dotk(NULL, 0, 0, row, xq, xs, n_x, n, out);
}

static void ref_uk_fine(const uint8_t *row, const uint8_t *xq, uint64_t xs, uint32_t n_x,
                        uint64_t n, float *out) {
    dotk(NULL, 0, 1, row, xq, xs, n_x, n, out);
}

#define REF32(name, bytes)                                                            \
    static void ref_##name(const uint8_t *row, const uint8_t *xq, uint64_t xs,       \
                           uint32_t n_x, uint64_t n, float *out) {                   \
        dot32(unpack_##name, bytes, row, xq, xs, n_x, n, out);                       \
    }                                                                                 \
    static void ref_rows_##name(const uint8_t *rows, uint64_t rb, uint64_t n_rows,   \
                                const uint8_t *xq, uint64_t n, float *out) {         \
        for (uint64_t r = 0; r < n_rows; r++)                                        \
            dot32(unpack_##name, bytes, rows + r * rb, xq, 0, 1, n, out + r);        \
    }                                                                                 \
    static void ref_unpack_##name(const uint8_t *row, uint64_t n, uint8_t *dst) {    \
        unpack_row32(unpack_##name, bytes, row, n, dst);                             \
    }
#define REFK(name, bytes)                                                             \
    static void ref_##name(const uint8_t *row, const uint8_t *xq, uint64_t xs,       \
                           uint32_t n_x, uint64_t n, float *out) {                   \
        dotk(unpack_##name, bytes, 0, row, xq, xs, n_x, n, out);                     \
    }                                                                                 \
    static void ref_fine_##name(const uint8_t *row, const uint8_t *xq, uint64_t xs,  \
                                uint32_t n_x, uint64_t n, float *out) {              \
        dotk(unpack_##name, bytes, 1, row, xq, xs, n_x, n, out);                     \
    }                                                                                 \
    static void ref_rows_##name(const uint8_t *rows, uint64_t rb, uint64_t n_rows,   \
                                const uint8_t *xq, uint64_t n, float *out) {         \
        for (uint64_t r = 0; r < n_rows; r++)                                        \
            dotk(unpack_##name, bytes, 0, rows + r * rb, xq, 0, 1, n, out + r);      \
    }                                                                                 \
    static void ref_rows_fine_##name(const uint8_t *rows, uint64_t rb, uint64_t n_rows, \
                                     const uint8_t *xq, uint64_t n, float *out) {    \
        for (uint64_t r = 0; r < n_rows; r++)                                        \
            dotk(unpack_##name, bytes, 1, rows + r * rb, xq, 0, 1, n, out + r);      \
    }                                                                                 \
    static void ref_unpack_##name(const uint8_t *row, uint64_t n, uint8_t *dst) {    \
        unpack_rowk(unpack_##name, bytes, row, n, dst);                              \
    }
#define REF32M(name, bytes)                                                           \
    static void ref_##name(const uint8_t *row, const uint8_t *xq, uint64_t xs,       \
                           uint32_t n_x, uint64_t n, float *out) {                   \
        dot32m(unpack_##name, bytes, row, xq, xs, n_x, n, out);                      \
    }                                                                                 \
    static void ref_rows_##name(const uint8_t *rows, uint64_t rb, uint64_t n_rows,   \
                                const uint8_t *xq, uint64_t n, float *out) {         \
        for (uint64_t r = 0; r < n_rows; r++)                                        \
            dot32m(unpack_##name, bytes, rows + r * rb, xq, 0, 1, n, out + r);       \
    }                                                                                 \
    static void ref_unpack_##name(const uint8_t *row, uint64_t n, uint8_t *dst) {    \
        unpack_row32m(unpack_##name, bytes, row, n, dst);                            \
    }
static void ref_u32(const uint8_t *row, const uint8_t *xq, uint64_t xs, uint32_t n_x,
                    uint64_t n, float *out) {
    dot32(unpack_u32, CPU_IDOT_U32_BYTES, row, xq, xs, n_x, n, out);
}
static void ref_u32m(const uint8_t *row, const uint8_t *xq, uint64_t xs, uint32_t n_x,
                     uint64_t n, float *out) {
    dot32m(unpack_u32m, CPU_IDOT_U32M_BYTES, row, xq, xs, n_x, n, out);
}

REF32(q4_0, 18)
REF32(q5_0, 22)
REF32(q8_0, 34)
REF32M(q4_1, 20)
REF32M(q5_1, 24)
REFK(q4_k, 144)
REFK(q5_k, 176)
REFK(q6_k, 210)

#define REF_ENTRY32(name)                                                             \
    {.fmt = CPU_QACT_32, .dot = ref_##name, .rows = ref_rows_##name,                  \
     .unpack = ref_unpack_##name, .unpacked_dot = ref_u32, .unpack_elems = 32,        \
     .unpack_bytes = CPU_IDOT_U32_BYTES}
#define REF_ENTRY32M(name)                                                            \
    {.fmt = CPU_QACT_32, .dot = ref_##name, .rows = ref_rows_##name,                  \
     .unpack = ref_unpack_##name, .unpacked_dot = ref_u32m, .unpack_elems = 32,       \
     .unpack_bytes = CPU_IDOT_U32M_BYTES}
#define REF_ENTRYK(name)                                                              \
    {.fmt = CPU_QACT_256, .dot = ref_##name, .rows = ref_rows_##name,                 \
     .unpack = ref_unpack_##name, .unpacked_dot = ref_uk, .unpack_elems = 256,        \
     .unpack_bytes = CPU_IDOT_UK_BYTES}
#define REF_ENTRYK_FINE(name)                                                         \
    {.fmt = CPU_QACT_32, .dot = ref_fine_##name, .rows = ref_rows_fine_##name,        \
     .unpack = ref_unpack_##name, .unpacked_dot = ref_uk_fine, .unpack_elems = 256,   \
     .unpack_bytes = CPU_IDOT_UK_BYTES}
static const cpu_idot ref_table[SW_TYPE_COUNT] = {
    [SW_TYPE_Q4_0] = REF_ENTRY32(q4_0), [SW_TYPE_Q5_0] = REF_ENTRY32(q5_0),
    [SW_TYPE_Q8_0] = REF_ENTRY32(q8_0), [SW_TYPE_Q4_1] = REF_ENTRY32M(q4_1),
    [SW_TYPE_Q5_1] = REF_ENTRY32M(q5_1), [SW_TYPE_Q4_K] = REF_ENTRYK(q4_k),
    [SW_TYPE_Q5_K] = REF_ENTRYK(q5_k), [SW_TYPE_Q6_K] = REF_ENTRYK(q6_k),
};
/* The fine forms: the K types over CPU_QACT_32; a 32-element type (with
 * a min or not) is its own (its activations are per 32 already). */
static const cpu_idot ref_fine_table[SW_TYPE_COUNT] = {
    [SW_TYPE_Q4_0] = REF_ENTRY32(q4_0), [SW_TYPE_Q5_0] = REF_ENTRY32(q5_0),
    [SW_TYPE_Q8_0] = REF_ENTRY32(q8_0), [SW_TYPE_Q4_1] = REF_ENTRY32M(q4_1),
    [SW_TYPE_Q5_1] = REF_ENTRY32M(q5_1), [SW_TYPE_Q4_K] = REF_ENTRYK_FINE(q4_k),
    [SW_TYPE_Q5_K] = REF_ENTRYK_FINE(q5_k), [SW_TYPE_Q6_K] = REF_ENTRYK_FINE(q6_k),
};

#if IDOT_HAVE_AVX2
/* The AVX-512 sets: AVX2's, with the kernels idot_avx512*.c have in place
 * of AVX2's. Built once, on first use. */
static cpu_idot avx512_table[SW_TYPE_COUNT], avx512_fine_table[SW_TYPE_COUNT];
static pthread_once_t avx512_once = PTHREAD_ONCE_INIT;

static void avx512_build(void) {
    memcpy(avx512_table, cpu_idot_table_avx2(), sizeof avx512_table);
    memcpy(avx512_fine_table, cpu_idot_fine_table_avx2(), sizeof avx512_fine_table);
    cpu_idot_avx512_patch(avx512_table, 0);
    cpu_idot_avx512_patch(avx512_fine_table, 1);
    cpu_idot_avx512_krows_patch(avx512_table, 0);
    cpu_idot_avx512_krows_patch(avx512_fine_table, 1);
    cpu_idot_avx512_q6rows_patch(avx512_table, 0);
    cpu_idot_avx512_q6rows_patch(avx512_fine_table, 1);
    cpu_idot_avx512_rows32_patch(avx512_table);
    cpu_idot_avx512_rows32_patch(avx512_fine_table);
    cpu_idot_avx512_rows32m_patch(avx512_table);
    cpu_idot_avx512_rows32m_patch(avx512_fine_table);
}
#endif

/* The kernel of `type` for `isa` from the per-ISA tables (ref, then AVX2,
 * AVX-VNNI and AVX-512 where built), falling back to the best lesser set
 * the CPU runs. */
static const cpu_idot *idot_pick(int fine, cpu_isa isa, uint32_t type) {
    const cpu_idot *ref = fine ? ref_fine_table : ref_table;
    if (type >= SW_TYPE_COUNT || ref[type].dot == NULL)
        return NULL;
#if IDOT_HAVE_AVX2
    if (isa >= CPU_ISA_AVX512 && cpu_isa_supported(CPU_ISA_AVX512)) {
        (void)pthread_once(&avx512_once, avx512_build);
        return fine ? &avx512_fine_table[type] : &avx512_table[type];
    }
    const cpu_idot *vnni = fine ? cpu_idot_fine_table_avxvnni() : cpu_idot_table_avxvnni();
    if (isa >= CPU_ISA_AVXVNNI && cpu_isa_supported(CPU_ISA_AVXVNNI) && vnni[type].dot != NULL)
        return &vnni[type];
    const cpu_idot *avx2 = fine ? cpu_idot_fine_table_avx2() : cpu_idot_table_avx2();
    if (isa >= CPU_ISA_AVX2 && cpu_isa_supported(CPU_ISA_AVX2) && avx2[type].dot != NULL)
        return &avx2[type];
#endif
    (void)isa;
    return &ref[type];
}

const cpu_idot *cpu_idot_get(cpu_isa isa, uint32_t type) { return idot_pick(0, isa, type); }

const cpu_idot *cpu_idot_get_fine(cpu_isa isa, uint32_t type) { return idot_pick(1, isa, type); }
