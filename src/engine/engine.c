/*
 * engine.c — sw_engine (configuration, bound weights, thread pool) and
 * sw_session (KV cache, activations, chunked evaluation). Everything is
 * sized when created; evaluation allocates nothing.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine_internal.h"
#include "util/error.h"

#define DEFAULT_CTX 4096
#define DEFAULT_BATCH 64

sw_engine_options sw_engine_options_default(void) {
    return (sw_engine_options){0, 0, 0};
}

static int default_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

static sw_status resolve_options(sw_engine *e, const sw_engine_options *opt) {
    const model_config *c = &e->config;
    if (opt->n_threads < 0 || opt->n_threads > 256)
        return sw_errorf(SW_ERR_ARG, "thread count %d is out of range (1..256)", opt->n_threads);
    e->n_threads = opt->n_threads ? opt->n_threads : default_threads();
    e->n_ctx = opt->n_ctx ? opt->n_ctx
                          : (c->n_ctx_train < DEFAULT_CTX ? c->n_ctx_train : DEFAULT_CTX);
    if (e->n_ctx > c->n_ctx_train)
        return sw_errorf(SW_ERR_ARG, "context %u exceeds the model's trained context of %u",
                         e->n_ctx, c->n_ctx_train);
    e->n_batch = opt->n_batch ? opt->n_batch : DEFAULT_BATCH;
    if (e->n_batch > e->n_ctx)
        e->n_batch = e->n_ctx;
    if (e->n_batch > 4096)
        return sw_errorf(SW_ERR_ARG, "prefill chunk %u is too large (at most 4096)", e->n_batch);
    return SW_OK;
}

sw_status sw_engine_create(const sw_model *model, const sw_engine_options *opt,
                           sw_engine **out) {
    sw_engine_options defaults = sw_engine_options_default();
    sw_engine *e = NULL;
    sw_status st;
    if (model == NULL || out == NULL)
        return sw_errorf(SW_ERR_ARG, "sw_engine_create: NULL argument");
    *out = NULL;
    if (opt == NULL)
        opt = &defaults;
    e = calloc(1, sizeof *e);
    if (e == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory creating the engine");
    e->model = model;
    if ((st = model_config_from_gguf(model->gguf, &e->config)) != SW_OK ||
        (st = resolve_options(e, opt)) != SW_OK ||
        (st = model_weights_bind(model->gguf, &e->config, &e->weights)) != SW_OK ||
        (st = cpu_pool_create(e->n_threads, &e->pool)) != SW_OK)
        goto fail;
    *out = e;
    return SW_OK;
fail:
    sw_engine_destroy(e);
    return st;
}

void sw_engine_destroy(sw_engine *e) {
    if (e == NULL)
        return;
    cpu_pool_destroy(e->pool);
    model_weights_free(&e->weights);
    free(e);
}

uint32_t sw_engine_n_ctx(const sw_engine *e) { return e ? e->n_ctx : 0; }
uint32_t sw_engine_n_vocab(const sw_engine *e) { return e ? e->config.n_vocab : 0; }

sw_status sw_session_create(sw_engine *e, sw_session **out) {
    sw_session *s;
    sw_status st;
    if (e == NULL || out == NULL)
        return sw_errorf(SW_ERR_ARG, "sw_session_create: NULL argument");
    *out = NULL;
    s = calloc(1, sizeof *s);
    if (s == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory creating a session");
    s->engine = e;
    if ((st = kv_cache_create(&e->config, e->n_ctx, e->n_batch, &s->kv)) != SW_OK ||
        (st = forward_scratch_create(&e->config, e->n_batch, e->n_ctx, e->n_threads,
                                     &s->scratch)) != SW_OK)
        goto fail;
    *out = s;
    return SW_OK;
fail:
    sw_session_destroy(s);
    return st;
}

void sw_session_destroy(sw_session *s) {
    if (s == NULL)
        return;
    kv_cache_free(&s->kv);
    forward_scratch_free(&s->scratch);
    free(s);
}

void sw_session_set_progress(sw_session *s, sw_progress_fn fn, void *user) {
    if (s == NULL)
        return;
    s->progress = fn;
    s->progress_user = user;
}

uint32_t sw_session_pos(const sw_session *s) { return s ? s->pos : 0; }

sw_status sw_session_truncate(sw_session *s, uint32_t pos) {
    if (s == NULL || pos > s->pos)
        return sw_errorf(SW_ERR_ARG, "cannot truncate the session to position %u", pos);
    /* A sliding-window layer's ring (W + n_batch - 1 rows) has overwritten
     * positions older than the last n_batch written beyond pos once more
     * than n_batch tokens are dropped; those keys would be needed again. */
    bool has_ring = false;
    for (uint32_t il = 0; il < s->kv.n_layer; il++)
        has_ring = has_ring || s->kv.layers[il].ring != 0;
    if (has_ring && s->pos - pos > s->engine->n_batch)
        return sw_errorf(SW_ERR_ARG, "cannot rewind %u tokens (at most %u with sliding-window "
                         "layers); start a new session", s->pos - pos, s->engine->n_batch);
    s->pos = pos;
    return SW_OK;
}

sw_status sw_session_eval(sw_session *s, const int32_t *ids, size_t n, float *logits,
                          int all_logits) {
    if (s == NULL || (ids == NULL && n > 0))
        return sw_errorf(SW_ERR_ARG, "sw_session_eval: NULL argument");
    sw_engine *e = s->engine;
    if (n > e->n_ctx - s->pos)
        return sw_errorf(SW_ERR_ARG, "%zu tokens do not fit: %u of the %u-token context are "
                         "used, %u free (raise -c or shorten the prompt)", n, s->pos,
                         e->n_ctx, e->n_ctx - s->pos);
    for (size_t done = 0; done < n;) {
        uint32_t chunk = (uint32_t)(n - done < e->n_batch ? n - done : e->n_batch);
        bool last = done + chunk == n;
        float *out = NULL;
        if (logits != NULL && all_logits)
            out = logits + done * e->config.n_vocab;
        else if (logits != NULL && last)
            out = logits;
        forward_args a = {
            .config = &e->config, .weights = &e->weights, .kv = &s->kv,
            .scratch = &s->scratch, .pool = e->pool, .ids = ids + done, .pos0 = s->pos,
            .n_tokens = chunk, .logits = out, .all_logits = all_logits != 0,
            .hook = s->hook, .hook_user = s->hook_user,
        };
        sw_status st = model_forward(&a);
        if (st != SW_OK)
            return st;
        s->pos += chunk;
        done += chunk;
        if (s->progress)
            s->progress(s->progress_user, done, n);
    }
    return SW_OK;
}
