/*
 * cuda_ops.cu — the CUDA backend's submit and block entries: every
 * operand is checked before anything is queued (a live device buffer, the
 * bytes inside it, a weight type the kernels read, shapes the kernels
 * take), then the op's kernel is launched on the compute stream.
 *
 * The block entry (cuda_block) runs one Gemma layer in 9 launches at
 * decode instead of the 17-22 of block_run_ops: Q, K and V are one matvec
 * when they share a type; the Q/K norms, RoPE, the
 * query scale and the KV append are one kernel; a post-norm, the residual
 * add and the next norm are one; gate, up and GeGLU are one matvec when
 * the two matrices share a type. Each fused kernel applies the same
 * per-element functions in the same order as the ops it replaces, so the
 * bits are those of the op sequence (test_cuda checks it). Matmuls go
 * through cuda_q8.cu's choice: the integer path where it reads the
 * weight (the down projection's input quantized per 32, as the cpu's).
 */
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_internal.h"
#include "backend/cuda/qblock.h"

extern "C" {
#include "quant/types.h"
}

/* The device address of an operand already checked by check_operands. */
static uint8_t *P(bmem m) { return ((cuda_buf *)(void *)m.buf)->ptr + m.off; }
static float *F(bmem m) { return (float *)(void *)P(m); }
static int32_t *I(bmem m) { return (int32_t *)(void *)P(m); }

/* A weight the kernels can read: type, whole blocks, 8-element rows, 16-byte
 * aligned (its memory already checked), and its bytes those of ne1 rows. */
static sw_status check_weight(const btensor *w, const char *what) {
    uint32_t elems = 0, bytes = 0;
    qb_geometry(w->type, &elems, &bytes);
    const char *name = w->name ? w->name : "?";
    if (elems == 0)
        return sw_errorf(SW_ERR_UNSUPPORTED, "cuda %s: weight '%s' has type %s, which the CUDA "
                         "kernels do not read; convert it at load (--weights q8_0 or bf16)",
                         what, name, type_name(w->type));
    if (w->ne0 == 0 || w->ne0 % elems != 0)
        return sw_errorf(SW_ERR_UNSUPPORTED, "cuda %s: weight '%s' rows of %llu elements are "
                         "not a whole number of %u-element blocks of %s", what, name,
                         (unsigned long long)w->ne0, elems, type_name(w->type));
    const uint64_t row_bytes = w->ne0 / elems * bytes;
    if ((uintptr_t)P(w->mem) % 16 != 0)
        return sw_errorf(SW_ERR_ARG, "cuda %s: weight '%s' at device offset %llu is not 16-byte "
                         "aligned (the kernels load whole words)", what, name,
                         (unsigned long long)w->mem.off);
    if (w->n_bytes != row_bytes * w->ne1)
        return sw_errorf(SW_ERR_ARG, "cuda %s: weight '%s' has %llu bytes, %llu rows of %llu "
                         "need %llu", what, name, (unsigned long long)w->n_bytes,
                         (unsigned long long)w->ne1, (unsigned long long)w->ne0,
                         (unsigned long long)(row_bytes * w->ne1));
    return SW_OK;
}

static ck_weight weight_of(const btensor *w) {
    uint32_t elems = 0, bytes = 0;
    qb_geometry(w->type, &elems, &bytes);
    return (ck_weight){.data = P(w->mem), .type = w->type, .ne0 = w->ne0, .ne1 = w->ne1,
                       .row_bytes = w->ne0 / elems * bytes};
}

static ck_kv kv_of(const bkv *kv) {
    return (ck_kv){.k = P(kv->k), .v = P(kv->v), .type = kv->type, .row_elems = kv->row_elems,
                   .rows = kv->rows, .ring = kv->ring, .n_seq = kv->n_seq};
}

