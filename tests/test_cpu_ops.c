/*
 * test_cpu_ops.c — the CPU backend's kernels and thread pool.
 *
 * Each kernel is checked against a naive double-precision reference on
 * random inputs (atol + rtol*|ref|, printing the first mismatches and the
 * max difference). On top of that, bitwise checks of the determinism
 * contract: every fast dequantizer and fused dot, on every ISA this CPU
 * runs, equals quant_dequantize() followed by the canonical dot of qdot.h;
 * matmul and attention give the same bits for 1-4 threads and for any
 * batch size; a ring-indexed sliding-window cache equals a linear one.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */

#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/idot.h"
#include "backend/cpu/qdot.h"
#include "check.h"
#include "cpu_test_util.h"
#include "quant/dequant.h"
#include "quant/half.h"
#include "quant/types.h"

/* Row length for a type: whole blocks, and a length with a 16-tail for
 * the plain types. */
static uint64_t test_ne0(uint32_t type) {
    const type_traits *t = type_get_traits(type);
    return t->block_elems == 1 ? 300 : 512;
}

/* ---- dequantizers and fused dots, per ISA ----------------------------- */

/* Every 16-bit pattern through the F16 and BF16 row dequantizers, NaN
 * payloads included: the branch-free f16 conversion must equal half.h. */
static void test_half_exhaustive(cpu_isa isa) {
    uint8_t *src = xmalloc(65536 * 2);
    float *want = xmalloc(65536 * sizeof(float)), *got = xmalloc(65536 * sizeof(float));
    for (uint32_t i = 0; i < 65536; i++) {
        src[2 * i] = (uint8_t)i;
        src[2 * i + 1] = (uint8_t)(i >> 8);
    }
    const uint32_t types[2] = {SW_TYPE_F16, SW_TYPE_BF16};
    for (int k = 0; k < 2; k++) {
        char what[64];
        snprintf(what, sizeof what, "%s all 65536 %s values", cpu_isa_name(isa),
                 type_name(types[k]));
        SW_CHECK_OK(quant_dequantize(types[k], src, want, 65536));
        const cpu_qkernel *kern = cpu_qkernel_get(isa, types[k]);
        kern->dequant(src, got, 65536);
        check_bits(what, got, want, 65536);
        for (uint32_t i = 0; i < 65536; i++) /* the scalar (row tail) path */
            kern->dequant(src + 2 * i, got + i, 1);
        snprintf(what, sizeof what, "%s all 65536 %s values, one by one", cpu_isa_name(isa),
                 type_name(types[k]));
        check_bits(what, got, want, 65536);
    }
    free(src);
    free(want);
    free(got);
}

/* Fast row dequantizer == quant_dequantize, bitwise, for one type. */
static void test_dequant_kernel(cpu_isa isa, uint32_t type) {
    const uint64_t ne0 = test_ne0(type), n_rows = 5, n = ne0 * n_rows;
    uint64_t n_bytes;
    uint8_t *w = random_weights(type, ne0, n_rows, &n_bytes);
    float *want = xmalloc(n * sizeof(float)), *got = xmalloc(n * sizeof(float));
    char what[64];
    snprintf(what, sizeof what, "%s dequant %s", cpu_isa_name(isa), type_name(type));
    const cpu_qkernel *k = cpu_qkernel_get(isa, type);
    SW_CHECK(k != NULL, "%s: no kernel", what);
    if (k != NULL) {
        SW_CHECK_OK(quant_dequantize(type, w, want, n));
        k->dequant(w, got, n);
        check_bits(what, got, want, n);
    }
    free(w);
    free(want);
    free(got);
}

/* Fused dot (7 rows of x: one group of 4, then 3 singles) == the canonical
 * dot of the quant_dequantize()d row, bitwise. */
static void test_fused_dot(cpu_isa isa, uint32_t type) {
    const uint64_t ne0 = test_ne0(type), n_rows = 4;
    const uint32_t n_x = 7;
    uint64_t n_bytes, row_bytes;
    uint8_t *w = random_weights(type, ne0, n_rows, &n_bytes);
    type_row_bytes(type, ne0, &row_bytes);
    float *deq = xmalloc(ne0 * n_rows * sizeof(float)), *x = xmalloc(ne0 * n_x * sizeof(float));
    float got[7], want[7];
    fill_float(x, ne0 * n_x, -1.0f, 1.0f);
    SW_CHECK_OK(quant_dequantize(type, w, deq, ne0 * n_rows));
    const cpu_qkernel *k = cpu_qkernel_get(isa, type);
    for (uint64_t r = 0; k != NULL && r < n_rows; r++) {
        k->dot(w + r * row_bytes, x, ne0, n_x, ne0, got);
        for (uint32_t t = 0; t < n_x; t++)
            want[t] = canonical_dot(deq + r * ne0, x + t * ne0, ne0);
        char what[64];
        snprintf(what, sizeof what, "%s fused dot %s row %llu", cpu_isa_name(isa), type_name(type),
                 (unsigned long long)r);
        check_bits(what, got, want, n_x);
    }
    free(w);
    free(deq);
    free(x);
}

