/*
 * test_mm_again.c — cpu_matmul_as's CPU_MM_X_AGAIN: matmuls over one
 * shared input (Q, K and V; gate and up) quantize it once, and give the
 * same bits as matmuls that each quantize it themselves.
 *
 * cpu_mm_scratch_rows_prepared counts the activation rows the workspace
 * quantized (or rounded to bf16); each case checks both that count and the
 * outputs against a fresh workspace's.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "cpu_test_util.h"
#include "quant/types.h"

enum { NE0 = 1024, NE1 = 48, MAX_TOKENS = 70 };

typedef struct weight {
    uint8_t *bytes;
    tensor_view v;
} weight;

static weight make_weight_n(uint32_t type, uint64_t ne0) {
    weight w = {0};
    uint64_t n_bytes = 0;
    w.bytes = random_weights(type, ne0, NE1, &n_bytes);
    w.v = (tensor_view){.name = type_name(type), .type = type, .n_dims = 2,
                        .ne = {ne0, NE1, 1, 1}, .n_bytes = n_bytes, .data = w.bytes};
    return w;
}

static weight make_weight(uint32_t type) { return make_weight_n(type, NE0); }

/* One matmul with ws and flags: checks its output against a fresh
 * workspace's without CPU_MM_X_AGAIN and that it prepared `want_rows`
 * rows. */
static void step(const char *what, cpu_pool *pool, cpu_mm_scratch *ws, const weight *w,
                 const float *x, uint32_t n, unsigned flags, uint64_t want_rows) {
    cpu_mm_scratch *fresh = NULL;
    SW_CHECK_OK(cpu_mm_scratch_create(cpu_pool_size(pool), NE0, &fresh));
    if (fresh == NULL)
        return;
    cpu_mm_scratch_set_bf16(fresh, true);
    float *y = xmalloc((size_t)n * NE1 * sizeof(float));
    float *want = xmalloc((size_t)n * NE1 * sizeof(float));
    SW_CHECK_OK(cpu_matmul_as(pool, fresh, &w->v, x, want, n, flags & ~(unsigned)CPU_MM_X_AGAIN));
    const uint64_t before = cpu_mm_scratch_rows_prepared(ws);
    SW_CHECK_OK(cpu_matmul_as(pool, ws, &w->v, x, y, n, flags));
    const uint64_t rows = cpu_mm_scratch_rows_prepared(ws) - before;
    SW_CHECK(rows == want_rows, "%s: prepared %llu rows, want %llu", what,
             (unsigned long long)rows, (unsigned long long)want_rows);
    check_bits(what, y, want, (size_t)n * NE1);
    free(y);
    free(want);
    cpu_mm_scratch_destroy(fresh);
}

