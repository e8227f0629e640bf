/*
 * idot_avx512_tile32.c — prefill's 32-element rows (Q4_0, Q5_0, Q8_0) with
 * AVX-512 VNNI: an unpacked layout of this set's own that holds, beside
 * the values, everything a tile would otherwise recompute for every group
 * of tokens, and the tile of rows x tokens over it.
 *
 * Why a layout of its own: the tile is bound by its vector instructions,
 * not by loads. Over idot.h's U32 layout (f32 scale, 32 int8) each step of
 * a row spent four of them per group of tokens joining two blocks' values
 * and scales into 512-bit registers and forming the bias term; a row is
 * unpacked once per matmul round and passed by 16 or more tokens, so
 * those are computed once here and the tile only loads them.
 *
 * Layout (unpack_elems 32, unpack_bytes 96: a row of nb blocks takes
 * nb * 96 bytes), per pair of blocks b, b+1 (b even), 192 bytes:
 *     int8  w[64]   the signed values, block b in bytes 0..31, b+1 in 32..63
 *     int32 nc[16]  -128 * (w[4l] + w[4l+1] + w[4l+2] + w[4l+3]), lane l
 *     f32   dw[16]  block b's scale in lanes 0..7, b+1's in lanes 8..15
 * and a last block of an odd count, 96 bytes: w[32], nc[8], dw[8].
 *
 * Same bits as idot.h's canonical dot (and so as every other set): the
 * activations enter biased (x + 128, unsigned, one XOR per token shared by
 * the rows), vpdpbusd from nc gives each lane's exact integer sum of w * x,
 * and the float steps are the canonical ones, block b in the low half
 * (set acc[0]) and b + 1 in the high half (set acc[1]).
 */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "backend/cpu/idot.h"
#include "quant/types.h"

void cpu_idot_avx512_tile32_patch(cpu_idot table[]);

#define CPU_TARGET "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"
#include "backend/cpu/target_begin.h"

#include "backend/cpu/idot_avx512_x.h"

enum { IT_PAIR_BYTES = 192, IT_NC = 64, IT_DW = 128,      /* a pair's fields */
       IT_HALF_BYTES = 96, IT_HNC = 32, IT_HDW = 64 };    /* a last odd block's */

/* ---- unpacking ----------------------------------------------------------- */

/* -128 * the lane sums of four values, per 32-bit lane of w */
IA_INLINE __m256i it_nc256(__m256i w) {
    const __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8((char)0x80), w);
    return _mm256_sub_epi32(_mm256_setzero_si256(), s);
}

IA_INLINE void it_unpack(ia_w32_fn wfn, uint32_t bb, const uint8_t *row, uint64_t n,
                         uint8_t *dst) {
    const uint64_t nb = n / 32;
    uint64_t b = 0;
    for (; b + 1 < nb; b += 2, dst += IT_PAIR_BYTES) {
        const uint8_t *b0 = row + b * bb, *b1 = b0 + bb;
        const __m256i w0 = wfn(b0), w1 = wfn(b1);
        _mm256_storeu_si256((__m256i *)(void *)dst, w0);
        _mm256_storeu_si256((__m256i *)(void *)(dst + 32), w1);
        _mm256_storeu_si256((__m256i *)(void *)(dst + IT_NC), it_nc256(w0));
        _mm256_storeu_si256((__m256i *)(void *)(dst + IT_NC + 32), it_nc256(w1));
        _mm256_storeu_ps((float *)(void *)(dst + IT_DW), _mm256_set1_ps(ia_f16(b0)));
        _mm256_storeu_ps((float *)(void *)(dst + IT_DW + 32), _mm256_set1_ps(ia_f16(b1)));
    }
    if (b < nb) {
        const uint8_t *b0 = row + b * bb;
        const __m256i w0 = wfn(b0);
        _mm256_storeu_si256((__m256i *)(void *)dst, w0);
        _mm256_storeu_si256((__m256i *)(void *)(dst + IT_HNC), it_nc256(w0));
        _mm256_storeu_ps((float *)(void *)(dst + IT_HDW), _mm256_set1_ps(ia_f16(b0)));
    }
}

static void it_unpack_q4_0(const uint8_t *row, uint64_t n, uint8_t *dst) {
    it_unpack(ia_w_q4_0, 18, row, n, dst);
}
static void it_unpack_q5_0(const uint8_t *row, uint64_t n, uint8_t *dst) {
    it_unpack(ia_w_q5_0, 22, row, n, dst);
}
static void it_unpack_q8_0(const uint8_t *row, uint64_t n, uint8_t *dst) {
    it_unpack(ia_w_q8_0, 34, row, n, dst);
}

/* ---- the tile ------------------------------------------------------------ */

/* Rows per tile: 3 x 4 accumulators, each row's values and scales, and a
 * token's activations fit the 32 registers. */
#define IT_MR 3

/* The pair of blocks at byte `off` of each of nr rows (or, when `last`,
 * the odd block there, into the low halves only) into the nr x nt
 * accumulators. */
