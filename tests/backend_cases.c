/*
 * backend_cases.c — see backend_cases.h.
 */
#include "backend_cases.h"

#include <stdlib.h>
#include <string.h>

#include "backend_util.h"
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "quant/half.h"
#include "quant/types.h"

static bmem at(backend_buf *buf) { return (bmem){buf, 0}; }

void bt_attn_case_run(backend *b, uint32_t kv_type, uint32_t ring, uint32_t window,
                      float softcap, uint32_t hd, bt_attn_result *r) {
    enum { NT = 5, NH = 4, NKV = 2, ROWS = BT_MAX_KEYS, NSEQ = 2 };
    const uint32_t re = NKV * hd, elem = kv_type == SW_TYPE_F32 ? 4 : 2;
    const uint64_t half = (uint64_t)NSEQ * ROWS * re * elem, q_n = (uint64_t)NT * NH * hd;
    const int32_t pos[NT] = {61, 62, 3, 63, 4}, seq[NT] = {0, 0, 1, 0, 1};
    uint8_t *cache = bt_malloc((size_t)(2 * half));
    for (uint64_t i = 0; i < 2 * half / elem; i++) { /* an earlier history, in the cache type */
        float f = (float)((int)(bt_rng() % 2000) - 1000) / 1000.0f;
        uint16_t h = kv_type == SW_TYPE_F16 ? half_f32_to_f16(f) : half_f32_to_bf16(f);
        memcpy(cache + i * elem, elem == 4 ? (const void *)&f : (const void *)&h, elem);
    }
    float *k = bt_random_floats(NT * re, -1, 1), *v = bt_random_floats(NT * re, -1, 1);
    float *q = bt_random_floats(q_n, -1, 1), *want = bt_malloc(q_n * sizeof(float));
    float *scratch = bt_malloc((size_t)BT_THREADS * BT_MAX_KEYS * sizeof(float));
    backend_buf *dcache = bt_upload(b, cache, 2 * half, "kv"), *dout = NULL;
    backend_buf *dk = bt_upload(b, k, NT * re * 4, "k"), *dv = bt_upload(b, v, NT * re * 4, "v");
    backend_buf *dq = bt_upload(b, q, q_n * 4, "q"), *dpos = bt_upload(b, pos, sizeof pos, "p");
    backend_buf *dseq = bt_upload(b, seq, sizeof seq, "s");
    SW_CHECK_OK(b->vt->alloc(b, q_n * sizeof(float), "out", &dout));
    cpu_kv_append(k, v, pos, seq, NT, re, kv_type, ROWS, ring, cache, cache + half);
    cpu_attn_args ca = {.q = q, .k = cache, .v = cache + half, .kv_type = kv_type, .out = want,
                        .q_pos = pos, .q_seq = seq, .seq_rows = ROWS, .n_tokens = NT,
                        .n_head = NH, .n_head_kv = NKV, .head_dim = hd, .kv_ring = ring,
                        .window = window, .softcap = softcap, .scratch = scratch};
    cpu_attention(bt_pool, &ca);
    bkv kv = {.k = at(dcache), .v = {dcache, half}, .type = kv_type, .row_elems = re,
              .rows = ROWS, .ring = ring, .n_seq = NSEQ};
    SW_CHECK_OK(b->vt->submit(b, &(bop){.kind = BOP_KV_APPEND,
                                         .u.kv_append = {at(dk), at(dv), at(dpos), at(dseq), kv,
                                                         NT}}));
    SW_CHECK_OK(b->vt->submit(b, &(bop){.kind = BOP_ATTENTION,
                                         .u.attention = {at(dq), at(dout), at(dpos), at(dseq),
                                                         kv, NT, NH, NKV, hd, window,
                                                         softcap}}));
    *r = (bt_attn_result){.cache = bt_malloc(2 * half), .want_cache = cache,
                          .out = bt_malloc(q_n * sizeof(float)), .want_out = want,
                          .cache_bytes = 2 * half, .out_floats = q_n};
    bt_download(b, r->cache, at(dcache), 2 * half);
    bt_download(b, r->out, at(dout), q_n * sizeof(float));
    backend_buf *bufs[] = {dout, dseq, dpos, dq, dv, dk, dcache};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        b->vt->free(b, bufs[i]);
    free(scratch);
    free(q);
    free(v);
    free(k);
}

void bt_attn_result_free(bt_attn_result *r) {
    free(r->cache);
    free(r->want_cache);
    free(r->out);
    free(r->want_out);
    memset(r, 0, sizeof *r);
}

