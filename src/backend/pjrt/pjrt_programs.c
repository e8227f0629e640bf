/*
 * pjrt_programs.c — each op as a StableHLO program (pjrt_programs.h), and
 * the parts block programs share (pjrt_prog_parts.h).
 */
#include <string.h>

#include "backend/pjrt/hlo_gemma.h"
#include "backend/pjrt/pjrt_prog_parts.h"
#include "quant/types.h"
#include "util/error.h"

void prog_in(prog_sig *s, bmem m, uint64_t bytes, prog_rows rows) {
    s->in[s->n_in++] = (prog_io){m, bytes, rows};
}

void prog_out(prog_sig *s, bmem m, uint64_t bytes, int donate, prog_rows rows) {
    s->donate[s->n_out] = donate;
    s->out[s->n_out++] = (prog_io){m, bytes, rows};
}

/* An operand as the program sees it: an argument when it is read, a
 * result when its value after the call is one; a cache the call updates
 * is donated, so the runtime may update it in place. The walkers give
 * arguments in the order the program texts number them. */
sw_status prog_sig_add(void *user, const mem_operand *o) {
    prog_sig *s = user;
    int donate = -1;
    if (o->access & MEM_READ) {
        if (s->n_in == PROG_MAX_IN)
            return sw_errorf(SW_ERR_ARG, "internal: a program of over %d inputs", PROG_MAX_IN);
        if (o->kv && o->result)
            donate = s->n_in;
        prog_in(s, *o->m, o->bytes, o->rows);
    }
    if (o->result) {
        if (s->n_out == PROG_MAX_OUT)
            return sw_errorf(SW_ERR_ARG, "internal: a program of over %d results", PROG_MAX_OUT);
        prog_out(s, *o->m, o->bytes, donate, o->rows);
    }
    return SW_OK;
}

sw_status prog_check_weight(const btensor *w) {
    if (hg_type_size(w->type) == 0)
        return sw_errorf(SW_ERR_UNSUPPORTED, "the PJRT backend computes in f32/f16/bf16 "
                         "weights; '%s' is %s (plan with --weights bf16, which the planner "
                         "does for this backend by default)", w->name ? w->name : "?",
                         type_name(w->type));
    return SW_OK;
}

sw_status prog_check_experts(const btensor *gate_up, const btensor *down, uint32_t n_expert,
                             uint32_t k) {
    SW_TRY(prog_check_weight(gate_up));
    SW_TRY(prog_check_weight(down));
    const uint64_t E = n_expert, D = gate_up->ne0;
    if (E == 0 || gate_up->ne1 % E || down->ne1 != E * D || gate_up->ne1 / E != 2 * down->ne0)
        return sw_errorf(SW_ERR_ARG, "PJRT: '%s' and '%s' are not %llu experts of one shape",
                         gate_up->name ? gate_up->name : "?", down->name ? down->name : "?",
                         (unsigned long long)E);
    if (k == 0 || k > 64 || k > n_expert)
        return sw_errorf(SW_ERR_ARG, "PJRT: %u of %u experts per token (1..64)", k, n_expert);
    return SW_OK;
}

/* Checks on an op's arguments beyond their bounds: weight types PJRT
 * computes in, experts of one shape. */
static sw_status check_op(const bop *op) {
    switch (op->kind) {
    case BOP_GET_ROWS:
        return prog_check_weight(&op->u.get_rows.w);
    case BOP_MATMUL:
        return prog_check_weight(&op->u.matmul.w);
    case BOP_MOE_ROUTE: {
        const bop_moe_route *o = &op->u.moe_route;
        if (o->k == 0 || o->k > 64 || o->k > o->n_expert ||
            o->expert_scale.n_bytes < (uint64_t)o->n_expert * sizeof(float))
            return sw_errorf(SW_ERR_ARG, "PJRT: moe route of %u of %u experts (scale of %llu "
                             "bytes)", o->k, o->n_expert,
                             (unsigned long long)o->expert_scale.n_bytes);
        return SW_OK;
    }
    case BOP_MOE_EXPERTS: {
        const bop_moe_experts *o = &op->u.moe_experts;
        return prog_check_experts(&o->gate_up, &o->down, o->n_expert, o->k);
    }
    default:
        return op->kind < BOP_COUNT ? SW_OK
                                    : sw_errorf(SW_ERR_UNSUPPORTED, "PJRT backend: unknown "
                                                "op %d", (int)op->kind);
    }
}

sw_status prog_op_sig(const bop *op, prog_sig *s) {
    bop walked = *op;
    memset(s, 0, sizeof *s);
    SW_TRY(check_op(op));
    return bop_for_each_mem(&walked, prog_sig_add, s);
}

/* A (rows, cols) f32 activation from input i. */
int prog_act(hlo *h, int i, int64_t rows, int64_t cols) {
    return hlo_reshape(h, hg_load(h, hlo_arg(i), "f32", rows * cols),
                       hlo_t2("f32", rows, cols));
}

int prog_ints(hlo *h, int i, int64_t n) {
    return hg_load(h, hlo_arg(i), "i32", n);
}

