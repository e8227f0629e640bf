/*
 * plan.h — the placement plan: where every byte of a model and its
 * workload lives (device, pinned host, pageable host, disk), computed before
 * anything is allocated, with predicted memory per tier and predicted speed.
 *
 * plan_build() is a pure function: no I/O, no allocation beyond *out,
 * deterministic (same inputs, same plan). The engine executes a plan
 * exactly: it allocates on the device precisely the plan's device buffers
 * (same sizes, same purposes) and nothing else. Sizes that both sides need
 * come from shared functions (the layer table of model/weights.h,
 * kv_layer_rows(), act_layout_init()) so they cannot drift apart.
 *
 * Placements of a transformer layer's weights:
 *   RESIDENT  copied to the device once at load;
 *   STREAMED  kept in pinned/host memory, copied into one of `ring_slots`
 *             device slots ahead of use (prefetch ring_slots - 1 ahead);
 *   HOST      computed by the CPU backend where the weights live.
 * A device layer's experts (Gemma 4's mixture of experts) may stay on the
 * host (experts_host): the device holds the rest of the layer, the host
 * computes the experts between its two halves.
 */
#ifndef SW_PLAN_PLAN_H
#define SW_PLAN_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "model/config.h"
#include "spillway.h"

#define PLAN_MAX_LAYERS MODEL_MAX_LAYERS
#define PLAN_MAX_BUFFERS (2 * PLAN_MAX_LAYERS + 64)
#define PLAN_MAX_NOTES 16
#define PLAN_TENSOR_ALIGN 256   /* each tensor in a device buffer starts here */

typedef enum plan_place {
    PLACE_AUTO = 0,  /* pins only: the planner decides */
    PLACE_RESIDENT,
    PLACE_STREAMED,
    PLACE_HOST
} plan_place;

typedef enum plan_tier { TIER_DEVICE, TIER_PINNED, TIER_HOST, TIER_DISK, TIER_COUNT } plan_tier;

typedef enum plan_kv_type { PLAN_KV_F32, PLAN_KV_F16, PLAN_KV_BF16 } plan_kv_type;

/* --weights on a model file: what the engine converts matrices to at load.
 * Parsed once from the flag (plan_parse_weights), then carried as this
 * value; plan_convert_name() gives the name plans show ("BF16-DEQUANT"). */
typedef enum plan_convert {
    PLAN_CONVERT_NONE = 0,      /* as stored */
    PLAN_CONVERT_BF16,          /* f32/f16 matrices to bf16 (quantized kept) */
    PLAN_CONVERT_F16,           /* f32/bf16 matrices to f16 (quantized kept) */
    PLAN_CONVERT_Q8_0,          /* float matrices to q8_0 (quantized kept) */
    PLAN_CONVERT_BF16_DEQUANT,  /* every matrix to bf16, quantized ones dequantized */
    PLAN_CONVERT_COUNT
} plan_convert;

/* What the planner knows of a model: shapes and byte sizes, no data.
 * Built from an opened file (engine) or from the catalog (plan -m NAME). */
typedef struct plan_model {
    char name[64];                          /* "gemma3-27b", or the file name */
    char weight_type[16];                   /* "Q4_K_M", "BF16", ... (display) */
    model_config config;                    /* dims, window, pattern, ... */
    uint64_t layer_bytes[PLAN_MAX_LAYERS];  /* one layer's tensors as held in
                                             * memory, each padded to
                                             * PLAN_TENSOR_ALIGN, norms as f32 */
    /* the part of layer_bytes in each decode type (quant/types.h): decode
     * kernels stream each type at its own rate; the rest (norms, other
     * types) at the memory rate */
    uint64_t layer_type_bytes[PLAN_MAX_LAYERS][SW_DOCTOR_DECODE_TYPES];
    /* the part of layer_bytes that is experts (the end of the packed
     * layer): a token reads only those it is routed to */
    uint64_t layer_expert_bytes[PLAN_MAX_LAYERS];
    uint64_t embd_bytes;                    /* token embedding matrix */
    uint64_t output_bytes;                  /* LM head (== embd_bytes if tied) */
    uint64_t output_type_bytes[SW_DOCTOR_DECODE_TYPES]; /* the LM head, likewise */
    bool tied;                              /* LM head is the embedding */
    uint64_t output_norm_bytes;             /* final norm (f32) */
    /* Gemma 4's per-layer embeddings (0 without): the table, only ever
     * looked up (n_layer x n_pl values per token), and what turns each
     * token's embedding into its per-layer part (per_layer_model_proj and
     * its norm), computed on the host beside the lookup */
    uint64_t ple_bytes;
    uint64_t ple_proj_bytes;
    uint64_t file_bytes;                    /* on disk (0 for catalog models) */
    /* --weights on a model file: matrices converted at load. The sizes
     * above are then the converted ones; the parts below are held in
     * memory the engine allocates (not the mapping). All 0 when the
     * weights are used as stored. */
    plan_convert convert;                   /* PLAN_CONVERT_NONE: as stored */
    uint64_t layer_conv_bytes[PLAN_MAX_LAYERS]; /* converted part of layer_bytes */
    uint64_t embd_conv_bytes;               /* converted embedding (padded) */
    uint64_t output_conv_bytes;             /* converted LM head when untied */
    uint64_t stored_bytes;                  /* plan_model_total_bytes as stored */
    uint32_t n_converted, n_kept;           /* matrices converted / kept (quantized) */
} plan_model;

