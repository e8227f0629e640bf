/*
 * test_cuda_q8.c — the CUDA decode path's integer dots (backend/cuda/
 * q8dot.h), on the CPU: the header compiled by the host C compiler
 * against the cpu backend's own definitions, bit for bit. Runs in every
 * build (no GPU, no nvcc).
 *
 *   - activation quantization (q8_quant_row) gives cpu_qact_quantize's
 *     bytes, per 32 and per 256, on rows with a zero, a subnormal, a NaN
 *     and an infinite block;
 *   - for Q4_0, Q5_0, Q8_0, Q4_1, Q5_1, Q4_K, Q5_K and Q6_K, coarse and
 *     fine forms, several row lengths and up to 8 tokens: q8_row_dot (the
 *     canonical order written serially) and the sixteen q8_chain
 *     accumulators joined by q8_r8 (with the min types' eight
 *     q8_chain_min ones by q8_r8m: the order the GPU kernel runs, one
 *     chain per thread) give the portable cpu integer kernel's bits, and
 *     the best kernel set's;
 *   - a type the cpu dots in f32 (no cpu_idot_get kernel) is refused by
 *     q8_type.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/idot.h"
#include "backend/cpu/qact.h"
#include "backend/cuda/q8dot.h"
#include "check.h"
#include "cpu_test_util.h"
#include "quant/types.h"

enum { N_ROWS = 3, N_X = Q8_MAX_X };

static uint64_t meaningful(uint32_t blk, uint64_t n) { return n + 4 * (n / blk) + 2 * (n / 16); }

static void test_quant(uint32_t blk) {
    const uint64_t n = 2048;
    const uint32_t rows = 4;
    float *x = xmalloc(n * rows * sizeof(float));
    fill_float(x, n * rows, -4.0f, 4.0f);
    memset(x, 0, blk * sizeof(float));                /* row 0, block 0: zeros */
    for (uint32_t i = 0; i < blk; i++)
        x[blk + i] = 1e-41f * (float)(i % 5);          /* row 0, block 1: subnormal */
    x[n + 7] = NAN;                                   /* row 1, block 0 */
    x[2 * n + 2 * blk + 3] = -INFINITY;               /* row 2, block 2 */
    for (uint64_t i = 0; i < n; i++)
        x[3 * n + i] *= i % 97 == 0 ? 1e4f : 1e-3f;    /* row 3: swinging magnitudes */
    const uint64_t st = q8_row_stride(blk, n);
    SW_CHECK(st == cpu_qact_stride((cpu_qact_fmt)blk, n), "stride %llu != cpu's %llu",
             (unsigned long long)st,
             (unsigned long long)cpu_qact_stride((cpu_qact_fmt)blk, n));
    uint8_t *want = xmalloc(st * rows), *got = xmalloc(st * rows);
    cpu_qact_quantize_isa(CPU_ISA_REF, (cpu_qact_fmt)blk, x, n, rows, want);
    size_t differ = 0;
    for (uint32_t r = 0; r < rows; r++) {
        q8_quant_row(blk, x + r * n, n, got + r * st);
        differ += memcmp(got + r * st, want + r * st, meaningful(blk, n)) != 0;
    }
    SW_CHECK(differ == 0, "q8_quant_row per %u: %zu of %u rows differ from cpu_qact's bytes",
             blk, differ, rows);
    free(x);
    free(want);
    free(got);
}

