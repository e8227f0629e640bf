/*
 * test_backend.c — the backend interface (backend.h) on the cpu and sim
 * backends: ops, blocks and memory. (Queues, events, pacing and the race
 * check are test_sim_queues.c.)
 *
 * Conformance: every op submitted to either backend, on memory it
 * allocated and filled by copies, gives bit-identical results to a direct
 * cpu_* call (the same kernels); so does a whole block, through the sim's
 * block entry, through its per-op path and through block_run_ops on the
 * cpu backend, over a batch mixing two sequences. Sim memory: exact
 * capacity and accounting, out-of-memory messages, first-fit
 * fragmentation, fault injection at every allocation, operands outside
 * their buffer or in another backend's memory refused by name.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/block.h"
#include "backend/registry.h"
#include "backend/cpu/cpu_ops.h"
#include "backend_util.h"
#include "backend_cases.h"
#include "check.h"
#include "quant/half.h"
#include "quant/types.h"

/* Checks that device memory m holds exactly the bytes of want. */
static void check_bits(backend *b, const char *what, bmem m, const void *want, uint64_t bytes) {
    uint8_t *got = bt_malloc((size_t)bytes);
    bt_download(b, got, m, bytes);
    SW_CHECK(memcmp(got, want, (size_t)bytes) == 0, "%s on %s: not bit-identical to the "
             "direct cpu kernel", what, b->vt->name);
    free(got);
}

static bmem at(backend_buf *buf) { return (bmem){buf, 0}; }

static btensor weight(backend_buf *buf, uint32_t type, uint64_t ne0, uint64_t ne1,
                      uint64_t n_bytes, const char *name) {
    return (btensor){.name = name, .type = type, .ne0 = ne0, .ne1 = ne1, .n_bytes = n_bytes,
                     .mem = at(buf)};
}

/* ---- op conformance ------------------------------------------------------ */

static void conf_matmul(backend *b, uint32_t type, uint32_t n_tokens) {
    const uint64_t ne0 = 256, ne1 = 24;
    uint64_t n_bytes = 0;
    uint8_t *w = bt_random_weights(type, ne0, ne1, &n_bytes);
    float *x = bt_random_floats(n_tokens * ne0, -1, 1);
    float *want = bt_malloc(n_tokens * ne1 * sizeof(float));
    tensor_view hv = {.name = "conf.w", .type = type, .n_dims = 2, .ne = {ne0, ne1, 1, 1},
                      .n_bytes = n_bytes, .data = w};
    cpu_mm_scratch *ws = NULL;
    SW_CHECK_OK(cpu_mm_scratch_create(cpu_pool_size(bt_pool), ne0, &ws));
    SW_CHECK_OK(cpu_matmul(bt_pool, ws, &hv, x, want, n_tokens));
    cpu_mm_scratch_destroy(ws);
    backend_buf *dw = bt_upload(b, w, n_bytes, "conf.w");
    backend_buf *dx = bt_upload(b, x, n_tokens * ne0 * sizeof(float), "conf.x"), *dy = NULL;
    SW_CHECK_OK(b->vt->alloc(b, n_tokens * ne1 * sizeof(float), "conf.y", &dy));
    btensor bw = weight(dw, type, ne0, ne1, n_bytes, "conf.w");
    SW_CHECK_OK(b->vt->submit(b, &(bop){.kind = BOP_MATMUL,
                                         .u.matmul = {bw, at(dx), at(dy), n_tokens}}));
    check_bits(b, type_name(type), at(dy), want, n_tokens * ne1 * sizeof(float));

    int32_t ids[4] = {3, 0, 23, 3};
    float *rows = bt_malloc(4 * ne0 * sizeof(float));
    backend_buf *dids = bt_upload(b, ids, sizeof ids, "ids"), *drows = NULL;
    SW_CHECK_OK(cpu_get_rows(&hv, ids, 4, rows));
    SW_CHECK_OK(b->vt->alloc(b, 4 * ne0 * sizeof(float), "conf.rows", &drows));
    SW_CHECK_OK(b->vt->submit(b, &(bop){.kind = BOP_GET_ROWS,
                                         .u.get_rows = {bw, at(dids), at(drows), 4}}));
    check_bits(b, "get_rows", at(drows), rows, 4 * ne0 * sizeof(float));
    backend_buf *bufs[] = {drows, dids, dy, dx, dw};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        b->vt->free(b, bufs[i]);
    free(rows);
    free(want);
    free(x);
    free(w);
}