typedef struct plan_budget {
    bool has_device;                /* false: no accelerator, all host */
    char device_name[64];           /* "sim", "cuda:0 NVIDIA H200" */
    uint64_t device_bytes;          /* usable: min(free, --device-mem) */
    uint64_t device_total_bytes;    /* the card's total (display) */
    uint64_t host_bytes;            /* usable: min(MemAvailable, --host-mem) */
    uint64_t pinned_limit_bytes;    /* page-lock limit; UINT64_MAX if none */
    double sim_link_Bps;            /* sim: the link cap it is made with; 0 = memcpy */
    char backend[16];               /* registry name the engine creates: "cpu", "sim" */
    uint64_t drafter_bytes;         /* device bytes a drafter takes beside the plan
                                     * (already off device_bytes); 0: none */
    char drafter[64];               /* its name */
} plan_budget;

/* Rates in bytes/s and flop/s: doctor's measurements or stated defaults. */
typedef struct plan_rates {
    double h2d_pinned_Bps;
    double h2d_pageable_Bps;
    double host_mem_Bps;            /* host kernels' weight-streaming rate */
    double device_mem_Bps;
    double disk_read_Bps;
    double host_flops;
    double device_flops;
    double device_op_s;             /* least seconds per device op (launch and
                                     * dispatch); 0 for the sim and pjrt */
    /* What the decode matmul kernels stream weights of each decode type
     * at (one token; type_decode_type(i) in quant/types.h). 0: not
     * measured, the memory rate above stands in. */
    double host_decode_Bps[SW_DOCTOR_DECODE_TYPES];
    double device_decode_Bps[SW_DOCTOR_DECODE_TYPES];
    bool measured;                  /* false: defaults (said in the plan) */
} plan_rates;

typedef struct plan_workload {
    uint32_t n_ctx;                 /* context length */
    uint32_t n_seq;                 /* batch: sequences decoded together */
    uint32_t n_batch;               /* prefill chunk, tokens per pass */
    uint32_t n_threads;             /* host threads (scratch sizing) */
    plan_kv_type kv_type;
    bool exact_dots;                /* --cpu-dots f32: host matmuls take f32 activations */
    bool bf16_dots;                 /* --cpu-dots bf16: bf16 weights take bf16 activations */
} plan_workload;

/* --place / -ngl: parts pinned by hand; PLACE_AUTO elsewhere. */
typedef struct plan_pins {
    plan_place layer[PLAN_MAX_LAYERS];
    plan_place lm_head;             /* AUTO, RESIDENT (device) or HOST */
    /* a layer's experts (Gemma 4): AUTO, or HOST (computed on the host
     * while the rest of a device layer stays on the device) */
    plan_place experts[PLAN_MAX_LAYERS];
    /* a split over several devices (split.h): 0 any, else 1 + the device
     * (in the split's order) that must hold the layer */
    uint8_t device[PLAN_MAX_LAYERS];
} plan_pins;

#define PLAN_PIN_MAX_DEVICES 8  /* dev0..dev7 (split.h's PLAN_MAX_DEVICES) */

/* What a buffer is for; the engine allocates by kind, in plan order. */
typedef enum plan_buffer_kind {
    BUF_LAYER,        /* a resident layer's packed weights (layer = index) */
    BUF_RING_SLOT,    /* one ring slot (layer = slot index) */
    BUF_KV,           /* a layer's keys + values (layer = index) */
    BUF_ACTIVATIONS,  /* act_layout_init()'s bytes for n_tok tokens */
    BUF_LM_HEAD,      /* output matrix + final norm, each plan_padded */
    BUF_LOGITS,       /* n_batch * n_vocab f32 */
    BUF_OTHER,        /* host/pinned/disk bookkeeping entries; "pinned layer
                       * N" (layer = N) is streamed layer N's packed copy */
    BUF_CONVERTED,    /* host: --weights conversions the host keeps (embedding,
                       * host and unpinned streamed layers), one arena */
    BUF_STAGING,      /* host, load only: converts one resident layer at a time */
    BUF_SCRATCH,      /* host: the cpu kernels' own scratch (attention rows,
                       * matmul tiles), made by the cpu backend */
    BUF_EXPERT_CACHE  /* device: every cached layer's expert slots, and the
                       * cache's tables (plan/expert_plan.h) */
} plan_buffer_kind;