static sw_status check_kv(const bkv *kv, const char *what) {
    if (kv->type != SW_TYPE_F32 && kv->type != SW_TYPE_F16 && kv->type != SW_TYPE_BF16)
        return sw_errorf(SW_ERR_UNSUPPORTED, "cuda %s: KV cache type %s (f32, f16 or bf16)",
                         what, type_name(kv->type));
    return SW_OK;
}

static sw_status check_heads(uint32_t n_head, uint32_t n_head_kv, uint32_t hd, const char *what) {
    if (hd == 0 || hd % 2 || hd > CK_ATTN_MAX_HD || n_head_kv == 0 || n_head % n_head_kv)
        return sw_errorf(SW_ERR_UNSUPPORTED, "cuda %s: head_dim %u (even, at most %d), %u "
                         "heads over %u KV heads", what, hd, CK_ATTN_MAX_HD, n_head, n_head_kv);
    return SW_OK;
}

/* The walkers' callback (operands.c): every operand inside a live buffer,
 * a weight in device memory. */
static sw_status check_mem(void *user, const mem_operand *o) {
    uint8_t *ptr = NULL;
    const btensor *weight = o->weight;
    if (weight != NULL &&
        (o->m->buf == NULL || ((cuda_buf *)(void *)o->m->buf)->magic != CUDA_BUF_MAGIC))
        return sw_errorf(SW_ERR_ARG, "cuda: weight '%s' is not in device memory; upload it "
                         "before using it in %s", weight->name ? weight->name : "?",
                         (const char *)user);
    return cuda_resolve((const char *)user, *o->m, o->bytes, &ptr);
}

/* Shape and type checks beyond the operands' bounds. */
static sw_status check_op(const bop *op) {
    switch (op->kind) {
    case BOP_GET_ROWS: return check_weight(&op->u.get_rows.w, "get_rows");
    case BOP_MATMUL:
        if ((uintptr_t)P(op->u.matmul.x) % 16 != 0)
            return sw_errorf(SW_ERR_ARG, "cuda matmul: activations at offset %llu are not "
                             "16-byte aligned", (unsigned long long)op->u.matmul.x.off);
        return check_weight(&op->u.matmul.w, "matmul");
    case BOP_RMSNORM:
        if (op->u.rmsnorm.w.n_bytes == 0) /* no multiplier */
            return SW_OK;
        if (op->u.rmsnorm.w.type != SW_TYPE_F32 ||
            op->u.rmsnorm.w.n_bytes < (uint64_t)op->u.rmsnorm.n * sizeof(float))
            return sw_errorf(SW_ERR_ARG, "cuda: norm '%s' is not %u f32 values",
                             op->u.rmsnorm.w.name ? op->u.rmsnorm.w.name : "?",
                             op->u.rmsnorm.n);
        return SW_OK;
    case BOP_ROPE: return check_heads(1, 1, op->u.rope.head_dim, "rope");
    case BOP_KV_APPEND: return check_kv(&op->u.kv_append.cache, "kv append");
    case BOP_ATTENTION: {
        const bop_attention *a = &op->u.attention;
        SW_TRY(check_kv(&a->cache, "attention"));
        return check_heads(a->n_head, a->n_head_kv, a->head_dim, "attention");
    }
    case BOP_MOE_ROUTE: {
        const bop_moe_route *m = &op->u.moe_route;
        if (m->expert_scale.type != SW_TYPE_F32 ||
            m->expert_scale.n_bytes < (uint64_t)m->n_expert * sizeof(float))
            return sw_errorf(SW_ERR_ARG, "cuda: expert scale '%s' is not %u f32 values",
                             m->expert_scale.name ? m->expert_scale.name : "?", m->n_expert);
        return SW_OK;
    }
    case BOP_MOE_EXPERTS: {
        const bop_moe_experts *m = &op->u.moe_experts;
        if (m->x.off % 16 || m->gu.off % 16)
            return sw_errorf(SW_ERR_ARG, "cuda moe experts: activations are not 16-byte "
                             "aligned");
        SW_TRY(check_weight(&m->gate_up, "moe experts"));
        return check_weight(&m->down, "moe experts");
    }
    case BOP_MOE_CACHED: {
        const bop_moe_cached *m = &op->u.moe_cached;
        if (!m->accumulate) /* the host's share: the cpu backend computes it */
            return sw_errorf(SW_ERR_UNSUPPORTED, "cuda moe cached: only the device's sum "
                             "(accumulate); the host computes the rows of its experts");
        if (m->x.off % 16 || m->gu.off % 16)
            return sw_errorf(SW_ERR_ARG, "cuda moe cached: activations are not 16-byte "
                             "aligned");
        SW_TRY(check_weight(&m->gate_up, "moe cached"));
        return check_weight(&m->down, "moe cached");
    }
    default: return SW_OK;
    }
}