static void test_dot_f32(cpu_isa isa) {
    float a[70], b[70];
    fill_float(a, 70, -1.0f, 1.0f);
    fill_float(b, 70, -1.0f, 1.0f);
    cpu_dot_f32_fn dot = cpu_dot_f32_get(isa);
    for (uint64_t n = 0; n <= 70; n++) {
        float got = dot(a, b, n), want = canonical_dot(a, b, n);
        SW_CHECK(memcmp(&got, &want, sizeof got) == 0, "%s dot_f32 n=%llu: %.9g vs %.9g",
                 cpu_isa_name(isa), (unsigned long long)n, (double)got, (double)want);
    }
}

/* One tile-kernel call: n_rows rows of n elements (row stride n + 16) with
 * n_x rows of x (stride n + 32) into y (stride n_rows + 3), against the
 * canonical dot, bitwise; y's padding must stay untouched. */
static void tile_case(cpu_isa isa, const float *w, const float *x, uint32_t n_rows,
                      uint32_t n_x, uint64_t n, float *y) {
    const uint64_t ws = n + 16, xs = n + 32, ys = n_rows + 3;
    const float pad = -12345.0f;
    for (uint64_t i = 0; i < n_x * ys; i++)
        y[i] = pad;
    cpu_tile_f32_get(isa)(w, ws, n_rows, x, xs, n_x, n, y, ys);
    size_t n_bad = 0, first = 0;
    for (uint32_t t = 0; t < n_x; t++) {
        for (uint64_t r = 0; r < ys; r++) {
            const float want = r < n_rows ? canonical_dot(w + r * ws, x + t * xs, n) : pad;
            if (memcmp(&y[t * ys + r], &want, sizeof want) != 0 && n_bad++ == 0)
                first = t * ys + r;
        }
    }
    SW_CHECK(n_bad == 0, "%s tile %u rows x %u x, n=%llu: %zu wrong, first y[%zu] = %.9g",
             cpu_isa_name(isa), n_rows, n_x, (unsigned long long)n, n_bad, first,
             n_bad ? (double)y[first] : 0.0);
}

/* The tile kernel for every block shape and its tails: 1..9, 16, 17, 25
 * and 50 rows (blocks of 3, 4 and 8 and what is left), 1..9, 16, 17 and
 * 64 x (groups of 4 and each remainder), rows of one, many and a partial
 * last chunk of QT_KC (512) elements. */
static void test_tile_kernel(cpu_isa isa) {
    const uint32_t rows[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 25, 50};
    const uint32_t xs[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 64};
    const uint64_t ns[] = {16, 640, 1040};
    enum { MAX_ROWS = 50, MAX_X = 64, MAX_N = 1040 };
    float *w = xmalloc(MAX_ROWS * (MAX_N + 16) * sizeof(float));
    float *x = xmalloc(MAX_X * (MAX_N + 32) * sizeof(float));
    float *y = xmalloc(MAX_X * (MAX_ROWS + 3) * sizeof(float));
    fill_float(w, MAX_ROWS * (MAX_N + 16), -1.0f, 1.0f);
    fill_float(x, MAX_X * (MAX_N + 32), -1.0f, 1.0f);
    for (size_t in = 0; in < sizeof ns / sizeof ns[0]; in++)
        for (size_t ir = 0; ir < sizeof rows / sizeof rows[0]; ir++)
            for (size_t ix = 0; ix < sizeof xs / sizeof xs[0]; ix++)
                if (ns[in] != 1040 || xs[ix] <= 9 || rows[ir] <= 9)
                    tile_case(isa, w, x, rows[ir], xs[ix], ns[in], y);
    free(w);
    free(x);
    free(y);
}

static void test_kernels_all_isas(void) {
    const cpu_isa isas[CPU_ISA_COUNT] = {CPU_ISA_REF, CPU_ISA_GENERIC, CPU_ISA_AVX2,
                                         CPU_ISA_AVXVNNI, CPU_ISA_AVX512};
    for (int i = 0; i < CPU_ISA_COUNT; i++) {
        if (!cpu_isa_supported(isas[i])) {
            printf("test_cpu_ops: ISA %s not available here, skipped\n",
                   cpu_isa_name(isas[i]));
            continue;
        }
        test_half_exhaustive(isas[i]);
        test_dot_f32(isas[i]);
        test_tile_kernel(isas[i]);
        for (int t = 0; t < N_TYPES; t++) {
            test_dequant_kernel(isas[i], all_types[t]);
            test_fused_dot(isas[i], all_types[t]);
        }
    }
}

/* ---- matmul and get_rows ---------------------------------------------- */

/* The matmul workspace of every test: 4 threads, rows up to 1280. */
/* The workspace takes rows up to 6400 wide: the widest case below, whose
 * unpacked rows overflow the kernels' row block (matmul.c's
 * MM_QROW_BLOCK_BYTES) so that a block is its minimum of whole tiles. */
enum { TEST_WS_THREADS = 4, TEST_WS_NE0 = 6400, TEST_WIDE_NE0 = 1280 };
static cpu_mm_scratch *test_ws;

static tensor_view make_view(uint32_t type, uint64_t ne0, uint64_t ne1, const void *data,
                             uint64_t n_bytes) {
    tensor_view v = {.name = "test.weight", .type = type, .n_dims = 2,
                     .ne = {ne0, ne1, 1, 1}, .n_bytes = n_bytes, .data = data};
    return v;
}

