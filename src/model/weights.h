/*
 * weights.h — a Gemma model's tensors bound by name, and the one table of
 * a transformer layer's tensors from which everything else is derived:
 * binding (here), packing a layer into one device buffer (engine/pack.c),
 * the planner's byte counts (plan/model_bytes.c) and the catalog's sizes
 * for models not on disk (plan/catalog.c).
 *
 * Matrices are views into the file mapping, in their stored type (never
 * dequantized up front). Norm vectors are small and are copied to owned
 * f32 arrays at bind time, holding the full multiplier (GGUF already
 * stores Gemma's 1 + w), so every reader sees the same convention; their
 * views are F32 rows of n elements.
 */
#ifndef SW_MODEL_WEIGHTS_H
#define SW_MODEL_WEIGHTS_H

#include <stddef.h>

#include "backend/block_weight.h"
#include "backend/tensor.h"
#include "format/gguf.h"
#include "model/config.h"

/* A dimension of the table in config terms (a layer's own where layers
 * differ). */
typedef enum model_dim {
    DIM_ONE, DIM_EMBD, DIM_FF, DIM_Q, DIM_KV, DIM_HEAD,
    DIM_PLE,        /* n_embd_per_layer */
    DIM_EXPERTS,    /* n_expert */
    DIM_FF_EXP,     /* n_ff_exp */
    DIM_FF_EXP2     /* 2 * n_ff_exp: an expert's gate and up rows */
} model_dim;

/* When a layer has a tensor. */
typedef enum model_need {
    NEED_ALWAYS, NEED_QK_NORM, NEED_POST_NORMS,
    NEED_K,          /* the layer computes its keys (owns a cache) */
    NEED_K_NORM,     /* ... and norms them (qk_norm) */
    NEED_V,          /* ... and values of their own (not keys as values) */
    NEED_LAYER_SCALE, NEED_PLE, NEED_EXPERTS
} model_need;

/* One tensor of a layer: its role, its GGUF name and its shape. */
typedef struct layer_tensor {
    block_weight role;
    const char *suffix;      /* "attn_q.weight" in "blk.N.attn_q.weight" */
    bool is_norm;            /* a small f32 vector of ne0 elements (norms, scales) */
    model_dim ne0, ne1, ne2; /* row length, rows, matrices (unused for vectors) */
    model_need need;
} layer_tensor;

/* The layer table, in role order (which is the packing order). */
const layer_tensor *model_layer_tensors(size_t *n);

/* Whether layer il of config c has tensor t, and a dimension's value
 * there. */
bool model_has_tensor(const model_config *c, uint32_t il, const layer_tensor *t);
uint64_t model_dim_value(const model_config *c, uint32_t il, model_dim d);

/* Elements of tensor t in layer il (ne0 * ne1 * ne2; ne0 for vectors). */
uint64_t model_tensor_elems(const model_config *c, uint32_t il, const layer_tensor *t);

/* Whether role is one of a layer's experts (packed last, so a layer
 * without them is a prefix of its buffer). */
bool model_is_expert(block_weight role);

/* The longest matrix row (elements) of any weight: what kernel scratch is
 * sized for. */
uint64_t model_max_row_elems(const model_config *c);

typedef struct layer_weights {
    tensor_view t[BW_COUNT];   /* by role; absent norms have data NULL */
} layer_weights;

typedef struct model_weights {
    tensor_view tok_embd;      /* (n_vocab, n_embd) */
    tensor_view output;        /* (n_vocab, n_embd): tok_embd when tied */
    tensor_view output_norm;   /* (n_embd) f32 */
    /* Gemma 4's per-layer embeddings (unbound without): the table, looked
     * up by token (n_vocab rows of n_layer x n_pl), the projection of the
     * embedded token to the same width and its norm (n_pl) f32 */
    tensor_view ple_embd, ple_proj, ple_proj_norm;
    layer_weights *layers;     /* (n_layer) */
    float *norm_arena;         /* owns every norm vector above */
} model_weights;

/* Binds every tensor the config needs, checking names, shapes and types.
 * Errors: SW_ERR_FORMAT (missing tensor or wrong shape: message names it),
 * SW_ERR_UNSUPPORTED (a type without kernels), SW_ERR_OOM_HOST. */
sw_status model_weights_bind(const gguf_file *f, const model_config *c, model_weights *out);

/* Frees what bind allocated. Accepts a zeroed struct. */
void model_weights_free(model_weights *w);

#endif
