/*
 * engine_internal.h — layouts of sw_engine and sw_session shared by the
 * engine's files (engine.c: planning and creation; load.c: allocation and
 * weight loading; host_weights.c: converted weights and the pinned copy of
 * streamed layers; pinned.c: page-locked host memory; ring.c: streamed
 * layers; session.c: evaluation) and by white-box tests.
 */
#ifndef SW_ENGINE_INTERNAL_H
#define SW_ENGINE_INTERNAL_H

#include <stdbool.h>

#include "backend/backend.h"
#include "backend/cpu/threadpool.h"
#include "engine/kv.h"
#include "engine/pack.h"
#include "model/config.h"
#include "model/forward.h"
#include "model/model_internal.h"
#include "model/weights.h"
#include "plan/plan.h"

#define ENGINE_MAX_SLOTS 8

/* A device allocation made for a plan buffer, to free in order. */
typedef struct engine_alloc {
    void *ptr;
} engine_alloc;

/* A page-locked host buffer (pinned.c): from the device backend's pinned
 * allocator when it has one, else aligned memory locked with mlock — best
 * effort: when the lock is refused the buffer stays, pageable, and `why`
 * says so. */
typedef struct engine_pinned {
    void *ptr;
    uint64_t bytes;
    bool locked;                       /* page-locked */
    bool from_backend;                 /* backend's host_alloc_pinned */
    char why[256];                     /* when not locked: the reason */
} engine_pinned;

/* Host memory the plan gives the weights (host_weights.c). */
typedef struct engine_host_weights {
    uint8_t *arena;                    /* BUF_CONVERTED: conversions kept on the host */
    uint64_t arena_bytes;
    uint8_t *staging;                  /* BUF_STAGING: converts resident layers at load */
    uint64_t staging_bytes;
    float *row;                        /* (widest row) conversion scratch, load only */
    engine_pinned pinned;              /* the pinned tier: streamed layers, packed */
} engine_host_weights;

typedef struct engine_ring {
    uint32_t n_slots;                  /* K */
    uint64_t slot_bytes;
    void *slot[ENGINE_MAX_SLOTS];      /* device buffers */
    backend_event *ready[ENGINE_MAX_SLOTS];
    int32_t holds[ENGINE_MAX_SLOTS];   /* layer index in each slot, -1 none */
    uint32_t *streamed;                /* (n_streamed) layer indices, in order */
    uint32_t n_streamed;
    uint64_t seq;                      /* streamed-layer computations so far */
    layer_weights slot_views;          /* views of the layer being computed */
    sw_status fill_error;              /* a failed refill (reported at acquire) */
} engine_ring;

struct sw_engine {
    const sw_model *model;
    model_config config;
    model_weights file_weights;        /* views of the mapping + norm arena (bind) */
    model_weights weights;             /* what the engine computes and uploads from:
                                        * file_weights' views, re-pointed per plan at
                                        * converted or pinned copies (host_weights.c) */
    uint32_t convert_type;             /* --weights: SW_TYPE_*; SW_TYPE_COUNT = as stored */
    plan_kv_type kv_type;              /* --kv-type */
    engine_host_weights hw;
    cpu_pool *pool;
    backend *host;                     /* cpu backend */
    backend *device;                   /* sim/cuda, or NULL */
    int n_threads;
    uint32_t n_ctx;
    uint32_t n_batch;
    plan *plan;                        /* what is being executed */
    layer_pack *packs;                 /* (n_layer) packing of each layer */
    layer_weights *dev_layers;         /* (n_layer) views of resident copies */
    engine_alloc *allocs;              /* device buffers, plan order */
    uint32_t n_allocs;
    engine_ring ring;
    tensor_view lm_head_dev;           /* LM head copy when resident */
    float *output_norm_dev;
    float *logits_dev;                 /* (n_batch, n_vocab) on the device */
    kv_cache kv;
    void *host_kv;                     /* host arena for KV on the host */
    void *host_scratch;                /* host activations */
    forward_side side[2];
    bool has_session;
    uint32_t n_replans;
    char notes[1024];
    /* measurements for the report */
    double prefill_s, decode_s;
    uint64_t n_prefill_tokens, n_decode_tokens;
};

struct sw_session {
    sw_engine *engine;
    uint32_t pos;
    sw_progress_fn progress;
    void *progress_user;
    forward_layer_hook hook;  /* tests: per-layer residual stream */
    void *hook_user;
};

/* load.c: allocates the plan's device buffers and host buffers, copies
 * resident weights, starts the ring. On failure frees what it made. */
sw_status engine_load(sw_engine *e, const sw_engine_options *opt);
void engine_unload(sw_engine *e);

/* host_weights.c: per the plan, points e->weights at the mapping, at
 * weights converted into the host arena, or at the pinned copy of each
 * streamed layer (allocating those), and builds every layer's pack. */
sw_status host_weights_load(sw_engine *e);
/* Converts resident layer il's changing matrices into the staging buffer
 * and rebuilds its pack, just before its upload. */
sw_status host_weights_stage(sw_engine *e, uint32_t il);
/* After the uploads: frees the staging buffer and the scratch. */
void host_weights_end_load(sw_engine *e);
void host_weights_free(sw_engine *e);

/* pinned.c. Errors: SW_ERR_OOM_HOST, or the backend allocator's. */
sw_status pinned_alloc(backend *device, uint64_t bytes, engine_pinned *out);
void pinned_free(backend *device, engine_pinned *p);

/* ring.c */
sw_status ring_start(sw_engine *e);
sw_status ring_acquire(void *user, uint32_t il, const layer_weights **w, int *side);
void ring_release(void *user, uint32_t il);

#endif
