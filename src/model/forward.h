/*
 * forward.h — the Gemma forward pass over a chunk of tokens (prefill or a
 * single decode step), layer by layer on whichever backend the caller's
 * placement names for that layer.
 *
 * Two "sides" can compute: the host (CPU backend, weights in the file
 * mapping) and the device (sim or cuda backend, weights resident or in a
 * ring slot). The residual stream moves between them only when consecutive
 * layers are on different sides (n_tokens x n_embd floats). The caller owns
 * every buffer: weights (views), KV rows and the scratch below, all sized
 * once when a session is created; nothing here allocates. Layers read like
 * shared/reference/gemma-facts.md §1.1.
 */
#ifndef SW_MODEL_FORWARD_H
#define SW_MODEL_FORWARD_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
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
    int32_t *pos;            /* (n_batch) positions of the chunk */
} forward_scratch;

/* Bytes of one side's activations for the workload — the "activations"
 * buffer the planner counts and the engine allocates. */
uint64_t forward_scratch_bytes(const model_config *c, uint32_t n_batch, uint32_t n_ctx,
                               uint32_t n_threads);

/* Carves the scratch out of `mem` (forward_scratch_bytes() bytes). */
void forward_scratch_init(const model_config *c, uint32_t n_batch, uint32_t n_ctx,
                          uint32_t n_threads, void *mem, forward_scratch *out);

/* Called after each layer with the residual stream (n_tokens, n_embd) in
 * host memory; layer -1 is the scaled embedding. For layer-by-layer tests. */
typedef void (*forward_layer_hook)(void *user, int layer, const float *x,
                                   uint32_t n_tokens, uint32_t n_embd);

enum { SIDE_HOST = 0, SIDE_DEVICE = 1 };

typedef struct forward_side {
    backend *be;             /* NULL when this side does not exist */
    forward_scratch scratch; /* activations in that backend's memory */
} forward_side;

/* Where and with which weights layer il runs; supplied by the engine, which
 * may have to wait for a ring slot (acquire) and refill it (release). */
typedef struct layer_source {
    sw_status (*acquire)(void *user, uint32_t il, const layer_weights **w, int *side);
    void (*release)(void *user, uint32_t il);
    void *user;
} layer_source;

typedef struct forward_args {
    const model_config *config;
    const model_weights *host_weights;  /* embedding lookup (always host) */
    const tensor_view *lm_head;         /* output matrix, on lm_side */
    const float *output_norm;           /* on lm_side */
    int lm_side;
    kv_cache *kv;                       /* layers' rows on their layer's side */
    forward_side *side;                 /* [2]: SIDE_HOST, SIDE_DEVICE */
    layer_source layers;
    const int32_t *ids;      /* (n_tokens) token ids, each < n_vocab */
    uint32_t pos0;           /* position of ids[0]; pos0 + n_tokens <= n_ctx */
    uint32_t n_tokens;       /* 1..n_batch */
    float *logits;           /* host: NULL, or (n_vocab) for the last token, or
                              * (n_tokens, n_vocab) when all_logits */
    float *logits_dev;       /* device staging for logits when lm_side is the
                              * device: (n_batch, n_vocab) */
    bool all_logits;
    forward_layer_hook hook; /* optional */
    void *hook_user;
} forward_args;

/* Runs the chunk, writing its keys/values into the cache and the logits.
 * Errors: SW_ERR_ARG (bad id or position), SW_ERR_UNSUPPORTED, backend
 * errors (SW_ERR_DEVICE). */
sw_status model_forward(const forward_args *a);

#endif
