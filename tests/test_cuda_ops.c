/*
 * test_cuda_ops.c — the CUDA backend's ops on a GPU against the cpu
 * backend's kernels, on random inputs (STYLE.md 24: atol + rtol * |ref|,
 * the first mismatches printed, the largest difference reported):
 *   - matmul of every weight type at 1, 3, 8 tokens (decode kernels), 9,
 *     40 and 130 tokens (tensor cores, both TF32 modes) and in exact mode
 *     (f32 SIMT, checked batch-invariant), partial row and K tiles
 *     included, against cpu_matmul's exact f32 dots; get_rows bit-exact;
 *   - RMSNorm (1 ulp), GeGLU, soft-cap, add, scale, gather (bit-exact),
 *     RoPE (cos/sin rounding), KV append in f32/f16/bf16 (bit-exact),
 *     attention over two sequences with windows, a ring and soft-capping;
 *   - a whole block: the fused entry bit-identical to the op sequence, both
 *     within tolerance of the cpu backend's;
 *   - memory: exact accounting, the budget and the driver's refusal as
 *     SW_ERR_OOM_DEVICE naming buffer, bytes and budget, overruns and
 *     foreign buffers refused by name.
 * Without a visible device it prints why and exits 77 (CTest: skipped).
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/block.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/registry.h"
#include "backend_util.h"
#include "backend_cases.h"
#include "check.h"
#include "quant/half.h"
#include "quant/types.h"

#define SKIP 77

static bmem at(backend_buf *buf) { return (bmem){buf, 0}; }

static backend *make_cuda(bool exact, bool per_op, uint64_t capacity) {
    static backend_test_hooks per_op_hooks = {.per_op = true};
    backend_params p = {.pool = bt_pool,
                        .sizes = {.max_attn_keys = BT_MAX_KEYS, .max_row_elems = 4096},
                        .exact_dots = exact, .test = per_op ? &per_op_hooks : NULL,
                        .capacity_bytes = capacity};
    backend *b = NULL;
    SW_CHECK_OK(backend_create("cuda", &p, &b));
    return b;
}

/* Compares n floats: |got - want| <= atol + rtol |want|; prints the first
 * mismatches; returns the largest |difference|. */
static double compare(const char *what, const float *got, const float *want, uint64_t n,
                      double atol, double rtol) {
    double worst = 0;
    uint64_t bad = 0;
    for (uint64_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        if (!(d <= atol + rtol * fabs(want[i]))) {
            if (bad++ < 3)
                fprintf(stderr, "  %s[%llu]: %.9g, cpu %.9g\n", what, (unsigned long long)i,
                        got[i], want[i]);
        }
        worst = d > worst || d != d ? d : worst;
    }
    SW_CHECK(bad == 0, "%s: %llu of %llu values outside %.1e + %.1e|ref| (worst %.3g)", what,
             (unsigned long long)bad, (unsigned long long)n, atol, rtol, worst);
    return worst;
}

static float *download_f(backend *b, bmem m, uint64_t n) {
    float *x = bt_malloc(n * sizeof(float));
    bt_download(b, x, m, n * sizeof(float));
    return x;
}

/* ---- matmul ---------------------------------------------------------------------- */

/* One weight type at several token counts, on the default backend (dev)
 * and the exact one (ex). ne0 = 384 (3 K tiles of 128; 12 Q8_0 blocks)
 * or 768 for 256-element blocks; 100 rows (a partial 64-row tile). */
