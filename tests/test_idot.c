/*
 * test_idot.c — the integer dot path of the CPU backend: activation
 * quantization (qact.h) against its stated bounds, and every integer
 * kernel (idot.h), coarse and fine forms, on every kernel set against the
 * portable reference, bit for bit, and against a double-precision dot of
 * the dequantized weights with the dequantized activations (the min
 * types, Q4_1 and Q5_1, also over every block count past a multiple of 8
 * and with extreme scales and mins); the fine
 * form is closer to the f32 dot than the coarse one on rows whose
 * magnitude swings (as the GeGLU product's does).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/idot.h"
#include "backend/cpu/qact.h"
#include "check.h"
#include "cpu_test_util.h"
#include "quant/dequant.h"
#include "quant/types.h"

static const uint32_t idot_types[] = {SW_TYPE_Q4_0, SW_TYPE_Q5_0, SW_TYPE_Q8_0,
                                      SW_TYPE_Q4_1, SW_TYPE_Q5_1, SW_TYPE_Q4_K,
                                      SW_TYPE_Q5_K, SW_TYPE_Q6_K};
enum { N_IDOT = sizeof idot_types / sizeof idot_types[0], N_X = 7, N_ROWS = 5 };

/* Dequantized activation element i of a quantized row. */
static double xq_value(cpu_qact_fmt fmt, const uint8_t *row, uint64_t n, uint64_t i) {
    return (double)cpu_qact_scales(row, n)[i / fmt] * (double)((const int8_t *)row)[i];
}

/* Rows with a zero block, a tiny (subnormal) block, a NaN, an infinity:
 * each block's q within the bound, the sums right, non-finite blocks NaN. */
static void test_quantize(cpu_qact_fmt fmt) {
    const uint64_t n = 1024;
    const uint32_t rows = 3;
    float *x = xmalloc(n * rows * sizeof(float));
    uint8_t *q = xmalloc(cpu_qact_stride(fmt, n) * rows);
    fill_float(x, n * rows, -3.0f, 3.0f);
    memset(x, 0, fmt * sizeof(float));                      /* block 0: zeros */
    for (uint32_t i = 0; i < fmt; i++)
        x[fmt + i] = 1e-41f * (float)(i % 3);               /* block 1: subnormal */
    x[n + 5] = NAN;                                         /* row 1, block 0 */
    x[2 * n + 3 * fmt + 1] = INFINITY;                      /* row 2, block 3 */
    cpu_qact_quantize(fmt, x, n, rows, q);
    const uint64_t st = cpu_qact_stride(fmt, n);
    SW_CHECK(st % 64 == 0 && st >= n + 4 * (n / fmt) + 2 * (n / 16), "stride %llu",
             (unsigned long long)st);
    size_t bad = 0, bad_sums = 0, bad_nan = 0;
    for (uint32_t r = 0; r < rows; r++) {
        const uint8_t *qr = q + r * st;
        const float *d = cpu_qact_scales(qr, n);
        for (uint64_t b = 0; b < n / fmt; b++) {
            const bool poisoned = (r == 1 && b == 0) || (r == 2 && b == 3);
            if (poisoned) {
                bad_nan += !isnan(d[b]);
                continue;
            }
            for (uint64_t i = b * fmt; i < (b + 1) * fmt; i++) {
                const double err = fabs((double)x[r * n + i] - xq_value(fmt, qr, n, i));
                if (!(err <= (double)d[b] * 0.5 * (1 + 1e-6) + 1e-38))
                    bad++;
            }
        }
        const int16_t *bs = cpu_qact_bsums(fmt, qr, n);
        for (uint64_t g = 0; g < n / 16; g++) {
            int s = 0;
            for (int i = 0; i < 16; i++)
                s += ((const int8_t *)qr)[16 * g + (uint64_t)i];
            bad_sums += s != bs[g];
        }
    }
    /* every kernel set gives the plain C's bytes */
    uint8_t *q2 = xmalloc(st * rows);
    cpu_qact_quantize_isa(CPU_ISA_REF, fmt, x, n, rows, q);
    for (int i = 0; i < CPU_ISA_COUNT; i++) {
        if (!cpu_isa_supported((cpu_isa)i))
            continue;
        cpu_qact_quantize_isa((cpu_isa)i, fmt, x, n, rows, q2);
        size_t differ = 0;
        for (uint32_t r = 0; r < rows; r++)
            differ += memcmp(q + r * st, q2 + r * st, n + 4 * (n / fmt) + 2 * (n / 16)) != 0;
        SW_CHECK(differ == 0, "qact %d on %s: %zu rows differ from plain C's", (int)fmt,
                 cpu_isa_name((cpu_isa)i), differ);
    }
    free(q2);
    SW_CHECK(bad == 0, "qact %d: %zu elements beyond d/2", (int)fmt, bad);
    SW_CHECK(bad_sums == 0, "qact %d: %zu wrong block sums", (int)fmt, bad_sums);
    SW_CHECK(bad_nan == 0, "qact %d: non-finite blocks must get a NaN scale", (int)fmt);
    free(x);
    free(q);
}

