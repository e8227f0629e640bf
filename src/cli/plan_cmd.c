/*
 * plan_cmd.c — `spillway plan`: where every byte of a model and workload
 * would live and how fast it would run, without loading weights. -m takes
 * a model file or a catalog name (gemma3-27b, gemma-2-9b, ...). When
 * nothing fits, the exit status says which memory ran out (7 device, 8
 * host) and the message lists changes that would fit. With the draft
 * flags of run (draft.h), the target's plan reserves the drafter's device
 * share (its drafter row) and --draft-model's own plan follows, made as
 * draft_start makes it (in that share, or --draft-device-mem; the
 * target's context); a Gemma 4 assistant has no plan of its own.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "cli/cli.h"
#include "cli/draft.h"
#include "cli/plan_opts.h"
#include "plan/split.h"

typedef struct plan_args {
    const char *model;
    const char *rates;       /* "cache" (default) or "defaults" */
    bool json;
    sw_plan_options opt;
    draft_flags draft;       /* --draft-ngram, --draft-model, --draft-max, ... */
    bool assistant;          /* --draft-model is a Gemma 4 assistant: no plan of its own */
    uint64_t split[PLAN_MAX_DEVICES]; /* --device-mem A,B,...: one budget per device */
    uint32_t n_split;        /* 0: one device */
    uint32_t devices[PLAN_MAX_DEVICES]; /* --devices: which, for the split */
    uint32_t n_devices;
} plan_args;

static void usage(FILE *out) {
    fputs("usage: spillway plan [-m FILE|NAME] [options]\n"
          "  -m FILE|NAME      model file or Hugging Face folder, or a catalog model planned\n"
          "                    without a file: gemma-2b gemma-7b gemma2-2b gemma2-9b\n"
          "                    gemma2-27b gemma3-270m gemma3-1b gemma3-4b gemma3-12b\n"
          "                    gemma3-27b (default: the fetched Gemma 3 270M file)\n"
          "  --rates R         cache (doctor's measurements if any) or defaults\n"
          "  --json            machine-readable plan\n"
          "  --device-mem A,B,...  one budget per device (2 to 8, sizes): the layers split\n"
          "                    into one contiguous range per device, each placed as one\n"
          "                    device's plan, the activation hopping between them (run,\n"
          "                    chat, verify, batch and serve run it: an engine per device)\n"
          "  --devices N,M,... which of the backend's devices the split uses (default\n"
          "                    0, 1, ...; one per budget)\n"
          "the same planning flags as run, chat, verify and batch (the same flags give\n"
          "the same plan there):\n", out);
    plan_opts_usage(out);
    fputs("speculative decoding, as run, chat, batch and serve take it (--draft-model: its\n"
          "own plan follows the target's):\n", out);
    draft_flags_usage(out);
    fputs("exit status: 0 fits, 7 device memory short, 8 host memory short, 2 bad flags\n",
          out);
}

static int parse_args(plan_args *a, int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "-h") || !strcmp(f, "--help")) {
            usage(stdout);
            return -1;
        }
        if (!strcmp(f, "--json")) {
            a->json = true;
            continue;
        }
        const int drafted = draft_flags_parse(&a->draft, argc, argv, i);
        if (drafted < 0)
            return CLI_EXIT_USAGE;
        if (drafted > 0) {
            i += drafted - 1;
            continue;
        }
        bool known = plan_opts_has(f) || !strcmp(f, "-m") || !strcmp(f, "--model") ||
                     !strcmp(f, "--rates");
        if (!known) {
            cli_error("%s '%s'; run 'spillway plan --help'",
                      f[0] == '-' ? "unknown option" : "unexpected argument", f);
            return CLI_EXIT_USAGE;
        }
        if (i + 1 >= argc) {
            cli_error("%s needs a value; run 'spillway plan --help'", f);
            return CLI_EXIT_USAGE;
        }
        const char *v = argv[++i];
        if (!strcmp(f, "-m") || !strcmp(f, "--model"))
            a->model = v;
        else if (!strcmp(f, "--rates"))
            a->rates = v;
        else if (!strcmp(f, "--device-mem") && strchr(v, ',') != NULL) {
            if (plan_opts_parse_split(v, a->split, &a->n_split) != 0)
                return CLI_EXIT_USAGE;
        } else if (!strcmp(f, "--devices")) {
            if (plan_opts_parse_devices(v, a->devices, &a->n_devices) != 0)
                return CLI_EXIT_USAGE;
        } else if (plan_opts_parse(&a->opt, f, v) != 0)
            return CLI_EXIT_USAGE;
    }
    if (a->rates && strcmp(a->rates, "cache") != 0 && strcmp(a->rates, "defaults") != 0) {
        cli_error("--rates expects 'cache' or 'defaults', got '%s'", a->rates);
        return CLI_EXIT_USAGE;
    }
    a->opt.default_rates = a->rates && !strcmp(a->rates, "defaults");
    if (plan_opts_check_devices(a->n_devices, a->n_split) != 0)
        return CLI_EXIT_USAGE;
    if (a->n_split && (a->draft.model || a->draft.ngram)) {
        cli_error("plan --device-mem A,B (a split) shows no drafter yet; run, chat, batch and "
                  "serve take --draft-ngram or --draft-model with a split");
        return CLI_EXIT_USAGE;
    }
    return draft_flags_check(&a->draft);
}