IA_INLINE void it_step(const uint8_t *rows, uint64_t rbytes, int nr, const int8_t *const *q,
                       const float *const *dx, int nt, uint64_t b, uint64_t off, int last,
                       __m512 acc[IT_MR][4]) {
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    const __mmask64 km = last ? 0xffffffffu : ~(__mmask64)0;
    const __mmask16 kf = last ? 0x00ff : 0xffff;
    __m512i w[IT_MR];
    __m512 dw[IT_MR];
    const uint8_t *p[IT_MR];
    IA_UNROLL
    for (int r = 0; r < nr; r++) {
        p[r] = rows + (uint64_t)r * rbytes + off;
        w[r] = _mm512_maskz_loadu_epi8(km, p[r]);
        dw[r] = last ? _mm512_maskz_loadu_ps(kf, p[r] + IT_HDW) : _mm512_loadu_ps(p[r] + IT_DW);
    }
    IA_UNROLL
    for (int t = 0; t < nt; t++) {
        const __m512i xb = _mm512_xor_si512(_mm512_maskz_loadu_epi8(km, q[t] + 32 * b), bias);
        const __m512 dxv = last ? _mm512_set1_ps(dx[t][b]) : iz_pair_bcast(dx[t] + b);
        IA_UNROLL
        for (int r = 0; r < nr; r++) {
            const __m512i nc = last ? _mm512_maskz_loadu_epi32(kf, p[r] + IT_HNC)
                                    : _mm512_loadu_si512(p[r] + IT_NC);
            const __m512 d = _mm512_mul_ps(dw[r], dxv);
            const __m512 s = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(nc, xb, w[r]));
            acc[r][t] = last ? _mm512_mask3_fmadd_ps(d, s, acc[r][t], kf)
                             : _mm512_fmadd_ps(d, s, acc[r][t]);
        }
    }
}

/* NR rows x NT tokens: every pair, then the odd block, then R8. */
IA_INLINE void it_tile(const uint8_t *rows, uint64_t rbytes, int nr, const uint8_t *xq,
                       uint64_t xs, int nt, uint64_t n, float *y, uint64_t ys) {
    const int8_t *q[4];
    const float *dx[4];
    __m512 acc[IT_MR][4];
    IA_UNROLL
    for (int t = 0; t < 4; t++) {
        q[t] = (const int8_t *)(xq + (uint64_t)(t < nt ? t : 0) * xs);
        dx[t] = cpu_qact_scales((const uint8_t *)q[t], n);
        IA_UNROLL
        for (int r = 0; r < IT_MR; r++)
            acc[r][t] = _mm512_setzero_ps();
    }
    const uint64_t nb = n / 32;
    uint64_t b = 0, off = 0;
    for (; b + 1 < nb; b += 2, off += IT_PAIR_BYTES)
        it_step(rows, rbytes, nr, q, dx, nt, b, off, 0, acc);
    if (b < nb)
        it_step(rows, rbytes, nr, q, dx, nt, b, off, 1, acc);
    IA_UNROLL
    for (int r = 0; r < nr; r++) {
        const __m128 o = iz_r8_s4(iz_fold2(acc[r][0], acc[r][1]), iz_fold2(acc[r][2], acc[r][3]));
        float v[4];
        _mm_storeu_ps(v, o);
        IA_UNROLL
        for (int t = 0; t < nt; t++)
            y[(uint64_t)t * ys + (uint64_t)r] = v[t];
    }
}

/* Each (rows, tokens) shape a constant instance of it_tile (nr * 4 + nt
 * is unique), so every accumulator stays in a register. */
#define IT_CASE(NR, NT)                                                                 \
    case (NR) * 4 + (NT): it_tile(rr, rbytes, NR, xt, xs, NT, n, yt + r0, ys); break;
#define IT_ROWS(NR) IT_CASE(NR, 1) IT_CASE(NR, 2) IT_CASE(NR, 3) IT_CASE(NR, 4)

static void it_tile_u64p(const uint8_t *rows, uint64_t rbytes, uint32_t n_rows,
                         const uint8_t *xq, uint64_t xs, uint32_t n_x, uint64_t n, float *y,
                         uint64_t ys) {
    for (uint32_t t0 = 0; t0 < n_x; t0 += 4) {
        const uint32_t nt = n_x - t0 < 4 ? n_x - t0 : 4;
        const uint8_t *xt = xq + (uint64_t)t0 * xs;
        float *yt = y + (uint64_t)t0 * ys;
        for (uint32_t r0 = 0; r0 < n_rows; r0 += IT_MR) {
            const uint8_t *rr = rows + (uint64_t)r0 * rbytes;
            const int nr = n_rows - r0 < IT_MR ? (int)(n_rows - r0) : IT_MR;
            switch (nr * 4 + (int)nt) { IT_ROWS(1) IT_ROWS(2) IT_ROWS(3) }
        }
    }
}

/* unpacked_dot over this layout: one row, up to CPU_IDOT_MAX_X tokens. */
static void it_dot_u64p(const uint8_t *row, const uint8_t *xq, uint64_t xs, uint32_t n_x,
                        uint64_t n, float *out) {
    it_tile_u64p(row, 0, 1, xq, xs, n_x, n, out, 1);
}

/* Gives the 32-element types of an AVX-512 table (coarse or fine: the
 * same kernels) this layout: unpack, unpacked_dot and unpacked_tile
 * change together. */
void cpu_idot_avx512_tile32_patch(cpu_idot table[]) {
    static const struct {
        uint32_t type;
        cpu_idot_unpack_fn unpack;
    } t32[] = {{SW_TYPE_Q4_0, it_unpack_q4_0},
               {SW_TYPE_Q5_0, it_unpack_q5_0},
               {SW_TYPE_Q8_0, it_unpack_q8_0}};
    for (size_t i = 0; i < sizeof t32 / sizeof t32[0]; i++) {
        cpu_idot *k = &table[t32[i].type];
        k->unpack = t32[i].unpack;
        k->unpacked_dot = it_dot_u64p;
        k->unpacked_tile = it_tile_u64p;
        k->unpack_elems = 32;
        k->unpack_bytes = IT_HALF_BYTES;
    }
}

#include "backend/cpu/target_end.h"
#else
/* ISO C wants at least one declaration in a translation unit. */
typedef int idot_avx512_tile32_unavailable;
#endif
