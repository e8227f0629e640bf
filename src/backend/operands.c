/*
 * operands.c — the one description of the memory each op (bop_for_each_mem)
 * and each block (block_for_each_mem) reads and writes: where, how many
 * bytes, and how the call uses it. Backends derive their bounds checks
 * (cpu, cuda, sim), address translation and reader tracking (sim) and
 * program signatures (pjrt) from these walkers and keep no list of their
 * own, so a new op or block field is one edit here (and the kernels).
 *
 * The block walker says what block_run_ops' ops touch, phase by phase;
 * test_block_operands runs those ops through bop_for_each_mem and checks
 * that the two agree exactly, for every Gemma 1-4 layer shape and phase.
 */
#include "backend/block.h"

#include "quant/types.h"
#include "util/error.h"

static const uint64_t F = sizeof(float), I = sizeof(int32_t);

uint64_t bkv_half_bytes(const bkv *c) {
    uint64_t elem = c->type == SW_TYPE_F32 ? 4 : 2;
    return (uint64_t)c->n_seq * c->rows * c->row_elems * elem;
}

/* ---- ops ------------------------------------------------------------------ */

typedef struct walk {
    mem_operand_fn fn;
    void *user;
} walk;

static sw_status visit(const walk *w, bmem *m, uint64_t bytes, mem_access access) {
    mem_operand o = {.m = m, .bytes = bytes, .access = access,
                     .result = (access & MEM_WRITE) != 0, .what = -1};
    return w->fn(w->user, &o);
}

static sw_status visit_weight(const walk *w, btensor *t) {
    mem_operand o = {.m = &t->mem, .bytes = t->n_bytes, .access = MEM_READ, .weight = t,
                     .what = -1};
    return w->fn(w->user, &o);
}

/* A cache half: read by attention, updated (some rows written) by an
 * append. */
static sw_status visit_kv(const walk *w, bkv *c, mem_access access) {
    mem_operand o = {.bytes = bkv_half_bytes(c), .access = access,
                     .result = (access & MEM_WRITE) != 0, .kv = true, .what = -1};
    o.m = &c->k;
    SW_TRY(w->fn(w->user, &o));
    o.m = &c->v;
    return w->fn(w->user, &o);
}

#define V(m, bytes, access) SW_TRY(visit(&w, &(m), (bytes), (access)))
#define VW(t) SW_TRY(visit_weight(&w, &(t)))

static sw_status walk_rows(bop *op, walk w) {
    switch (op->kind) {
    case BOP_GET_ROWS: {
        bop_get_rows *a = &op->u.get_rows;
        VW(a->w);
        V(a->ids, a->n * I, MEM_READ);
        V(a->out, (uint64_t)a->n * a->w.ne0 * F, MEM_WRITE);
        return SW_OK;
    }
    case BOP_RMSNORM: {
        bop_rmsnorm *a = &op->u.rmsnorm;
        V(a->x, (uint64_t)a->n * a->n_rows * F, MEM_READ);
        if (a->w.n_bytes != 0) /* Gemma 4's value norm has no weight */
            VW(a->w);
        V(a->y, (uint64_t)a->n * a->n_rows * F, MEM_WRITE);
        return SW_OK;
    }
    case BOP_MATMUL: {
        bop_matmul *a = &op->u.matmul;
        V(a->x, (uint64_t)a->n_tokens * a->w.ne0 * F, MEM_READ);
        VW(a->w);
        V(a->y, (uint64_t)a->n_tokens * a->w.ne1 * F, MEM_WRITE);
        return SW_OK;
    }
    case BOP_GATHER: {
        bop_gather *a = &op->u.gather;
        V(a->src, (uint64_t)a->n_src * a->cols * F, MEM_READ);
        V(a->idx, a->n * I, MEM_READ);
        V(a->dst, (uint64_t)a->n * a->cols * F, MEM_WRITE);
        return SW_OK;
    }
    default: /* bop_for_each_mem sends only this family's kinds */
        return SW_OK;
    }
}

static sw_status walk_attention(bop *op, walk w) {
    switch (op->kind) {
    case BOP_ROPE: {
        bop_rope *a = &op->u.rope;
        V(a->x, (uint64_t)a->n_tokens * a->n_heads * a->head_dim * F, MEM_UPDATE);
        V(a->pos, a->n_tokens * I, MEM_READ);
        return SW_OK;
    }
    case BOP_KV_APPEND: {
        bop_kv_append *a = &op->u.kv_append;
        const uint64_t bytes = (uint64_t)a->n_tokens * a->cache.row_elems * F;
        V(a->k, bytes, MEM_READ);
        V(a->v, bytes, MEM_READ);
        V(a->pos, a->n_tokens * I, MEM_READ);
        V(a->seq, a->n_tokens * I, MEM_READ);
        return visit_kv(&w, &a->cache, MEM_UPDATE);
    }
    case BOP_ATTENTION: {
        bop_attention *a = &op->u.attention;
        const uint64_t bytes = (uint64_t)a->n_tokens * a->n_head * a->head_dim * F;
        V(a->q, bytes, MEM_READ);
        V(a->pos, a->n_tokens * I, MEM_READ);
        V(a->seq, a->n_tokens * I, MEM_READ);
        SW_TRY(visit_kv(&w, &a->cache, MEM_READ));
        V(a->out, bytes, MEM_WRITE);
        return SW_OK;
    }
    default: /* bop_for_each_mem sends only this family's kinds */
        return SW_OK;
    }
}