/* -m: an existing file or Hugging Face folder is opened; anything else is
 * a catalog name. No -m: the fetched default model. */
static int open_source(const char *arg, sw_model **model, const char **name) {
    char path[4096];
    struct stat sb;
    *model = NULL;
    *name = NULL;
    if (arg == NULL) {
        sw_status st = sw_default_model_path(path, sizeof path);
        if (st != SW_OK)
            return cli_fail(st);
        if (stat(path, &sb) != 0) {
            cli_error("the default model is not at %s; run 'spillway fetch', or plan a "
                      "catalog model with -m gemma3-27b (see --help)", path);
            return CLI_EXIT_IO;
        }
        arg = path;
    } else if (stat(arg, &sb) != 0) {
        *name = arg;
        return CLI_EXIT_OK;
    }
    sw_status st = sw_model_open(arg, model);
    return st == SW_OK ? CLI_EXIT_OK : cli_fail(st);
}

/* The plan as text or JSON, malloc'd (NULL after printing the error). */
static char *plan_text(const sw_plan *p, bool json) {
    size_t len = 0;
    char *buf = NULL;
    sw_status st = sw_plan_format(p, json, NULL, 0, &len);
    if (st == SW_OK && (buf = malloc(len + 1)) == NULL)
        st = SW_ERR_OOM_HOST;
    if (st == SW_OK)
        st = sw_plan_format(p, json, buf, len + 1, &len);
    if (st != SW_OK) {
        free(buf);
        cli_fail(st);
        return NULL;
    }
    return buf;
}

/* The workload the target's plan resolved: its context (the drafter's,
 * as gen_opts_start_scheduler gives it) and its prefill chunk (a verify
 * holds at most chunk - 1 drafts), from the plan's JSON. */
static void resolved_workload(const char *json, uint32_t *n_ctx, uint32_t *n_batch) {
    json_object *root = json_tokener_parse(json), *w = NULL, *v = NULL;
    if (root != NULL && json_object_object_get_ex(root, "workload", &w)) {
        if (json_object_object_get_ex(w, "n_ctx", &v))
            *n_ctx = (uint32_t)json_object_get_int64(v);
        if (json_object_object_get_ex(w, "n_batch", &v))
            *n_batch = (uint32_t)json_object_get_int64(v);
    }
    json_object_put(root);
}

/* Drafts per verify: --draft-max, else the scheduler's default (the cost
 * model's best k for the target's plan and one draft forward's cost).
 * *chosen: whether the cost model chose. */
static uint32_t plan_draft_max(const plan_args *a, const sw_plan *target,
                               const sw_plan *drafter, uint32_t n_batch, bool *chosen) {
    *chosen = a->draft.max <= 0;
    if (!*chosen)
        return (uint32_t)a->draft.max;
    const uint32_t k_max = n_batch > 1 && n_batch - 1 < SW_DRAFT_MAX ? n_batch - 1 : SW_DRAFT_MAX;
    const double draft_s = drafter ? sw_plan_forward_seconds(drafter, 1)
                           : a->assistant ? sw_plan_drafter_seconds(target,
                                                                    a->opt.draft_device_bytes)
                                          : 0.0;
    return sw_plan_best_draft_max(target, SW_DRAFT_ACCEPTANCE, draft_s, k_max);
}

/* The draft model's plan as draft_start makes it, at the target's
 * resolved context; *text its text or JSON. Returns an exit status. */
static int plan_drafter(const plan_args *a, uint32_t n_ctx, sw_plan **dp, char **text) {
    sw_plan_options o = draft_plan(&a->draft, &a->opt);
    o.n_ctx = n_ctx;
    sw_model *model = NULL;
    const char *name = NULL;
    int rc = open_source(a->draft.model, &model, &name);
    if (rc != CLI_EXIT_OK)
        return rc;
    sw_status st = sw_plan_create(model, name, &o, dp);
    if (st == SW_ERR_OOM_DEVICE || st == SW_ERR_OOM_HOST)
        cli_error("the draft model '%s' does not fit its own budget (--draft-device-mem, "
                  "else --device-mem)", a->draft.model);
    if (st != SW_OK) {
        rc = cli_fail(st);
    } else if ((*text = plan_text(*dp, a->json)) == NULL) {
        rc = CLI_EXIT_OOM_HOST;
    }
    sw_model_close(model);
    return rc;
}