/* cpu_matmul for one type and batch: bitwise against dequantize + the
 * canonical dot, and within tolerance of a double reference. */
static void test_matmul_case(cpu_pool *pool, uint32_t type, uint32_t n_tokens) {
    const uint64_t ne0 = test_ne0(type), ne1 = 37;
    uint64_t n_bytes;
    uint8_t *w = random_weights(type, ne0, ne1, &n_bytes);
    tensor_view view = make_view(type, ne0, ne1, w, n_bytes);
    float *deq = xmalloc(ne0 * ne1 * sizeof(float)), *x = xmalloc(ne0 * n_tokens * sizeof(float));
    float *y = xmalloc(ne1 * n_tokens * sizeof(float));
    float *yc = xmalloc(ne1 * n_tokens * sizeof(float));
    double *ref = xmalloc(ne1 * n_tokens * sizeof(double)), max_abs = 0.0;
    fill_float(x, ne0 * n_tokens, -1.0f, 1.0f);
    SW_CHECK_OK(quant_dequantize(type, w, deq, ne0 * ne1));
    SW_CHECK_OK(cpu_matmul(pool, test_ws, &view, x, y, n_tokens));
    for (uint64_t t = 0; t < n_tokens; t++) {
        for (uint64_t r = 0; r < ne1; r++) {
            double s = 0.0, sa = 0.0;
            for (uint64_t c = 0; c < ne0; c++) {
                s += (double)deq[r * ne0 + c] * (double)x[t * ne0 + c];
                sa += fabs((double)deq[r * ne0 + c] * (double)x[t * ne0 + c]);
            }
            ref[t * ne1 + r] = s;
            max_abs = sa > max_abs ? sa : max_abs;
            yc[t * ne1 + r] = expected_dot(type, w + r * (n_bytes / ne1), deq + r * ne0,
                                           x + t * ne0, ne0);
        }
    }
    /* Integer kernels see x rounded to 8 bits per block: |dx| <= amax/254
     * per element with amax <= 1 here, so the sum moves by at most
     * sum|w| / 254 (the row's largest). */
    double atol = 1e-5 * max_abs;
    if (cpu_idot_get(CPU_ISA_REF, type) != NULL) {
        double wmax = 0.0;
        for (uint64_t r = 0; r < ne1; r++) {
            double sw = 0.0;
            for (uint64_t c = 0; c < ne0; c++)
                sw += fabs((double)deq[r * ne0 + c]);
            wmax = sw > wmax ? sw : wmax;
        }
        atol += wmax / 254.0 * 1.001;
    }
    char what[64];
    snprintf(what, sizeof what, "matmul %s n_tokens=%u", type_name(type), n_tokens);
    check_bits(what, y, yc, ne1 * n_tokens);
    check_close(what, y, ref, ne1 * n_tokens, atol, 1e-5);
    free(w);
    free(deq);
    free(x);
    free(y);
    free(yc);
    free(ref);
}

/* Same bits for 1..4 threads, and token t of a batch equals the same token
 * alone (direct and scratch paths agree). */
static void test_matmul_determinism(uint32_t type, cpu_pool *pools[4]) {
    const uint64_t ne0 = test_ne0(type), ne1 = 301;
    const uint32_t n_tok = 17;
    uint64_t n_bytes;
    uint8_t *w = random_weights(type, ne0, ne1, &n_bytes);
    tensor_view view = make_view(type, ne0, ne1, w, n_bytes);
    float *x = xmalloc(ne0 * n_tok * sizeof(float));
    float *y0 = xmalloc(ne1 * n_tok * sizeof(float)), *y = xmalloc(ne1 * n_tok * sizeof(float));
    fill_float(x, ne0 * n_tok, -1.0f, 1.0f);
    SW_CHECK_OK(cpu_matmul(pools[0], test_ws, &view, x, y0, n_tok));
    char what[80];
    for (int p = 1; p < 4; p++) {
        SW_CHECK_OK(cpu_matmul(pools[p], test_ws, &view, x, y, n_tok));
        snprintf(what, sizeof what, "matmul %s 17 tokens, %d threads vs 1", type_name(type), p + 1);
        check_bits(what, y, y0, ne1 * n_tok);
    }
    for (uint32_t t = 0; t < n_tok; t += 5) {
        for (int p = 0; p < 4; p++) {
            SW_CHECK_OK(cpu_matmul(pools[p], test_ws, &view, x + t * ne0, y, 1));
            snprintf(what, sizeof what, "matmul %s token %u alone (%d threads) vs in batch",
                     type_name(type), t, p + 1);
            check_bits(what, y, y0 + t * ne1, ne1);
        }
    }
    free(w);
    free(x);
    free(y0);
    free(y);
}

/* Every batch size the tiled path treats apart (1 is the direct path;
 * 2..9 cover each remainder of the tile kernel's groups of 4 tokens; 16,
 * 17, 64), on 1..4 threads: each y[t][r] is the canonical dot of
 * dequantized row r with token t, bitwise. 61 rows split unevenly over
 * threads, tiles and row blocks; a 1280-element row spans 2.5 k chunks. */