static sw_status walk_elementwise(bop *op, walk w) {
    switch (op->kind) {
    case BOP_GEGLU:
        V(op->u.geglu.gate, op->u.geglu.n * F, MEM_READ);
        V(op->u.geglu.up, op->u.geglu.n * F, MEM_READ);
        V(op->u.geglu.out, op->u.geglu.n * F, MEM_WRITE);
        return SW_OK;
    case BOP_ADD:
        V(op->u.add.x, op->u.add.n * F, MEM_UPDATE);
        V(op->u.add.y, op->u.add.n * F, MEM_READ);
        return SW_OK;
    case BOP_SCALE:
        V(op->u.scale.x, op->u.scale.n * F, MEM_UPDATE);
        return SW_OK;
    case BOP_SOFTCAP:
        V(op->u.softcap.x, op->u.softcap.n * F, MEM_UPDATE);
        return SW_OK;
    default: /* bop_for_each_mem sends only this family's kinds */
        return SW_OK;
    }
}

/* The experts' scratch, written before it is read: the gathered inputs
 * and outputs (n_embd rows) and the gate/up products. */
static sw_status moe_scratch(walk w, bmem *xg, bmem *gu, bmem *yd, uint64_t row_bytes,
                             uint64_t gu_bytes) {
    mem_operand o = {.access = MEM_WRITE, .what = -1};
    bmem *m[3] = {xg, gu, yd};
    const uint64_t bytes[3] = {row_bytes, gu_bytes, row_bytes};
    for (int i = 0; i < 3; i++) {
        o.m = m[i];
        o.bytes = bytes[i];
        SW_TRY(w.fn(w.user, &o));
    }
    return SW_OK;
}

static sw_status walk_moe(bop *op, walk w) {
    switch (op->kind) {
    case BOP_MOE_ROUTE: {
        bop_moe_route *a = &op->u.moe_route;
        const uint64_t nk = (uint64_t)a->n_tokens * a->k;
        V(a->scores, (uint64_t)a->n_tokens * a->n_expert * F, MEM_READ);
        VW(a->expert_scale);
        V(a->ids, nk * I, MEM_WRITE);
        V(a->weights, nk * F, MEM_WRITE);
        return SW_OK;
    }
    case BOP_MOE_EXPERTS: {
        bop_moe_experts *a = &op->u.moe_experts;
        const uint64_t n = a->n_tokens, e = a->gate_up.ne0, nk = n * a->k;
        const uint64_t gu = a->n_expert ? a->gate_up.ne1 / a->n_expert : 0;
        V(a->x, n * e * F, MEM_READ);
        V(a->ids, nk * I, MEM_READ);
        V(a->weights, nk * F, MEM_READ);
        VW(a->gate_up);
        VW(a->down);
        V(a->out, n * e * F, MEM_WRITE);
        return moe_scratch(w, &a->xg, &a->gu, &a->yd, n * e * F, n * gu * F);
    }
    case BOP_MOE_CACHED: {
        bop_moe_cached *a = &op->u.moe_cached;
        const uint64_t n = a->n_tokens, e = a->gate_up.ne0, nk = n * a->k;
        const uint64_t gu = a->n_slot ? a->gate_up.ne1 / a->n_slot : 0;
        const uint64_t ny = a->n_y ? a->n_y : 1;
        V(a->x, n * e * F, MEM_READ);
        V(a->ids, nk * I, MEM_READ);
        V(a->weights, nk * F, MEM_READ);
        V(a->slot_of, (uint64_t)a->n_expert * I, MEM_READ);
        V(a->y_row, nk * I, MEM_READ);
        VW(a->gate_up);
        VW(a->down);
        if (a->accumulate) {
            V(a->y, ny * e * F, MEM_READ);
            V(a->out, n * e * F, MEM_WRITE);
        } else {
            mem_operand o = {.m = &a->y, .bytes = ny * e * F, .access = MEM_UPDATE,
                             .result = true, .what = -1};
            SW_TRY(w.fn(w.user, &o));
        }
        return moe_scratch(w, &a->xg, &a->gu, &a->yd, n * e * F, n * gu * F);
    }
    default: /* bop_for_each_mem sends only this family's kinds */
        return SW_OK;
    }
}