static void conf_matmul(backend *dev, backend *ex, backend *tf32, uint32_t type) {
    const uint32_t counts[] = {1, 3, 8, 9, 40, 130};
    const type_traits *tr = type_get_traits(type);
    /* 3 K tiles of 128, plus a partial one where the blocks allow */
    const uint64_t ne0 = tr->block_elems == 256 ? 768 : tr->block_elems == 32 ? 416 : 392;
    const uint64_t ne1 = 100;
    uint64_t n_bytes = 0;
    uint8_t *w = bt_random_weights(type, ne0, ne1, &n_bytes);
    const uint32_t max_t = 130;
    float *x = bt_random_floats(max_t * ne0, -1, 1), *want = bt_malloc(max_t * ne1 * 4);
    tensor_view hv = {.name = "w", .type = type, .n_dims = 2, .ne = {ne0, ne1, 1, 1},
                      .n_bytes = n_bytes, .data = w};
    cpu_mm_scratch *ws = NULL;
    SW_CHECK_OK(cpu_mm_scratch_create(cpu_pool_size(bt_pool), ne0, &ws));
    cpu_mm_scratch_set_exact(ws, true);
    SW_CHECK_OK(cpu_matmul(bt_pool, ws, &hv, x, want, max_t));
    cpu_mm_scratch_destroy(ws);
    /* the scale of a row's terms: sum |w||x| bounds any summation order */
    double scale = 0;
    for (uint64_t i = 0; i < max_t * ne1; i++)
        scale = fmax(scale, fabs(want[i]));
    backend *bs[3] = {dev, ex, tf32};
    const char *names[3] = {"tf32x3", "exact", "tf32"};
    const double tols[3] = {2e-5, 2e-5, 4e-3};
    float *first = NULL;
    for (int k = 0; k < 3; k++) {
        backend *b = bs[k];
        backend_buf *dw = bt_upload(b, w, n_bytes, "w"), *dx = bt_upload(b, x, max_t * ne0 * 4, "x");
        backend_buf *dy = NULL;
        SW_CHECK_OK(b->vt->alloc(b, max_t * ne1 * 4, "y", &dy));
        btensor bw = {.name = "w", .type = type, .ne0 = ne0, .ne1 = ne1, .n_bytes = n_bytes,
                      .mem = at(dw)};
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
            const uint32_t n = counts[c];
            char what[96];
            SW_CHECK_OK(b->vt->submit(b, &(bop){.kind = BOP_MATMUL,
                                                 .u.matmul = {bw, at(dx), at(dy), n}}));
            float *y = download_f(b, at(dy), n * ne1);
            snprintf(what, sizeof what, "matmul %s %s n=%u", type_name(type), names[k], n);
            compare(what, y, want, n * ne1, tols[k] * scale, 0);
            if (k == 1 && c == 0)
                first = y;
            else {
                /* exact mode: token 0's row is the same bits in any batch */
                if (k == 1)
                    SW_CHECK(!memcmp(y, first, ne1 * 4), "%s: token 0 differs from n=1", what);
                free(y);
            }
        }
        b->vt->free(b, dy);
        b->vt->free(b, dx);
        b->vt->free(b, dw);
    }
    free(first);

    /* get_rows: the cpu backend's dequantized rows, bit for bit */
    int32_t ids[5] = {3, 0, 99, 3, 57};
    float *rows = bt_malloc(5 * ne0 * 4);
    SW_CHECK_OK(cpu_get_rows(&hv, ids, 5, rows));
    backend_buf *dw = bt_upload(dev, w, n_bytes, "w"), *di = bt_upload(dev, ids, sizeof ids, "i");
    backend_buf *dr = NULL;
    SW_CHECK_OK(dev->vt->alloc(dev, 5 * ne0 * 4, "rows", &dr));
    btensor bw = {.name = "w", .type = type, .ne0 = ne0, .ne1 = ne1, .n_bytes = n_bytes,
                  .mem = at(dw)};
    SW_CHECK_OK(dev->vt->submit(dev, &(bop){.kind = BOP_GET_ROWS,
                                             .u.get_rows = {bw, at(di), at(dr), 5}}));
    float *got = download_f(dev, at(dr), 5 * ne0);
    SW_CHECK(!memcmp(got, rows, 5 * ne0 * 4), "get_rows %s: not the cpu backend's bits",
             type_name(type));
    dev->vt->free(dev, dr), dev->vt->free(dev, di), dev->vt->free(dev, dw);
    free(got), free(rows), free(want), free(x), free(w);
}

/* ---- elementwise ops ----------------------------------------------------------------- */

