/*
 * pjrt_block_prog.c — a block as one StableHLO program (pjrt_programs.h):
 * the steps of backend/block.c's block_run_ops in the same order with the
 * same formulas, each Gemma 4 difference a field of the shape (value norm,
 * keys as values, KV sharing, partial RoPE, experts, per-layer inputs,
 * layer scale), and a block split around experts another side computes as
 * two programs (BLOCK_TO_EXPERTS, BLOCK_FROM_EXPERTS). The caches a layer
 * writes are donated so the runtime may update them in place; a KV-shared
 * layer only reads its owner's. The arguments and results, and which
 * phase reads what, are block_for_each_mem's (backend/operands.c), never
 * listed here. Also: padding a batch to its bucket.
 */
#include <math.h>
#include <string.h>

#include "backend/pjrt/hlo_gemma.h"
#include "backend/pjrt/pjrt_prog_parts.h"
#include "util/error.h"

/* Where each of the program's arguments is, by block_operand (-1: not an
 * argument), and which results it has beside x: h (up to the experts)
 * and the caches the layer writes. All of it from block_for_each_mem. */
typedef struct block_layout {
    int at[BO_COUNT];
    int n_in;
    bool h_out, kv_out;
} block_layout;

static bool attn_part(const block_args *a) {
    return a->phase != BLOCK_FROM_EXPERTS;
}

static bool rest_part(const block_args *a) {
    return a->phase != BLOCK_TO_EXPERTS;
}

static sw_status layout_add(void *user, const mem_operand *o) {
    block_layout *l = user;
    if (o->access & MEM_READ)
        l->at[o->what] = l->n_in++;
    l->h_out |= o->result && o->what == BO_H;
    l->kv_out |= o->result && o->kv;
    return SW_OK;
}

static void layout_of(const block_args *a, block_layout *l) {
    block_args walked = *a;
    memset(l->at, 0xff, sizeof l->at);   /* every index -1 */
    l->n_in = 0;
    l->h_out = l->kv_out = false;
    (void)block_for_each_mem(&walked, layout_add, l);   /* layout_add never fails */
}

/* The signature's callback: PJRT's weight types, then prog_sig_add. */
static sw_status sig_add(void *user, const mem_operand *o) {
    if (o->weight != NULL && o->weight->ne1 > 1)
        SW_TRY(prog_check_weight(o->weight));
    return prog_sig_add(user, o);
}

sw_status prog_block_sig(const block_args *a, prog_sig *s) {
    const block_shape *sh = a->shape;
    block_args walked = *a;
    memset(s, 0, sizeof *s);
    if (sh->k_eq_v && !sh->v_norm)
        return sw_errorf(SW_ERR_UNSUPPORTED, "keys as values without the value norm");
    if (a->phase == BLOCK_WHOLE && sh->n_expert)
        SW_TRY(prog_check_experts(&a->w[BW_GATE_UP_EXPS], &a->w[BW_DOWN_EXPS], sh->n_expert,
                                  sh->n_expert_used));
    return block_for_each_mem(&walked, sig_add, s);
}

typedef struct block_ctx {
    hlo *h;
    const block_args *a;
    block_layout l;
    int pos, seq;
} block_ctx;

/* The argument index of weight `role`. */
static int warg(const block_ctx *c, int role) {
    return c->l.at[BO_WEIGHT + role];
}

static int mm(block_ctx *c, int x, int role) {
    const btensor *w = &c->a->w[role];
    return hg_matmul(c->h, x, hg_weight(c->h, hlo_arg(warg(c, role)), w->type, (int64_t)w->ne1,
                                        (int64_t)w->ne0));
}

/* RMSNorm of x's rows by role's weight (-1: none: Gemma 4's value norm). */
static int nrm(block_ctx *c, int x, int role) {
    int w = role < 0 ? -1
                     : prog_norm_w(c->h, warg(c, role), (int64_t)c->a->w[role].ne0);
    return hg_rmsnorm(c->h, x, w, c->a->shape->norm_eps);
}

/* RMSNorm over each head_dim slice of a (T, heads*hd) value. */
static int head_norm(block_ctx *c, int x, int role, uint32_t heads) {
    const int64_t T = c->a->n_tokens, hd = c->a->shape->head_dim;
    int r = nrm(c, hlo_reshape(c->h, x, hlo_t2("f32", T * heads, hd)), role);
    return hlo_reshape(c->h, r, hlo_t2("f32", T, heads * hd));
}