static void run_cases(cpu_pool *pool) {
    const uint32_t n = 8;
    weight q = make_weight(SW_TYPE_Q4_K), k = make_weight(SW_TYPE_Q4_K);
    weight v = make_weight(SW_TYPE_Q6_K), s = make_weight(SW_TYPE_Q8_0);
    weight f = make_weight(SW_TYPE_F32), b = make_weight(SW_TYPE_BF16);
    weight b2 = make_weight(SW_TYPE_BF16);
    float *x = xmalloc((size_t)MAX_TOKENS * NE0 * sizeof(float));
    float *x2 = xmalloc((size_t)MAX_TOKENS * NE0 * sizeof(float));
    fill_float(x, (size_t)MAX_TOKENS * NE0, -2.0f, 2.0f);
    memcpy(x2, x, (size_t)MAX_TOKENS * NE0 * sizeof(float));
    x2[3] = 7.0f; /* the same shape, different values */

    cpu_mm_scratch *ws = NULL;
    SW_CHECK_OK(cpu_mm_scratch_create(cpu_pool_size(pool), NE0, &ws));
    if (ws == NULL)
        return;
    cpu_mm_scratch_set_bf16(ws, true);
    step("Q: first use of x", pool, ws, &q, x, n, 0, n);
    step("K again: same form, none prepared", pool, ws, &k, x, n, CPU_MM_X_AGAIN, 0);
    step("V again (Q6_K, per 256 too)", pool, ws, &v, x, n, CPU_MM_X_AGAIN, 0);
    step("without the flag: prepared", pool, ws, &k, x, n, 0, n);
    step("f32 weight: nothing to prepare", pool, ws, &f, x, n, CPU_MM_X_AGAIN, 0);
    step("after an f32 matmul: still held", pool, ws, &q, x, n, CPU_MM_X_AGAIN, 0);
    step("Q8_0 again: another form, prepared", pool, ws, &s, x, n, CPU_MM_X_AGAIN, n);
    step("Q4_K again after Q8_0: prepared", pool, ws, &q, x, n, CPU_MM_X_AGAIN, n);
    step("fine form: a scale per 32, prepared", pool, ws, &k, x, n,
         CPU_MM_X_AGAIN | CPU_MM_FINE, n);
    step("another x: prepared", pool, ws, &q, x2, n, CPU_MM_X_AGAIN, n);
    step("fewer tokens of it: prepared", pool, ws, &k, x2, n - 3, CPU_MM_X_AGAIN, n - 3);
    step("bf16 first", pool, ws, &b, x, n, 0, n);
    step("bf16 again: none rounded", pool, ws, &b2, x, n, CPU_MM_X_AGAIN, 0);
    step("Q4_K again after bf16: prepared", pool, ws, &q, x, n, CPU_MM_X_AGAIN, n);
    /* More tokens than one chunk: the buffer keeps only the last chunk. */
    step("70 tokens", pool, ws, &q, x, MAX_TOKENS, 0, MAX_TOKENS);
    step("70 tokens again: prepared", pool, ws, &k, x, MAX_TOKENS, CPU_MM_X_AGAIN, MAX_TOKENS);
    step("one token", pool, ws, &q, x, 1, 0, 1);
    step("one token again", pool, ws, &k, x, 1, CPU_MM_X_AGAIN, 0);
    /* Rows a quarter of the widest: the buffer takes all 70 tokens in one
     * round (the matmuls over the hidden size), so they are held. */
    weight qn = make_weight_n(SW_TYPE_Q4_K, NE0 / 4), kn = make_weight_n(SW_TYPE_Q4_K, NE0 / 4);
    step("70 narrow tokens", pool, ws, &qn, x, MAX_TOKENS, 0, MAX_TOKENS);
    step("70 narrow tokens again: held", pool, ws, &kn, x, MAX_TOKENS, CPU_MM_X_AGAIN, 0);
    cpu_mm_scratch_destroy(ws);
    /* ... and give the bits of a workspace sized for them alone, which
     * takes them 64 at a time. */
    ws = NULL;
    SW_CHECK_OK(cpu_mm_scratch_create(cpu_pool_size(pool), NE0 / 4, &ws));
    float *y = xmalloc((size_t)MAX_TOKENS * NE1 * sizeof(float));
    float *want = xmalloc((size_t)MAX_TOKENS * NE1 * sizeof(float));
    const unsigned forms[] = {0, CPU_MM_FINE};
    const char *names[] = {"narrow rows: 64 at a time or all", "narrow rows, fine form"};
    for (int i = 0; i < 2 && ws != NULL; i++) {
        cpu_mm_scratch *wide = NULL;
        SW_CHECK_OK(cpu_mm_scratch_create(cpu_pool_size(pool), NE0, &wide));
        if (wide == NULL)
            break;
        SW_CHECK_OK(cpu_matmul_as(pool, ws, &qn.v, x, want, MAX_TOKENS, forms[i]));
        SW_CHECK_OK(cpu_matmul_as(pool, wide, &qn.v, x, y, MAX_TOKENS, forms[i]));
        check_bits(names[i], y, want, (size_t)MAX_TOKENS * NE1);
        cpu_mm_scratch_destroy(wide);
    }
    free(y);
    free(want);
    cpu_mm_scratch_destroy(ws);
    weight all[] = {q, k, v, s, f, b, b2, qn, kn};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i].bytes);
    free(x);
    free(x2);
}

int main(void) {
    for (int threads = 1; threads <= 2; threads++) {
        cpu_pool *pool = NULL;
        SW_CHECK_OK(cpu_pool_create(threads, &pool));
        if (pool == NULL)
            break;
        run_cases(pool);
        cpu_pool_destroy(pool);
    }
    SW_CHECK(cpu_mm_scratch_rows_prepared(NULL) == 0, "NULL workspace");
    return sw_check_finish("test_mm_again");
}