/* rmsnorm, rope, geglu, softcap, add, scale, gather: each on a device copy
 * of the same inputs as a direct call. */
static void conf_elementwise(backend *b) {
    enum { N = 4 * 8 * 16 }; /* 4 tokens, 8 heads, head_dim 16 */
    const uint64_t bytes = N * sizeof(float);
    float *x = bt_random_floats(N, -3, 3), *y = bt_random_floats(N, -3, 3);
    float *w = bt_random_floats(128, 0.5f, 1.5f), *want = bt_malloc(bytes);
    const int32_t pos[4] = {0, 7, 100, 4095}, idx[3] = {2, 0, 2};
    backend_buf *dx = bt_upload(b, x, bytes, "x"), *dy = bt_upload(b, y, bytes, "y");
    backend_buf *dw = bt_upload(b, w, 128 * sizeof(float), "w"), *dout = NULL;
    backend_buf *dpos = bt_upload(b, pos, sizeof pos, "pos"), *didx = bt_upload(b, idx, 12, "i");
    btensor norm = weight(dw, SW_TYPE_F32, 128, 1, 128 * sizeof(float), "norm");
    SW_CHECK_OK(b->vt->alloc(b, bytes, "out", &dout));

    cpu_rmsnorm(x, w, want, 128, 4, 1e-6f);
    SW_CHECK_OK(b->vt->submit(b, &(bop){.kind = BOP_RMSNORM,
                                         .u.rmsnorm = {at(dx), norm, at(dout), 128, 4, 1e-6f}}));
    check_bits(b, "rmsnorm", at(dout), want, bytes);
    cpu_geglu(x, y, want, N);
    SW_CHECK_OK(b->vt->submit(b, &(bop){.kind = BOP_GEGLU,
                                         .u.geglu = {at(dx), at(dy), at(dout), N}}));
    check_bits(b, "geglu", at(dout), want, bytes);
    cpu_gather_rows(x, 4, idx, 3, 128, want);
    SW_CHECK_OK(b->vt->submit(b, &(bop){.kind = BOP_GATHER,
                                         .u.gather = {at(dx), at(didx), at(dout), 3, 4, 128}}));
    check_bits(b, "gather", at(dout), want, 3 * 128 * sizeof(float));
    cpu_rope(x, pos, 4, 8, 16, 10000.0f, 0.125f, 0);
    SW_CHECK_OK(b->vt->submit(b, &(bop){.kind = BOP_ROPE,
                                         .u.rope = {at(dx), at(dpos), 4, 8, 16, 1e4f, 0.125f}}));
    check_bits(b, "rope", at(dx), x, bytes);
    cpu_softcap(x, N, 2.5f);
    SW_CHECK_OK(b->vt->submit(b, &(bop){.kind = BOP_SOFTCAP, .u.softcap = {at(dx), N, 2.5f}}));
    check_bits(b, "softcap", at(dx), x, bytes);
    cpu_add(x, y, N);
    SW_CHECK_OK(b->vt->submit(b, &(bop){.kind = BOP_ADD, .u.add = {at(dx), at(dy), N}}));
    check_bits(b, "add", at(dx), x, bytes);
    cpu_scale(x, N, 0.37f);
    SW_CHECK_OK(b->vt->submit(b, &(bop){.kind = BOP_SCALE, .u.scale = {at(dx), N, 0.37f}}));
    check_bits(b, "scale", at(dx), x, bytes);

    backend_buf *bufs[] = {dout, didx, dpos, dw, dy, dx};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        b->vt->free(b, bufs[i]);
    free(want);
    free(w);
    free(y);
    free(x);
}