static void conf_elementwise(backend *b) {
    enum { N = 4 * 8 * 64, ROW = 512 }; /* 4 tokens, 8 heads, head_dim 64 */
    const uint64_t bytes = N * sizeof(float);
    float *x = bt_random_floats(N, -3, 3), *y = bt_random_floats(N, -3, 3);
    float *w = bt_random_floats(ROW, 0.5f, 1.5f), *want = bt_malloc(bytes);
    const int32_t pos[4] = {0, 7, 100, 40950}, idx[3] = {2, 0, 2};
    backend_buf *dx = bt_upload(b, x, bytes, "x"), *dy = bt_upload(b, y, bytes, "y");
    backend_buf *dw = bt_upload(b, w, ROW * 4, "w"), *dout = NULL;
    backend_buf *dpos = bt_upload(b, pos, sizeof pos, "pos"), *didx = bt_upload(b, idx, 12, "i");
    btensor norm = {.name = "norm", .type = SW_TYPE_F32, .ne0 = ROW, .ne1 = 1,
                    .n_bytes = ROW * 4, .mem = at(dw)};
    SW_CHECK_OK(b->vt->alloc(b, bytes, "out", &dout));
    float *got;

    cpu_rmsnorm(x, w, want, ROW, N / ROW, 1e-6f);
    SW_CHECK_OK(b->vt->submit(b, &(bop){.kind = BOP_RMSNORM,
                                         .u.rmsnorm = {at(dx), norm, at(dout), ROW, N / ROW,
                                                       1e-6f}}));
    got = download_f(b, at(dout), N);
    compare("rmsnorm", got, want, N, 0, 1.2e-7);
    free(got);
    cpu_geglu(x, y, want, N);
    SW_CHECK_OK(b->vt->submit(b, &(bop){.kind = BOP_GEGLU,
                                         .u.geglu = {at(dx), at(dy), at(dout), N}}));
    got = download_f(b, at(dout), N);
    SW_CHECK(!memcmp(got, want, bytes), "geglu: not the cpu backend's bits");
    free(got);
    cpu_gather_rows(x, 4, idx, 3, N / 4, want);
    SW_CHECK_OK(b->vt->submit(b, &(bop){.kind = BOP_GATHER,
                                         .u.gather = {at(dx), at(didx), at(dout), 3, 4, N / 4}}));
    got = download_f(b, at(dout), 3 * N / 4);
    SW_CHECK(!memcmp(got, want, 3 * N), "gather: not the cpu backend's bits");
    free(got);
    cpu_rope(x, pos, 4, 8, 64, 10000.0f, 0.125f, 0);
    SW_CHECK_OK(b->vt->submit(b, &(bop){.kind = BOP_ROPE,
                                         .u.rope = {at(dx), at(dpos), 4, 8, 64, 1e4f, 0.125f}}));
    got = download_f(b, at(dx), N);
    compare("rope", got, x, N, 1e-6, 0);
    /* continue from the device's values, so the next ops compare exactly */
    memcpy(x, got, bytes);
    free(got);
    cpu_softcap(x, N, 2.5f);
    SW_CHECK_OK(b->vt->submit(b, &(bop){.kind = BOP_SOFTCAP, .u.softcap = {at(dx), N, 2.5f}}));
    cpu_add(x, y, N);
    SW_CHECK_OK(b->vt->submit(b, &(bop){.kind = BOP_ADD, .u.add = {at(dx), at(dy), N}}));
    cpu_scale(x, N, 0.37f);
    SW_CHECK_OK(b->vt->submit(b, &(bop){.kind = BOP_SCALE, .u.scale = {at(dx), N, 0.37f}}));
    got = download_f(b, at(dx), N);
    SW_CHECK(!memcmp(got, x, bytes), "softcap, add, scale: not the cpu backend's bits");
    free(got);
    backend_buf *bufs[] = {dout, didx, dpos, dw, dy, dx};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        b->vt->free(b, bufs[i]);
    free(want), free(w), free(y), free(x);
}

/* KV append then attention over two sequences in one cache buffer. */
static void conf_kv_attention(backend *b, uint32_t kv_type, uint32_t ring, uint32_t window,
                              float softcap) {
    bt_attn_result r;
    char what[64];
    bt_attn_case_run(b, kv_type, ring, window, softcap, 256, &r);
    SW_CHECK(!memcmp(r.cache, r.want_cache, r.cache_bytes), "kv append (%s): not the cpu "
             "backend's bits", type_name(kv_type));
    snprintf(what, sizeof what, "attention %s ring %u window %u cap %g", type_name(kv_type),
             ring, window, softcap);
    compare(what, r.out, r.want_out, r.out_floats, 2e-6, 2e-5);
    bt_attn_result_free(&r);
}

/* ---- a whole block ------------------------------------------------------------------ */

