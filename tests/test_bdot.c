/*
 * test_bdot.c — the bf16 dot path of the CPU backend (bdot.h): rounding
 * of activations to bf16 at its edges (ties, NaN, subnormals, overflow),
 * the portable kernels against a double-precision dot within the bound
 * that f32 accumulation allows, and the AVX-512 BF16 kernels against the
 * portable ones bit for bit (NaN as NaN), on rows with subnormal weights,
 * products that underflow, sums that cancel to subnormals, infinities and
 * NaNs, for every tile shape. Where the CPU has no AVX-512 BF16 the native
 * kernels are compiled but not run, and the test says so.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/bdot.h"
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "quant/types.h"
#include "cpu_test_util.h"

enum { MAX_ROWS = 19, MAX_X = 7 };

static uint16_t bf16_bits(float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return (uint16_t)(u >> 16);
}

static float from_bits(uint32_t u) {
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

static double bf16_value(uint16_t h) {
    if ((h & 0x7f80u) == 0)
        return 0.0;
    return (double)from_bits((uint32_t)h << 16);
}

static void test_round(void) {
    const struct { uint32_t in; uint16_t want; } cases[] = {
        {0x3f800000u, 0x3f80}, /* 1 */
        {0x3f808000u, 0x3f80}, /* tie, even stays */
        {0x3f818000u, 0x3f82}, /* tie, odd rounds up */
        {0x3f808001u, 0x3f81}, /* above the tie */
        {0xbf807fffu, 0xbf80}, /* below the tie, negative */
        {0x7f7fffffu, 0x7f80}, /* largest float rounds to infinity */
        {0x7f800000u, 0x7f80}, /* infinity */
        {0xff800000u, 0xff80},
        {0x00000001u, 0x0000}, /* subnormals to zero of their sign */
        {0x807fffffu, 0x8000},
        {0x00800000u, 0x0080}, /* smallest normal stays */
        {0x7f800001u, 0x7fc0}, /* signalling NaN made quiet */
        {0xffc00000u, 0xffc0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const float x = from_bits(cases[i].in);
        uint16_t got = 0;
        cpu_bf16_round(&x, 1, &got);
        SW_CHECK(got == cases[i].want, "bf16 round 0x%08x: 0x%04x, want 0x%04x", cases[i].in,
                 got, cases[i].want);
    }
    enum { N = 100000 };
    float *x = xmalloc(N * sizeof(float));
    uint16_t *h = xmalloc(N * sizeof(uint16_t));
    for (size_t i = 0; i < N; i++)
        x[i] = rng_float(-4.0f, 4.0f) * ldexpf(1.0f, (int)(rng_next() % 60) - 30);
    cpu_bf16_round(x, N, h);
    size_t bad = 0;
    for (size_t i = 0; i < N; i++)
        bad += fabs(bf16_value(h[i]) - (double)x[i]) > ldexp(fabs((double)x[i]), -8);
    SW_CHECK(bad == 0, "bf16 round: %zu values beyond 2^-8 relative", bad);
    free(x);
    free(h);
}

/* n_rows bf16 rows with awkward values when `edges`: subnormal weights,
 * tiny ones whose products underflow, a row cancelling to subnormal sums,
 * an infinity and a NaN in later rows. */
static uint8_t *make_rows(uint64_t n, uint64_t n_rows, int edges) {
    uint16_t *w = xmalloc(n * n_rows * sizeof(uint16_t));
    for (uint64_t i = 0; i < n * n_rows; i++)
        w[i] = bf16_bits(rng_float(-1.0f, 1.0f));
    if (edges && n_rows >= 6) {
        for (uint64_t i = 0; i < n; i += 3)
            w[i] = (uint16_t)(0x0001u + (rng_next() & 0x7fu)); /* row 0: subnormals */
        for (uint64_t i = 0; i < n; i++)
            w[n + i] = bf16_bits(rng_float(-1.0f, 1.0f) * 1e-30f); /* row 1: tiny */
        for (uint64_t i = 0; i < n; i++) /* row 2: +a, -a pairs near the normal limit */
            w[2 * n + i] = bf16_bits((i % 2 ? -1.0f : 1.0f) * 3e-38f * (1.0f + (float)(i % 5)));
        w[3 * n + n / 2] = 0x7f80u;                                    /* row 3: +inf */
        w[4 * n + 1] = 0x7fc1u;                                        /* row 4: NaN */
        w[5 * n + 7] = 0xff80u;                                        /* row 5: -inf */
        w[5 * n + 8] = 0x7f80u;                                        /*   and +inf */
    }
    return (uint8_t *)w;
}