/* A norm's multiplier, or NULL without one. */
static const float *norm_or_null(const btensor *w) { return w->n_bytes ? F(w->mem) : NULL; }

static sw_status run_op(cuda_backend *c, const bop *op) {
    cudaStream_t s = c->stream[BQ_COMPUTE];
    switch (op->kind) {
    case BOP_GET_ROWS: {
        const bop_get_rows *a = &op->u.get_rows;
        const ck_weight w = weight_of(&a->w);
        return ck_get_rows(s, &w, I(a->ids), a->n, F(a->out));
    }
    case BOP_MATMUL: {
        const bop_matmul *a = &op->u.matmul;
        const ck_weight w = weight_of(&a->w);
        return cuda_mm(c, &w, F(a->x), F(a->y), a->n_tokens, a->fine);
    }
    case BOP_RMSNORM: {
        const bop_rmsnorm *a = &op->u.rmsnorm;
        return ck_rmsnorm(s, F(a->x), norm_or_null(&a->w), F(a->y), a->n, a->n_rows, a->eps);
    }
    case BOP_ROPE: {
        const bop_rope *a = &op->u.rope;
        return ck_rope(s, F(a->x), I(a->pos), a->n_tokens, a->n_heads, a->head_dim, a->base,
                       a->freq_scale, a->n_pairs);
    }
    case BOP_KV_APPEND: {
        const bop_kv_append *a = &op->u.kv_append;
        const ck_kv kv = kv_of(&a->cache);
        return ck_kv_append(s, &kv, F(a->k), F(a->v), I(a->pos), I(a->seq), a->n_tokens);
    }
    case BOP_ATTENTION: {
        const bop_attention *a = &op->u.attention;
        const ck_kv kv = kv_of(&a->cache);
        return ck_attention(s, &kv, F(a->q), F(a->out), I(a->pos), I(a->seq), a->n_tokens,
                            a->n_head, a->n_head_kv, a->head_dim, a->window, a->softcap,
                            a->max_keys, &c->attn);
    }
    case BOP_GEGLU:
        return ck_geglu(s, F(op->u.geglu.gate), F(op->u.geglu.up), F(op->u.geglu.out),
                        op->u.geglu.n);
    case BOP_ADD: return ck_add(s, F(op->u.add.x), F(op->u.add.y), op->u.add.n);
    case BOP_SCALE: return ck_scale(s, F(op->u.scale.x), op->u.scale.n, op->u.scale.s);
    case BOP_SOFTCAP: return ck_softcap(s, F(op->u.softcap.x), op->u.softcap.n, op->u.softcap.cap);
    case BOP_GATHER: {
        const bop_gather *a = &op->u.gather;
        return ck_gather(s, F(a->src), a->n_src, I(a->idx), a->n, a->cols, F(a->dst));
    }
    case BOP_MOE_ROUTE: {
        const bop_moe_route *m = &op->u.moe_route;
        return ck_moe_route(s, F(m->scores), F(m->expert_scale.mem), m->n_tokens, m->n_expert,
                            m->k, I(m->ids), F(m->weights));
    }
    case BOP_MOE_EXPERTS: {
        const bop_moe_experts *m = &op->u.moe_experts;
        const ck_moe a = {.gate_up = weight_of(&m->gate_up), .down = weight_of(&m->down),
                          .x = F(m->x), .weights = F(m->weights), .ids = I(m->ids),
                          .out = F(m->out), .gu = F(m->gu), .n_tokens = m->n_tokens,
                          .n_expert = m->n_expert, .k = m->k, .slot_of = NULL,
                          .y_row = NULL, .y = NULL, .n_slot = 0};
        return ck_moe_experts(s, &a);
    }
    case BOP_MOE_CACHED: {
        const bop_moe_cached *m = &op->u.moe_cached;
        const ck_moe a = {.gate_up = weight_of(&m->gate_up), .down = weight_of(&m->down),
                          .x = F(m->x), .weights = F(m->weights), .ids = I(m->ids),
                          .out = F(m->out), .gu = F(m->gu), .n_tokens = m->n_tokens,
                          .n_expert = m->n_expert, .k = m->k, .slot_of = I(m->slot_of),
                          .y_row = I(m->y_row), .y = F(m->y), .n_slot = m->n_slot};
        return ck_moe_experts(s, &a);
    }
    default: return sw_errorf(SW_ERR_ARG, "cuda: unknown op %d", (int)op->kind);
    }
}

