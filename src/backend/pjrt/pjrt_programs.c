/*
 * pjrt_programs.c — ops and blocks as StableHLO programs (pjrt_programs.h).
 * A block is the steps of backend/block.h in one program: the residual
 * stream and both caches in, the three of them out, the caches donated so
 * the runtime may update them in place.
 */
#include <string.h>

#include "backend/pjrt/hlo_gemma.h"
#include "backend/pjrt/pjrt_programs.h"
#include "quant/types.h"
#include "util/error.h"

static void in(prog_sig *s, bmem m, uint64_t bytes) {
    s->in[s->n_in++] = (prog_io){m, bytes};
}

static void out(prog_sig *s, bmem m, uint64_t bytes, int donate) {
    s->donate[s->n_out] = donate;
    s->out[s->n_out++] = (prog_io){m, bytes};
}

static sw_status check_weight(const btensor *w) {
    if (hg_type_size(w->type) == 0)
        return sw_errorf(SW_ERR_UNSUPPORTED, "the PJRT backend computes in f32/f16/bf16 "
                         "weights; '%s' is %s (plan with --weights bf16, which the planner "
                         "does for this backend by default)", w->name ? w->name : "?",
                         type_name(w->type));
    return SW_OK;
}

static uint64_t cache_half(const bkv *kv) {
    return (uint64_t)kv->n_seq * kv->rows * kv->row_elems * hg_type_size(kv->type);
}