void bt_block_case_init(bt_block_case *c, const block_shape *shape, uint32_t mtype,
                        uint32_t max_tokens, uint32_t rows, uint32_t n_seq, uint32_t window,
                        float range) {
    const block_shape *s = shape;
    const uint64_t nq = (uint64_t)s->n_head * s->head_dim;
    const uint64_t nkv = (uint64_t)s->n_head_kv * s->head_dim;
    const uint64_t ne1[BW_COUNT] = {1, nq, nkv, nkv, s->n_embd, 1, 1, 1, 1, s->n_ff, s->n_ff,
                                    s->n_embd, 1};
    const uint64_t ne0[BW_COUNT] = {s->n_embd, s->n_embd, s->n_embd, s->n_embd, nq,
                                    s->head_dim, s->head_dim, s->n_embd, s->n_embd, s->n_embd,
                                    s->n_embd, s->n_ff, s->n_embd};
    memset(c, 0, sizeof *c);
    c->shape = *shape;
    c->max_tokens = max_tokens, c->rows = rows, c->n_seq = n_seq, c->window = window;
    for (int r = 0; r < BW_COUNT; r++) {
        const bool norm = ne1[r] == 1;
        uint8_t *w = NULL;
        c->ne0[r] = ne0[r], c->ne1[r] = ne1[r];
        c->type[r] = norm ? SW_TYPE_F32
                          : r == BW_UP && mtype == SW_TYPE_Q4_K ? SW_TYPE_Q8_0 : mtype;
        c->offs[r] = c->total;
        if (c->type[r] == SW_TYPE_F32) {
            w = (uint8_t *)bt_random_floats(ne0[r] * ne1[r], norm ? 0.5f : -range,
                                            norm ? 1.5f : range);
            c->sizes[r] = ne0[r] * ne1[r] * sizeof(float);
        } else {
            w = bt_random_weights(c->type[r], ne0[r], ne1[r], &c->sizes[r]);
        }
        c->weights = realloc(c->weights, c->total + (c->sizes[r] + 255) / 256 * 256);
        if (c->weights == NULL) {
            fprintf(stderr, "block case: out of memory\n");
            exit(2);
        }
        memcpy(c->weights + c->offs[r], w, c->sizes[r]);
        free(w);
        c->total += (c->sizes[r] + 255) / 256 * 256;
    }
    c->x = bt_random_floats((size_t)max_tokens * s->n_embd, -2, 2);
    c->pos = bt_malloc(max_tokens * sizeof(int32_t));
    c->seq = bt_malloc(max_tokens * sizeof(int32_t));
    for (uint32_t t = 0; t < max_tokens; t++) {
        c->seq[t] = (int32_t)(t % n_seq);
        c->pos[t] = (int32_t)(t / n_seq);
    }
}

uint64_t bt_block_case_kv_bytes(const bt_block_case *c) {
    return 2ull * c->n_seq * c->rows * c->shape.n_head_kv * c->shape.head_dim * sizeof(float);
}

float *bt_block_case_run(backend *b, const bt_block_case *c, uint32_t n, bool fused,
                         uint8_t **kv_out) {
    const block_shape *s = &c->shape;
    const uint64_t F = sizeof(float), T = c->max_tokens;
    const uint64_t nq = (uint64_t)s->n_head * s->head_dim;
    const uint64_t nkv = (uint64_t)s->n_head_kv * s->head_dim;
    const uint64_t kv_bytes = bt_block_case_kv_bytes(c), half = kv_bytes / 2;
    const uint64_t sizes[] = {T * s->n_embd, T * s->n_embd, T * nq, T * nq, T * nkv, T * nkv,
                              T * s->n_ff, T * s->n_ff, T, T};
    uint64_t act_floats = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        act_floats += sizes[i];
    uint8_t *zeros = calloc(1, kv_bytes);
    backend_buf *w = bt_upload(b, c->weights, c->total, "layer"), *act = NULL;
    backend_buf *kv = bt_upload(b, zeros, kv_bytes, "kv");
    SW_CHECK_OK(b->vt->alloc(b, act_floats * F, "acts", &act));
    block_args a = {.shape = s, .window = c->window, .rope_base = 1e4f, .rope_scale = 1.0f,
                    .n_tokens = n,
                    .kv = {.k = {kv, 0}, .v = {kv, half}, .type = SW_TYPE_F32,
                           .row_elems = (uint32_t)nkv, .rows = c->rows, .ring = 0,
                           .n_seq = c->n_seq}};
    for (int r = 0; r < BW_COUNT; r++)
        a.w[r] = (btensor){.name = "w", .type = c->type[r], .ne0 = c->ne0[r], .ne1 = c->ne1[r],
                           .n_bytes = c->sizes[r], .mem = {w, c->offs[r]}};
    bmem *slots[] = {&a.act.x, &a.act.h, &a.act.q, &a.act.att, &a.act.k, &a.act.v,
                     &a.act.gate, &a.act.up, &a.act.pos, &a.act.seq};
    uint64_t o = 0;
    for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++) {
        *slots[i] = (bmem){act, o * F};
        o += sizes[i];
    }
    SW_CHECK_OK(b->vt->copy_h2d(b, BQ_COMPUTE, a.act.x, c->x, n * s->n_embd * F));
    SW_CHECK_OK(b->vt->copy_h2d(b, BQ_COMPUTE, a.act.pos, c->pos, n * sizeof(int32_t)));
    SW_CHECK_OK(b->vt->copy_h2d(b, BQ_COMPUTE, a.act.seq, c->seq, n * sizeof(int32_t)));
    SW_CHECK_OK(fused && b->vt->block ? b->vt->block(b, &a) : block_run_ops(b, &a));
    float *x = bt_malloc(n * s->n_embd * F);
    *kv_out = bt_malloc(kv_bytes);
    bt_download(b, x, a.act.x, n * s->n_embd * F);
    bt_download(b, *kv_out, a.kv.k, kv_bytes);
    b->vt->free(b, act);
    b->vt->free(b, kv);
    b->vt->free(b, w);
    free(zeros);
    return x;
}

void bt_block_case_free(bt_block_case *c) {
    free(c->weights);
    free(c->x);
    free(c->pos);
    free(c->seq);
    memset(c, 0, sizeof *c);
}
