/*
 * engine.c — sw_engine: reads the configuration, binds the weights, builds
 * the placement plan from the options (backend, budgets, pins) and has
 * load.c allocate exactly that plan. If the device refuses memory the plan
 * counted on (another process took it), re-plans with what was obtainable
 * and records a note; it never crashes on it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine_internal.h"
#include "plan/plan_api.h"
#include "quant/types.h"
#include "util/error.h"

#define DEFAULT_CTX 4096
#define DEFAULT_BATCH 64
#define MAX_REPLANS 3

sw_engine_options sw_engine_options_default(void) {
    sw_engine_options o;
    memset(&o, 0, sizeof o);
    o.n_gpu_layers = -1;
    return o;
}

static int default_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

static sw_status resolve_options(sw_engine *e, const sw_engine_options *opt) {
    const model_config *c = &e->config;
    sw_status st;
    e->convert_type = SW_TYPE_COUNT;
    if ((opt->kv_type && (st = plan_parse_kv_type(opt->kv_type, &e->kv_type)) != SW_OK) ||
        (opt->weights_type &&
         (st = plan_parse_weights_type(opt->weights_type, &e->convert_type)) != SW_OK))
        return st;
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

static sw_status create_backends(sw_engine *e, const sw_engine_options *opt) {
    sw_status st;
    uint32_t max_keys = e->n_ctx;
    if ((st = cpu_pool_create(e->n_threads, &e->pool)) != SW_OK ||
        (st = backend_cpu_create(e->pool, max_keys, &e->host)) != SW_OK)
        return st;
    const char *kind = opt->backend ? opt->backend : "cpu";
    if (!strcmp(kind, "cpu"))
        return SW_OK;
    if (!strcmp(kind, "sim")) {
        if (opt->device_mem_bytes == 0)
            return sw_errorf(SW_ERR_ARG, "the simulated device needs a capacity: pass "
                                         "--device-mem SIZE (e.g. 512M)");
        sim_options so = {opt->device_mem_bytes, opt->sim_link_Bps, opt->sim_fail_alloc_at,
                          max_keys};
        return backend_sim_create(&so, e->pool, &e->device);
    }
    if (!strcmp(kind, "cuda"))
        return sw_errorf(SW_ERR_UNSUPPORTED, "the CUDA backend's kernels are not built yet; "
                         "use --backend sim to rehearse a device budget");
    return sw_errorf(SW_ERR_ARG, "unknown backend '%s' (cpu, sim or cuda)", kind);
}

static sw_status make_plan(sw_engine *e, const sw_engine_options *opt, uint64_t device_budget) {
    plan_model pm;
    plan_budget budget;
    plan_rates rates;
    plan_pins pins;
    plan_workload work = {.n_ctx = e->n_ctx, .n_seq = 1, .n_batch = e->n_batch,
                          .n_threads = (uint32_t)e->n_threads, .kv_type = e->kv_type};
    const char *slash = strrchr(e->model->path, '/');
    sw_status st = plan_model_converted(&e->config, &e->file_weights,
                                        slash ? slash + 1 : e->model->path,
                                        sw_file_type_name(e->model->summary.file_type),
                                        e->model->summary.file_bytes, e->convert_type, &pm);
    if (st != SW_OK)
        return st;
    memset(&budget, 0, sizeof budget);
    budget.has_device = e->device != NULL;
    snprintf(budget.device_name, sizeof budget.device_name, "%s",
             e->device ? e->device->vt->name : "none");
    budget.device_bytes = device_budget;
    budget.device_total_bytes = opt->device_mem_bytes;
    budget.host_bytes = plan_host_available(opt->host_mem_bytes);
    budget.pinned_limit_bytes = UINT64_MAX;
    if (plan_rates_load_cache(&rates) != SW_OK)
        plan_rates_default(&rates);
    if (e->device != NULL && !strcmp(e->device->vt->name, "sim"))
        plan_rates_for_sim(&rates, opt->sim_link_Bps);
    memset(&pins, 0, sizeof pins);
    if (opt->place && (st = plan_parse_place(opt->place, e->config.n_layer, &pins)) != SW_OK)
        return st;
    /* -ngl asks for device layers; without a device every layer is host. */
    if (opt->n_gpu_layers >= 0 && e->device != NULL)
        plan_pins_apply_ngl(&pins, e->config.n_layer, (uint32_t)opt->n_gpu_layers);
    if (e->plan == NULL && (e->plan = malloc(sizeof *e->plan)) == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for the plan");
    return plan_build(&pm, &budget, &rates, &work, &pins, e->plan);
}