static void test_matmul_batches(uint32_t type, uint64_t ne0, cpu_pool *pools[4]) {
    static const uint32_t batches[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 64, 65, 130};
    const uint64_t ne1 = 61;
    const uint32_t max_tok = 130;
    uint64_t n_bytes;
    uint8_t *w = random_weights(type, ne0, ne1, &n_bytes);
    tensor_view view = make_view(type, ne0, ne1, w, n_bytes);
    float *deq = xmalloc(ne0 * ne1 * sizeof(float)), *x = xmalloc(ne0 * max_tok * sizeof(float));
    float *want = xmalloc(ne1 * max_tok * sizeof(float));
    float *y = xmalloc(ne1 * max_tok * sizeof(float));
    fill_float(x, ne0 * max_tok, -1.0f, 1.0f);
    SW_CHECK_OK(quant_dequantize(type, w, deq, ne0 * ne1));
    for (uint64_t t = 0; t < max_tok; t++)
        for (uint64_t r = 0; r < ne1; r++)
            want[t * ne1 + r] = expected_dot(type, w + r * (n_bytes / ne1), deq + r * ne0,
                                             x + t * ne0, ne0);
    for (size_t b = 0; b < sizeof batches / sizeof batches[0]; b++) {
        for (int p = 0; p < 4; p++) {
            SW_CHECK_OK(cpu_matmul(pools[p], test_ws, &view, x, y, batches[b]));
            char what[80];
            snprintf(what, sizeof what, "matmul %s ne0 %llu, %u tokens, %d threads",
                     type_name(type), (unsigned long long)ne0, batches[b], p + 1);
            check_bits(what, y, want, ne1 * batches[b]);
        }
    }
    free(w);
    free(deq);
    free(x);
    free(want);
    free(y);
}

/* The workspace contract: sizes, argument errors, and cpu_matmul refusing
 * (never crashing on) a missing or too small workspace where the tiled
 * path needs one, while paths that need none run without. */
static void test_matmul_workspace(cpu_pool *pools[4]) {
    cpu_mm_scratch *ws = (cpu_mm_scratch *)&ws; /* must be overwritten with NULL */
    SW_CHECK(cpu_mm_scratch_create(0, 512, &ws) == SW_ERR_ARG && ws == NULL, "0 threads");
    SW_CHECK(cpu_mm_scratch_create(2, 0, &ws) == SW_ERR_ARG && ws == NULL, "rows of 0");
    SW_CHECK(cpu_mm_scratch_create(2, UINT64_MAX / 4, &ws) == SW_ERR_ARG, "size overflow");
    SW_CHECK(cpu_mm_scratch_bytes(0, 512) == 0 && cpu_mm_scratch_bytes(2, UINT64_MAX / 4) == 0,
             "bytes for rejected arguments");
    SW_CHECK(cpu_mm_scratch_bytes(2, 4096) >= 2 * 8 * 4096 * sizeof(float) &&
             cpu_mm_scratch_bytes(4, 640) > cpu_mm_scratch_bytes(2, 640),
             "bytes: at least 8 rows per thread, growing with threads");
    cpu_mm_scratch_destroy(NULL);

    const uint64_t ne0 = 512, ne1 = 40;
    uint64_t n_bytes;
    uint8_t *w = random_weights(SW_TYPE_Q8_0, ne0, ne1, &n_bytes);
    tensor_view v = make_view(SW_TYPE_Q8_0, ne0, ne1, w, n_bytes);
    float *x = xmalloc(3 * ne0 * sizeof(float)), *y = xmalloc(3 * ne1 * sizeof(float));
    float *want = xmalloc(3 * ne1 * sizeof(float));
    fill_float(x, 3 * ne0, -1.0f, 1.0f);
    SW_CHECK_OK(cpu_matmul(pools[1], test_ws, &v, x, want, 3));
    SW_CHECK(cpu_matmul(pools[1], NULL, &v, x, y, 3) == SW_ERR_ARG &&
             strstr(sw_last_error(), "cpu_mm_scratch_create") != NULL,
             "3 tokens without a workspace: %s", sw_last_error());
    SW_CHECK_OK(cpu_matmul(pools[1], NULL, &v, x, y, 1)); /* one token: direct path */
    check_bits("one token without a workspace", y, want, ne1);
    SW_CHECK_OK(cpu_mm_scratch_create(1, ne0, &ws));
    SW_CHECK(cpu_matmul(pools[1], ws, &v, x, y, 3) == SW_ERR_ARG &&
             strstr(sw_last_error(), "pool has 2") != NULL, "1-thread workspace, 2-thread pool: %s",
             sw_last_error());
    SW_CHECK_OK(cpu_matmul(NULL, ws, &v, x, y, 3));
    check_bits("1-thread workspace, no pool", y, want, 3 * ne1);
    cpu_mm_scratch_destroy(ws);
    SW_CHECK_OK(cpu_mm_scratch_create(4, ne0 / 2, &ws));
    SW_CHECK(cpu_matmul(pools[1], ws, &v, x, y, 3) == SW_ERR_ARG &&
             strstr(sw_last_error(), "512") != NULL, "workspace for rows of 256: %s",
             sw_last_error());
    cpu_mm_scratch_destroy(ws);
    free(w);

    /* Rows of 300 F32 (not whole 16-lane chunks) take the direct path. */
    w = random_weights(SW_TYPE_F32, 300, ne1, &n_bytes);
    v = make_view(SW_TYPE_F32, 300, ne1, w, n_bytes);
    SW_CHECK_OK(cpu_matmul(pools[1], test_ws, &v, x, want, 3));
    SW_CHECK_OK(cpu_matmul(pools[1], NULL, &v, x, y, 3));
    check_bits("rows of 300 without a workspace", y, want, 3 * ne1);
    free(w);
    free(x);
    free(y);
    free(want);
}

