/*
 * test_vmath.c — vmath.h: cpu_tanhf against double tanh (within 2 ulp on
 * sweeps and at the edges: 0, -0, the branch point, the clamp, +-Inf,
 * NaN, subnormals), and every kernel set (REF, GENERIC, AVX2 where the
 * CPU has it) bit for bit against the scalar definition for tanh, GeGLU,
 * soft-cap and the weighted row sum, at lengths that exercise every tail.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/vmath.h"
#include "check.h"
#include "cpu_test_util.h"

/* |got - want| in units of the f32 spacing at want */
static double ulps(float got, double want) {
    const float w = (float)want;
    const double sp = (double)nextafterf(fabsf(w), INFINITY) - (double)fabsf(w);
    return fabs((double)got - want) / sp;
}

static void test_accuracy(void) {
    enum { N = 200000 };
    double worst = 0.0;
    float at = 0.0f;
    for (int i = 0; i < N; i++) {
        float y;
        if (i < N / 4)
            y = rng_float(-12.0f, 12.0f);
        else if (i < N / 2)
            y = rng_float(-1.0f, 1.0f);
        else if (i < 3 * N / 4)
            y = rng_float(0.6f, 0.65f) * (i % 2 ? 1.0f : -1.0f);
        else
            y = rng_float(-1e-3f, 1e-3f);
        const double e = ulps(cpu_tanhf(y), tanh((double)y));
        if (e > worst) {
            worst = e;
            at = y;
        }
    }
    printf("test_vmath: cpu_tanhf worst %.3f ulp at %.9g over %d points\n", worst, (double)at,
           N);
    SW_CHECK(worst <= 2.0, "tanh %.3f ulp from tanh at %.9g", worst, (double)at);

    const float edge[] = {0.625f, nextafterf(0.625f, 0.0f), 10.0f, 9.5f, 10.5f, 30.0f,
                          1e-30f, 1e-41f, 3.0f, 0.1f};
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++)
        for (int s = -1; s <= 1; s += 2) {
            const float y = (float)s * edge[i];
            const double e = ulps(cpu_tanhf(y), tanh((double)y));
            SW_CHECK(e <= 2.0, "tanh(%g): %.3f ulp", (double)y, e);
        }
    const float z = cpu_tanhf(0.0f), nz = cpu_tanhf(-0.0f);
    SW_CHECK(z == 0.0f && !signbit(z), "tanh(0) = %g", (double)z);
    SW_CHECK(nz == 0.0f && signbit(nz), "tanh(-0) keeps the sign");
    SW_CHECK(cpu_tanhf(INFINITY) == 1.0f && cpu_tanhf(-INFINITY) == -1.0f, "tanh(+-Inf)");
    SW_CHECK(isnan(cpu_tanhf(NAN)), "tanh(NaN) is NaN");
    SW_CHECK(cpu_tanhf(1e30f) == 1.0f && cpu_tanhf(-1e30f) == -1.0f, "tanh saturates");
}

/* Inputs with the edges mixed in, so every lane meets both branches. */
static void fill_mixed(float *x, size_t n) {
    fill_float(x, n, -8.0f, 8.0f);
    const float special[] = {0.0f, -0.0f, 0.625f, -0.625f, 10.0f, -11.0f, INFINITY, -INFINITY,
                             NAN, 1e-41f, 0.3f, -2.0f};
    for (size_t i = 0; i < n; i += 7)
        x[i] = special[(i / 7) % (sizeof special / sizeof special[0])];
}

