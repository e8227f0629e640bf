/*
 * api.c — the public plan API (sw_plan_*; the size parsers are
 * size_public.c), and the only route from options to a plan: the engine
 * executes what this makes and plans nothing itself, so `spillway plan`
 * and `spillway run` with the same flags print and run the same plan.
 *
 * It gathers plan_build()'s inputs from the machine and the options — the
 * model's sizes (file or catalog), the backend (by name through the
 * registry, or the registry's default), the device budget (the sim's
 * capacity, or a CUDA device's free memory capped by --device-mem, which
 * may be a share of its total), the host budget (MemAvailable capped by
 * --host-mem; the sim takes --host-mem as given), rates (doctor's cache or
 * the defaults) and pins — then plans. Reading the machine happens here so
 * plan_build stays pure. Every option is validated here, once.
 */
#define _DEFAULT_SOURCE /* sysconf(_SC_NPROCESSORS_ONLN) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/registry.h"
#include "model/model_internal.h"
#include "model/weights.h"
#include "plan/expert_plan.h"
#include "plan/plan_api.h"
#include "plan/split.h"
#include "quant/types.h"
#include "util/error.h"
#include "util/text_out.h"

#define DEFAULT_CTX 4096
#define DEFAULT_BATCH 64
#define MAX_BATCH 4096
#define MAX_SEQ 256
#define MAX_DEFAULT_THREADS 64

struct sw_plan {
    plan p;
};

const plan *plan_of(const sw_plan *sp) { return sp ? &sp->p : NULL; }

sw_plan_options sw_plan_options_default(void) {
    sw_plan_options o;
    memset(&o, 0, sizeof o);
    o.n_gpu_layers = -1;
    return o;
}

sw_status plan_describe_file(const sw_model *model, plan_convert convert, plan_model *pm) {
    model_config c;
    model_weights w;
    const char *slash = strrchr(model->path, '/');
    sw_status st = model_config_from_gguf(model->gguf, &c);
    if (st != SW_OK)
        return st;
    memset(&w, 0, sizeof w);
    if ((st = model_weights_bind(model->gguf, &c, &w)) != SW_OK)
        return st;
    st = plan_model_converted(&c, &w, slash ? slash + 1 : model->path,
                              plan_file_type_name(model->summary.file_type),
                              model->summary.file_bytes, convert, pm);
    model_weights_free(&w);
    return st;
}

static uint32_t default_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > MAX_DEFAULT_THREADS ? MAX_DEFAULT_THREADS : (uint32_t)n;
}

static sw_status make_workload(const sw_plan_options *o, const model_config *c,
                               plan_workload *w) {
    memset(w, 0, sizeof *w);
    w->n_ctx = o->n_ctx ? o->n_ctx : c->n_ctx_train < DEFAULT_CTX ? c->n_ctx_train : DEFAULT_CTX;
    if (o->n_batch > MAX_BATCH)
        return sw_errorf(SW_ERR_ARG, "prefill chunk %u is too large (at most %d)", o->n_batch,
                         MAX_BATCH);
    if (o->n_seq > MAX_SEQ)
        return sw_errorf(SW_ERR_ARG, "%u sequences is too many (at most %d)", o->n_seq, MAX_SEQ);
    w->n_batch = o->n_batch ? o->n_batch : DEFAULT_BATCH;
    if (w->n_batch > w->n_ctx)
        w->n_batch = w->n_ctx;
    w->n_seq = o->n_seq ? o->n_seq : 1;
    if (o->n_threads < 0 || o->n_threads > 256)
        return sw_errorf(SW_ERR_ARG, "thread count %d is out of range (1..256)", o->n_threads);
    w->n_threads = o->n_threads ? (uint32_t)o->n_threads : default_threads();
    if (o->cpu_dots != NULL && strcmp(o->cpu_dots, "q8") != 0) {
        if (strcmp(o->cpu_dots, "f32") != 0 && strcmp(o->cpu_dots, "bf16") != 0)
            return sw_errorf(SW_ERR_ARG, "--cpu-dots %s: expected q8 (8-bit activations, the "
                             "default), bf16 (q8, and bf16 activations for bf16 weights) or "
                             "f32 (exact, slower)", o->cpu_dots);
        w->exact_dots = o->cpu_dots[0] == 'f';
        w->bf16_dots = !w->exact_dots;
    }
    /* f16 halves the cache at a measured KL divergence of ~1e-4 from f32
     * (README); the reference path stays all f32 unless asked. */
    w->kv_type = w->exact_dots ? PLAN_KV_F32 : PLAN_KV_F16;
    return o->kv_type ? plan_parse_kv_type(o->kv_type, &w->kv_type) : SW_OK;
}