static void test_matmul_errors(void) {
    uint8_t blob[64] = {0};
    float x[32] = {0}, y[4];
    tensor_view v = make_view(16 /* IQ2_XXS: no dequantizer */, 256, 1, blob, sizeof blob);
    SW_CHECK(cpu_matmul(NULL, NULL, &v, x, y, 1) == SW_ERR_UNSUPPORTED, "IQ2_XXS accepted");
    v = make_view(SW_TYPE_Q8_0, 16, 1, blob, sizeof blob); /* half a block */
    SW_CHECK(cpu_matmul(NULL, NULL, &v, x, y, 1) == SW_ERR_ARG, "partial block accepted");
    v = make_view(SW_TYPE_Q8_0, 32, 2, blob, 34); /* 2 rows need 68 bytes */
    SW_CHECK(cpu_matmul(NULL, NULL, &v, x, y, 1) == SW_ERR_ARG, "short tensor accepted");
    v = make_view(SW_TYPE_Q8_0, 32, 1, NULL, 34);
    SW_CHECK(cpu_matmul(NULL, NULL, &v, x, y, 1) == SW_ERR_ARG, "unbound tensor accepted");
}

static void test_get_rows_type(uint32_t type) {
    const uint64_t ne0 = test_ne0(type), ne1 = 9;
    uint64_t n_bytes, row_bytes;
    uint8_t *w = random_weights(type, ne0, ne1, &n_bytes);
    type_row_bytes(type, ne0, &row_bytes);
    tensor_view view = make_view(type, ne0, ne1, w, n_bytes);
    const int32_t ids[4] = {0, 8, 3, 3};
    float *out = xmalloc(4 * ne0 * sizeof(float)), *want = xmalloc(ne0 * sizeof(float));
    SW_CHECK_OK(cpu_get_rows(&view, ids, 4, out));
    for (int t = 0; t < 4; t++) {
        SW_CHECK_OK(quant_dequantize(type, w + (uint64_t)ids[t] * row_bytes, want, ne0));
        char what[48];
        snprintf(what, sizeof what, "get_rows %s id %d", type_name(type), (int)ids[t]);
        check_bits(what, out + t * ne0, want, ne0);
    }
    const int32_t bad_lo[2] = {1, -1}, bad_hi[1] = {9};
    SW_CHECK(cpu_get_rows(&view, bad_lo, 2, out) == SW_ERR_ARG, "id -1 accepted");
    SW_CHECK(cpu_get_rows(&view, bad_hi, 1, out) == SW_ERR_ARG, "id == ne1 accepted");
    free(w);
    free(out);
    free(want);
}

static void test_matmul_all(cpu_pool *pools[4]) {
    const uint32_t batches[3] = {1, 3, 17};
    for (int t = 0; t < N_TYPES; t++) {
        for (int b = 0; b < 3; b++)
            test_matmul_case(pools[1], all_types[t], batches[b]);
        test_matmul_case(NULL, all_types[t], 3);
        test_matmul_determinism(all_types[t], pools);
        test_matmul_batches(all_types[t], test_ne0(all_types[t]), pools);
        test_get_rows_type(all_types[t]);
    }
    const uint32_t wide[] = {SW_TYPE_F32,  SW_TYPE_F16,  SW_TYPE_BF16,
                             SW_TYPE_Q8_0, SW_TYPE_Q4_K, SW_TYPE_Q6_K};
    for (size_t t = 0; t < sizeof wide / sizeof wide[0]; t++)
        test_matmul_batches(wide[t], TEST_WIDE_NE0, pools);
    test_matmul_batches(SW_TYPE_Q4_K, TEST_WS_NE0, pools);
    test_matmul_batches(SW_TYPE_Q8_0, TEST_WS_NE0, pools);
    test_matmul_workspace(pools);
    test_matmul_errors();
}

/* ---- elementwise ------------------------------------------------------ */

static void test_rmsnorm(void) {
    enum { N = 640, ROWS = 3 };
    static float x[ROWS * N], w[N], y[ROWS * N], z[ROWS * N];
    static double ref[ROWS * N];
    fill_float(x, ROWS * N, -2.0f, 2.0f);
    for (int i = 0; i < N; i++)
        x[2 * N + i] *= 1000.0f; /* a row of large activations */
    fill_float(w, N, 0.5f, 1.5f);
    const float eps = 1e-6f;
    cpu_rmsnorm(x, w, y, N, ROWS, eps);
    for (int r = 0; r < ROWS; r++) {
        double ss = 0.0;
        for (int i = 0; i < N; i++)
            ss += (double)x[r * N + i] * x[r * N + i];
        double inv = 1.0 / sqrt(ss / N + eps);
        for (int i = 0; i < N; i++)
            ref[r * N + i] = x[r * N + i] * inv * w[i];
    }
    check_close("rmsnorm", y, ref, ROWS * N, 1e-6, 1e-5);
    memcpy(z, x, sizeof z);
    cpu_rmsnorm(z, w, z, N, ROWS, eps);
    check_bits("rmsnorm in place", z, y, ROWS * N);
    /* Without a weight (Gemma 4's value norm): as with a weight of ones. */
    for (int i = 0; i < N; i++)
        w[i] = 1.0f;
    cpu_rmsnorm(x, w, y, N, ROWS, eps);
    cpu_rmsnorm(x, NULL, z, N, ROWS, eps);
    check_bits("rmsnorm without a weight", z, y, ROWS * N);
}