typedef const cpu_idot *(*idot_get_fn)(cpu_isa isa, uint32_t type);

/* The unpacked tile kernels (where a set has one): all N_ROWS rows with
 * all N_X tokens in one call, and each smaller shape, against the
 * reference's dots bit for bit. */
static void test_tile(uint32_t type, uint64_t ne0, idot_get_fn get, const uint8_t *w,
                      uint64_t row_bytes, const uint8_t *xq, uint64_t st) {
    const cpu_idot *ref = get(CPU_ISA_REF, type);
    float want[N_ROWS * N_X], got[N_ROWS * N_X];
    for (uint64_t r = 0; r < N_ROWS; r++)
        for (uint32_t t = 0; t < N_X; t++)
            ref->dot(w + r * row_bytes, xq + t * st, st, 1, ne0, want + t * N_ROWS + r);
    for (int i = 0; i < CPU_ISA_COUNT; i++) {
        const cpu_isa isa = (cpu_isa)i;
        const cpu_idot *k = get(isa, type);
        if (!cpu_isa_supported(isa) || k->unpacked_tile == NULL)
            continue;
        const uint64_t ub = ne0 / k->unpack_elems * k->unpack_bytes;
        uint8_t *u = xmalloc(ub * N_ROWS);
        for (uint64_t r = 0; r < N_ROWS; r++)
            k->unpack(w + r * row_bytes, ne0, u + r * ub);
        for (uint32_t nr = 1; nr <= N_ROWS; nr++)
            for (uint32_t nx = 1; nx <= N_X; nx++) {
                for (size_t j = 0; j < N_ROWS * N_X; j++)
                    got[j] = -1.0f;
                k->unpacked_tile(u, ub, nr, xq, st, nx, ne0, got, N_ROWS);
                size_t bad = 0, wrote = 0;
                for (uint32_t t = 0; t < N_X; t++)
                    for (uint32_t r = 0; r < N_ROWS; r++) {
                        const size_t j = t * N_ROWS + r;
                        if (r < nr && t < nx)
                            bad += memcmp(&got[j], &want[j], sizeof got[j]) != 0;
                        else
                            wrote += got[j] != -1.0f;
                    }
                SW_CHECK(bad == 0 && wrote == 0,
                         "%s idot %s %s ne0 %llu, tile %u rows x %u tokens: %zu dots differ "
                         "from the reference, %zu written outside", cpu_isa_name(isa),
                         get == cpu_idot_get_fine ? "fine" : "coarse", type_name(type),
                         (unsigned long long)ne0, nr, nx, bad, wrote);
            }
        free(u);
    }
}

/* One type, row length and form (cpu_idot_get or cpu_idot_get_fine):
 * N_ROWS rows with N_X tokens, in calls of 4 + 3 tokens and of 1, on
 * every ISA. */
/* The min types' (Q4_1, Q5_1) blocks with extreme scales and mins: the
 * largest f16, subnormals, zeros, negative and positive mins, every few
 * blocks; and one token's activations 1e6 times larger, another's 1e-6
 * times (their scales' products with the weights' far from 1). */
static bool extreme;

