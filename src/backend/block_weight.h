/*
 * block_weight.h — the roles of a transformer block's weights, apart from
 * the rest of block.h so that the model's tensor table (model/weights.h)
 * can name them without taking in the block's interface.
 */
#ifndef SW_BACKEND_BLOCK_WEIGHT_H
#define SW_BACKEND_BLOCK_WEIGHT_H

/* A block's weights by role, in the order layers are packed and loaded:
 * the experts last, so a layer without them is a prefix of its buffer. */
typedef enum block_weight {
    BW_ATTN_NORM,        /* (n_embd) f32 */
    BW_Q,                /* (n_head*hd rows, n_embd) */
    BW_K,                /* (n_head_kv*hd, n_embd) */
    BW_V,                /* (n_head_kv*hd, n_embd) */
    BW_O,                /* (n_embd, n_head*hd) */
    BW_Q_NORM,           /* (hd) f32, when qk_norm */
    BW_K_NORM,           /* (hd) f32, when qk_norm */
    BW_POST_ATTN_NORM,   /* (n_embd) f32, when post_norms */
    BW_FFN_NORM,         /* (n_embd) f32 */
    BW_GATE,             /* (n_ff, n_embd) */
    BW_UP,               /* (n_ff, n_embd) */
    BW_DOWN,             /* (n_embd, n_ff) */
    BW_POST_FFW_NORM,    /* (n_embd) f32, when post_norms */
    /* Gemma 4 (model/config.h's fields say when) */
    BW_LAYER_SCALE,      /* (1) f32: the layer's output multiplier, when layer_scale */
    BW_PLE_GATE,         /* (n_pl rows, n_embd): per-layer input gate, when PLE */
    BW_PLE_PROJ,         /* (n_embd, n_pl) */
    BW_PLE_NORM,         /* (n_embd) f32 */
    BW_FFN_NORM_2,       /* (n_embd) f32: the experts' input norm, when experts */
    BW_POST_FFW_NORM_1,  /* (n_embd) f32: after the dense MLP */
    BW_POST_FFW_NORM_2,  /* (n_embd) f32: after the experts */
    BW_ROUTER,           /* (n_expert, n_embd) */
    BW_ROUTER_SCALE,     /* (n_embd) f32 */
    BW_EXPERT_SCALE,     /* (n_expert) f32: each expert's output multiplier */
    BW_GATE_UP_EXPS,     /* (n_expert, 2 * n_ff_exp, n_embd): gate rows then up rows */
    BW_DOWN_EXPS,        /* (n_expert, n_embd, n_ff_exp) */
    BW_COUNT
} block_weight;

#endif