sw_status prog_op_sig(const bop *op, prog_sig *s) {
    memset(s, 0, sizeof *s);
    const uint64_t f = sizeof(float);
    switch (op->kind) {
    case BOP_GET_ROWS: {
        const bop_get_rows *o = &op->u.get_rows;
        SW_TRY(check_weight(&o->w));
        in(s, o->w.mem, o->w.n_bytes);
        in(s, o->ids, (uint64_t)o->n * 4);
        out(s, o->out, (uint64_t)o->n * o->w.ne0 * f, -1);
        return SW_OK;
    }
    case BOP_RMSNORM: {
        const bop_rmsnorm *o = &op->u.rmsnorm;
        in(s, o->x, (uint64_t)o->n_rows * o->n * f);
        if (o->w.n_bytes != 0) /* Gemma 4's value norm has no weight */
            in(s, o->w.mem, (uint64_t)o->n * f);
        out(s, o->y, (uint64_t)o->n_rows * o->n * f, -1);
        return SW_OK;
    }
    case BOP_MATMUL: {
        const bop_matmul *o = &op->u.matmul;
        SW_TRY(check_weight(&o->w));
        in(s, o->x, (uint64_t)o->n_tokens * o->w.ne0 * f);
        in(s, o->w.mem, o->w.n_bytes);
        out(s, o->y, (uint64_t)o->n_tokens * o->w.ne1 * f, -1);
        return SW_OK;
    }
    case BOP_ROPE: {
        const bop_rope *o = &op->u.rope;
        uint64_t n = (uint64_t)o->n_tokens * o->n_heads * o->head_dim * f;
        in(s, o->x, n);
        in(s, o->pos, (uint64_t)o->n_tokens * 4);
        out(s, o->x, n, -1);
        return SW_OK;
    }
    case BOP_KV_APPEND: {
        const bop_kv_append *o = &op->u.kv_append;
        uint64_t n = (uint64_t)o->n_tokens * o->cache.row_elems * f;
        in(s, o->k, n);
        in(s, o->v, n);
        in(s, o->pos, (uint64_t)o->n_tokens * 4);
        in(s, o->seq, (uint64_t)o->n_tokens * 4);
        in(s, o->cache.k, cache_half(&o->cache));
        in(s, o->cache.v, cache_half(&o->cache));
        out(s, o->cache.k, cache_half(&o->cache), 4);
        out(s, o->cache.v, cache_half(&o->cache), 5);
        return SW_OK;
    }
    case BOP_ATTENTION: {
        const bop_attention *o = &op->u.attention;
        uint64_t n = (uint64_t)o->n_tokens * o->n_head * o->head_dim * f;
        in(s, o->q, n);
        in(s, o->pos, (uint64_t)o->n_tokens * 4);
        in(s, o->seq, (uint64_t)o->n_tokens * 4);
        in(s, o->cache.k, cache_half(&o->cache));
        in(s, o->cache.v, cache_half(&o->cache));
        out(s, o->out, n, -1);
        return SW_OK;
    }
    case BOP_GEGLU:
        in(s, op->u.geglu.gate, op->u.geglu.n * f);
        in(s, op->u.geglu.up, op->u.geglu.n * f);
        out(s, op->u.geglu.out, op->u.geglu.n * f, -1);
        return SW_OK;
    case BOP_ADD:
        in(s, op->u.add.x, op->u.add.n * f);
        in(s, op->u.add.y, op->u.add.n * f);
        out(s, op->u.add.x, op->u.add.n * f, -1);
        return SW_OK;
    case BOP_SCALE:
        in(s, op->u.scale.x, op->u.scale.n * f);
        out(s, op->u.scale.x, op->u.scale.n * f, -1);
        return SW_OK;
    case BOP_SOFTCAP:
        in(s, op->u.softcap.x, op->u.softcap.n * f);
        out(s, op->u.softcap.x, op->u.softcap.n * f, -1);
        return SW_OK;
    case BOP_GATHER: {
        const bop_gather *o = &op->u.gather;
        in(s, o->src, (uint64_t)o->n_src * o->cols * f);
        in(s, o->idx, (uint64_t)o->n * 4);
        out(s, o->dst, (uint64_t)o->n * o->cols * f, -1);
        return SW_OK;
    }
    case BOP_MOE_ROUTE: {
        const bop_moe_route *o = &op->u.moe_route;
        const uint64_t tk = (uint64_t)o->n_tokens * o->k * 4;
        if (o->k == 0 || o->k > 64 || o->k > o->n_expert ||
            o->expert_scale.n_bytes < (uint64_t)o->n_expert * f)
            return sw_errorf(SW_ERR_ARG, "PJRT: moe route of %u of %u experts (scale of %llu "
                             "bytes)", o->k, o->n_expert,
                             (unsigned long long)o->expert_scale.n_bytes);
        in(s, o->scores, (uint64_t)o->n_tokens * o->n_expert * f);
        in(s, o->expert_scale.mem, (uint64_t)o->n_expert * f);
        out(s, o->ids, tk, -1);
        out(s, o->weights, tk, -1);
        return SW_OK;
    }
    case BOP_MOE_EXPERTS: {
        const bop_moe_experts *o = &op->u.moe_experts;
        SW_TRY(check_weight(&o->gate_up));
        SW_TRY(check_weight(&o->down));
        const uint64_t E = o->n_expert, D = o->gate_up.ne0;
        if (E == 0 || o->gate_up.ne1 % E || o->down.ne1 != E * D ||
            o->gate_up.ne1 / E != 2 * o->down.ne0)
            return sw_errorf(SW_ERR_ARG, "PJRT: '%s' and '%s' are not %llu experts of one "
                             "shape", o->gate_up.name ? o->gate_up.name : "?",
                             o->down.name ? o->down.name : "?", (unsigned long long)E);
        const uint64_t tk = (uint64_t)o->n_tokens * o->k * 4, x = (uint64_t)o->n_tokens * D * f;
        in(s, o->x, x);
        in(s, o->ids, tk);
        in(s, o->weights, tk);
        in(s, o->gate_up.mem, o->gate_up.n_bytes);
        in(s, o->down.mem, o->down.n_bytes);
        out(s, o->out, x, -1);
        return SW_OK;
    }
    default:
        return sw_errorf(SW_ERR_UNSUPPORTED, "PJRT backend: unknown op %d", (int)op->kind);
    }
}

/* A (rows, cols) f32 activation from input i. */
static int act(hlo *h, int i, int64_t rows, int64_t cols) {
    return hlo_reshape(h, hg_load(h, hlo_arg(i), "f32", rows * cols), hlo_t2("f32", rows, cols));
}

static int ints(hlo *h, int i, int64_t n) {
    return hg_load(h, hlo_arg(i), "i32", n);
}

static int cache(hlo *h, int i, const bkv *kv) {
    const char *elt = hg_type_elt(kv->type);
    int64_t rows = (int64_t)kv->n_seq * kv->rows;
    return hlo_reshape(h, hg_load(h, hlo_arg(i), elt, rows * kv->row_elems),
                       hlo_t2(elt, rows, kv->row_elems));
}