/* n_pairs: 0 (all) or the pairs turned (Gemma 4's proportional RoPE: the
 * angles of the whole head's frequencies, the other pairs unchanged). */
static void rope_case(float base, float freq_scale, int n_pairs) {
    enum { T = 4, H = 3, HD = 64 };
    static float x[T * H * HD], x0[T * H * HD];
    static double ref[T * H * HD];
    const int32_t pos[T] = {0, 1, 37, 1500};
    fill_float(x0, T * H * HD, -1.0f, 1.0f);
    memcpy(x, x0, sizeof x);
    cpu_rope(x, pos, T, H, HD, base, freq_scale, (uint32_t)n_pairs);
    for (int t = 0; t < T; t++) {
        for (int h = 0; h < H; h++) {
            const float *v = x0 + (t * H + h) * HD;
            double *o = ref + (t * H + h) * HD;
            for (int i = 0; i < HD / 2; i++) {
                double th = pos[t] * (double)freq_scale * pow(base, -2.0 * i / HD);
                if (n_pairs != 0 && i >= n_pairs)
                    th = 0.0;
                o[i] = v[i] * cos(th) - v[i + HD / 2] * sin(th);
                o[i + HD / 2] = v[i + HD / 2] * cos(th) + v[i] * sin(th);
            }
        }
    }
    char what[64];
    snprintf(what, sizeof what, "rope base %g scale %g pairs %d", (double)base,
             (double)freq_scale, n_pairs);
    /* f32 angles at position 1500 carry ~2e-4 rad of rounding. */
    check_close(what, x, ref, T * H * HD, 5e-4, 1e-5);
    check_bits("rope at position 0 is the identity", x, x0, H * HD);
}

static void test_geglu_softcap_add_scale(void) {
    enum { N = 1000 };
    static float g[N], u[N], o[N], s[N];
    static double ref[N];
    fill_float(g, N, -6.0f, 6.0f);
    fill_float(u, N, -2.0f, 2.0f);
    cpu_geglu(g, u, o, N);
    const double k_beta = sqrt(2.0 / 3.14159265358979323846);
    for (int i = 0; i < N; i++) {
        double x = g[i];
        ref[i] = 0.5 * x * (1.0 + tanh(k_beta * (x + 0.044715 * x * x * x))) * u[i];
    }
    check_close("geglu", o, ref, N, 1e-6, 1e-5);
    memcpy(s, g, sizeof s);
    cpu_geglu(s, u, s, N);
    check_bits("geglu in place", s, o, N);

    fill_float(s, N, -200.0f, 200.0f);
    memcpy(o, s, sizeof o);
    cpu_softcap(s, N, 30.0f);
    for (int i = 0; i < N; i++)
        ref[i] = 30.0 * tanh(o[i] / 30.0);
    check_close("softcap 30", s, ref, N, 1e-5, 1e-5);
    memcpy(s, o, sizeof s);
    cpu_softcap(s, N, 0.0f);
    check_bits("softcap 0 is a no-op", s, o, N);

    memcpy(s, g, sizeof s);
    cpu_add(s, u, N);
    for (int i = 0; i < N; i++)
        o[i] = g[i] + u[i];
    check_bits("add", s, o, N);
    cpu_scale(s, N, 0.0625f);
    for (int i = 0; i < N; i++)
        o[i] *= 0.0625f;
    check_bits("scale", s, o, N);
}

/* ---- attention -------------------------------------------------------- */

enum { AT_HEAD = 4, AT_HEAD_KV = 2, AT_HD = 40, AT_NPOS = 24, AT_RING = 8 };

typedef struct attn_data {
    float q[AT_NPOS * AT_HEAD * AT_HD];
    float k[AT_NPOS * AT_HEAD_KV * AT_HD], v[AT_NPOS * AT_HEAD_KV * AT_HD];
} attn_data;

/* Naive attention over a linear cache with an explicit -inf mask. */
static void attn_reference(const attn_data *d, const int32_t *q_pos, uint32_t n_tokens,
                           uint32_t window, float softcap, double *out) {
    double sc[AT_NPOS];
    for (uint32_t t = 0; t < n_tokens; t++) {
        for (int h = 0; h < AT_HEAD; h++) {
            const float *q = d->q + (t * AT_HEAD + h) * AT_HD;
            const int kvh = h / (AT_HEAD / AT_HEAD_KV);
            double mx = -INFINITY, sum = 0.0;
            for (int p = 0; p < AT_NPOS; p++) {
                bool masked = p > q_pos[t] || (window > 0 && q_pos[t] - p >= (int)window);
                double s = 0.0;
                for (int i = 0; i < AT_HD; i++)
                    s += (double)q[i] * d->k[(p * AT_HEAD_KV + kvh) * AT_HD + i];
                if (softcap != 0.0f)
                    s = softcap * tanh(s / softcap);
                sc[p] = masked ? -INFINITY : s;
                mx = sc[p] > mx ? sc[p] : mx;
            }
            for (int p = 0; p < AT_NPOS; p++)
                sum += sc[p] = exp(sc[p] - mx);
            double *o = out + (t * AT_HEAD + h) * AT_HD;
            for (int i = 0; i < AT_HD; i++) {
                o[i] = 0.0;
                for (int p = 0; p < AT_NPOS; p++)
                    o[i] += sc[p] / sum * d->v[(p * AT_HEAD_KV + kvh) * AT_HD + i];
            }
        }
    }
}

