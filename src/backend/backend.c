/*
 * backend.c — what all backends share behind backend.h: the destructor
 * callers use for any backend, op names, and the one description of which
 * memory each op reads and writes (bop_for_each_mem), so the sim's bounds
 * checks, its address translation and its reader tracking cannot disagree
 * about an op's operands.
 */
#include "backend/backend.h"

#include "quant/types.h"

void backend_destroy(backend *b) {
    if (b != NULL)
        b->vt->destroy(b);
}

const char *bop_name(bop_kind kind) {
    static const char *const names[BOP_COUNT] = {
        "get_rows", "rmsnorm", "matmul", "rope", "kv_append", "attention",
        "geglu", "add", "scale", "softcap", "gather", "moe route", "moe experts"};
    return kind < BOP_COUNT ? names[kind] : "?";
}

static const uint64_t F = sizeof(float), I = sizeof(int32_t);

/* Bytes of one layer's keys (or values) for every sequence. */
static uint64_t kv_half_bytes(const bkv *c) {
    uint64_t elem = c->type == SW_TYPE_F32 ? 4 : 2;
    return (uint64_t)c->n_seq * c->rows * c->row_elems * elem;
}

#define VISIT(m, bytes, writes, weight)                                          \
    do {                                                                          \
        sw_status st_ = fn(user, &(m), (bytes), (writes), (weight));              \
        if (st_ != SW_OK)                                                         \
            return st_;                                                           \
    } while (0)

/* The two cache halves, read (attention) or written (append). */
static sw_status visit_kv(bkv *c, bool writes, bop_mem_fn fn, void *user) {
    VISIT(c->k, kv_half_bytes(c), writes, NULL);
    VISIT(c->v, kv_half_bytes(c), writes, NULL);
    return SW_OK;
}

static sw_status visit_linear(bop *op, bop_mem_fn fn, void *user) {
    switch (op->kind) {
    case BOP_GEGLU:
        VISIT(op->u.geglu.gate, op->u.geglu.n * F, false, NULL);
        VISIT(op->u.geglu.up, op->u.geglu.n * F, false, NULL);
        VISIT(op->u.geglu.out, op->u.geglu.n * F, true, NULL);
        return SW_OK;
    case BOP_ADD:
        VISIT(op->u.add.y, op->u.add.n * F, false, NULL);
        VISIT(op->u.add.x, op->u.add.n * F, true, NULL);
        return SW_OK;
    case BOP_SCALE:
        VISIT(op->u.scale.x, op->u.scale.n * F, true, NULL);
        return SW_OK;
    case BOP_SOFTCAP:
        VISIT(op->u.softcap.x, op->u.softcap.n * F, true, NULL);
        return SW_OK;
    default:
        return SW_OK;
    }
}

sw_status bop_for_each_mem(bop *op, bop_mem_fn fn, void *user) {
    switch (op->kind) {
    case BOP_GET_ROWS: {
        bop_get_rows *a = &op->u.get_rows;
        VISIT(a->w.mem, a->w.n_bytes, false, &a->w);
        VISIT(a->ids, a->n * I, false, NULL);
        VISIT(a->out, (uint64_t)a->n * a->w.ne0 * F, true, NULL);
        return SW_OK;
    }
    case BOP_RMSNORM: {
        bop_rmsnorm *a = &op->u.rmsnorm;
        if (a->w.n_bytes != 0)
            VISIT(a->w.mem, a->w.n_bytes, false, &a->w);
        VISIT(a->x, (uint64_t)a->n * a->n_rows * F, false, NULL);
        VISIT(a->y, (uint64_t)a->n * a->n_rows * F, true, NULL);
        return SW_OK;
    }
    case BOP_MATMUL: {
        bop_matmul *a = &op->u.matmul;
        VISIT(a->w.mem, a->w.n_bytes, false, &a->w);
        VISIT(a->x, (uint64_t)a->n_tokens * a->w.ne0 * F, false, NULL);
        VISIT(a->y, (uint64_t)a->n_tokens * a->w.ne1 * F, true, NULL);
        return SW_OK;
    }
    case BOP_ROPE: {
        bop_rope *a = &op->u.rope;
        VISIT(a->pos, a->n_tokens * I, false, NULL);
        VISIT(a->x, (uint64_t)a->n_tokens * a->n_heads * a->head_dim * F, true, NULL);
        return SW_OK;
    }
    case BOP_KV_APPEND: {
        bop_kv_append *a = &op->u.kv_append;
        uint64_t bytes = (uint64_t)a->n_tokens * a->cache.row_elems * F;
        VISIT(a->k, bytes, false, NULL);
        VISIT(a->v, bytes, false, NULL);
        VISIT(a->pos, a->n_tokens * I, false, NULL);
        VISIT(a->seq, a->n_tokens * I, false, NULL);
        return visit_kv(&a->cache, true, fn, user);
    }
    case BOP_ATTENTION: {
        bop_attention *a = &op->u.attention;
        uint64_t bytes = (uint64_t)a->n_tokens * a->n_head * a->head_dim * F;
        VISIT(a->q, bytes, false, NULL);
        VISIT(a->pos, a->n_tokens * I, false, NULL);
        VISIT(a->seq, a->n_tokens * I, false, NULL);
        VISIT(a->out, bytes, true, NULL);
        return visit_kv(&a->cache, false, fn, user);
    }
    case BOP_GATHER: {
        bop_gather *a = &op->u.gather;
        VISIT(a->idx, a->n * I, false, NULL);
        VISIT(a->dst, (uint64_t)a->n * a->cols * F, true, NULL);
        VISIT(a->src, (uint64_t)a->n_src * a->cols * F, false, NULL);
        return SW_OK;
    }
    case BOP_MOE_ROUTE: {
        bop_moe_route *a = &op->u.moe_route;
        const uint64_t nk = (uint64_t)a->n_tokens * a->k;
        VISIT(a->expert_scale.mem, a->expert_scale.n_bytes, false, &a->expert_scale);
        VISIT(a->scores, (uint64_t)a->n_tokens * a->n_expert * F, false, NULL);
        VISIT(a->ids, nk * I, true, NULL);
        VISIT(a->weights, nk * F, true, NULL);
        return SW_OK;
    }
    case BOP_MOE_EXPERTS: {
        bop_moe_experts *a = &op->u.moe_experts;
        const uint64_t n = a->n_tokens, e = a->gate_up.ne0, nk = n * a->k;
        const uint64_t gu = a->n_expert ? a->gate_up.ne1 / a->n_expert : 0;
        VISIT(a->gate_up.mem, a->gate_up.n_bytes, false, &a->gate_up);
        VISIT(a->down.mem, a->down.n_bytes, false, &a->down);
        VISIT(a->x, n * e * F, false, NULL);
        VISIT(a->ids, nk * I, false, NULL);
        VISIT(a->weights, nk * F, false, NULL);
        VISIT(a->out, n * e * F, true, NULL);
        VISIT(a->xg, n * e * F, true, NULL);
        VISIT(a->gu, n * gu * F, true, NULL);
        VISIT(a->yd, n * e * F, true, NULL);
        return SW_OK;
    }
    default:
        return visit_linear(op, fn, user);
    }
}