static int norm_w(hlo *h, int i, int64_t n) {
    return hg_load(h, hlo_arg(i), "f32", n);
}

static hg_attn attn_of(const bop_attention *o) {
    return (hg_attn){.n_head = o->n_head, .n_head_kv = o->n_head_kv, .head_dim = o->head_dim,
                     .rows = o->cache.rows, .ring = o->cache.ring, .n_seq = o->cache.n_seq,
                     .window = o->window, .softcap = o->softcap};
}

/* The op's results as values; returns how many. */
static int op_body(hlo *h, const bop *op, int *res) {
    switch (op->kind) {
    case BOP_GET_ROWS: {
        const bop_get_rows *o = &op->u.get_rows;
        int w = hg_weight(h, hlo_arg(0), o->w.type, (int64_t)o->w.ne1, (int64_t)o->w.ne0);
        res[0] = hlo_take_rows(h, w, ints(h, 1, o->n));
        return 1;
    }
    case BOP_RMSNORM: {
        const bop_rmsnorm *o = &op->u.rmsnorm;
        res[0] = hg_rmsnorm(h, act(h, 0, o->n_rows, o->n),
                            o->w.n_bytes != 0 ? norm_w(h, 1, o->n) : -1, o->eps);
        return 1;
    }
    case BOP_MATMUL: {
        const bop_matmul *o = &op->u.matmul;
        int w = hg_weight(h, hlo_arg(1), o->w.type, (int64_t)o->w.ne1, (int64_t)o->w.ne0);
        res[0] = hg_matmul(h, act(h, 0, o->n_tokens, (int64_t)o->w.ne0), w);
        return 1;
    }
    case BOP_ROPE: {
        const bop_rope *o = &op->u.rope;
        res[0] = hg_rope(h, act(h, 0, o->n_tokens, (int64_t)o->n_heads * o->head_dim),
                         ints(h, 1, o->n_tokens), o->n_heads, o->head_dim, o->base,
                         o->freq_scale, o->n_pairs);
        return 1;
    }
    case BOP_KV_APPEND: {
        const bop_kv_append *o = &op->u.kv_append;
        int pos = ints(h, 2, o->n_tokens), seq = ints(h, 3, o->n_tokens);
        int64_t d = o->cache.row_elems;
        res[0] = hg_cache_put(h, cache(h, 4, &o->cache), act(h, 0, o->n_tokens, d), pos, seq,
                              o->cache.rows, o->cache.ring);
        res[1] = hg_cache_put(h, cache(h, 5, &o->cache), act(h, 1, o->n_tokens, d), pos, seq,
                              o->cache.rows, o->cache.ring);
        return 2;
    }
    case BOP_ATTENTION: {
        const bop_attention *o = &op->u.attention;
        hg_attn a = attn_of(o);
        res[0] = hg_attention(h, &a, act(h, 0, o->n_tokens, (int64_t)o->n_head * o->head_dim),
                              cache(h, 3, &o->cache), cache(h, 4, &o->cache),
                              ints(h, 1, o->n_tokens), ints(h, 2, o->n_tokens));
        return 1;
    }
    case BOP_GEGLU:
        res[0] = hg_geglu(h, act(h, 0, 1, (int64_t)op->u.geglu.n),
                          act(h, 1, 1, (int64_t)op->u.geglu.n));
        return 1;
    case BOP_ADD:
        res[0] = hlo_binary(h, "add", act(h, 0, 1, (int64_t)op->u.add.n),
                            act(h, 1, 1, (int64_t)op->u.add.n));
        return 1;
    case BOP_SCALE:
        res[0] = hg_scale(h, act(h, 0, 1, (int64_t)op->u.scale.n), op->u.scale.s);
        return 1;
    case BOP_SOFTCAP:
        res[0] = hg_softcap(h, act(h, 0, 1, (int64_t)op->u.softcap.n), op->u.softcap.cap);
        return 1;
    case BOP_GATHER: {
        const bop_gather *o = &op->u.gather;
        res[0] = hlo_take_rows(h, act(h, 0, o->n_src, o->cols), ints(h, 1, o->n));
        return 1;
    }
    case BOP_MOE_ROUTE: {
        const bop_moe_route *o = &op->u.moe_route;
        hg_moe_route(h, act(h, 0, o->n_tokens, o->n_expert), norm_w(h, 1, o->n_expert), o->k,
                     &res[0], &res[1]);
        return 2;
    }
    case BOP_MOE_EXPERTS: {
        const bop_moe_experts *o = &op->u.moe_experts;
        const hg_experts w = {.gate_up = hlo_arg(3), .down = hlo_arg(4), .type = o->gate_up.type,
                              .n_expert = o->n_expert, .n_embd = (int64_t)o->gate_up.ne0,
                              .n_ff = (int64_t)o->down.ne0};
        int ids = hlo_reshape(h, ints(h, 1, (int64_t)o->n_tokens * o->k),
                              hlo_t2("i32", o->n_tokens, o->k));
        res[0] = hg_moe_experts(h, &w, act(h, 0, o->n_tokens, w.n_embd), ids,
                                act(h, 2, o->n_tokens, o->k));
        return 1;
    }
    default:
        return 0;
    }
}

