/*
 * forward.h — the Gemma forward pass over a chunk of tokens (prefill or a
 * single decode step) on the CPU kernels.
 *
 * The caller owns every buffer: weights (views), the KV cache and the
 * scratch below, all sized once when a session is created; nothing here
 * allocates. Layers read like shared/reference/gemma-facts.md §1.1.
 */
#ifndef SW_MODEL_FORWARD_H
#define SW_MODEL_FORWARD_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/cpu/threadpool.h"
#include "engine/kv.h"
#include "model/config.h"
#include "model/weights.h"

typedef struct forward_scratch {
    uint32_t n_batch;        /* most tokens per call */
    float *x;                /* (n_batch, n_embd) residual stream */
    float *h;                /* (n_batch, n_embd) normed input / branch output */
    float *q;                /* (n_batch, n_head * hd) */
    float *k;                /* (n_batch, n_head_kv * hd) */
    float *v;                /* (n_batch, n_head_kv * hd) */
    float *att;              /* (n_batch, n_head * hd) attention output */
    float *gate;             /* (n_batch, n_ff) */
    float *up;               /* (n_batch, n_ff) */
    float *attn_scratch;     /* (n_threads, n_ctx) softmax rows */
    int32_t *pos;            /* (n_batch) */
    float *arena;            /* owns all of the above */
} forward_scratch;

sw_status forward_scratch_create(const model_config *c, uint32_t n_batch, uint32_t n_ctx,
                                 int n_threads, forward_scratch *out);
void forward_scratch_free(forward_scratch *s);

/* Called after each layer with the residual stream (n_tokens, n_embd);
 * layer -1 is the scaled embedding. For tests that compare layer by layer. */
typedef void (*forward_layer_hook)(void *user, int layer, const float *x,
                                   uint32_t n_tokens, uint32_t n_embd);

typedef struct forward_args {
    const model_config *config;
    const model_weights *weights;
    kv_cache *kv;
    forward_scratch *scratch;
    cpu_pool *pool;
    const int32_t *ids;      /* (n_tokens) token ids, each < n_vocab */
    uint32_t pos0;           /* position of ids[0]; pos0 + n_tokens <= n_ctx */
    uint32_t n_tokens;       /* 1..n_batch */
    float *logits;           /* NULL, or (n_vocab) for the last token, or
                              * (n_tokens, n_vocab) when all_logits */
    bool all_logits;
    forward_layer_hook hook; /* optional */
    void *hook_user;
} forward_args;

/* Runs the chunk, writing its keys/values into the cache and the logits.
 * Errors: SW_ERR_ARG (bad id or position), SW_ERR_UNSUPPORTED. */
sw_status model_forward(const forward_args *a);

#endif
