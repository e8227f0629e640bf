/*
 * draft.c — the draft flags and the drafter of a command's scheduler
 * (draft.h). A draft model is planned as a model of its own on the same
 * backend, so --draft-device-mem says what it may take; a Gemma 4
 * assistant has no plan of its own: the target's plan reserves its device
 * bytes (draft_reserve) and it runs beside the target's caches.
 */
#include "cli/draft.h"

#include <string.h>

#include "cli/cli.h"
#include "cli/model_arg.h"

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
          "  --draft-device-mem SIZE  the draft model's device budget (default:\n"
          "                   --device-mem; an assistant's bytes come off --device-mem)\n",
          out);
}

sw_plan_options draft_plan(const draft_flags *d, const sw_plan_options *target) {
    sw_plan_options p = *target;
    p.place = NULL;
    p.n_gpu_layers = -1;
    p.n_cpu_moe = 0;
    if (d->device_mem_bytes) {
        p.device_mem_bytes = d->device_mem_bytes;
        p.device_mem_fraction = 0;
    }
    return p;
}

int draft_reserve(const draft_flags *d, sw_plan_options *p, bool *assistant) {
    *assistant = false;
    if (d->model == NULL)
        return CLI_EXIT_OK;
    sw_model *m = NULL;
    int rc = cli_open_model(d->model, &m);
    if (rc != CLI_EXIT_OK)
        return rc;
    uint64_t bytes = 0;
    sw_status st = SW_OK;
    if (sw_model_is_assistant(m)) {
        *assistant = true;
        st = sw_assistant_device_bytes(m, p->n_seq ? p->n_seq : 1, &bytes);
        p->draft_device_bytes = bytes;
        const char *slash = strrchr(d->model, '/');
        p->drafter = slash != NULL && slash[1] ? slash + 1 : d->model;
    }
    sw_model_close(m);
    if (st != SW_OK) {
        cli_error("the assistant '%s': %s", d->model, sw_last_error());
        return cli_exit_code(st);
    }
    if (*assistant && d->device_mem_bytes) {
        cli_error("--draft-device-mem: a Gemma 4 assistant has no budget of its own (its "
                  "device bytes come off --device-mem)");
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

int draft_start(const draft_flags *d, const sw_plan_options *plan, const sw_model *target,
                sw_scheduler *q, draft_ctx *ctx) {
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
        const sw_plan_options p = draft_plan(d, plan);
        sw_engine_options eo = sw_engine_options_default();
        eo.load_progress = cli_load_progress;
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