/* Ends the program: results stored as bytes, donations where the input's
 * buffer holds exactly the result's bytes. */
static sw_status finish(hlo *h, const uint64_t *in_bytes, const prog_sig *s, int *res, int n) {
    if (n != s->n_out)
        return sw_errorf(SW_ERR_ARG, "internal: program has %d results, expected %d", n,
                         s->n_out);
    for (int i = 0; i < n; i++) {
        res[i] = hg_store(h, res[i]);
        int d = s->donate[i];
        if (d >= 0 && in_bytes[d] == s->out[i].bytes)
            hlo_alias(h, d, i);
    }
    return hlo_finish(h, res, n);
}

sw_status prog_op_text(hlo *h, const bop *op, const uint64_t *in_bytes, const prog_sig *s) {
    int res[PROG_MAX_OUT];
    SW_TRY(hlo_begin(h, s->n_in, in_bytes));
    return finish(h, in_bytes, s, res, op_body(h, op, res));
}

/* ---- a whole block -------------------------------------------------------- */

/* Inputs: 0 x, then the block's weights present in role order, then the
 * caches k, v, then pos, seq. */
sw_status prog_block_sig(const block_args *a, prog_sig *s) {
    const block_shape *sh = a->shape;
    const uint64_t n = a->n_tokens;
    memset(s, 0, sizeof *s);
    in(s, a->act.x, n * sh->n_embd * sizeof(float));
    for (int r = 0; r < BW_COUNT; r++) {
        if (a->w[r].n_bytes == 0)
            continue;
        if (a->w[r].ne1 > 1)
            SW_TRY(check_weight(&a->w[r]));
        in(s, a->w[r].mem, a->w[r].n_bytes);
    }
    int k = s->n_in;
    in(s, a->kv.k, cache_half(&a->kv));
    in(s, a->kv.v, cache_half(&a->kv));
    in(s, a->act.pos, n * 4);
    in(s, a->act.seq, n * 4);
    out(s, a->act.x, n * sh->n_embd * sizeof(float), -1);
    out(s, a->kv.k, cache_half(&a->kv), k);
    out(s, a->kv.v, cache_half(&a->kv), k + 1);
    return SW_OK;
}

typedef struct block_ctx {
    hlo *h;
    const block_args *a;
    int w[BW_COUNT];      /* argument index of each weight present, else -1 */
    int pos, seq;
} block_ctx;

static int mm(block_ctx *c, int x, int role) {
    const btensor *w = &c->a->w[role];
    return hg_matmul(c->h, x, hg_weight(c->h, hlo_arg(c->w[role]), w->type, (int64_t)w->ne1,
                                        (int64_t)w->ne0));
}

static int nrm(block_ctx *c, int x, int role) {
    const btensor *w = &c->a->w[role];
    return hg_rmsnorm(c->h, x, norm_w(c->h, c->w[role], (int64_t)w->ne0), c->a->shape->norm_eps);
}

/* RMSNorm over each head_dim slice of a (T, heads*hd) value. */
static int head_norm(block_ctx *c, int x, int role, uint32_t heads) {
    const int64_t T = c->a->n_tokens, hd = c->a->shape->head_dim;
    int r = nrm(c, hlo_reshape(c->h, x, hlo_t2("f32", T * heads, hd)), role);
    return hlo_reshape(c->h, r, hlo_t2("f32", T, heads * hd));
}