int prog_cache(hlo *h, int i, const bkv *kv) {
    const char *elt = hg_type_elt(kv->type);
    int64_t rows = (int64_t)kv->n_seq * kv->rows;
    return hlo_reshape(h, hg_load(h, hlo_arg(i), elt, rows * kv->row_elems),
                       hlo_t2(elt, rows, kv->row_elems));
}

int prog_norm_w(hlo *h, int i, int64_t n) {
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
        res[0] = hlo_take_rows(h, w, prog_ints(h, 1, o->n));
        return 1;
    }
    case BOP_RMSNORM: {
        const bop_rmsnorm *o = &op->u.rmsnorm;
        res[0] = hg_rmsnorm(h, prog_act(h, 0, o->n_rows, o->n),
                            o->w.n_bytes != 0 ? prog_norm_w(h, 1, o->n) : -1, o->eps);
        return 1;
    }
    case BOP_MATMUL: {
        const bop_matmul *o = &op->u.matmul;
        int w = hg_weight(h, hlo_arg(1), o->w.type, (int64_t)o->w.ne1, (int64_t)o->w.ne0);
        res[0] = hg_matmul(h, prog_act(h, 0, o->n_tokens, (int64_t)o->w.ne0), w);
        return 1;
    }
    case BOP_ROPE: {
        const bop_rope *o = &op->u.rope;
        res[0] = hg_rope(h, prog_act(h, 0, o->n_tokens, (int64_t)o->n_heads * o->head_dim),
                         prog_ints(h, 1, o->n_tokens), o->n_heads, o->head_dim, o->base,
                         o->freq_scale, o->n_pairs);
        return 1;
    }
    case BOP_KV_APPEND: {
        const bop_kv_append *o = &op->u.kv_append;
        int pos = prog_ints(h, 2, o->n_tokens), seq = prog_ints(h, 3, o->n_tokens);
        int64_t d = o->cache.row_elems;
        for (int i = 0; i < 2; i++)
            res[i] = hg_cache_put(h, prog_cache(h, 4 + i, &o->cache),
                                  prog_act(h, i, o->n_tokens, d), pos, seq, o->cache.rows,
                                  o->cache.ring);
        return 2;
    }
    case BOP_ATTENTION: {
        const bop_attention *o = &op->u.attention;
        hg_attn a = attn_of(o);
        int q = prog_act(h, 0, o->n_tokens, (int64_t)o->n_head * o->head_dim);
        res[0] = hg_attention(h, &a, q, prog_cache(h, 3, &o->cache), prog_cache(h, 4, &o->cache),
                              prog_ints(h, 1, o->n_tokens), prog_ints(h, 2, o->n_tokens));
        return 1;
    }
    case BOP_GEGLU:
        res[0] = hg_geglu(h, prog_act(h, 0, 1, (int64_t)op->u.geglu.n),
                          prog_act(h, 1, 1, (int64_t)op->u.geglu.n));
        return 1;
    case BOP_ADD:
        res[0] = hlo_binary(h, "add", prog_act(h, 0, 1, (int64_t)op->u.add.n),
                            prog_act(h, 1, 1, (int64_t)op->u.add.n));
        return 1;
    case BOP_SCALE:
        res[0] = hg_scale(h, prog_act(h, 0, 1, (int64_t)op->u.scale.n), op->u.scale.s);
        return 1;
    case BOP_SOFTCAP:
        res[0] = hg_softcap(h, prog_act(h, 0, 1, (int64_t)op->u.softcap.n),
                            op->u.softcap.cap);
        return 1;
    case BOP_GATHER: {
        const bop_gather *o = &op->u.gather;
        res[0] = hlo_take_rows(h, prog_act(h, 0, o->n_src, o->cols), prog_ints(h, 1, o->n));
        return 1;
    }
    case BOP_MOE_ROUTE: {
        const bop_moe_route *o = &op->u.moe_route;
        hg_moe_route(h, prog_act(h, 0, o->n_tokens, o->n_expert),
                     prog_norm_w(h, 1, o->n_expert), o->k, &res[0], &res[1]);
        return 2;
    }
    case BOP_MOE_EXPERTS: {
        const bop_moe_experts *o = &op->u.moe_experts;
        const hg_experts w = {.gate_up = hlo_arg(3), .down = hlo_arg(4), .type = o->gate_up.type,
                              .n_expert = o->n_expert, .n_embd = (int64_t)o->gate_up.ne0,
                              .n_ff = (int64_t)o->down.ne0};
        int ids = hlo_reshape(h, prog_ints(h, 1, (int64_t)o->n_tokens * o->k),
                              hlo_t2("i32", o->n_tokens, o->k));
        res[0] = hg_moe_experts(h, &w, prog_act(h, 0, o->n_tokens, w.n_embd), ids,
                                prog_act(h, 2, o->n_tokens, o->k));
        return 1;
    }
    default:
        return 0;
    }
}

/* Ends the program: results stored as bytes, donations where the input's
 * buffer holds exactly the result's bytes. */
sw_status prog_finish(hlo *h, const uint64_t *in_bytes, const prog_sig *s, int *res, int n) {
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
    return prog_finish(h, in_bytes, s, res, op_body(h, op, res));
}