sw_status cuda_submit(backend *b, const bop *op) {
    if (op == NULL || op->kind >= BOP_COUNT)
        return sw_errorf(SW_ERR_ARG, "cuda: bad op");
    SW_TRY(sw_cuda_alive());
    bop checked = *op;
    SW_TRY(bop_for_each_mem(&checked, check_mem, (void *)bop_name(op->kind)));
    SW_TRY(check_op(op));
    return run_op(cuda_of(b), op);
}

/* ---- the block entry ---------------------------------------------------------- */

/* block_for_each_mem's callback: the operand's bounds, and a matrix's
 * type and shape as the kernels read it. */
static sw_status check_block_operand(void *user, const mem_operand *o) {
    SW_TRY(check_mem(user, o));
    const btensor *w = o->weight;
    if (w == NULL || (w->ne1 == 1 && w->type == SW_TYPE_F32)) /* a norm */
        return SW_OK;
    return check_weight(w, "block");
}

static sw_status check_block(block_args *a) {
    SW_TRY(check_kv(&a->kv, "block"));
    SW_TRY(check_heads(a->shape->n_head, a->shape->n_head_kv, a->shape->head_dim, "block"));
    return block_for_each_mem(a, check_block_operand, (void *)"block");
}

/* What the fused kernels implement: a whole Gemma 1-3 block. Every other
 * shape field must hold its neutral value, so that a field added to
 * block_shape later runs op by op until the fused path learns it (the
 * size check below fails the build until this list is revisited). */
static bool fused_accepts(const block_args *a) {
    const block_shape *s = a->shape;
    /* 9 four-byte counts, 3 floats, 5 flags and their padding */
    static_assert(sizeof(block_shape) == 56,
                  "block_shape changed: say in fused_accepts whether the fused kernels "
                  "implement the new field");
    return a->phase == BLOCK_WHOLE && a->layer_scale == 0.0f && !s->v_norm && !s->k_eq_v &&
           !s->kv_shared && s->rope_pairs == 0 && s->n_pl == 0 && s->n_expert == 0 &&
           s->n_expert_used == 0 && a->act.apos.buf == NULL;
}

