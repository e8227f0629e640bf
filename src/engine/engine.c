/*
 * engine.c — sw_engine: executes a plan as given. It checks that the plan
 * was made for this model (to the byte: the same packed layer sizes), takes
 * the workload, KV and weight types from it, creates the plan's backends
 * through the registry by name, and has load.c allocate exactly the plan.
 * It never plans: a refused allocation is an error that says which buffer,
 * and re-planning belongs to the layer above (runtime/launch.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/registry.h"
#include "engine/engine_internal.h"
#include "plan/plan_api.h"
#include "plan/split.h"
#include "quant/types.h"
#include "util/error.h"
#include "util/text_out.h"

sw_engine_options sw_engine_options_default(void) {
    sw_engine_options o;
    memset(&o, 0, sizeof o);
    return o;
}

void engine_set_replans(sw_engine *e, uint32_t n) { e->n_replans = n; }

engine_hooks *engine_hooks_of(sw_engine *e) { return &e->hooks; }

/* The plan must describe this very model (and its --weights conversion);
 * a stage's plan, the stage model of the engine's layers. */
static sw_status check_plan(sw_engine *e) {
    const plan_model *pm = &e->plan->model;
    plan_model *mine = malloc(sizeof *mine), *whole = malloc(sizeof *whole);
    if (mine == NULL || whole == NULL) {
        free(mine);
        free(whole);
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory checking the plan");
    }
    sw_status st = plan_describe_file(e->model, pm->convert, whole);
    if (st == SW_OK && e->stage_end)
        st = plan_stage_model(whole, e->first_layer, e->stage_end, mine);
    else if (st == SW_OK)
        *mine = *whole;
    free(whole);
    if (st == SW_OK && !plan_model_same(mine, pm))
        st = sw_errorf(SW_ERR_ARG, "this plan was made for %s (%s), not for %s: plan again for "
                       "this model", pm->name, pm->file_bytes ? "another file" : "the catalog",
                       mine->name);
    free(mine);
    return st;
}

/* Takes what the plan fixed: sizes, types, threads. */
static sw_status take_workload(sw_engine *e) {
    const plan *p = e->plan;
    const model_config *c = &e->config;
    e->n_threads = (int)p->workload.n_threads;
    e->n_ctx = p->workload.n_ctx;
    e->n_batch = p->workload.n_batch < p->workload.n_ctx ? p->workload.n_batch
                                                         : p->workload.n_ctx;
    e->n_seq = p->workload.n_seq;
    e->n_tok = p->n_tok;
    e->kv_type = plan_kv_tensor_type(p->workload.kv_type);
    e->convert_type = plan_convert_tensor_type(p->model.convert);
    if (p->model.convert != PLAN_CONVERT_NONE && e->convert_type == SW_TYPE_COUNT)
        return sw_errorf(SW_ERR_ARG, "the plan converts weights with code %d, which this build "
                         "does not know: plan again", (int)p->model.convert);
    e->shape = (block_shape){
        .n_embd = c->n_embd, .n_ff = c->n_ff, .n_head = c->n_head, .n_head_kv = c->n_head_kv,
        .head_dim = c->n_embd_head, .norm_eps = c->norm_eps, .query_scale = c->query_scale,
        .attn_softcap = c->attn_softcap, .qk_norm = c->qk_norm, .post_norms = c->post_norms,
        .v_norm = c->v_norm, .n_pl = c->n_embd_per_layer, .n_expert = c->n_expert,
        .n_expert_used = c->n_expert_used,
    };
    return SW_OK;
}

static sw_status create_backends(sw_engine *e) {
    const plan *p = e->plan;
    const backend_test_hooks *test = &e->hooks.backend;
    const bool testing = test->fail_alloc_at || test->fail_op_at || test->op_delay_s > 0 ||
                         test->per_op;
    backend_params bp = {
        .sizes = {.max_attn_keys = e->n_ctx, .attn_group = model_attn_group(&e->config),
                  .max_row_elems = model_max_row_elems(&e->config)},
        .exact_dots = p->workload.exact_dots, .bf16_dots = p->workload.bf16_dots,
        /* the whole budget: a drafter's share is the engine's to allocate too */
        .capacity_bytes = p->budget.device_bytes + p->budget.drafter_bytes,
        .link_Bps = p->budget.sim_link_Bps,
        .device_index = e->device_index,
        .test = testing ? test : NULL,
    };
    sw_status st = cpu_pool_create(e->n_threads, &e->pool);
    if (st != SW_OK)
        return st;
    bp.pool = e->pool;
    if ((st = backend_create("cpu", &bp, &e->host)) != SW_OK || !p->budget.has_device)
        return st;
    return backend_create(p->budget.backend, &bp, &e->device);
}

/* Per-layer and per-session tables sized from the plan (nothing is
 * allocated per token). */
