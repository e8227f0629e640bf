/*
 * test_backend.c — the backend interface (backend.h) on the cpu and sim
 * backends.
 *
 * Conformance: every op through either backend's vtable, on memory the
 * backend allocated and filled by copy_async, gives bit-identical results
 * to a direct cpu_* call (same kernels). Sim specifics: exact capacity and
 * accounting, out-of-memory messages, first-fit fragmentation, fault
 * injection at every allocation, copy order, events, link throttling
 * accuracy, copy/compute overlap, and destroy with copies in flight.
 * Timing bounds are generous (the test machine is small and busy) but each
 * one would catch a real bug.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, nanosleep */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "quant/half.h"
#include "quant/types.h"

enum { N_THREADS = 2, MAX_KEYS = 64 };
#define MIB (1024u * 1024u)

/* ---- helpers ---------------------------------------------------------- */

static uint64_t rng_state = 0x243f6a8885a308d3ull;

static uint64_t rng_next(void) { return sw_test_rng_next(&rng_state); }

static float rng_float(float lo, float hi) { return sw_test_rng_float(&rng_state, lo, hi); }

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (p == NULL) {
        fprintf(stderr, "test_backend: out of memory (%zu bytes)\n", n);
        exit(2);
    }
    return p;
}

static float *random_floats(size_t n, float lo, float hi) {
    float *x = xmalloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = rng_float(lo, hi);
    return x;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_s(double s) {
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

static backend *make_sim(uint64_t capacity, double rate, uint64_t fail_at, cpu_pool *pool) {
    sim_options opt = {.capacity_bytes = capacity, .link_bytes_per_s = rate,
                       .fail_alloc_at = fail_at, .max_attn_keys = MAX_KEYS};
    backend *b = NULL;
    SW_CHECK_OK(backend_sim_create(&opt, pool, &b));
    return b;
}

static backend_stats stats_of(backend *b) {
    backend_stats s;
    b->vt->get_stats(b, &s);
    return s;
}

/* Device copy of host data: alloc, copy_async, wait. */
static void *upload(backend *b, const void *host, uint64_t bytes, const char *purpose) {
    void *d = NULL;
    backend_event *ev = NULL;
    SW_CHECK_OK(b->vt->alloc(b, bytes, purpose, &d));
    SW_CHECK_OK(b->vt->event_create(b, &ev));
    if (d != NULL && ev != NULL) {
        SW_CHECK_OK(b->vt->copy_async(b, d, host, bytes, ev));
        SW_CHECK_OK(b->vt->event_wait(b, ev));
    }
    b->vt->event_destroy(b, ev);
    return d;
}

/* Checks that device buffer d holds exactly the bytes of want. */
static void check_device_bits(backend *b, const char *what, const void *d, const void *want,
                              uint64_t bytes) {
    uint8_t *got = xmalloc((size_t)bytes);
    SW_CHECK_OK(b->vt->copy_to_host(b, got, d, bytes));
    SW_CHECK(memcmp(got, want, (size_t)bytes) == 0, "%s on %s: not bit-identical to the direct "
             "cpu kernel", what, b->vt->name);
    free(got);
}

/* ---- op conformance --------------------------------------------------- */

static uint8_t *random_weights(uint32_t type, uint64_t ne0, uint64_t ne1, uint64_t *n_bytes) {
    uint64_t row = 0;
    (void)type_row_bytes(type, ne0, &row);
    *n_bytes = row * ne1;
    uint8_t *w = xmalloc((size_t)*n_bytes);
    for (uint64_t i = 0; i < *n_bytes; i++)
        w[i] = (uint8_t)rng_next();
    const type_traits *tr = type_get_traits(type);
    for (uint64_t off = 0; off < *n_bytes; off += tr->block_bytes) {
        uint8_t *blk = w + off;
        if (type == SW_TYPE_F32) {
            float f = rng_float(-1, 1);
            memcpy(blk, &f, 4);
        } else if (type == SW_TYPE_F16 || type == SW_TYPE_BF16) {
            float f = rng_float(-1, 1);
            uint16_t h = type == SW_TYPE_F16 ? half_f32_to_f16(f) : half_f32_to_bf16(f);
            memcpy(blk, &h, 2);
        } else { /* Q8_0 and Q4_K: d (and dmin) first, kept small and finite */
            uint16_t d = half_f32_to_f16(rng_float(0.001f, 0.01f));
            memcpy(blk, &d, 2);
            if (type == SW_TYPE_Q4_K)
                memcpy(blk + 2, &d, 2);
        }
    }
    return w;
}

static void conf_matmul(backend *b, cpu_pool *pool, uint32_t type, uint32_t n_tokens) {
    const uint64_t ne0 = 256, ne1 = 24;
    uint64_t n_bytes = 0;
    uint8_t *w = random_weights(type, ne0, ne1, &n_bytes);
    float *x = random_floats(n_tokens * ne0, -1, 1);
    float *want = xmalloc(n_tokens * ne1 * sizeof(float));
    tensor_view hv = {.name = "conf.w", .type = type, .n_dims = 2, .ne = {ne0, ne1, 1, 1},
                      .n_bytes = n_bytes, .data = w};
    SW_CHECK_OK(cpu_matmul(pool, &hv, x, want, n_tokens));
    tensor_view dv = hv;
    dv.data = upload(b, w, n_bytes, "conf.w");
    float *dx = upload(b, x, n_tokens * ne0 * sizeof(float), "conf.x");
    float *dy = NULL;
    SW_CHECK_OK(b->vt->alloc(b, n_tokens * ne1 * sizeof(float), "conf.y", (void **)&dy));
    SW_CHECK_OK(b->vt->matmul(b, &dv, dx, dy, n_tokens));
    check_device_bits(b, type_name(type), dy, want, n_tokens * ne1 * sizeof(float));

    int32_t ids[4] = {3, 0, 23, 3};
    float *rows = xmalloc(4 * ne0 * sizeof(float));
    float *drows = NULL;
    SW_CHECK_OK(cpu_get_rows(&hv, ids, 4, rows));
    SW_CHECK_OK(b->vt->alloc(b, 4 * ne0 * sizeof(float), "conf.rows", (void **)&drows));
    SW_CHECK_OK(b->vt->get_rows(b, &dv, ids, 4, drows));
    check_device_bits(b, "get_rows", drows, rows, 4 * ne0 * sizeof(float));
    b->vt->free(b, drows);
    b->vt->free(b, dy);
    b->vt->free(b, dx);
    b->vt->free(b, (void *)dv.data);
    free(rows);
    free(want);
    free(x);
    free(w);
}

/* rmsnorm, rope, geglu, softcap, add, scale: each on a device copy of the
 * same inputs as a direct call. */
static void conf_elementwise(backend *b) {
    enum { N = 4 * 8 * 16 }; /* 4 tokens, 8 heads, head_dim 16 */
    const uint64_t bytes = N * sizeof(float);
    float *x = random_floats(N, -3, 3), *y = random_floats(N, -3, 3);
    float *w = random_floats(128, 0.5f, 1.5f), *want = xmalloc(bytes);
    const int32_t pos[4] = {0, 7, 100, 4095};
    float *dx = upload(b, x, bytes, "x"), *dy = upload(b, y, bytes, "y");
    float *dw = upload(b, w, 128 * sizeof(float), "w"), *dout = NULL;
    SW_CHECK_OK(b->vt->alloc(b, bytes, "out", (void **)&dout));

    cpu_rmsnorm(x, w, want, 128, 4, 1e-6f);
    b->vt->rmsnorm(b, dx, dw, dout, 128, 4, 1e-6f);
    check_device_bits(b, "rmsnorm", dout, want, bytes);
    cpu_geglu(x, y, want, N);
    b->vt->geglu(b, dx, dy, dout, N);
    check_device_bits(b, "geglu", dout, want, bytes);
    cpu_rope(x, pos, 4, 8, 16, 10000.0f, 0.125f);
    b->vt->rope(b, dx, pos, 4, 8, 16, 10000.0f, 0.125f);
    check_device_bits(b, "rope", dx, x, bytes);
    cpu_softcap(x, N, 2.5f);
    b->vt->softcap(b, dx, N, 2.5f);
    check_device_bits(b, "softcap", dx, x, bytes);
    cpu_add(x, y, N);
    b->vt->add(b, dx, dy, N);
    check_device_bits(b, "add", dx, x, bytes);
    cpu_scale(x, N, 0.37f);
    b->vt->scale(b, dx, N, 0.37f);
    check_device_bits(b, "scale", dx, x, bytes);

    b->vt->free(b, dout);
    b->vt->free(b, dw);
    b->vt->free(b, dy);
    b->vt->free(b, dx);
    free(want);
    free(w);
    free(y);
    free(x);
}

/* Attention with the backend's own scratch (scratch = NULL) against a
 * direct call with a caller scratch. kv_ring 0: linear cache. */
static void conf_attention_case(backend *b, cpu_pool *pool, uint32_t kv_ring,
                                uint32_t window, float softcap, const int32_t pos[3]) {
    enum { NT = 3, NH = 4, NKV = 2, HD = 16, ROWS = MAX_KEYS };
    const uint64_t q_n = NT * NH * HD, kv_n = (uint64_t)ROWS * NKV * HD;
    float *q = random_floats(q_n, -1, 1), *k = random_floats(kv_n, -1, 1);
    float *v = random_floats(kv_n, -1, 1), *want = xmalloc(q_n * sizeof(float));
    float *scratch = xmalloc((size_t)N_THREADS * MAX_KEYS * sizeof(float));
    cpu_attn_args ca = {.q = q, .k = k, .v = v, .out = want, .q_pos = pos, .n_tokens = NT,
                        .n_head = NH, .n_head_kv = NKV, .head_dim = HD, .kv_ring = kv_ring,
                        .window = window, .softcap = softcap, .scratch = scratch};
    cpu_attention(pool, &ca);
    float *dq = upload(b, q, q_n * sizeof(float), "q"), *dout = NULL;
    float *dk = upload(b, k, kv_n * sizeof(float), "k");
    float *dv = upload(b, v, kv_n * sizeof(float), "v");
    SW_CHECK_OK(b->vt->alloc(b, q_n * sizeof(float), "attn.out", (void **)&dout));
    attn_args a = {.q = dq, .k = dk, .v = dv, .out = dout, .q_pos = pos, .n_tokens = NT,
                   .n_head = NH, .n_head_kv = NKV, .head_dim = HD, .kv_ring = kv_ring,
                   .window = window, .softcap = softcap, .scratch = NULL};
    b->vt->attention(b, &a);
    check_device_bits(b, "attention", dout, want, q_n * sizeof(float));
    b->vt->free(b, dout);
    b->vt->free(b, dv);
    b->vt->free(b, dk);
    b->vt->free(b, dq);
    free(scratch);
    free(want);
    free(v);
    free(k);
    free(q);
}

static void test_conformance(backend *b, cpu_pool *pool) {
    const uint32_t types[] = {SW_TYPE_F32, SW_TYPE_F16, SW_TYPE_BF16, SW_TYPE_Q8_0,
                              SW_TYPE_Q4_K};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        conf_matmul(b, pool, types[i], 1);
        conf_matmul(b, pool, types[i], 5);
    }
    conf_elementwise(b);
    const int32_t linear[3] = {61, 62, 63}; /* sees MAX_KEYS keys: the sizing limit */
    const int32_t ring[3] = {70, 71, 130};
    conf_attention_case(b, pool, 0, 0, 0.0f, linear);
    conf_attention_case(b, pool, 0, 20, 50.0f, linear);
    conf_attention_case(b, pool, MAX_KEYS, 32, 0.0f, ring);
    backend_stats s = stats_of(b);
    SW_CHECK(s.in_use_bytes == 0, "%s: %llu bytes still in use after conformance",
             b->vt->name, (unsigned long long)s.in_use_bytes);
}

/* A call seeing more keys than one thread's share of the scratch (but no
 * more than all of it) runs on one thread, with the same bits. */
static void test_attention_scratch_fallback(cpu_pool *pool) {
    backend *b = NULL;
    SW_CHECK_OK(backend_cpu_create(pool, MAX_KEYS / 2, &b));
    const int32_t pos[3] = {40, 50, 63};
    if (b != NULL)
        conf_attention_case(b, pool, 0, 0, 0.0f, pos);
    backend_destroy(b);
}

/* ---- sim memory ------------------------------------------------------- */

static void check_oom_message(const char *what, bool injected) {
    const char *m = sw_last_error();
    SW_CHECK(strstr(m, "requested") && strstr(m, "capacity") && strstr(m, "in use") &&
             strstr(m, "largest free block"), "%s: OOM message lacks a field: %s", what, m);
    SW_CHECK((strstr(m, "injected fault") != NULL) == injected, "%s: injected marker %s: %s",
             what, injected ? "missing" : "unexpected", m);
}

static void test_sim_capacity(cpu_pool *pool) {
    const uint64_t cap = 64 * 1024;
    backend *b = make_sim(cap, 0, 0, pool);
    if (b == NULL)
        return;
    void *p = NULL, *q = NULL;
    SW_CHECK_OK(b->vt->alloc(b, cap, "everything", &p));
    backend_stats s = stats_of(b);
    SW_CHECK(s.capacity_bytes == cap && s.in_use_bytes == cap && s.peak_bytes == cap &&
             s.n_allocs == 1, "full: capacity %llu in use %llu peak %llu allocs %llu",
             (unsigned long long)s.capacity_bytes, (unsigned long long)s.in_use_bytes,
             (unsigned long long)s.peak_bytes, (unsigned long long)s.n_allocs);
    SW_CHECK(b->vt->alloc(b, 1, "one more", &q) == SW_ERR_OOM_DEVICE && q == NULL,
             "one byte past capacity must fail with SW_ERR_OOM_DEVICE");
    check_oom_message("one byte more", false);
    SW_CHECK(strstr(sw_last_error(), "'one more'") != NULL, "message names the purpose: %s",
             sw_last_error());
    b->vt->free(b, p);
    SW_CHECK(b->vt->alloc(b, cap + 1, "too big", &q) == SW_ERR_OOM_DEVICE, "cap + 1 fits?");
    check_oom_message("cap + 1", false);
    SW_CHECK_OK(b->vt->alloc(b, cap, "again", &p));
    b->vt->free(b, p);
    /* Rounding: a block occupies its size rounded up to 256 bytes. */
    SW_CHECK_OK(b->vt->alloc(b, 1, "tiny", &p));
    SW_CHECK_OK(b->vt->alloc(b, 300, "small", &q));
    s = stats_of(b);
    SW_CHECK(s.in_use_bytes == 256 + 512 && s.peak_bytes == cap && s.n_allocs == 4,
             "rounding: in use %llu peak %llu allocs %llu", (unsigned long long)s.in_use_bytes,
             (unsigned long long)s.peak_bytes, (unsigned long long)s.n_allocs);
    SW_CHECK(((uintptr_t)p & 255u) == 0 && ((uintptr_t)q & 255u) == 0, "256-byte alignment");
    SW_CHECK(b->vt->alloc(b, 0, "nothing", &p) == SW_OK && p == NULL, "zero bytes: NULL, OK");
    b->vt->free(b, q);
    b->vt->free(b, NULL);
    SW_CHECK(stats_of(b).in_use_bytes == 256, "in use after frees");
    backend_destroy(b);

    /* A capacity that is not a multiple of 256 is still usable to the byte. */
    b = make_sim(1000, 0, 0, pool);
    if (b == NULL)
        return;
    SW_CHECK_OK(b->vt->alloc(b, 512, "a", &p));
    SW_CHECK_OK(b->vt->alloc(b, 488, "tail", &q));
    SW_CHECK(stats_of(b).in_use_bytes == 1000, "odd capacity fully used");
    b->vt->free(b, p);
    b->vt->free(b, q);
    backend_destroy(b);
}

/* First fit over a fragmented arena: free bytes that are not contiguous do
 * not satisfy a request; freeing a neighbour merges blocks. */
static void test_sim_fragmentation(cpu_pool *pool) {
    const uint64_t k = 4096;
    backend *b = make_sim(4 * k, 0, 0, pool);
    if (b == NULL)
        return;
    void *blk[4] = {0}, *p = NULL;
    for (int i = 0; i < 4; i++)
        SW_CHECK_OK(b->vt->alloc(b, k, "quarter", &blk[i]));
    b->vt->free(b, blk[0]);
    b->vt->free(b, blk[2]);
    SW_CHECK(stats_of(b).in_use_bytes == 2 * k, "half free");
    SW_CHECK(b->vt->alloc(b, 2 * k, "half", &p) == SW_ERR_OOM_DEVICE,
             "two non-adjacent 4 KiB free blocks must not hold one 8 KiB block");
    check_oom_message("fragmented", false);
    SW_CHECK(strstr(sw_last_error(), "in use 8192 (largest free block 4096)") != NULL,
             "fragmented message: %s", sw_last_error());
    SW_CHECK_OK(b->vt->alloc(b, k, "refill", &p));
    SW_CHECK(p == blk[0], "first fit takes the lowest free block");
    b->vt->free(b, blk[1]); /* merges with the free blk[2] */
    SW_CHECK_OK(b->vt->alloc(b, 2 * k, "merged", &blk[1]));
    SW_CHECK(blk[1] != NULL && (uintptr_t)blk[1] == (uintptr_t)p + k, "merged block placement");
    backend_stats s = stats_of(b);
    SW_CHECK(s.in_use_bytes == 4 * k && s.peak_bytes == 4 * k && s.n_allocs == 6,
             "in use %llu peak %llu allocs %llu", (unsigned long long)s.in_use_bytes,
             (unsigned long long)s.peak_bytes, (unsigned long long)s.n_allocs);
    b->vt->free(b, p);
    b->vt->free(b, blk[1]);
    b->vt->free(b, blk[3]);
    SW_CHECK_OK(b->vt->alloc(b, 4 * k, "whole again", &p)); /* all merged back */
    b->vt->free(b, p);
    backend_destroy(b);
}

/* A caller that allocates several buffers and unwinds on failure, as an
 * engine's create does: with fail_alloc_at = N the Nth fails, nothing leaks. */
static sw_status alloc_sites(backend *b, void *bufs[5], int *n_done) {
    static const char *sites[5] = {"site1", "site2", "site3", "site4", "site5"};
    sw_status st = SW_OK;
    for (*n_done = 0; *n_done < 5; (*n_done)++) {
        st = b->vt->alloc(b, 1000u * (uint64_t)(*n_done + 1), sites[*n_done], &bufs[*n_done]);
        if (st != SW_OK)
            break;
    }
    for (int i = 0; i < *n_done; i++)
        b->vt->free(b, bufs[i]);
    return st;
}

static void test_sim_fault_injection(cpu_pool *pool) {
    for (uint64_t n = 0; n <= 5; n++) { /* 0: no fault */
        backend *b = make_sim(1 << 20, 0, n, pool);
        if (b == NULL)
            return;
        void *bufs[5] = {0};
        int n_done = 0;
        sw_status st = alloc_sites(b, bufs, &n_done);
        if (n > 0) {
            char site[16];
            snprintf(site, sizeof site, "'site%llu'", (unsigned long long)n);
            SW_CHECK(st == SW_ERR_OOM_DEVICE && n_done == (int)n - 1,
                     "fail_alloc_at %llu: status %s after %d allocations",
                     (unsigned long long)n, sw_status_name(st), n_done);
            check_oom_message("injected", true);
            SW_CHECK(strstr(sw_last_error(), site) != NULL, "names %s: %s", site,
                     sw_last_error());
        } else {
            SW_CHECK(st == SW_OK && n_done == 5, "fail_alloc_at 0: all five succeed");
        }
        SW_CHECK(stats_of(b).in_use_bytes == 0, "fail_alloc_at %llu leaked device memory",
                 (unsigned long long)n);
        /* Only the Nth attempt fails: the same sites succeed afterwards. */
        SW_CHECK(alloc_sites(b, bufs, &n_done) == SW_OK, "retry after the injected fault");
        SW_CHECK(stats_of(b).n_allocs == (uint64_t)(n > 0 ? n - 1 + 5 : 10),
                 "n_allocs counts successes only");
        backend_destroy(b);
    }
}

/* ---- sim copies and events -------------------------------------------- */

/* Two copies to the same place land in queue order: a slow big one, then a
 * tiny one over its first bytes. Had the tiny one landed first, the big
 * one would have overwritten it. */
static void test_sim_copy_order(cpu_pool *pool) {
    const uint64_t big = 4 * MIB, small = 1024;
    backend *b = make_sim(8 * MIB, 200e6, 0, pool);
    if (b == NULL)
        return;
    uint8_t *src_a = xmalloc(big), *src_b = xmalloc(small), *got = xmalloc(big);
    memset(src_a, 0xAA, big);
    memset(src_b, 0xBB, small);
    void *dst = NULL;
    backend_event *ev = NULL;
    SW_CHECK_OK(b->vt->alloc(b, big, "dst", &dst));
    SW_CHECK_OK(b->vt->event_create(b, &ev));
    SW_CHECK_OK(b->vt->copy_async(b, dst, src_a, big, NULL));
    SW_CHECK_OK(b->vt->copy_async(b, dst, src_b, small, ev));
    SW_CHECK_OK(b->vt->event_wait(b, ev));
    SW_CHECK_OK(b->vt->copy_to_host(b, got, dst, big));
    SW_CHECK(memcmp(got, src_b, small) == 0, "the second copy did not land last");
    SW_CHECK(memcmp(got + small, src_a + small, big - small) == 0,
             "the first copy had not landed when the second's event fired");
    SW_CHECK(stats_of(b).bytes_to_device == big + small, "bytes_to_device");
    b->vt->event_destroy(b, ev);
    b->vt->free(b, dst);
    backend_destroy(b);
    free(got);
    free(src_b);
    free(src_a);
}

static void test_sim_events(cpu_pool *pool) {
    const uint64_t n = 2 * MIB; /* 40 ms at 50 MB/s */
    backend *b = make_sim(4 * MIB, 50e6, 0, pool);
    if (b == NULL)
        return;
    uint8_t *src = xmalloc(n);
    memset(src, 7, n);
    void *dst = NULL;
    backend_event *fresh = NULL, *ev = NULL, *dropped = NULL;
    SW_CHECK_OK(b->vt->alloc(b, n, "dst", &dst));
    SW_CHECK_OK(b->vt->event_create(b, &fresh));
    SW_CHECK_OK(b->vt->event_create(b, &ev));
    SW_CHECK_OK(b->vt->event_create(b, &dropped));
    SW_CHECK_OK(b->vt->event_wait(b, fresh)); /* never used: signalled */
    SW_CHECK(stats_of(b).wait_stall_s == 0.0, "waiting on an unused event stalled");

    /* Wait before completion: blocks, and the block is counted as stall. */
    SW_CHECK_OK(b->vt->copy_async(b, dst, src, n, dropped));
    b->vt->event_destroy(b, dropped); /* in flight: the queue holds no event pointer */
    SW_CHECK_OK(b->vt->copy_async(b, dst, src, n, ev));
    SW_CHECK_OK(b->vt->event_wait(b, ev));
    double stall = stats_of(b).wait_stall_s;
    SW_CHECK(stall > 0.04, "stall %.3f s for ~80 ms of copies", stall);

    /* Wait after completion: returns at once, no stall added. */
    SW_CHECK_OK(b->vt->copy_async(b, dst, src, 1024, ev));
    sleep_s(0.05);
    SW_CHECK_OK(b->vt->event_wait(b, ev));
    SW_CHECK_OK(b->vt->event_wait(b, ev)); /* still signalled */
    SW_CHECK(stats_of(b).wait_stall_s == stall, "a landed copy's wait stalled");
    SW_CHECK_OK(b->vt->event_wait(b, fresh));
    b->vt->event_destroy(b, ev);
    b->vt->event_destroy(b, fresh);
    b->vt->free(b, dst);
    backend_destroy(b);
    free(src);
}

/* More copies than queue slots: copy_async blocks for a slot, nothing is
 * lost or reordered. */
static void test_sim_queue_full(cpu_pool *pool) {
    enum { N_COPIES = 150, BYTES = 8192 };
    backend *b = make_sim(1 << 20, 50e6, 0, pool);
    if (b == NULL)
        return;
    uint8_t *src = xmalloc((size_t)N_COPIES * BYTES), got[BYTES];
    for (int i = 0; i < N_COPIES; i++)
        memset(src + (size_t)i * BYTES, i, BYTES);
    void *dst = NULL;
    backend_event *ev = NULL;
    SW_CHECK_OK(b->vt->alloc(b, BYTES, "dst", &dst));
    SW_CHECK_OK(b->vt->event_create(b, &ev));
    for (int i = 0; i < N_COPIES; i++)
        SW_CHECK_OK(b->vt->copy_async(b, dst, src + (size_t)i * BYTES, BYTES,
                                      i == N_COPIES - 1 ? ev : NULL));
    SW_CHECK_OK(b->vt->event_wait(b, ev));
    SW_CHECK_OK(b->vt->copy_to_host(b, got, dst, BYTES));
    SW_CHECK(memcmp(got, src + (size_t)(N_COPIES - 1) * BYTES, BYTES) == 0,
             "the last queued copy is not the last landed");
    SW_CHECK(stats_of(b).bytes_to_device == (uint64_t)N_COPIES * BYTES, "bytes_to_device");
    b->vt->event_destroy(b, ev);
    b->vt->free(b, dst);
    backend_destroy(b);
    free(src);
}

/* One timed 64 MiB copy: achieved bytes/s from submit to wait's return. */
static double timed_copy_rate(backend *b, void *dst, const void *src, uint64_t n) {
    backend_event *ev = NULL;
    SW_CHECK_OK(b->vt->event_create(b, &ev));
    const double t0 = now_s();
    SW_CHECK_OK(b->vt->copy_async(b, dst, src, n, ev));
    SW_CHECK_OK(b->vt->event_wait(b, ev));
    const double t1 = now_s();
    b->vt->event_destroy(b, ev);
    return (double)n / (t1 - t0);
}

/* Throttle accuracy within +-10%. No attempt may beat the link (that would
 * be a pacing bug). Falling short needs only CPU contention: the copy
 * thread must memcpy at well over the link rate, which a loaded 2-core
 * machine cannot always give it, so up to ten tries are made and the best
 * must be within 10%. A systematic shortfall fails them all. */
static void test_sim_throttle(cpu_pool *pool, double rate) {
    const uint64_t n = 64 * MIB;
    backend *b = make_sim(n, rate, 0, pool);
    if (b == NULL)
        return;
    uint8_t *src = xmalloc(n);
    void *dst = NULL;
    memset(src, 3, n);
    SW_CHECK_OK(b->vt->alloc(b, n, "dst", &dst));
    if (dst != NULL)
        memset(dst, 0, n); /* commit the pages: first-touch faults are not the link */
    double best = 0.0;
    for (int attempt = 0; attempt < 10 && best < 0.9 * rate && dst != NULL; attempt++) {
        const double got = timed_copy_rate(b, dst, src, n);
        printf("throttle %.0f MB/s: achieved %.1f MB/s (%+.1f%%)\n", rate / 1e6, got / 1e6,
               (got / rate - 1.0) * 100.0);
        SW_CHECK(got <= 1.1 * rate, "throttle at %.0f MB/s let %.1f MB/s through", rate / 1e6,
                 got / 1e6);
        best = got > best ? got : best;
    }
    SW_CHECK(best >= 0.9 * rate, "throttle at %.0f MB/s achieved at best %.1f MB/s (outside "
             "+-10%%)", rate / 1e6, best / 1e6);
    b->vt->free(b, dst);
    backend_destroy(b);
    free(src);
}

/* While a throttled copy runs, the calling thread computes: the copy's busy
 * time and the compute loop's wall time overlap instead of adding up. */
static void test_sim_overlap(cpu_pool *pool) {
    const uint64_t n = 16 * MIB; /* ~168 ms at 100 MB/s */
    backend *b = make_sim(n, 100e6, 0, pool);
    if (b == NULL)
        return;
    uint8_t *src = xmalloc(n);
    float *x = random_floats(4096, -1, 1), *w = random_floats(4096, 0.5f, 1.5f);
    void *dst = NULL;
    backend_event *ev = NULL;
    memset(src, 5, n);
    SW_CHECK_OK(b->vt->alloc(b, n, "dst", &dst));
    SW_CHECK_OK(b->vt->event_create(b, &ev));
    const double t0 = now_s();
    SW_CHECK_OK(b->vt->copy_async(b, dst, src, n, ev));
    uint64_t n_iters = 0;
    double t1 = t0;
    while (t1 - t0 < 0.12) { /* compute for 120 ms of wall time */
        b->vt->rmsnorm(b, x, w, x, 4096, 1, 1e-6f);
        n_iters++;
        t1 = now_s();
    }
    SW_CHECK_OK(b->vt->event_wait(b, ev));
    const double t2 = now_s(), compute = t1 - t0, total = t2 - t0;
    const backend_stats s = stats_of(b);
    const double overlap = s.copy_busy_s + compute - total;
    printf("overlap: copy busy %.3f s, compute %.3f s (%llu iterations), wall %.3f s, "
           "overlap %.3f s, stall %.3f s\n", s.copy_busy_s, compute,
           (unsigned long long)n_iters, total, overlap, s.wait_stall_s);
    SW_CHECK(n_iters > 0 && s.copy_busy_s > 0.12, "the copy was not throttled (busy %.3f s)",
             s.copy_busy_s);
    SW_CHECK(overlap >= 0.5 * compute, "copy and compute overlapped only %.3f s of %.3f s",
             overlap, compute);
    SW_CHECK(s.wait_stall_s < total - 0.5 * compute, "waited %.3f s of %.3f s", s.wait_stall_s,
             total);
    b->vt->event_destroy(b, ev);
    b->vt->free(b, dst);
    backend_destroy(b);
    free(w);
    free(x);
    free(src);
}

/* Destroy with seconds of throttled copies queued: cancels, joins, frees,
 * promptly (a chunk takes ~50 ms at 20 MB/s). ASan checks for leaks. */
static void test_sim_destroy_in_flight(cpu_pool *pool) {
    enum { N_COPIES = 8 };
    const uint64_t n = 4 * MIB; /* 8 x 4 MiB at 20 MB/s: 1.7 s of copying */
    const double rates[2] = {20e6, 0.0};
    uint8_t *src = xmalloc(n);
    memset(src, 9, n);
    for (int r = 0; r < 2; r++) {
        backend *b = make_sim(n, rates[r], 0, pool);
        if (b == NULL)
            break;
        void *dst = NULL;
        backend_event *ev = NULL;
        SW_CHECK_OK(b->vt->alloc(b, n, "dst", &dst));
        SW_CHECK_OK(b->vt->event_create(b, &ev));
        for (int i = 0; i < N_COPIES; i++)
            SW_CHECK_OK(b->vt->copy_async(b, dst, src, n, ev));
        b->vt->event_destroy(b, ev);
        const double t0 = now_s();
        backend_destroy(b);
        const double took = now_s() - t0;
        SW_CHECK(took < 0.5, "destroy at %.0f MB/s with copies in flight took %.3f s",
                 rates[r] / 1e6, took);
    }
    free(src);
}

/* ---- argument checks and the cpu backend's accounting ------------------ */

static void test_sim_bad_pointers(cpu_pool *pool) {
    backend *b = make_sim(1 << 20, 0, 0, pool);
    if (b == NULL)
        return;
    float host[64] = {0};
    void *d = NULL;
    SW_CHECK_OK(b->vt->alloc(b, sizeof host, "d", &d));
    SW_CHECK(b->vt->copy_async(b, host, d, sizeof host, NULL) == SW_ERR_ARG,
             "copy_async to host memory must fail");
    SW_CHECK(b->vt->copy_async(b, d, host, sizeof host + 1, NULL) == SW_ERR_ARG,
             "copy_async past the end of an allocation must fail");
    SW_CHECK(b->vt->copy_to_host(b, d, host, sizeof host) == SW_ERR_ARG,
             "copy_to_host from host memory must fail");
    tensor_view w = {.name = "blk.0.ffn_up.weight", .type = SW_TYPE_F32, .n_dims = 2,
                     .ne = {8, 8, 1, 1}, .n_bytes = sizeof host, .data = host};
    SW_CHECK(b->vt->matmul(b, &w, d, d, 1) == SW_ERR_ARG &&
             strstr(sw_last_error(), "blk.0.ffn_up.weight") != NULL,
             "matmul with a host weight must fail naming it: %s", sw_last_error());
    b->vt->free(b, d);
    SW_CHECK(b->vt->copy_async(b, d, host, sizeof host, NULL) == SW_ERR_ARG,
             "copy_async into freed memory must fail");
    backend_destroy(b);

    sim_options opt = {.capacity_bytes = 0};
    SW_CHECK(backend_sim_create(&opt, pool, &b) == SW_ERR_ARG && b == NULL, "capacity 0");
    SW_CHECK(backend_sim_create(NULL, pool, &b) == SW_ERR_ARG, "NULL options");
    backend_destroy(NULL);
}

/* An unsupported weight type is the same error on every backend. */
static void test_unsupported_type(backend *b) {
    uint8_t blob[66] = {0};
    tensor_view w = {.name = "odd", .type = 16 /* IQ2_XXS: no dequantizer */, .n_dims = 2,
                     .ne = {256, 1, 1, 1}, .n_bytes = sizeof blob, .data = NULL};
    w.data = upload(b, blob, sizeof blob, "odd");
    float *x = random_floats(256, -1, 1), *dx = upload(b, x, 256 * sizeof(float), "x");
    SW_CHECK(b->vt->matmul(b, &w, dx, dx, 1) == SW_ERR_UNSUPPORTED, "%s: unsupported type",
             b->vt->name);
    b->vt->free(b, dx);
    b->vt->free(b, (void *)w.data);
    free(x);
}

static void test_cpu_accounting(cpu_pool *pool) {
    void *p = NULL, *q = NULL;
    backend_event *ev = NULL;
    backend *b = NULL;
    SW_CHECK_OK(backend_cpu_create(pool, 0, &b));
    if (b == NULL)
        return;
    SW_CHECK(strcmp(b->vt->name, "cpu") == 0, "name");
    SW_CHECK_OK(b->vt->alloc(b, 1000, "p", &p));
    SW_CHECK_OK(b->vt->alloc(b, 24, "q", &q));
    SW_CHECK(((uintptr_t)p & 63u) == 0 && ((uintptr_t)q & 63u) == 0, "64-byte alignment");
    backend_stats s = stats_of(b);
    SW_CHECK(s.capacity_bytes == UINT64_MAX && s.in_use_bytes == 1024 && s.peak_bytes == 1024,
             "cpu stats: in use %llu peak %llu", (unsigned long long)s.in_use_bytes,
             (unsigned long long)s.peak_bytes);
    SW_CHECK(s.n_allocs == 2 && s.bytes_to_device == 0, "cpu counts");
    SW_CHECK_OK(b->vt->event_create(b, &ev));
    SW_CHECK_OK(b->vt->event_wait(b, ev));
    SW_CHECK_OK(b->vt->copy_async(b, q, "0123456789abcdefghijklm", 24, ev));
    SW_CHECK_OK(b->vt->event_wait(b, ev));
    SW_CHECK(memcmp(q, "0123456789abcdefghijklm", 24) == 0, "cpu copy_async");
    b->vt->free(b, p);
    s = stats_of(b);
    SW_CHECK(s.in_use_bytes == 24 && s.peak_bytes == 1024 && s.n_allocs == 2 &&
             s.bytes_to_device == 24 && s.wait_stall_s == 0.0, "cpu stats after free");
    b->vt->free(b, q);
    b->vt->event_destroy(b, ev);
    backend_destroy(b);
}

int main(void) {
    cpu_pool *pool = NULL;
    backend *cpu = NULL, *sim = NULL;
    SW_CHECK_OK(cpu_pool_create(N_THREADS, &pool));
    SW_CHECK_OK(backend_cpu_create(pool, MAX_KEYS, &cpu));
    sim = make_sim(8 * MIB, 0, 0, pool);
    if (pool == NULL || cpu == NULL || sim == NULL)
        return sw_check_finish("test_backend");
    test_conformance(cpu, pool);
    test_conformance(sim, pool);
    test_unsupported_type(cpu);
    test_unsupported_type(sim);
    test_attention_scratch_fallback(pool);
    test_cpu_accounting(pool);
    test_sim_capacity(pool);
    test_sim_fragmentation(pool);
    test_sim_fault_injection(pool);
    test_sim_bad_pointers(pool);
    test_sim_copy_order(pool);
    test_sim_events(pool);
    test_sim_queue_full(pool);
    test_sim_throttle(pool, 200e6);
    test_sim_throttle(pool, 1e9);
    test_sim_overlap(pool);
    test_sim_destroy_in_flight(pool);
    backend_destroy(sim);
    backend_destroy(cpu);
    cpu_pool_destroy(pool);
    return sw_check_finish("test_backend");
}
