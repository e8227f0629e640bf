/*
 * idot.h — integer dot products of quantized weight rows with quantized
 * activations (qact.h), the CPU backend's fast path for block-quantized
 * weights (internal to backend/cpu).
 *
 * The canonical integer dot. Weight and activation values meet as
 * integers, exactly; floats enter once per block. With 8 lanes l < 8 and
 * two accumulator sets (block b feeds set b % 2):
 *
 *   32-element types (Q4_0, Q5_0, Q8_0; activations CPU_QACT_32), block b
 *   with signed weight values w[] and scale dw:
 *       s[l]   = sum_{k<4} w[4l+k] * q[32b+4l+k]
 *       acc[b%2][l] = fmaf(dw * dx[b], (float)s[l], acc[b%2][l])
 *       result = R8(acc[0] + acc[1])
 *
 *   32-element types with a min (Q4_1, Q5_1: weight d*u + m, u
 *   unsigned; activations CPU_QACT_32), block b with values u[], scale d
 *   and min m: the scaled part as above, and the min's part, m * dx[b]
 *   times the block's activation sum xsum[b] = sum_{i<32} q[32b+i]
 *   (bsum[2b] + bsum[2b+1] of qact.h, exact), in a third set of 8 lanes
 *   by block, accm[b%8]:
 *       s[l]   = sum_{k<4} u[4l+k] * q[32b+4l+k]
 *       acc[b%2][l] = fmaf(d * dx[b], (float)s[l], acc[b%2][l])
 *       accm[b%8]   = fmaf(m * dx[b], (float)xsum[b], accm[b%8])
 *       result = R8((acc[0] + acc[1]) + accm)
 *   (one FMA per 8 blocks for the mins, not one per block as lane sums
 *   of q would take: 8 blocks' m * dx[b] are one register, their sums
 *   one madd of the block sums, which keeps decode at memory's pace.
 *   vpdpbusd takes the unsigned u as they are. Where the row's
 *   last 8 are fewer, the lanes past its end are left as they are; a
 *   vector kernel's FMA of 0 * 0 there leaves them too, since the lanes,
 *   started at +0, never hold -0.)
 *
 *   K types (Q4_K, Q5_K, Q6_K; activations CPU_QACT_256), super-block b
 *   with unsigned values u[], sub-block scales sc[] and d, and chunks
 *   c < 8 of 32 elements:
 *       s[l]   = sum_c sc(c,l) * sum_{k<4} u[32c+4l+k] * q[256b+32c+4l+k]
 *       m[l]   = Q4_K/Q5_K: mn[l] * (bsum[2l] + bsum[2l+1])
 *                Q6_K:      32 * (sc[2l] * bsum[2l] + sc[2l+1] * bsum[2l+1])
 *       acc[b%2][l] = fmaf(d * dx[b], (float)s[l], acc[b%2][l])
 *       acc[b%2][l] = fmaf(-(ms * dx[b]), (float)m[l], acc[b%2][l])
 *                                            (ms = dmin, or d for Q6_K)
 *       result = R8(acc[0] + acc[1])
 *   (the offset term m[l] is sub-block l's, a madd of 16 int16 pairs, and
 *   joins the lanes' chains: no horizontal sum per block)
 *   where sc(c,l) is the scale of the sub-block holding element 32c+4l
 *   (sc[c] for Q4_K/Q5_K, sc[2c + l/4] for Q6_K).
 *
 *   K types, fine form (activations CPU_QACT_32: a scale per chunk c,
 *   dx[8b+c]), for inputs whose magnitude swings along the row — the
 *   down projection's, the GeGLU product, where one scale per 256 rounds
 *   the many small values next to a large one to a few levels (on the
 *   default model that rounding was half of the 8-bit path's KL
 *   divergence from f32). With p_c[l] = sc(c,l) * sum_{k<4}
 *   u[32c+4l+k] * q[256b+32c+4l+k], for c = 0..7 in order:
 *       acc[c%2][l] = fmaf(d * dx[8b+c], (float)p_c[l], acc[c%2][l])
 *   then acc[0][l] = fmaf(-(ms * dx[8b+l]), (float)m[l], acc[0][l])
 *       result = R8(acc[0] + acc[1])
 *   (chunk l holds sub-block l's elements, so its offset takes dx[8b+l];
 *   the sets split by chunk so that a 512-bit register holds a chunk pair).
 *
 *   R8(a) = (t0 + t2) + (t1 + t3) with t_j = a[j] + a[j+4]: the order of
 *   an AVX register's horizontal sum.
 *
 * The 8 lanes are those of an AVX2 register after maddubs + madd, so the
 * vector kernels perform exactly these operations and give the same bits
 * as the portable reference (idot.c), which tests/test_cpu_ops.c checks
 * for every type. Each (row, token) dot is computed the same way whatever
 * the number of tokens per call, so results do not depend on batch size
 * or thread count either. Versus the f32 dot of qdot.h, the difference is
 * the activations' rounding to 8 bits (|dx|/2 per element at most).
 */
#ifndef SW_BACKEND_CPU_IDOT_H
#define SW_BACKEND_CPU_IDOT_H

#include <stdint.h>