static sw_status block_attention(cuda_backend *c, const block_args *a) {
    cudaStream_t s = c->stream[BQ_COMPUTE];
    const block_shape *sh = a->shape;
    const block_acts *t = &a->act;
    const uint32_t n = a->n_tokens;
    const ck_weight wq = weight_of(&a->w[BW_Q]), wk = weight_of(&a->w[BW_K]);
    const ck_weight wv = weight_of(&a->w[BW_V]), wo = weight_of(&a->w[BW_O]);
    const ck_kv kv = kv_of(&a->kv);
    SW_TRY(ck_rmsnorm(s, F(t->x), F(a->w[BW_ATTN_NORM].mem), F(t->h), sh->n_embd, n,
                      sh->norm_eps));
    if (n <= MV_MAX_TOKENS && wq.type == wk.type && wq.type == wv.type) {
        const ck_mv_multi qkv = {.w = {wq, wk, wv}, .y = {F(t->q), F(t->k), F(t->v)}, .n = 3};
        SW_TRY(cuda_mm_multi(c, &qkv, F(t->h), n));
    } else {
        SW_TRY(cuda_mm(c, &wq, F(t->h), F(t->q), n, false));
        SW_TRY(cuda_mm(c, &wk, F(t->h), F(t->k), n, false));
        SW_TRY(cuda_mm(c, &wv, F(t->h), F(t->v), n, false));
    }
    SW_TRY(ck_qk_prep(s, F(t->q), F(t->k), F(t->v),
                      sh->qk_norm ? norm_or_null(&a->w[BW_Q_NORM]) : NULL,
                      sh->qk_norm ? norm_or_null(&a->w[BW_K_NORM]) : NULL, sh->norm_eps,
                      I(t->pos), I(t->seq), n, sh->n_head, sh->n_head_kv, sh->head_dim,
                      a->rope_base, a->rope_scale, sh->query_scale, &kv));
    SW_TRY(ck_attention(s, &kv, F(t->q), F(t->att), I(t->pos), I(t->seq), n, sh->n_head,
                        sh->n_head_kv, sh->head_dim, a->window, sh->attn_softcap,
                        a->max_keys, &c->attn));
    SW_TRY(cuda_mm(c, &wo, F(t->att), F(t->h), n, false));
    /* post-attention norm, residual, and the FFN's input norm */
    return ck_residual(s, F(t->x), F(t->h),
                       sh->post_norms ? norm_or_null(&a->w[BW_POST_ATTN_NORM]) : NULL,
                       F(a->w[BW_FFN_NORM].mem), sh->n_embd, n, sh->norm_eps);
}

static sw_status block_ffn(cuda_backend *c, const block_args *a) {
    cudaStream_t s = c->stream[BQ_COMPUTE];
    const block_shape *sh = a->shape;
    const block_acts *t = &a->act;
    const uint32_t n = a->n_tokens;
    const ck_weight wg = weight_of(&a->w[BW_GATE]), wu = weight_of(&a->w[BW_UP]);
    const ck_weight wd = weight_of(&a->w[BW_DOWN]);
    if (n <= MV_MAX_TOKENS && wg.type == wu.type) {
        SW_TRY(cuda_mm_geglu(c, &wg, &wu, F(t->h), F(t->gate), n));
    } else {
        SW_TRY(cuda_mm(c, &wg, F(t->h), F(t->gate), n, false));
        SW_TRY(cuda_mm(c, &wu, F(t->h), F(t->up), n, false));
        SW_TRY(ck_geglu(s, F(t->gate), F(t->up), F(t->gate), (uint64_t)n * sh->n_ff));
    }
    SW_TRY(cuda_mm(c, &wd, F(t->gate), F(t->h), n, true));
    return ck_residual(s, F(t->x), F(t->h),
                       sh->post_norms ? norm_or_null(&a->w[BW_POST_FFW_NORM]) : NULL, NULL,
                       sh->n_embd, n, sh->norm_eps);
}

sw_status cuda_block(backend *b, const block_args *a) {
    if (a == NULL || a->shape == NULL)
        return sw_errorf(SW_ERR_ARG, "cuda: bad block");
    SW_TRY(sw_cuda_alive());
    if (!fused_accepts(a)) /* Gemma 4's blocks and the split phases: op by op */
        return block_run_ops(b, a);
    block_args checked = *a;
    SW_TRY(check_block(&checked));
    SW_TRY(block_attention(cuda_of(b), a));
    return block_ffn(cuda_of(b), a);
}