/* A device that reports its memory: the first visible one's free memory,
 * capped by --device-mem (bytes or a share of its total). */
static sw_status queried_budget(const sw_plan_options *o, plan_budget *b) {
    sw_device_report *rep = malloc(sizeof *rep);
    if (rep == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory querying devices");
    sw_status st = sw_devices_query(rep);
    if (st == SW_OK) {
        const sw_device_info *d = &rep->devices[0];
        uint64_t cap = o->device_mem_bytes;
        if (o->device_mem_fraction > 0)
            cap = (uint64_t)((double)d->total_bytes * o->device_mem_fraction);
        snprintf(b->device_name, sizeof b->device_name, "%s:%d %.40s", b->backend, d->index,
                 d->name);
        b->device_total_bytes = d->total_bytes;
        b->device_bytes = cap && cap < d->free_bytes ? cap : d->free_bytes;
    }
    free(rep);
    return st;
}

/* A plugin device (PJRT): the memory it reports as free, capped by
 * --device-mem; a plugin that reports none (XLA's CPU plugin) needs
 * --device-mem as the budget. */
static sw_status plugin_budget(const sw_plan_options *o, plan_budget *b) {
    uint64_t free_bytes = 0;
    char device[48] = "";
    SW_TRY(backend_device_budget(b->backend, &free_bytes, device, sizeof device));
    snprintf(b->device_name, sizeof b->device_name, "%s:0 %.40s", b->backend, device);
    if (free_bytes == 0) {
        if (o->device_mem_bytes == 0)
            return sw_errorf(SW_ERR_ARG, "the PJRT plugin (%s) does not report its device "
                             "memory: pass --device-mem SIZE (e.g. 512M) as the budget", device);
        b->device_bytes = b->device_total_bytes = o->device_mem_bytes;
        return SW_OK;
    }
    uint64_t cap = o->device_mem_bytes;
    if (o->device_mem_fraction > 0)
        cap = (uint64_t)((double)free_bytes * o->device_mem_fraction);
    b->device_total_bytes = free_bytes;
    b->device_bytes = cap && cap < free_bytes ? cap : free_bytes;
    return SW_OK;
}

/* A drafter on the device first (it is small and runs every step): its
 * bytes come off the device budget before the model is placed. */
static sw_status reserve_drafter(const sw_plan_options *o, plan_budget *b) {
    if (o->draft_device_bytes == 0 || !b->has_device)
        return SW_OK;
    snprintf(b->drafter, sizeof b->drafter, "%s", o->drafter ? o->drafter : "drafter");
    if (o->draft_device_bytes >= b->device_bytes) {
        char need[32], have[32];
        plan_format_size(o->draft_device_bytes, need, sizeof need);
        plan_format_size(b->device_bytes, have, sizeof have);
        return sw_errorf(SW_ERR_OOM_DEVICE, "the drafter %s takes %s of the device, whose "
                         "budget is %s: nothing is left for the model (raise --device-mem)",
                         b->drafter, need, have);
    }
    b->drafter_bytes = o->draft_device_bytes;
    b->device_bytes -= o->draft_device_bytes;
    return SW_OK;
}

/* The backend and the budgets; *note receives a remark ("" if none). */
static sw_status make_budget(const sw_plan_options *o, plan_budget *b, char *note, size_t cap) {
    backend_info info;
    memset(b, 0, sizeof *b);
    b->pinned_limit_bytes = UINT64_MAX;
    note[0] = '\0';
    const char *name = o->backend ? o->backend : backend_default_name(note, cap);
    if (name == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory choosing a backend");
    sw_status st = backend_lookup(name, &info);
    if (st != SW_OK)
        return st;
    if (!(o->device_mem_fraction >= 0 && o->device_mem_fraction <= 1))
        return sw_errorf(SW_ERR_ARG, "a device memory share must be in (0%%, 100%%]");
    snprintf(b->backend, sizeof b->backend, "%s", info.name);
    b->has_device = info.has_device;
    if (info.budget == BACKEND_BUDGET_GIVEN) {
        if (o->device_mem_fraction > 0)
            return sw_errorf(SW_ERR_ARG, "the simulated device has no memory of its own to "
                             "take a percentage of: give --device-mem a size (e.g. 512M)");
        if (o->device_mem_bytes == 0)
            return sw_errorf(SW_ERR_ARG, "the simulated device needs a capacity: pass "
                             "--device-mem SIZE (e.g. 512M)");
        snprintf(b->device_name, sizeof b->device_name, "%s", info.name);
        b->device_bytes = b->device_total_bytes = o->device_mem_bytes;
        b->sim_link_Bps = o->sim_link_Bps;
    } else if (info.budget == BACKEND_BUDGET_DEVICES && (st = queried_budget(o, b)) != SW_OK) {
        return st;
    } else if (info.budget == BACKEND_BUDGET_PLUGIN && (st = plugin_budget(o, b)) != SW_OK) {
        return st;
    }
    if (info.budget == BACKEND_BUDGET_GIVEN && o->host_mem_bytes)
        b->host_bytes = o->host_mem_bytes;   /* a rehearsal: as given */
    else
        b->host_bytes = plan_host_available(o->host_mem_bytes);
    return reserve_drafter(o, b);
}

/* Doctor's rates or the defaults; a simulated device computes with the
 * host's kernels, so its rates are the host's and its link the sim cap.
 * A cache that exists but cannot be read is said in *note. */
static void make_rates(const sw_plan_options *o, const plan_budget *b, plan_rates *r,
                       char *note, size_t cap) {
    sw_status st = SW_ERR_IO;
    backend_info info;
    if (!o->default_rates)
        st = plan_rates_load_cache(r);
    if (st != SW_OK)
        plan_rates_default(r);
    if (st == SW_ERR_FORMAT)
        snprintf(note, cap, "doctor cache unreadable, so default rates: %.100s", sw_last_error());
    if (backend_lookup(b->backend, &info) == SW_OK && info.budget == BACKEND_BUDGET_GIVEN)
        plan_rates_for_sim(r, o->sim_link_Bps);
}

static sw_status make_pins(const sw_plan_options *o, const plan_budget *b, uint32_t n_layer,
                           plan_pins *pins, char *note, size_t cap) {
    memset(pins, 0, sizeof *pins);
    if (o->place != NULL) {
        sw_status st = plan_parse_place(o->place, n_layer, pins);
        if (st != SW_OK)
            return st;
    }
    if (o->n_cpu_moe > 0)
        plan_pins_apply_ncmoe(pins, n_layer, (uint32_t)o->n_cpu_moe);
    if (o->n_gpu_layers >= 0 && b->has_device)
        plan_pins_apply_ngl(pins, n_layer, (uint32_t)o->n_gpu_layers);
    else if (o->n_gpu_layers >= 0)
        snprintf(note, cap, "-ngl %d ignored: there is no device (cpu backend)",
                 o->n_gpu_layers);
    return SW_OK;
}

static void add_note(plan *p, const char *text) {
    if (text[0] && p->n_notes < PLAN_MAX_NOTES)
        snprintf(p->notes[p->n_notes++], sizeof p->notes[0], "%.*s",
                 (int)sizeof p->notes[0] - 1, text);
}

/* Everything plan_build takes, gathered from the options and the machine. */
typedef struct plan_inputs {
    plan_model model;
    plan_pins pins;
    plan_budget budget;
    plan_rates rates;
    plan_workload work;
    char note[256], ngl_note[128], rates_note[160], weights_note[160];
} plan_inputs;

static bool float_type(const char *t) {
    return !strcmp(t, "F32") || !strcmp(t, "F16") || !strcmp(t, "BF16");
}

/* The model's sizes, as stored or converted by --weights; a backend that
 * computes only in float weights (PJRT) gets quantized ones as BF16. */
static sw_status describe(const sw_model *model, const char *catalog_name,
                          const sw_plan_options *opt, plan_inputs *in) {
    backend_info info;
    plan_convert convert = PLAN_CONVERT_NONE;   /* --weights of a file, parsed here once */
    sw_status st = model ? plan_parse_weights(opt->weights, &convert)
                         : plan_model_from_catalog(catalog_name, opt->weights, &in->model);
    if (st == SW_OK && model)
        st = plan_describe_file(model, convert, &in->model);
    if (st != SW_OK || opt->weights != NULL || backend_lookup(in->budget.backend, &info) != SW_OK ||
        !info.float_weights || float_type(in->model.weight_type))
        return st;
    snprintf(in->weights_note, sizeof in->weights_note, "the %s backend computes in float weights: the %s "
             "matrices are dequantized to BF16 at load", info.name, in->model.weight_type);
    return model ? plan_describe_file(model, PLAN_CONVERT_BF16_DEQUANT, &in->model)
                 : plan_model_from_catalog(catalog_name, "bf16", &in->model);
}

static sw_status gather(const sw_model *model, const char *catalog_name,
                        const sw_plan_options *opt, plan_inputs *in) {
    sw_status st = make_budget(opt, &in->budget, in->note, sizeof in->note);
    if (st != SW_OK || (st = describe(model, catalog_name, opt, in)) != SW_OK ||
        (st = make_workload(opt, &in->model.config, &in->work)) != SW_OK ||
        (st = make_pins(opt, &in->budget, in->model.config.n_layer, &in->pins, in->ngl_note,
                        sizeof in->ngl_note)) != SW_OK)
        return st;
    make_rates(opt, &in->budget, &in->rates, in->rates_note, sizeof in->rates_note);
    return SW_OK;
}

/* --place's devN pins name a split's devices: one device is dev0. */
static sw_status one_device_pins(const plan_pins *pins, uint32_t n_layer) {
    for (uint32_t il = 0; il < n_layer; il++)
        if (pins->device[il] > 1)
            return sw_errorf(SW_ERR_ARG, "--place pins layer %u to dev%u, a device of a split: "
                             "give one --device-mem budget per device (A,B,...)", il,
                             pins->device[il] - 1);
    return SW_OK;
}

/* The expert cache, sized in what the placement leaves (expert_plan.h). */
static sw_status expert_cache(const sw_plan_options *o, plan *p) {
    backend_info info;
    const char *no = NULL;
    if (o->experts.slots != 0 && backend_lookup(p->budget.backend, &info) == SW_OK)
        no = info.no_expert_cache;
    return plan_expert_cache(p, &o->experts, no);
}

sw_status sw_plan_create(const sw_model *model, const char *catalog_name,
                         const sw_plan_options *opt, sw_plan **out) {
    sw_plan_options defaults = sw_plan_options_default();
    plan_inputs *in = NULL;
    sw_plan *sp = NULL;
    sw_status st;
    if (out == NULL || (model == NULL) == (catalog_name == NULL))
        return sw_errorf(SW_ERR_ARG, "sw_plan_create: give exactly one of a model and a "
                         "catalog name, and an output pointer");
    *out = NULL;
    if (opt == NULL)
        opt = &defaults;
    in = calloc(1, sizeof *in);
    sp = malloc(sizeof *sp);
    if (in == NULL || sp == NULL) {
        st = sw_errorf(SW_ERR_OOM_HOST, "out of host memory planning");
        goto fail;
    }
    if ((st = gather(model, catalog_name, opt, in)) != SW_OK ||
        (st = one_device_pins(&in->pins, in->model.config.n_layer)) != SW_OK ||
        (st = plan_build(&in->model, &in->budget, &in->rates, &in->work, &in->pins, &sp->p)) !=
            SW_OK || (st = expert_cache(opt, &sp->p)) != SW_OK)
        goto fail;
    add_note(&sp->p, in->note);
    add_note(&sp->p, in->ngl_note);
    add_note(&sp->p, in->rates_note);
    add_note(&sp->p, in->weights_note);
    free(in);
    *out = sp;
    return SW_OK;
fail:
    free(in);
    free(sp);
    return st;
}

sw_status plan_copy(const plan *src, sw_plan **out) {
    sw_plan *sp = malloc(sizeof *sp);
    if (sp == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory copying a plan");
    sp->p = *src;
    *out = sp;
    return SW_OK;
}

sw_status sw_plan_print(const sw_plan *sp, FILE *out, int json) {
    if (sp == NULL || out == NULL)
        return sw_errorf(SW_ERR_ARG, "sw_plan_print: NULL argument");
    if (json)
        plan_print_json(out, &sp->p);
    else
        plan_print_table(out, &sp->p);
    return SW_OK;
}

static sw_status print_plan(const void *sp, FILE *out, int json) {
    return sw_plan_print(sp, out, json);
}

sw_status sw_plan_format(const sw_plan *sp, int json, char *buf, size_t cap, size_t *len) {
    return text_out_format(print_plan, sp, json, buf, cap, len, "sw_plan_format");
}

sw_status sw_plan_get_summary(const sw_plan *sp, sw_plan_summary *s) {
    if (sp == NULL || s == NULL)
        return sw_errorf(SW_ERR_ARG, "sw_plan_get_summary: NULL argument");
    const plan *p = &sp->p;
    memset(s, 0, sizeof *s);
    s->device_bytes = p->tier_bytes[TIER_DEVICE];
    s->pinned_bytes = p->tier_bytes[TIER_PINNED];
    s->host_bytes = p->tier_bytes[TIER_HOST];
    for (uint32_t il = 0; il < p->model.config.n_layer; il++) {
        s->n_resident += p->layer_place[il] == PLACE_RESIDENT;
        s->n_streamed += p->layer_place[il] == PLACE_STREAMED;
        s->n_host += p->layer_place[il] == PLACE_HOST;
    }
    s->prefill_tokens_per_s = p->prefill_tokens_per_s;
    s->decode_tokens_per_s = p->decode_tokens_per_s;
    s->n_ctx = p->workload.n_ctx;
    if (p->model.convert != PLAN_CONVERT_NONE)
        snprintf(s->weights, sizeof s->weights, "%s", plan_convert_flag(p->model.convert));
    return SW_OK;
}

void sw_plan_destroy(sw_plan *sp) { free(sp); }

/* A split's budgets on devices that report their memory (CUDA): each
 * capped by its device's free memory, as one device's is; the devices
 * named must exist. */
static sw_status split_budgets(const plan_budget *b, const uint32_t *ids, uint32_t n_dev,
                               uint64_t *bytes) {
    backend_info info;
    if (backend_lookup(b->backend, &info) != SW_OK || info.budget != BACKEND_BUDGET_DEVICES)
        return SW_OK;
    sw_device_report *rep = malloc(sizeof *rep);
    if (rep == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory querying devices");
    sw_status st = sw_devices_query(rep);
    for (uint32_t d = 0; st == SW_OK && d < n_dev; d++) {
        if (ids[d] >= rep->n_devices) {
            st = sw_errorf(SW_ERR_NO_DEVICE, "device %u of the split is %s:%u, but %zu %s "
                           "device%s visible", d, b->backend, ids[d], rep->n_devices,
                           b->backend, rep->n_devices == 1 ? " is" : "s are");
            break;
        }
        const uint64_t free_b = rep->devices[ids[d]].free_bytes;
        bytes[d] = bytes[d] < free_b ? bytes[d] : free_b;
    }
    free(rep);
    return st;
}

sw_status plan_split_create(const sw_model *model, const char *catalog_name,
                            const sw_plan_options *opt, const uint64_t *device_bytes,
                            const uint32_t *devices, uint32_t n_dev, plan_split *out) {
    if (opt == NULL || device_bytes == NULL || n_dev == 0 || n_dev > PLAN_MAX_DEVICES ||
        out == NULL || (model == NULL) == (catalog_name == NULL))
        return sw_errorf(SW_ERR_ARG, "plan_split_create: give exactly one of a model and a "
                         "catalog name, options, 1 to %d budgets and an output",
                         PLAN_MAX_DEVICES);
    if (opt->device_mem_fraction > 0)
        return sw_errorf(SW_ERR_ARG, "a split over several devices takes budgets as sizes");
    uint32_t ids[PLAN_MAX_DEVICES];
    uint64_t bytes[PLAN_MAX_DEVICES];
    for (uint32_t d = 0; d < n_dev; d++) {
        ids[d] = devices ? devices[d] : d;
        bytes[d] = device_bytes[d];
        for (uint32_t k = 0; k < d; k++)
            if (ids[k] == ids[d])
                return sw_errorf(SW_ERR_ARG, "device %u is named twice in the split", ids[d]);
    }
    sw_plan_options o = *opt;
    o.device_mem_bytes = bytes[0]; /* the backend's first budget; each device's below */
    plan_inputs *in = calloc(1, sizeof *in);
    if (in == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory planning");
    sw_status st = gather(model, catalog_name, &o, in);
    if (st == SW_OK)
        st = split_budgets(&in->budget, ids, n_dev, bytes);
    /* a drafter beside the first layers, on the first device (gather named it) */
    if (st == SW_OK && in->budget.drafter_bytes >= bytes[0])
        st = sw_errorf(SW_ERR_OOM_DEVICE, "device 0 of the split: the drafter takes %llu "
                       "bytes of its %llu-byte budget (raise its --device-mem)",
                       (unsigned long long)in->budget.drafter_bytes,
                       (unsigned long long)bytes[0]);
    if (st == SW_OK)
        bytes[0] -= in->budget.drafter_bytes;
    if (st == SW_OK)
        st = plan_split_build(&in->model, &in->budget, bytes, n_dev, &in->rates, &in->work,
                              &in->pins, out);
    backend_info info;
    const bool known = backend_lookup(in->budget.backend, &info) == SW_OK;
    if (st == SW_OK)
        st = plan_split_expert_cache(out, &in->model, &in->rates, &in->work, &opt->experts,
                                     known ? info.no_expert_cache : NULL);
    /* micro-batches only where they keep the bits (backend_info.rows_alone) */
    if (st == SW_OK && known && info.rows_alone)
        st = plan_split_micro(&in->model, &in->rates, &in->work, out);
    for (uint32_t d = 0; st == SW_OK && d < n_dev; d++) {
        out->device[d] = ids[d];
        snprintf(out->stage[d].budget.device_name, sizeof out->stage[d].budget.device_name,
                 "%.16s:%u", in->budget.backend, ids[d]);
        add_note(&out->stage[d], in->note);
        add_note(&out->stage[d], in->rates_note);
        add_note(&out->stage[d], in->weights_note);
    }
    free(in);
    return st;
}