sw_status bop_for_each_mem(bop *op, mem_operand_fn fn, void *user) {
    const walk w = {fn, user};
    switch (op->kind) {
    case BOP_GET_ROWS: case BOP_RMSNORM: case BOP_MATMUL: case BOP_GATHER:
        return walk_rows(op, w);
    case BOP_ROPE: case BOP_KV_APPEND: case BOP_ATTENTION:
        return walk_attention(op, w);
    case BOP_GEGLU: case BOP_ADD: case BOP_SCALE: case BOP_SOFTCAP:
        return walk_elementwise(op, w);
    case BOP_MOE_ROUTE: case BOP_MOE_EXPERTS: case BOP_MOE_CACHED:
        return walk_moe(op, w);
    default:
        return sw_errorf(SW_ERR_ARG, "op %d: no such op", (int)op->kind);
    }
}

#undef V
#undef VW

/* ---- blocks ----------------------------------------------------------------- */

static bool attn_part(const block_args *a) { return a->phase != BLOCK_FROM_EXPERTS; }
static bool rest_part(const block_args *a) { return a->phase != BLOCK_TO_EXPERTS; }
static bool experts_here(const block_args *a) {
    return a->phase == BLOCK_WHOLE && a->shape->n_expert != 0;
}

/* block.c's steps, weight by weight: which the phase reads. */
static bool reads_role(const block_args *a, block_weight r) {
    const block_shape *s = a->shape;
    const bool own_kv = attn_part(a) && !s->kv_shared;
    switch (r) {
    case BW_ATTN_NORM: case BW_Q: case BW_O:
    case BW_FFN_NORM: case BW_GATE: case BW_UP: case BW_DOWN:
        return attn_part(a);
    case BW_K: return own_kv;
    case BW_V: return own_kv && !s->k_eq_v;
    case BW_Q_NORM: return attn_part(a) && s->qk_norm;
    case BW_K_NORM: return own_kv && s->qk_norm;
    case BW_POST_ATTN_NORM: return attn_part(a) && s->post_norms;
    case BW_POST_FFW_NORM_1: return attn_part(a) && s->n_expert != 0;
    case BW_POST_FFW_NORM: return rest_part(a) && s->post_norms;
    case BW_PLE_GATE: case BW_PLE_PROJ: case BW_PLE_NORM:
        return rest_part(a) && s->n_pl != 0;
    case BW_FFN_NORM_2: case BW_POST_FFW_NORM_2: case BW_ROUTER: case BW_ROUTER_SCALE:
    case BW_EXPERT_SCALE: case BW_GATE_UP_EXPS: case BW_DOWN_EXPS:
        return experts_here(a);
    default: /* BW_LAYER_SCALE: block_args.layer_scale carries it */
        return false;
    }
}

bool block_reads_weight(const block_args *a, block_weight role) {
    return role < BW_COUNT && a->w[role].n_bytes != 0 && reads_role(a, role);
}

typedef struct block_walk {
    block_args *a;
    mem_operand_fn fn;
    void *user;
} block_walk;

static sw_status operand(const block_walk *w, int what, bmem *m, uint64_t bytes,
                         mem_access access, bool result, mem_rows rows) {
    mem_operand o = {.m = m, .bytes = bytes, .access = access, .result = result,
                     .kv = what == BO_KV_K || what == BO_KV_V, .rows = rows, .what = what};
    return w->fn(w->user, &o);
}

/* Scratch: written, then read, inside the block; undefined afterwards. */
static sw_status scratch(const block_walk *w, int what, bmem *m, uint64_t bytes) {
    return operand(w, what, m, bytes, MEM_WRITE, false, MEM_ROWS_NONE);
}

/* What crosses the block's border: x, h, the experts' output, the
 * per-layer input. */
static sw_status walk_border(const block_walk *w) {
    block_args *a = w->a;
    const block_shape *s = a->shape;
    const uint64_t n = a->n_tokens, x = n * s->n_embd * F;
    SW_TRY(operand(w, BO_X, &a->act.x, x, MEM_UPDATE, true, MEM_ROWS_F32));
    if (a->phase == BLOCK_FROM_EXPERTS) { /* h: the dense MLP's output, from before */
        SW_TRY(operand(w, BO_H, &a->act.h, x, MEM_UPDATE, false, MEM_ROWS_F32));
        SW_TRY(operand(w, BO_MOE_OUT, &a->act.moe_out, x, MEM_READ, false, MEM_ROWS_F32));
    } else {
        SW_TRY(operand(w, BO_H, &a->act.h, x, MEM_WRITE, a->phase == BLOCK_TO_EXPERTS,
                       MEM_ROWS_F32));
    }
    if (s->n_pl && rest_part(a))
        SW_TRY(operand(w, BO_PLE, &a->act.ple, n * s->n_pl * F, MEM_READ, false,
                       MEM_ROWS_F32));
    return SW_OK;
}

