/*
 * qact.h — activations quantized to 8 bits per block, the input side of
 * the integer dot products of idot.h (internal to backend/cpu).
 *
 * Two formats, by block length; both carry the int16 sum of each 16 q's
 * (the dots of the K types and of Q4_1, Q5_1 fold a weight block's mins
 * or offset into them):
 *   CPU_QACT_32   blocks of 32: int8 q[32] with one f32 scale each. Pairs
 *                 with the 32-element weight types (Q4_0, Q5_0, Q8_0,
 *                 Q4_1, Q5_1), and with the K types where the activations
 *                 need a finer scale (idot.h's fine form: the down
 *                 projection's input).
 *   CPU_QACT_256  blocks of 256: int8 q[256] with one f32 scale. Pairs
 *                 with Q4_K, Q5_K and Q6_K.
 * A quantized row of n elements is laid out as
 *     int8 q[n] | f32 d[n / B] | int16 bsum[n / 16]
 * and rows are cpu_qact_stride() bytes apart (a multiple of 64).
 *
 * Quantization (both formats, the same bytes on every ISA): per block,
 * amax = max |x|, d = amax / 127, and q = nearbyint(x * (127 / amax))
 * (0 where amax is 0), so |q| <= 127 and |x - d*q| <= d/2 up to f32
 * rounding of the factor.
 */
#ifndef SW_BACKEND_CPU_QACT_H
#define SW_BACKEND_CPU_QACT_H

#include <stdint.h>

#include "backend/cpu/qdot.h"

typedef enum cpu_qact_fmt { CPU_QACT_32 = 32, CPU_QACT_256 = 256 } cpu_qact_fmt;

/* Bytes from one quantized row to the next for rows of n elements (n a
 * multiple of the format's block). */
uint64_t cpu_qact_stride(cpu_qact_fmt fmt, uint64_t n);

/* Quantizes n_rows rows of n f32 elements (x, rows n apart) into dst
 * (rows cpu_qact_stride apart). n must be a multiple of the block. */
void cpu_qact_quantize(cpu_qact_fmt fmt, const float *x, uint64_t n, uint32_t n_rows,
                       uint8_t *dst);

/* The same with the kernel set chosen (cpu_isa of qdot.h; one the CPU
 * lacks falls back to plain C): every set gives the same bytes. */
void cpu_qact_quantize_isa(cpu_isa isa, cpu_qact_fmt fmt, const float *x, uint64_t n,
                           uint32_t n_rows, uint8_t *dst);

/* The parts of a quantized row. */
static inline const float *cpu_qact_scales(const uint8_t *row, uint64_t n) {
    return (const float *)(const void *)(row + n);
}
static inline const int16_t *cpu_qact_bsums(cpu_qact_fmt fmt, const uint8_t *row, uint64_t n) {
    return (const int16_t *)(const void *)(row + n + 4 * (n / (uint64_t)fmt));
}

#endif