#include "backend/cpu/qact.h"
#include "backend/cpu/qdot.h"

enum { CPU_IDOT_MAX_X = 4 }; /* activation rows per kernel call */

/* out[t] = canonical integer dot of the n-element weight row `row`
 * (stored type) with the quantized activation row xq + t*xq_stride, for
 * t < n_x <= CPU_IDOT_MAX_X. The weight blocks are unpacked once for all
 * n_x rows. */
typedef void (*cpu_idot_fn)(const uint8_t *row, const uint8_t *xq, uint64_t xq_stride,
                            uint32_t n_x, uint64_t n, float *out);

/* Unpacked rows, for many tokens: a stored row decoded once into blocks
 * that each further token reads with multiply-adds only, no bit
 * unpacking. unpacked_dot dots such rows exactly as `dot` dots the stored
 * ones (same bits). Three layouts:
 *   32-element types: per block of 32, CPU_IDOT_U32_BYTES: f32 scale,
 *     then the 32 signed values as int8.
 *   32-element types with a min: per block of 32, CPU_IDOT_U32M_BYTES:
 *     f32 d, f32 m, then the 32 unsigned values as u8.
 *   K types: per super-block of 256, CPU_IDOT_UK_BYTES:
 *     u8 u[256]      the unsigned values, in element order
 *     int16 sc[16]   sc[c] scales lanes 0..3 of chunk c (elements
 *                    32c..32c+15), sc[8 + c] lanes 4..7 (the next 16):
 *                    sc(c,l) of the canonical dot, laid out so that one
 *                    byte shuffle gives a chunk's multiplier register
 *     int16 mw[16]   m[l] = mw[2l] * bsum[2l] + mw[2l+1] * bsum[2l+1]:
 *                    mw[g] = mn[g/2] for Q4_K/Q5_K, 32 * sc[g] for Q6_K
 *     f32 d, f32 ms  the scales of s and of m; then zeros to 352 bytes
 * A type's cpu_idot gives its layout in unpack_elems / unpack_bytes; a
 * set may have its own (the AVX-512 set's 32-element types: 96 bytes per
 * block, the values beside what its tile would recompute per token,
 * idot_avx512_tile32.c), which only its unpacked_dot and tile read. */
enum { CPU_IDOT_U32_BYTES = 36, CPU_IDOT_U32M_BYTES = 40, CPU_IDOT_UK_BYTES = 352 };
enum { CPU_IDOT_UK_SC = 256, CPU_IDOT_UK_MW = 288, CPU_IDOT_UK_D = 320, CPU_IDOT_UK_MS = 324 };
typedef void (*cpu_idot_unpack_fn)(const uint8_t *row, uint64_t n, uint8_t *dst);

/* out[r] = dot of row r (rows row_bytes apart) with the one activation
 * row xq, r < n_rows: `dot` with n_x = 1 over many rows in one call (the
 * decode step's matmuls, whose rows are short: no call per row). */
typedef void (*cpu_idot_rows_fn)(const uint8_t *rows, uint64_t row_bytes, uint64_t n_rows,
                                 const uint8_t *xq, uint64_t n, float *out);

/* y[t*y_stride + r] = unpacked_dot of the unpacked row rows + r*row_bytes
 * with the activation row xq + t*xq_stride, for r < n_rows, t < n_x (any
 * counts): prefill's row block against all its tokens in one call, so a
 * kernel can hold several rows and tokens in registers at once (each
 * value loaded serves several dots) and sum them together. Same bits as
 * unpacked_dot. */
typedef void (*cpu_idot_tile_fn)(const uint8_t *rows, uint64_t row_bytes, uint32_t n_rows,
                                 const uint8_t *xq, uint64_t xq_stride, uint32_t n_x,
                                 uint64_t n, float *y, uint64_t y_stride);

typedef struct cpu_idot {
    cpu_qact_fmt fmt; /* the activations it takes */
    cpu_idot_fn dot;
    cpu_idot_rows_fn rows;
    cpu_idot_unpack_fn unpack;  /* stored row -> unpacked row */
    cpu_idot_fn unpacked_dot;   /* takes unpack's rows */
    cpu_idot_tile_fn unpacked_tile; /* the same over a tile; NULL: none */
    uint32_t unpack_elems;      /* elements per unpacked block: 32 or 256 */
    uint32_t unpack_bytes;      /* its bytes: CPU_IDOT_U32_BYTES, _U32M_BYTES,
                                 * _UK_BYTES or a set's own */
} cpu_idot;

/* The integer kernel of `type` for `isa`, or NULL where the type has none
 * (plain types, and the block types left to the f32 path: Q2_K, Q3_K,
 * Q8_K). An isa this build or CPU lacks falls back to the portable
 * kernels (same bits, only slower). */
const cpu_idot *cpu_idot_get(cpu_isa isa, uint32_t type);

/* The kernel over CPU_QACT_32 activations: the fine form above for the K
 * types, the 32-element types' own kernel (their activations are per 32
 * already); NULL where cpu_idot_get is. Same unpacked layouts. */
const cpu_idot *cpu_idot_get_fine(cpu_isa isa, uint32_t type);

#endif