typedef struct plan_buffer {
    plan_buffer_kind kind;
    char purpose[48];               /* "layer 3 weights", "ring slot 0",
                                     * "kv layer 5", "activations", "lm head" */
    plan_tier tier;
    uint64_t bytes;
    int32_t layer;                  /* -1 when not per layer */
} plan_buffer;

typedef struct plan {
    plan_model model;
    plan_budget budget;
    plan_workload workload;
    plan_rates rates;
    plan_place layer_place[PLAN_MAX_LAYERS];   /* RESIDENT / STREAMED / HOST */
    plan_tier kv_tier[PLAN_MAX_LAYERS];        /* DEVICE or HOST */
    uint32_t kv_rows[PLAN_MAX_LAYERS];         /* kv_layer_rows(), per sequence */
    plan_place lm_head_place;                  /* RESIDENT or HOST */
    bool experts_host[PLAN_MAX_LAYERS];        /* a device layer whose experts the
                                                * host computes from the mapping: its
                                                * device bytes leave them out */
    uint32_t ring_slots;                       /* 0 when nothing streams, else >= 2 */
    uint64_t ring_slot_bytes;                  /* largest streamed layer */
    uint32_t n_buffers;
    plan_buffer buffers[PLAN_MAX_BUFFERS];     /* every buffer, every tier */
    uint64_t tier_bytes[TIER_COUNT];           /* totals per tier */
    double prefill_tokens_per_s;
    double decode_tokens_per_s;
    char prefill_bottleneck[24];               /* "compute", "link", "host memory", ... */
    char decode_bottleneck[24];
    /* Added by the planner for the engine and the printers: */
    bool stream_pinned;                        /* streamed layers are copied once
                                                * into pinned host buffers (h2d at
                                                * the pinned rate); else read from
                                                * the file mapping (pageable) */
    uint32_t n_tok;                            /* tokens per pass the buffers are
                                                * sized for: max(n_batch, n_seq) */
    uint64_t disk_bytes_per_token;             /* mapped bytes the host budget
                                                * cannot cache: re-read per token */
    /* the expert cache (issue 38; plan/expert_plan.h): expert_slots per
     * device layer whose experts are on the host; 0: none */
    uint32_t expert_slots, expert_layers;
    uint64_t expert_cache_bytes;               /* its BUF_EXPERT_CACHE */
    uint8_t expert_policy, expert_copy;        /* expert_policy; expert_copy_mode */
    bool expert_prefetch;                      /* guess the next layer's experts */
    /* the cost model's seconds for a device layer's experts computed on
     * the host, per pass (PASS_DECODE, PASS_PREFILL; 0: not experts_host),
     * and the pass's tokens: what the cache's prediction starts from */
    double expert_host_s[2][PLAN_MAX_LAYERS];
    double pass_tokens[2];
    double expert_hit_rate;                    /* the predictions' share of hits */
    bool expert_hit_given;                     /* ... from --expert-hit-rate */
    double decode_tokens_per_s_uncached;       /* the predictions without the cache */
    double prefill_tokens_per_s_uncached;
    char better[160];                          /* a cheaper change that would
                                                * speed up, or "" */
    uint32_t n_notes;
    char notes[PLAN_MAX_NOTES][160];           /* why each choice was made */
} plan;

/* Bytes of one layer's tensors as the engine holds them in one buffer:
 * each tensor's bytes rounded up to PLAN_TENSOR_ALIGN. */
uint64_t plan_padded(uint64_t bytes);

/* Builds the plan. On failure returns SW_ERR_OOM_DEVICE or SW_ERR_OOM_HOST
 * with a message naming the short tier, the bytes missing and the cheapest
 * changes that would fit (each with its numbers), or SW_ERR_ARG for pins
 * that cannot hold. Pure and deterministic. */
sw_status plan_build(const plan_model *model, const plan_budget *budget,
                     const plan_rates *rates, const plan_workload *work,
                     const plan_pins *pins, plan *out);

#endif
