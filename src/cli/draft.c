/*
 * draft.c — the draft flags and the drafter of a command's scheduler
 * (draft.h). One device budget for both models: a draft model is planned
 * first on the whole of it (it is small and runs every step), and what it
 * places on the device is reserved in the target's plan (its drafter row);
 * --draft-device-mem instead gives it a budget of its own, beside. A Gemma
 * 4 assistant has no plan of its own: the target's plan reserves its
 * device bytes and it runs beside the target's caches.
 */
#include "cli/draft.h"

#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/model_arg.h"
#include "plan/split.h"
#include "util/error.h"

int draft_flags_parse(draft_flags *d, int argc, char **argv, int i) {
    const char *f = argv[i];
    if (!strcmp(f, "--draft-ngram")) {
        d->ngram = true;
        return 1;
    }
    const bool model = !strcmp(f, "--draft-model") || !strcmp(f, "-md");
    const bool max = !strcmp(f, "--draft-max");
    const bool mem = !strcmp(f, "--draft-device-mem");
    if (!model && !max && !mem)
        return 0;
    if (i + 1 >= argc) {
        cli_error("%s needs a value", f);
        return -1;
    }
    const char *v = argv[i + 1];
    if (model)
        d->model = v;
    else if (max && cli_parse_long(f, v, 1, SW_DRAFT_MAX, &d->max))
        return -1;
    else if (mem && sw_parse_size(v, 0, &d->device_mem_bytes) != SW_OK) {
        cli_error("--draft-device-mem: %s", sw_last_error());
        return -1;
    }
    return 2;
}