/* group: scratch for a KV group's scores per thread (cpu_attention then
 * takes a unit per token and KV head where that keeps the threads busy),
 * else the minimum (a unit per token and head). */
static void run_attention_as(cpu_pool *pool, const float *q, const float *k, const float *v,
                             const int32_t *q_pos, uint32_t n_tokens, uint32_t ring,
                             uint32_t window, float softcap, float *out, bool group) {
    const size_t per_thread = (ring ? ring : AT_NPOS) * (group ? AT_HEAD / AT_HEAD_KV : 1);
    const size_t floats = (size_t)cpu_pool_size(pool) * per_thread;
    float *scratch = xmalloc(floats * sizeof(float));
    cpu_attn_args a = {.q = q, .k = k, .v = v, .out = out, .q_pos = q_pos,
                       .n_tokens = n_tokens, .n_head = AT_HEAD, .n_head_kv = AT_HEAD_KV,
                       .head_dim = AT_HD, .kv_ring = ring, .window = window,
                       .softcap = softcap, .scratch = scratch,
                       .scratch_floats = group ? floats : 0};
    cpu_attention(pool, &a);
    free(scratch);
}

static void run_attention(cpu_pool *pool, const float *q, const float *k, const float *v,
                          const int32_t *q_pos, uint32_t n_tokens, uint32_t ring,
                          uint32_t window, float softcap, float *out) {
    run_attention_as(pool, q, k, v, q_pos, n_tokens, ring, window, softcap, out, false);
}

/* Linear cache: causal, windowed and soft-capped, against the reference,
 * and the same bits for 1..4 threads. */
static void test_attention_linear(cpu_pool *pools[4], const attn_data *d) {
    enum { T = 7, N = T * AT_HEAD * AT_HD };
    const int32_t q_pos[T] = {0, 4, 5, 6, 12, 20, 23}; /* window edges near 0 */
    static float out[N], out_t[N], q4[N];
    static double ref[N];
    const uint32_t windows[3] = {0, 5, 0};
    const float caps[3] = {0.0f, 0.0f, 2.0f};
    for (int c = 0; c < 3; c++) {
        const float *q = d->q;
        if (caps[c] != 0.0f) { /* larger scores so the cap matters */
            for (int i = 0; i < N; i++)
                q4[i] = 4.0f * d->q[i];
            q = q4;
        }
        attn_data dq = *d;
        memcpy(dq.q, q, sizeof q4);
        run_attention(pools[0], q, d->k, d->v, q_pos, T, 0, windows[c], caps[c], out);
        attn_reference(&dq, q_pos, T, windows[c], caps[c], ref);
        char what[64];
        snprintf(what, sizeof what, "attention window %u softcap %g", windows[c],
                 (double)caps[c]);
        check_close(what, out, ref, N, 1e-5, 1e-4);
        for (int p = 1; p < 4; p++) {
            run_attention(pools[p], q, d->k, d->v, q_pos, T, 0, windows[c], caps[c], out_t);
            snprintf(what, sizeof what, "attention case %d, %d threads vs 1", c, p + 1);
            check_bits(what, out_t, out, N);
        }
        for (int p = 0; p < 4; p++) { /* 7 tokens x 2 KV heads: units of a group */
            run_attention_as(pools[p], q, d->k, d->v, q_pos, T, 0, windows[c], caps[c], out_t,
                             true);
            snprintf(what, sizeof what, "attention case %d, KV-group units, %d threads", c,
                     p + 1);
            check_bits(what, out_t, out, N);
        }
    }
}

/* A ring of 8 rows holding positions 13..20 (row p % 8, so a query's
 * keys wrap from row 7 to row 0), window 5, equals the linear cache with
 * the window mask, bit for bit; also decode. */
static void test_attention_ring(cpu_pool *pools[4], const attn_data *d) {
    enum { T = 4, N = T * AT_HEAD * AT_HD, ROW = AT_HEAD_KV * AT_HD };
    const int32_t q_pos[T] = {17, 18, 19, 20};
    static float kr[AT_RING * ROW], vr[AT_RING * ROW], out_lin[N], out_ring[N];
    static double ref[N];
    for (int p = 13; p <= 20; p++) {
        memcpy(kr + (p % AT_RING) * ROW, d->k + p * ROW, ROW * sizeof(float));
        memcpy(vr + (p % AT_RING) * ROW, d->v + p * ROW, ROW * sizeof(float));
    }
    run_attention(pools[0], d->q, d->k, d->v, q_pos, T, 0, 5, 0.0f, out_lin);
    attn_reference(d, q_pos, T, 5, 0.0f, ref);
    for (int p = 0; p < 4; p++) {
        run_attention(pools[p], d->q, kr, vr, q_pos, T, AT_RING, 5, 0.0f, out_ring);
        check_bits("attention ring vs linear (window 5)", out_ring, out_lin, N);
        run_attention_as(pools[p], d->q, kr, vr, q_pos, T, AT_RING, 5, 0.0f, out_ring, true);
        check_bits("attention ring, KV-group units, vs linear", out_ring, out_lin, N);
    }
    check_close("attention ring", out_ring, ref, N, 1e-5, 1e-4);
    /* Decode: one query at position 20 (ring row 4), all threads. */
    for (int p = 0; p < 4; p++) {
        run_attention(pools[p], d->q + 3 * AT_HEAD * AT_HD, kr, vr, q_pos + 3, 1, AT_RING, 5,
                      0.0f, out_ring);
        check_bits("attention ring decode vs batch", out_ring, out_lin + 3 * AT_HEAD * AT_HD,
                   AT_HEAD * AT_HD);
    }
}