static sw_status make_tables(sw_engine *e) {
    e->seqs = calloc(e->n_seq, sizeof *e->seqs);
    e->items = calloc(e->n_tok, sizeof *e->items);
    e->packs = calloc(e->config.n_layer, sizeof *e->packs);
    e->weights.layers = calloc(e->config.n_layer, sizeof *e->weights.layers);
    if (e->seqs == NULL || e->items == NULL || e->packs == NULL || e->weights.layers == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory creating the engine");
    return SW_OK;
}

/* A stage engine keeps its own layers of the bound model, renumbered. */
static sw_status take_window(sw_engine *e) {
    if (e->stage_end == 0)
        return SW_OK;
    SW_TRY(model_config_window(&e->config, e->first_layer, e->stage_end, &e->config));
    memmove(e->file_weights.layers, e->file_weights.layers + e->first_layer,
            e->config.n_layer * sizeof *e->file_weights.layers);
    return SW_OK;
}

sw_status engine_create_stage(const sw_model *model, const plan *p, uint32_t first,
                              uint32_t end, uint32_t device, const sw_engine_options *opt,
                              const engine_hooks *hooks, sw_engine **out,
                              sw_alloc_failure *failure) {
    sw_engine *e = NULL;
    sw_status st;
    if (failure != NULL)
        memset(failure, 0, sizeof *failure);
    if (model == NULL || p == NULL || out == NULL)
        return sw_errorf(SW_ERR_ARG, "sw_engine_create: NULL argument");
    *out = NULL;
    if (p->model.file_bytes == 0)
        return sw_errorf(SW_ERR_ARG, "the plan is of catalog model %s, which has no weights to "
                         "run; plan a model file to run it", p->model.name);
    if ((e = calloc(1, sizeof *e)) == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory creating the engine");
    e->model = model;
    e->first_layer = first;
    e->stage_end = end;
    e->device_index = device;
    if (hooks != NULL)
        e->hooks = *hooks;
    if ((st = plan_copy(p, &e->plan_handle)) != SW_OK)
        goto fail;
    e->plan = plan_of(e->plan_handle);
    if ((st = model_config_from_gguf(model->gguf, &e->config)) != SW_OK ||
        (st = model_weights_bind(model->gguf, &e->config, &e->file_weights)) != SW_OK ||
        (st = take_window(e)) != SW_OK ||
        (st = check_plan(e)) != SW_OK || (st = take_workload(e)) != SW_OK ||
        (st = make_tables(e)) != SW_OK || (st = create_backends(e)) != SW_OK ||
        (st = engine_load(e, opt, failure)) != SW_OK || (st = xcache_open(e)) != SW_OK ||
        (st = expert_trace_open(e, opt)) != SW_OK)
        goto fail;
    if (e->hw.pinned.why[0])
        engine_note(e, "pinned staging of streamed layers: %s\n", e->hw.pinned.why);
    *out = e;
    return SW_OK;
fail:
    sw_engine_destroy(e);
    return st;
}

sw_status engine_create(const sw_model *model, const sw_plan *sp,
                        const sw_engine_options *opt, const engine_hooks *hooks,
                        sw_engine **out, sw_alloc_failure *failure) {
    if (sp == NULL) {
        if (out != NULL)
            *out = NULL;
        return sw_errorf(SW_ERR_ARG, "sw_engine_create: NULL argument");
    }
    return engine_create_stage(model, plan_of(sp), 0, 0, opt ? opt->device : 0, opt, hooks, out,
                               failure);
}

sw_status sw_engine_create(const sw_model *model, const sw_plan *sp,
                           const sw_engine_options *opt, sw_engine **out,
                           sw_alloc_failure *failure) {
    return engine_create(model, sp, opt, NULL, out, failure);
}

void sw_engine_destroy(sw_engine *e) {
    if (e == NULL)
        return;
    pipeline_stop(e);
    free(e->parts_meta);
    for (uint32_t k = 0; k < e->n_stages; k++)
        sw_engine_destroy(e->stages[k]);
    free(e->stages);
    free(e->split);
    expert_trace_close(e);
    xcache_close(e);
    engine_unload(e);
    backend_destroy(e->device);
    backend_destroy(e->host);
    cpu_pool_destroy(e->pool);
    free(e->weights.layers);   /* views only: the norms belong to file_weights */
    model_weights_free(&e->file_weights);
    free(e->packs);
    free(e->seqs);
    free(e->items);
    sw_plan_destroy(e->plan_handle);
    free(e);
}

const sw_plan *sw_engine_plan(const sw_engine *e) { return e ? e->plan_handle : NULL; }
uint32_t sw_engine_n_ctx(const sw_engine *e) { return e ? e->n_ctx : 0; }
uint32_t sw_engine_n_vocab(const sw_engine *e) { return e ? e->config.n_vocab : 0; }
uint32_t sw_engine_n_seq(const sw_engine *e) { return e ? e->n_seq : 0; }
uint32_t sw_engine_n_batch(const sw_engine *e) { return e ? e->n_batch : 0; }
uint32_t sw_engine_max_tokens(const sw_engine *e) { return e ? e->n_tok : 0; }
const char *sw_engine_notes(const sw_engine *e) { return e ? e->notes : ""; }

sw_status sw_engine_print_plan(const sw_engine *e, FILE *out, int json) {
    if (e == NULL || out == NULL)
        return sw_errorf(SW_ERR_ARG, "sw_engine_print_plan: NULL argument");
    if (e->split == NULL)
        return sw_plan_print(e->plan_handle, out, json);
    if (json)
        plan_split_print_json(out, e->split);
    else
        plan_split_print_table(out, e->split);
    return SW_OK;
}

static sw_status print_engine_plan(const void *e, FILE *out, int json) {
    return sw_engine_print_plan(e, out, json);
}

sw_status sw_engine_format_plan(const sw_engine *e, int json, char *buf, size_t cap,
                                size_t *len) {
    return text_out_format(print_engine_plan, e, json, buf, cap, len, "sw_engine_format_plan");
}
