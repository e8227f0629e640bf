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

#include "backend/block.h"
#include "backend/tensor.h"
#include "format/gguf.h"
#include "model/config.h"

/* A dimension of the table in config terms. */
typedef enum model_dim { DIM_EMBD, DIM_FF, DIM_Q, DIM_KV, DIM_HEAD } model_dim;

/* When a config has a tensor. */
typedef enum model_need { NEED_ALWAYS, NEED_QK_NORM, NEED_POST_NORMS } model_need;

/* One tensor of a layer: its role, its GGUF name and its shape. */
typedef struct layer_tensor {
    block_weight role;
    const char *suffix;      /* "attn_q" in "blk.N.attn_q.weight" */
    bool is_norm;            /* an f32 vector of ne0 elements */
    model_dim ne0, ne1;      /* row length, rows (ne1 unused for norms) */
    model_need need;
} layer_tensor;

/* The layer table, in role order (which is the packing order). */
const layer_tensor *model_layer_tensors(size_t *n);

/* Whether a layer of config c has tensor t, and a dimension's value. */
bool model_has_tensor(const model_config *c, const layer_tensor *t);
uint64_t model_dim_value(const model_config *c, model_dim d);

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
