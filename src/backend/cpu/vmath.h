/*
 * vmath.h — the CPU backend's vector elementwise math (internal to
 * backend/cpu): tanh, the GeGLU and soft-cap built on it, and the
 * weighted sum of value rows that attention accumulates.
 *
 * Our own f32 tanh, because libm's tanhf is one call per element (the
 * GeGLU of a 270M prefill chunk is ~5M of them, 13% of prefill) and does
 * not vectorize. It is defined by cpu_tanhf below, operation for
 * operation, with only IEEE add, subtract, multiply, divide and bit
 * moves (no FMA; the build passes -ffp-contract=off), so the baseline
 * and the AVX2 instances give the same bits as the scalar definition:
 *
 *   |y| <  0.625: u = y*y, t = y + y*(u*P(u)), P degree 5 (Horner)
 *   |y| >= 0.625: a = min(|y|, 10); e = exp(2a); t = 1 - 2/(e + 1)
 *   tanh = t with y's sign bit OR-ed in (bit operations)
 *   exp(z): n = round(z*log2 e) by the 1.5*2^23 trick; r = z - n*ln2hi,
 *           r = r - n*ln2lo; exp = E(r) * 2^n, E degree 6 (Horner)
 *
 * P and E are near-minimax fits by tools/fit_vmath.py (which also
 * measures the result: at most 1.31 ulp from tanh over [-12, 12], numpy's
 * tanhf 1.37). NaN stays NaN, +-Inf gives +-1, -0 gives -0.
 */
#ifndef SW_BACKEND_CPU_VMATH_H
#define SW_BACKEND_CPU_VMATH_H

#include <stdint.h>

#include "backend/cpu/qdot.h"

/* The definition above, one element at a time. */
float cpu_tanhf(float y);

typedef struct cpu_vmath {
    /* y[i] = cpu_tanhf(x[i]); x == y allowed */
    void (*tanh)(const float *x, float *y, uint64_t n);
    /* out[i] = ((0.5*g)*(1 + tanh(k_beta*(g + k_kappa*(g*g*g))))) * up[i],
     * g = gate[i]: PyTorch's gelu(approximate='tanh') order; in place ok */
    void (*geglu)(const float *gate, const float *up, float *out, uint64_t n);
    /* x[i] = cpu_tanhf(x[i] / cap) * cap (HF's soft-cap) */
    void (*softcap)(float *x, uint64_t n, float cap);
    /* o[d] = o[d] + w[i] * v[i*stride + d] for i = 0 .. n_rows-1 in order,
     * each product rounded, for d < n: attention's values over a run of
     * cache rows. */
    void (*wsum)(const float *v, uint64_t stride, const float *w, uint64_t n_rows, float *o,
                 uint64_t n);
} cpu_vmath;

/* The set for `isa` (REF: scalar loops over cpu_tanhf; same bits). */
const cpu_vmath *cpu_vmath_get(cpu_isa isa);

#endif