static int rope(block_ctx *c, int x, uint32_t heads) {
    const block_args *a = c->a;
    return hg_rope(c->h, x, c->pos, heads, a->shape->head_dim, a->rope_base, a->rope_scale,
                   a->shape->rope_pairs);
}

/* The attention half: x += post_attn_norm(attention(...)·Wo); the caches
 * written into *kcache, *vcache (the inputs, for a KV-shared layer). */
static int attention_half(block_ctx *c, int x, int *kcache, int *vcache) {
    hlo *h = c->h;
    const block_args *a = c->a;
    const block_shape *sh = a->shape;
    *kcache = prog_cache(h, c->l.at[BO_KV_K], &a->kv);
    *vcache = prog_cache(h, c->l.at[BO_KV_V], &a->kv);
    int hn = nrm(c, x, BW_ATTN_NORM);
    int q = mm(c, hn, BW_Q), k = -1, v = -1;
    if (!sh->kv_shared) {
        k = mm(c, hn, BW_K);
        v = sh->k_eq_v ? k : mm(c, hn, BW_V);
        if (sh->v_norm)
            v = head_norm(c, v, -1, sh->n_head_kv);
    }
    if (sh->qk_norm) {
        q = head_norm(c, q, BW_Q_NORM, sh->n_head);
        if (!sh->kv_shared)
            k = head_norm(c, k, BW_K_NORM, sh->n_head_kv);
    }
    q = rope(c, q, sh->n_head);
    if (!sh->kv_shared)
        k = rope(c, k, sh->n_head_kv);
    if (sh->query_scale != 1.0f) /* Gemma 4 normalizes q instead */
        q = hg_scale(h, q, sh->query_scale);
    if (!sh->kv_shared) {
        *kcache = hg_cache_put(h, *kcache, k, c->pos, c->seq, a->kv.rows, a->kv.ring);
        *vcache = hg_cache_put(h, *vcache, v, c->pos, c->seq, a->kv.rows, a->kv.ring);
    }
    hg_attn at = {.n_head = sh->n_head, .n_head_kv = sh->n_head_kv, .head_dim = sh->head_dim,
                  .rows = a->kv.rows, .ring = a->kv.ring, .n_seq = a->kv.n_seq,
                  .window = a->window, .softcap = sh->attn_softcap};
    int att = mm(c, hg_attention(h, &at, q, *kcache, *vcache, c->pos, c->seq), BW_O);
    if (sh->post_norms)
        att = nrm(c, att, BW_POST_ATTN_NORM);
    return hlo_binary(h, "add", x, att);
}

/* The dense MLP's output (normed by post_ffw_norm_1 beside experts). */
static int ffn_dense(block_ctx *c, int x) {
    int hn = nrm(c, x, BW_FFN_NORM);
    int f = mm(c, hg_geglu(c->h, mm(c, hn, BW_GATE), mm(c, hn, BW_UP)), BW_DOWN);
    return c->a->shape->n_expert ? nrm(c, f, BW_POST_FFW_NORM_1) : f;
}

/* The experts' output, normed by post_ffw_norm_2. */
static int experts(block_ctx *c, int x) {
    hlo *h = c->h;
    const block_args *a = c->a;
    const block_shape *sh = a->shape;
    int r = hg_scale(h, nrm(c, x, BW_ROUTER_SCALE), (float)pow(sh->n_embd, -0.5));
    int ids = -1, wts = -1;
    hg_moe_route(h, mm(c, r, BW_ROUTER), prog_norm_w(h, warg(c, BW_EXPERT_SCALE), sh->n_expert),
                 sh->n_expert_used, &ids, &wts);
    const btensor *gu = &a->w[BW_GATE_UP_EXPS];
    const hg_experts w = {.gate_up = hlo_arg(warg(c, BW_GATE_UP_EXPS)),
                          .down = hlo_arg(warg(c, BW_DOWN_EXPS)), .type = gu->type,
                          .n_expert = sh->n_expert, .n_embd = (int64_t)gu->ne0,
                          .n_ff = (int64_t)a->w[BW_DOWN_EXPS].ne0};
    return nrm(c, hg_moe_experts(h, &w, nrm(c, x, BW_FFN_NORM_2), ids, wts),
               BW_POST_FFW_NORM_2);
}