/* KV append then attention over two sequences sharing one cache buffer,
 * against the direct kernels on host copies. */
static void conf_kv_attention(backend *b, uint32_t kv_type, uint32_t ring, uint32_t window,
                              float softcap) {
    bt_attn_result r;
    bt_attn_case_run(b, kv_type, ring, window, softcap, 16, &r);
    SW_CHECK(memcmp(r.cache, r.want_cache, r.cache_bytes) == 0, "kv_append on %s: not "
             "bit-identical to the direct cpu kernel", b->vt->name);
    SW_CHECK(memcmp(r.out, r.want_out, r.out_floats * sizeof(float)) == 0, "attention on %s: "
             "not bit-identical to the direct cpu kernel", b->vt->name);
    bt_attn_result_free(&r);
}

static void test_conformance(backend *b) {
    const uint32_t types[] = {SW_TYPE_F32, SW_TYPE_F16, SW_TYPE_BF16, SW_TYPE_Q8_0,
                              SW_TYPE_Q4_K};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        conf_matmul(b, types[i], 1);
        conf_matmul(b, types[i], 5);
    }
    conf_elementwise(b);
    conf_kv_attention(b, SW_TYPE_F32, 0, 0, 0.0f);
    conf_kv_attention(b, SW_TYPE_F16, 0, 20, 50.0f);
    conf_kv_attention(b, SW_TYPE_BF16, 32, 16, 0.0f);
    backend_stats s = bt_stats(b);
    SW_CHECK(s.in_use_bytes == 0, "%s: %llu bytes still in use after conformance",
             b->vt->name, (unsigned long long)s.in_use_bytes);
}

/* The cpu backend computes on host memory in place. */
static void test_cpu_host_memory(backend *b) {
    float x[64], y[64], want[64];
    for (int i = 0; i < 64; i++) {
        x[i] = (float)i * 0.5f;
        y[i] = 1.0f - (float)i;
        want[i] = x[i] + y[i];
    }
    backend_buf *hm = b->vt->host_memory(b);
    bmem mx = {hm, (uint64_t)(uintptr_t)x}, my = {hm, (uint64_t)(uintptr_t)y};
    SW_CHECK_OK(b->vt->submit(b, &(bop){.kind = BOP_ADD, .u.add = {mx, my, 64}}));
    SW_CHECK(memcmp(x, want, sizeof x) == 0, "cpu: add on host memory in place");
}

/* ---- a whole block --------------------------------------------------------- */

static void test_block(backend *cpu) {
    const block_shape shape = {.n_embd = 32, .n_ff = 64, .n_head = 4, .n_head_kv = 2,
                               .head_dim = 8, .norm_eps = 1e-6f, .query_scale = 0.35f,
                               .attn_softcap = 50.0f, .qk_norm = true, .post_norms = true};
    bt_block_case c;
    bt_block_case_init(&c, &shape, SW_TYPE_F32, 5, 16, 2, 3, 0.3f);
    backend_test_hooks per_op = {.per_op = true};
    backend *sim = bt_sim(8 * BT_MIB, 0, NULL), *sim_ops = bt_sim(8 * BT_MIB, 0, &per_op);
    if (sim == NULL || sim_ops == NULL)
        return;
    SW_CHECK(sim->vt->block != NULL && sim_ops->vt->block == NULL && cpu->vt->block == NULL,
             "block entries: sim has one, per_op hides it, cpu has none");
    uint8_t *kv0, *kv1, *kv2;
    float *x0 = bt_block_case_run(cpu, &c, 5, false, &kv0);
    float *x1 = bt_block_case_run(sim, &c, 5, true, &kv1);
    float *x2 = bt_block_case_run(sim_ops, &c, 5, true, &kv2);
    const uint64_t kv_bytes = bt_block_case_kv_bytes(&c), x_bytes = 5 * 32 * sizeof(float);
    SW_CHECK(memcmp(x0, x1, x_bytes) == 0 && memcmp(kv0, kv1, kv_bytes) == 0,
             "sim block entry differs from the cpu backend's ops");
    SW_CHECK(memcmp(x0, x2, x_bytes) == 0 && memcmp(kv0, kv2, kv_bytes) == 0,
             "sim per-op block differs from the cpu backend's ops");
    SW_CHECK(memcmp(x0, c.x, x_bytes) != 0, "the block changed nothing");
    free(x0), free(x1), free(x2), free(kv0), free(kv1), free(kv2);
    bt_block_case_free(&c);
    backend_destroy(sim);
    backend_destroy(sim_ops);
}