sw_status prog_block_text(hlo *h, const block_args *a, const uint64_t *in_bytes,
                          const prog_sig *s) {
    const block_shape *sh = a->shape;
    const int64_t T = a->n_tokens;
    block_ctx c = {.h = h, .a = a};
    int i = 1, res[3];
    SW_TRY(hlo_begin(h, s->n_in, in_bytes));
    for (int r = 0; r < BW_COUNT; r++)
        c.w[r] = a->w[r].n_bytes ? i++ : -1;
    int kc = i, vc = i + 1;
    c.pos = ints(h, i + 2, T);
    c.seq = ints(h, i + 3, T);

    int x = act(h, 0, T, sh->n_embd);
    int hn = nrm(&c, x, BW_ATTN_NORM);
    int q = mm(&c, hn, BW_Q), k = mm(&c, hn, BW_K), v = mm(&c, hn, BW_V);
    if (sh->qk_norm) {
        q = head_norm(&c, q, BW_Q_NORM, sh->n_head);
        k = head_norm(&c, k, BW_K_NORM, sh->n_head_kv);
    }
    q = hg_rope(h, q, c.pos, sh->n_head, sh->head_dim, a->rope_base, a->rope_scale, 0);
    k = hg_rope(h, k, c.pos, sh->n_head_kv, sh->head_dim, a->rope_base, a->rope_scale, 0);
    q = hg_scale(h, q, sh->query_scale);
    int kcache = hg_cache_put(h, cache(h, kc, &a->kv), k, c.pos, c.seq, a->kv.rows, a->kv.ring);
    int vcache = hg_cache_put(h, cache(h, vc, &a->kv), v, c.pos, c.seq, a->kv.rows, a->kv.ring);
    hg_attn at = {.n_head = sh->n_head, .n_head_kv = sh->n_head_kv, .head_dim = sh->head_dim,
                  .rows = a->kv.rows, .ring = a->kv.ring, .n_seq = a->kv.n_seq,
                  .window = a->window, .softcap = sh->attn_softcap};
    int att = mm(&c, hg_attention(h, &at, q, kcache, vcache, c.pos, c.seq), BW_O);
    if (sh->post_norms)
        att = nrm(&c, att, BW_POST_ATTN_NORM);
    x = hlo_binary(h, "add", x, att);

    hn = nrm(&c, x, BW_FFN_NORM);
    int g = hg_geglu(h, mm(&c, hn, BW_GATE), mm(&c, hn, BW_UP));
    int f = mm(&c, g, BW_DOWN);
    if (sh->post_norms)
        f = nrm(&c, f, BW_POST_FFW_NORM);
    res[0] = hlo_binary(h, "add", x, f);
    res[1] = kcache;
    res[2] = vcache;
    return finish(h, in_bytes, s, res, 3);
}

/* ---- padding a batch to its bucket ---------------------------------------- */

sw_status prog_pad_text(hlo *h, const uint64_t *in_bytes, uint32_t n, uint32_t Tb,
                        uint32_t n_embd) {
    int res[3];
    const int64_t extra = (int64_t)Tb - n;
    SW_TRY(hlo_begin(h, 3, in_bytes));
    int x = act(h, 0, n, n_embd);
    res[0] = hlo_concat(h, x, hlo_const(h, 0.0, hlo_t2("f32", extra, n_embd)), 0);
    res[1] = hlo_concat(h, ints(h, 1, n), hlo_const(h, -1, hlo_t1("i32", extra)), 0);
    res[2] = hlo_concat(h, ints(h, 2, n), hlo_const(h, 0, hlo_t1("i32", extra)), 0);
    for (int i = 0; i < 3; i++)
        res[i] = hg_store(h, res[i]);
    return hlo_finish(h, res, 3);
}

sw_status prog_unpad_text(hlo *h, uint64_t in_bytes, uint64_t keep_bytes) {
    int64_t start = 0, limit = (int64_t)keep_bytes;
    SW_TRY(hlo_begin(h, 1, &in_bytes));
    int v = hlo_slice(h, hlo_arg(0), &start, &limit);
    return hlo_finish(h, &v, 1);
}