static bool same(float a, float b) {
    return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

static void check_same(const char *what, const char *set, size_t n, const float *got,
                       const float *want) {
    size_t bad = n;
    for (size_t i = 0; i < n && bad == n; i++)
        if (!same(got[i], want[i]))
            bad = i;
    SW_CHECK(bad == n, "%s (%s, n %zu): element %zu is %.9g, want %.9g", what, set, n, bad,
             bad < n ? (double)got[bad] : 0.0, bad < n ? (double)want[bad] : 0.0);
}

static void test_sets(void) {
    enum { NMAX = 301 };
    static float x[NMAX], u[NMAX], want[NMAX], got[NMAX], inplace[NMAX];
    const cpu_isa isas[] = {CPU_ISA_REF, CPU_ISA_GENERIC, CPU_ISA_AVX2, CPU_ISA_AVX512};
    const char *names[] = {"ref", "generic", "avx2", "avx512"};
    if (!cpu_isa_supported(CPU_ISA_AVX2))
        printf("test_vmath: AVX2 not available here: its set falls back\n");
    const size_t lens[] = {0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, NMAX};
    for (size_t k = 0; k < sizeof isas / sizeof isas[0]; k++) {
        const cpu_vmath *vm = cpu_vmath_get(isas[k]);
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
            const size_t n = lens[li];
            fill_mixed(x, NMAX);
            fill_float(u, NMAX, -2.0f, 2.0f);
            /* tanh, and the out-of-range guard: elements past n untouched */
            for (size_t i = 0; i < n; i++)
                want[i] = cpu_tanhf(x[i]);
            for (size_t i = 0; i < NMAX; i++)
                got[i] = -7.0f;
            vm->tanh(x, got, n);
            check_same("tanh", names[k], n, got, want);
            SW_CHECK(n == NMAX || got[n] == -7.0f, "tanh wrote past n (%s)", names[k]);
            /* GeGLU against PyTorch's order over cpu_tanhf, and in place */
            for (size_t i = 0; i < n; i++) {
                const float g = x[i];
                const float inner = 0.7978845608028654f * (g + 0.044715f * (g * g * g));
                want[i] = 0.5f * g * (1.0f + cpu_tanhf(inner)) * u[i];
            }
            vm->geglu(x, u, got, n);
            check_same("geglu", names[k], n, got, want);
            memcpy(inplace, x, sizeof inplace);
            vm->geglu(inplace, u, inplace, n);
            check_same("geglu in place", names[k], n, inplace, want);
            /* soft-cap */
            for (size_t i = 0; i < n; i++)
                want[i] = cpu_tanhf((x[i] * 20.0f) / 30.0f) * 30.0f;
            for (size_t i = 0; i < n; i++)
                got[i] = x[i] * 20.0f;
            vm->softcap(got, n, 30.0f);
            check_same("softcap", names[k], n, got, want);
        }
    }
}

/* o += sum_i w[i] * v[i]: bits of the row-by-row loop, and near double. */
static void test_wsum(void) {
    enum { ROWS = 37, STRIDE = 300 };
    float *v = xmalloc(ROWS * STRIDE * sizeof(float));
    float w[ROWS], o0[STRIDE], want[STRIDE], got[STRIDE];
    double ref[STRIDE];
    fill_float(v, ROWS * STRIDE, -1.0f, 1.0f);
    fill_float(w, ROWS, 0.0f, 0.1f);
    fill_float(o0, STRIDE, -0.5f, 0.5f);
    const size_t dims[] = {1, 7, 8, 32, 33, 64, 100, 256, STRIDE};
    const cpu_isa isas[] = {CPU_ISA_REF, CPU_ISA_GENERIC, CPU_ISA_AVX2, CPU_ISA_AVX512};
    const char *names[] = {"ref", "generic", "avx2", "avx512"};
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
        const size_t n = dims[di];
        for (size_t d = 0; d < n; d++) {
            float a = o0[d];
            double r = o0[d];
            for (size_t i = 0; i < ROWS; i++) {
                a = a + w[i] * v[i * STRIDE + d];
                r += (double)w[i] * v[i * STRIDE + d];
            }
            want[d] = a;
            ref[d] = r;
        }
        check_close("wsum near double", want, ref, n, 1e-6, 1e-5);
        for (size_t k = 0; k < sizeof isas / sizeof isas[0]; k++) {
            memcpy(got, o0, sizeof got);
            cpu_vmath_get(isas[k])->wsum(v, STRIDE, w, ROWS, got, n);
            check_same("wsum", names[k], n, got, want);
            SW_CHECK(n == STRIDE || same(got[n], o0[n]), "wsum wrote past n (%s)", names[k]);
        }
    }
    free(v);
}

int main(void) {
    test_accuracy();
    test_sets();
    test_wsum();
    return sw_check_finish("test_vmath");
}
