/*
 * weights.h — a Gemma model's tensors bound by name to named fields.
 *
 * Matrices are views into the file mapping, in their stored type (never
 * dequantized up front). Norm vectors are small and are copied to owned
 * f32 arrays at bind time, holding the full multiplier (GGUF already
 * stores Gemma's 1 + w), so every reader sees the same convention.
 */
#ifndef SW_MODEL_WEIGHTS_H
#define SW_MODEL_WEIGHTS_H

#include "backend/tensor.h"
#include "format/gguf.h"
#include "model/config.h"

typedef struct layer_weights {
    float *attn_norm;          /* (n_embd) */
    tensor_view wq;            /* (n_head*hd rows, n_embd cols) */
    tensor_view wk;            /* (n_head_kv*hd, n_embd) */
    tensor_view wv;            /* (n_head_kv*hd, n_embd) */
    tensor_view wo;            /* (n_embd, n_head*hd) */
    float *q_norm;             /* (hd), when qk_norm */
    float *k_norm;             /* (hd), when qk_norm */
    float *post_attn_norm;     /* (n_embd), when post_norms */
    float *ffn_norm;           /* (n_embd) */
    tensor_view w_gate;        /* (n_ff, n_embd) */
    tensor_view w_up;          /* (n_ff, n_embd) */
    tensor_view w_down;        /* (n_embd, n_ff) */
    float *post_ffw_norm;      /* (n_embd), when post_norms */
} layer_weights;

typedef struct model_weights {
    tensor_view tok_embd;      /* (n_vocab, n_embd) */
    tensor_view output;        /* (n_vocab, n_embd): tok_embd when tied */
    float *output_norm;        /* (n_embd) */
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