/* One type, form and row length: N_ROWS rows against N_X tokens. */
static void test_dot(uint32_t type, int fine, uint64_t ne0) {
    uint32_t ab = 0;
    SW_CHECK(q8_type(type, &ab), "q8_type refuses %s", type_name(type));
    const uint32_t xb = fine || ab == 32 ? 32 : 256;
    const cpu_idot *ref = fine ? cpu_idot_get_fine(CPU_ISA_REF, type)
                               : cpu_idot_get(CPU_ISA_REF, type);
    const cpu_idot *best = fine ? cpu_idot_get_fine(cpu_isa_best(), type)
                                : cpu_idot_get(cpu_isa_best(), type);
    SW_CHECK(ref != NULL && best != NULL && ref->fmt == (cpu_qact_fmt)xb,
             "%s: the cpu kernel's activations are not per %u", type_name(type), xb);
    if (ref == NULL || best == NULL)
        return;
    uint64_t wbytes = 0;
    uint8_t *w = random_weights(type, ne0, N_ROWS, &wbytes);
    const uint64_t rb = wbytes / N_ROWS, st = q8_row_stride(xb, ne0);
    float *x = xmalloc(ne0 * N_X * sizeof(float));
    fill_float(x, ne0 * N_X, -2.0f, 2.0f);
    for (uint64_t i = 0; i < ne0; i += 61)
        x[i] *= 300.0f; /* a few large values: the fine form's case */
    uint8_t *xq = xmalloc(st * N_X);
    cpu_qact_quantize((cpu_qact_fmt)xb, x, ne0, N_X, xq);
    size_t bad_serial = 0, bad_chain = 0, bad_best = 0;
    for (uint32_t r = 0; r < N_ROWS; r++) {
        const uint8_t *row = w + r * rb;
        float want[N_X], other[N_X], chains[2][Q8_LANES][N_X], mins[Q8_LANES][N_X];
        ref->dot(row, xq, st, 4, ne0, want);
        ref->dot(row, xq + 4 * st, st, N_X - 4, ne0, want + 4);
        for (uint32_t t = 0; t < N_X; t++)
            best->dot(row, xq + t * st, st, 1, ne0, other + t);
        for (uint32_t set = 0; set < 2; set++)
            for (uint32_t l = 0; l < Q8_LANES; l++)
                q8_chain(type, fine, row, xq, st, N_X, ne0, set, l, chains[set][l]);
        for (uint32_t l = 0; l < Q8_LANES; l++)
            q8_chain_min(type, row, xq, st, N_X, ne0, l, mins[l]);
        for (uint32_t t = 0; t < N_X; t++) {
            float a0[Q8_LANES], a1[Q8_LANES], am[Q8_LANES];
            for (uint32_t l = 0; l < Q8_LANES; l++)
                a0[l] = chains[0][l][t], a1[l] = chains[1][l][t], am[l] = mins[l][t];
            const float serial = q8_row_dot(type, fine, row, xq + t * st, ne0);
            const float joined = q8_has_min(type) ? q8_r8m(a0, a1, am) : q8_r8(a0, a1);
            bad_serial += memcmp(&serial, &want[t], sizeof serial) != 0;
            bad_chain += memcmp(&joined, &want[t], sizeof joined) != 0;
            bad_best += memcmp(&other[t], &want[t], sizeof want[t]) != 0;
        }
    }
    SW_CHECK(bad_serial == 0 && bad_chain == 0 && bad_best == 0,
             "%s %s ne0 %llu: %zu serial and %zu chained dots differ from the cpu "
             "reference's bits (the %s kernels: %zu)", type_name(type),
             fine ? "fine" : "coarse", (unsigned long long)ne0, bad_serial, bad_chain,
             cpu_isa_name(cpu_isa_best()), bad_best);
    free(w);
    free(x);
    free(xq);
}

int main(void) {
    test_quant(32);
    test_quant(256);
    static const uint32_t types[] = {SW_TYPE_Q4_0, SW_TYPE_Q5_0, SW_TYPE_Q8_0, SW_TYPE_Q4_1,
                                     SW_TYPE_Q5_1, SW_TYPE_Q4_K, SW_TYPE_Q5_K, SW_TYPE_Q6_K};
    static const uint64_t lengths[] = {256, 768, 2304, 5120};
    uint32_t ab;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        for (int fine = 0; fine < 2; fine++) {
            for (size_t j = 0; j < sizeof lengths / sizeof lengths[0]; j++)
                test_dot(types[i], fine, lengths[j]);
            if (q8_type(types[i], &ab) && ab == 32)
                test_dot(types[i], fine, 96); /* fewer blocks than the mins' 8 lanes */
        }
    static const uint32_t others[] = {SW_TYPE_F32, SW_TYPE_F16, SW_TYPE_BF16, SW_TYPE_Q2_K,
                                      SW_TYPE_Q3_K, SW_TYPE_Q8_K};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        SW_CHECK(!q8_type(others[i], &ab) && cpu_idot_get(CPU_ISA_REF, others[i]) == NULL,
                 "q8_type takes %s, or the cpu has an integer kernel for it: the two "
                 "must agree on the types dotted in f32", type_name(others[i]));
    return sw_check_finish("test_cuda_q8");
}
