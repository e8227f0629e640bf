/*
 * engine_internal.h — layouts of sw_engine and sw_session shared by the
 * engine's files and white-box tests.
 */
#ifndef SW_ENGINE_INTERNAL_H
#define SW_ENGINE_INTERNAL_H

#include "backend/cpu/threadpool.h"
#include "engine/kv.h"
#include "model/config.h"
#include "model/forward.h"
#include "model/model_internal.h"
#include "model/weights.h"

struct sw_engine {
    const sw_model *model;
    model_config config;
    model_weights weights;
    cpu_pool *pool;
    int n_threads;
    uint32_t n_ctx;
    uint32_t n_batch;
};

struct sw_session {
    sw_engine *engine;
    kv_cache kv;
    forward_scratch scratch;
    uint32_t pos;
    sw_progress_fn progress;
    void *progress_user;
    forward_layer_hook hook;  /* tests: per-layer residual stream */
    void *hook_user;
};

#endif
