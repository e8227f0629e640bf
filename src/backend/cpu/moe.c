/*
 * moe.c — Gemma 4's mixture of experts on the CPU (cpu_ops.h): the
 * router's top k after its projection, and the experts, each a gate/up
 * matmul, GeGLU and down matmul over the tokens routed to it (the
 * matmuls are cpu_matmul over one expert's slice of the stored 3-D
 * tensors, so every weight type and kernel of the dense path serves).
 *
 * Order, as transformers' Gemma4TextExperts: experts in ascending id, and
 * each token's output the zero row plus its experts' weighted outputs in
 * that order.
 */
#include <math.h>
#include <string.h>

#include "backend/cpu/cpu_ops.h"
#include "quant/types.h"
#include "util/error.h"

sw_status cpu_moe_route(const float *scores, const float *expert_scale, uint32_t n_tokens,
                        uint32_t n_expert, uint32_t k, int32_t *ids, float *weights) {
    if (k == 0 || k > n_expert)
        return sw_errorf(SW_ERR_ARG, "moe route: %u of %u experts per token", k, n_expert);
    for (uint32_t t = 0; t < n_tokens; t++) {
        const float *s = scores + (uint64_t)t * n_expert;
        float mx = s[0];
        for (uint32_t e = 1; e < n_expert; e++)
            mx = s[e] > mx ? s[e] : mx;
        float sum = 0.0f;
        for (uint32_t e = 0; e < n_expert; e++)
            sum += expf(s[e] - mx);
        /* the k largest, in descending order; ties keep the lower id */
        int32_t *id = ids + (uint64_t)t * k;
        float *w = weights + (uint64_t)t * k;
        for (uint32_t j = 0; j < k; j++) {
            int32_t best = -1;
            for (uint32_t e = 0; e < n_expert; e++) {
                bool taken = false;
                for (uint32_t i = 0; i < j; i++)
                    taken |= id[i] == (int32_t)e;
                if (!taken && (best < 0 || s[e] > s[best]))
                    best = (int32_t)e;
            }
            id[j] = best;
            w[j] = expf(s[best] - mx) / sum;
        }
        float top = 0.0f;
        for (uint32_t j = 0; j < k; j++)
            top += w[j];
        for (uint32_t j = 0; j < k; j++)
            w[j] = w[j] / top * expert_scale[id[j]];
    }
    return SW_OK;
}

/* Expert e's slice of a 3-D weight of n_expert matrices. */
static tensor_view expert_view(const tensor_view *w, uint32_t n_expert, uint32_t e) {
    const uint64_t rows = w->ne[1] / n_expert, bytes = w->n_bytes / n_expert;
    return (tensor_view){.name = w->name, .type = w->type, .n_dims = 2,
                         .ne = {w->ne[0], rows, 1, 1}, .n_bytes = bytes,
                         .data = (const uint8_t *)w->data + (uint64_t)e * bytes};
}

/* Routing (t, j)'s output, expert e's row i of yd (computed here), into
 * its token's sum or (another side's share) into y; with yd NULL, the
 * rows of e from elsewhere, out of y. */
static void moe_scatter(const cpu_moe_args *a, uint32_t e, const float *yd) {
    const uint64_t ne = a->gate_up->ne[0];
    const bool here = yd != NULL;
    uint32_t i = 0;
    for (uint32_t t = 0; t < a->n_tokens; t++)
        for (uint32_t j = 0; j < a->k; j++) {
            const uint64_t tj = (uint64_t)t * a->k + j;
            if (a->ids[tj] != (int32_t)e)
                continue;
            const float *y = here ? yd + (uint64_t)i++ * ne
                                  : a->y + (uint64_t)a->y_row[tj] * ne;
            if (a->slot_of != NULL && !a->accumulate) {
                memcpy(a->y + (uint64_t)a->y_row[tj] * ne, y, ne * sizeof(float));
                continue;
            }
            const float w = a->weights[tj];
            float *o = a->out + (uint64_t)t * ne;
            for (uint64_t c = 0; c < ne; c++)
                o[c] += y[c] * w;
        }
}

/* Decode (one token, so one row per expert): the experts computed here
 * as two passes over the threads — every expert's gate/up, then every
 * down — instead of two per expert; then the sums in ascending id, as
 * the loop below makes them: the same bits. *done false: not this path
 * (more tokens, or a matmul path without a multi form). */