static void make_extreme(uint32_t type, uint8_t *w, uint64_t n_bytes, float *x, uint64_t ne0) {
    static const uint16_t h[] = {0x7bff, 0x0001, 0x0000, 0x8001, 0xfbff, 0x3c00, 0x0400,
                                 0xb555, 0x03ff};
    enum { NH = sizeof h / sizeof h[0] };
    const uint32_t bb = type_get_traits(type)->block_bytes;
    for (uint64_t b = 0; b < n_bytes / bb; b++) {
        if (b % 3 != 0)
            continue;
        memcpy(w + b * bb, &h[(b / 3) % NH], 2);
        memcpy(w + b * bb + 2, &h[(b / 3 + 4) % NH], 2);
    }
    for (uint64_t c = 0; c < ne0; c++) {
        x[ne0 + c] *= 1e6f;
        x[2 * ne0 + c] *= 1e-6f;
    }
}

static void test_kernel(uint32_t type, uint64_t ne0, idot_get_fn get) {
    const char *form = get == cpu_idot_get_fine ? "fine" : "coarse";
    const cpu_idot *ref = get(CPU_ISA_REF, type);
    SW_CHECK(ref != NULL, "%s: no integer kernel", type_name(type));
    if (ref == NULL)
        return;
    uint64_t n_bytes, row_bytes;
    uint8_t *w = random_weights(type, ne0, N_ROWS, &n_bytes);
    type_row_bytes(type, ne0, &row_bytes);
    float *deq = xmalloc(ne0 * N_ROWS * sizeof(float)), *x = xmalloc(ne0 * N_X * sizeof(float));
    const uint64_t st = cpu_qact_stride(ref->fmt, ne0);
    uint8_t *xq = xmalloc(st * N_X);
    fill_float(x, ne0 * N_X, -2.0f, 2.0f);
    if (extreme)
        make_extreme(type, w, n_bytes, x, ne0);
    cpu_qact_quantize(ref->fmt, x, ne0, N_X, xq);
    SW_CHECK_OK(quant_dequantize(type, w, deq, ne0 * N_ROWS));
    float want[N_X], got[N_X];
    double exact[N_X], mag[N_X];
    for (uint64_t r = 0; r < N_ROWS; r++) {
        const uint8_t *row = w + r * row_bytes;
        ref->dot(row, xq, st, 4, ne0, want);
        ref->dot(row, xq + 4 * st, st, 3, ne0, want + 4);
        for (uint32_t t = 0; t < N_X; t++) {
            exact[t] = mag[t] = 0.0;
            for (uint64_t c = 0; c < ne0; c++) {
                const double p = (double)deq[r * ne0 + c] * xq_value(ref->fmt, xq + t * st, ne0, c);
                exact[t] += p;
                mag[t] += fabs(p);
            }
        }
        char what[96];
        size_t n_far = 0;
        for (uint32_t t = 0; t < N_X; t++)
            n_far += !(fabs((double)want[t] - exact[t]) <= 1e-5 * mag[t] + 1e-30);
        SW_CHECK(n_far == 0, "ref %s %s%s ne0 %llu row %llu: %zu of %d dots beyond 1e-5 of "
                 "the exact sum (first: %.9g vs %.9g)", form, extreme ? "extreme " : "",
                 type_name(type),
                 (unsigned long long)ne0, (unsigned long long)r, n_far, N_X, (double)want[0],
                 exact[0]);
        for (int i = 0; i < CPU_ISA_COUNT; i++) {
            const cpu_isa isa = (cpu_isa)i;
            if (!cpu_isa_supported(isa))
                continue;
            const cpu_idot *k = get(isa, type);
            k->dot(row, xq, st, 4, ne0, got);
            k->dot(row, xq + 4 * st, st, 3, ne0, got + 4);
            snprintf(what, sizeof what, "%s idot %s %s ne0 %llu row %llu, 4+3 tokens",
                     cpu_isa_name(isa), form, type_name(type), (unsigned long long)ne0,
                     (unsigned long long)r);
            check_bits(what, got, want, N_X);
            for (uint32_t t = 0; t < N_X; t++)
                k->dot(row, xq + t * st, st, 1, ne0, got + t);
            snprintf(what, sizeof what, "%s idot %s %s ne0 %llu row %llu, 1 token at a time",
                     cpu_isa_name(isa), form, type_name(type), (unsigned long long)ne0,
                     (unsigned long long)r);
            check_bits(what, got, want, N_X);
            if (r == 0) { /* all rows in one call */
                float rows_got[N_ROWS], rows_want[N_ROWS];
                for (uint64_t q = 0; q < N_ROWS; q++)
                    ref->dot(w + q * row_bytes, xq, st, 1, ne0, rows_want + q);
                k->rows(w, row_bytes, N_ROWS, xq, ne0, rows_got);
                snprintf(what, sizeof what, "%s idot %s %s ne0 %llu, %d rows in one call",
                         cpu_isa_name(isa), form, type_name(type), (unsigned long long)ne0,
                         N_ROWS);
                check_bits(what, rows_got, rows_want, N_ROWS);
            }
            if (k->unpack == NULL)
                continue;
            uint8_t *u = xmalloc(ne0 / k->unpack_elems * k->unpack_bytes);
            k->unpack(row, ne0, u);
            k->unpacked_dot(u, xq, st, 4, ne0, got);
            k->unpacked_dot(u, xq + 4 * st, st, 3, ne0, got + 4);
            snprintf(what, sizeof what, "%s idot %s %s ne0 %llu row %llu, unpacked",
                     cpu_isa_name(isa), form, type_name(type), (unsigned long long)ne0,
                     (unsigned long long)r);
            check_bits(what, got, want, N_X);
            free(u);
        }
    }
    test_tile(type, ne0, get, w, row_bytes, xq, st);
    free(w);
    free(deq);
    free(x);
    free(xq);
}