static void test_attention(cpu_pool *pools[4]) {
    static attn_data d;
    fill_float(d.q, sizeof d.q / sizeof(float), -1.0f, 1.0f);
    fill_float(d.k, sizeof d.k / sizeof(float), -1.0f, 1.0f);
    fill_float(d.v, sizeof d.v / sizeof(float), -1.0f, 1.0f);
    test_attention_linear(pools, &d);
    test_attention_ring(pools, &d);
}

/* ---- thread pool ------------------------------------------------------ */

typedef struct pool_probe {
    atomic_int hits[8];
    atomic_int bad;
    int expect_nth;
} pool_probe;

static void probe_task(void *arg, int ith, int nth) {
    pool_probe *p = arg;
    if (nth != p->expect_nth || ith < 0 || ith >= nth || ith >= 8)
        atomic_fetch_add(&p->bad, 1);
    else
        atomic_fetch_add(&p->hits[ith], 1);
}

/* Many back-to-back jobs (the spin path), then jobs after naps long
 * enough for the workers to fall asleep (the condition-variable path). */
static void test_pool_runs(int n) {
    cpu_pool *pool = NULL;
    SW_CHECK_OK(cpu_pool_create(n, &pool));
    if (pool == NULL)
        return;
    SW_CHECK(cpu_pool_size(pool) == n, "pool size %d, want %d", cpu_pool_size(pool), n);
    pool_probe p = {.expect_nth = n};
    for (int i = 0; i < 8; i++)
        atomic_init(&p.hits[i], 0);
    atomic_init(&p.bad, 0);
    const int n_fast = 5000, n_slow = 5;
    for (int r = 0; r < n_fast; r++)
        cpu_pool_run(pool, probe_task, &p);
    for (int r = 0; r < n_slow; r++) {
        struct timespec nap = {0, 20 * 1000 * 1000};
        nanosleep(&nap, NULL);
        cpu_pool_run(pool, probe_task, &p);
    }
    for (int i = 0; i < n; i++)
        SW_CHECK(atomic_load(&p.hits[i]) == n_fast + n_slow, "pool %d: thread %d ran %d jobs",
                 n, i, atomic_load(&p.hits[i]));
    SW_CHECK(atomic_load(&p.bad) == 0, "pool %d: %d bad (ith, nth)", n, atomic_load(&p.bad));
    cpu_pool_destroy(pool);
}

static void test_pool(void) {
    for (int n = 1; n <= 4; n++)
        test_pool_runs(n);
    cpu_pool *pool = (cpu_pool *)&pool; /* must be overwritten with NULL */
    SW_CHECK(cpu_pool_create(0, &pool) == SW_ERR_ARG, "0 threads accepted");
    pool_probe p = {.expect_nth = 1};
    for (int i = 0; i < 8; i++)
        atomic_init(&p.hits[i], 0);
    atomic_init(&p.bad, 0);
    cpu_pool_run(NULL, probe_task, &p);
    SW_CHECK(atomic_load(&p.hits[0]) == 1 && cpu_pool_size(NULL) == 1, "NULL pool run");
    cpu_pool_destroy(NULL);
}

int main(void) {
    cpu_pool *pools[4] = {NULL, NULL, NULL, NULL};
    for (int i = 0; i < 4; i++) {
        SW_CHECK_OK(cpu_pool_create(i + 1, &pools[i]));
        if (pools[i] == NULL)
            return sw_check_finish("test_cpu_ops");
    }
    SW_CHECK_OK(cpu_mm_scratch_create(TEST_WS_THREADS, TEST_WS_NE0, &test_ws));
    if (test_ws == NULL)
        return sw_check_finish("test_cpu_ops");
    printf("test_cpu_ops: kernels for %s\n", cpu_isa_name(cpu_isa_best()));
    test_pool();
    test_kernels_all_isas();
    test_matmul_all(pools);
    test_rmsnorm();
    rope_case(10000.0f, 1.0f, 0);
    rope_case(1000000.0f, 0.125f, 0);
    rope_case(1000000.0f, 1.0f, 8); /* a quarter of the pairs */
    test_geglu_softcap_add_scale();
    test_attention(pools);
    for (int i = 0; i < 4; i++)
        cpu_pool_destroy(pools[i]);
    cpu_mm_scratch_destroy(test_ws);
    return sw_check_finish("test_cpu_ops");
}