static void conf_block(backend *dev, backend *per_op, backend *cpu, uint32_t mtype) {
    const block_shape shape = {.n_embd = 256, .n_ff = 512, .n_head = 4, .n_head_kv = 2,
                               .head_dim = 64, .norm_eps = 1e-6f, .query_scale = 0.125f,
                               .attn_softcap = 50.0f, .qk_norm = true, .post_norms = true};
    bt_block_case c;
    bt_block_case_init(&c, &shape, mtype, 12, 32, 2, 4, 0.1f);
    const uint64_t kv_bytes = bt_block_case_kv_bytes(&c);
    const uint32_t counts[2] = {5, 12}; /* decode kernels, then tensor cores */
    SW_CHECK(dev->vt->block != NULL && per_op->vt->block == NULL,
             "cuda has a block entry; per_op hides it");
    for (int i = 0; i < 2; i++) {
        const uint64_t n_x = (uint64_t)counts[i] * shape.n_embd;
        uint8_t *kv0, *kv1, *kv2;
        float *x0 = bt_block_case_run(cpu, &c, counts[i], false, &kv0);
        float *x1 = bt_block_case_run(dev, &c, counts[i], true, &kv1);
        float *x2 = bt_block_case_run(per_op, &c, counts[i], true, &kv2);
        SW_CHECK(!memcmp(x1, x2, n_x * 4) && !memcmp(kv1, kv2, kv_bytes),
                 "block (%s, %u tokens): the fused entry differs from the op sequence",
                 type_name(mtype), counts[i]);
        char what[64];
        snprintf(what, sizeof what, "block %s n=%u", type_name(mtype), counts[i]);
        compare(what, x1, x0, n_x, 2e-4, 2e-4);
        snprintf(what, sizeof what, "block %s n=%u cache", type_name(mtype), counts[i]);
        compare(what, (float *)kv1, (float *)kv0, kv_bytes / 4, 2e-4, 2e-4);
        SW_CHECK(memcmp(x0, c.x, n_x * 4) != 0, "the block changed nothing");
        free(x0), free(x1), free(x2), free(kv0), free(kv1), free(kv2);
    }
    bt_block_case_free(&c);
}

/* ---- memory and refusals ------------------------------------------------------------- */

static void check_oom(const char *what, const char *need) {
    const char *m = sw_last_error();
    SW_CHECK(strstr(m, "out of memory") && strstr(m, "requested") && strstr(m, "budget") &&
             strstr(m, "in use") && strstr(m, need), "%s: OOM message lacks a field: %s",
             what, m);
}

static void test_memory(void) {
    const uint64_t cap = 1 << 20;
    backend *b = make_cuda(false, false, cap);
    if (b == NULL)
        return;
    backend_buf *p = NULL, *q = NULL;
    SW_CHECK_OK(b->vt->alloc(b, cap / 2, "half", &p));
    SW_CHECK(b->vt->alloc(b, cap / 2 + 1, "one byte too many", &q) == SW_ERR_OOM_DEVICE &&
             q == NULL, "past the budget: SW_ERR_OOM_DEVICE");
    check_oom("past the budget", "'one byte too many'");
    backend_stats s = bt_stats(b);
    SW_CHECK(s.in_use_bytes == cap / 2 && s.peak_bytes == cap / 2 && s.n_allocs == 1 &&
             s.capacity_bytes == cap, "accounting: in use %llu peak %llu allocs %llu",
             (unsigned long long)s.in_use_bytes, (unsigned long long)s.peak_bytes,
             (unsigned long long)s.n_allocs);
    SW_CHECK(s.driver_peak_bytes >= cap / 2, "driver peak %llu below the buffer",
             (unsigned long long)s.driver_peak_bytes);
    /* an operand past its buffer, and memory of another backend */
    SW_CHECK(b->vt->submit(b, &(bop){.kind = BOP_SCALE,
                                      .u.scale = {at(p), cap / 8 + 1, 2.0f}}) == SW_ERR_ARG &&
             strstr(sw_last_error(), "overrun 'half'"), "overrun refused: %s", sw_last_error());
    backend *cpu = bt_cpu();
    backend_buf *c = NULL;
    SW_CHECK_OK(cpu->vt->alloc(cpu, 64, "host", &c));
    SW_CHECK(b->vt->submit(b, &(bop){.kind = BOP_SCALE, .u.scale = {at(c), 4, 2.0f}}) ==
             SW_ERR_ARG, "another backend's buffer refused");
    btensor w = {.name = "blk.0.ffn_up.weight", .type = SW_TYPE_F32, .ne0 = 8, .ne1 = 8,
                 .n_bytes = 256, .mem = at(c)};
    SW_CHECK(b->vt->submit(b, &(bop){.kind = BOP_MATMUL, .u.matmul = {w, at(p), at(p), 1}}) ==
             SW_ERR_ARG && strstr(sw_last_error(), "blk.0.ffn_up.weight"),
             "a weight outside device memory is refused by name: %s", sw_last_error());
    w = (btensor){.name = "odd", .type = 16, .ne0 = 256, .ne1 = 1, .n_bytes = 66, .mem = at(p)};
    SW_CHECK(b->vt->submit(b, &(bop){.kind = BOP_MATMUL, .u.matmul = {w, at(p), at(p), 1}}) ==
             SW_ERR_UNSUPPORTED && strstr(sw_last_error(), "'odd'"),
             "an unsupported type is refused by name: %s", sw_last_error());
    cpu->vt->free(cpu, c);
    backend_destroy(cpu);
    b->vt->free(b, p);
    SW_CHECK(bt_stats(b).in_use_bytes == 0, "everything freed");
    bt_sync(b);
    backend_destroy(b);

    /* what the driver refuses: far more than the card has */
    b = make_cuda(false, false, UINT64_MAX / 2);
    if (b == NULL)
        return;
    SW_CHECK(b->vt->alloc(b, 1ull << 50, "a petabyte", &q) == SW_ERR_OOM_DEVICE && q == NULL,
             "the driver's refusal is SW_ERR_OOM_DEVICE: %s", sw_last_error());
    check_oom("driver refusal", "the driver refused");
    SW_CHECK(bt_stats(b).in_use_bytes == 0, "a refused buffer is not counted");
    backend_destroy(b);
}