/* A NaN in the activations comes out as NaN, as in the f32 path. */
static void test_nan(uint32_t type, idot_get_fn get) {
    const cpu_idot *k = get(cpu_isa_best(), type);
    const uint64_t ne0 = 512;
    uint64_t n_bytes;
    uint8_t *w = random_weights(type, ne0, 1, &n_bytes);
    float *x = xmalloc(ne0 * sizeof(float));
    uint8_t *xq = xmalloc(cpu_qact_stride(k->fmt, ne0));
    fill_float(x, ne0, -1.0f, 1.0f);
    x[300] = NAN;
    cpu_qact_quantize(k->fmt, x, ne0, 1, xq);
    float out = 0.0f, rows_out = 0.0f;
    k->dot(w, xq, 0, 1, ne0, &out);
    SW_CHECK(isnan(out), "%s: NaN activation gave %g", type_name(type), (double)out);
    k->rows(w, 0, 1, xq, ne0, &rows_out);
    SW_CHECK(isnan(rows_out), "%s rows: NaN activation gave %g", type_name(type),
             (double)rows_out);
    free(w);
    free(x);
    free(xq);
}

/* Rows like the GeGLU product: small values with one large one per 256.
 * Against the dot of the dequantized weights with the exact activations,
 * the fine form's error is a fraction of the coarse form's (whose step,
 * set by the large value, rounds the small ones to 0). */