/* ---- sim memory ------------------------------------------------------------ */

static void check_oom_message(const char *what, bool injected) {
    const char *m = sw_last_error();
    SW_CHECK(strstr(m, "requested") && strstr(m, "capacity") && strstr(m, "in use") &&
             strstr(m, "largest free block"), "%s: OOM message lacks a field: %s", what, m);
    SW_CHECK((strstr(m, "injected fault") != NULL) == injected, "%s: injected marker %s: %s",
             what, injected ? "missing" : "unexpected", m);
}

static void test_sim_capacity(void) {
    const uint64_t cap = 64 * 1024;
    backend *b = bt_sim(cap, 0, NULL);
    if (b == NULL)
        return;
    backend_buf *p = NULL, *q = NULL;
    SW_CHECK_OK(b->vt->alloc(b, cap, "everything", &p));
    backend_stats s = bt_stats(b);
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
    s = bt_stats(b);
    SW_CHECK(s.in_use_bytes == 256 + 512 && s.peak_bytes == cap && s.n_allocs == 4,
             "rounding: in use %llu peak %llu allocs %llu", (unsigned long long)s.in_use_bytes,
             (unsigned long long)s.peak_bytes, (unsigned long long)s.n_allocs);
    backend_buf *z = NULL;
    SW_CHECK(b->vt->alloc(b, 0, "nothing", &z) == SW_OK && z == NULL, "zero bytes: NULL, OK");
    b->vt->free(b, q);
    b->vt->free(b, NULL);
    SW_CHECK(bt_stats(b).in_use_bytes == 256, "in use after frees");
    b->vt->free(b, p);
    backend_destroy(b);
}

/* First fit over a fragmented arena: free bytes that are not contiguous do
 * not satisfy a request; freeing a neighbour merges blocks. */