/* Plans, loads, and on a refused device allocation re-plans with what the
 * device actually gave (at most MAX_REPLANS times). */
static sw_status plan_and_load(sw_engine *e, const sw_engine_options *opt) {
    uint64_t budget = opt->device_mem_bytes;
    sw_status st;
    for (uint32_t attempt = 0;; attempt++) {
        if ((st = make_plan(e, opt, budget)) != SW_OK)
            return st;
        st = engine_load(e, opt);
        if (st == SW_OK && e->hw.pinned.why[0]) {
            size_t len = strlen(e->notes);
            snprintf(e->notes + len, sizeof e->notes - len, "pinned staging of streamed "
                     "layers: %s\n", e->hw.pinned.why);
        }
        if (st != SW_ERR_OOM_DEVICE || e->device == NULL || attempt == MAX_REPLANS)
            return st;
        backend_stats bs;
        e->device->vt->get_stats(e->device, &bs);
        uint64_t obtained = e->plan->tier_bytes[TIER_DEVICE];
        /* What could be had: everything allocated before the refusal. */
        uint64_t had = bs.peak_bytes < obtained ? bs.peak_bytes : obtained;
        size_t len = strlen(e->notes);
        snprintf(e->notes + len, sizeof e->notes - len,
                 "device refused memory the plan counted on (%s); re-planned with a "
                 "%.1f MiB budget\n", sw_last_error(), (double)had / 1048576.0);
        e->n_replans++;
        budget = had;
    }
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
        (st = model_weights_bind(model->gguf, &e->config, &e->file_weights)) != SW_OK)
        goto fail;
    /* Packs are built per plan at load (host_weights.c): a layer's host
     * copy depends on where the plan puts it. */
    e->packs = calloc(e->config.n_layer, sizeof *e->packs);
    e->weights.layers = calloc(e->config.n_layer, sizeof *e->weights.layers);
    if (e->packs == NULL || e->weights.layers == NULL) {
        st = sw_errorf(SW_ERR_OOM_HOST, "out of host memory creating the engine");
        goto fail;
    }
    if ((st = create_backends(e, opt)) != SW_OK || (st = plan_and_load(e, opt)) != SW_OK)
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
    engine_unload(e);
    backend_destroy(e->device);
    backend_destroy(e->host);
    cpu_pool_destroy(e->pool);
    free(e->weights.layers);   /* views only: the norms belong to file_weights */
    model_weights_free(&e->file_weights);
    free(e->packs);
    free(e->plan);
    free(e);
}

uint32_t sw_engine_n_ctx(const sw_engine *e) { return e ? e->n_ctx : 0; }
uint32_t sw_engine_n_vocab(const sw_engine *e) { return e ? e->config.n_vocab : 0; }
const char *sw_engine_notes(const sw_engine *e) { return e ? e->notes : ""; }

sw_status sw_engine_print_plan(const sw_engine *e, FILE *out, int json) {
    if (e == NULL || out == NULL)
        return sw_errorf(SW_ERR_ARG, "sw_engine_print_plan: NULL argument");
    if (json)
        plan_print_json(out, e->plan);
    else
        plan_print_table(out, e->plan);
    return SW_OK;
}
