/*
 * backend_util.c — see backend_util.h.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, nanosleep */

#include "backend_util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "quant/random.h"
#include "quant/types.h"

cpu_pool *bt_pool;
static uint64_t rng_state = 0x243f6a8885a308d3ull;

uint64_t bt_rng(void) { return sw_test_rng_next(&rng_state); }

void *bt_malloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (p == NULL) {
        fprintf(stderr, "backend test: out of memory (%zu bytes)\n", n);
        exit(2);
    }
    return p;
}

float *bt_random_floats(size_t n, float lo, float hi) {
    float *x = bt_malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = sw_test_rng_float(&rng_state, lo, hi);
    return x;
}

double bt_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void bt_sleep_s(double s) {
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

backend *bt_cpu(void) {
    backend_params p = {.pool = bt_pool,
                        .sizes = {.max_attn_keys = BT_MAX_KEYS, .max_row_elems = 4096}};
    backend *b = NULL;
    SW_CHECK_OK(backend_create("cpu", &p, &b));
    return b;
}

backend *bt_sim(uint64_t capacity, double link_Bps, const backend_test_hooks *hooks) {
    backend_params p = {.pool = bt_pool,
                        .sizes = {.max_attn_keys = BT_MAX_KEYS, .max_row_elems = 4096},
                        .capacity_bytes = capacity, .link_Bps = link_Bps, .test = hooks};
    backend *b = NULL;
    SW_CHECK_OK(backend_create("sim", &p, &b));
    return b;
}

backend_stats bt_stats(backend *b) {
    backend_stats s;
    b->vt->get_stats(b, &s);
    return s;
}

void bt_sync(backend *b) { SW_CHECK_OK(b->vt->sync(b)); }

backend_buf *bt_upload(backend *b, const void *host, uint64_t bytes, const char *purpose) {
    backend_buf *d = NULL;
    SW_CHECK_OK(b->vt->alloc(b, bytes, purpose, &d));
    if (d != NULL) {
        SW_CHECK_OK(b->vt->copy_h2d(b, BQ_COPY, (bmem){d, 0}, host, bytes));
        bt_sync(b);
    }
    return d;
}

void bt_download(backend *b, void *host, bmem src, uint64_t bytes) {
    SW_CHECK_OK(b->vt->copy_d2h(b, BQ_COMPUTE, host, src, bytes));
    bt_sync(b);
}

uint8_t *bt_random_weights(uint32_t type, uint64_t ne0, uint64_t ne1, uint64_t *n_bytes) {
    uint64_t row = 0;
    (void)type_row_bytes(type, ne0, &row);
    *n_bytes = row * ne1;
    uint8_t *w = bt_malloc((size_t)*n_bytes);
    quant_fill_random(type, w, *n_bytes, &rng_state);
    return w;
}
