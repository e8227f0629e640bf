/*
 * plan_cmd.c — `spillway plan`: where every byte of a model and workload
 * would live and how fast it would run, without loading weights. -m takes
 * a model file or a catalog name (gemma3-27b, gemma-2-9b, ...). When
 * nothing fits, the exit status says which memory ran out (7 device, 8
 * host) and the message lists changes that would fit.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/plan_opts.h"

typedef struct plan_args {
    const char *model;
    const char *rates;       /* "cache" (default) or "defaults" */
    bool json;
    sw_plan_options opt;
} plan_args;

static void usage(FILE *out) {
    fputs("usage: spillway plan [-m FILE|NAME] [options]\n"
          "  -m FILE|NAME      model file or Hugging Face folder, or a catalog model planned\n"
          "                    without a file: gemma-2b gemma-7b gemma2-2b gemma2-9b\n"
          "                    gemma2-27b gemma3-270m gemma3-1b gemma3-4b gemma3-12b\n"
          "                    gemma3-27b (default: the fetched Gemma 3 270M file)\n"
          "  --rates R         cache (doctor's measurements if any) or defaults\n"
          "  --json            machine-readable plan\n"
          "the same planning flags as run, chat, verify and batch (the same flags give\n"
          "the same plan there):\n", out);
    plan_opts_usage(out);
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
        else if (plan_opts_parse(&a->opt, f, v) != 0)
            return CLI_EXIT_USAGE;
    }
    if (a->rates && strcmp(a->rates, "cache") != 0 && strcmp(a->rates, "defaults") != 0) {
        cli_error("--rates expects 'cache' or 'defaults', got '%s'", a->rates);
        return CLI_EXIT_USAGE;
    }
    a->opt.default_rates = a->rates && !strcmp(a->rates, "defaults");
    return CLI_EXIT_OK;
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

int cmd_plan(int argc, char **argv) {
    plan_args a;
    sw_model *model = NULL;
    sw_plan *p = NULL;
    const char *name = NULL;
    memset(&a, 0, sizeof a);
    a.opt = sw_plan_options_default();
    int rc = parse_args(&a, argc, argv);
    if (rc != CLI_EXIT_OK)
        return rc < 0 ? CLI_EXIT_OK : rc;
    if ((rc = open_source(a.model, &model, &name)) != CLI_EXIT_OK)
        return rc;
    sw_status st = sw_plan_create(model, name, &a.opt, &p);
    if (st == SW_OK) {
        sw_plan_print(p, stdout, a.json);
        rc = CLI_EXIT_OK;
    } else {
        rc = cli_fail(st);
    }
    sw_plan_destroy(p);
    sw_model_close(model);
    return rc;
}