static sw_status moe_decode(cpu_pool *pool, cpu_mm_scratch *ws, const cpu_moe_args *a,
                            uint32_t n_mat, bool *done) {
    const uint64_t ne = a->gate_up->ne[0], ff = a->down->ne[0];
    const uint32_t n_expert = a->n_expert;
    tensor_view gu[CPU_MM_MULTI_MAX], dn[CPU_MM_MULTI_MAX];
    const float *xs[CPU_MM_MULTI_MAX], *hs[CPU_MM_MULTI_MAX];
    float *gus[CPU_MM_MULTI_MAX], *yds[CPU_MM_MULTI_MAX];
    int32_t at[CPU_MM_MULTI_MAX];   /* expert e's row: at[...] by routing order */
    uint32_t n = 0;
    *done = false;
    if (a->n_tokens != 1 || a->k > CPU_MM_MULTI_MAX)
        return SW_OK;
    for (uint32_t e = 0; e < n_expert; e++) {
        const int32_t slot = a->slot_of ? a->slot_of[e] : (int32_t)e;
        bool routed = false;
        for (uint32_t j = 0; j < a->k; j++)
            routed |= a->ids[j] == (int32_t)e;
        if (slot < 0 || !routed)
            continue;
        gu[n] = expert_view(a->gate_up, n_mat, (uint32_t)slot);
        dn[n] = expert_view(a->down, n_mat, (uint32_t)slot);
        xs[n] = a->x;
        gus[n] = a->gu + (uint64_t)n * 2 * ff;
        hs[n] = gus[n];
        yds[n] = a->yd + (uint64_t)n * ne;
        at[n] = (int32_t)e;
        n++;
    }
    if (n < 2)   /* one expert or none: the loop is as quick */
        return SW_OK;
    bool gu_done = false, dn_done = false;
    SW_TRY(cpu_matmul_rows_multi(pool, ws, gu, n, xs, gus, &gu_done));
    if (!gu_done)
        return SW_OK;
    for (uint32_t i = 0; i < n; i++)   /* gelu(gate) * up, packed to the row's front */
        cpu_geglu(gus[i], gus[i] + ff, gus[i], ff);
    SW_TRY(cpu_matmul_rows_multi(pool, ws, dn, n, hs, yds, &dn_done));
    if (!dn_done) {   /* down's type has no multi form: one by one */
        for (uint32_t i = 0; i < n; i++)
            SW_TRY(cpu_matmul(pool, ws, &dn[i], hs[i], yds[i], 1));
    }
    uint32_t next = 0;
    for (uint32_t e = 0; e < n_expert; e++) {
        const int32_t slot = a->slot_of ? a->slot_of[e] : (int32_t)e;
        if (next < n && at[next] == (int32_t)e)
            moe_scatter(a, e, yds[next++]);
        else if (slot < 0 && a->accumulate)
            moe_scatter(a, e, NULL);
    }
    *done = true;
    return SW_OK;
}

sw_status cpu_moe_experts(cpu_pool *pool, cpu_mm_scratch *ws, const cpu_moe_args *a) {
    const uint64_t ne = a->gate_up->ne[0];
    const uint32_t n_expert = a->n_expert, n_mat = a->slot_of ? a->n_slot : n_expert;
    if (n_expert == 0 || n_mat == 0 || a->gate_up->ne[1] % n_mat || a->down->ne[1] % n_mat ||
        a->gate_up->n_bytes % n_mat || a->down->n_bytes % n_mat ||
        a->down->ne[1] / n_mat != ne || a->gate_up->ne[1] / n_mat != 2 * a->down->ne[0])
        return sw_errorf(SW_ERR_ARG, "moe experts: '%s' and '%s' are not %u experts of one "
                         "shape", a->gate_up->name ? a->gate_up->name : "?",
                         a->down->name ? a->down->name : "?", n_mat);
    const uint64_t ff = a->down->ne[0];
    if (a->slot_of == NULL || a->accumulate)
        memset(a->out, 0, (size_t)(a->n_tokens * ne * sizeof(float)));
    bool done = false;
    SW_TRY(moe_decode(pool, ws, a, n_mat, &done));
    if (done)
        return SW_OK;
    for (uint32_t e = 0; e < n_expert; e++) {
        const int32_t slot = a->slot_of ? a->slot_of[e] : (int32_t)e;
        if (slot < 0) { /* computed elsewhere */
            if (a->accumulate)
                moe_scatter(a, e, NULL);
            continue;
        }
        /* the tokens routed to e, their rows gathered into xg */
        uint32_t m = 0;
        for (uint32_t t = 0; t < a->n_tokens; t++)
            for (uint32_t j = 0; j < a->k; j++)
                if (a->ids[(uint64_t)t * a->k + j] == (int32_t)e)
                    memcpy(a->xg + (uint64_t)m++ * ne, a->x + (uint64_t)t * ne,
                           ne * sizeof(float));
        if (m == 0)
            continue;
        const tensor_view gu = expert_view(a->gate_up, n_mat, (uint32_t)slot);
        const tensor_view dn = expert_view(a->down, n_mat, (uint32_t)slot);
        SW_TRY(cpu_matmul(pool, ws, &gu, a->xg, a->gu, m));
        /* gelu(gate) * up, packed to rows of ff at the front of gu: row i's
         * result lands at or before its own inputs, after every earlier
         * row's have been read */
        for (uint32_t i = 0; i < m; i++)
            cpu_geglu(a->gu + (uint64_t)i * 2 * ff, a->gu + (uint64_t)i * 2 * ff + ff,
                      a->gu + (uint64_t)i * ff, ff);
        SW_TRY(cpu_matmul(pool, ws, &dn, a->gu, a->yd, m));
        /* each routed token's output += its weight x yd, in gathering order */
        moe_scatter(a, e, a->yd);
    }
    return SW_OK;
}
