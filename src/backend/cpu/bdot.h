/*
 * bdot.h — dots of bf16 weight rows with activations rounded to bf16
 * (--cpu-dots bf16), the CPU backend's path for bf16 weights on CPUs with
 * AVX-512 BF16, whose vdpbf16ps multiplies and adds 32 pairs at once
 * (internal to backend/cpu).
 *
 * The canonical bf16 dot of n elements (n a multiple of 32) is the order
 * vdpbf16ps computes in (checked against the hardware by test_bdot): 16
 * lanes; lane l takes, for each block k of 32 elements in turn, the odd
 * element of its pair, then the even one:
 *     acc[l] = F(fmaf(w[32k+2l+1], x[32k+2l+1], acc[l]))
 *     acc[l] = F(fmaf(w[32k+2l],   x[32k+2l],   acc[l]))
 * with w and x widened to f32, subnormal inputs taken as zero, and F
 * flushing a subnormal result to a zero of its sign (the instruction
 * ignores MXCSR: it always does both); then
 *     u[j] = acc[j] + acc[j+8], t[j] = u[j] + u[j+4]   (j < 4)
 *     result = (t[0] + t[2]) + (t[1] + t[3])
 * A bf16 product is exact in f32, so each step rounds once.
 *
 * The activations are rounded to bf16 once per token (cpu_bf16_round).
 * Against the f32 path the difference is that rounding: a relative error
 * of at most 2^-8 per element (8 significant bits, to nearest).
 */
#ifndef SW_BACKEND_CPU_BDOT_H
#define SW_BACKEND_CPU_BDOT_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/cpu/qdot.h"

enum { CPU_BDOT_BLOCK = 32 }; /* a row's length must be a multiple of it */

/* out[r] = canonical dot of bf16 row r (rows row_bytes apart) with the
 * bf16 activations x, r < n_rows: one token (decode). */
typedef void (*cpu_bdot_rows_fn)(const uint8_t *rows, uint64_t row_bytes, uint64_t n_rows,
                                 const uint16_t *x, uint64_t n, float *out);

/* y[t*y_stride + r] = canonical dot of row r with the activation row
 * x + t*x_stride (elements), r < n_rows, t < n_x: prefill's tile. */
typedef void (*cpu_bdot_tile_fn)(const uint8_t *rows, uint64_t row_bytes, uint32_t n_rows,
                                 const uint16_t *x, uint64_t x_stride, uint32_t n_x,
                                 uint64_t n, float *y, uint64_t y_stride);

typedef struct cpu_bdot {
    cpu_bdot_rows_fn rows;
    cpu_bdot_tile_fn tile;
} cpu_bdot;

/* The kernels for `isa`: AVX-512 BF16 where the set is AVX512 and the CPU
 * also has BF16, else the portable reference (the same bits). */
const cpu_bdot *cpu_bdot_get(cpu_isa isa);

/* Whether this CPU and build run vdpbf16ps (AVX-512 F, BW, VL and BF16). */
bool cpu_bdot_native(void);

/* x[i] rounded to bf16, i < n: to nearest, ties to even; subnormals to a
 * zero of their sign (the dot takes them as zero anyway); NaN stays NaN
 * (made quiet); infinities stay. */
void cpu_bf16_round(const float *x, uint64_t n, uint16_t *out);

#endif