/* From the FFN's output f on: f += experts, post_ffw_norm, the residual,
 * the per-layer input, the layer scale. */
static int rest(block_ctx *c, int x, int f) {
    hlo *h = c->h;
    const block_args *a = c->a;
    const block_shape *sh = a->shape;
    const int64_t T = a->n_tokens;
    if (sh->n_expert) {
        int e = a->phase == BLOCK_FROM_EXPERTS ? prog_act(h, c->l.at[BO_MOE_OUT], T, sh->n_embd)
                                               : experts(c, x);
        f = hlo_binary(h, "add", f, e);
    }
    if (sh->post_norms)
        f = nrm(c, f, BW_POST_FFW_NORM);
    x = hlo_binary(h, "add", x, f);
    if (sh->n_pl) {
        int g = hg_geglu(h, mm(c, x, BW_PLE_GATE), prog_act(h, c->l.at[BO_PLE], T, sh->n_pl));
        x = hlo_binary(h, "add", x, nrm(c, mm(c, g, BW_PLE_PROJ), BW_PLE_NORM));
    }
    if (a->layer_scale != 0.0f)
        x = hg_scale(h, x, a->layer_scale);
    return x;
}

sw_status prog_block_text(hlo *h, const block_args *a, const uint64_t *in_bytes,
                          const prog_sig *s) {
    const int64_t T = a->n_tokens, D = a->shape->n_embd;
    block_ctx c = {.h = h, .a = a};
    int res[PROG_MAX_OUT], n = 0, kcache = -1, vcache = -1;
    layout_of(a, &c.l);
    SW_TRY(hlo_begin(h, s->n_in, in_bytes));
    int x = prog_act(h, c.l.at[BO_X], T, D), f;
    if (attn_part(a)) {
        c.pos = prog_ints(h, c.l.at[BO_POS], T);
        c.seq = prog_ints(h, c.l.at[BO_SEQ], T);
        x = attention_half(&c, x, &kcache, &vcache);
        f = ffn_dense(&c, x);
    } else {
        f = prog_act(h, c.l.at[BO_H], T, D);
    }
    res[n++] = rest_part(a) ? rest(&c, x, f) : x;
    if (c.l.h_out)
        res[n++] = f;
    if (c.l.kv_out) {
        res[n++] = kcache;
        res[n++] = vcache;
    }
    return prog_finish(h, in_bytes, s, res, n);
}

/* ---- padding a batch to its bucket ---------------------------------------- */

sw_status prog_pad_text(hlo *h, const prog_io *io, const uint64_t *in_bytes, int n_arr,
                        uint32_t n, uint32_t Tb) {
    int res[PROG_MAX_IN];
    const int64_t extra = (int64_t)Tb - n;
    if (n_arr > PROG_MAX_IN || n == 0 || Tb < n)
        return sw_errorf(SW_ERR_ARG, "internal: padding %d arrays of %u rows to %u", n_arr, n,
                         Tb);
    SW_TRY(hlo_begin(h, n_arr, in_bytes));
    for (int i = 0; i < n_arr; i++) {
        if (io[i].rows == MEM_ROWS_F32) {
            const int64_t w = (int64_t)(io[i].bytes / ((uint64_t)n * sizeof(float)));
            res[i] = hlo_concat(h, prog_act(h, i, n, w),
                                hlo_const(h, 0.0, hlo_t2("f32", extra, w)), 0);
        } else {
            const double fill = io[i].rows == MEM_ROWS_POS ? -1 : 0;
            res[i] = hlo_concat(h, prog_ints(h, i, n), hlo_const(h, fill, hlo_t1("i32", extra)),
                                0);
        }
        res[i] = hg_store(h, res[i]);
    }
    return hlo_finish(h, res, n_arr);
}

sw_status prog_unpad_text(hlo *h, uint64_t in_bytes, uint64_t keep_bytes) {
    int64_t start = 0, limit = (int64_t)keep_bytes;
    SW_TRY(hlo_begin(h, 1, &in_bytes));
    int v = hlo_slice(h, hlo_arg(0), &start, &limit);
    return hlo_finish(h, &v, 1);
}