int main(void) {
    SW_CHECK_OK(cpu_pool_create(BT_THREADS, &bt_pool));
    backend_params probe = {.pool = bt_pool,
                            .sizes = {.max_attn_keys = BT_MAX_KEYS, .max_row_elems = 4096}};
    backend *dev = NULL;
    sw_status st = backend_create("cuda", &probe, &dev);
    if (st == SW_ERR_NO_DEVICE || st == SW_ERR_UNSUPPORTED) {
        printf("test_cuda_ops: skipped: %s\n", sw_last_error());
        cpu_pool_destroy(bt_pool);
        return SKIP;
    }
    SW_CHECK_OK(st);
    backend *ex = make_cuda(true, false, 0), *per_op = make_cuda(false, true, 0), *cpu = NULL;
    backend_params exact_cpu = {.pool = bt_pool,
                                .sizes = {.max_attn_keys = BT_MAX_KEYS, .max_row_elems = 4096},
                                .exact_dots = true};
    SW_CHECK_OK(backend_create("cpu", &exact_cpu, &cpu));
    setenv("SPILLWAY_CUDA_GEMM", "tf32", 1);
    backend *tf32 = make_cuda(false, false, 0);
    unsetenv("SPILLWAY_CUDA_GEMM");
    if (dev && ex && per_op && cpu && tf32) {
        const uint32_t types[] = {SW_TYPE_F32, SW_TYPE_F16, SW_TYPE_BF16, SW_TYPE_Q4_0,
                                  SW_TYPE_Q4_1, SW_TYPE_Q5_0, SW_TYPE_Q5_1, SW_TYPE_Q8_0,
                                  SW_TYPE_Q2_K, SW_TYPE_Q3_K, SW_TYPE_Q4_K, SW_TYPE_Q5_K,
                                  SW_TYPE_Q6_K};
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
            conf_matmul(dev, ex, tf32, types[i]);
        conf_elementwise(dev);
        conf_kv_attention(dev, SW_TYPE_F32, 0, 0, 0.0f);
        conf_kv_attention(dev, SW_TYPE_F16, 0, 20, 50.0f);
        conf_kv_attention(dev, SW_TYPE_BF16, 32, 16, 0.0f);
        conf_block(dev, per_op, cpu, SW_TYPE_F32);
        conf_block(dev, per_op, cpu, SW_TYPE_Q4_K);
        backend_stats s = bt_stats(dev);
        SW_CHECK(s.in_use_bytes == 0, "%llu bytes still in use after the ops",
                 (unsigned long long)s.in_use_bytes);
        test_memory();
    }
    backend_destroy(tf32);
    backend_destroy(cpu);
    backend_destroy(per_op);
    backend_destroy(ex);
    backend_destroy(dev);
    cpu_pool_destroy(bt_pool);
    return sw_check_finish("test_cuda_ops");
}