static void test_fine_closer(uint32_t type) {
    const uint64_t ne0 = 2048;
    enum { ROWS = 16 };
    uint64_t n_bytes, row_bytes;
    uint8_t *w = random_weights(type, ne0, ROWS, &n_bytes);
    type_row_bytes(type, ne0, &row_bytes);
    float *deq = xmalloc(ne0 * ROWS * sizeof(float)), *x = xmalloc(ne0 * sizeof(float));
    fill_float(x, ne0, -0.02f, 0.02f);
    for (uint64_t i = 100; i < ne0; i += 256)
        x[i] = 8.0f;
    SW_CHECK_OK(quant_dequantize(type, w, deq, ne0 * ROWS));
    const cpu_idot *coarse = cpu_idot_get(cpu_isa_best(), type);
    const cpu_idot *fine = cpu_idot_get_fine(cpu_isa_best(), type);
    uint8_t *xc = xmalloc(cpu_qact_stride(coarse->fmt, ne0));
    uint8_t *xf = xmalloc(cpu_qact_stride(fine->fmt, ne0));
    cpu_qact_quantize(coarse->fmt, x, ne0, 1, xc);
    cpu_qact_quantize(fine->fmt, x, ne0, 1, xf);
    double err_c = 0, err_f = 0;
    for (uint64_t r = 0; r < ROWS; r++) {
        double exact = 0;
        for (uint64_t i = 0; i < ne0; i++)
            exact += (double)deq[r * ne0 + i] * x[i];
        float yc, yf;
        coarse->dot(w + r * row_bytes, xc, 0, 1, ne0, &yc);
        fine->dot(w + r * row_bytes, xf, 0, 1, ne0, &yf);
        err_c += (yc - exact) * (yc - exact);
        err_f += (yf - exact) * (yf - exact);
    }
    /* The coarse form loses every small value of a super-block, the fine
     * one those of the large value's chunk, 1 in 8: sqrt(1/8) = 0.35 of
     * the coarse error expected. */
    SW_CHECK(fine->fmt == CPU_QACT_32 && 2 * sqrt(err_f) < sqrt(err_c),
             "%s: fine form RMS error %.3g, coarse %.3g", type_name(type), sqrt(err_f / ROWS),
             sqrt(err_c / ROWS));
    free(w);
    free(deq);
    free(x);
    free(xc);
    free(xf);
}

int main(void) {
    test_quantize(CPU_QACT_32);
    test_quantize(CPU_QACT_256);
    for (int i = 0; i < CPU_ISA_COUNT; i++)
        if (!cpu_isa_supported((cpu_isa)i))
            printf("test_idot: ISA %s not available on this CPU or build: its kernels are "
                   "compiled but not run here\n", cpu_isa_name((cpu_isa)i));
    for (int i = 0; i < N_IDOT; i++) {
        const bool k = type_get_traits(idot_types[i])->block_elems == 256;
        /* one block, an even and an odd number (the two accumulator sets;
         * AVX-512 takes blocks or chunks in pairs) */
        for (int f = 0; f < 2; f++) {
            const idot_get_fn get = f ? cpu_idot_get_fine : cpu_idot_get;
            test_kernel(idot_types[i], k ? 256 : 32, get);
            test_kernel(idot_types[i], k ? 512 : 768, get);
            test_kernel(idot_types[i], k ? 768 : 800, get);
            /* wider than the stack copy of the activations that AVX-512's
             * Q4_K rows take, and than the lane sums of its 32-element
             * rows (32768: wider rows go to AVX2's kernel) */
            test_kernel(idot_types[i], k ? 33024 : 32800, get);
            /* the widest row AVX-512's 32-element rows take themselves */
            if (!k)
                test_kernel(idot_types[i], 32768, get);
            /* the min types: their mins go by 8 blocks (idot.h), so every
             * count of blocks past the last 8, and extreme scales */
            if (idot_types[i] == SW_TYPE_Q4_1 || idot_types[i] == SW_TYPE_Q5_1) {
                for (uint64_t nb = 2; nb <= 17; nb++)
                    test_kernel(idot_types[i], 32 * nb, get);
                extreme = true;
                test_kernel(idot_types[i], 32 * 13, get);
                test_kernel(idot_types[i], 32 * 64, get);
                test_kernel(idot_types[i], 32 * 1031, get);
                extreme = false;
            }
            test_nan(idot_types[i], get);
        }
        if (k)
            test_fine_closer(idot_types[i]);
        else
            SW_CHECK(cpu_idot_get_fine(cpu_isa_best(), idot_types[i])->dot ==
                         cpu_idot_get(cpu_isa_best(), idot_types[i])->dot,
                     "%s: per 32 already, its own fine form", type_name(idot_types[i]));
    }
    const uint32_t none[] = {SW_TYPE_F32, SW_TYPE_F16, SW_TYPE_BF16, SW_TYPE_Q2_K,
                             SW_TYPE_Q3_K, SW_TYPE_Q8_K};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
        SW_CHECK(cpu_idot_get(cpu_isa_best(), none[i]) == NULL &&
                     cpu_idot_get_fine(cpu_isa_best(), none[i]) == NULL,
                 "%s has no integer kernel", type_name(none[i]));
    return sw_check_finish("test_idot");
}
