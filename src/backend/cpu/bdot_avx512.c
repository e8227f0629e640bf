/*
 * bdot_avx512.c — bdot.h's bf16 dots with AVX-512 BF16: one vdpbf16ps
 * per block of 32 elements performs lane l's two canonical steps (the odd
 * element, then the even one, each fused and flushed), so a 512-bit
 * accumulator is the canonical acc[16] and its sum is R8 of idot_x86.h
 * over its halves: the same bits as the portable kernels (bdot.c).
 *
 * Decode takes up to BZ_ROWS rows per pass over the token's activations
 * (independent chains hide the instruction's latency); prefill tiles of
 * BZ_MR rows x BZ_NT tokens, each loaded block serving several dots.
 */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "backend/cpu/bdot.h"

const cpu_bdot *cpu_bdot_avx512(void);

#define CPU_TARGET "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16"
#include "backend/cpu/target_begin.h"

#include "backend/cpu/idot_x86.h"

enum { BZ_ROWS = 8, BZ_MR = 4, BZ_NT = 4 };

IA_INLINE __m512bh bz_load(const void *p) {
    return (__m512bh)_mm512_loadu_si512(p);
}

/* bdot.h's final sum of one accumulator */
IA_INLINE float bz_sum(__m512 acc) {
    return ia_r8(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
}

/* nr (a constant after inlining) rows against one token. */
IA_INLINE void bz_rows_part(const uint8_t *rows, uint64_t rb, int nr, const uint16_t *x,
                            uint64_t n, float *out) {
    __m512 acc[BZ_ROWS];
    IA_UNROLL8
    for (int r = 0; r < nr; r++)
        acc[r] = _mm512_setzero_ps();
    for (uint64_t e = 0; e < n; e += 32) {
        const __m512bh xv = bz_load(x + e);
        IA_UNROLL8
        for (int r = 0; r < nr; r++)
            acc[r] = _mm512_dpbf16_ps(acc[r], bz_load(rows + (uint64_t)r * rb + 2 * e), xv);
    }
    IA_UNROLL8
    for (int r = 0; r < nr; r++)
        out[r] = bz_sum(acc[r]);
}

static void bz_rows(const uint8_t *rows, uint64_t rb, uint64_t n_rows, const uint16_t *x,
                    uint64_t n, float *out) {
    uint64_t r = 0;
    for (; r + BZ_ROWS <= n_rows; r += BZ_ROWS)
        bz_rows_part(rows + r * rb, rb, BZ_ROWS, x, n, out + r);
    for (; r < n_rows; r++)
        bz_rows_part(rows + r * rb, rb, 1, x, n, out + r);
}

/* nr rows x nt tokens (constants after inlining) of a tile. */
IA_INLINE void bz_tile_part(const uint8_t *rows, uint64_t rb, int nr, const uint16_t *x,
                            uint64_t xs, int nt, uint64_t n, float *y, uint64_t ys) {
    __m512 acc[BZ_MR][BZ_NT];
    IA_UNROLL
    for (int r = 0; r < nr; r++)
        IA_UNROLL
        for (int t = 0; t < nt; t++)
            acc[r][t] = _mm512_setzero_ps();
    for (uint64_t e = 0; e < n; e += 32) {
        __m512bh xv[BZ_NT];
        IA_UNROLL
        for (int t = 0; t < nt; t++)
            xv[t] = bz_load(x + (uint64_t)t * xs + e);
        IA_UNROLL
        for (int r = 0; r < nr; r++) {
            const __m512bh wv = bz_load(rows + (uint64_t)r * rb + 2 * e);
            IA_UNROLL
            for (int t = 0; t < nt; t++)
                acc[r][t] = _mm512_dpbf16_ps(acc[r][t], wv, xv[t]);
        }
    }
    IA_UNROLL
    for (int r = 0; r < nr; r++)
        IA_UNROLL
        for (int t = 0; t < nt; t++)
            y[(uint64_t)t * ys + (uint64_t)r] = bz_sum(acc[r][t]);
}

#define BZ_CASE(NR, NT)                                                                   \
    case (NR) * 8 + (NT):                                                                 \
        bz_tile_part(rows + r * rb, rb, NR, x + t * xs, xs, NT, n, y + t * ys + r, ys);   \
        break;
#define BZ_CASES(NR) BZ_CASE(NR, 1) BZ_CASE(NR, 2) BZ_CASE(NR, 3) BZ_CASE(NR, 4)

static void bz_tile(const uint8_t *rows, uint64_t rb, uint32_t n_rows, const uint16_t *x,
                    uint64_t xs, uint32_t n_x, uint64_t n, float *y, uint64_t ys) {
    for (uint64_t r = 0; r < n_rows; r += BZ_MR) {
        const uint32_t nr = n_rows - r < BZ_MR ? (uint32_t)(n_rows - r) : BZ_MR;
        for (uint64_t t = 0; t < n_x; t += BZ_NT) {
            const uint32_t nt = n_x - t < BZ_NT ? (uint32_t)(n_x - t) : BZ_NT;
            switch (nr * 8 + nt) {
                BZ_CASES(1)
                BZ_CASES(2)
                BZ_CASES(3)
                BZ_CASES(4)
            default:
                break;
            }
        }
    }
}

static const cpu_bdot bz_kernels = {.rows = bz_rows, .tile = bz_tile};

const cpu_bdot *cpu_bdot_avx512(void) { return &bz_kernels; }

#include "backend/cpu/target_end.h"
#else
/* ISO C wants at least one declaration in a translation unit. */
typedef int bdot_avx512_unavailable;
#endif