/* The drafter after the target's plan: a heading and the draft model's
 * plan, or the "drafter" member that closes the target's JSON object. */
static int print_drafter(const plan_args *a, const sw_plan *target, const char *target_json) {
    uint32_t n_ctx = a->opt.n_ctx, n_batch = 0;
    resolved_workload(target_json, &n_ctx, &n_batch);
    sw_plan *dp = NULL;
    char *text = NULL;
    int rc = a->draft.model && !a->assistant ? plan_drafter(a, n_ctx, &dp, &text)
                                             : CLI_EXIT_OK;
    bool chosen = false;
    const uint32_t k = rc == CLI_EXIT_OK ? plan_draft_max(a, target, dp, n_batch, &chosen) : 0;
    if (rc != CLI_EXIT_OK && a->json) {
        puts("}"); /* the target's plan alone */
    } else if (a->json) {
        printf(",\"drafter\":{\"ngram\":%s,\"model\":", a->draft.ngram ? "true" : "false");
        if (a->draft.model)
            json_put_string(stdout, a->draft.model);
        else
            fputs("null", stdout);
        printf(",\"draft_max\":%u,\"draft_max_chosen\":%s,\"plan\":%s}}\n", k,
               chosen ? "true" : "false", text ? text : "null");
    } else if (rc == CLI_EXIT_OK && a->assistant) {
        printf("\ndrafter: %s (a Gemma 4 assistant over the target's caches: %.1f MiB "
               "beside the plan where its caches are on the device; speculative decoding, "
               "--draft-max %u%s)\n", a->draft.model,
               (double)a->opt.draft_device_bytes / 1048576.0, k,
               chosen ? ": the cost model's choice" : "");
    } else if (rc == CLI_EXIT_OK) {
        printf("\ndrafter: %s (speculative decoding, --draft-max %u%s)\n",
               a->draft.model ? a->draft.model : "n-grams of the text, no memory of its own",
               k, chosen ? ": the cost model's choice" : "");
        fputs(text ? text : "", stdout);
    }
    free(text);
    sw_plan_destroy(dp);
    return rc;
}

/* --device-mem A,B,...: the split over the devices, printed. */
static int print_split(const plan_args *a, const sw_model *model, const char *name) {
    int rc = CLI_EXIT_OK;
    plan_split *s = plan_opts_split(model, name, &a->opt, a->split, a->n_split, a->devices,
                                    a->n_devices, &rc);
    if (s != NULL && a->json)
        plan_split_print_json(stdout, s);
    else if (s != NULL)
        plan_split_print_table(stdout, s);
    free(s);
    return rc;
}

int cmd_plan(int argc, char **argv) {
    plan_args a;
    sw_model *model = NULL;
    sw_plan *p = NULL;
    const char *name = NULL;
    char *json = NULL;
    memset(&a, 0, sizeof a);
    a.opt = sw_plan_options_default();
    int rc = parse_args(&a, argc, argv);
    if (rc != CLI_EXIT_OK)
        return rc < 0 ? CLI_EXIT_OK : rc;
    if ((rc = open_source(a.model, &model, &name)) != CLI_EXIT_OK)
        return rc;
    if (a.n_split) {
        rc = print_split(&a, model, name);
        sw_model_close(model);
        return rc;
    }
    const bool drafter = a.draft.model != NULL || a.draft.ngram;
    if ((rc = draft_reserve(&a.draft, model, name, &a.opt, &a.assistant)) != CLI_EXIT_OK) {
        sw_model_close(model);
        return rc;
    }
    sw_status st = sw_plan_create(model, name, &a.opt, &p);
    if (st != SW_OK) {
        rc = cli_fail(st);
    } else if (!drafter) {
        sw_plan_print(p, stdout, a.json);
    } else if ((json = plan_text(p, true)) == NULL) {
        rc = CLI_EXIT_OOM_HOST;
    } else {
        if (a.json) /* the target's object, left open for "drafter" */
            fwrite(json, 1, (size_t)(strrchr(json, '}') - json), stdout);
        else
            sw_plan_print(p, stdout, 0);
        rc = print_drafter(&a, p, json);
    }
    free(json);
    sw_plan_destroy(p);
    sw_model_close(model);
    return rc;
}