static void make_x(uint16_t *x, uint64_t n, uint32_t n_x, uint64_t xs, int edges) {
    float *f = xmalloc(n * sizeof(float));
    for (uint32_t t = 0; t < n_x; t++) {
        fill_float(f, n, -2.0f, 2.0f);
        if (edges && t == 1)
            for (uint64_t i = 0; i < n; i++)
                f[i] *= 1e-10f; /* with row 1: products below 2^-126 */
        if (edges && t == 2)
            for (uint64_t i = 0; i < n; i++)
                f[i] = 1.0f; /* with row 2: sums cancelling towards zero */
        cpu_bf16_round(f, n, x + t * xs);
    }
    free(f);
}

static int same(float a, float b) {
    return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

/* The portable dot against a double dot of the same bf16 values (finite
 * rows only): the error of f32 sums over n terms. */
static void test_ref_bound(uint64_t n) {
    const cpu_bdot *ref = cpu_bdot_get(CPU_ISA_REF);
    uint8_t *w = make_rows(n, MAX_ROWS, 0);
    uint16_t *x = xmalloc(n * sizeof(uint16_t));
    make_x(x, n, 1, n, 0);
    float got[MAX_ROWS];
    ref->rows(w, 2 * n, MAX_ROWS, x, n, got);
    size_t bad = 0;
    for (uint64_t r = 0; r < MAX_ROWS; r++) {
        const uint16_t *wr = (const uint16_t *)(const void *)(w + r * 2 * n);
        double exact = 0, mag = 0;
        for (uint64_t i = 0; i < n; i++) {
            exact += bf16_value(wr[i]) * bf16_value(x[i]);
            mag += fabs(bf16_value(wr[i]) * bf16_value(x[i]));
        }
        bad += fabs((double)got[r] - exact) > (double)(n / 16 + 8) * FLT_EPSILON * mag;
    }
    SW_CHECK(bad == 0, "bdot ref n %llu: %zu rows beyond the f32 summation bound",
             (unsigned long long)n, bad);
    free(w);
    free(x);
}

/* Native rows and tiles against the portable ones, bit for bit. */
static void test_native(uint64_t n, int edges) {
    const cpu_bdot *ref = cpu_bdot_get(CPU_ISA_REF), *nat = cpu_bdot_get(CPU_ISA_AVX512);
    uint8_t *w = make_rows(n, MAX_ROWS, edges);
    const uint64_t xs = n + 32; /* rows of activations further apart than n */
    uint16_t *x = xmalloc(xs * MAX_X * sizeof(uint16_t));
    make_x(x, n, MAX_X, xs, edges);
    float want[MAX_X][MAX_ROWS], got[MAX_X][MAX_ROWS];
    for (uint32_t t = 0; t < MAX_X; t++)
        ref->rows(w, 2 * n, MAX_ROWS, x + t * xs, n, want[t]);
    for (uint64_t nr = 1; nr <= MAX_ROWS; nr++) {
        for (uint32_t t = 0; t < MAX_X; t++) {
            nat->rows(w, 2 * n, nr, x + t * xs, n, got[t]);
            size_t bad = 0;
            for (uint64_t r = 0; r < nr; r++)
                bad += !same(got[t][r], want[t][r]);
            SW_CHECK(bad == 0, "bdot native rows n %llu%s, %llu rows, token %u: %zu differ",
                     (unsigned long long)n, edges ? " (edges)" : "", (unsigned long long)nr, t,
                     bad);
        }
    }
    for (uint32_t nr = 1; nr <= 6; nr++)
        for (uint32_t nx = 1; nx <= MAX_X; nx++) {
            for (uint32_t t = 0; t < MAX_X; t++)
                for (uint32_t r = 0; r < MAX_ROWS; r++)
                    got[t][r] = -1.0f;
            nat->tile(w, 2 * n, nr, x, xs, nx, n, &got[0][0], MAX_ROWS);
            size_t bad = 0, wrote = 0;
            for (uint32_t t = 0; t < MAX_X; t++)
                for (uint32_t r = 0; r < MAX_ROWS; r++) {
                    if (r < nr && t < nx)
                        bad += !same(got[t][r], want[t][r]);
                    else
                        wrote += got[t][r] != -1.0f;
                }
            SW_CHECK(bad == 0 && wrote == 0, "bdot native tile n %llu%s, %u x %u: %zu differ, "
                     "%zu written outside", (unsigned long long)n, edges ? " (edges)" : "", nr,
                     nx, bad, wrote);
        }
    free(w);
    free(x);
}

/* cpu_matmul over bf16 weights with a bf16 workspace. */
static void test_matmul(uint64_t ne0, uint64_t n_rows, uint32_t n_tokens, int n_threads) {
    uint8_t *w = make_rows(ne0, n_rows, 0);
    float *x = xmalloc(ne0 * n_tokens * sizeof(float));
    float *y = xmalloc(n_rows * n_tokens * sizeof(float));
    float *want = xmalloc(n_rows * n_tokens * sizeof(float));
    uint16_t *xb = xmalloc(ne0 * sizeof(uint16_t));
    fill_float(x, ne0 * n_tokens, -2.0f, 2.0f);
    const tensor_view tv = {.name = "w", .type = SW_TYPE_BF16, .n_dims = 2,
                            .ne = {ne0, n_rows, 1, 1}, .n_bytes = 2 * ne0 * n_rows, .data = w};
    cpu_pool *pool = NULL;
    cpu_mm_scratch *ws = NULL, *exact = NULL;
    SW_CHECK_OK(cpu_pool_create(n_threads, &pool));
    SW_CHECK_OK(cpu_mm_scratch_create(n_threads, ne0, &ws));
    SW_CHECK_OK(cpu_mm_scratch_create(n_threads, ne0, &exact));
    if (ws == NULL || exact == NULL || pool == NULL)
        return;
    cpu_mm_scratch_set_bf16(ws, true);
    cpu_mm_scratch_set_exact(exact, true);
    const bool blocks = ne0 % CPU_BDOT_BLOCK == 0;
    if (blocks) {
        for (uint32_t t = 0; t < n_tokens; t++) {
            cpu_bf16_round(x + t * ne0, ne0, xb);
            cpu_bdot_get(CPU_ISA_REF)->rows(w, 2 * ne0, n_rows, xb, ne0, want + t * n_rows);
        }
    } else {
        SW_CHECK_OK(cpu_matmul(pool, exact, &tv, x, want, n_tokens));
    }
    SW_CHECK_OK(cpu_matmul(pool, ws, &tv, x, y, n_tokens));
    size_t bad = 0;
    for (uint64_t i = 0; i < n_rows * n_tokens; i++)
        bad += !same(y[i], want[i]);
    SW_CHECK(bad == 0, "bf16 matmul ne0 %llu, %llu rows, %u tokens, %d threads: %zu outputs "
             "differ from the %s", (unsigned long long)ne0, (unsigned long long)n_rows, n_tokens,
             n_threads, bad, blocks ? "portable bf16 dot" : "exact path");
    /* the exact workspace wins: f32 activations, not the bf16 dot */
    cpu_mm_scratch_set_bf16(exact, true);
    SW_CHECK_OK(cpu_matmul(pool, exact, &tv, x, y, n_tokens));
    cpu_mm_scratch_set_bf16(ws, false);
    SW_CHECK_OK(cpu_matmul(pool, ws, &tv, x, want, n_tokens));
    size_t first = 0;
    SW_CHECK(bits_equal(y, want, n_rows * n_tokens, &first),
             "bf16 matmul ne0 %llu: exact with bf16 set differs from the f32 path",
             (unsigned long long)ne0);
    cpu_mm_scratch_destroy(ws);
    cpu_mm_scratch_destroy(exact);
    cpu_pool_destroy(pool);
    free(w);
    free(x);
    free(y);
    free(want);
    free(xb);
}

int main(void) {
    test_round();
    const uint64_t lens[] = {32, 64, 96, 640, 2304};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
        test_ref_bound(lens[i]);
    if (!cpu_bdot_native()) {
        printf("test_bdot: AVX-512 BF16 not available on this CPU or build: its kernels are "
               "compiled but not run here\n");
    } else {
        for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
            test_native(lens[i], 0);
            test_native(lens[i], 1);
        }
    }
    const uint32_t toks[] = {1, 3, 70};
    for (size_t i = 0; i < sizeof toks / sizeof toks[0]; i++)
        for (int th = 1; th <= 2; th++) {
            test_matmul(640, 37, toks[i], th);
            test_matmul(48, 9, toks[i], th); /* not whole blocks: the f32 path */
        }
    return sw_check_finish("test_bdot");
}
