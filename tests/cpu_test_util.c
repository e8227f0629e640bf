/*
 * cpu_test_util.c — helpers shared by the CPU kernel tests: a seeded
 * random source, random weights of every type with sane block scales,
 * bitwise and tolerance checks, and qdot.h's canonical f32 dot written
 * out again from its definition.
 */
#include "cpu_test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/idot.h"
#include "backend/cpu/qact.h"
#include "check.h"
#include "quant/half.h"
#include "quant/types.h"

uint64_t rng_state = 0x9e3779b97f4a7c15ull;

uint64_t rng_next(void) { return sw_test_rng_next(&rng_state); }

/* Uniform in [lo, hi). */
float rng_float(float lo, float hi) { return sw_test_rng_float(&rng_state, lo, hi); }

void fill_float(float *x, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++)
        x[i] = rng_float(lo, hi);
}

void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (p == NULL) {
        fprintf(stderr, "cpu tests: out of memory (%zu bytes)\n", n);
        exit(2);
    }
    return p;
}

/* Compares got against ref: |got - ref| <= atol + rtol*|ref|. Prints the
 * first mismatches and the max difference; records one check. */
void check_close(const char *what, const float *got, const double *ref, size_t n,
                        double atol, double rtol) {
    size_t n_bad = 0;
    double max_diff = 0.0;
    for (size_t i = 0; i < n; i++) {
        double diff = fabs((double)got[i] - ref[i]);
        if (!(diff <= max_diff))
            max_diff = isnan(diff) ? INFINITY : diff;
        if (!(diff <= atol + rtol * fabs(ref[i]))) {
            if (n_bad < 5)
                fprintf(stderr, "  %s[%zu]: got %.9g want %.9g (diff %.3g)\n", what, i,
                        (double)got[i], ref[i], diff);
            n_bad++;
        }
    }
    SW_CHECK(n_bad == 0, "%s: %zu of %zu outside atol %.3g rtol %.3g (max diff %.3g)", what,
             n_bad, n, atol, rtol, max_diff);
}

bool bits_equal(const float *a, const float *b, size_t n, size_t *first) {
    for (size_t i = 0; i < n; i++) {
        if (memcmp(&a[i], &b[i], sizeof(float)) != 0) {
            *first = i;
            return false;
        }
    }
    return true;
}

void check_bits(const char *what, const float *got, const float *want, size_t n) {
    size_t i = 0;
    bool ok = bits_equal(got, want, n, &i);
    SW_CHECK(ok, "%s: not bit-identical at [%zu]: %.9g vs %.9g", what, i,
             ok ? 0.0 : (double)got[i], ok ? 0.0 : (double)want[i]);
}

/* The canonical dot, written out again from qdot.h's definition. */
float canonical_dot(const float *w, const float *x, size_t n) {
    float acc[16] = {0}, t[8], u[4];
    for (size_t i = 0; i < n; i++)
        acc[i % 16] += w[i] * x[i];
    for (int j = 0; j < 8; j++)
        t[j] = acc[j] + acc[j + 8];
    for (int j = 0; j < 4; j++)
        u[j] = t[j] + t[j + 4];
    return (u[0] + u[2]) + (u[1] + u[3]);
}

/* ---- random weights --------------------------------------------------- */

const uint32_t all_types[] = {
    SW_TYPE_F32,  SW_TYPE_F16,  SW_TYPE_BF16, SW_TYPE_Q4_0, SW_TYPE_Q4_1,
    SW_TYPE_Q5_0, SW_TYPE_Q5_1, SW_TYPE_Q8_0, SW_TYPE_Q2_K, SW_TYPE_Q3_K,
    SW_TYPE_Q4_K, SW_TYPE_Q5_K, SW_TYPE_Q6_K, SW_TYPE_Q8_K,
};
const int N_TYPES_VALUE = sizeof all_types / sizeof all_types[0];

void put_f16(uint8_t *p, float v) {
    uint16_t h = half_f32_to_f16(v);
    p[0] = (uint8_t)h;
    p[1] = (uint8_t)(h >> 8);
}

/* Random quant bytes with sane scales: the f16 (or f32) scale fields of
 * each block are overwritten with small finite values. */
static void fix_block_scales(uint32_t type, uint8_t *b) {
    float d = rng_float(0.001f, 0.05f), m = rng_float(-0.05f, 0.05f);
    switch (type) {
    case SW_TYPE_Q4_0: case SW_TYPE_Q5_0: case SW_TYPE_Q8_0:
        put_f16(b, d);
        break;
    case SW_TYPE_Q4_1: case SW_TYPE_Q5_1: case SW_TYPE_Q4_K: case SW_TYPE_Q5_K:
        put_f16(b, d);
        put_f16(b + 2, m);
        break;
    case SW_TYPE_Q2_K: put_f16(b + 80, d); put_f16(b + 82, m); break;
    case SW_TYPE_Q3_K: put_f16(b + 108, d); break;
    case SW_TYPE_Q6_K: put_f16(b + 208, d); break;
    case SW_TYPE_Q8_K: memcpy(b, &d, 4); break;
    default: break;
    }
}

/* n_rows rows of ne0 elements of `type`, random; returns malloc'd bytes. */
uint8_t *random_weights(uint32_t type, uint64_t ne0, uint64_t n_rows, uint64_t *n_bytes) {
    const type_traits *t = type_get_traits(type);
    uint64_t row_bytes = 0;
    type_row_bytes(type, ne0, &row_bytes);
    *n_bytes = row_bytes * n_rows;
    uint8_t *w = xmalloc((size_t)*n_bytes);
    uint64_t n_elems = ne0 * n_rows;
    if (type == SW_TYPE_F32) {
        fill_float((float *)w, (size_t)n_elems, -1.0f, 1.0f);
    } else if (type == SW_TYPE_F16 || type == SW_TYPE_BF16) {
        for (uint64_t i = 0; i < n_elems; i++) {
            float v = rng_float(-1.0f, 1.0f);
            uint16_t h = type == SW_TYPE_F16 ? half_f32_to_f16(v) : half_f32_to_bf16(v);
            memcpy(w + 2 * i, &h, 2);
        }
    } else {
        for (uint64_t i = 0; i < *n_bytes; i++)
            w[i] = (uint8_t)(rng_next() >> 56);
        for (uint64_t b = 0; b < n_elems / t->block_elems; b++)
            fix_block_scales(type, w + b * t->block_bytes);
    }
    return w;
}


float expected_dot(uint32_t type, const uint8_t *row, const float *deq_row, const float *x,
                   uint64_t ne0) {
    const cpu_idot *k = cpu_idot_get(CPU_ISA_REF, type);
    if (k == NULL)
        return canonical_dot(deq_row, x, (size_t)ne0);
    uint8_t *xq = xmalloc((size_t)cpu_qact_stride(k->fmt, ne0));
    float out;
    cpu_qact_quantize(k->fmt, x, ne0, 1, xq);
    k->dot(row, xq, 0, 1, ne0, &out);
    free(xq);
    return out;
}
