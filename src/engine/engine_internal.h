/*
 * engine_internal.h — layouts of sw_engine and sw_session shared by the
 * engine's files (engine.c: planning and creation; load.c: allocation and
 * weight loading; ring.c: streamed layers; session.c: evaluation) and by
 * white-box tests.
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
    model_weights weights;             /* host views (mapping + norm arena) */
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

/* ring.c */
sw_status ring_start(sw_engine *e);
sw_status ring_acquire(void *user, uint32_t il, const layer_weights **w, int *side);
void ring_release(void *user, uint32_t il);

#endif
