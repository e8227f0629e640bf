/*
 * test_qrows.c — the decode step's row kernels: the f32 path's rows
 * (qdot.h's cpu_qrows_fn) on every kernel set this CPU runs, each row's
 * dot from `rows` equal to the same row's `dot` with one x and to the
 * portable reference's, bit for bit (NaN as NaN), for row counts on both
 * sides of the kernels' block of rows, row lengths with and without a
 * partial 16-lane chunk, rows with padding between them, and f16 rows
 * holding NaN, infinity and subnormals; and the K types' fine integer
 * rows (idot.h) on rows wider than the AVX-512 kernel's arranged
 * activations, which hand over to the AVX2 kernel (tests/test_idot.c
 * covers the rest). Sets this CPU lacks are reported and skipped.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/idot.h"
#include "backend/cpu/qdot.h"
#include "check.h"
#include "cpu_test_util.h"
#include "quant/types.h"

enum { MAX_ROWS = 11 };

/* got[r] and want[r] the same bits, or both NaN. */
static void check_rows(const char *what, const float *got, const float *want, uint64_t n) {
    float g[MAX_ROWS], w[MAX_ROWS];
    for (uint64_t r = 0; r < n; r++) {
        g[r] = isnan(got[r]) ? NAN : got[r];
        w[r] = isnan(want[r]) ? NAN : want[r];
    }
    check_bits(what, g, w, n);
}

/* n_rows rows of ne0 elements of `type`, `pad` bytes between rows; with
 * `specials`, f16 rows hold NaN, infinities and subnormals. */
static void rows_case(cpu_isa isa, uint32_t type, uint64_t ne0, uint64_t n_rows, uint64_t pad,
                      int specials) {
    const uint64_t esz = type_get_traits(type)->block_bytes;
    const uint64_t rb = ne0 * esz + pad;
    uint8_t *w = xmalloc(rb * n_rows);
    float *x = xmalloc(ne0 * sizeof(float));
    fill_float(x, ne0, -1.0f, 1.0f);
    for (uint64_t r = 0; r < n_rows; r++)
        for (uint64_t i = 0; i < ne0; i++) {
            uint8_t *p = w + r * rb + i * esz;
            const float v = rng_float(-2.0f, 2.0f);
            if (type == SW_TYPE_F16)
                put_f16(p, v);
            else { /* bf16: the float's top half */
                uint32_t u;
                memcpy(&u, &v, sizeof u);
                p[0] = (uint8_t)(u >> 16);
                p[1] = (uint8_t)(u >> 24);
            }
        }
    if (specials && type == SW_TYPE_F16 && ne0 >= 64) {
        const uint16_t bits[4] = {0x7c01u /* signalling NaN */, 0x7c00u /* inf */,
                                  0x0003u /* subnormal */, 0x8001u};
        for (int k = 0; k < 4; k++) /* row 1: NaN; row 2: inf; row 0: subnormals */
            if ((uint64_t)(k + 1) < n_rows || k >= 2)
                memcpy(w + (k < 2 ? (uint64_t)(k + 1) * rb : 0) + (8 + 16 * k) * esz, &bits[k], 2);
    }
    const cpu_qkernel *k = cpu_qkernel_get(isa, type), *ref = cpu_qkernel_get(CPU_ISA_REF, type);
    float got[MAX_ROWS], want[MAX_ROWS], one[MAX_ROWS];
    for (uint64_t r = 0; r < n_rows; r++) {
        ref->dot(w + r * rb, x, 0, 1, ne0, want + r);
        k->dot(w + r * rb, x, 0, 1, ne0, one + r);
    }
    char what[128];
    snprintf(what, sizeof what, "%s %s rows ne0 %llu, %llu rows, pad %llu%s", cpu_isa_name(isa),
             type_name(type), (unsigned long long)ne0, (unsigned long long)n_rows,
             (unsigned long long)pad, specials ? ", specials" : "");
    if (k->rows != NULL) {
        k->rows(w, rb, n_rows, x, ne0, got);
        check_rows(what, got, want, n_rows);
    }
    check_rows(what, one, want, n_rows);
    free(w);
    free(x);
}

/* The fine rows of `type` on `isa` for 3 rows of ne0 elements against
 * the portable kernel's dot, bit for bit. */
static void fine_wide_case(cpu_isa isa, uint32_t type, uint64_t ne0) {
    const uint64_t n_rows = 3;
    uint64_t n_bytes, row_bytes;
    uint8_t *w = random_weights(type, ne0, n_rows, &n_bytes);
    type_row_bytes(type, ne0, &row_bytes);
    float *x = xmalloc(ne0 * sizeof(float));
    fill_float(x, ne0, -3.0f, 3.0f);
    uint8_t *xq = xmalloc(cpu_qact_stride(CPU_QACT_32, ne0));
    cpu_qact_quantize(CPU_QACT_32, x, ne0, 1, xq);
    const cpu_idot *k = cpu_idot_get_fine(isa, type), *ref = cpu_idot_get_fine(CPU_ISA_REF, type);
    float got[3], want[3];
    for (uint64_t r = 0; r < n_rows; r++)
        ref->dot(w + r * row_bytes, xq, 0, 1, ne0, want + r);
    k->rows(w, row_bytes, n_rows, xq, ne0, got);
    char what[96];
    snprintf(what, sizeof what, "%s fine rows %s ne0 %llu", cpu_isa_name(isa), type_name(type),
             (unsigned long long)ne0);
    check_rows(what, got, want, n_rows);
    free(w);
    free(x);
    free(xq);
}

int main(void) {
    const cpu_isa isas[CPU_ISA_COUNT] = {CPU_ISA_REF, CPU_ISA_GENERIC, CPU_ISA_AVX2,
                                         CPU_ISA_AVXVNNI, CPU_ISA_AVX512};
    const uint32_t types[2] = {SW_TYPE_F16, SW_TYPE_BF16};
    const uint64_t lens[] = {16, 48, 50, 640, 1000, 5120};
    for (int i = 0; i < CPU_ISA_COUNT; i++) {
        if (!cpu_isa_supported(isas[i])) {
            printf("test_qrows: ISA %s not available here, skipped\n", cpu_isa_name(isas[i]));
            continue;
        }
        for (int t = 0; t < 2; t++)
            for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++)
                for (uint64_t nr = 1; nr <= MAX_ROWS; nr += (nr < 6 ? 1 : 5)) {
                    rows_case(isas[i], types[t], lens[l], nr, 0, 0);
                    rows_case(isas[i], types[t], lens[l], nr, 64, 1);
                }
        const uint32_t ktypes[3] = {SW_TYPE_Q4_K, SW_TYPE_Q5_K, SW_TYPE_Q6_K};
        for (int t = 0; t < 3; t++) {
            fine_wide_case(isas[i], ktypes[t], 32768);
            fine_wide_case(isas[i], ktypes[t], 33024);
        }
    }
    return sw_check_finish("test_qrows");
}