static void test_sim_fragmentation(void) {
    const uint64_t k = 4096;
    backend *b = bt_sim(4 * k, 0, NULL);
    if (b == NULL)
        return;
    backend_buf *blk[4] = {0}, *p = NULL;
    for (int i = 0; i < 4; i++)
        SW_CHECK_OK(b->vt->alloc(b, k, "quarter", &blk[i]));
    b->vt->free(b, blk[0]);
    b->vt->free(b, blk[2]);
    SW_CHECK(bt_stats(b).in_use_bytes == 2 * k, "half free");
    SW_CHECK(b->vt->alloc(b, 2 * k, "half", &p) == SW_ERR_OOM_DEVICE,
             "two non-adjacent 4 KiB free blocks must not hold one 8 KiB block");
    check_oom_message("fragmented", false);
    SW_CHECK(strstr(sw_last_error(), "in use 8192 (largest free block 4096)") != NULL,
             "fragmented message: %s", sw_last_error());
    SW_CHECK_OK(b->vt->alloc(b, k, "refill", &p));
    b->vt->free(b, blk[1]); /* merges with the free blk[2] */
    SW_CHECK_OK(b->vt->alloc(b, 2 * k, "merged", &blk[1]));
    backend_stats s = bt_stats(b);
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

/* Allocating five buffers and unwinding on failure, as an engine's load
 * does: with fail_alloc_at = N the Nth fails, nothing leaks. */
static sw_status alloc_sites(backend *b, int *n_done) {
    static const char *sites[5] = {"site1", "site2", "site3", "site4", "site5"};
    backend_buf *bufs[5] = {0};
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

static void test_sim_fault_injection(void) {
    for (uint64_t n = 0; n <= 5; n++) { /* 0: no fault */
        backend_test_hooks hooks = {.fail_alloc_at = n};
        backend *b = bt_sim(1 << 20, 0, &hooks);
        if (b == NULL)
            return;
        int n_done = 0;
        sw_status st = alloc_sites(b, &n_done);
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
        SW_CHECK(bt_stats(b).in_use_bytes == 0, "fail_alloc_at %llu leaked device memory",
                 (unsigned long long)n);
        SW_CHECK(alloc_sites(b, &n_done) == SW_OK, "retry after the injected fault");
        backend_destroy(b);
    }
}

static void test_sim_bad_operands(backend *cpu) {
    backend *b = bt_sim(1 << 20, 0, NULL);
    if (b == NULL)
        return;
    float host[64] = {0};
    backend_buf *d = NULL, *c = NULL;
    SW_CHECK_OK(b->vt->alloc(b, sizeof host, "d", &d));
    SW_CHECK_OK(cpu->vt->alloc(cpu, sizeof host, "cpu buffer", &c));
    SW_CHECK(b->vt->copy_h2d(b, BQ_COPY, (bmem){d, 1}, host, sizeof host) == SW_ERR_ARG &&
             strstr(sw_last_error(), "overrun 'd'") != NULL,
             "copy past the end of an allocation must fail: %s", sw_last_error());
    SW_CHECK(b->vt->copy_d2h(b, BQ_COMPUTE, host, (bmem){c, 0}, 16) == SW_ERR_ARG,
             "a copy from another backend's memory must fail");
    btensor w = {.name = "blk.0.ffn_up.weight", .type = SW_TYPE_F32, .ne0 = 8, .ne1 = 8,
                 .n_bytes = sizeof host, .mem = {c, 0}};
    SW_CHECK(b->vt->submit(b, &(bop){.kind = BOP_MATMUL,
                                      .u.matmul = {w, {d, 0}, {d, 0}, 1}}) == SW_ERR_ARG &&
             strstr(sw_last_error(), "blk.0.ffn_up.weight") != NULL,
             "matmul with a weight outside device memory must fail naming it: %s",
             sw_last_error());
    w.mem = (bmem){d, 0};
    SW_CHECK_OK(b->vt->submit(b, &(bop){.kind = BOP_MATMUL,
                                         .u.matmul = {w, {d, 0}, {d, 0}, 8}}));
    SW_CHECK(b->vt->submit(b, &(bop){.kind = BOP_MATMUL,
                                      .u.matmul = {w, {d, 0}, {d, 0}, 9}}) == SW_ERR_ARG &&
             strstr(sw_last_error(), "overrun 'd'") != NULL,
             "9 tokens of 8 floats overrun a 64-float buffer: %s", sw_last_error());
    bt_sync(b);
    b->vt->free(b, d);
    cpu->vt->free(cpu, c);
    backend_destroy(b);
    backend_params none = {0};
    SW_CHECK(backend_create("sim", &none, &b) == SW_ERR_ARG && b == NULL, "capacity 0");
    SW_CHECK(backend_create("gpu", &none, &b) == SW_ERR_ARG, "unknown backend name");
    /* cuda: not in this build (why and what instead), no device (never
     * out of memory), or a GPU. */
    backend_info cuda;
    SW_CHECK_OK(backend_lookup("cuda", &cuda));
    sw_status st = backend_create("cuda", &none, &b);
    if (!cuda.runs)
        SW_CHECK(st == SW_ERR_UNSUPPORTED && strstr(sw_last_error(), "--backend sim") != NULL,
                 "cuda not built says why it cannot run: %s", sw_last_error());
    else
        SW_CHECK(st == SW_OK || (st == SW_ERR_NO_DEVICE &&
                                 strstr(sw_last_error(), "no CUDA device visible") != NULL),
                 "cuda without a device says so: %s %s", sw_status_name(st), sw_last_error());
    backend_destroy(b);
    backend_destroy(NULL);
}

/* An unsupported weight type is the same error on every backend. */
static void test_unsupported_type(backend *b) {
    uint8_t blob[66] = {0};
    backend_buf *dw = bt_upload(b, blob, sizeof blob, "odd");
    float *x = bt_random_floats(256, -1, 1);
    backend_buf *dx = bt_upload(b, x, 256 * sizeof(float), "x");
    btensor w = {.name = "odd", .type = 16 /* IQ2_XXS: no dequantizer */, .ne0 = 256,
                 .ne1 = 1, .n_bytes = sizeof blob, .mem = {dw, 0}};
    sw_status st = b->vt->submit(b, &(bop){.kind = BOP_MATMUL,
                                            .u.matmul = {w, {dx, 0}, {dx, 0}, 1}});
    if (st == SW_OK) /* the sim finds it when the op runs: a sticky error */
        st = b->vt->sync(b);
    SW_CHECK(st == SW_ERR_UNSUPPORTED, "%s: unsupported type gave %s", b->vt->name,
             sw_status_name(st));
    b->vt->free(b, dx);
    b->vt->free(b, dw);
    free(x);
}

static void test_cpu_accounting(void) {
    backend *b = bt_cpu();
    if (b == NULL)
        return;
    backend_buf *p = NULL, *q = NULL;
    backend_event *ev = NULL;
    SW_CHECK(strcmp(b->vt->name, "cpu") == 0, "name");
    SW_CHECK_OK(b->vt->alloc(b, 1000, "p", &p));
    SW_CHECK_OK(b->vt->alloc(b, 24, "q", &q));
    backend_stats s = bt_stats(b);
    SW_CHECK(s.capacity_bytes == UINT64_MAX && s.in_use_bytes == 1024 && s.peak_bytes == 1024,
             "cpu stats: in use %llu peak %llu", (unsigned long long)s.in_use_bytes,
             (unsigned long long)s.peak_bytes);
    SW_CHECK(s.n_allocs == 2 && s.bytes_to_device == 0, "cpu counts");
    SW_CHECK_OK(b->vt->event_create(b, &ev));
    SW_CHECK_OK(b->vt->event_sync(b, ev));
    SW_CHECK_OK(b->vt->copy_h2d(b, BQ_COPY, (bmem){q, 0}, "0123456789abcdefghijklm", 24));
    SW_CHECK_OK(b->vt->event_record(b, ev, BQ_COPY));
    SW_CHECK_OK(b->vt->event_sync(b, ev));
    char got[24];
    bt_download(b, got, (bmem){q, 0}, 24);
    SW_CHECK(memcmp(got, "0123456789abcdefghijklm", 24) == 0, "cpu copies");
    b->vt->free(b, p);
    s = bt_stats(b);
    SW_CHECK(s.in_use_bytes == 24 && s.peak_bytes == 1024 && s.n_allocs == 2 &&
             s.bytes_to_device == 24 && s.wait_stall_s == 0.0, "cpu stats after free");
    b->vt->free(b, q);
    b->vt->event_destroy(b, ev);
    backend_destroy(b);
}

int main(void) {
    SW_CHECK_OK(cpu_pool_create(BT_THREADS, &bt_pool));
    backend *cpu = bt_cpu(), *sim = bt_sim(8 * BT_MIB, 0, NULL);
    if (bt_pool == NULL || cpu == NULL || sim == NULL)
        return sw_check_finish("test_backend");
    test_conformance(cpu);
    test_conformance(sim);
    test_cpu_host_memory(cpu);
    test_block(cpu);
    test_unsupported_type(cpu);
    test_unsupported_type(sim);
    test_cpu_accounting();
    test_sim_capacity();
    test_sim_fragmentation();
    test_sim_fault_injection();
    test_sim_bad_operands(cpu);
    backend_destroy(sim);
    backend_destroy(cpu);
    cpu_pool_destroy(bt_pool);
    return sw_check_finish("test_backend");
}