static sw_status walk_weights(const block_walk *w) {
    block_args *a = w->a;
    for (int r = 0; r < BW_COUNT; r++) {
        if (!block_reads_weight(a, (block_weight)r))
            continue;
        mem_operand o = {.m = &a->w[r].mem, .bytes = a->w[r].n_bytes, .access = MEM_READ,
                         .weight = &a->w[r], .what = BO_WEIGHT + r};
        SW_TRY(w->fn(w->user, &o));
    }
    return SW_OK;
}

/* The attention half's caches, metadata and scratch; the dense MLP's. */
static sw_status walk_attention_half(const block_walk *w) {
    block_args *a = w->a;
    const block_shape *s = a->shape;
    const uint64_t n = a->n_tokens, half = bkv_half_bytes(&a->kv);
    const uint64_t q = n * s->n_head * s->head_dim * F, kv = n * s->n_head_kv * s->head_dim * F;
    const mem_access cache = s->kv_shared ? MEM_READ : MEM_UPDATE;
    SW_TRY(operand(w, BO_KV_K, &a->kv.k, half, cache, !s->kv_shared, MEM_ROWS_NONE));
    SW_TRY(operand(w, BO_KV_V, &a->kv.v, half, cache, !s->kv_shared, MEM_ROWS_NONE));
    SW_TRY(operand(w, BO_POS, &a->act.pos, n * I, MEM_READ, false, MEM_ROWS_POS));
    SW_TRY(operand(w, BO_SEQ, &a->act.seq, n * I, MEM_READ, false, MEM_ROWS_SEQ));
    if (a->act.apos.buf != NULL)
        SW_TRY(operand(w, BO_APOS, &a->act.apos, n * I, MEM_READ, false, MEM_ROWS_POS));
    SW_TRY(scratch(w, BO_Q, &a->act.q, q));
    SW_TRY(scratch(w, BO_ATT, &a->act.att, q));
    if (!s->kv_shared) {
        SW_TRY(scratch(w, BO_K, &a->act.k, kv));
        SW_TRY(scratch(w, BO_V, &a->act.v, kv));
    }
    return SW_OK;
}

/* The gate buffer holds the dense MLP's gate and the per-layer input's. */
static sw_status walk_ffn_scratch(const block_walk *w) {
    block_args *a = w->a;
    const block_shape *s = a->shape;
    const uint64_t n = a->n_tokens, ff = attn_part(a) ? s->n_ff : 0;
    const uint64_t pl = s->n_pl && rest_part(a) ? s->n_pl : 0;
    if (ff || pl)
        SW_TRY(scratch(w, BO_GATE, &a->act.gate, n * (ff > pl ? ff : pl) * F));
    if (ff)
        SW_TRY(scratch(w, BO_UP, &a->act.up, n * ff * F));
    return SW_OK;
}

/* The router's and the experts' arrays (bop_moe_experts' scratch: xg in
 * moe_r, gu, yd). */
static sw_status walk_experts(const block_walk *w) {
    block_args *a = w->a;
    const block_shape *s = a->shape;
    const uint64_t n = a->n_tokens, e = n * s->n_embd * F, nk = n * s->n_expert_used;
    const uint64_t gu = n * (a->w[BW_GATE_UP_EXPS].ne1 / s->n_expert) * F;
    SW_TRY(scratch(w, BO_MOE_R, &a->act.moe_r, e));
    SW_TRY(scratch(w, BO_MOE_SCORES, &a->act.moe_scores, n * s->n_expert * F));
    SW_TRY(scratch(w, BO_MOE_IDS, &a->act.moe_ids, nk * I));
    SW_TRY(scratch(w, BO_MOE_W, &a->act.moe_w, nk * F));
    SW_TRY(scratch(w, BO_MOE_X, &a->act.moe_x, e));
    SW_TRY(scratch(w, BO_MOE_GU, &a->act.moe_gu, gu));
    SW_TRY(scratch(w, BO_MOE_YD, &a->act.moe_yd, e));
    return scratch(w, BO_MOE_OUT, &a->act.moe_out, e);
}

sw_status block_for_each_mem(block_args *a, mem_operand_fn fn, void *user) {
    const block_walk w = {a, fn, user};
    SW_TRY(walk_border(&w));
    SW_TRY(walk_weights(&w));
    if (attn_part(a))
        SW_TRY(walk_attention_half(&w));
    SW_TRY(walk_ffn_scratch(&w));
    return experts_here(a) ? walk_experts(&w) : SW_OK;
}