int draft_flags_check(const draft_flags *d) {
    if (d->model != NULL && d->ngram) {
        cli_error("--draft-model and --draft-ngram: choose one drafter");
        return CLI_EXIT_USAGE;
    }
    if (d->model == NULL && !d->ngram && (d->max > 0 || d->device_mem_bytes > 0)) {
        cli_error("--draft-max and --draft-device-mem need a drafter (--draft-ngram or "
                  "--draft-model PATH)");
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

void draft_flags_usage(FILE *out) {
    fputs("  --draft-ngram    speculative decoding, drafts from the text's own n-grams\n"
          "                   (pays where the output repeats the prompt)\n"
          "  --draft-model PATH, -md PATH  speculative decoding, drafts from a smaller\n"
          "                   model with the same vocabulary, or from a Gemma 4 assistant\n"
          "                   folder (Gemma4AssistantForCausalLM) over the target's KV\n"
          "  --draft-max N    drafts verified per forward (1..16; default: the cost\n"
          "                   model's best for the plan and the drafter)\n"
          "  --draft-device-mem SIZE  a device budget of the draft model's own, beside\n"
          "                   --device-mem (default: it is planned first and its share\n"
          "                   reserved in the target's --device-mem, as an assistant is)\n",
          out);
}

sw_plan_options draft_plan(const draft_flags *d, const sw_plan_options *target) {
    sw_plan_options p = *target;
    p.place = NULL;
    p.n_gpu_layers = -1;
    p.n_cpu_moe = 0;
    p.draft_device_bytes = 0;
    p.drafter = NULL;
    if (d->device_mem_bytes) {
        p.device_mem_bytes = d->device_mem_bytes;
        p.device_mem_fraction = 0;
    } else if (target->draft_device_bytes) { /* its share, reserved in the target's plan */
        p.device_mem_bytes = target->draft_device_bytes;
        p.device_mem_fraction = 0;
    } else if (d->n_split) { /* on the split's first device */
        p.device_mem_bytes = d->split[0];
        p.device_mem_fraction = 0;
    }
    return p;
}

/* The drafter's name in the target's plan: the path's last part. */
static const char *drafter_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash != NULL && slash[1] ? slash + 1 : path;
}

/* The draft model's device bytes when it is planned on `budget` bytes of
 * device (as draft_plan plans it, the budget in place of the target's). */
static sw_status draft_device_bytes(const draft_flags *d, const sw_model *m,
                                    const sw_plan_options *p, uint64_t budget, uint64_t *out) {
    sw_plan_options dp = draft_plan(d, p);
    if (budget != 0) {
        dp.device_mem_bytes = budget;
        dp.device_mem_fraction = 0;
    }
    sw_plan *sp = NULL;
    sw_plan_summary s;
    sw_status st = sw_plan_create(m, NULL, &dp, &sp);
    if (st == SW_OK)
        st = sw_plan_get_summary(sp, &s);
    *out = st == SW_OK ? s.device_bytes : 0;
    sw_plan_destroy(sp);
    return st;
}

/* The target's split planned with p (its drafter's reserve included), for
 * whether it fits and the context it resolves (*n_ctx, may be NULL). */
static sw_status split_plan(const draft_flags *d, const sw_model *target,
                            const sw_plan_options *p, uint32_t *n_ctx) {
    plan_split *s = malloc(sizeof *s);
    if (s == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory planning a split");
    const sw_status st = plan_split_create(target, NULL, p, d->split, d->split_devices,
                                           d->n_split, s);
    if (st == SW_OK && n_ctx != NULL)
        *n_ctx = s->stage[0].workload.n_ctx;
    free(s);
    return st;
}

/* Whether the target plans with `reserve` device bytes kept for a drafter
 * (with a split: off its first device's budget). */
static bool target_fits(const draft_flags *d, const sw_model *target, const char *catalog,
                        const sw_plan_options *p, uint64_t reserve) {
    sw_plan_options t = *p;
    t.draft_device_bytes = reserve;
    if (d->n_split)
        return split_plan(d, target, &t, NULL) == SW_OK;
    sw_plan *sp = NULL;
    const sw_status st = sw_plan_create(target, catalog, &t, &sp);
    sw_plan_destroy(sp);
    return st == SW_OK;
}

/* One budget: the draft model is planned first, on the whole device budget
 * (it is small, and runs every step), and what it places on the device is
 * reserved in the target's plan. When the target then no longer fits, the
 * draft gives back: the largest budget (to 1/64 of its first share) on
 * which its plan leaves the target room. */
static sw_status reserve_model(const draft_flags *d, const sw_model *m, const sw_model *target,
                               const char *catalog, sw_plan_options *p) {
    uint64_t want = 0, got = 0;
    const sw_status st = draft_device_bytes(d, m, p, d->n_split ? d->split[0] : 0, &want);
    if (st != SW_OK || want == 0)
        return st; /* an error, no device, or nothing of it wanted */
    if (!target_fits(d, target, catalog, p, want)) {
        uint64_t lo = 0, hi = want, best = 0;
        while (hi - lo > want / 64 + 1) {
            const uint64_t mid = lo + (hi - lo) / 2;
            if (draft_device_bytes(d, m, p, mid, &got) == SW_OK && got <= mid &&
                target_fits(d, target, catalog, p, got)) {
                lo = mid;
                best = got;
            } else {
                hi = mid;
            }
        }
        want = best;
    }
    if (want != 0) {
        p->draft_device_bytes = want;
        p->drafter = drafter_name(d->model);
    }
    return SW_OK;
}

/* -c 0: the context the target's plan resolves (the drafter holds the
 * target's sequences whole, so it is planned at that context). */
static sw_status resolve_ctx(const draft_flags *d, const sw_model *target, const char *catalog,
                             sw_plan_options *p) {
    if (p->n_ctx != 0)
        return SW_OK;
    if (d->n_split)
        return split_plan(d, target, p, &p->n_ctx);
    sw_plan *sp = NULL;
    sw_plan_summary s;
    sw_status st = sw_plan_create(target, catalog, p, &sp);
    if (st == SW_OK && (st = sw_plan_get_summary(sp, &s)) == SW_OK)
        p->n_ctx = s.n_ctx;
    sw_plan_destroy(sp);
    return st;
}

int draft_reserve(const draft_flags *d, const sw_model *target, const char *catalog,
                  sw_plan_options *p, bool *assistant) {
    *assistant = false;
    if (d->model == NULL)
        return CLI_EXIT_OK;
    sw_status rs = resolve_ctx(d, target, catalog, p);
    if (rs != SW_OK)
        return cli_fail(rs);
    sw_model *m = NULL;
    int rc = cli_open_model(d->model, &m);
    if (rc != CLI_EXIT_OK)
        return rc;
    uint64_t bytes = 0;
    sw_status st = SW_OK;
    if (sw_model_is_assistant(m) && d->n_split) {
        sw_model_close(m);
        cli_error("the assistant '%s' drafts over the target's caches, which a split spreads "
                  "over devices: not yet (--draft-ngram, or a draft model, drafts with a "
                  "split)", d->model);
        return CLI_EXIT_USAGE;
    }
    if (sw_model_is_assistant(m)) {
        *assistant = true;
        st = sw_assistant_device_bytes(m, p->n_seq ? p->n_seq : 1, &bytes);
        p->draft_device_bytes = bytes;
        p->drafter = drafter_name(d->model);
    } else if (d->device_mem_bytes == 0) {
        st = reserve_model(d, m, target, catalog, p);
    }
    sw_model_close(m);
    if (st != SW_OK) {
        cli_error("the %s '%s': %s", *assistant ? "assistant" : "draft model", d->model,
                  sw_last_error()[0] ? sw_last_error() : sw_status_name(st));
        return cli_exit_code(st);
    }
    if (*assistant && d->device_mem_bytes) {
        cli_error("--draft-device-mem: a Gemma 4 assistant has no budget of its own (its "
                  "device bytes come off --device-mem)");
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

int draft_start(const draft_flags *d, const sw_plan_options *target_opts, const sw_model *target,
                uint32_t device, sw_scheduler *q, draft_ctx *ctx) {
    memset(ctx, 0, sizeof *ctx);
    if (d->model == NULL && !d->ngram)
        return CLI_EXIT_OK;
    if (draft_flags_check(d) != CLI_EXIT_OK)
        return CLI_EXIT_USAGE;
    sw_draft_options o = sw_draft_options_default();
    o.ngram = d->ngram;
    if (d->max > 0)
        o.draft_max = (uint32_t)d->max;
    int rc = CLI_EXIT_OK;
    const char *kind = d->ngram ? "n-gram" : "draft-model";
    if (d->model != NULL) {
        if ((rc = cli_open_model(d->model, &ctx->model)) != CLI_EXIT_OK)
            return rc;
    }
    if (sw_model_is_assistant(ctx->model)) {
        o.assistant = ctx->model;
        kind = "Gemma 4 assistant";
    } else if (d->model != NULL) {
        const sw_plan_options p = draft_plan(d, target_opts);
        sw_engine_options eo = sw_engine_options_default();
        eo.load_progress = cli_load_progress;
        eo.device = device; /* beside the target's first layers */
        sw_status st = sw_engine_launch(ctx->model, &p, &eo, &ctx->engine);
        if (st != SW_OK) { /* one line: which model, and the planner's or loader's why */
            cli_error("the draft model '%s': %s", d->model,
                      sw_last_error()[0] ? sw_last_error() : sw_status_name(st));
            return cli_exit_code(st);
        }
        o.engine = ctx->engine;
        o.model = ctx->model;
    }
    (void)target; /* the scheduler compares the vocabularies */
    sw_status st = sw_scheduler_set_draft(q, &o);
    if (st != SW_OK) {
        cli_error("the drafter '%s': %s", d->model ? d->model : "n-grams",
                  sw_last_error()[0] ? sw_last_error() : sw_status_name(st));
        return cli_exit_code(st);
    }
    fprintf(stderr, "speculative decoding: %s drafts, %u per verify%s\n", kind,
            sw_scheduler_draft_max(q),
            d->max > 0 ? "" : " (the cost model's choice)");
    return CLI_EXIT_OK;
}

void draft_end(draft_ctx *ctx) {
    sw_engine_destroy(ctx->engine);
    sw_model_close(ctx->model);
    memset(ctx, 0, sizeof *ctx);
}
